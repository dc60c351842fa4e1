#!/bin/bash
# At .ab/commit.txt (clean): the Mixtral-shaped q4_0 decode under a 7 GiB expert budget, the
# sampled tokens' run and the prompt's distinct tokens' run.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; $C" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
d=$R/1-mixtral-7g; mkdir -p $d
echo "MOTIFCL_LOG=warning /tmp/b/tools/motifcl-bench decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=1 expert_mib=7168 --witness-dir $d" > $d/cmd.txt
MOTIFCL_LOG=warning timeout 150 /tmp/b/tools/motifcl-bench decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=1 expert_mib=7168 --witness-dir $d > $d/out.txt 2>&1
echo "exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
grep -h "cache\|hit\|moved\|host memory (a\|staging\|replayed back\|of the stream" $d/out.txt >> $R/s.txt
cp .ab/d4.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
