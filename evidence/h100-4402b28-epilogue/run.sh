#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 60574e5 ("b60": before the norm
# epilogue): the 7B q4_0 decode step alternated, head profiled; the 1B step of both; the
# decode suites strict.
T0=$(date +%s)
LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target motifcl-bench > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
for t in 60574e5; do mkdir -p /tmp/src-$t && tar xzf .ab/tree-$t.tar.gz -C /tmp/src-$t; done
build b60 /tmp/src-60574e5 60574e5 & ( build head . $C && cmake --build /tmp/b-head --target test_ops_decode test_engine > /tmp/build-tests.log 2>&1 ) & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # tree, folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 70 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$4 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $4 timeout $t /tmp/b-$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $2 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|ms/step\|prefill of' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
D="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3"
F="prefill shape=7b type=q4_0 prompt=512 repeat=5"
bench head dec-head 60 "$P" $D
bench b60 dec-b60 60 "$P" $D
bench head dec-head 60 "$P" $D
bench b60 dec-b60 60 "$P" $D
bench head dec-head-prof 60 "$P" $D --profile
bench head dec-1b 60 "$P" decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=3
bench b60 dec-1b-b60 60 "$P" decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=3
i=$((i+1)); d=$R/$i-tests; mkdir -p $d
( cd /tmp/b-head && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$d timeout 150 ctest -j8 -R "^test_ops_decode|^test_engine" --output-on-failure > $d/out.txt 2>&1 )
echo "$i tests: $(grep 'tests passed' $d/out.txt) at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp .ab/i.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
grep -h "gemv_q_dot\|norm_q8\|attention_decode\|swiglu" $R/*-prof/out.txt
cd $OUT && tar czf r.tgz r && rm -rf r
