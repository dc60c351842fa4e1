#!/bin/bash
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b6 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > $R/cfg.txt 2>&1 && cmake --build /tmp/b6 --target motifcl-bench test_ops_quant test_ops_attention > $R/build.txt 2>&1
echo "built at $(( $(date +%s) - T0 )) s"
B=/tmp/b6/tools/motifcl-bench
export MOTIFCL_REQUIRE_VULKAN_COMPUTE=1
MOTIFCL_TEST_FILTER=prompt_matches_reference timeout 120 /tmp/b6/tests/test_ops_attention > $R/t-att.txt 2>&1; echo "test att exit $?" >> $R/s.txt
for v in 4 7; do MCLX_MMA=$v MOTIFCL_TEST_FILTER=matrix_path timeout 120 /tmp/b6/tests/test_ops_quant > $R/t-$v.txt 2>&1; echo "test mma $v exit $?" >> $R/s.txt; done
for v in 0 1 2 3 4 7; do d=$R/q-$v; mkdir -p $d
  MCLX_MMA=$v MOTIFCL_PIPELINE_CACHE=0 MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info timeout 60 $B quant rows=3 fmt=1 --witness-dir $d > $d/out.txt 2>&1
  echo "q $v: $(grep -h 'matrix' $d/out.txt | grep rate | tr -s ' ' | tr '\n' ';')" >> $R/s.txt
done
for sh in 7b 1b; do for v in "0 0" "1 0" "0 4" "1 4"; do set -- $v; d=$R/p-$sh-a$1-m$2; mkdir -p $d
  MCLX_ATT=$1 MCLX_MMA=$2 MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 $B prefill shape=$sh type=q4_0 prompt=512 repeat=5 --witness-dir $d > $d/out.txt 2>&1
  echo "p $sh att $1 mma $2: $(grep -h 'prefill of' $d/out.txt)" >> $R/s.txt; done; done
cp .ab/d6.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
echo "at $(( $(date +%s) - T0 )) s"; cat $R/s.txt; grep -h "nmse\|FAILED" $R/t-att.txt | head -12
grep -h -i "gemm_q_mma" $R/q-*/out.txt | head -24
cd $OUT && tar czf r.tgz r && rm -rf r
