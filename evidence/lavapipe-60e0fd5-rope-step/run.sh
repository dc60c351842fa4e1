#!/bin/sh
# Lavapipe (Mesa 22.3.6, LLVM 15), this machine: the dispatches a decode step records before
# (7cd2739) and after (60e0fd5) RoPE and the cache write joined the attention's dispatch, on
# the float and the integer-dot paths. BEFORE and AFTER are motifcl-bench built from a clean
# checkout (git archive) of each commit.
for t in before after; do
  exe=$BEFORE; [ $t = after ] && exe=$AFTER
  for path in float dot; do
    d=$t-$path; mkdir -p $d
    echo "MOTIFCL_QUANT_PATH=$path motifcl-bench decode shape=moe-small type=q4_0 prompt=16 tokens=8 repeat=1" > $d/cmd.txt
    MOTIFCL_QUANT_PATH=$path $exe decode shape=moe-small type=q4_0 prompt=16 tokens=8 \
      repeat=1 --witness-dir $d > $d/out.txt 2>&1
  done
done
