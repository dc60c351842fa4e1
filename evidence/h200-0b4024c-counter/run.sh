#!/bin/bash
# The counter-state step at head (.ab/commit.txt, clean, checked out) against three variants of
# the update kernels (.ab/tree-v{a,b,c}.tar.gz: a chunks of 16 rows, b G's row loop unrolled 8
# at a time, c both), alternated; their pipeline statistics.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
for v in va vb vc; do mkdir -p /tmp/src-$v && tar xzf .ab/tree-$v.tar.gz -C /tmp/src-$v
  ( cmake -S /tmp/src-$v -B /tmp/b-$v -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null 2>&1 && cmake --build /tmp/b-$v --target motifcl-bench > /dev/null 2>&1 ) & done
( cmake -S . -B /tmp/b-head -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /dev/null 2>&1 && cmake --build /tmp/b-head --target motifcl-bench > /dev/null 2>&1 ) & wait
echo "built at $(( $(date +%s) - T0 )) s" > $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
run() { i=$((i+1)); d=$R/$i-$1; mkdir -p $d; echo "MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 motifcl-bench ${@:3} --witness-dir $d (tree $1)" > $d/cmd.txt
  MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=info MOTIFCL_PIPELINE_CACHE=/tmp/pc-$1 timeout $2 /tmp/b-$1/tools/motifcl-bench "${@:3}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 ${@:3} exit $?: $(grep -h 'tokens/s' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ') $(grep -h 'counter_[sa][a-z]*_f32.*Register' $d/out.txt | sed 's/.*kernel //; s/: Register Count =//' | tr '\n' ' ')" >> $R/s.txt; }
for r in 1 2; do for v in head va vb vc; do run $v 60 train counter=11; done; done
run head 25 train counter=11 --profile; run vc 25 train counter=11 --profile
cp .ab/g5.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; grep -h "counter_stats_f32 \|counter_apply_f32 " $R/9-head/out.txt $R/10-vc/out.txt | grep -v info
echo "done at $(( $(date +%s) - T0 )) s"
cd $OUT && tar czf r.tgz r && rm -rf r
