#!/bin/bash
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b3 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > $R/cfg.txt 2>&1 && cmake --build /tmp/b3 --target motifcl-bench test_ops_quant > $R/build.txt 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
B=/tmp/b3/tools/motifcl-bench
for v in 32 64 32x2; do
  MOTIFCL_QUANT_GEMM_STEP=$v MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_TEST_FILTER=matrix_path timeout 120 /tmp/b3/tests/test_ops_quant > $R/t-$v.txt 2>&1; echo "test $v exit $?" >> $R/s.txt
done
for rep in 1 2; do for v in 32 64 32x2; do
  d=$R/q-$v-$rep; mkdir -p $d
  MOTIFCL_QUANT_GEMM_STEP=$v MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 $B quant rows=3 fmt=1 --witness-dir $d > $d/out.txt 2>&1
  MOTIFCL_QUANT_GEMM_STEP=$v MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 $B quant rows=3 fmt=0 --witness-dir $d >> $d/out.txt 2>&1
  echo "q $v $rep: $(grep -h 'matrix' $d/out.txt | tr -s ' ' | tr '\n' ';')" >> $R/s.txt
done; done
for rep in 1 2; do for v in 32 64 32x2; do
  for sh in 1b 7b; do d=$R/p-$sh-$v-$rep; mkdir -p $d
  MOTIFCL_QUANT_GEMM_STEP=$v MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 $B prefill shape=$sh type=q4_0 prompt=512 repeat=5 --witness-dir $d > $d/out.txt 2>&1
  echo "p $sh $v $rep: $(grep -h 'prefill of' $d/out.txt)" >> $R/s.txt; done
done; done
cp .ab/d3.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "at $(( $(date +%s) - T0 )) s"; cat $R/s.txt; grep -h "FAIL\|PASSED\|failed" $R/t-*.txt | head
cd $OUT && tar czf r.tgz r && rm -rf r
