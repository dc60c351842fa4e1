#!/bin/bash
# gemm_q with K steps of 32 against 16 (MOTIFCL_QUANT_GEMM_BK), and 8-row integer-dot GEMV plans
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
C=$(cat lab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # env, args
  local env=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 540 ]; then echo "skip $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=info MOTIFCL_PIPELINE_STATS=1 motifcl-bench $* --warmup 0.2" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=info MOTIFCL_PIPELINE_STATS=1 timeout 90 /tmp/b/tools/motifcl-bench "$@" --warmup 0.2 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $env $* ($(( $(date +%s) - t )) s)" >> $R/s.txt
  grep -E "kernel gemm_q \[.*Register Count|kernel gemv_q_dot.*Register Count|kernels alone, of stream read|float, rate|warning" $d/out.txt | sed 's/(measured)//' >> $R/s.txt
}
for K in 1 0 2; do
  one MOTIFCL_QUANT_GEMM_BK=16 quant fmt=$K rows=3 iter=4
  one MOTIFCL_QUANT_GEMM_BK=32 quant fmt=$K rows=3 iter=4
done
one MOTIFCL_QUANT_GEMM_BK=32 quant fmt=1 rows=3 iter=4
one MOTIFCL_QUANT_GEMM_BK=16 quant fmt=1 rows=3 iter=4
for P in X pb=32 pb=32,nr=2 nr=2 u=2 nr=2,u=2 pb=32,u=2; do
  [ $P = X ] && E=NOPLAN=1 || E=MOTIFCL_QUANT_GEMV_PLAN=$P; one $E quant fmt=2 rows=8 gemm=0 iter=4
done
for P in X pb=32 pb=32,nr=2 nr=2; do
  [ $P = X ] && E=NOPLAN=1 || E=MOTIFCL_QUANT_GEMV_PLAN=$P; one $E quant fmt=3 rows=8 gemm=0 iter=4
done
for P in X nr=2 u=2 nr=2,u=2; do
  [ $P = X ] && E=NOPLAN=1 || E=MOTIFCL_QUANT_GEMV_PLAN=$P; one $E quant fmt=4 rows=8 gemm=0 iter=4
done
for P in X nr=2 u=2 nr=8; do
  [ $P = X ] && E=NOPLAN=1 || E=MOTIFCL_QUANT_GEMV_PLAN=$P; one $E quant fmt=1 rows=8 gemm=0 iter=4
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
