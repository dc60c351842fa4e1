#!/bin/bash
# device run 24: split K in the float-path quantized GEMM (gemm_q): slices sweep, suite under validation
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t $R/s $R/d
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
echo "MOTIFCL_LOG=debug motifcl-bench quant rows=2 --warmup 0.3" > $R/d/cmd.txt
MOTIFCL_LOG=debug timeout 120 $B quant rows=2 --warmup 0.3 --witness-dir $R/d 2>&1 | awk '!seen[$0]++' | grep -v 'debug: gemv' > $R/d/out.txt
grep -E "rate|debug: gemm" $R/d/out.txt | sed 's/(measured)//' | awk '!seen[$0]++' | head -30
q() { echo "== $1 | $2" >> $R/s/s.txt; env $1 MOTIFCL_LOG=warning timeout 60 $B quant --warmup 0.2 --witness-dir /tmp $2 2>&1 | grep -E "float.*rate|unavailable|warning|error" | sed 's/(measured)//' >> $R/s/s.txt; }
for sl in 1 2 4 8 16; do
  for fmt in 0 1; do q "MOTIFCL_QUANT_GEMM_SLICES=$sl" "rows=2 fmt=$fmt"; done
done
cat $R/s/s.txt
mkdir -p $R/g; echo "motifcl-bench gemm sweep=1 --warmup 0.3" > $R/g/cmd.txt
timeout 150 $B gemm sweep=1 --warmup 0.3 --witness-dir $R/g > $R/g/out.txt 2>&1
grep -E "rate|tile" $R/g/out.txt | sed 's/(measured)//'
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t \
  timeout 240 ./tests/test_ops_quant > $R/t/test_ops_quant.txt 2>&1; echo "rc $?" >> $R/t/test_ops_quant.txt )
tail -3 $R/t/test_ops_quant.txt; grep -E "FAILED|validation" $R/t/test_ops_quant.txt | head -10
cd $OUT && tar czf r.tgz r && rm -rf r
