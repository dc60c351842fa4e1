#!/bin/bash
# 8 sequences of the 7B q4_0 as one batch with the decode attention's slices at 4 (the
# default: 256 workgroups), 8, 16 and 32 (MOTIFCL_ATTENTION_SPLITS), alternated, at the commit
# in .ab/commit.txt.
T0=$(date +%s); LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0
bench() { # folder, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  echo "$3 MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'decode, one sequence (the median\|in all\|one batch' $d/out.txt | grep -v modeled | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
D="decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 seqs=8"
for r in 1 2; do for s in 0 8 16 32; do
  e=MOTIFCL_ATTENTION_SPLITS=$s; [ $s = 0 ] && e=MOTIFCL_LOG=warn
  bench seqs8-s$s 30 $e $D
done; done
cp .ab/d19.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
