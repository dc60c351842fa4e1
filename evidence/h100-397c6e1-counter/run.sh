#!/bin/bash
# The counter-state step of this tree (.ab/commit.txt; tiles of 32 rows by default), three runs
# and one profiled; test_gpt_counter and test_counter strict under sync validation.
T0=$(date +%s); LIMIT=${1:-260}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R; C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b8 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b8 --target motifcl-bench test_gpt_counter test_counter > /dev/null 2>&1
echo "built at $(( $(date +%s) - T0 )) s; $C" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/s.txt 2>&1
i=0; left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
mkdir -p $R/t
for t in test_gpt_counter test_counter; do [ $(left) -gt 30 ] && {
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync MOTIFCL_WITNESS_DIR=$R/t timeout $(( $(left) - 20 )) /tmp/b8/tests/$t > $R/t/$t.log 2>&1
  echo "$t strict sync exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }; done
grep -h "moments" $R/t/test_gpt_counter.log >> $R/s.txt
run() { i=$((i+1)); d=$R/$i; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc8 motifcl-bench $* --witness-dir $d" > $d/cmd.txt
  MOTIFCL_PIPELINE_CACHE=/tmp/pc8 timeout 60 /tmp/b8/tools/motifcl-bench "$@" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $* exit $?: $(grep -h -E 'tokens/s|peak tensor' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ') at $(( $(date +%s) - T0 )) s" >> $R/s.txt; }
for r in 1 2 3; do [ $(left) -gt 25 ] && run train counter=11; done
[ $(left) -gt 15 ] && run train counter=11 --profile
cp .ab/d8.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h -A12 "profile of" $R/*/out.txt | cut -c1-150
rm -f $R/t/*.log; cd $OUT && tar czf runs.tar.gz r && rm -rf r/[0-9]* r/t && echo "done at $(( $(date +%s) - T0 )) s"
