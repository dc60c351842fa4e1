#!/bin/bash
# device run 21: gemv_q_imma DIAG variants at 8 rows
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
q() { echo "== $1 | $2" >> $R/s/s.txt; env $1 MOTIFCL_LOG=warning timeout 60 $B quant --warmup 0.2 --witness-dir /tmp gemm=0 $2 2>&1 | grep -E "of stream read|unavailable|warning|error" | grep -v same-size | sed 's/(measured)//' >> $R/s/s.txt; }
for fmt in 0 1; do
  for d in 0 1 2 3 4; do
    q "MOTIFCL_QUANT_IMMA_DIAG=$d" "rows=8 fmt=$fmt"
  done
done
cat $R/s/s.txt | grep -E "==|kernels alone|warn|err|unavail"
cd $OUT && tar czf r.tgz r && rm -rf r
