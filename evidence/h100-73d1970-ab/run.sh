#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 4dc649b ("base") and 3fd6510
# ("mid", the counter products on the f32 GEMM, G loads as vec4s), both git archives:
# head's test_counter and test_ops_decode strict under sync validation; the counter-state step
# and the dense step alternated, head profiled; the 7B q4_0 decode with the decode attention's
# tile and direct loops (workgroups 256 and 128) alternated; the transfer benchmark staged.
T0=$(date +%s)
LIMIT=${1:-360}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit, targets
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target ${@:4} > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base /tmp/src-mid && tar xzf .ab/tree-4dc649b.tar.gz -C /tmp/src-base && tar xzf .ab/tree-3fd6510.tar.gz -C /tmp/src-mid
build base /tmp/src-base 4dc649b motifcl-bench & build mid /tmp/src-mid 3fd6510 motifcl-bench & build head . $C motifcl-bench test_counter test_ops_decode test_gpt_counter & wait
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
for t in test_counter test_ops_decode test_gpt_counter; do
  mkdir -p $R/0-$t
  echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync tests/$t (tree head)" > $R/0-$t/cmd.txt
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/0-$t timeout 90 /tmp/b-head/tests/$t > $R/0-$t/out.txt 2>&1
  echo "$t exit $?: $(grep -c ' OK ' $R/0-$t/out.txt) OK" >> $R/s.txt
done
bench base counter-base 35 "$P" train counter=11
bench mid counter-mid 35 "$P" train counter=11
bench head counter-head 35 "$P" train counter=11
bench base counter-base-2 35 "$P" train counter=11
bench mid counter-mid-2 35 "$P" train counter=11
bench head counter-head-2 35 "$P" train counter=11
bench head counter-head-prof 35 "$P" train counter=11 --profile
bench base train-base 35 "$P" train
bench head train-head 35 "$P" train
D="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3"
bench head dec 25 "$P" $D
bench head dec-direct 25 "$P MOTIFCL_ATTENTION_DECODE=direct" $D
bench head dec-direct-wg128 25 "$P MOTIFCL_ATTENTION_DECODE=direct MOTIFCL_ATTENTION_WG=128" $D
bench head dec-wg128 25 "$P MOTIFCL_ATTENTION_WG=128" $D
bench head dec-direct-2 25 "$P MOTIFCL_ATTENTION_DECODE=direct" $D
bench head dec-2 25 "$P" $D
bench head transfer-staging 25 "$P MOTIFCL_TRANSFER=staging" transfer
bench head transfer 25 "$P" transfer
cp .ab/a.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
for f in $R/*-prof/out.txt; do echo $f; grep -A12 "      ms  share" $f | head -14; done
grep -h "right after\|first read\|tenth" $R/*-transfer*/out.txt | head
cd $OUT && tar czf r.tgz r && rm -rf r
