#!/bin/bash
# device run 33: Q6_K one row, integer dot: the default plan against t=16, alternated three times
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
i=0
for rep in 1 2 3; do
for plan in "" t=16; do
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "MOTIFCL_QUANT_GEMV_PLAN=$plan motifcl-bench quant fmt=4 rows=1 gemm=0 --warmup 0.3" > $d/cmd.txt
  if [ -n "$plan" ]; then export MOTIFCL_QUANT_GEMV_PLAN=$plan; else unset MOTIFCL_QUANT_GEMV_PLAN; fi
  timeout 40 /tmp/b/tools/motifcl-bench quant fmt=4 rows=1 gemm=0 --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i plan=$plan $(grep -m1 -i 'ignored' $d/out.txt)" | tee -a $R/s.txt
  grep -E "kernels alone, of stream read|^stream read" $d/out.txt | sed 's/(measured)//' | tee -a $R/s.txt
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
