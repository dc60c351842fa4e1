#!/bin/bash
# The decode step's folded norm on the 1B shape's other cases: this tree (.ab/commit.txt,
# folded by default up to dim 2048) unset and with MOTIFCL_ENGINE_NORM_FOLD=0, alternated:
# q8_0, q4_K, 8 sequences of q4_0; on an H200 the counter-state step (three runs).
T0=$(date +%s); LIMIT=${1:-260}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t; C=$(cat .ab/commit.txt)
( cmake -S . -B /tmp/bh -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/bh > /tmp/build.log 2>&1 || tail -n 30 /tmp/build.log ) & wait
echo "built at $(( $(date +%s) - T0 )) s; h $C" > $R/s.txt
G=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); echo "$G" >> $R/s.txt
tst() { ( cd /tmp/bh && env MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t/$1 ${@:3} timeout 120 ./tests/$2 > $R/t/$1.txt 2>&1; echo "$1: ${@:3} $2 strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt ) ; }
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
Q8="decode shape=1b type=q8_0 prompt=512 tokens=64 repeat=5"
QK="decode shape=1b type=q4_K prompt=512 tokens=64 repeat=5"
B8="decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=5 seqs=8"
for r in 1 2; do
  bench h 1b-q8-fold0 30 $F0 $Q8; bench h 1b-q8-default 30 - $Q8
  bench h 1b-q4k-fold0 30 $F0 $QK; bench h 1b-q4k-default 30 - $QK
  bench h 1b-s8-fold0 40 $F0 $B8; bench h 1b-s8-default 40 - $B8
done
case "$G" in *H200*) for r in 1 2 3; do bench h train-counter 40 - train counter=11; done;; esac
cp .ab/d12.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t
