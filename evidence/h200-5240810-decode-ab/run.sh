#!/bin/bash
# As run (NVIDIA H200, driver 580.159.04), .ab/commit.txt = 52408103efc3: "head" is 5240810, and
# its folders are named so here (5-, 6-, 12-). The 18554b0, b1ee40d, 9bed2a6 and 7cd2739 trees
# were clean archives (git archive) of those commits. The gemm and training parts did not run
# (their time had gone) or ran on one side only, and are not kept.
# The H200 decode-step regression since 18554b0 (docs/inference.md, "Not yet"): the 7B q4_0
# decode (no profile) built from 18554b0, b1ee40d (before 9bed2a6), 9bed2a6 and the commit in
# .ab/commit.txt, alternated twice, and the last with MOTIFCL_DISABLE=cooperative-matrix (no
# memory model) and with MOTIFCL_ATTENTION_WG=64. Trees: .ab/tree-<commit>.tar (git archive).
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
build() { # name, source dir, commit
  cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$3 > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target motifcl-bench > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }
}
for t in 18554b0 b1ee40d 9bed2a6 7cd2739; do mkdir -p /tmp/src-$t && tar xzf .ab/tree-$t.tar.gz -C /tmp/src-$t; build $t /tmp/src-$t $t & done
( build head . $C && cmake --build /tmp/b-head --target test_ops_decode test_engine > /tmp/build-tests.log 2>&1 ) & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
i=0
one() { # tree, environment
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( 330 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { echo "skip $1 $2" >> $R/s.txt; return; }
  echo "$2 motifcl-bench decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 (tree $1)" > $d/cmd.txt
  env $2 timeout 60 /tmp/b-$1/tools/motifcl-bench decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 $2: $(grep -h 'replayed back to back' $d/out.txt | awk '{print $(NF-2)}') ms at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
for t in 18554b0 b1ee40d 9bed2a6 7cd2739 head; do one $t $P; done
one head "$P MOTIFCL_DISABLE=cooperative-matrix"
# The new kernels strict on this driver.
i=$((i+1)); d=$R/$i-tests; mkdir -p $d
( cd /tmp/b-head && MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$d timeout 120 ctest -R "^test_ops_decode|^test_engine$|^test_engine.polaris" > $d/out.txt 2>&1 )
echo "$i tests: $(tail -3 $d/out.txt | head -1)" >> $R/s.txt
for t in 18554b0 b1ee40d 9bed2a6 7cd2739 head; do one $t $P; done
# gemm_f32's K step unrolled 8 at a time (head) against whole (9bed2a6), alternated; then the
# training step's first step with an empty pipeline cache (head; 150 s at 5793ad7).
gm() {
  i=$((i+1)); local d=$R/$i-gemm-$1; mkdir -p $d
  left=$(( 330 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { echo "skip gemm $1" >> $R/s.txt; return; }
  echo "$P motifcl-bench gemm (tree $1)" > $d/cmd.txt
  env $P timeout 60 /tmp/b-$1/tools/motifcl-bench gemm --witness-dir $d > $d/out.txt 2>&1
  echo "$i gemm $1: $(grep -h 'TFLOP/s' $d/out.txt | grep -v peak | awk '{print $(NF-2)}' | tr '\n' ' ')at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
gm 9bed2a6; gm head
i=$((i+1)); d=$R/$i-train-first; mkdir -p $d; left=$(( 330 - ($(date +%s) - T0) ))
if [ $left -gt 40 ]; then
  echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc-empty MOTIFCL_LOG=debug motifcl-bench train (tree head)" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc-empty MOTIFCL_LOG=debug timeout $left /tmp/b-head/tools/motifcl-bench train --witness-dir $d > $d/out.txt 2>&1
  grep "pipeline created" $d/out.txt | sort -t" " -k9 -n -r | head -8 > $d/pipelines.txt
  grep -v "^motifcl debug" $d/out.txt > /tmp/o && mv /tmp/o $d/out.txt
  echo "$i train first step: $(grep -h 'first forward pass' $d/out.txt | tail -1)" >> $R/s.txt
fi
# The counter-state step with the update passes' wider workgroups (61,049 tokens/s at 5793ad7).
i=$((i+1)); d=$R/$i-train-counter; mkdir -p $d; left=$(( 330 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  echo "$P motifcl-bench train counter=11 --profile (tree head)" > $d/cmd.txt
  env $P timeout $left /tmp/b-head/tools/motifcl-bench train counter=11 --profile --witness-dir $d > $d/out.txt 2>&1
  echo "$i train counter: $(grep -h 'tokens/s' $d/out.txt | head -1)" >> $R/s.txt
fi
cp .ab/e.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
