#!/bin/bash
# .ab/ held: old.tar = `git archive e1c71ce -- . ':!evidence'` (the tree before), commit.txt
# (this folder's), bitcheck.c (bit/ here), and this script; .gl/ the Debian packages of
# ../shared/device/fetch-vulkan-loader.sh.
# The whole suite on this machine's GPU, strict, synchronization validation, both profiles
# (the suite's .polaris tests), at the commit in .ab/commit.txt; then the bit-identity check:
# the same operations' outputs hashed by the tree of e1c71ce and by this one, both profiles.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R/t
C=$(cat .ab/commit.txt)
mkdir -p /tmp/old && tar xf .ab/old.tar -C /tmp/old
( cmake -S /tmp/old -B /tmp/bo -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=e1c71cee1dbd9921f7028860be33d9944e6a30b1 > /tmp/cfgo.log 2>&1 && cmake --build /tmp/bo --target motifcl_internal > /tmp/buildo.log 2>&1; echo "old built: $?" > /tmp/old.rc ) &
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/cfg.log /tmp/build.log; exit 1; }
wait
echo "built in $(( $(date +%s) - T0 )) s; $(cat /tmp/old.rc)" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
/tmp/b/tools/motifcl-info > $R/motifcl-info.txt 2>&1
cd /tmp/b
left=$(( 470 - ($(date +%s) - T0) ))
echo "ctest with ${left} s" >> $R/s.txt
MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$R/t timeout $left ctest -j12 --output-on-failure > $R/t/ctest.log 2>&1
echo "ctest exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
tail -15 $R/t/ctest.log >> $R/s.txt
grep -h "Validation Error" $R/t/ctest.log | head -5 >> $R/s.txt
cd - > /dev/null
B=$R/bit; mkdir -p $B
cc -O1 -std=c11 -I/tmp/old/include .ab/bitcheck.c /tmp/bo/libmotifcl_internal.a -lm -ldl -lpthread -o /tmp/bit_old && \
cc -O1 -std=c11 -Iinclude .ab/bitcheck.c /tmp/b/libmotifcl_internal.a -lm -ldl -lpthread -o /tmp/bit_new || echo "bitcheck build failed" >> $R/s.txt
for p in none polaris; do
  [ $(( $(date +%s) - T0 )) -gt 560 ] && { echo "bitcheck $p skipped (time)" >> $R/s.txt; continue; }
  MOTIFCL_DEVICE_PROFILE=$p timeout 60 /tmp/bit_old > $B/old-$p.txt 2>&1
  MOTIFCL_DEVICE_PROFILE=$p timeout 60 /tmp/bit_new > $B/new-$p.txt 2>&1
  if cmp -s $B/old-$p.txt $B/new-$p.txt; then echo "bitcheck $p: identical ($(wc -l < $B/new-$p.txt) lines)" >> $R/s.txt; else echo "bitcheck $p: DIFFERS" >> $R/s.txt; diff $B/old-$p.txt $B/new-$p.txt | head -20 >> $R/s.txt; fi
done
echo "done at $(( $(date +%s) - T0 )) s" >> $R/s.txt
cp .ab/suite.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cd $OUT && tar czf r.tgz r && rm -rf r
