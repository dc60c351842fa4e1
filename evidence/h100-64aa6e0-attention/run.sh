#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): where the decode attention's time goes (the 7B
# q4_0 step profiled with 16, 32 and 64 slices, after a 64-token prompt, at 128 invocations);
# the float path's step; the FP32 GEMM twice; the dense training step and PyTorch's.
T0=$(date +%s)
LIMIT=${1:-400}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$3 motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? at $(( $(date +%s) - T0 )) s: $(grep -h 'replayed back to back' $d/out.txt | awk '{print $(NF-2)}') ms; attention $(grep -h 'attention_decode' $d/out.txt | awk '{print $1}') ms" >> $R/s.txt
}
D="decode shape=7b type=q4_0 tokens=32 repeat=1 --profile"
bench att-s32 60 "$P" $D prompt=512
bench att-s16 60 "$P MOTIFCL_ATTENTION_SPLITS=16" $D prompt=512
bench att-s64 60 "$P MOTIFCL_ATTENTION_SPLITS=64" $D prompt=512
bench att-p64 60 "$P" $D prompt=64
bench att-wg128 60 "$P MOTIFCL_ATTENTION_WG=128" $D prompt=512
bench float 60 "$P MOTIFCL_QUANT_PATH=float" $D prompt=512
bench gemm 45 "$P" gemm
bench train 90 "$P" train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d; left=$(( LIMIT - 5 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  echo "python3 .ab/stories15m_step.py --attn sdpa --micro" > $d/cmd.txt
  timeout $left python3 .ab/stories15m_step.py --attn sdpa --micro > $d/out.txt 2>&1
  echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
fi
bench gemm2 45 "$P" gemm
cp .ab/f.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
grep -h "TFLOP/s" $R/*-gemm*/out.txt | grep -v peak; grep -h "tokens/s\|ms/step" $R/*-train/out.txt | head -4; grep -h "train_step" $R/*-torch/out.txt
cd $OUT && tar czf r.tgz r && rm -rf r
