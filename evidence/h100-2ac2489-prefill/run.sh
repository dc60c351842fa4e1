#!/bin/bash
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b8 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > $R/cfg.txt 2>&1 && cmake --build /tmp/b8 --target motifcl-bench test_ops_attention test_engine > $R/build.txt 2>&1
B=/tmp/b8/tools/motifcl-bench
export MOTIFCL_REQUIRE_VULKAN_COMPUTE=1
mkdir -p $R/t
for t in test_ops_attention test_engine; do MOTIFCL_WITNESS_DIR=$R/t timeout 90 /tmp/b8/tests/$t > $R/t/$t.txt 2>&1; echo "$t exit $?" >> $R/s.txt; done
i=0
for sh in 7b 1b; do for a in 1 0 1 0; do i=$((i+1)); d=$R/$i-$sh-f32_$a; mkdir -p $d
  echo "MOTIFCL_ATTENTION_F32=$a MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench prefill shape=$sh type=q4_0 prompt=512 repeat=5 --witness-dir $d" > $d/cmd.txt
  MOTIFCL_ATTENTION_F32=$a MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 $B prefill shape=$sh type=q4_0 prompt=512 repeat=5 --witness-dir $d > $d/out.txt 2>&1
  echo "$i $sh MOTIFCL_ATTENTION_F32=$a exit $?: $(grep -h 'prefill of' $d/out.txt)" >> $R/s.txt; done; done
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1; cp .ab/d8.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "at $(( $(date +%s) - T0 )) s"; cat $R/s.txt; grep -h "matrix\|FAILED\|PASSED" $R/t/*.txt | head -12
cd $OUT && tar czf r.tgz r && rm -rf r
