#!/bin/bash
# At .ab/commit.txt (clean): the norms folded into the products (MOTIFCL_ENGINE_FOLD_NORM=1),
# q, k and v as one dispatch (second form), the subgroup loop of the decode attention
# (MOTIFCL_ATTENTION_SUBGROUP=1), the cache warms (MOTIFCL_ENGINE_WARM), against the default,
# alternated; test_ops_decode and test_engine (integer-dot path, every tuning path on) strict
# under sync validation first.
T0=$(date +%s)
LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b7 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b7 --target motifcl-bench test_ops_decode test_engine > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
( cd /tmp/b7 && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout 120 ./tests/test_ops_decode > $R/t/decode.txt 2>&1; echo "test_ops_decode exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
( cd /tmp/b7 && MOTIFCL_ENGINE_FOLD_NORM=1 MOTIFCL_ENGINE_FUSE_QKV=1 MOTIFCL_ENGINE_WARM=7 MOTIFCL_ATTENTION_SUBGROUP=1 MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_QUANT_PATH=dot MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/dot timeout 150 ./tests/test_engine > $R/t/engine-dot.txt 2>&1; echo "test_engine (dot, all tuning) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
wait
i=0
bench() { # folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped" >> $R/s.txt; rmdir $d; return; }
  local e=$3; [ "$e" = - ] && e=
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc7 motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc7 timeout $t /tmp/b7/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $?: $(grep -h 'one sequence (the median run)\|replayed back to back\|dispatches per token\|GPU, attention  ' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
S=MOTIFCL_ENGINE_FUSE_QKV=1
A=MOTIFCL_ATTENTION_SUBGROUP=1
D7="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5"
D1="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5"
F=MOTIFCL_ENGINE_FOLD_NORM=1
for rep in 1 2; do
  bench 7b-base 40 - $D7
  bench 7b-fold 30 $F $D7
  bench 7b-fold-qkv 30 "$F $S" $D7
  bench 7b-sg 30 $A $D7
  bench 1b-base 25 - $D1
  bench 1b-fold 25 $F $D1
  bench 1b-fold-qkv 25 "$F $S" $D1
  bench 1b-sg 25 $A $D1
done
bench 7b-fuseqkv 30 $S $D7
bench 1b-fuseqkv 25 $S $D1
bench 7b-warm7 30 MOTIFCL_ENGINE_WARM=7 $D7
bench 1b-warm7 25 MOTIFCL_ENGINE_WARM=7 $D1
bench 7b-sg-s8 30 "$A MOTIFCL_ATTENTION_SPLITS=8" $D7
bench 7b-warm1 30 MOTIFCL_ENGINE_WARM=1 $D7
cp .ab/h7.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "FAILED\|Validation Error" $R/t/*.txt $R/t/dot/*.txt 2>/dev/null | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
