#!/bin/sh
# The test command: installs what is needed, builds with warnings as errors, and runs the
# whole suite in strict mode (a device test that no Vulkan device executed fails) under the
# Vulkan validation layer with synchronization validation. Then the host code is rebuilt
# under AddressSanitizer + UndefinedBehaviorSanitizer, by GCC and by clang, and the unit tests
# run again (with the threads suite, also under ThreadSanitizer); and the libFuzzer harnesses
# run for a bounded time.
#   BUILD_DIR (default build-ci), WITNESS_DIR (default $BUILD_DIR/witness)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
sh scripts/setup-debian.sh

build=${BUILD_DIR:-build-ci}
witness=${WITNESS_DIR:-$root/$build/witness}
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMOTIFCL_WERROR=ON -DMOTIFCL_REQUIRE_TOOLS=ON
cmake --build "$build" -j "$jobs"

rm -rf "$witness"
mkdir -p "$witness"
export MOTIFCL_REQUIRE_VULKAN_COMPUTE=1
# The whole suite: a development filter left in the environment would run part of it.
unset MOTIFCL_TEST_FILTER
export MOTIFCL_VALIDATION=sync
export MOTIFCL_WITNESS_DIR="$witness"
log="$build/ctest-strict.log"
# Each test's line as it finishes, on the terminal and in the log. POSIX sh has no pipefail:
# ctest's own status goes through a file, not the pipe's (which would be tee's).
echo "test.sh: the strict suite (4 to 8 minutes on 2 cores), a line as each test finishes:"
rm -f "$build/ctest.status"
{ ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs" 2>&1
  echo $? > "$build/ctest.status"; } | tee "$log"
status=$(cat "$build/ctest.status" 2>/dev/null || echo 1)
[ "$status" -eq 0 ] || { echo "test.sh: strict suite failed (ctest exit $status)"; exit 1; }
# Strict means nothing skipped, and at least one device test really ran.
if grep -q -E '\*\*\*Skipped|Not Run' "$log"; then
  echo "test.sh: a test was skipped in strict mode"; exit 1
fi
passed=$(grep -c -E 'Test +#[0-9]+: .* \.+ +Passed' "$log" || true)
total=$(sed -n 's/.*tests passed, [0-9]* tests failed out of \([0-9]*\).*/\1/p' "$log")
# A device witness names the driver that ran it (unit suites' witnesses have no device).
devices=$(grep -l '"driver_name"' "$witness"/*.json 2>/dev/null | wc -l)
echo "test.sh: $passed of $total tests passed; $devices device witness file(s) in $witness"
[ "$devices" -ge 1 ] || { echo "test.sh: no device test wrote a witness"; exit 1; }
if grep -l '"errors": [1-9]' "$witness"/*.json 2>/dev/null; then
  echo "test.sh: validation errors recorded"; exit 1
fi

# Host code under the sanitizers: unit suites only (the Vulkan driver stack is not built
# with ASan, and its allocations would drown the report).
asan="$build-asan"
cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMOTIFCL_WERROR=ON \
  -DMOTIFCL_SANITIZE=ON -DMOTIFCL_BUILD_TOOLS=OFF -DMOTIFCL_BUILD_EXAMPLES=OFF
cmake --build "$asan" -j "$jobs"
MOTIFCL_WITNESS_DIR= ctest --test-dir "$asan" -L unit --output-on-failure --no-tests=error
# One device suite under ASan as well: threads and lifetimes (objects destroyed after their
# context). The driver is preloaded so that its own allocations, which it keeps to the end,
# stay attributable to it (tests/lsan.supp) after the loader unloads it. The environment adds
# no validation layer; the suite's contexts that ask for it themselves load it, and what it
# leaves behind is suppressed by its name there.
lvp=$(ls /usr/lib/*/libvulkan_lvp.so 2>/dev/null | head -n 1)
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $lvp" MOTIFCL_VALIDATION=0 \
  LSAN_OPTIONS="suppressions=$root/tests/lsan.supp" MOTIFCL_WITNESS_DIR= \
  "$asan/tests/test_threads" > "$asan/test_threads.log" 2>&1 ||
  { tail -n 60 "$asan/test_threads.log"; echo "test.sh: test_threads under ASan failed"; exit 1; }
echo "test.sh: test_threads under ASan: passed"

# The same suite under ThreadSanitizer: contexts created, used and destroyed on several
# threads at once, and one context refused to a second thread (tests/tsan.supp: the driver's
# own threads, which it cannot see synchronise).
tsan="$build-tsan"
cmake -S . -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOTIFCL_WERROR=ON \
  -DMOTIFCL_SANITIZE=thread -DMOTIFCL_BUILD_TOOLS=OFF -DMOTIFCL_BUILD_EXAMPLES=OFF
cmake --build "$tsan" -j "$jobs" --target test_threads
TSAN_OPTIONS="halt_on_error=1 suppressions=$root/tests/tsan.supp" MOTIFCL_WITNESS_DIR= \
  "$tsan/tests/test_threads" > "$tsan/test_threads.log" 2>&1 ||
  { tail -n 60 "$tsan/test_threads.log"; echo "test.sh: test_threads under TSan failed"; exit 1; }
echo "test.sh: test_threads under TSan: passed"

# The unit suites again built by clang under its sanitizers (they check what GCC's do not:
# NULL + 0, among others), then each libFuzzer harness of tests/fuzz for FUZZ_SECONDS
# (default 30) from its seeds; a crash fails here, and libFuzzer names the input it saved.
clang_build="$build-clang"
CC=clang cmake -S . -B "$clang_build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMOTIFCL_WERROR=ON \
  -DMOTIFCL_SANITIZE=ON -DMOTIFCL_FUZZ=ON -DMOTIFCL_BUILD_TOOLS=OFF -DMOTIFCL_BUILD_EXAMPLES=OFF
cmake --build "$clang_build" -j "$jobs"
MOTIFCL_WITNESS_DIR= ctest --test-dir "$clang_build" -L unit --output-on-failure --no-tests=error
for corpus in gguf safetensors tokenizer tokenize checkpoint model model_checkpoint; do
  harness=fuzz_$corpus
  [ "$corpus" = tokenizer ] && harness=fuzz_tokenizer_files
  [ "$corpus" = model ] && harness=fuzz_model_gguf
  found="$clang_build/fuzz-found/$corpus"
  mkdir -p "$found"
  "$clang_build/tests/fuzz/$harness" -max_total_time="${FUZZ_SECONDS:-30}" -print_final_stats=1 \
    -artifact_prefix="$clang_build/fuzz-found/" "$found" "tests/fuzz/corpus/$corpus" \
    > "$clang_build/$harness.log" 2>&1 ||
    { tail -n 40 "$clang_build/$harness.log"; echo "test.sh: $harness failed"; exit 1; }
  echo "test.sh: $harness: $(sed -n 's/stat::number_of_executed_units: *//p' \
    "$clang_build/$harness.log") executions, no crash"
done
echo "test.sh: all passed"
