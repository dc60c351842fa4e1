#!/bin/bash
# At .ab/commit.txt (clean) and at .ab/old/commit.txt (the same tree with .ab/old's files: its
# parent): the decode attention's K tile loaded into registers against the loop, q, k and v as
# one dispatch against three, alternated; tests strict under sync validation first.
T0=$(date +%s)
LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt); C0=$(cat .ab/old/commit.txt)
rm -rf /tmp/s0 && mkdir /tmp/s0 && cp -r . /tmp/s0/ && cp -r .ab/old/spirv .ab/old/shaders /tmp/s0/
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench test_ops_decode test_engine > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
cmake -S /tmp/s0 -B /tmp/b0 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C0 > /tmp/cfg0.log 2>&1 && cmake --build /tmp/b0 --target motifcl-bench > /tmp/build0.log 2>&1 || { tail -n 30 /tmp/cfg0.log /tmp/build0.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout 120 ./tests/test_ops_decode > $R/t/decode.txt 2>&1; echo "test_ops_decode exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_QUANT_PATH=dot MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/dot timeout 150 ./tests/test_engine > $R/t/engine-dot.txt 2>&1; echo "test_engine (dot) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
wait
i=0
bench() { # folder, build, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped" >> $R/s.txt; rmdir $d; return; }
  local e=$4; [ "$e" = - ] && e=
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc$2 motifcl-bench ${@:5} --witness-dir $d (build $2)" > $d/cmd.txt
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc$2 timeout $t /tmp/$2/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $?: $(grep -h 'one sequence (the median run)\|replayed back to back\|GPU, q, k, v  \|GPU, attention  \|dispatches per token\|wall time per 100\|replay:' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
S=MOTIFCL_ENGINE_SPLIT_QKV=1
D7="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5"
D1="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5"
for rep in 1 2; do
  bench 7b-new b 60 - $D7
  bench 7b-old b0 60 $S $D7
  bench 7b-newsplit b 50 $S $D7
  bench 1b-new b 40 - $D1
  bench 1b-old b0 40 $S $D1
  bench 1b-newsplit b 40 $S $D1
done
bench replay b 30 - replay
D="decode shape=1b type=q4_0 prompt=512 tokens=32 repeat=3"
for s in 4 8; do bench 1b-s$s b 30 MOTIFCL_ATTENTION_SPLITS=$s $D; bench 1b-s$s-old b0 30 MOTIFCL_ATTENTION_SPLITS=$s $D; done
bench 7b-prof b 60 - decode shape=7b type=q4_0 prompt=512 tokens=32 repeat=3 --profile
cp .ab/h4.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt; cp .ab/old/commit.txt $R/commit-old.txt
cat $R/s.txt; grep -h "FAILED\|Validation Error" $R/t/*.txt | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
