#!/bin/bash
# At .ab/commit.txt (clean, checked out): the counter-state step twice, the f32 step, then
# test_core and test_faults strict (the fault suite without the layer: its time).
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b > /dev/null 2>&1
echo "built at $(( $(date +%s) - T0 )) s" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:3} --witness-dir $d" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $2 /tmp/b/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i ${@:3} exit $?: $(grep -h 'tokens/s\|peak tensor' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt; }
run head 40 train counter=11; run head 20 train counter=11; run head 40 train
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t ./tests/test_core > $R/t/core.txt 2>&1; echo "test_core exit $?" >> $R/s.txt )
left=$(( 215 - ($(date +%s) - T0) ))
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ./tests/test_faults > $R/t/faults.txt 2>&1; echo "test_faults exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt )
cp .ab/g8.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -A2 "real_timeout" $R/t/faults.txt; tail -2 $R/t/faults.txt
cd $OUT && tar czf r.tgz r && rm -rf r
