#!/bin/bash
# At .ab/commit.txt (clean, checked out): the decode step with gate, up and SwiGLU fused
# (default) against MOTIFCL_ENGINE_SPLIT_GLU=1, alternated, one pipeline cache; before them
# test_ops_decode and test_engine (MOTIFCL_QUANT_PATH=dot) strict under sync validation.
T0=$(date +%s)
LIMIT=560
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout 100 ./tests/test_ops_decode > $R/t/decode.txt 2>&1; echo "test_ops_decode exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_QUANT_PATH=dot MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/dot timeout 150 ./tests/test_engine > $R/t/engine-dot.txt 2>&1; echo "test_engine (dot) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
wait
i=0
bench() { # folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  local e=$3; [ "$e" = - ] && e=
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|each step waited for, no sampling\|of the stream read  \|dispatches per token\|gate, up\|swiglu\|on the GPU, down' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
S=MOTIFCL_ENGINE_SPLIT_GLU=1
bench 7b-q4_0-fused 60 - decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5
bench 7b-q4_0-split 50 $S decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5
bench 7b-q4_0-fused 50 - decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5
bench 7b-q4_0-split 50 $S decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5
bench 1b-q4_0-fused 25 - decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5
bench 1b-q4_0-split 25 $S decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5
bench 7b-q8_0-fused 60 - decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench 7b-q8_0-split 60 $S decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench 7b-q4_0-fused 50 - decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5 --profile
cp .ab/g15.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; tail -n 3 $R/t/decode.txt $R/t/engine-dot.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
