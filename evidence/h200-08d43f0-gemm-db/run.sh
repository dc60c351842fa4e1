#!/bin/bash
# float-path quantized GEMM 512x14336 by (4096x14336)^T: gemm_q's shared tiles single-buffered
# (this tree, two barriers a K step) against double-buffered (one barrier a step): lab/db1 (the
# buffer an index that alternates), lab/db2 (two steps a trip, buffers constant); alternated
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
C=$(cat lab/commit.txt)
for v in db1 db2; do
  rm -rf /tmp/$v && mkdir /tmp/$v && cp -r CMakeLists.txt cmake include src shaders spirv tools tests examples abi /tmp/$v/ 2>/dev/null
  cp -r lab/$v/* /tmp/$v/
  cmake -S /tmp/$v -B /tmp/b$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C-$v > /tmp/cfg$v.log 2>&1 && cmake --build /tmp/b$v --target motifcl-bench > /tmp/build$v.log 2>&1 || { tail -30 /tmp/build$v.log; exit 1; }
done
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # label, build dir, env, args
  local lab=$1 bd=$2 env=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_DISABLE=integer-dot,cooperative-matrix MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.3 ($lab: $bd)" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_DISABLE=integer-dot,cooperative-matrix MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug timeout 100 $bd/tools/motifcl-bench "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -iE "float.*rate|gemm_q.*(Register|created)" $d/out.txt | sed 's/(measured)//;s/^motifcl debug: //;s/^motifcl info: //' | sort -u >> $R/s.txt
}
for rep in 1 2; do
  for F in 1 0; do
    one base /tmp/b X=0 quant rows=2 fmt=$F
    one db1 /tmp/bdb1 X=0 quant rows=2 fmt=$F
    one db2 /tmp/bdb2 X=0 quant rows=2 fmt=$F
  done
done
for F in 2 3 4; do
  one base /tmp/b X=0 quant rows=2 fmt=$F
  one db1 /tmp/bdb1 X=0 quant rows=2 fmt=$F
  one db2 /tmp/bdb2 X=0 quant rows=2 fmt=$F
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
