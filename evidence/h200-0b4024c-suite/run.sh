#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the whole suite strict under sync validation,
# the owner's script (quick, no install) beside it; then the expert stack past 4 GiB.
T0=$(date +%s)
LIMIT=${1:-470}  # seconds this call may take
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
# The longest suites first (their times on this machine from an earlier run).

( cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $(( LIMIT - 60 )) ctest -j16 --output-on-failure > $R/t/ctest.log 2>&1; echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
CT=$!
mkdir -p $R/owner
echo "sh scripts/owner-run.sh --no-install --quick --build /tmp/owner -j 4" > $R/owner/cmd.txt
timeout 150 sh scripts/owner-run.sh --no-install --quick --build /tmp/owner -j 4 > $R/owner/out.txt 2>&1
echo "owner exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp /tmp/owner/motifcl-*.tar.gz $R/owner/ 2>/dev/null
left=$(( LIMIT - 20 - ($(date +%s) - T0) )); [ $left -gt 120 ] && left=120
if true; then
  mkdir -p $R/moe-4g
  echo "MOTIFCL_TEST_EXPERTS_BYTES=5000000000 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/moe-4g /tmp/b/tests/test_ops_moe" > $R/moe-4g/cmd.txt
  MOTIFCL_TEST_EXPERTS_BYTES=5000000000 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/moe-4g timeout $left /tmp/b/tests/test_ops_moe > $R/moe-4g/out.txt 2>&1
  echo "moe-4g exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
fi
wait $CT
tail -14 $R/t/ctest.log >> $R/s.txt
cp -r /tmp/b/test-pipeline-cache $R/ 2>/dev/null
grep -h "Validation Error" $R/t/ctest.log | head -5 >> $R/s.txt
cp .ab/s.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
tail -8 $R/owner/out.txt; grep -E "OK|FAILED|past|beyond" $R/moe-4g/out.txt 2>/dev/null | head
cd $OUT && tar czf r.tgz r && rm -rf r
