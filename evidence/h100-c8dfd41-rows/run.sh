#!/bin/bash
# The counter-state step with the update's tiles of 16 (the previous kernels), 32 and 64 rows
# of W (MOTIFCL_COUNTER_ROWS): this tree ("h", .ab/commit.txt: the tile's totals in shared
# memory) at 16, 32, 64; a clean archive of the tree before it ("o", .ab/o.txt) at 16 and 64; a
# tree like this one staging 32 batch rows a chunk ("c", .ab/c32.txt) at 64; alternated; the
# driver's statistics of each; the fastest profiled; the counter tests strict under sync
# validation.
T0=$(date +%s); LIMIT=${1:-400}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
for v in o c32; do mkdir -p /tmp/src7$v && tar xzf .ab/$v.tar.gz -C /tmp/src7$v
( cmake -S /tmp/src7$v -B /tmp/b7${v:0:1} -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat .ab/$v.txt) > /dev/null 2>&1 && cmake --build /tmp/b7${v:0:1} --target motifcl-bench > /dev/null 2>&1 ) & done
( cmake -S . -B /tmp/b7h -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b7h --target motifcl-bench test_gpt_counter test_counter > /dev/null 2>&1 ) & wait
echo "built at $(( $(date +%s) - T0 )) s; h $C o $(cat .ab/o.txt) c $(cat .ab/c32.txt)" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0; left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
# run <tree h|c> <rows> <timeout> args...
run() { i=$((i+1)); d=$R/$i-$1$2; mkdir -p $d; E="MOTIFCL_COUNTER_ROWS=$2 $S"; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc7$1 $E motifcl-bench ${@:4} --witness-dir $d (tree $1)" > $d/cmd.txt
  env MOTIFCL_PIPELINE_CACHE=/tmp/pc7$1 $E timeout $3 /tmp/b7$1/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 $E ${@:4} exit $?: $(grep -h -E 'tokens/s|peak tensor' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ') at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
V="h16 h64 o16 o64 h32 c64"
S="MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info"
for v in $V; do run ${v:0:1} ${v:1} 150 train counter=11; done
S=
for r in 1 2; do for v in $V; do [ $(left) -gt 110 ] && run ${v:0:1} ${v:1} 40 train counter=11; done; done
B=$(for v in $V; do echo "$(grep -h 'tokens/s' $R/*-$v/out.txt | grep -v modeled | awk '{s+=$(NF-1)} END {print s}') $v"; done | sort -g | tail -1 | cut -d' ' -f2)
echo "fastest: $B" >> $R/s.txt
[ $(left) -gt 80 ] && run ${B:0:1} ${B:1} 40 train counter=11 --profile
[ $B != h16 ] && [ $(left) -gt 65 ] && run h 16 40 train counter=11 --profile
mkdir -p $R/t; BR=${B:1}
for t in test_counter test_gpt_counter; do [ $(left) -gt 30 ] && {
  MOTIFCL_COUNTER_ROWS=$BR MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout $(( $(left) - 20 )) /tmp/b7h/tests/$t > $R/t/$t.log 2>&1
  echo "MOTIFCL_COUNTER_ROWS=$BR $t (tree h) strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }; done
grep -h "moments" $R/t/test_gpt_counter.log >> $R/s.txt
cp .ab/d7.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt; cp .ab/c32.txt $R/c32.txt; cp .ab/o.txt $R/o.txt
cat $R/s.txt; for p in $R/*/out.txt; do grep -q "profile of" $p && { echo $p; grep -A8 "profile of" $p | cut -c1-150; }; done
for p in $R/[123456]-*/out.txt; do echo "== $p"; grep -h "counter_apply\|counter_stat" $p | grep -i "regist" | cut -c1-160 | sort -u | head -4; done
rm -f $R/t/*.log; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t && echo "done at $(( $(date +%s) - T0 )) s"
