#!/bin/bash
# Two builds in one call: A at .ab/base/commit.txt (its SPIR-V, .ab/base/), B at
# .ab/commit.txt (the decode attention's merge loading its last slices as one masked batch).
# Alternated: B against A (7B and 1B q4_0 decode), the cache warms (A, MOTIFCL_ENGINE_WARM=7)
# a second time, the attention's workgroup of 128 (A); test_ops_decode and test_engine of B
# strict under sync validation first.
T0=$(date +%s)
LIMIT=${1:-380}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; CA=$(cat .ab/base/commit.txt); CB=$(cat .ab/commit.txt)
rm -rf /tmp/srcA && mkdir /tmp/srcA && for f in *; do [ "$f" = build ] || cp -r "$f" /tmp/srcA/; done
cp .ab/base/*.spv .ab/base/manifest.json /tmp/srcA/spirv/
for x in "A /tmp/srcA $CA" "B . $CB"; do set -- $x
  cmake -S $2 -B /tmp/b9$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg$1.log 2>&1 && cmake --build /tmp/b9$1 --target motifcl-bench test_ops_decode test_engine > /tmp/build$1.log 2>&1 || { tail -n 30 /tmp/cfg$1.log /tmp/build$1.log; exit 1; }
done
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
( cd /tmp/b9B && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout 120 ./tests/test_ops_decode > $R/t/decode.txt 2>&1; echo "test_ops_decode (B) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
( cd /tmp/b9B && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_QUANT_PATH=dot MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/dot timeout 150 ./tests/test_engine > $R/t/engine-dot.txt 2>&1; echo "test_engine (B, dot) exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
wait
i=0
bench() { # build, folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $2 skipped" >> $R/s.txt; rmdir $d; return; }
  local e=$4; [ "$e" = - ] && e=
  echo "build $1: $e MOTIFCL_PIPELINE_CACHE=/tmp/pc9$1 motifcl-bench ${@:5} --witness-dir $d" > $d/cmd.txt
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc9$1 timeout $t /tmp/b9$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $2 exit $?: $(grep -h 'one sequence (the median run)\|replayed back to back\|dispatches per token\|GPU, attention  ' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
D7="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5"
D1="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5"
for rep in 1 2; do
  bench A 7b-base 40 - $D7
  bench B 7b-merge8 40 - $D7
  bench A 1b-base 25 - $D1
  bench B 1b-merge8 25 - $D1
  bench A 1b-warm7 25 MOTIFCL_ENGINE_WARM=7 $D1
  bench A 7b-warm7 30 MOTIFCL_ENGINE_WARM=7 $D7
done
bench A 1b-wg128 25 MOTIFCL_ATTENTION_WG=128 $D1
bench A 7b-wg128 30 MOTIFCL_ATTENTION_WG=128 $D7
cp .ab/h9.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt; cp .ab/base/commit.txt $R/commit-base.txt
cat $R/s.txt; grep -h "FAILED\|Validation Error" $R/t/*.txt $R/t/dot/*.txt 2>/dev/null | head -5
cd $OUT && tar czf r.tgz r && rm -rf r
