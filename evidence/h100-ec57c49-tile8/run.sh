#!/bin/bash
# The counter-state step: main (base), the grouped updates (grp), + the statistics pass by 8 x 8
# blocks (s8), + the update pass by 8 x 8 blocks in 16 segments (t8, this tree), alternated;
# t8's counter tests strict under sync validation; profiles; the passes' registers.
T0=$(date +%s); LIMIT=${1:-560}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
declare -A H=([base]=$(cat .ab/base.txt) [grp]=c9ec25232d5546183709095f209b4835b42d8e78 [s8]=ed87142e1ccbf4850b8652c9dc7324f78a8fe066 [t8]=$(cat .ab/commit.txt))
mkdir -p /tmp/src-base /tmp/src-grp /tmp/src-s8
tar xzf .ab/base.tar.gz -C /tmp/src-base; tar xzf .ab/c9ec252.tar.gz -C /tmp/src-grp; tar xzf .ab/ed87142.tar.gz -C /tmp/src-s8
for v in base grp s8; do ( cmake -S /tmp/src-$v -B /tmp/b-$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=${H[$v]} > /dev/null 2>&1 && cmake --build /tmp/b-$v --target motifcl-bench > /dev/null 2>&1 ) & done
( cmake -S . -B /tmp/b-t8 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=${H[t8]} > /dev/null 2>&1 && cmake --build /tmp/b-t8 --target motifcl-bench test_counter test_gpt_counter > /dev/null 2>&1 ) & wait
echo "built at $(( $(date +%s) - T0 )) s; base ${H[base]} grp ${H[grp]} s8 ${H[s8]} t8 ${H[t8]}" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 motifcl-bench ${@:3} --witness-dir $d (tree $1)" > $d/cmd.txt
  MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 timeout $2 /tmp/b-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 ${@:3} exit $?: $(grep -h 'tokens/s' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ') $(grep -h 'counter_[sa][a-z]*_f32.*Register' $d/out.txt | sed 's/.*kernel //; s/: Register Count =//' | tr '\n' ' ') at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
for v in t8 base grp s8; do [ $(left) -gt 150 ] && run $v 90 train counter=11; done
for v in base t8; do [ $(left) -gt 130 ] && run $v 50 train counter=11; done
[ $(left) -gt 110 ] && run t8 40 train counter=11 --profile
for v in base t8; do [ $(left) -gt 110 ] && run $v 50 train counter=11; done
[ $(left) -gt 90 ] && run base 40 train counter=11 --profile
mkdir -p $R/t
[ $(left) -gt 40 ] && for t in test_counter test_gpt_counter; do
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout $(( $(left) / 2 )) /tmp/b-t8/tests/$t > $R/t/$t.log 2>&1
  echo "$t strict sync exit $?" >> $R/s.txt; done
cp .ab/c2.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; for p in $R/*-t8/out.txt $R/*-base/out.txt; do grep -q "profile of" $p && { echo $p; grep -A16 "profile of" $p | cut -c1-150; }; done
echo "done at $(( $(date +%s) - T0 )) s"
