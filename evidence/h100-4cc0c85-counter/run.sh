#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 36af6c4 ("base", a git archive): the counter-state step alternated, head
# profiled, head's test_counter strict; the transfer benchmark's read after upload with and
# without MOTIFCL_TRANSFER=import.
T0=$(date +%s)
LIMIT=${1:-540}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit, targets
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target ${@:4} > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
for t in 36af6c4; do mkdir -p /tmp/src-$t && tar xzf .ab/tree-$t.tar.gz -C /tmp/src-$t; done
build c64 /tmp/src-36af6c4 36af6c4 motifcl-bench & build head . $C motifcl-bench test_counter test_ops_decode & wait
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
  echo "$i $2 ($(date -d @$t1 +%H:%M:%S) to $(date +%H:%M:%S)) exit $rc in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|replayed back to back\|activations and scratch\|every layer\|prefill of\|right after' $d/out.txt | grep -v 'modeled\|sampled\|read back\|decode, one sequence  ' | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
mkdir -p $R/0-test-counter
echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync tests/test_counter (tree head)" > $R/0-test-counter/cmd.txt
MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/0-test-counter timeout 60 /tmp/b-head/tests/test_counter > $R/0-test-counter/out.txt 2>&1
echo "test_counter exit $?: $(grep -c OK $R/0-test-counter/out.txt) OK" >> $R/s.txt
mkdir -p $R/0-test-decode
echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync tests/test_ops_decode (tree head)" > $R/0-test-decode/cmd.txt
MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/0-test-decode timeout 60 /tmp/b-head/tests/test_ops_decode > $R/0-test-decode/out.txt 2>&1
echo "test_ops_decode exit $?: $(grep -c OK $R/0-test-decode/out.txt) OK" >> $R/s.txt
bench c64 counter-base 35 "$P" train counter=11
bench head counter-head 35 "$P" train counter=11
bench c64 counter-base-prof 35 "$P" train counter=11 --profile
bench head counter-head-prof 35 "$P" train counter=11 --profile
bench head transfer 35 "$P" transfer
bench head transfer-import 35 "$P MOTIFCL_TRANSFER=import" transfer
D="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3"
bench head dec 30 "$P" $D
bench head dec-splits4 30 "$P MOTIFCL_ATTENTION_SPLITS=4" $D
bench head dec-direct 30 "$P MOTIFCL_ATTENTION_DECODE=direct" $D
bench head dec-direct-wg128 30 "$P MOTIFCL_ATTENTION_DECODE=direct MOTIFCL_ATTENTION_WG=128" $D
cp .ab/y.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
for f in $R/*-prof/out.txt; do echo $f; grep -A12 "      ms  share" $f | head -14; done
grep -h "right after\|first read\|tenth" $R/*-transfer*/out.txt | head
grep -H "on the GPU, attention  \|median run)  \|replayed back" $R/*-dec*/out.txt
cd $OUT && tar czf r.tgz r && rm -rf r
