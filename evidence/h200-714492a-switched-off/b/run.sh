#!/bin/bash
# device run 5: the driver's statistics (registers, shared memory) of the 8-row integer-dot GEMV with and without f7e5ac3's switched-off code, and of float-path plans that do not stage x
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
rm -rf /tmp/old && mkdir /tmp/old && cp -r CMakeLists.txt cmake include src shaders spirv tools tests examples abi /tmp/old/ 2>/dev/null
cp -r lab/old/* /tmp/old/
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
cmake -S /tmp/old -B /tmp/bo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=f7e5ac3 > /tmp/cfgo.log 2>&1 && cmake --build /tmp/bo --target motifcl-bench > /tmp/buildo.log 2>&1 || { tail -30 /tmp/buildo.log /tmp/cfgo.log; exit 1; }
i=0
one() { # build dir, env, args
  local bd=$1 env=$2; shift 2
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env MOTIFCL_LOG=info MOTIFCL_PIPELINE_STATS=1 motifcl-bench $* iter=4 --warmup 0.2 ($bd)" > $d/cmd.txt
  env $env MOTIFCL_LOG=info MOTIFCL_PIPELINE_STATS=1 timeout 40 $bd/tools/motifcl-bench "$@" iter=4 --warmup 0.2 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $bd $env $*" | tee -a $R/s.txt
  grep -E "kernel gemv_q.*(Register Count|Shared Memory Size)|kernels alone, of stream read|batched, of stream read" $d/out.txt | sed 's/(measured)//' | tee -a $R/s.txt
}
one /tmp/b X=0 quant fmt=0 rows=8 gemm=0
one /tmp/bo X=0 quant fmt=0 rows=8 gemm=0
#one /tmp/b MOTIFCL_QUANT_PATH=float quant fmt=4 rows=8 gemm=0
#one /tmp/b MOTIFCL_QUANT_PATH=float quant fmt=0 rows=1 gemm=0
cd $OUT && tar czf r.tgz r && rm -rf r
