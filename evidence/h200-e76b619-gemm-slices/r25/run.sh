#!/bin/bash
# device run 25: split K in gemm_q, K types: default against one slice
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
q() { echo "== $1 | $2" >> $R/s/s.txt; env $1 MOTIFCL_LOG=warning timeout 60 $B quant --warmup 0.3 --witness-dir /tmp $2 2>&1 | grep -E "float.*rate|unavailable|warning|error" | sed 's/(measured)//' >> $R/s/s.txt; }
for fmt in 2 3 4; do
  for sl in 1 4 1 4; do q "MOTIFCL_QUANT_GEMM_SLICES=$sl" "rows=2 fmt=$fmt"; done
done
cat $R/s/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
