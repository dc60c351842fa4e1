#!/bin/bash
# device run 1: peak (unrolled), one-row plans with the subgroup reduction, staged integer-dot at 8 rows, float GEMM slices
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
B=/tmp/b/tools/motifcl-bench
i=0
one() { # plan, then bench args
  local plan="$1"; shift
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "MOTIFCL_LOG=debug MOTIFCL_QUANT_GEMV_PLAN=$plan motifcl-bench $* --warmup 0.3" > $d/cmd.txt
  if [ -n "$plan" ]; then export MOTIFCL_QUANT_GEMV_PLAN=$plan; else unset MOTIFCL_QUANT_GEMV_PLAN; fi
  MOTIFCL_LOG=debug timeout 60 $B "$@" --warmup 0.3 --witness-dir $d 2>&1 | awk '!seen[$0]++' > $d/out.txt
  echo "== $i plan=$plan $* $(grep -o 'gemv [^ ]* [0-9x]*, [0-9] rows, [a-z]*: t=[^ ]* g=[^ ]* nr=[^ ]* u=[^ ]* pb=[^ ]* st=[^ ]* sr=[0-9]' $d/out.txt | sort -u | tr '\n' ';') $(grep -m1 -i 'ignored' $d/out.txt)" | tee -a $R/s.txt
  grep -E "kernels alone, of stream read|rate|TFLOP|TOPS" $d/out.txt | sed 's/(measured)//' | tee -a $R/s.txt
}
one "" peak
for plan in "" g=1 g=1,sr=0 t=128,g=1 t=128,g=1,sr=0 t=64,g=1,u=2 t=128,g=1,nr=1,u=2; do one "$plan" quant fmt=1 rows=1 gemm=0; done
for plan in "" sr=0; do one "$plan" quant fmt=2 rows=1 gemm=0; done
for plan in "" g=1; do one "$plan" quant fmt=0 rows=1 gemm=0; done
for fmt in 0 1; do
  for plan in "" st=1 st=1,g=8; do one "$plan" quant fmt=$fmt rows=8 gemm=0; done
done
cd $OUT && tar czf r.tgz r && rm -rf r
