#!/bin/bash
# A lone quantized GEMV call with many rows of W (an output head's shape): single-call rate
# against batched and kernels alone, integer dot and float path, Q8_0 / Q4_0 / Q6_K, with the
# plans the library logs; the f32 GEMV at the same shape.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # env, args
  local env=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "skip $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.3" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=debug timeout 100 /tmp/b/tools/motifcl-bench "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $env $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -iE "of stream read|stream read of the same|same batched|time|per GEMV|plan|^stream read" $d/out.txt | grep -v "RX 580\|bound" | sed 's/(measured)//;s/^motifcl debug: //;s/^motifcl info: //' | sort -u >> $R/s.txt
}
for f in 0 1 4; do
  one X=0 quant fmt=$f rows=1 gemm=0 n=57344 k=4096
done
one X=0 quant fmt=1 rows=1 gemm=0 n=32768 k=4096
one X=0 quant fmt=1 rows=1 gemm=0 n=28672 k=8192
one MOTIFCL_DISABLE=integer-dot quant fmt=1 rows=1 gemm=0 n=57344 k=4096
one MOTIFCL_DISABLE=integer-dot quant fmt=1 rows=1 gemm=0
one X=0 gemv n=57344 k=4096 rows=1
one X=0 gemv n=16384 k=14336 rows=1
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
