#!/bin/bash
# At .ab/commit.txt (clean): the mixture's tests strict under sync validation, then the
# Mixtral-shaped q4_0 decode with the router and routing in one dispatch (B), with them apart
# (MOTIFCL_ENGINE_SPLIT_MOE=1), the down products and their sum apart (2), both (3), and with
# the experts' gate, up and SwiGLU apart (MOTIFCL_ENGINE_SPLIT_GLU=1), alternated; the 7 GiB
# budget; the training step's profile.
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_ops_moe test_engine test_model_experts test_model_moe > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; B $C" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
tst() { ( cd /tmp/b && env MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/$1 ${@:3} timeout 150 ./tests/$2 > $R/t/$1.txt 2>&1; echo "$1: ${@:3} $2 strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) ; }
tst ops-moe test_ops_moe & tst engine test_engine & tst experts test_model_experts & tst moe test_model_moe & wait
i=0
bench() { # name, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  local left=$(( LIMIT - 15 - ($(date +%s) - T0) )); local t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$3 MOTIFCL_PIPELINE_CACHE=/tmp/pc /tmp/b/tools/motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'prefill of\|decode, one sequence (the median run)  \|each step waited for, no sampling (the median\|dispatches per token\|replayed back to back\|decode, of the stream read' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
M="decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=3"
bench mixtral-B 40 MOTIFCL_LOG=warn $M
bench mixtral-split1 40 MOTIFCL_ENGINE_SPLIT_MOE=1 $M
bench mixtral-split2 40 MOTIFCL_ENGINE_SPLIT_MOE=2 $M
bench mixtral-split3 40 MOTIFCL_ENGINE_SPLIT_MOE=3 $M
bench mixtral-splitglu 40 MOTIFCL_ENGINE_SPLIT_GLU=1 $M
bench mixtral-splitglu 40 MOTIFCL_ENGINE_SPLIT_GLU=1 $M
bench mixtral-split3 40 MOTIFCL_ENGINE_SPLIT_MOE=3 $M
bench mixtral-split2 40 MOTIFCL_ENGINE_SPLIT_MOE=2 $M
bench mixtral-split1 40 MOTIFCL_ENGINE_SPLIT_MOE=1 $M
bench mixtral-B 40 MOTIFCL_LOG=warn $M
bench mixtral-7g-B 50 MOTIFCL_LOG=warn $M expert_mib=7168
bench train-profile 60 MOTIFCL_LOG=warn train --profile
cp .ab/d1.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "columns: prefill tokens/s, decode tokens/s (median, sampled), waited, dispatches, step ms, % of stream" >> $R/s.txt
cat $R/s.txt; grep -h "FAILED\|PASSED" $R/t/*.txt; echo "done at $(( $(date +%s) - T0 )) s"
cd $R && tar czf t.tar.gz t && rm -rf t; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
