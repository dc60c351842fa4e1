#!/bin/bash
# .ab/ held: old.tar = `git archive e1c71ce -- . ':!evidence'` (the tree before), commit.txt
# (this folder's), bitcheck.c (h200-d40f7ec-suite/bit/), and this script; .gl/ the Debian packages of
# ../shared/device/fetch-vulkan-loader.sh.
# A/B on this machine's GPU, one lease: motifcl-bench's gemv, gemm, quant and train figures of the
# tree of e1c71ce (before) and of the commit in .ab/commit.txt (after), each benchmark run
# before, after, before, after, so that clock drift falls on both alike. Part 1: gemv, gemm,
# train; part 2: quant (bash .ab/ab.sh 1|2; the builds are kept for the second call).
PART=${1:-1}
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r$PART; mkdir -p $R/w
C=$(cat .ab/commit.txt)
OLD=$PWD/build-h200-old; NEW=$PWD/build-h200
if [ ! -x $OLD/tools/motifcl-bench ]; then
  mkdir -p /tmp/old && tar xf .ab/old.tar -C /tmp/old
  ( cmake -S /tmp/old -B $OLD -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=e1c71cee1dbd9921f7028860be33d9944e6a30b1 > /tmp/cfgo.log 2>&1 && cmake --build $OLD --target motifcl-bench > /tmp/buildo.log 2>&1; echo "old: $?" > /tmp/old.rc ) &
fi
if [ ! -x $NEW/tools/motifcl-bench ]; then
  cmake -S . -B $NEW -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build $NEW --target motifcl-bench > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
fi
wait
echo "part $PART, built in $(( $(date +%s) - T0 )) s; $(cat /tmp/old.rc 2>/dev/null)" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
i=0
one() { # tree, timeout, args
  local tree=$1 lim=$2; shift 2
  if [ $(( $(date +%s) - T0 + lim )) -gt 585 ]; then echo "skip $tree $*" >> $R/s.txt; return; fi
  i=$((i+1)); local d=$R/w/$i-$tree; mkdir -p $d
  local exe=$NEW/tools/motifcl-bench; [ $tree = before ] && exe=$OLD/tools/motifcl-bench
  echo "motifcl-bench $*" > $d/cmd.txt
  local t=$(date +%s)
  timeout $lim $exe "$@" --witness-dir $d > $d/out.txt 2>&1
  echo "== $i $tree $* (rc $?, $(( $(date +%s) - t )) s)" >> $R/s.txt
  grep -E "GB/s|TFLOP/s|tokens/s|%" $d/out.txt | grep -v "modeled" >> $R/s.txt
}
ab() { local lim=$1; shift; one before $lim "$@"; one after $lim "$@"; one before $lim "$@"; one after $lim "$@"; }
if [ $PART = 1 ]; then
  ab 60 gemv --warmup 0.5
  ab 90 gemm --warmup 1
  ab 180 train --repeat 5 --warmup 1
else
  ab 60 quant rows=1 gemm=0 --warmup 0.3
  ab 60 quant rows=8 gemm=0 --warmup 0.3
  ab 90 quant rows=8 fmt=1 --warmup 0.3
fi
echo "done at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp .ab/ab.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cd $OUT && tar czf r$PART.tgz r$PART && rm -rf r$PART
