#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against c80d5e9 ("base", a git archive:
# the library of a359c2f): the dense step alternated base/head, PyTorch's step beside it, head
# profiled, both counter steps; the GEMM at the shapes, head's rule against the
# 128 x 128 tile (sweep); the prefill of the 7B at head (if time is left).
T0=$(date +%s)
LIMIT=${1:-360}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit, targets
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target ${@:4} > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
mkdir -p /tmp/src-base && tar xzf .ab/tree-c80d5e9.tar.gz -C /tmp/src-base
build base /tmp/src-base c80d5e9 motifcl-bench & build head . $C motifcl-bench & wait
echo "built in $(( $(date +%s) - T0 )) s" > $R/s.txt
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
  echo "$i $2 ($(date -d @$t1 +%H:%M:%S) to $(date +%H:%M:%S)) exit $rc in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|activations and scratch\|peak tensor memory\|: rate\|prefill of' $d/out.txt | grep -v 'modeled' | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
bench base train-base 60 "$P" train
bench head train-head 60 "$P" train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d
echo "python3 stories15m_step.py --attn sdpa" > $d/cmd.txt
timeout 60 python3 .ab/stories15m_step.py --attn sdpa > $d/out.txt 2>&1; echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
bench base train-base-2 20 "$P" train
bench head train-head-2 20 "$P" train
bench head train-head-prof 20 "$P" train --profile
bench base counter-base 40 "$P" train counter=11
bench head counter-head 40 "$P" train counter=11
T="128x128x16/8x8,128x64x16/8x8,64x128x16/8x8"
bench head gemm 60 "$P" gemm sweep=1 tiles=$T
bench head prefill-head 30 "$P" prefill shape=7b type=q4_0 prompt=512 repeat=3
cp .ab/f4.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt; grep -h train_step $R/*-torch/out.txt
for f in $R/*-prof/out.txt; do echo $f; grep -A14 "      ms  share" $f | head -16; done
grep -h "rate\|tile\|unavail" $R/*-gemm/out.txt | sed 's/gemm f32 //; s/(measured)//'
cd $OUT && tar czf r.tgz r && rm -rf r
