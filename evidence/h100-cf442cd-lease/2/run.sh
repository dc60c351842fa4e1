#!/bin/bash
# At .ab/commit.txt (clean): the f32 GEMM's first call (pipeline creation) and rate with the
# 16 x 8 tile's K step unrolled 1, 2, 4 at a time (MOTIFCL_GEMM_UNROLL), each from an empty
# pipeline cache, then 8 (the default) on NT, then the warm caches again alternated; the
# Mixtral-shaped q4_0 decode under a 7 GiB expert budget (16 tokens, one run).
T0=$(date +%s); LIMIT=${1:-540}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; B $C" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $R/s.txt 2>&1
i=0
bench() { # name, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  local left=$(( LIMIT - 10 - ($(date +%s) - T0) )); local t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$3 /tmp/b/tools/motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'first call\|: rate' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
L=MOTIFCL_LOG=warning
bench ku1-cold 120 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pc1 MOTIFCL_GEMM_UNROLL=1" gemm
bench ku2-cold 120 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pc2 MOTIFCL_GEMM_UNROLL=2" gemm
bench ku4-cold 150 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pc4 MOTIFCL_GEMM_UNROLL=4" gemm
bench ku8-nt-cold 100 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pc8" gemm m=4096 n=512 k=14336 tb=1
for r in 1 2; do
  for u in 1 2 4; do bench ku$u-warm 30 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pc$u MOTIFCL_GEMM_UNROLL=$u" gemm; done
  bench ku8-nt-warm 30 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pc8" gemm m=4096 n=512 k=14336 tb=1
done
bench mixtral-7g 240 "$L MOTIFCL_PIPELINE_CACHE=/tmp/pcm" decode shape=mixtral type=q4_0 prompt=64 tokens=16 repeat=1 expert_mib=7168
cp .ab/g2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "columns: NN first call s, rate, NT first call s, rate, 4096^3 first call, rate" >> $R/s.txt
cat $R/s.txt
grep -h "tokens/s\|hit rate\|moved\|in place\|host\|RX 580\|prefetch\|bus\|slots\|of the stream" $R/*mixtral*/out.txt | grep -v "sampled on\|prefill on"
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
