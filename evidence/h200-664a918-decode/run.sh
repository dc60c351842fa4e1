#!/bin/bash
# The session's prefill and decode (7B and 1B shapes, q4_0, random weights) at the commit in
# .ab/commit.txt.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
bench() { # folder, environment, arguments
  mkdir -p $R/$1; echo "$2 motifcl-bench ${@:3} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $2 timeout 100 /tmp/b/tools/motifcl-bench "${@:3}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
  grep -E "prefill|decode" $R/$1/out.txt
}
bench decode-7b-q4_0 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 seqs=8
bench decode-1b-q4_0 X=1 decode shape=1b type=q4_0 prompt=512 tokens=64 seqs=8
cp .ab/decode3.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
