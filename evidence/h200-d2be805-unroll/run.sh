#!/bin/bash
# device run 29: float-path quantized GEMM with its inner loop unrolled 4 / 8 / 16 values of K at a time; pipeline times at debug
for f in .gl/*.deb; do dpkg -x $f / ; done; ldconfig
R=$OUT/r; mkdir -p $R
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_GIT_COMMIT=$(cat lab/commit.txt) > /tmp/cfg.log 2>&1 && cmake --build /tmp/b > /tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
git status --short > $R/status.txt
B=/tmp/b/tools/motifcl-bench
export __GL_SHADER_DISK_CACHE=0 MOTIFCL_DISABLE=integer-dot,cooperative-matrix MOTIFCL_LOG=debug
run() { # dir timeout unroll args...
  d=$R/$1; t=$2; u=$3; shift 3; mkdir -p $d
  echo "__GL_SHADER_DISK_CACHE=0 MOTIFCL_DISABLE=integer-dot,cooperative-matrix MOTIFCL_LOG=debug MOTIFCL_QUANT_GEMM_UNROLL=$u motifcl-bench quant rows=2 $* --warmup 0.3" > $d/cmd.txt
  MOTIFCL_QUANT_GEMM_UNROLL=$u timeout $t $B quant rows=2 "$@" --warmup 0.3 --witness-dir $d > $d/out.txt 2>&1; echo "rc $?" >> $d/out.txt
  echo "== $1"; grep -E "rate|gemm_q.*created|^rc" $d/out.txt | sed 's/(measured)//; s/.*kernel gemm_q/  gemm_q/'
}
run u4 100 4
run u8 200 8
run u16 150 16 fmt=1
cd $OUT && tar czf r.tgz r && rm -rf r
