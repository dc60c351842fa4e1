#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the whole suite strict, every suite but
# test_faults under sync validation through ctest, test_faults then test_soak beside it under the layer.
T0=$(date +%s)
LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t $R/tf
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
( cd /tmp/b && MOTIFCL_VALIDATION=1 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/tf timeout $(( LIMIT - 15 )) ctest -R '^(test_faults|test_soak)$' --output-on-failure > $R/tf/ctest.log 2>&1; echo "test_faults, test_soak (layer) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
( cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $(( LIMIT - 15 )) ctest -j15 -E '^(test_faults|test_soak)$' --output-on-failure > $R/t/ctest.log 2>&1; echo "ctest (sync) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
wait
tail -8 $R/t/ctest.log >> $R/s.txt; tail -4 $R/tf/ctest.log >> $R/s.txt
grep -h "Validation Error" $R/t/ctest.log $R/tf/ctest.log | head -5 >> $R/s.txt
cp .ab/s2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
