#!/bin/bash
# Head (.ab/commit.txt, clean, checked out) against base (.ab/tree-main.tar.gz, .ab/base.txt):
# the counter-state step alternated; head's f32 step with PyTorch beside it; GEMM checks; the
# counter and GEMM tests strict on this driver; the update kernels' pipeline statistics.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt); B=$(cat .ab/base.txt)
mkdir -p /tmp/src-base && tar xzf .ab/tree-main.tar.gz -C /tmp/src-base
( cmake -S /tmp/src-base -B /tmp/b-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$B > /dev/null 2>&1 && cmake --build /tmp/b-base --target motifcl-bench > /dev/null 2>&1 ) &
( cmake -S . -B /tmp/b-head -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b-head > /dev/null 2>&1 ) & wait
echo "built at $(( $(date +%s) - T0 )) s" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench ${@:3} --witness-dir $d (tree $1)" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $2 /tmp/b-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 ${@:3} exit $?: $(grep -h 'tokens/s\|activations and scratch\|peak tensor' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt; }
run base 60 train counter=11; run head 60 train counter=11
run base 20 train counter=11; run head 20 train counter=11
run head 60 train
i=$((i+1)); d=$R/$i-torch; mkdir -p $d; echo "python3 stories15m_step.py --attn sdpa" > $d/cmd.txt
timeout 60 python3 .ab/stories15m_step.py --attn sdpa > $d/out.txt 2>&1
run head 20 train
run head 25 train counter=11 --profile
i=$((i+1)); d=$R/$i-head-gemm; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench gemm --witness-dir $d" > $d/cmd.txt
MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 60 /tmp/b-head/tools/motifcl-bench gemm --witness-dir $d > $d/out.txt 2>&1
echo "bench done at $(( $(date +%s) - T0 )) s" >> $R/s.txt
mkdir -p $R/t
( cd /tmp/b-head && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout 200 ctest -j8 -R "test_counter|test_ops_matmul|test_gpt_counter" --output-on-failure > $R/t/ctest.log 2>&1; echo "ctest exit $?" >> $R/s.txt )
MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info timeout 30 /tmp/b-head/tools/motifcl-bench train counter=11 > $R/pstats.txt 2>&1
T="128x128x16/8x8,128x128x32/8x8"
for s in "4096 4096 4096 0 1" "4096 4096 4096 1 0" "4096 512 14336 1 0"; do set -- $s
  left=$(( 570 - ($(date +%s) - T0) )); [ $left -lt 20 ] && break; [ $left -gt 60 ] && left=60
  d=$R/gemm-$1-$2-$3-$4$5; mkdir -p $d; echo "motifcl-bench gemm m=$1 n=$2 k=$3 ta=$4 tb=$5 sweep=1 tiles=$T" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout $left /tmp/b-head/tools/motifcl-bench gemm m=$1 n=$2 k=$3 ta=$4 tb=$5 sweep=1 tiles=$T --witness-dir $d > $d/out.txt 2>&1; done
cp .ab/g4.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt; echo $B > $R/base.txt
cat $R/s.txt; grep -h train_step $R/*-torch/out.txt; grep -h "rate\|tile" $R/*gemm*/out.txt | sed 's/gemm f32 //; s/(measured)//' | head -30
grep -h "counter_stats\|counter_apply" $R/*-head/out.txt | head -4; tail -5 $R/t/ctest.log
grep -i "counter_stats\|counter_apply" $R/pstats.txt | head -6
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
