#!/bin/bash
# Diagnostics at the commit in .ab/commit.txt: the decode loop with and without sampling, the
# sampler's configurations, with subgroup arithmetic and without.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
bench() { # folder, seconds, environment, arguments
  mkdir -p $R/$1; echo "$3 motifcl-bench ${@:4} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $3 timeout $2 /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
bench d7 90 X=1 decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5


cp .ab/diag6.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
for d in $R/d*; do echo "== $d"; grep -E "one sequence|sampled on|per token|back to back|each waited|upload|downloaded" $d/out.txt; done
cd $OUT && tar czf r.tgz r && rm -rf r
