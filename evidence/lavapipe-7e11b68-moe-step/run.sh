#!/bin/sh
# Lavapipe (Mesa 22.3.6, LLVM 15), this machine: the dispatches a mixture's decode step records,
# before (9513208) and after (7e11b68) the step's quantizations were fused, every product on
# the integer-dot path, with every expert resident and with an expert cache (expert_mib=4).
# BEFORE and AFTER are motifcl-bench built from a clean checkout of each commit.
for tree in before after; do
  exe=$BEFORE; [ $tree = after ] && exe=$AFTER
  for mib in 0 4; do
    d=$tree-resident; extra=""
    [ $mib != 0 ] && d=$tree-cache && extra="expert_mib=$mib"
    mkdir -p $d
    MOTIFCL_QUANT_PATH=dot $exe decode shape=moe-small type=q4_0 prompt=16 tokens=8 repeat=1 \
      $extra --witness-dir $d > $d/out.txt 2>&1
  done
done
