#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the decode suites strict under sync validation,
# the decode figures with the default attention workgroup, then test_faults alone.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
( cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout 150 ctest -j12 -R "test_ops_decode|test_ops_attention|test_engine|test_model_moe|test_model_experts|test_backward_attention" --output-on-failure > $R/t/ctest.log 2>&1; echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt )
bench() { # folder, seconds, environment, arguments
  left=$(( 380 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  mkdir -p $R/$1; echo "$3 motifcl-bench ${@:4} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench decode-7b-q4_0 60 $P decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 --profile
bench decode-mixtral 120 $P decode shape=mixtral type=q4_0 prompt=128 tokens=32 repeat=2
left=$(( 395 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  ( cd /tmp/b && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/faults timeout $left ./tests/test_faults > $R/faults.txt 2>&1; echo "test_faults alone exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt )
fi
cp .ab/d.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; tail -6 $R/t/ctest.log
for d in $R/decode-*; do grep -E "one sequence \(|of the stream|attention  " $d/out.txt; done
grep -E "decode|FAILED|OK \]" $R/faults.txt | tail -12
mkdir -p $R/faults; cd $OUT && tar czf r.tgz r && rm -rf r
