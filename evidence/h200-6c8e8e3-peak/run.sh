#!/bin/bash
# device run 28: gemm_f32 padded shared rows; measured arithmetic peaks; 8-row GEMV against them; matmul suite under validation
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t $R/p $R/g $R/q
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
echo "motifcl-bench peak" > $R/p/cmd.txt
timeout 60 $B peak --witness-dir $R/p > $R/p/out.txt 2>&1; cat $R/p/out.txt
echo "motifcl-bench gemm" > $R/g/cmd.txt
timeout 150 $B gemm --witness-dir $R/g > $R/g/out.txt 2>&1; grep -E "TFLOP/s" $R/g/out.txt
echo "motifcl-bench quant rows=8 gemm=0 --warmup 0.3" > $R/q/cmd.txt
timeout 200 $B quant rows=8 gemm=0 --warmup 0.3 --witness-dir $R/q > $R/q/out.txt 2>&1
grep -E "kernels alone, of stream read|bound" $R/q/out.txt | sed 's/(measured)//'
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t \
  timeout 120 ./tests/test_ops_matmul > $R/t/test_ops_matmul.txt 2>&1; echo "rc $?" >> $R/t/test_ops_matmul.txt )
tail -3 $R/t/test_ops_matmul.txt; grep -E "FAILED" $R/t/test_ops_matmul.txt | head -10
cd $OUT && tar czf r.tgz r && rm -rf r
