#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/aarch64.sh - cross-build gort for AArch64 and run its tests under
# qemu-user.  Run from anywhere; builds in <repo>/build-aarch64.
#
#   JOBS=4 .ci/aarch64.sh        (default 2 build and test jobs)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-aarch64"
jobs=${JOBS:-2}
sysroot=/usr/aarch64-linux-gnu

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 ||
   ! command -v qemu-aarch64 >/dev/null 2>&1; then
    apt_install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
fi

# Test binaries that re-execute themselves (death tests) are started by the
# kernel, not by ctest's emulator: that needs a binfmt_misc registration for
# AArch64 (package qemu-user-binfmt), and this prefix for the loader.
export QEMU_LD_PREFIX="$sysroot"
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    echo "aarch64.sh: warning: no binfmt_misc entry for qemu-aarch64;" \
         "tests that re-execute themselves will fail" >&2
fi

cmake -S "$root" -B "$build" \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGORT_BUILD_TESTS=ON \
    -DGORT_BUILD_EXAMPLES=ON \
    -DGORT_BUILD_BENCH=OFF
cmake --build "$build" -j"$jobs"
cd "$build"
ctest --output-on-failure -j"$jobs"
