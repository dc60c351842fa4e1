#!/bin/bash
# the tree at lab/commit.txt: the whole suite on the H200, strict, synchronization validation, both
# profiles (the suite's .polaris tests)
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat lab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
cd /tmp/b
left=$(( 540 - ($(date +%s) - T0) ))
echo "ctest with ${left} s" >> $R/s.txt
MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ctest -j12 --output-on-failure > $R/t/ctest.log 2>&1
echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
tail -15 $R/t/ctest.log >> $R/s.txt
grep -h "Validation Error" $R/t/ctest.log | head -5 >> $R/s.txt
grep -l "matrix tile within shared memory" $R/t/*.json >> $R/s.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
