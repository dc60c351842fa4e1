#!/bin/bash
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
mkdir -p /tmp/src-base && tar xzf .ab/tree-b964baf.tar.gz -C /tmp/src-base
( cmake -S /tmp/src-base -B /tmp/b-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=b964baf > /dev/null 2>&1 && cmake --build /tmp/b-base --target motifcl-bench > /dev/null 2>&1 ) &
( cmake -S . -B /tmp/b-head -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b-head --target motifcl-bench > /dev/null 2>&1 ) & wait
i=0
for t in base head base head; do i=$((i+1)); d=$R/$i-prefill-$t; mkdir -p $d
  echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench prefill shape=7b type=q4_0 prompt=512 repeat=3 --witness-dir $d (tree $t)" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 20 /tmp/b-$t/tools/motifcl-bench prefill shape=7b type=q4_0 prompt=512 repeat=3 --witness-dir $d > $d/out.txt 2>&1
  echo "$i $t exit $?: $(grep -h 'prefill of' $d/out.txt)" >> $R/s.txt; done
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1; cp .ab/p.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "at $(( $(date +%s) - T0 )) s"; cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
