#!/bin/sh
# Lavapipe (Mesa 22.3.6, LLVM 15), the development machine, commit 0c000ab (clean tree): the
# dispatches the 2-layer shape=small decode step records on the integer-dot path (the norms
# in the output and down products' epilogue) and on the float path (the norms their own
# dispatches). EXE is that build's motifcl-bench.
for path in float dot; do
  mkdir -p $path
  echo "MOTIFCL_QUANT_PATH=$path motifcl-bench decode shape=small type=q4_0 prompt=16 tokens=4 repeat=1 --profile" > $path/cmd.txt
  MOTIFCL_QUANT_PATH=$path $EXE decode shape=small type=q4_0 prompt=16 tokens=4 repeat=1 \
    --profile --witness-dir $path > $path/out.txt 2>&1
done
