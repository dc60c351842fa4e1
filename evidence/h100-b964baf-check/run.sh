#!/bin/bash
# At .ab/commit.txt: test_model strict under sync validation; test_soak three ways at once
# (sync validation as the suite runs it, the plain layer, no layer) to see where the resident
# set grows; then the GEMM at the benchmark's shapes and the training step (head's rule).
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
for v in test_model; do mkdir -p $R/$v; echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync tests/$v" > $R/$v/cmd.txt
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/$v timeout 60 /tmp/b/tests/$v > $R/$v/out.txt 2>&1; echo "$v exit $?" >> $R/s.txt; done
soak() { mkdir -p $R/soak-$1; echo "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=$2 tests/test_soak" > $R/soak-$1/cmd.txt
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=$2 MOTIFCL_WITNESS_DIR=$R/soak-$1 timeout 150 /tmp/b/tests/test_soak > $R/soak-$1/out.txt 2>&1; echo "soak $1 exit $?" >> $R/s.txt; }
soak sync sync & soak layer 1 & soak none 0 & wait
mkdir -p $R/gemm; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench gemm" > $R/gemm/cmd.txt
MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 /tmp/b/tools/motifcl-bench gemm --witness-dir $R/gemm > $R/gemm/out.txt 2>&1; echo "gemm exit $?" >> $R/s.txt
mkdir -p $R/train; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench train" > $R/train/cmd.txt
MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 50 /tmp/b/tools/motifcl-bench train --witness-dir $R/train > $R/train/out.txt 2>&1; echo "train exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp .ab/r2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "OK\|FAIL" $R/test_model/out.txt; grep -h "cycles:" $R/soak-*/out.txt; grep -h "rate\|tokens/s\|peak tensor" $R/gemm/out.txt $R/train/out.txt
cd $OUT && tar czf r.tgz r && rm -rf r
