#!/bin/bash
# float-path quantized GEMM 512x14336 by (4096x14336)^T: tile 128x128 (default) against 256x128
# (each weight of W decoded for 256 rows of a) and 128x256, unroll and slices; registers
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/s
C=$(cat lab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_ops_quant > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
i=0
one() { # label, env, args
  local lab=$1 env=$2; shift 2
  if [ $(( $(date +%s) - T0 )) -gt 480 ]; then echo "skip $lab $env $*" >> $R/s.txt; return; fi
  i=$((i+1)); d=$R/s/$i; mkdir -p $d
  echo "$env __GL_SHADER_DISK_CACHE=0 MOTIFCL_DISABLE=integer-dot,cooperative-matrix MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug motifcl-bench $* --warmup 0.3 ($lab)" > $d/cmd.txt
  local t=$(date +%s)
  env $env __GL_SHADER_DISK_CACHE=0 MOTIFCL_DISABLE=integer-dot,cooperative-matrix MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug timeout 120 /tmp/b/tools/motifcl-bench "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $lab $env $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  awk 'NR>1 && $0==prev {n++; next} {if (n>0) print "[the line above " n " more times]"; n=0; print; prev=$0} END {if (n>0) print "[the line above " n " more times]"}' $d/out.txt > $d/o && mv $d/o $d/out.txt
  grep -iE "float: .*tiles|gemm_q.*(register|spill|created)|rate" $d/out.txt | sed 's/(measured)//;s/^motifcl debug: //' | sort -u | head -12 >> $R/s.txt
}
for F in 1 0; do
  one base "" quant rows=2 fmt=$F
  one t256u4 "MOTIFCL_QUANT_GEMM_FLOAT_TILE=256x128 MOTIFCL_QUANT_GEMM_UNROLL=4" quant rows=2 fmt=$F
done
one t256u2 "MOTIFCL_QUANT_GEMM_FLOAT_TILE=256x128 MOTIFCL_QUANT_GEMM_UNROLL=2" quant rows=2 fmt=1
one t256u8 "MOTIFCL_QUANT_GEMM_FLOAT_TILE=256x128 MOTIFCL_QUANT_GEMM_UNROLL=8" quant rows=2 fmt=1
one w256u4 "MOTIFCL_QUANT_GEMM_FLOAT_TILE=128x256 MOTIFCL_QUANT_GEMM_UNROLL=4" quant rows=2 fmt=1
for S in 2 4 16; do
  one t256u4s$S "MOTIFCL_QUANT_GEMM_FLOAT_TILE=256x128 MOTIFCL_QUANT_GEMM_UNROLL=4 MOTIFCL_QUANT_GEMM_SLICES=$S" quant rows=2 fmt=1
done
for F in 2 3 4; do
  one t256u4 "MOTIFCL_QUANT_GEMM_FLOAT_TILE=256x128 MOTIFCL_QUANT_GEMM_UNROLL=4" quant rows=2 fmt=$F
  one base "" quant rows=2 fmt=$F
done
for F in 1 0; do
  one base2 "" quant rows=2 fmt=$F
  one t256u4b "MOTIFCL_QUANT_GEMM_FLOAT_TILE=256x128 MOTIFCL_QUANT_GEMM_UNROLL=4" quant rows=2 fmt=$F
done
echo "total $(( $(date +%s) - T0 )) s" >> $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
