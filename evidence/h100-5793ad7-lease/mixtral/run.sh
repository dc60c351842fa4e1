#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the Mixtral-shaped decode (26 GB of q4_0
# random weights) fully resident, then with its experts in host memory under a 7 GiB budget.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
bench() { # folder, seconds, environment, arguments
  left=$(( 580 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  mkdir -p $R/$1; echo "$3 motifcl-bench ${@:4} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench decode-mixtral 200 $P decode shape=mixtral type=q4_0 prompt=128 tokens=32 repeat=2
bench decode-mixtral-7g 260 $P decode shape=mixtral type=q4_0 prompt=128 tokens=32 repeat=2 expert_mib=7168
cp .ab/c.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
for d in $R/decode-*; do grep -E -i "load|one sequence \(|prefill of|of the stream|dispatches per|hit|moved|host|expert" $d/out.txt | head -30; done
cd $OUT && tar czf r.tgz r && rm -rf r
