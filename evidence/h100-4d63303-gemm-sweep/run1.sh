#!/bin/bash
# At .ab/commit.txt: motifcl-bench gemm, then its sweep over 128-accumulator invocation tiles.
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s; B $C" >> $R/s.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >> $R/s.txt 2>&1
i=0
bench() { # name, seconds, env, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  local left=$(( LIMIT - 10 - ($(date +%s) - T0) )); local t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped" >> $R/s.txt; rmdir $d; return; }
  echo "$3 MOTIFCL_PIPELINE_CACHE=/tmp/pc /tmp/b/tools/motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s" >> $R/s.txt; grep -h "TFLOP" $d/out.txt >> $R/s.txt
}
bench gemm 60 MOTIFCL_LOG=warning gemm
bench s1 200 MOTIFCL_PIPELINE_STATS=1 gemm sweep=1 tiles=128x128x16/8x8,128x128x16/8x16,128x128x16/16x8,128x128x8/8x16
bench s2 200 MOTIFCL_PIPELINE_STATS=1 gemm sweep=1 tiles=128x128x32/8x16,128x256x16/8x16,256x128x16/16x8
bench gemm 60 MOTIFCL_LOG=warning gemm
cp .ab/g1.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf runs.tar.gz r
