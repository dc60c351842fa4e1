#!/bin/bash
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t ctest -R "^test_core$" --output-on-failure > $R/t/ctest-core.log 2>&1; echo "exit $?"; tail -3 $R/t/ctest-core.log
cd - >/dev/null; cp .ab/core.sh $R/run-core.sh; cp .ab/commit.txt $R/commit.txt
cd $OUT && tar czf r.tgz r && rm -rf r
