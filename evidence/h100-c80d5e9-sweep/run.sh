#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against c58e60d ("base", a git archive):
# the dense step alternated base/head, PyTorch's step beside it, head profiled; the GEMM tile
# sweep at the step's shapes (exploration: which tiles to adopt); the 7B prefill at head and
# with the 32-row, 256-invocation full-range plan (x, exploration); on an H200 the decode.
T0=$(date +%s)
LIMIT=${1:-500}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit, targets
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target ${@:4} > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base && tar xzf .ab/tree-c58e60d.tar.gz -C /tmp/src-base
mkdir -p /tmp/src-x; tar c --exclude=./.ab --exclude=./.gl --exclude=./build --exclude=./.git . | tar x -C /tmp/src-x
sed -i 's/define MCL_ATTN_MAX_ROWS 16u/define MCL_ATTN_MAX_ROWS 32u/; s/define MCL_ATTN_WG_FULL 128u/define MCL_ATTN_WG_FULL 256u/' /tmp/src-x/src/ops/attention.c
build base /tmp/src-base c58e60d motifcl-bench & build head . $C motifcl-bench & build x /tmp/src-x x motifcl-bench & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # tree, folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 10 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 12 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$4 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $4 timeout $t /tmp/b-$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  local rc=$?
  echo "$i $2 ($(date -d @$t1 +%H:%M:%S) to $(date +%H:%M:%S)) exit $rc in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|activations and scratch\|peak tensor memory\|replayed back' $d/out.txt | grep -v 'modeled' | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
bench base train-base 30 "$P" train
bench head train-head 30 "$P" train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d
echo "python3 stories15m_step.py --attn sdpa" > $d/cmd.txt
timeout 60 python3 .ab/stories15m_step.py --attn sdpa > $d/out.txt 2>&1; echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
bench base train-base-2 20 "$P" train
bench head train-head-2 20 "$P" train
bench head train-head-prof 20 "$P" train --profile
T="128x128x16/8x8,64x64x16/4x4,128x96x16/8x8,96x96x16/8x8,64x96x16/8x8,64x96x16/4x8,32x96x16/4x8,64x128x16/8x8,64x128x16/4x8,128x64x16/8x8,64x48x16/8x4,96x64x16/8x8,32x128x16/4x8,64x32x16/8x8"
# the step's products: forward (NT), grad x (NN), grad W (TN); per layer and the head's
for s in "4096 288 288 0 1" "4096 768 288 0 1" "4096 288 768 0 1" "4096 288 288 0 0" "4096 288 768 0 0" "4096 768 288 0 0" "288 288 4096 1 0" "768 288 4096 1 0" "288 768 4096 1 0" "4096 32000 288 0 1" "4096 288 32000 0 0" "32000 288 4096 1 0"; do
  set -- $s
  bench head gemm-$1-$2-$3-$4$5 40 "$P" gemm m=$1 n=$2 k=$3 ta=$4 tb=$5 sweep=1 tiles=$T
done
bench head prefill-head 30 "$P" prefill shape=7b type=q4_0 prompt=512 repeat=3
bench x prefill-x 30 "$P" prefill shape=7b type=q4_0 prompt=512 repeat=3
grep -q H200 $R/gpu.txt && bench head decode-7b 40 "$P" decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3
cp .ab/f3.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt; grep -h train_step $R/*-torch/out.txt
for f in $R/*-prof/out.txt; do echo $f; grep -A12 "      ms  share" $f | head -14; done
for f in $R/*-gemm-*/out.txt; do grep -h "rate\|tile\|unavail" $f | sed 's/gemm f32 //; s/(measured)//'; done
grep -h "prefill of" $R/*prefill*/out.txt
cd $OUT && tar czf r.tgz r && rm -rf r
