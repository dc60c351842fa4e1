#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 5228702 ("base", a git archive):
# the 7B q4_0 decode step alternated (no profile, then profiled); the decode suites strict on
# this driver (both profiles); then head's FP32 GEMM and counter-state training step.
T0=$(date +%s)
LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target motifcl-bench > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base && tar xzf .ab/tree-5228702.tar.gz -C /tmp/src-base
build base /tmp/src-base 5228702 &
( build head . $C && cmake --build /tmp/b-head --target test_ops_decode test_engine test_ops_attention > /tmp/build-tests.log 2>&1 ) & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
one() { # tree, extra arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 200 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { echo "skip $1 $2" >> $R/s.txt; return; }
  echo "$P motifcl-bench decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 $2 (tree $1)" > $d/cmd.txt
  env $P timeout 60 /tmp/b-$1/tools/motifcl-bench decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 $2 --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 $2: $(grep -h 'replayed back to back' $d/out.txt | awk '{print $(NF-2)}') ms, $(grep -h 'each step waited for, no sampling' $d/out.txt | awk '{print $(NF-2)}') tok/s at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
one base; one head; one base --profile; one head --profile; one base; one head
i=$((i+1)); d=$R/$i-tests; mkdir -p $d
( cd /tmp/b-head && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$d timeout 150 ctest -j8 -R "^test_ops_decode|^test_engine|^test_ops_attention" --output-on-failure > $d/out.txt 2>&1 )
echo "$i tests: $(grep 'tests passed' $d/out.txt) at $(( $(date +%s) - T0 )) s" >> $R/s.txt
bench() { # folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$3 motifcl-bench ${@:4} --witness-dir $d (tree head)" > $d/cmd.txt
  env $3 timeout $t /tmp/b-head/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
bench gemm 60 $P gemm
bench train-counter 70 $P train counter=11
i=$((i+1)); d=$R/$i-torch; mkdir -p $d; left=$(( LIMIT - 10 - ($(date +%s) - T0) ))
if [ $left -gt 40 ]; then
  echo "python3 .ab/stories15m_step.py --attn sdpa --micro" > $d/cmd.txt
  timeout $left python3 .ab/stories15m_step.py --attn sdpa --micro > $d/out.txt 2>&1
  echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
fi
cp .ab/e.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
grep -h "TFLOP/s" $R/*-gemm/out.txt | head -8; grep -h "tokens/s" $R/*-train-counter/out.txt | head -4; grep -h "tokens/s\|TFLOP" $R/*-torch/out.txt | head -8
for d in $R/*-head $R/*-base; do grep -h "norm_q8_f32 \|attention_decode" $d/out.txt | head -3; done
cd $OUT && tar czf r.tgz r && rm -rf r
