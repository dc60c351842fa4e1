#!/bin/bash
# Where the decode attention's time goes: this tree (.ab/commit.txt) with MCLX_ATT_PROBE
# skipping parts of the kernel (1 the whole, 2 the keys, 4 the merge, 16 the count and merge,
# 8 K's loads, 32 V's loads), the step profiled (the bench's per-op GPU times), 7B and 1B q4_0
# after 512 prompt tokens, 1B also after 64; the replay bench's dependent-dispatch cost.
T0=$(date +%s); LIMIT=${1:-300}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/bh -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/bh --target motifcl-bench > /tmp/build.log 2>&1 || tail -n 30 /tmp/build.log
echo "built at $(( $(date +%s) - T0 )) s; h $C" > $R/s.txt
G=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); echo "$G" >> $R/s.txt
i=0
bench() { # folder, seconds, env (or -), arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 15 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; rmdir $d; return; }
  local e=$3; [ "$e" = - ] && e=
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pch motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pch timeout $t /tmp/bh/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|dispatches per token\|GPU, attention  ' $d/out.txt | awk '{print $(NF-2)}' | tr '\n' ' ')" >> $R/s.txt
}
D7="decode shape=7b type=q4_0 prompt=512 tokens=16 repeat=1"
D1="decode shape=1b type=q4_0 prompt=512 tokens=16 repeat=1"
D1s="decode shape=1b type=q4_0 prompt=64 tokens=16 repeat=1"
for p in 0 1 2 4 16 8 32 40; do bench 7b-p$p 30 MCLX_ATT_PROBE=$p $D7; done
for p in 0 1 2 4 16 8 32 40; do bench 1b-p$p 25 MCLX_ATT_PROBE=$p $D1; done
bench 1b64-p0 25 MCLX_ATT_PROBE=0 $D1s; bench 1b64-p1 25 MCLX_ATT_PROBE=1 $D1s
bench replay 40 - replay
cp .ab/d14.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "" $R/*replay*/out.txt | head -20
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]*
