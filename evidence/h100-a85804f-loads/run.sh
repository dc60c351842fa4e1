#!/bin/bash
# The decode attention's loads as vectors into registers: this tree (h, .ab/commit.txt)
# against a clean archive of ab7c267 (p, .ab/p.txt), alternated, 7B and 1B q4_0 after 512
# prompt tokens (the step profiled per op by the bench); h's slices at 8 and 16
# (MOTIFCL_ATTENTION_SPLITS); the f16 cache; test_ops_decode and test_engine strict under
# sync validation.
T0=$(date +%s); LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
mkdir -p /tmp/srcp && tar xzf .ab/p.tar.gz -C /tmp/srcp
( cmake -S /tmp/srcp -B /tmp/bp -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat .ab/p.txt) > /dev/null 2>&1 && cmake --build /tmp/bp --target motifcl-bench > /dev/null 2>&1 ) &
( cmake -S . -B /tmp/bh -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/bh > /tmp/build.log 2>&1 || tail -n 30 /tmp/build.log ) & wait
echo "built at $(( $(date +%s) - T0 )) s; h $C p $(cat .ab/p.txt)" > $R/s.txt
G=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); echo "$G" >> $R/s.txt
tst() { ( cd /tmp/bh && env MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/$1 ${@:3} timeout 150 ./tests/$2 > $R/t/$1.txt 2>&1; echo "$1: ${@:3} $2 strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) ; }
tst decode test_ops_decode & tst engine test_engine & tst engine-dot test_engine MOTIFCL_QUANT_PATH=dot & wait
i=0
bench() { # tree h|p, folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  local e=$4; [ "$e" = - ] && e=
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc$1 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc$1 timeout $t /tmp/b$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $2 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|each step waited for, no sampling\|of the stream read  \|dispatches per token\|GPU, attention  ' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
D7="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3"
D1="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=3"
for r in 1 2; do bench h 7b-h 30 - $D7; bench p 7b-p 30 - $D7; done
for r in 1 2; do bench h 1b-h 25 - $D1; bench p 1b-p 25 - $D1; done
for s in 8 16; do bench h 7b-h-s$s 30 MOTIFCL_ATTENTION_SPLITS=$s $D7; bench h 1b-h-s$s 25 MOTIFCL_ATTENTION_SPLITS=$s $D1; done
bench h 7b-h-f16 30 - $D7 kv=f16; bench p 7b-p-f16 30 - $D7 kv=f16
cp .ab/d15.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt; cp .ab/p.txt $R/p.txt
cat $R/s.txt; tail -qn 1 $R/t/*.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t
