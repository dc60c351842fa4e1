#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): build; the pipeline cache's first and second
# process to the first training step; the owner's script (quick, no install); the whole suite
# strict under sync validation; the expert stack past 4 GiB with the time left.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
bench() { # folder, seconds, environment, arguments
  mkdir -p $R/$1; echo "$3 motifcl-bench ${@:4} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $3 timeout $2 /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
rm -rf /tmp/pc
bench cache-first 150 MOTIFCL_PIPELINE_CACHE=/tmp/pc train --repeat 5 --warmup 0
bench cache-second 100 MOTIFCL_PIPELINE_CACHE=/tmp/pc train --repeat 5 --warmup 0
ls -l /tmp/pc >> $R/s.txt
mkdir -p $R/owner
timeout 150 sh scripts/owner-run.sh --no-install --quick --build /tmp/owner > $R/owner/out.txt 2>&1
echo "owner exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp /tmp/owner/motifcl-*.tar.gz $R/owner/ 2>/dev/null
cd /tmp/b
left=$(( 520 - ($(date +%s) - T0) ))
echo "ctest with ${left} s" >> $R/s.txt
MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ctest -j16 --output-on-failure > $R/t/ctest.log 2>&1
echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
tail -12 $R/t/ctest.log >> $R/s.txt
grep -h "Validation Error" $R/t/ctest.log | head -5 >> $R/s.txt
cd - > /dev/null
left=$(( 585 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  mkdir -p $R/moe-4g
  echo "MOTIFCL_TEST_EXPERTS_BYTES=5000000000 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/moe-4g /tmp/b/tests/test_ops_moe" > $R/moe-4g/cmd.txt
  MOTIFCL_TEST_EXPERTS_BYTES=5000000000 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/moe-4g timeout $left /tmp/b/tests/test_ops_moe > $R/moe-4g/out.txt 2>&1
  echo "moe-4g exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
fi
cp .ab/a.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
grep -h "first forward\|capture and first\|warm-up\|first step" $R/cache-*/out.txt
tail -5 $R/owner/out.txt; tail -3 $R/moe-4g/out.txt 2>/dev/null
cd $OUT && tar czf r.tgz r && rm -rf r
