#!/bin/bash
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
[ -x /tmp/b/tools/motifcl-bench ] || { cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > $R/cfg.txt 2>&1 && cmake --build /tmp/b --target motifcl-bench > $R/build.txt 2>&1; }
B=/tmp/b/tools/motifcl-bench
nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate,persistence_mode,power.draw --format=csv >> $R/clocks.txt
run() { n=$1; shift; d=$R/$n; mkdir -p $d; echo "$*" > $d/cmd.txt
  env MOTIFCL_PIPELINE_CACHE=/tmp/pc "$@" --witness-dir $d > $d/out.txt 2>&1; echo "$n exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt; 
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate,power.draw --format=csv,noheader >> $R/clocks.txt; }
run 1-1b env $B prefill shape=1b type=q4_0 prompt=512 repeat=5
run 2-1b env $B prefill shape=1b type=q4_0 prompt=512 repeat=5
run 3-1b-q8 env $B prefill shape=1b type=q8_0 prompt=512 repeat=5
run 4-7b-q8 env $B prefill shape=7b type=q8_0 prompt=512 repeat=3
run 5-1b env $B prefill shape=1b type=q4_0 prompt=512 repeat=5
run 6-1b-dec env $B decode shape=1b type=q4_0 prompt=512 steps=16 repeat=1
cp .ab/d2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "at $(( $(date +%s) - T0 )) s"; cat $R/s.txt $R/clocks.txt; grep -h "prefill" $R/*/out.txt 
cd $OUT && tar czf r.tgz r && rm -rf r
