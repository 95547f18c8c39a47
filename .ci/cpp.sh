#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/cpp.sh - gort for C++: the public headers against gcc, clang, g++ and
# clang++ in every C and C++ standard they promise (header.check), and the
# C++ interface's tests (test_cpp.*) built once with g++ and once with
# clang++.  Installs g++ and clang (Debian packages) when missing.  Builds
# in <repo>/build-cpp/ci-gcc and <repo>/build-cpp/ci-clang.
#
#   JOBS=4 .ci/cpp.sh        (default 2 build and test jobs)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${JOBS:-2}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need=()
command -v g++ >/dev/null 2>&1 || need+=(g++)
{ command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; } ||
    need+=(clang)
apt_install ${need[@]+"${need[@]}"}

# build <dir> <C compiler> <C++ compiler>
build() {
    local dir=$1 cc=$2 cxx=$3
    cmake -S "$root" -B "$dir" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_CXX_COMPILER="$cxx" -DGORT_BUILD_BENCH=OFF \
        -DGORT_BUILD_EXAMPLES=OFF
    cmake --build "$dir" -j"$jobs" --target test_cpp
}

build "$root/build-cpp/ci-gcc" gcc g++
build "$root/build-cpp/ci-clang" clang clang++

# The header check runs every compiler itself, so once, directly: its
# skip (exit 77, no compiler found) fails here as any other non-zero exit.
bash "$root/tests/header/header_check.sh" "$root"
(cd "$root/build-cpp/ci-gcc" &&
    ctest --output-on-failure -j"$jobs" -R '^test_cpp\.' --no-tests=error)
(cd "$root/build-cpp/ci-clang" &&
    ctest --output-on-failure -j"$jobs" -R '^test_cpp\.' --no-tests=error)
