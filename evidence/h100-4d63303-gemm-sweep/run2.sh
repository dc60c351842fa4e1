#!/bin/bash
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
[ -x /tmp/b/tools/motifcl-bench ] || { cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1; }
echo "built in $(( $(date +%s) - T0 )) s; B $C" >> $R/s.txt
i=0
bench() { i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  local left=$(( LIMIT - 10 - ($(date +%s) - T0) )); local t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$i $1 skipped" >> $R/s.txt; rmdir $d; return; }
  echo "$3 MOTIFCL_PIPELINE_CACHE=/tmp/pc /tmp/b/tools/motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s" >> $R/s.txt; grep -h "TFLOP" $d/out.txt | grep -v peak >> $R/s.txt; }
TL=128x128x8/8x16,128x128x8/16x8,128x128x8/8x8,128x64x8/8x8,128x64x16/8x16
bench nn 200 MOTIFCL_LOG=warning gemm m=4096 n=512 k=14336 sweep=1 tiles=$TL
bench nt 200 MOTIFCL_LOG=warning gemm m=4096 n=512 k=14336 tb=1 sweep=1 tiles=$TL
bench cube 120 MOTIFCL_LOG=warning gemm m=4096 n=4096 k=4096 sweep=1 tiles=$TL
cp .ab/g2.sh $R/run.sh; cat $R/s.txt; echo "done at $(( $(date +%s) - T0 )) s"
