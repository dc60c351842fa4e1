#!/bin/sh
# For the owner of a real GPU (an RX 580 first) on Debian 12 or Ubuntu 24.04 or newer: installs
# what is needed (Mesa's RADV driver for AMD cards among it), builds, picks the GPU over
# Lavapipe, runs the whole suite strict under synchronization validation, then the benchmarks
# (the streaming limit first, every figure against it; a mixture of experts four times the
# card's memory where the host has 30 GiB free), all on the card's own traits (no
# device profile) with witnesses written, and packs witnesses, logs and what the runtime saw
# of the device into one archive, build-owner/motifcl-<device>-<commit>.tar.gz, for sending
# back. The archive names the device, its driver, the OS release and the kernel; paths under
# the source, build and home folders, the host name and the user name are scrubbed from it.
#
#   sh scripts/owner-run.sh [options]
#     --device D      MOTIFCL_DEVICE: index or part of the name (default: the first GPU)
#     --list          list the Vulkan devices and exit
#     --allow-cpu     run on a CPU device (Lavapipe) when no GPU is visible (a test of this
#                     script, not evidence of a GPU)
#     --quick         a reduced run: four device suites and the stream benchmark only
#     --tests REGEX   only the ctest tests matching REGEX
#     --no-bench      no benchmarks
#     --no-install    do not call apt-get (what is missing then fails the build)
#     --build DIR     build folder (default build-owner)
#     -j N            parallel build and test jobs (default: the number of cores)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { echo "owner-run: $*"; }
die() { echo "owner-run: $1" >&2; exit "${2:-1}"; }

device= list=0 allow_cpu=0 quick=0 tests= bench=1 install=1 build=build-owner
jobs=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
  case "$1" in
    --device) [ $# -ge 2 ] || die "--device needs a value" 2; device=$2; shift 2 ;;
    --list) list=1; shift ;;
    --allow-cpu) allow_cpu=1; shift ;;
    --quick) quick=1; shift ;;
    --tests) [ $# -ge 2 ] || die "--tests needs a value" 2; tests=$2; shift 2 ;;
    --no-bench) bench=0; shift ;;
    --no-install) install=0; shift ;;
    --build) [ $# -ge 2 ] || die "--build needs a value" 2; build=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || die "-j needs a value" 2; jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" 2 ;;
  esac
done
case "$jobs" in ''|*[!0-9]*|0) die "-j takes a positive number, not '$jobs'" 2 ;; esac
t0=$(date +%s)

# --- What the build and the suite need (a subset of scripts/setup-debian.sh: no sanitizer or
# fuzzing toolchain); mesa-vulkan-drivers holds RADV, the Vulkan driver of AMD cards.
packages="build-essential cmake ninja-build pkg-config git binutils g++
  libvulkan-dev libvulkan1 libvulkan-volk-dev mesa-vulkan-drivers vulkan-validationlayers
  glslang-tools spirv-tools libcmocka-dev abigail-tools strace"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ] && [ "$install" -eq 0 ]; then
  # What was installed another way (a source build, another distribution's packages) is
  # not in dpkg's list: the build says what is really missing.
  say "not installed as Debian packages:$missing (--no-install: the build says what is missing)"
elif [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  say "installing$missing"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing \
    || die "apt-get could not install$missing (libvulkan-volk-dev needs Debian 12 or Ubuntu 24.04 or newer)"
fi

# --- Build (no warnings as errors: another compiler's new warnings are not this run's point).
mkdir -p "$build"
build=$(cd "$build" && pwd)
log="$build/owner-run"
rm -rf "$log"
mkdir -p "$log/logs" "$log/device" "$log/witness/tests" "$log/witness/bench"
say "building in $build ($jobs jobs)"
if ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" -j "$jobs"; } > "$log/logs/build.log" 2>&1; then
  tail -n 30 "$log/logs/build.log"
  die "the build failed (log: $log/logs/build.log)"
fi
info="$build/tools/motifcl-info"

# --- The devices: motifcl-info on each index in turn, until one does not exist.
unset MOTIFCL_DEVICE_PROFILE MOTIFCL_DISABLE MOTIFCL_FORCE MOTIFCL_TEST_FILTER MOTIFCL_TRANSFER
field() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -n 1; }  # a string of the JSON
: > "$log/device/devices.txt"
i=0
while [ "$i" -lt 16 ]; do
  MOTIFCL_DEVICE=$i "$info" --json > "$log/device/probe.json" 2>/dev/null || break
  name=$(field device < "$log/device/probe.json")
  type=$(field device_type < "$log/device/probe.json")
  printf '%s\t%s\t%s\n' "$i" "$type" "$name" >> "$log/device/devices.txt"
  i=$((i + 1))
done
rm -f "$log/device/probe.json"
[ -s "$log/device/devices.txt" ] || die "no Vulkan device at all (is a Vulkan driver installed? MOTIFCL_LOG=info $info says more)"
say "Vulkan devices (index, type, name):"
sed 's/^/  /' "$log/device/devices.txt"
[ "$list" -eq 0 ] || exit 0

# The chosen device: --device by index or name, else the first discrete, integrated or
# virtual GPU. A CPU device is refused unless --allow-cpu.
if [ -n "$device" ]; then
  MOTIFCL_DEVICE=$device "$info" --json > "$log/device/motifcl-info.json" 2>/dev/null ||
    die "no device matches --device '$device' (see the list above)"
else
  for want in discrete integrated virtual cpu; do
    device=$(awk -F '\t' -v t="$want" '$2 == t { print $1; exit }' "$log/device/devices.txt")
    [ -z "$device" ] || break
  done
  MOTIFCL_DEVICE=$device "$info" --json > "$log/device/motifcl-info.json"
fi
export MOTIFCL_DEVICE="$device"
name=$(field device < "$log/device/motifcl-info.json")
type=$(field device_type < "$log/device/motifcl-info.json")
if [ "$type" = cpu ] && [ "$allow_cpu" -eq 0 ]; then
  die "only a CPU device would run this ($name): that is Lavapipe, not your GPU.
  Is the GPU's Vulkan driver installed (AMD: mesa-vulkan-drivers, which holds RADV)? Does
  your user have the GPU's device files (groups render and video: 'sudo usermod -aG
  render,video \$USER', then log in again)? 'MOTIFCL_LOG=info $info' says why a device is
  skipped. --allow-cpu runs on the CPU device anyway (a test of this script only)." 3
fi
MOTIFCL_DEVICE=$device "$info" > "$log/device/motifcl-info.txt" 2>&1
say "device $device: $name ($type)"

# --- The suite, strict, under synchronization validation, on the card's own traits (the
# ctest runs named *.polaris add the polaris profile themselves).
regex=$tests
[ "$quick" -eq 0 ] || [ -n "$regex" ] ||
  regex='^(test_context|test_allocator|test_ops_add|test_ops_elementwise)$'
set -- --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs"
[ -z "$regex" ] || set -- "$@" -R "$regex"
say "the suite, strict, MOTIFCL_VALIDATION=sync${regex:+ (tests matching $regex)}"
s0=$(date +%s)
if MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_VALIDATION=sync \
   MOTIFCL_WITNESS_DIR="$log/witness/tests" ctest "$@" > "$log/logs/ctest.log" 2>&1; then
  suite=passed
else
  suite="failed (exit $?)"
fi
suite_s=$(($(date +%s) - s0))
tail -n 4 "$log/logs/ctest.log" | sed 's/^/  /'
say "suite $suite in $suite_s s"

# --- The benchmarks, no validation: the streaming limit first (every figure is read
# against it), then the rest; each with a time limit so that one stuck run does not stop them.
bench_status=""
run_bench() { # label, arguments
  label=$1; shift
  b0=$(date +%s)
  if MOTIFCL_WITNESS_DIR="$log/witness/bench" timeout 1800 "$build/tools/motifcl-bench" "$@" \
     > "$log/logs/bench-$label.txt" 2>&1; then rc=0; else rc=$?; fi
  line="bench $label: exit $rc in $(($(date +%s) - b0)) s (motifcl-bench $*)"
  say "$line"
  bench_status="$bench_status$line
"
}
if [ "$bench" -eq 1 ]; then
  if [ "$quick" -eq 1 ]; then
    run_bench stream stream
  else
    run_bench all all
    run_bench quant quant
    run_bench transfer transfer
    run_bench replay replay
    run_bench decode-1b-q4_0 decode shape=1b type=q4_0 prompt=512 tokens=64 repeat=3
    run_bench decode-7b-q4_0 decode shape=7b type=q4_0 prompt=512 tokens=64 repeat=3
    # The Mixtral-8x7B shape with its experts (26 GB in q4_0) in host memory and as many of
    # them cached on the card as its memory holds (expert_mib=auto: 2 of 8 a layer on an
    # 8 GB card): what the card makes of a model four times its memory, over its own bus.
    # Only where the host has the memory to spare.
    avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo 2>/dev/null || echo 0)
    if [ "${avail_kib:-0}" -ge $((30 * 1024 * 1024)) ]; then
      run_bench decode-mixtral-q4_0-experts decode shape=mixtral type=q4_0 prompt=64 \
        tokens=32 repeat=3 expert_mib=auto
    else
      line="bench decode-mixtral-q4_0-experts: skipped, $((${avail_kib:-0} / 1048576)) GiB"
      line="$line of host memory available where 30 are needed"
      say "$line"
      bench_status="$bench_status$line
"
    fi
    run_bench train train
  fi
fi

# --- The archive: what ran, scrubbed of paths, host and user names.
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
{
  echo "commit $commit"
  echo "device $device: $name ($type)"
  echo "os $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")"
  echo "kernel $(uname -r)"
  echo "options quick=$quick tests=${tests:-all} bench=$bench allow_cpu=$allow_cpu jobs=$jobs"
  echo "suite $suite in $suite_s s"
  printf '%s' "$bench_status"
  echo "total $(($(date +%s) - t0)) s"
} > "$log/summary.txt"

# Scrub: the source and build folders become <src> and <build>, the home folder ~, then the
# host name and the user name, as whole words of 3 characters or more (so that a short name
# does not mangle other words: a host "vm" is in "llvmpipe"), <host> and <user>.
host=$(hostname 2>/dev/null || cat /etc/hostname 2>/dev/null || echo)
user=$(id -un 2>/dev/null || echo)
sed_expr() { printf '%s' "$1" | sed 's/[][\/.^$*&|]/\\&/g'; }
script="s|$(sed_expr "$build")|<build>|g; s|$(sed_expr "$root")|<src>|g"
[ -z "${HOME:-}" ] || [ "$HOME" = / ] || script="$script; s|$(sed_expr "$HOME")|~|g"
[ "${#host}" -lt 3 ] || script="$script; s|\\b$(sed_expr "$host")\\b|<host>|g"
[ "${#user}" -lt 3 ] || script="$script; s|\\b$(sed_expr "$user")\\b|<user>|g"
find "$log" -type f | while read -r f; do sed -i "$script" "$f"; done
leak=""
for word in "$root" "$build" ${HOME:+"$HOME"}; do
  [ "$word" = / ] || ! grep -rlF "$word" "$log" > /dev/null 2>&1 || leak="$leak $word"
done
[ -z "$leak" ] || die "the scrub left$leak in $log; nothing packed"

slug=$(printf '%s' "$name" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//' | cut -c1-48)
archive="$build/motifcl-$slug-$commit.tar.gz"
tar -C "$build" -czf "$archive" --transform "s|^owner-run|motifcl-$slug-$commit|" owner-run
say "archive: $archive ($(du -k "$archive" | cut -f1) KiB): send this file back"
say "done in $(($(date +%s) - t0)) s"
case "$suite" in passed) ;; *) exit 1 ;; esac
