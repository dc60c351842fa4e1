#!/bin/bash
# (1) test_core at the full commit hash (the suite's call had built with a short one, which
# test_core refuses); (2) Q4_0 / Q4_K one-row plans with more pieces in flight against the
# defaults, alternated twice, one shape a call.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s $R/t
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_core > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
(cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t ctest -R '^test_core$' --output-on-failure > $R/t/ctest.log 2>&1; echo "test_core ctest exit $?" >> $R/s.txt)
i=0
one() { # env, args
  local env=$1; shift 1
  if [ $(( $(date +%s) - T0 )) -gt 140 ]; then echo "skip $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.3" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=debug timeout 100 /tmp/b/tools/motifcl-bench "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $env $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -iE "alone, of stream read|chained, of stream read|batched, of stream read|: t=|warn" $d/out.txt | grep -v "RX 580\|bound\|one input\|of same-size" | sed 's/(measured)//;s/^motifcl debug: //;s/^motifcl info: //' | sort -u >> $R/s.txt
}
P=MOTIFCL_QUANT_GEMV_PLAN
A="n=14336 k=4096"; B="n=4096 k=14336"
Q="quant rows=1 gemm=0"
one X=0 $Q fmt=1 $A
one $P=t=32,g=4,nr=2,u=4,pb=16 $Q fmt=1 $A
one X=0 $Q fmt=1 $B
one $P=t=128,g=1,nr=2,u=4,pb=16 $Q fmt=1 $B
one X=0 $Q fmt=1 $A
one $P=t=32,g=4,nr=2,u=4,pb=16 $Q fmt=1 $A
one X=0 $Q fmt=1 $B
one $P=t=128,g=1,nr=2,u=4,pb=16 $Q fmt=1 $B
one $P=t=128,g=1,nr=2,u=2,pb=16 $Q fmt=1 $B
one X=0 $Q fmt=2 $A
one $P=t=32,g=4,nr=2,u=2,pb=32 $Q fmt=2 $A
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
