#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the training step, PyTorch's beside it, the
# step again; one call, one machine.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
d=$R/1-train; mkdir -p $d; echo "$P motifcl-bench train --witness-dir $d" > $d/cmd.txt
env $P timeout 50 /tmp/b/tools/motifcl-bench train --witness-dir $d > $d/out.txt 2>&1; echo "1 train exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
d=$R/2-torch; mkdir -p $d; echo "python3 stories15m_step.py --attn sdpa" > $d/cmd.txt
timeout 100 python3 .ab/stories15m_step.py --attn sdpa > $d/out.txt 2>&1; echo "2 torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
d=$R/3-train; mkdir -p $d; echo "$P motifcl-bench train --witness-dir $d" > $d/cmd.txt
env $P timeout 30 /tmp/b/tools/motifcl-bench train --witness-dir $d > $d/out.txt 2>&1; echo "3 train exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp .ab/t2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt $R/gpu.txt
grep -h "tokens/s\|time per step\|peak tensor" $R/*-train/out.txt | grep -v modeled; grep -h train_step $R/*-torch/out.txt
cd $OUT && tar czf r.tgz r && rm -rf r
