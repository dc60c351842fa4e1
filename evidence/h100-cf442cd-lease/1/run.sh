#!/bin/bash
# At .ab/commit.txt (clean): the mixture's and GEMM's tests strict under sync validation; the
# Mixtral-shaped q4_0 decode resident and under a 7 GiB expert budget, alternated; the f32 GEMM
# through the library's own tile from an empty pipeline cache, then warm; cuBLAS (--micro);
# the 8-row quantized GEMVs, kernels alone.
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_ops_moe test_model_experts test_ops_matmul > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; B $C" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $R/s.txt 2>&1
tst() { ( cd /tmp/b && env MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/$1 ${@:3} timeout 150 ./tests/$2 > $R/t/$1.txt 2>&1; echo "$1: ${@:3} $2 strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) ; }
tst ops-moe test_ops_moe & tst experts test_model_experts & tst matmul test_ops_matmul & wait
i=0
bench() { # name, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  local left=$(( LIMIT - 15 - ($(date +%s) - T0) )); local t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$3 /tmp/b/tools/motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s" >> $R/s.txt
}
M="decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=3"
P="MOTIFCL_LOG=warning MOTIFCL_PIPELINE_CACHE=/tmp/pc"
bench mixtral $((40)) "$P" $M
bench mixtral-7g 60 "$P" $M expert_mib=7168
bench mixtral 40 "$P" $M
bench mixtral-7g 60 "$P" $M expert_mib=7168
bench gemm-cold 200 "MOTIFCL_LOG=warning MOTIFCL_PIPELINE_CACHE=/tmp/pcg" gemm
bench gemm-warm 60 "MOTIFCL_LOG=warning MOTIFCL_PIPELINE_CACHE=/tmp/pcg" gemm
left=$(( LIMIT - 15 - ($(date +%s) - T0) ))
if [ $left -gt 60 ]; then t1=$(date +%s); timeout $((left < 90 ? left : 90)) python3 .ab/stories15m_step.py --attn sdpa --warmup 1 --steps 2 --micro > $R/cublas.txt 2>&1; echo "cublas exit $? in $(( $(date +%s) - t1 )) s" >> $R/s.txt; fi
bench gemm-warm2 60 "MOTIFCL_LOG=warning MOTIFCL_PIPELINE_CACHE=/tmp/pcg" gemm
bench quant8 120 "$P" quant rows=8 gemm=0
cp .ab/g1.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "FAILED\|PASSED" $R/t/*.txt
for d in $R/[0-9]*; do echo "== $d"; grep -h "tokens/s\|hit\|moved\|host\|RX 580\|prefetch\|of the stream\|TFLOP/s\|first call\|replayed back" $d/out.txt | grep -v "sampled on\|prefill on" | head -40; done
grep -h '"' $R/cublas.txt | head; echo "done at $(( $(date +%s) - T0 )) s"
cd $R && tar czf t.tar.gz t && rm -rf t; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
