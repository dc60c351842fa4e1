#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the inference engine's figures (docs/inference.md,
# the issues' tables): decode of the 7B shape in q4_0, q8_0 and q4_K, the 1B in q4_0, q8_0 and
# f32 (after 512 prompt tokens, 64 tokens, median of repeats), 8 sequences of the 7B q4_0 as one
# batch, the 512-token prefill of both shapes in q4_0 and q8_0, the Mixtral-8x7B shape in q4_0
# with every expert resident and under a 7 GiB expert budget, and the replay bench's cost of a
# dependent dispatch. One pipeline cache for all.
T0=$(date +%s); LIMIT=${1:-540}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0
bench() { # folder, seconds, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:3} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'decode, one sequence (the median\|each step waited for, no sampling\|replayed back to back\|of the stream read  \|dispatches per token\|prefill of\|in all' $d/out.txt | grep -v modeled | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
D="prompt=512 tokens=64"
bench 7b-q4_0 40 decode shape=7b type=q4_0 $D repeat=5
bench 7b-q8_0 45 decode shape=7b type=q8_0 $D repeat=5
bench 7b-q4_K 50 decode shape=7b type=q4_K $D repeat=3
bench 1b-q4_0 30 decode shape=1b type=q4_0 $D repeat=5
bench 1b-q8_0 30 decode shape=1b type=q8_0 $D repeat=5
bench 1b-f32 40 decode shape=1b type=f32 $D repeat=3
bench 7b-q4_0-seqs8 60 decode shape=7b type=q4_0 $D repeat=3 seqs=8
bench 7b-prefill-q4_0 30 prefill shape=7b type=q4_0 prompt=512 repeat=5
bench 7b-prefill-q8_0 30 prefill shape=7b type=q8_0 prompt=512 repeat=5
bench 1b-prefill-q4_0 25 prefill shape=1b type=q4_0 prompt=512 repeat=5
bench 1b-prefill-q8_0 25 prefill shape=1b type=q8_0 prompt=512 repeat=5
bench replay 20 replay
bench mixtral 80 decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=3
bench mixtral-7g 120 decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=1 expert_mib=7168
cp .ab/d17.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "per 100\|per dispatch" $R/*-replay/out.txt
grep -h "hit rate\|moved\|host memory\|staging" $R/*-mixtral-7g/out.txt | head -8
echo "done at $(( $(date +%s) - T0 )) s"
