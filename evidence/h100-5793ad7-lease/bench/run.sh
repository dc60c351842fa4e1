#!/bin/bash
# At the commit in .ab/commit.txt (clean tree): the training step's profile, PyTorch's step
# and cuBLAS in the same lease, our GEMM; the counter-state step; the decode benchmarks with
# their profiles; then the 7B decode with 4 and 8 attention slices.
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
C=$(cat .ab/commit.txt)
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$C > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -n 30 /tmp/cfg.log /tmp/build.log; exit 1; }
echo "built in $(( $(date +%s) - T0 )) s" | tee $R/s.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt 2>&1
bench() { # folder, seconds, environment, arguments
  left=$(( 590 - ($(date +%s) - T0) )); t=$2; [ $t -gt $left ] && t=$left
  [ $t -lt 10 ] && { echo "$1 skipped at $(( $(date +%s) - T0 )) s" >> $R/s.txt; return; }
  mkdir -p $R/$1; echo "$3 motifcl-bench ${@:4} --witness-dir $R/$1" > $R/$1/cmd.txt
  env $3 timeout $t /tmp/b/tools/motifcl-bench "${@:4}" --witness-dir $R/$1 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
}
P=MOTIFCL_PIPELINE_CACHE=/tmp/pc
bench train-profile 200 "$P MOTIFCL_LOG=debug" train --profile
grep "pipeline created" $R/train-profile/out.txt | sort -t" " -k9 -n -r > $R/train-profile/pipelines.txt
grep -v "^motifcl debug" $R/train-profile/out.txt > /tmp/o && mv /tmp/o $R/train-profile/out.txt
head -12 $R/train-profile/pipelines.txt
mkdir -p $R/torch; echo "python3 .ab/stories15m_step.py --attn sdpa naive --micro" > $R/torch/cmd.txt
timeout 120 python3 .ab/stories15m_step.py --attn sdpa naive --micro > $R/torch/out.txt 2>&1
echo "torch exit $? at $(( $(date +%s) - T0 )) s" >> $R/s.txt
bench gemm 60 $P gemm
bench train-counter-profile 90 $P train counter=11 --profile
bench decode-7b-q4_0-profile 90 $P decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3 --profile
bench decode-1b-q4_0 60 $P decode shape=1b type=q4_0 prompt=512 tokens=64 seqs=8 repeat=5
bench decode-7b-q4_0-splits4 60 "$P MOTIFCL_ATTENTION_SPLITS=4" decode shape=7b type=q4_0 prompt=512 tokens=32 repeat=1
bench decode-7b-q4_0-splits8 60 "$P MOTIFCL_ATTENTION_SPLITS=8" decode shape=7b type=q4_0 prompt=512 tokens=32 repeat=1
bench decode-7b-q4_0-wg128 60 "$P MOTIFCL_ATTENTION_WG=128" decode shape=7b type=q4_0 prompt=512 tokens=32 repeat=1 --profile
bench decode-7b-q4_0-wg256 60 "$P MOTIFCL_ATTENTION_WG=256" decode shape=7b type=q4_0 prompt=512 tokens=32 repeat=1 --profile
bench decode-7b-q4_K-profile 90 "$P MOTIFCL_PIPELINE_STATS=1 MOTIFCL_LOG=debug" decode shape=7b type=q4_K prompt=64 tokens=16 repeat=3 --profile
bench quant-q4_K 60 "$P MOTIFCL_LOG=debug MOTIFCL_PIPELINE_STATS=1" quant fmt=2 rows=1 gemm=0 n=14336 k=4096
cp .ab/b.sh $R/run.sh; cp .ab/commit.txt $R/commit.txt
cat $R/s.txt
grep -h "tokens/s\|TFLOP\|ms/step\|peak" $R/torch/out.txt | head; grep -h "tokens/s" $R/train-*/out.txt | head
for d in $R/decode-*; do grep -E "one sequence \(|batch \(all|prefill of|of the stream|dispatches per|hit|moved" $d/out.txt; done
cd $OUT && tar czf r.tgz r && rm -rf r
