#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the counter-state training step (profiled,
# then not), ordinary and reversible blocks at depths 4, 16 and 64 (dim 288: persistent and
# peak memory), the counter-state step with reversible blocks.
T0=$(date +%s)
LIMIT=${1:-540}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 10 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$3 motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'tokens/s\|peak' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
bench counter-prof 70 "$P" train counter=11 --profile
bench counter 50 "$P" train counter=11
bench rev4 50 "$P" train layers=4 reversible=0
bench rev16 60 "$P" train layers=16 reversible=0
bench rev64 90 "$P" train layers=64 reversible=0
bench ord64 90 "$P" train layers=64
bench ord4 40 "$P" train layers=4
bench counter-rev 60 "$P" train counter=11 reversible=0
cp .ab/u.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
grep -h "tokens/s\|MiB" $R/*/out.txt | grep -v modeled
grep -A14 "^profile of\|      ms  share" $R/1-*/out.txt | head -30
cd $OUT && tar czf r.tgz r && rm -rf r
