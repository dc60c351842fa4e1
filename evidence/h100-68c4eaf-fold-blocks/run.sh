#!/bin/bash
# The decode step with its norms folded into the products (MOTIFCL_ENGINE_NORM_FOLD=1) against
# the same tree without (0), alternated; the folded kernels' statistics; test_ops_decode and test_engine (dot, folded) strict under sync validation; on
# an H200 also the counter-state step of this tree (three runs).
T0=$(date +%s); LIMIT=${1:-420}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
( cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || tail -n 30 /tmp/build.log ) & wait
echo "built at $(( $(date +%s) - T0 )) s; head $C" > $R/s.txt
G=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); echo "$G" >> $R/s.txt
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout 100 ./tests/test_ops_decode > $R/t/decode.txt 2>&1; echo "test_ops_decode strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
( cd /tmp/b && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_QUANT_PATH=dot MOTIFCL_ENGINE_NORM_FOLD=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/fold timeout 150 ./tests/test_engine > $R/t/engine-fold.txt 2>&1; echo "test_engine (dot, folded) strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) &
wait
i=0
bench() { # tree h|b, folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  local e=$4; [ "$e" = - ] && e=; local B=/tmp/b; [ $1 = b ] && B=/tmp/bb
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc$1 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc$1 timeout $t $B/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $2 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|each step waited for, no sampling\|of the stream read  \|dispatches per token\|tokens/s' $d/out.txt | grep -v modeled | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
F0=MOTIFCL_ENGINE_NORM_FOLD=0; F1=MOTIFCL_ENGINE_NORM_FOLD=1
D7="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5"
D1="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5"
for r in 1 2; do
  bench h 7b-fold0 60 $F0 $D7; bench h 7b-fold1 60 $F1 $D7
done
for r in 1 2; do
  bench h 1b-fold0 30 $F0 $D1; bench h 1b-fold1 30 $F1 $D1
done
bench h 7b-fold1-stats 60 "$F1 MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info" $D7
bench h 7b-q8-fold0 60 $F0 decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench h 7b-q8-fold1 60 $F1 decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench h 7b-fold1-prof 60 $F1 $D7 --profile
bench h 7b-fold0-prof 60 $F0 $D7 --profile
case "$G" in *H200*) for r in 1 2 3; do bench h train-counter 40 - train counter=11; done;; esac
cp .ab/d10.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
grep -h "gemv_q_dot\|norm_q8" $R/*stats*/out.txt | grep -i "regist" | sort -u | cut -c1-220 | head -12 > $R/stats.txt
cat $R/s.txt $R/stats.txt; tail -n 3 $R/t/decode.txt $R/t/engine-fold.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t
