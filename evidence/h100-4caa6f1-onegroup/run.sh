#!/bin/bash
# The counter-state step with a block's updates in two groups (base, .ab/base.txt) and in one
# after its attention half (this tree, .ab/commit.txt), alternated, both profiled; the GPT
# tests of this tree strict under sync validation.
T0=$(date +%s); LIMIT=${1:-400}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
B=$(cat .ab/base.txt); C=$(cat .ab/commit.txt)
mkdir -p /tmp/src-base3 && tar xzf .ab/base.tar.gz -C /tmp/src-base3
( cmake -S /tmp/src-base3 -B /tmp/b3-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$B > /dev/null 2>&1 && cmake --build /tmp/b3-base --target motifcl-bench > /dev/null 2>&1 ) &
( cmake -S . -B /tmp/b3-one -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b3-one --target motifcl-bench test_gpt_counter test_gpt test_gpt_reversible > /dev/null 2>&1 ) & wait
echo "built at $(( $(date +%s) - T0 )) s; base $B one $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0; left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 motifcl-bench ${@:3} --witness-dir $d (tree $1)" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 timeout $2 /tmp/b3-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 ${@:3} exit $?: $(grep -h -E 'tokens/s|peak' $d/out.txt | grep -v modeled | cut -c1-120 | tr '\n' ' ') at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
run one 120 train counter=11; run base 120 train counter=11
for r in 1 2 3; do for v in one base; do [ $(left) -gt 150 ] && run $v 40 train counter=11; done; done
[ $(left) -gt 130 ] && run one 40 train counter=11 --profile
[ $(left) -gt 110 ] && run base 40 train counter=11 --profile
mkdir -p $R/t
for t in test_gpt_counter test_gpt test_gpt_reversible; do [ $(left) -gt 30 ] && {
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout $(( $(left) - 20 )) /tmp/b3-one/tests/$t > $R/t/$t.log 2>&1
  echo "$t strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }; done
cp .ab/d3.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; for p in $R/*-one/out.txt $R/*-base/out.txt; do grep -q "profile of" $p && { echo $p; grep -A14 "profile of" $p | cut -c1-150; }; done
tail -2 $R/t/*.log; rm -f $R/t/*.log; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t && echo "done at $(( $(date +%s) - T0 )) s"
