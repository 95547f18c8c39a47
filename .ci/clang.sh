#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/clang.sh - the whole tree (library, tests, benchmarks, examples,
# experiments) built with clang, warnings as errors, and the whole test
# suite run on it.  Builds from nothing in <repo>/build-clang.
#
#   JOBS=4 .ci/clang.sh        (default 2 build and test jobs)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${JOBS:-2}
build=build-clang

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v clang >/dev/null 2>&1 || apt_install clang

rm -rf "$build"
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGORT_WERROR=ON -DGORT_BUILD_TESTS=ON -DGORT_BUILD_BENCH=ON \
    -DGORT_BUILD_EXAMPLES=ON
cmake --build "$build" -j"$jobs"
cd "$build"
ctest --output-on-failure -j"$jobs"
