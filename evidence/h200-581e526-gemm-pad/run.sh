#!/bin/bash
# device run 27: gemm_q with padded shared rows (2-way store conflicts instead of 4-way): every GEMM path, suite under validation
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t $R/d
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
echo "motifcl-bench quant rows=2 --warmup 0.3" > $R/d/cmd.txt
timeout 100 $B quant rows=2 --warmup 0.3 --witness-dir $R/d > $R/d/out.txt 2>&1
grep -E "rate" $R/d/out.txt | sed 's/(measured)//'
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t \
  timeout 200 ./tests/test_ops_quant > $R/t/test_ops_quant.txt 2>&1; echo "rc $?" >> $R/t/test_ops_quant.txt )
tail -3 $R/t/test_ops_quant.txt; grep -E "FAILED" $R/t/test_ops_quant.txt | head -10
cd $OUT && tar czf r.tgz r && rm -rf r
