#!/bin/bash
# At the commit in .ab/commit.txt: the decode and prefill benchmarks, then the whole suite
# strict under synchronization validation, both profiles, with the time left.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
bench() { # folder, environment, arguments
  mkdir -p $R/$1; echo "$2 motifcl-bench ${@:3} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $2 timeout 100 /tmp/b/tools/motifcl-bench "${@:3}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
bench decode-7b-q4_0 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 seqs=8 repeat=5
bench decode-7b-q4_0-f16 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5 kv=f16
bench decode-7b-q8_0 X=1 decode shape=7b type=q8_0 prompt=512 tokens=64 repeat=5
bench decode-1b-q4_0 X=1 decode shape=1b type=q4_0 prompt=512 tokens=64 seqs=8 repeat=5
bench decode-1b-q8_0 X=1 decode shape=1b type=q8_0 prompt=512 tokens=64 repeat=5
cd /tmp/b
left=$(( 585 - ($(date +%s) - T0) ))
echo "ctest with ${left} s" >> $R/s.txt
MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ctest -j16 --output-on-failure > $R/t/ctest.log 2>&1
echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
tail -12 $R/t/ctest.log >> $R/s.txt
grep -h "Validation Error" $R/t/ctest.log | head -5 >> $R/s.txt
cd - > /dev/null
cp .ab/final3.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
for d in $R/decode-*; do grep -E "one sequence|batch \(all|prefill|of the stream|dispatches per token|CPU time|back to back|RX 580|GPU, all" $d/out.txt; done
cd $OUT && tar czf r.tgz r && rm -rf r
