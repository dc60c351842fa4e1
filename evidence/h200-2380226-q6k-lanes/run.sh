#!/bin/bash
# device run 34: Q6_K one row at 16 lanes by default: quant suite strict under validation (both profiles), Q6_K bench
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t $R/d
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "MOTIFCL_LOG=debug motifcl-bench quant fmt=4 rows=1 gemm=0 --warmup 0.3 (output deduplicated)" > $R/d/cmd.txt
MOTIFCL_LOG=debug timeout 40 /tmp/b/tools/motifcl-bench quant fmt=4 rows=1 gemm=0 --warmup 0.3 --witness-dir $R/d 2>&1 | awk '!seen[$0]++' > $R/d/out.txt
grep -o "gemv_q_dot \[[^]]*\]" $R/d/out.txt | sort -u; grep -E "kernels alone, of stream read" $R/d/out.txt
echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync ctest -j2 --output-on-failure -R test_ops_quant" > $R/t/cmd.txt
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t \
  timeout 200 ctest -j2 --output-on-failure -R test_ops_quant > $R/t/ctest.log 2>&1; echo "ctest rc $?" >> $R/t/ctest.log )
grep -E "tests passed|Failed|ctest rc" $R/t/ctest.log
cd $OUT && tar czf r.tgz r && rm -rf r
