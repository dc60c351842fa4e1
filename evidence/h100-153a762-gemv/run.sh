#!/bin/bash
# At .ab/commit.txt (clean, checked out): the f32 GEMV by the rule and at 2, 3, 4 steps
# (MOTIFCL_GEMV_PLAN) over shapes; the GEMM benchmark; the Q8_0 GEMV at 8 rows under
# MOTIFCL_QUANT_GEMV_PLAN variants; test_ops_matmul strict under the layer.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b > /dev/null 2>&1
echo "built at $(( $(date +%s) - T0 )) s" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
B=/tmp/b/tools/motifcl-bench
d=$R/gemv; mkdir -p $d; echo "motifcl-bench gemv" > $d/cmd.txt
timeout 30 $B gemv --witness-dir $d > $d/out.txt 2>&1
echo "gemv rule: $(grep -h 'of stream read' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
for s in "14336 4096" "4096 14336" "8192 4096" "4096 4096" "1024 4096" "8192 8192"; do set -- $s
  for p in "u=2" "u=3" "u=4"; do
    d=$R/gemv-$p-$1-$2; mkdir -p $d
    echo "MOTIFCL_GEMV_PLAN=$p motifcl-bench gemv n=$1 k=$2 rows=8" > $d/cmd.txt
    MOTIFCL_GEMV_PLAN=$p timeout 20 $B gemv n=$1 k=$2 rows=8 --witness-dir $d > $d/out.txt 2>&1
    echo "gemv $p $1x$2: $(grep -h 'of stream read' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
  done; done
d=$R/gemm; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench gemm" > $d/cmd.txt
MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 80 $B gemm --witness-dir $d > $d/out.txt 2>&1
echo "gemm at $(( $(date +%s) - T0 )) s: $(grep -h 'TFLOP' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
for p in default "u=2" "t=64,g=2" "t=32,g=4" "t=32,g=8" "nr=8" "nr=2,u=2" "t=128,g=1"; do
  for s in "14336 4096" "4096 14336"; do set -- $s
    left=$(( 400 - ($(date +%s) - T0) )); [ $left -lt 10 ] && break 2
    d=$R/q8-$p-$1; mkdir -p $d
    if [ $p = default ]; then unset MOTIFCL_QUANT_GEMV_PLAN; else export MOTIFCL_QUANT_GEMV_PLAN=$p; fi
    echo "MOTIFCL_QUANT_GEMV_PLAN=$p motifcl-bench quant fmt=0 rows=8 gemm=0 n=$1 k=$2 --warmup 0.3" > $d/cmd.txt
    timeout 30 $B quant fmt=0 rows=8 gemm=0 n=$1 k=$2 --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1
    echo "q8 $p $1x$2: $(grep -h 'kernels alone, of stream read' $d/out.txt | grep -v chained | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
  done; done
unset MOTIFCL_QUANT_GEMV_PLAN
echo "q8 sweep done at $(( $(date +%s) - T0 )) s" >> $R/s.txt
left=$(( 520 - ($(date +%s) - T0) ))
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ./tests/test_ops_matmul > $R/t/matmul.txt 2>&1; echo "test_ops_matmul exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt )
left=$(( 585 - ($(date +%s) - T0) ))
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ./tests/test_counter > $R/t/counter.txt 2>&1; echo "test_counter exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt )
cp .ab/g12.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; tail -3 $R/t/matmul.txt; grep "gemv plan" $R/t/matmul.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
