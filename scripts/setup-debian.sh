#!/bin/sh
# Installs everything MotifCL needs to build, test and check itself on Debian 12 (run as
# root, or as a user with sudo). Safe to run again: apt-get skips what is installed.
set -eu
packages="build-essential cmake ninja-build pkg-config git binutils g++
  libvulkan-dev libvulkan1 libvulkan-volk-dev mesa-vulkan-drivers vulkan-validationlayers
  glslang-tools spirv-tools libcmocka-dev abigail-tools strace clang libclang-rt-14-dev
  bsdutils"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "setup: all packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
