#!/bin/bash
# (1) integer-dot GEMV Q6_K: x of every row first, then each row of W decoded once (lab/xf
# shaders, xfirst.diff) against this tree, 1 and 8 rows, alternated twice. (2) Q4_0 and Q8_0
# at one row on weights four times the standard size (n= k=), beside the standard shapes:
# the kernels' own rate against the fixed cost of a dispatch.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
rm -rf /tmp/xf && mkdir /tmp/xf && cp -r CMakeLists.txt cmake include src shaders spirv tools tests examples abi /tmp/xf/ 2>/dev/null
cp -r lab/xf/* /tmp/xf/
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
cmake -S /tmp/xf -B /tmp/bx -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt)-xfirst > /tmp/cfgx.log 2>&1 && cmake --build /tmp/bx --target motifcl-bench > /tmp/buildx.log 2>&1 || { tail -30 /tmp/buildx.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # label, build dir, env, args
  local lab=$1 bd=$2 env=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.3 ($lab: $bd)" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug timeout 100 $bd/tools/motifcl-bench "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -iE "of stream read|stream read of the same|same batched|gemv_q_dot.*Register Count|^stream read" $d/out.txt | grep -v "RX 580\|bound" | sed 's/(measured)//;s/^motifcl debug: //;s/^motifcl info: //' | sort -u >> $R/s.txt
}
for rep in 1 2; do
  one xfirst /tmp/bx X=0 quant fmt=4 gemm=0 iter=4
  one base /tmp/b X=0 quant fmt=4 gemm=0 iter=4
done
for f in 1 0; do
  one base /tmp/b X=0 quant fmt=$f rows=1 gemm=0 iter=4
  one base /tmp/b X=0 quant fmt=$f rows=1 gemm=0 iter=4 n=16384 k=14336
  one base /tmp/b X=0 quant fmt=$f rows=1 gemm=0 iter=4 n=57344 k=4096
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
