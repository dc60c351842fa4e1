#!/bin/bash
# The matrix path's tile for the prompt's products (MOTIFCL_QUANT_GEMM_TILE; unset: the rule,
# 128 x 128 where the grid holds 256 of them, else a side of 64): the 512-token prefill of the
# 7B and 1B q4_0, each op's GPU time (the bench's profile of the pass), twice each, at the
# commit in .ab/commit.txt.
T0=$(date +%s); LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0
bench() { # folder, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$3 MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'prefill of 512\|prefill on the GPU, q, k, v\|prefill on the GPU, output  \|prefill on the GPU, gate, up\|prefill on the GPU, down\|prefill on the GPU, all' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
for r in 1 2; do for t in rule 128x128 64x128 128x64 64x64; do
  e=MOTIFCL_QUANT_GEMM_TILE=$t; [ $t = rule ] && e=MOTIFCL_LOG=warn
  bench 7b-$t 30 $e decode shape=7b type=q4_0 prompt=512 tokens=4 repeat=1
  bench 1b-$t 20 $e decode shape=1b type=q4_0 prompt=512 tokens=4 repeat=1
done; done
cp .ab/d20.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "columns: prefill tokens/s (one pass), then GPU ms: q k v, output, gate up, down, all" >> $R/s.txt
cat $R/s.txt; echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
