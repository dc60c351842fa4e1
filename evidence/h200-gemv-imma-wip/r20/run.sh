#!/bin/bash
# device run 20: gemv_q_imma (integer-dot GEMV on NV cooperative matrices): suite under validation, plan sweep at 8 rows
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info timeout 60 $B quant --warmup 0.2 --witness-dir /tmp gemm=0 rows=8 fmt=1 > $R/stats.txt 2>&1
grep -E "gemv_q_imma.*(Register|Stack)" $R/stats.txt | sort -u | head
q() { echo "== $1 | $2" >> $R/s/s.txt; env $1 MOTIFCL_LOG=warning timeout 60 $B quant --warmup 0.2 --witness-dir /tmp gemm=0 $2 2>&1 | grep -E "of stream read|unavailable|warning|error" | grep -v same-size | sed 's/(measured)//' >> $R/s/s.txt; }
for fmt in 0 1; do
  q "MOTIFCL_QUANT_GEMV=simt" "rows=8 fmt=$fmt"
  for plan in sg=8,u=4 sg=4,u=4 sg=8,u=8 sg=16,u=4 sg=4,u=8 sg=16,u=2 sg=2,u=8; do
    q "MOTIFCL_QUANT_IMMA_PLAN=$plan" "rows=8 fmt=$fmt"
  done
done
cat $R/s/s.txt | grep -E "==|kernels alone|warn|err|unavail"
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t \
  timeout 200 ./tests/test_ops_quant > $R/t/test_ops_quant.txt 2>&1; echo "rc $?" >> $R/t/test_ops_quant.txt )
tail -4 $R/t/test_ops_quant.txt; grep -iE "fail|error" $R/t/test_ops_quant.txt | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
