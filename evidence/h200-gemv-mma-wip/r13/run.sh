#!/bin/bash
# device run 12: cooperative-matrix shapes listed; where the matrix GEMV's time goes (DIAG variants)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s

cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
B=/tmp/b/tools/motifcl-bench
q() { echo "== $1 | $2" >> $R/s/s.txt; env $1 MOTIFCL_LOG=warning timeout 60 $B quant --warmup 0.2 --repeat 5 --witness-dir /tmp gemm=0 $2 2>&1 | grep -E "of stream read|unavailable" | grep -v -E "same-size|batched" | sed 's/(measured)//' >> $R/s/s.txt; }
for d in 4 5 6; do
  for fmt in 0 1; do q "MOTIFCL_QUANT_PATH=matrix MOTIFCL_QUANT_MMA_GEMV_PLAN=diag=$d" "rows=8 fmt=$fmt"; done
done
q "MOTIFCL_QUANT_PATH=dot" "rows=8 fmt=1"
cat $R/s/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
