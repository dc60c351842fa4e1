#!/bin/bash
# At .ab/commit.txt (clean): the Mixtral-shaped q4_0 decode with the mixture's fusions (B) and
# with them apart (MOTIFCL_ENGINE_SPLIT_MOE=3), alternated, and under a 7 GiB expert budget;
# then the whole suite strict under sync validation and the expert stack past 4 GiB.
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; $C" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0
bench() { # name, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  echo "$3 MOTIFCL_PIPELINE_CACHE=/tmp/pc /tmp/b/tools/motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $2 /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'prefill of\|decode, one sequence (the median run)  \|each step waited for, no sampling (the median\|dispatches per token\|replayed back to back\|decode, of the stream read' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
M="decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=3"
bench mixtral 40 MOTIFCL_LOG=warning $M
bench mixtral-split3 40 MOTIFCL_ENGINE_SPLIT_MOE=3 $M
bench mixtral-split3 40 MOTIFCL_ENGINE_SPLIT_MOE=3 $M
bench mixtral 40 MOTIFCL_LOG=warning $M
bench mixtral-7g 50 MOTIFCL_LOG=warning $M expert_mib=7168
echo "columns: prefill tokens/s, decode tokens/s (median, sampled), waited, dispatches, step ms, % of stream" >> $R/s.txt
left=$(( LIMIT - 40 - ($(date +%s) - T0) ))
( cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ctest -j16 --output-on-failure > $R/t/ctest.log 2>&1; echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
CT=$!
mkdir -p $R/moe-4g
echo "MOTIFCL_TEST_EXPERTS_BYTES=5000000000 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/moe-4g /tmp/b/tests/test_ops_moe" > $R/moe-4g/cmd.txt
MOTIFCL_TEST_EXPERTS_BYTES=5000000000 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/moe-4g timeout 150 /tmp/b/tests/test_ops_moe > $R/moe-4g/out.txt 2>&1
echo "moe-4g exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
wait $CT
tail -14 $R/t/ctest.log >> $R/s.txt
cp .ab/d3.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; echo "done at $(( $(date +%s) - T0 )) s"
cd $R && tar czf t.tar.gz t && rm -rf t; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
