#!/bin/bash
# device run 32: one-row plan sweep, Q6_K and Q4_0, integer-dot path (MOTIFCL_QUANT_GEMV_PLAN)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
i=0
for fmt in 4 1; do
for plan in "" t=16 t=32 t=64 t=128 g=2 g=8 t=32,g=8 t=64,g=2; do
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "MOTIFCL_LOG=debug MOTIFCL_QUANT_GEMV_PLAN=$plan motifcl-bench quant fmt=$fmt rows=1 gemm=0 --warmup 0.3" > $d/cmd.txt
  if [ -n "$plan" ]; then export MOTIFCL_QUANT_GEMV_PLAN=$plan; else unset MOTIFCL_QUANT_GEMV_PLAN; fi
  MOTIFCL_LOG=debug timeout 40 /tmp/b/tools/motifcl-bench quant fmt=$fmt rows=1 gemm=0 --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i fmt=$fmt plan=$plan $(grep -m1 -o 'gemv_q_dot \[[^]]*\]' $d/out.txt) $(grep -m1 -i 'ignored' $d/out.txt)" | tee -a $R/s.txt
  grep -E "kernels alone, of stream read" $d/out.txt | sed 's/(measured)//' | tee -a $R/s.txt
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
# out.txt files were deduplicated afterwards (awk '!seen[$0]++'): the debug log repeats each dispatch's line
