#!/bin/sh
# The device suites under GPU-assisted validation (MOTIFCL_VALIDATION=gpu: the validation layer
# instruments every shader and reports out-of-bounds accesses, with synchronization validation
# on as well), each suite run directly with its own time limit (the instrumented shaders run
# many times slower than plain ones, past ctest's per-test limit), two at a time; the gates
# labelled device (not suite programs) through ctest.
#   scripts/gpu-av.sh [-B build-dir] [-j jobs] [-R regex] [--polaris]
#     -B       an existing build (default: build); built first if it has no tests
#     -j       suites at once (default 2)
#     -R       only the suites whose name matches the extended regex
#     --polaris  also the suites' runs under MOTIFCL_DEVICE_PROFILE=polaris
#   SUITE_TIMEOUT seconds per suite (default 3600).
# Writes $build/gpu-av/<suite>.log and summary.txt (suite, result, seconds, lines the layer
# logged, which for test_context include its deliberate negative controls). Fails
# when a suite fails, when the layer says GPU-assisted validation is off ("GPU-Assisted ...
# disabled", a setup error), or when test_context's negative control (a write past the end of
# a buffer, which the layer must report) did not run and report: a run that only looks clean
# is not a clean run.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=build jobs=2 filter= polaris=0
while [ $# -gt 0 ]; do
  case "$1" in
    -B) build=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -R) filter=$2; shift 2 ;;
    --polaris) polaris=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "gpu-av.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ ! -x "$build/tests/test_context" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOTIFCL_WERROR=ON
  cmake --build "$build" -j "$jobs"
fi
out="$build/gpu-av"
rm -rf "$out"
mkdir -p "$out"

# The device suites as ctest lists them (label device), polaris runs only when asked.
ctest --test-dir "$build" -N -L device | sed -n 's/^ *Test *#[0-9]*: *//p' > "$out/all.txt"
: > "$out/list.txt"
while read -r name; do
  case "$name" in *.polaris) [ "$polaris" -eq 1 ] || continue ;; esac
  if [ -n "$filter" ] && ! echo "$name" | grep -Eq "$filter"; then continue; fi
  echo "$name" >> "$out/list.txt"
done < "$out/all.txt"
count=$(wc -l < "$out/list.txt")
[ "$count" -gt 0 ] || { echo "gpu-av.sh: no device suite matches" >&2; exit 1; }
echo "gpu-av.sh: $count suite(s) under MOTIFCL_VALIDATION=gpu, $jobs at a time; logs in $out"

export MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=gpu MOTIFCL_LOG=warning
export OUT="$out" BUILD="$build" SUITE_TIMEOUT="${SUITE_TIMEOUT:-3600}"
unset MOTIFCL_TEST_FILTER MOTIFCL_DEVICE_PROFILE
start=$(date +%s)
# One suite: run, time, count the layer's reports; one line of the summary.
xargs -P "$jobs" -I{} sh -c '
  name={}; exe=${name%.polaris}
  if [ "$name" != "$exe" ]; then export MOTIFCL_DEVICE_PROFILE=polaris; fi
  t0=$(date +%s)
  if [ -x "$BUILD/tests/$exe" ]; then set -- "$BUILD/tests/$exe"
  else set -- ctest --test-dir "$BUILD" --output-on-failure -R "^$name\$"; fi
  if timeout "$SUITE_TIMEOUT" "$@" > "$OUT/$name.log" 2>&1; then rc=0; else rc=$?; fi
  t1=$(date +%s)
  reports=$(grep -c "validation: " "$OUT/$name.log" || true)
  result=passed
  [ "$rc" -eq 0 ] || result="failed($rc)"
  [ "$rc" -eq 124 ] && result=timeout
  printf "%-34s %-12s %6ss %4s\n" "$name" "$result" "$((t1 - t0))" "$reports" | tee -a "$OUT/summary.txt"
' < "$out/list.txt"
end=$(date +%s)

sort -o "$out/summary.txt" "$out/summary.txt"
failed=$(grep -vc " passed " "$out/summary.txt" || true)
echo "gpu-av.sh: $count suite(s), $failed not passed, $((end - start)) s in all"
status=0
if grep -l -E "GPU-Assisted.*(disabled|Setup Error)" "$out"/*.log 2>/dev/null; then
  echo "gpu-av.sh: the layer turned GPU-assisted validation off (above)"; status=1
fi
if grep -qx "test_context" "$out/list.txt"; then
  if ! grep -q "overrun past a buffer: [1-9]" "$out/test_context.log"; then
    echo "gpu-av.sh: the negative control (test_context) reported no overrun"; status=1
  fi
else
  echo "gpu-av.sh: note: test_context (the negative control) was not among the suites"
fi
[ "$failed" -eq 0 ] || status=1
exit "$status"
