#!/bin/bash
# The counter-state step with the update's passes by 4 x 4 blocks (default) and by 8 x 8
# (MOTIFCL_COUNTER_STATS8, MOTIFCL_COUNTER_APPLY8, both), alternated, profiled; the kernels'
# registers; test_counter strict under sync validation; the step under each f32 GEMM tile.
T0=$(date +%s); LIMIT=${1:-400}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b2 --target motifcl-bench test_counter > /dev/null 2>&1
echo "built at $(( $(date +%s) - T0 )) s; tree $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0; left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; local e=$2; shift 2
  echo "$e MOTIFCL_PIPELINE_CACHE=/tmp/pc motifcl-bench $* --witness-dir $d" > $d/cmd.txt
  env $e MOTIFCL_PIPELINE_CACHE=/tmp/pc timeout 90 /tmp/b2/tools/motifcl-bench "$@" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 $e $* exit $?: $(grep -h 'tokens/s' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ') at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
V4="X=0"; VS="MOTIFCL_COUNTER_STATS8=1"; VA="MOTIFCL_COUNTER_APPLY8=1"; VB="MOTIFCL_COUNTER_STATS8=1 MOTIFCL_COUNTER_APPLY8=1"
for r in 1 2 3; do
  [ $(left) -gt 200 ] && run base "$V4" train counter=11; [ $(left) -gt 190 ] && run both "$VB" train counter=11
  [ $(left) -gt 180 ] && run s8 "$VS" train counter=11; [ $(left) -gt 170 ] && run a8 "$VA" train counter=11; done
[ $(left) -gt 150 ] && { mkdir -p $R/t; MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout 120 /tmp/b2/tests/test_counter > $R/t/test_counter.log 2>&1; echo "test_counter strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
[ $(left) -gt 110 ] && run base "$V4" train counter=11 --profile
[ $(left) -gt 100 ] && run both "$VB" train counter=11 --profile
[ $(left) -gt 90 ] && { env MOTIFCL_COUNTER_STATS8=1 MOTIFCL_COUNTER_APPLY8=1 MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info MOTIFCL_PIPELINE_CACHE=/tmp/pc-st timeout 60 /tmp/b2/tools/motifcl-bench train counter=11 > $R/stats.txt 2>&1; echo "stats exit $?" >> $R/s.txt; }
for t in 64x64 128x128 64x128 128x64; do [ $(left) -gt 40 ] && run t$t MOTIFCL_GEMM_TILE=$t train counter=11 --profile; done
cp .ab/d2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -i -E "counter" $R/stats.txt | cut -c1-240 | head -12; tail -3 $R/t/test_counter.log
for p in $R/*-base/out.txt $R/*-both/out.txt $R/*-t*/out.txt; do grep -q "profile of" $p && { echo $p; grep -A12 "profile of" $p | cut -c1-150; }; done
rm -f $R/t/*.log; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t && echo "done at $(( $(date +%s) - T0 )) s"
