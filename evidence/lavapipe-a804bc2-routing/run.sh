#!/bin/sh
# On this machine's Lavapipe: the small mixture's decode under an expert cache of 2 slots a
# layer, built at bcc40c0 (the benchmark's old models), at a804bc2 (signed scales, the
# embedding's 2^-2) and at ea7cf8c (each layer's router its own; 3-routers, the same command
# from the build folder at that commit). Only the counts (hit rates, bytes moved) are
# evidence; Lavapipe's rates are not.
for b in before:/tmp/wbb after:build; do
  d=/tmp/${b%%:*}; rm -rf $d; mkdir -p $d
  MOTIFCL_LOG=warning ${b#*:}/tools/motifcl-bench decode shape=moe-small type=q4_0 prompt=64 \
      tokens=32 repeat=1 expert_mib=3.5 dir=$d --witness-dir $d > $d/out.txt 2>&1
done
