#!/bin/bash
# Q4_K's integer-dot products inside a decode step (docs/inference.md): the 1B step profiled,
# q4_0 against q4_K, q4_K with every block's d and dmin 0 (a tree whose benchmark writes them
# so when BENCH_ZERO_D is set: all weights 0), op by op, and on the float path; then the
# q4_K kernel alone at the 1B's gate shape.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
mkdir -p /tmp/src-zero && tar xzf .ab/tree-zero.tar.gz -C /tmp/src-zero
build() { cmake -S $2 -B /tmp/b-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg-$1.log 2>&1 && cmake --build /tmp/b-$1 --target motifcl-bench > /tmp/build-$1.log 2>&1 || { echo "build $1 failed"; tail -5 /tmp/build-$1.log; }; }
build head . & build zero /tmp/src-zero & wait
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
i=0
bench() { # tree, folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$2; mkdir -p $d
  echo "$4 motifcl-bench ${@:5} (tree $1)" > $d/cmd.txt
  local t1=$(date +%s)
  env MOTIFCL_PIPELINE_CACHE=/tmp/pc $4 timeout $3 /tmp/b-$1/tools/motifcl-bench "${@:5}" --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $2 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back' $d/out.txt | awk '{print $(NF-2)}') ms" >> $R/s.txt
  grep -E "^ +[0-9].*(gemv|gemm)" $d/out.txt | head -4 >> $R/s.txt
}
D="decode shape=1b prompt=64 tokens=8 repeat=1 --profile"
bench head q4_0 60 "" $D type=q4_0
bench head q4_K 90 "" $D type=q4_K
bench zero q4_K-zero 90 "BENCH_ZERO_D=1" $D type=q4_K
bench head q4_K-eager 90 "MOTIFCL_ENGINE_EAGER=1" $D type=q4_K
bench head q4_K-float 60 "MOTIFCL_QUANT_PATH=float" $D type=q4_K
bench head quant-q4_K 40 "" quant rows=1 fmt=2 gemm=0 n=8192 k=2048 --warmup 0.3
grep -h "kernels alone, of stream read\|: of stream read" $R/*-quant-q4_K/out.txt >> $R/s.txt
cp .ab/k.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
cd $OUT && tar czf r.tgz r && rm -rf r
