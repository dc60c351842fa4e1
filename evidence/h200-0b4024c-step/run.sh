#!/bin/bash
# At .ab/commit.txt (clean, checked out): the f32 step with PyTorch between two runs, the
# counter-state step, the GEMM benchmark.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b-head -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b-head --target motifcl-bench > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:3} --witness-dir $d" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $2 /tmp/b-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 ${@:3} exit $?: $(grep -h 'tokens/s\|activations and scratch\|peak tensor\|rate' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt; }
run head 60 train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d; echo "python3 stories15m_step.py --attn sdpa" > $d/cmd.txt
timeout 60 python3 .ab/stories15m_step.py --attn sdpa > $d/out.txt 2>&1
run head 20 train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d; echo "python3 stories15m_step.py --attn sdpa --micro" > $d/cmd.txt
timeout 60 python3 .ab/stories15m_step.py --attn sdpa --micro > $d/out.txt 2>&1
run head 60 gemm
run head 20 train --profile
cp .ab/g6.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "train_step\|gemm\|TFLOP" $R/*-torch/out.txt | head; grep -h "rate" $R/*gemm*/out.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
