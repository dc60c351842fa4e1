#!/bin/bash
# On the same machine right after ../mixtral (the build of ../suite in /tmp/b): the 1B decode
# at each decode-attention workgroup size, then Mixtral's at 256.
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig; R=$OUT/r; mkdir -p $R; B=/tmp/b/tools/motifcl-bench; P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
for w in 64 128 256; do mkdir -p $R/1b-wg$w; env $P MOTIFCL_ATTENTION_WG=$w timeout 60 $B decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=3 --witness-dir $R/1b-wg$w > $R/1b-wg$w/out.txt 2>&1; done
mkdir -p $R/mixtral-wg256; env $P MOTIFCL_ATTENTION_WG=256 timeout 150 $B decode shape=mixtral type=q4_0 prompt=128 tokens=32 repeat=2 --witness-dir $R/mixtral-wg256 > $R/mixtral-wg256/out.txt 2>&1
