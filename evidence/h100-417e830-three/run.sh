#!/bin/bash
# The counter-state step at three commits, alternated: 21296e3 (one, a block's updates as one
# group), 5b14c99 (side, its grad_x products side by side) and this tree (head, .ab/commit.txt:
# the update's passes each beside the next op of the backward); then this tree at
# MOTIFCL_COUNTER_UNROLL 1, 2, 4 with the driver's statistics; the counter tests strict under sync
# validation.
T0=$(date +%s); LIMIT=${1:-400}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
for v in one side; do mkdir -p /tmp/src6-$v && tar xzf .ab/$v.tar.gz -C /tmp/src6-$v
  ( cmake -S /tmp/src6-$v -B /tmp/b6-$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat .ab/$v.txt) > /dev/null 2>&1 && cmake --build /tmp/b6-$v --target motifcl-bench > /dev/null 2>&1 ) & done
( cmake -S . -B /tmp/b6-head -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b6-head --target motifcl-bench test_gpt_counter test_counter > /dev/null 2>&1 ) & wait
echo "built at $(( $(date +%s) - T0 )) s; one $(cat .ab/one.txt) side $(cat .ab/side.txt) head $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0; left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 $E motifcl-bench ${@:3} --witness-dir $d (tree $1)" > $d/cmd.txt
  env MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 $E timeout $2 /tmp/b6-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 $E ${@:3} exit $?: $(grep -h -E 'tokens/s|peak tensor' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ') at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
E=
for v in head one side; do run $v 150 train counter=11; done
for r in 1 2; do for v in head one side; do [ $(left) -gt 200 ] && run $v 40 train counter=11; done; done
for u in 1 2 4; do E="MOTIFCL_COUNTER_UNROLL=$u MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info"; [ $(left) -gt 130 ] && run head 90 train counter=11; done
E="MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info"; [ $(left) -gt 110 ] && run head 40 train counter=11
E=; [ $(left) -gt 90 ] && run head 40 train counter=11 --profile
mkdir -p $R/t
for t in test_gpt_counter test_counter; do [ $(left) -gt 30 ] && {
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout $(( $(left) - 20 )) /tmp/b6-head/tests/$t > $R/t/$t.log 2>&1
  echo "$t strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }; done
grep -h "moments" $R/t/test_gpt_counter.log >> $R/s.txt
cp .ab/d6.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; for p in $R/*-head/out.txt; do grep -q "profile of" $p && { echo $p; grep -A10 "profile of" $p | cut -c1-150; }; done
for p in $R/*-head/out.txt; do echo "== $p $(head -c 300 ${p%out.txt}cmd.txt | cut -c1-90)"; grep -h "counter_grad\|counter_apply\|counter_stat" $p | grep -i "regist" | cut -c1-160 | sort -u | head -8; done
rm -f $R/t/*.log; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t && echo "done at $(( $(date +%s) - T0 )) s"
