#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the figures README.md quotes, one call, one
# machine: decode and prefill of the llama shapes, the training step and PyTorch's beside it,
# FP32 GEMM, the GEMV kernels. One pipeline cache for the call.
T0=$(date +%s)
LIMIT=${1:-480}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # folder, seconds, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$P motifcl-bench ${@:3} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $P timeout $t /tmp/b/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s" >> $R/s.txt
}
bench 7b-q4_0 50 decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5
bench train 50 train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d
echo "python3 stories15m_step.py --attn sdpa --micro" > $d/cmd.txt
timeout 100 python3 .ab/stories15m_step.py --attn sdpa --micro > $d/out.txt 2>&1
echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
bench gemm 45 gemm --warmup 1
bench 7b-q8_0 50 decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench 1b-q4_0 40 decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5
bench 7b-q4_0-seqs8 60 decode shape=7b type=q4_0 prompt=512 tokens=64 seqs=8
bench quant-1 50 quant rows=1 gemm=0 --warmup 0.3
bench quant-8 50 quant rows=8 gemm=0 --warmup 0.3
bench gemv 50 gemv --warmup 0.5
bench 7b-q4_K 50 decode shape=7b type=q4_K prompt=512 tokens=64 repeat=5
bench 1b-q8_0 40 decode shape=1b type=q8_0 prompt=512 tokens=64 repeat=5
bench 1b-prefill 40 prefill shape=1b type=q4_0 prompt=512 repeat=5
cp .ab/b.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
for d in $R/*-7b-* $R/*-1b-*; do grep -h "(the median run)\|replayed back to back\|of the stream read  \|prefill of" $d/out.txt | grep -v "modeled\|sampled" | head -5; done
grep -h "tokens/s\|ms" $R/*-train/out.txt | grep "time per step\|tokens/s" | head -2; grep -h train_step $R/*-torch/out.txt
grep -h "TFLOP/s" $R/*-gemm/out.txt | grep -v peak | head -6
cd $OUT && tar czf r.tgz r && rm -rf r
