#!/bin/bash
# integer-dot GEMV, Q6_K: quarter by quarter, its codes decoded once for all rows of x (this
# tree) against rows of x outside the quarters (lab/old = 101780e's shaders), 1 and 8 rows,
# alternated; Q8_0 once each (its code unchanged, the module changed)
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
rm -rf /tmp/old && mkdir /tmp/old && cp -r CMakeLists.txt cmake include src shaders spirv tools tests examples abi /tmp/old/ 2>/dev/null
cp -r lab/old/* /tmp/old/
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
cmake -S /tmp/old -B /tmp/bo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/oldcommit.txt) > /tmp/cfgo.log 2>&1 && cmake --build /tmp/bo --target motifcl-bench > /tmp/buildo.log 2>&1 || { tail -30 /tmp/buildo.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # label, build dir, env, args
  local lab=$1 bd=$2 env=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt 300 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.3 ($lab: $bd)" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug timeout 100 $bd/tools/motifcl-bench "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -iE "kernels alone, of stream read|gemv_q_dot.*Register Count" $d/out.txt | sed 's/(measured)//;s/^motifcl debug: //;s/^motifcl info: //' | sort -u >> $R/s.txt
}
for rep in 1 2; do
  one new /tmp/b X=0 quant fmt=4 gemm=0 iter=4
  one old /tmp/bo X=0 quant fmt=4 gemm=0 iter=4
done
one new /tmp/b X=0 quant fmt=0 gemm=0 iter=4
one old /tmp/bo X=0 quant fmt=0 gemm=0 iter=4
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
