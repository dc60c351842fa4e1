#!/bin/sh
# lab/vK/spirv: spirv/ with every quantized shader compiled for format K alone (FORMAT a plain
# constant, dead branches removed by spirv-opt), manifest hashes updated.
set -e
cd "$(git rev-parse --show-toplevel)"
for K in 0 1 2 3 4; do
  V=lab/v$K; rm -rf $V; mkdir -p $V/spirv $V/src
  cp spirv/* $V/spirv/
  for s in gemv_q gemv_q_dot gemm_q gemm_q_dot gemm_q_mma dequant_q; do
    sed "s/^layout(constant_id = 1) const uint FORMAT = 0;/const uint FORMAT = ${K}u;/" shaders/$s.comp > $V/src/$s.comp
    grep -q "const uint FORMAT = ${K}u;" $V/src/$s.comp
    glslangValidator -V --target-env vulkan1.2 -g0 -Ishaders $V/src/$s.comp -o $V/src/$s.raw.spv > /dev/null
    spirv-opt --eliminate-dead-branches --eliminate-dead-code-aggressive $V/src/$s.raw.spv -o $V/spirv/$s.spv
    spirv-val --target-env vulkan1.2 $V/spirv/$s.spv
  done
  python3 - $V/spirv <<'PY'
import json,hashlib,os,sys
d=sys.argv[1]; p=os.path.join(d,'manifest.json'); m=json.load(open(p))
for mod in m['modules']:
    f=os.path.join(d,os.path.basename(mod['spv'])); b=open(f,'rb').read()
    mod['spv_sha256']=hashlib.sha256(b).hexdigest(); mod['size']=len(b)
json.dump(m,open(p,'w'),indent=2)
PY
  ls -l spirv/gemv_q.spv spirv/gemv_q_dot.spv spirv/gemm_q.spv $V/spirv/gemv_q.spv $V/spirv/gemv_q_dot.spv $V/spirv/gemm_q.spv | awk '{print $5, $9}'
done
