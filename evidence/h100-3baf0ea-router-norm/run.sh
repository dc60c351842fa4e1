#!/bin/bash
# The tree at .ab/commit.txt (B, clean: a mixture's router beside its feed-forward norm)
# against 352c3b8 (A, .ab/p.tar.gz: the router with its routing after the norm): B's tests
# strict under sync validation, then the Mixtral-shaped q4_0 decode B, A, B with
# MOTIFCL_ENGINE_SPLIT_MOE=1, alternated; the 7 GiB budget with B.
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
mkdir -p /tmp/srca && tar xzf .ab/p.tar.gz -C /tmp/srca
( cmake -S /tmp/srca -B /tmp/a -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=352c3b8 > /tmp/cfga.log 2>&1 && cmake --build /tmp/a --target motifcl-bench > /tmp/builda.log 2>&1 || echo "A build failed" >> $R/s.txt ) &
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_ops_moe test_ops_rows test_engine test_model_experts test_model_moe > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
wait
echo "built in $(( $(date +%s) - T0 )) s; B $C, A 352c3b8" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
tst() { ( cd /tmp/b && env MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/$1 ${@:3} timeout 150 ./tests/$2 > $R/t/$1.txt 2>&1; echo "$1: ${@:3} $2 strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) ; }
tst ops-moe test_ops_moe & tst rows test_ops_rows & tst engine test_engine & tst experts test_model_experts & tst moe test_model_moe & wait
i=0
bench() { # name, build, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  local left=$(( LIMIT - 15 - ($(date +%s) - T0) )); local t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$4 MOTIFCL_PIPELINE_CACHE=/tmp/pc$2 /tmp/$2/tools/motifcl-bench ${@:5} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $4 MOTIFCL_PIPELINE_CACHE=/tmp/pc$2 timeout $t /tmp/$2/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'prefill of\|decode, one sequence (the median run)  \|each step waited for, no sampling (the median\|dispatches per token\|replayed back to back\|decode, of the stream read' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
M="decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=3"
bench mixtral-B b 40 MOTIFCL_LOG=warning $M
bench mixtral-A a 40 MOTIFCL_LOG=warning $M
bench mixtral-B-split1 b 40 MOTIFCL_ENGINE_SPLIT_MOE=1 $M
bench mixtral-A a 40 MOTIFCL_LOG=warning $M
bench mixtral-B b 40 MOTIFCL_LOG=warning $M
bench mixtral-B-split1 b 40 MOTIFCL_ENGINE_SPLIT_MOE=1 $M
bench mixtral-7g-B b 50 MOTIFCL_LOG=warning $M expert_mib=7168
cp .ab/d2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "columns: prefill tokens/s, decode tokens/s (median, sampled), waited, dispatches, step ms, % of stream" >> $R/s.txt
cat $R/s.txt; grep -h "FAILED\|PASSED" $R/t/*.txt; echo "done at $(( $(date +%s) - T0 )) s"
cd $R && tar czf t.tar.gz t && rm -rf t; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
