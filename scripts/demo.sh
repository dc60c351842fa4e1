#!/bin/sh
# The demo: installs what is needed, builds MotifCL, shows what the runtime sees on this
# machine's Vulkan device, runs a kernel on it with its check against the CPU, then trains a
# small character-level GPT on the tiny Shakespeare text (entirely on the GPU; about two
# minutes on Lavapipe, seconds on a GPU), prints its progress and a sample, and fails if the
# validation loss does not drop by at least 1 nat.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/setup-debian.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOTIFCL_BUILD_TESTS=OFF
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
"$build/tools/motifcl-info"
echo
"$build/examples/hello_add"
echo
"$build/examples/train_chars" --steps 120 --log 20 --sample 300 --min-drop 1.0 \
    --witness "$build/train_chars.json"
