#!/bin/bash
# test_engine (both profiles), strict, under synchronization validation, at the commit in
# .ab/commit.txt.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
cd /tmp/b
MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout 200 ctest -R "test_engine|test_sampler" --output-on-failure > $R/t/ctest.log 2>&1
echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
tail -8 $R/t/ctest.log >> $R/s.txt
cd - > /dev/null
cp .ab/engine.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
