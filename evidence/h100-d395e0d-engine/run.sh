#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the K types inside the step (products=1 on the
# integer-dot path, 1B q4_K, profiled), the 7B q4_K on its default path, the models made on the
# device (7B q4_0 headline, 1B f32), Mixtral resident and under a 7 GiB expert budget.
T0=$(date +%s)
LIMIT=${1:-540}
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b --target motifcl-bench > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
i=0
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench() { # folder, seconds, environment, arguments
  i=$((i+1)); local d=$R/$i-$1; mkdir -p $d
  left=$(( LIMIT - 10 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 15 ] && { echo "$i $1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  echo "$3 motifcl-bench ${@:4} --witness-dir $d" > $d/cmd.txt
  local t1=$(date +%s)
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $d > $d/out.txt 2>&1
  echo "$i $1 exit $? in $(( $(date +%s) - t1 )) s: $(grep -h 'replayed back to back\|each step waited for, no sampling\|made on the device' $d/out.txt | grep -v modeled | awk '{print $(NF-2), $(NF-1)}' | tr '\n' ' ')" >> $R/s.txt
}
bench products 90 "$P MOTIFCL_QUANT_PATH=dot" decode shape=1b type=q4_K prompt=64 tokens=8 repeat=1 products=1 --profile
bench 7b-q4_K 70 "$P" decode shape=7b type=q4_K prompt=512 tokens=64 repeat=3
bench 7b-q4_0 60 "$P" decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=5
bench 1b-f32 60 "$P" decode shape=1b type=f32 prompt=512 tokens=64 repeat=3
bench mixtral 100 "$P" decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=3
bench mixtral-7g 120 "$P" decode shape=mixtral type=q4_0 prompt=64 tokens=32 repeat=1 expert_mib=7168
cp .ab/q.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt; cat $R/gpu.txt
grep -h "products alone" $R/*-products/out.txt
grep -h "hit rate\|moved\|host memory\|tokens/s" $R/*-mixtral-7g/out.txt | head -12
cd $OUT && tar czf r.tgz r && rm -rf r
