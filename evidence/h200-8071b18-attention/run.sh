#!/bin/bash
# At the commit in .ab/commit.txt: the decode and prefill benchmarks (each token sampled on
# the device), one after another with what each printed.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
bench() { # folder, seconds, environment, arguments
  mkdir -p $R/$1; echo "$3 motifcl-bench ${@:4} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $3 timeout $2 /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
bench decode-7b-q4_0 100 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 seqs=8 repeat=5
bench decode-7b-q8_0 90 X=1 decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench decode-1b-q4_0 60 X=1 decode shape=1b type=q4_0 prompt=512 tokens=64 seqs=8 repeat=5
bench decode-1b-q8_0 60 X=1 decode shape=1b type=q8_0 prompt=512 tokens=64 repeat=5
bench decode-7b-q4_0-f16 90 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5 kv=f16
left=$(( 570 - ($(date +%s) - T0) ))
[ $left -gt 60 ] && bench decode-7b-q4_K $left X=1 decode shape=7b type=q4_K prompt=512 tokens=64 repeat=5
cp .ab/final4.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
for d in $R/decode-*; do grep -E "one sequence|batch \(all|prefill|of the stream|dispatches per|CPU time|back to back|sampled on|GPU, all|attention" $d/out.txt; done
cd $OUT && tar czf r.tgz r && rm -rf r
