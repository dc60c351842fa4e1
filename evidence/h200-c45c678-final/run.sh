#!/bin/bash
# the final tree: the float-path GEMV at one row, every format, default profile (the shares
# the modeled RX 580 line takes); strict quant suite, both profiles, under validation
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s $R/t
C=$(cat lab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_ops_quant > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # label, build dir, env, args
  local lab=$1 bd=$2 env=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt 250 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.5 ($lab: $bd)" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=debug timeout 60 $bd/tools/motifcl-bench "$@" --warmup 0.5 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* ($(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -E "rows, (dot|float): t=|kernels alone, of stream read|batched, of stream read|RX 580" $d/out.txt | sed 's/(measured)//;s/^motifcl debug: //' | sort -u >> $R/s.txt
}
for K in 0 1 2 3 4; do
  one final /tmp/b MOTIFCL_QUANT_PATH=float quant fmt=$K gemm=0 rows=1 iter=4
done
echo "benches done $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd /tmp/b/tests
for P in "" polaris; do
  t=$(date +%s)
  mkdir -p $R/t/${P:-default}
  MOTIFCL_DEVICE_PROFILE=$P MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t/${P:-default} timeout 140 ./test_ops_quant > $R/t/${P:-default}/out.txt 2>&1
  echo "test_ops_quant ${P:-default}: exit $? in $(( $(date +%s) - t )) s" >> $R/s.txt
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
