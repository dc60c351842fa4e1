#!/bin/bash
# Model-load figures (1 GB and 4 GB q4_0 GGUF files, cold and warm, against a plain sequential
# read) and the session's prefill and decode (7B and 1B shapes, random weights), at the
# commit in .ab/commit.txt.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
bench() { # folder, arguments
  mkdir -p $R/$1; echo "motifcl-bench ${@:2} --witness-dir $R/$1" > $R/$1/cmd.txt
  timeout 200 /tmp/b/tools/motifcl-bench "${@:2}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
  grep -E "load (cold|warm)|prefill|decode|stream read" $R/$1/out.txt
}
bench load-1000 load size_mb=1000
bench load-4000 load size_mb=4000
bench decode-7b-q4_0 decode shape=7b type=q4_0 prompt=512 tokens=64 seqs=8
bench decode-1b-q4_0 decode shape=1b type=q4_0 prompt=512 tokens=64 seqs=8
bench decode-7b-q8_0 decode shape=7b type=q8_0 prompt=512 tokens=64
cp .ab/perf.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
