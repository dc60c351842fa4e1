#!/bin/bash
# The decode step's folded norm with the first round's weights loaded before it: this tree (h,
# .ab/commit.txt) with MOTIFCL_ENGINE_NORM_FOLD 0 and 1 (7B) or unset (1B), against a clean
# archive of 76214c1 (p, .ab/p.txt: the same without the early loads), alternated; h's folded
# kernels' statistics; test_engine (dot: folded, default, and norms unfolded with the cache
# warms) strict under sync validation; on an H200 the counter-state step (three runs).
T0=$(date +%s); LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
mkdir -p /tmp/srcp && tar xzf .ab/p.tar.gz -C /tmp/srcp
( cmake -S /tmp/srcp -B /tmp/bp -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat .ab/p.txt) > /dev/null 2>&1 && cmake --build /tmp/bp --target motifcl-bench > /dev/null 2>&1 ) &
( cmake -S . -B /tmp/bh -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/bh > /tmp/build.log 2>&1 || tail -n 30 /tmp/build.log ) & wait
echo "built at $(( $(date +%s) - T0 )) s; h $C p $(cat .ab/p.txt)" > $R/s.txt
G=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); echo "$G" >> $R/s.txt
tst() { ( cd /tmp/bh && env MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/$1 ${@:3} timeout 120 ./tests/$2 > $R/t/$1.txt 2>&1; echo "$1: ${@:3} $2 strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) ; }
tst engine-fold test_engine MOTIFCL_QUANT_PATH=dot MOTIFCL_ENGINE_NORM_FOLD=1 & tst engine-dot test_engine MOTIFCL_QUANT_PATH=dot &
tst engine-tuning test_engine MOTIFCL_QUANT_PATH=dot MOTIFCL_ENGINE_WARM=7 MOTIFCL_ENGINE_NORM_FOLD=0 & wait
i=0
bench() { # tree h|v, folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$3; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $2 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  local e=$4; [ "$e" = - ] && e=
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc$1 motifcl-bench ${@:5} --witness-dir $d (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc$1 timeout $t /tmp/b$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $2 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|each step waited for, no sampling\|of the stream read  \|dispatches per token\|tokens/s' $d/out.txt | grep -v modeled | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
F0=MOTIFCL_ENGINE_NORM_FOLD=0; F1=MOTIFCL_ENGINE_NORM_FOLD=1
D7="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5"
D1="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5"
for r in 1 2; do
  bench h 7b-h-fold0 40 $F0 $D7; bench h 7b-h-fold1 40 $F1 $D7; bench p 7b-p-fold1 40 $F1 $D7
done
for r in 1 2; do
  bench h 1b-h-default 30 - $D1; bench p 1b-p-default 30 - $D1
done
bench h 7b-h-fold1-stats 40 "$F1 MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info" $D7
case "$G" in *H200*) for r in 1 2 3; do bench h train-counter 40 - train counter=11; done;; esac
cp .ab/d13.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt; cp .ab/p.txt $R/p.txt
for f in $R/*stats*/out.txt; do echo "== $f"; grep -h "gemv_q_dot\|norm_q8" $f | grep -i "regist" | sort -u | cut -c1-200 | head -6; done > $R/stats.txt
cat $R/s.txt $R/stats.txt; tail -qn 1 $R/t/*.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t
