#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against d395e0d ("base", a git archive):
# the counter-state training step alternated, head profiled; head's counter step with
# reversible blocks and the ordinary and reversible steps at depth 4 and 64 (memory); the 7B
# q4_K decode on the integer-dot and float paths alternated (the K types' default); before
# them, the 1B q4_K loaded from a file with its uploads through imported host memory (the
# default) and through the staging ring (MOTIFCL_TRANSFER=staging), products=1.
T0=$(date +%s)
LIMIT=${1:-540}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target motifcl-bench > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base && tar xzf .ab/tree-d395e0d.tar.gz -C /tmp/src-base
build base /tmp/src-base d395e0d & build head . $C & wait
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
  echo "$i $2 ($(date -d @$t1 +%H:%M:%S) to $(date +%H:%M:%S)) exit $rc in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|replayed back to back\|activations and scratch\|every layer\|prefill of' $d/out.txt | grep -v 'modeled\|sampled\|read back\|decode, one sequence  ' | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
# The clocks every 100 ms while the K-type runs go (is a slow start the memory clock?).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 100 > $R/clocks.csv 2>&1 &
SMI=$!
K="decode shape=1b type=q4_K prompt=64 tokens=8 repeat=1 file=1 products=1"
bench head k-import 40 "$P MOTIFCL_QUANT_PATH=dot" $K
bench head k-staging 40 "$P MOTIFCL_QUANT_PATH=dot MOTIFCL_TRANSFER=staging" $K
bench head k-import 40 "$P MOTIFCL_QUANT_PATH=dot" $K
bench head k-staging 40 "$P MOTIFCL_QUANT_PATH=dot MOTIFCL_TRANSFER=staging" $K
kill $SMI 2>/dev/null
bench base counter-base 50 "$P" train counter=11
bench head counter-head 50 "$P" train counter=11
bench base counter-base 40 "$P" train counter=11
bench head counter-head 40 "$P" train counter=11
bench head counter-head-prof 50 "$P" train counter=11 --profile
bench head counter-rev 40 "$P" train counter=11 reversible=0
bench head rev4 40 "$P" train layers=4 reversible=0
bench head rev64 60 "$P" train layers=64 reversible=0
bench head ord4 40 "$P" train layers=4
bench head ord64 60 "$P" train layers=64
D="decode shape=7b type=q4_K prompt=512 tokens=64 repeat=3"
bench head q4k-dot 50 "$P MOTIFCL_QUANT_PATH=dot" $D
bench head q4k-float 50 "$P" $D
bench head q4k-dot 50 "$P MOTIFCL_QUANT_PATH=dot" $D
bench head q4k-float 50 "$P" $D
cp .ab/v.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
grep -A12 "      ms  share" $R/*-counter-head-prof/out.txt | head -14
cd $OUT && tar czf r.tgz r && rm -rf r
