#!/bin/bash
# the GEMV lanes rule as fixed (this tree) against the rule before (lab/old: the previous
# commit's src/ops/matmul_quant.c), one machine, alternated
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
C=$(cat lab/commit.txt)
rm -rf /tmp/old && mkdir /tmp/old && cp -r CMakeLists.txt cmake include src shaders spirv tools tests examples abi /tmp/old/ 2>/dev/null
cp -r lab/old/* /tmp/old/
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
cmake -S /tmp/old -B /tmp/bo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/oldcommit.txt) > /tmp/cfgo.log 2>&1 && cmake --build /tmp/bo --target motifcl-bench > /tmp/buildo.log 2>&1 || { tail -30 /tmp/buildo.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # label, build dir, env, args
  local lab=$1 bd=$2 env=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt 400 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=debug motifcl-bench $* iter=4 --warmup 0.2 ($lab: $bd)" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=debug timeout 60 $bd/tools/motifcl-bench "$@" iter=4 --warmup 0.2 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* ($(( $(date +%s) - t )) s)" >> $R/s.txt
  grep -E "rows, (dot|float): t=|kernels alone, of stream read|batched, of stream read" $d/out.txt | sed 's/(measured)//;s/^motifcl debug: //' | sort -u >> $R/s.txt
}
for K in 1 2 3 0 4; do
  one new /tmp/b X=0 quant fmt=$K gemm=0
  one old /tmp/bo X=0 quant fmt=$K gemm=0
done
for K in 0 1 2 4; do
  one old /tmp/bo MOTIFCL_QUANT_PATH=float quant fmt=$K gemm=0 rows=1
  one new /tmp/b MOTIFCL_QUANT_PATH=float quant fmt=$K gemm=0 rows=1
done
for K in 1 2 3 0; do
  one old /tmp/bo X=0 quant fmt=$K gemm=0 rows=1
  one new /tmp/b X=0 quant fmt=$K gemm=0 rows=1
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
