#!/bin/sh
# The demo: installs what is needed, builds MotifCL, shows what the runtime sees on this
# machine's Vulkan device, and runs a kernel on it with its check against the CPU.
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
