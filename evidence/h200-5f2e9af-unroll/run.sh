#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): motifcl-bench gemm and train with the f32 GEMM's
# K step unrolled 8 at a time (the default) and whole (MOTIFCL_GEMM_UNROLL=16), alternated; one
# pipeline cache, so each variant compiles once (the first run of each says how long).
T0=$(date +%s)
LIMIT=${1:-420}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$3 motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'TFLOP/s\|tokens/s' $d/out.txt | grep -v 'peak\|modeled' | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
bench gemm-ku8 60 "$P" gemm
bench gemm-ku16 200 "$P MOTIFCL_GEMM_UNROLL=16" gemm
bench gemm-ku8 45 "$P" gemm
bench gemm-ku16 45 "$P MOTIFCL_GEMM_UNROLL=16" gemm
bench train-ku8 45 "$P" train
bench train-ku16 120 "$P MOTIFCL_GEMM_UNROLL=16" train
bench train-ku8 45 "$P" train
cp .ab/g.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
