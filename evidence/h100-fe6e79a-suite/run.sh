#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the whole suite strict under sync validation,
# 16 suites at a time (test_soak alone, as the suite asks).
T0=$(date +%s); LIMIT=${1:-330}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
( cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $(( LIMIT - 25 - ($(date +%s) - T0) )) ctest -j16 --output-on-failure > $R/t/ctest.log 2>&1; echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt )
grep -E "tests passed|tests failed|Failed|Timeout|Not Run" $R/t/ctest.log | tail -12 >> $R/s.txt
cp .ab/d18.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $R && tar czf t.tar.gz t && rm -rf t; echo "done at $(( $(date +%s) - T0 )) s"
