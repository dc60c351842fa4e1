#!/bin/bash
# Head (.ab/commit.txt, clean, checked out): the f32 GEMV at 8 rows under MOTIFCL_GEMV_PLAN
# variants; then head against warp (.ab/tree-warp.tar.gz) on the GEMM benchmark, alternated;
# then, while time is left, head's K = 288 tile sweep.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
mkdir -p /tmp/src-warp && tar xzf .ab/tree-warp.tar.gz -C /tmp/src-warp
( cmake -S /tmp/src-warp -B /tmp/b-warp -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null 2>&1 && cmake --build /tmp/b-warp --target motifcl-bench > /dev/null 2>&1 ) &
cmake -S . -B /tmp/b-head -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b-head --target motifcl-bench > /dev/null 2>&1
echo "head built at $(( $(date +%s) - T0 )) s" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for p in default "u=4" "u=2" "u=1" "nr=8,u=1" "nr=8,u=2" "nr=2,u=4" "nr=2,u=6" "t=128,g=4" "g=4,u=2" "u=0" "t=128,g=4,u=4" "nr=6,u=2"; do
  for s in "14336 4096" "4096 14336"; do set -- $s
    d=$R/gemv-$p-$1; mkdir -p $d
    if [ $p = default ]; then unset MOTIFCL_GEMV_PLAN; else export MOTIFCL_GEMV_PLAN=$p; fi
    echo "MOTIFCL_GEMV_PLAN=$p motifcl-bench gemv n=$1 k=$2 rows=8" > $d/cmd.txt
    timeout 20 /tmp/b-head/tools/motifcl-bench gemv n=$1 k=$2 rows=8 --witness-dir $d > $d/out.txt 2>&1
    echo "gemv $p $1x$2: $(grep -h 'of stream read' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
  done; done
unset MOTIFCL_GEMV_PLAN
echo "sweep done at $(( $(date +%s) - T0 )) s" >> $R/s.txt; wait
echo "warp built at $(( $(date +%s) - T0 )) s" >> $R/s.txt
i=0
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 motifcl-bench ${@:3} --witness-dir $d (tree $1)" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 timeout $2 /tmp/b-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 ${@:3} exit $? at $(( $(date +%s) - T0 )) s: $(grep -h 'TFLOP' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt; }
run head 80 gemm; run warp 80 gemm; run head 40 gemm; run warp 40 gemm
T="64x64x16/8x8,64x64x16/4x4,128x64x16/8x8,64x128x16/8x8"
for s in "4096 288 288 0 1" "4096 288 288 0 0"; do set -- $s
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 20 ] && break
  d=$R/gemm-$1-$2-$3-$4$5; mkdir -p $d; echo "motifcl-bench gemm m=$1 n=$2 k=$3 ta=$4 tb=$5 sweep=1 tiles=$T" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc-head timeout $left /tmp/b-head/tools/motifcl-bench gemm m=$1 n=$2 k=$3 ta=$4 tb=$5 sweep=1 tiles=$T --witness-dir $d > $d/out.txt 2>&1; done
cp .ab/g10.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "tile" $R/gemm-*/out.txt | sed 's/gemm f32 //; s/(measured)//'
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
