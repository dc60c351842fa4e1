#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 423774b ("base", a git archive):
# head's attention-backward and counter tests strict under sync validation; the dense step
# alternated base/head and head profiled; head's counter step (memory); the decode attention's
# workgroup 256 against 128 on the 7B q4_0 and Mixtral shapes.
T0=$(date +%s)
LIMIT=${1:-500}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit, targets
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target ${@:4} > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base && tar xzf .ab/tree-423774b.tar.gz -C /tmp/src-base
build base /tmp/src-base 423774b motifcl-bench & build head . $C motifcl-bench test_backward_attention test_counter test_gpt_counter test_gpt & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # tree, folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 10 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$4 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $4 timeout $t /tmp/b-$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  local rc=$?
  echo "$i $2 ($(date -d @$t1 +%H:%M:%S) to $(date +%H:%M:%S)) exit $rc in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|replayed back to back\|activations and scratch\|on the GPU, attention  \|right after' $d/out.txt | grep -v 'modeled\|sampled\|read back\|decode, one sequence  ' | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
for t in test_backward_attention test_counter test_gpt_counter test_gpt; do
  mkdir -p $R/0-$t
  echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync tests/$t (tree head)" > $R/0-$t/cmd.txt
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/0-$t timeout 90 /tmp/b-head/tests/$t > $R/0-$t/out.txt 2>&1
  echo "$t exit $?: $(grep -c ' OK ' $R/0-$t/out.txt) OK" >> $R/s.txt
done
bench base train-base 35 "$P" train
bench head train-head 35 "$P" train
bench base train-base-2 35 "$P" train
bench head train-head-2 35 "$P" train
bench head train-head-prof 35 "$P" train --profile
bench head counter-head 35 "$P" train counter=11
D="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3"
bench head 7b-wg256 25 "$P MOTIFCL_ATTENTION_WG=256" $D
bench head 7b-wg128 25 "$P MOTIFCL_ATTENTION_WG=128" $D
D="decode shape=mixtral type=q4_0 prompt=512 tokens=64 repeat=3"
bench head mixtral-wg256 40 "$P MOTIFCL_ATTENTION_WG=256" $D
bench head mixtral-wg128 40 "$P MOTIFCL_ATTENTION_WG=128" $D
cp .ab/n.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
for f in $R/*-prof/out.txt; do echo $f; grep -A14 "      ms  share" $f | head -16; done
cd $OUT && tar czf r.tgz r && rm -rf r
