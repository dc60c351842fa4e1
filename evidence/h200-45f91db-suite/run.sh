#!/bin/bash
# The session's prefill and decode (7B and 1B shapes, random weights), then the whole suite
# strict under synchronization validation, both profiles (the suite's .polaris tests), at the
# commit in .ab/commit.txt.
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
  env $2 timeout 120 /tmp/b/tools/motifcl-bench "${@:3}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
  grep -E "prefill|decode|stream read" $R/$1/out.txt
}
bench decode-7b-q4_0 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 seqs=8
bench decode-1b-q4_0 X=1 decode shape=1b type=q4_0 prompt=512 tokens=64 seqs=8
bench prefill-7b-q4_0-float MOTIFCL_QUANT_PATH=float decode shape=7b type=q4_0 prompt=512 tokens=8
cd /tmp/b
left=$(( 585 - ($(date +%s) - T0) ))
echo "ctest with ${left} s" >> $R/s.txt
MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ctest -j12 --output-on-failure > $R/t/ctest.log 2>&1
echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
tail -15 $R/t/ctest.log >> $R/s.txt
grep -h "Validation Error" $R/t/ctest.log | head -5 >> $R/s.txt
cd - > /dev/null
cp .ab/final2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
