#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the K types on their default paths again
# (integer-dot GEMV, matrix GEMM) against the float path, the models loaded from files (the
# loader no longer imports) and made on the device: 1B products, 7B decode and prefill.
T0=$(date +%s)
LIMIT=${1:-540}
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
  left=$(( LIMIT - 10 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$3 motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|each step waited for, no sampling\|prefill of\|every layer\|load  ' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
bench 1b-file 40 "$P" decode shape=1b type=q4_K prompt=64 tokens=8 repeat=1 file=1 products=1
bench 7b-file 60 "$P" decode shape=7b type=q4_K prompt=512 tokens=64 repeat=3 file=1
bench 7b-file-float 60 "$P MOTIFCL_QUANT_PATH=float" decode shape=7b type=q4_K prompt=512 tokens=64 repeat=3 file=1
bench 7b-prefill 30 "$P" prefill shape=7b type=q4_K prompt=512 repeat=3
bench 7b-prefill-float 30 "$P MOTIFCL_QUANT_PATH=float" prefill shape=7b type=q4_K prompt=512 repeat=3
bench 1b 20 "$P" decode shape=1b type=q4_K prompt=512 tokens=64 repeat=3
cp .ab/w.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
cd $OUT && tar czf r.tgz r && rm -rf r
