#!/bin/bash
# one-row integer-dot GEMV, fewer lanes along K than the rule gives (t=32, t=16) against the
# default, Q4_0 / Q4_K / Q5_K, alternated twice
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
C=$(cat lab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # env, args
  local env=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 500 ]; then echo "skip $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=debug motifcl-bench $* iter=4 --warmup 0.2" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=debug timeout 60 /tmp/b/tools/motifcl-bench "$@" iter=4 --warmup 0.2 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $env $* ($(( $(date +%s) - t )) s)" >> $R/s.txt
  grep -E "gemv .* rows, dot: t=|kernels alone, of stream read|warning" $d/out.txt | sed 's/(measured)//;s/^.*motifcl debug[^:]*: //' | sort -u >> $R/s.txt
}
for pass in 1 2; do
  for K in 1 2 3; do
    for P in X t=32 t=16; do
      [ $P = X ] && E=NOPLAN=1 || E=MOTIFCL_QUANT_GEMV_PLAN=$P
      one $E quant fmt=$K rows=1 gemm=0
    done
  done
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
