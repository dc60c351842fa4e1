#!/bin/bash
# At the commit in .ab/commit.txt (clean tree, "head") against 60574e5 ("b60": before the norm
# epilogue and the prefill attention's column reuse) and 3fd6aa3 ("b3f": before the attention
# backward's reuse): the 7B q4_0 decode step and its prefill alternated, head profiled; the
# dense training step alternated, head profiled; PyTorch's step in the same lease.
T0=$(date +%s)
LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target motifcl-bench > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
for t in 60574e5 3fd6aa3; do mkdir -p /tmp/src-$t && tar xzf .ab/tree-$t.tar.gz -C /tmp/src-$t; done
build b60 /tmp/src-60574e5 60574e5 & build b3f /tmp/src-3fd6aa3 3fd6aa3 & build head . $C & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # tree, folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 70 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$4 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $4 timeout $t /tmp/b-$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $2 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|ms/step\|prefill of' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
D="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3"
F="prefill shape=7b type=q4_0 prompt=512 repeat=5"
bench head dec-head 60 "$P" $D
bench b60 dec-b60 60 "$P" $D
bench head dec-head 60 "$P" $D
bench b60 dec-b60 60 "$P" $D
bench head pre-head 50 "$P" $F
bench b60 pre-b60 50 "$P" $F
bench head pre-head-prof 50 "$P" $F --profile
bench head dec-head-prof 60 "$P" $D --profile
bench head train-head 70 "$P" train
bench b3f train-b3f 70 "$P" train
bench head train-head 50 "$P" train
bench b3f train-b3f 50 "$P" train
bench head train-head-prof 50 "$P" train --profile
i=$((i+1)); d=$R/$i-torch; mkdir -p $d; left=$(( LIMIT - 5 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  echo "python3 .ab/stories15m_step.py --attn sdpa --micro" > $d/cmd.txt
  timeout $left python3 .ab/stories15m_step.py --attn sdpa --micro > $d/out.txt 2>&1
  echo "$i torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
fi
cp .ab/h.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
grep -h "train_step\|TFLOP" $R/*-torch/out.txt | head
cd $OUT && tar czf r.tgz r && rm -rf r
