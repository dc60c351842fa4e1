#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 23a05c6 ("base", a git archive):
# head's attention tests and GPT tests strict under sync validation; the dense step alternated
# base/head, head profiled, PyTorch's step beside it; head's counter step. Exploration (x, not
# a witness): head with the full-range forward attention at 32 rows and 256 invocations.
T0=$(date +%s)
LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit, targets
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target ${@:4} > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base && tar xzf .ab/tree-23a05c6.tar.gz -C /tmp/src-base
mkdir -p /tmp/src-x; tar c --exclude=./.ab --exclude=./.gl --exclude=./build --exclude=./.git . | tar x -C /tmp/src-x
sed -i 's/define MCL_ATTN_MAX_ROWS 16u/define MCL_ATTN_MAX_ROWS 32u/; s/define MCL_ATTN_WG_FULL 128u/define MCL_ATTN_WG_FULL 256u/' /tmp/src-x/src/ops/attention.c
build base /tmp/src-base 23a05c6 motifcl-bench & build head . $C motifcl-bench test_backward_attention test_gpt test_ops_attention & build x /tmp/src-x x motifcl-bench & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # tree, folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 10 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 12 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$4 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $4 timeout $t /tmp/b-$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  local rc=$?
  echo "$i $2 ($(date -d @$t1 +%H:%M:%S) to $(date +%H:%M:%S)) exit $rc in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|activations and scratch\|peak tensor memory' $d/out.txt | grep -v 'modeled' | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
for t in test_backward_attention test_gpt test_ops_attention; do
  mkdir -p $R/0-$t
  echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync tests/$t (tree head)" > $R/0-$t/cmd.txt
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/0-$t timeout 60 /tmp/b-head/tests/$t > $R/0-$t/out.txt 2>&1
  echo "$t exit $?: $(grep -c ' OK ' $R/0-$t/out.txt) OK" >> $R/s.txt
done
bench base train-base 35 "$P" train
bench head train-head 35 "$P" train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d
echo "python3 stories15m_step.py --attn sdpa" > $d/cmd.txt
timeout 60 python3 .ab/stories15m_step.py --attn sdpa > $d/out.txt 2>&1; echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
bench base train-base-2 20 "$P" train
bench head train-head-2 20 "$P" train
bench head train-head-prof 20 "$P" train --profile
bench head counter-head 30 "$P" train counter=11
bench x train-x-prof 25 "$P" train --profile
cp .ab/f.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt; grep -h train_step $R/*-torch/out.txt
for f in $R/*-prof/out.txt; do echo $f; grep -A10 "      ms  share" $f | head -12; done
cd $OUT && tar czf r.tgz r && rm -rf r
