#!/bin/sh
# Regenerates tests/data/polaris-kernels.txt: the kernel variants the polaris profile chooses
# (what an RX 580 would be given) for the quantized kernels at motifcl-bench's shapes, for
# training the demo's model and the stories15M shape, and for a session's prompt and decode
# steps on the 1B shape in q4_0 with f32 and f16 caches, one sequence and two, and on the
# small mixture with its experts in host memory under an expert cache and resident with its
# router, routing and weighted sum apart. The library's debug log names each pipeline it
# creates; this keeps those lines. The gate gate_polaris_isa compiles every one with RADV's
# compiler for Polaris (tools/motifcl_isa.c). About four minutes on Lavapipe.
#   sh scripts/polaris-kernels.sh [BUILD_DIR]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MOTIFCL_DEVICE_PROFILE=polaris MOTIFCL_LOG=debug
"$build/tools/motifcl-bench" quant --warmup 0 --repeat 1 --witness-dir "$work" \
    >"$work/bench.txt" 2>&1
"$build/examples/train_chars" --steps 1 --log 1 --sample 0 --min-drop -100 \
    --witness "$work/a.json" >"$work/train.txt" 2>&1
"$build/examples/train_chars" --steps 1 --log 1 --sample 0 --min-drop -100 --dim 288 \
    --layers 6 --heads 6 --hidden 768 --seq 256 --batch 16 --witness "$work/b.json" \
    >"$work/train15.txt" 2>&1
for kv in f32 f16; do
    "$build/tools/motifcl-bench" decode shape=1b type=q4_0 prompt=8 tokens=2 seqs=2 kv=$kv \
        dir="$work" --witness-dir "$work" >"$work/decode-$kv.txt" 2>&1
done
# A quarter of moe-small's experts a layer (an expert of both layers is about 1.7 MiB).
"$build/tools/motifcl-bench" decode shape=moe-small type=q4_0 prompt=8 tokens=2 seqs=2 \
    expert_mib=3.5 dir="$work" --witness-dir "$work" >"$work/decode-moe.txt" 2>&1
# Its router, routing and weighted sum as dispatches of their own (a long prompt's).
MOTIFCL_ENGINE_SPLIT_MOE=3 "$build/tools/motifcl-bench" decode shape=moe-small type=q4_0 \
    prompt=8 tokens=2 seqs=2 dir="$work" --witness-dir "$work" >"$work/decode-moe-apart.txt" 2>&1
out="$root/tests/data/polaris-kernels.txt"
{
    echo "# Kernel variants the polaris profile chooses (written by scripts/polaris-kernels.sh;"
    echo "# run it again when a plan or a kernel's constants change): motifcl-bench quant,"
    echo "# train_chars at the demo's shape and at stories15M's, motifcl-bench decode of the 1B"
    echo "# shape (f32 and f16 caches), motifcl-bench decode of moe-small under an expert cache"
    echo "# and resident with MOTIFCL_ENGINE_SPLIT_MOE=3."
    echo "# \"kernel <name> [x=<constants>]\"."
    cat "$work/bench.txt" "$work/train.txt" "$work/train15.txt" "$work/decode-f32.txt" \
        "$work/decode-f16.txt" "$work/decode-moe.txt" "$work/decode-moe-apart.txt" |
        sed -n 's/.*\(kernel [a-z0-9_]* \[x=[0-9,]*\]\): pipeline created.*/\1/p' | sort -u
} >"$out"
echo "$(grep -c '^kernel' "$out") variants -> $out"
