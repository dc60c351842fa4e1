#!/bin/bash
# per-format quantized modules (lab/vK/spirv: FORMAT a plain constant, spirv-opt dead-branch
# elimination) against the tree's modules (FORMAT a specialization constant), same machine, alternated
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
C=$(cat lab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
rm -rf /tmp/src && mkdir /tmp/src && cp -r CMakeLists.txt cmake include src shaders spirv tools tests examples abi /tmp/src/ 2>/dev/null
cmake -S /tmp/src -B /tmp/bv -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C-fmt > /tmp/cfgv.log 2>&1 || { tail /tmp/cfgv.log; exit 1; }
for K in 0 1 2 3 4; do
  cp lab/v$K/spirv/* /tmp/src/spirv/
  cmake --build /tmp/bv --target motifcl-bench > /tmp/buildv$K.log 2>&1 || { tail -30 /tmp/buildv$K.log; exit 1; }
  cp /tmp/bv/tools/motifcl-bench /tmp/bench$K
done
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
one() { # label, binary, env, args
  local lab=$1 bin=$2 env=$3; shift 3
  if [ $(( $(date +%s) - T0 )) -gt 520 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=info MOTIFCL_PIPELINE_STATS=1 motifcl-bench $* iter=4 --warmup 0.2 ($lab: $bin)" > $d/cmd.txt
  local t=$(date +%s)
  env $env MOTIFCL_LOG=info MOTIFCL_PIPELINE_STATS=1 timeout 60 $bin "$@" iter=4 --warmup 0.2 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* ($(( $(date +%s) - t )) s)" >> $R/s.txt
  grep -E "kernel (gemv|gemm)_q.*(Register Count)|kernels alone, of stream read|batched, of stream read|TFLOP/s" $d/out.txt | grep -v "peak\|rate" | sed 's/(measured)//' >> $R/s.txt
}
for K in 0 1 2 3 4; do
  one base /tmp/b/tools/motifcl-bench X=0 quant fmt=$K gemm=0
  one fmt$K /tmp/bench$K X=0 quant fmt=$K gemm=0
done
for K in 0 1 2 3 4; do
  one base /tmp/b/tools/motifcl-bench MOTIFCL_QUANT_PATH=float quant fmt=$K gemm=0
  one fmt$K /tmp/bench$K MOTIFCL_QUANT_PATH=float quant fmt=$K gemm=0
done
for K in 0 1; do
  one base /tmp/b/tools/motifcl-bench X=0 quant fmt=$K rows=3
  one fmt$K /tmp/bench$K X=0 quant fmt=$K rows=3
done
for K in 0 1 2 3 4; do
  one fmt$K /tmp/bench$K X=0 quant fmt=$K gemm=0
  one base /tmp/b/tools/motifcl-bench X=0 quant fmt=$K gemm=0
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
