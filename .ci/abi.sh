#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/abi.sh - the ABI check of docs/abi.md: builds libgort.so in
# build-abi, compares it with the committed baseline abi/<soname>.abi
# (tools/check_abi.sh), and compares that baseline with the previous
# commit's, so that a baseline rewritten over an incompatible change
# without a new ABI number fails; then the check's selftest shows it
# failing on deliberately changed copies of the tree.
#
#   JOBS=4 .ci/abi.sh        (default 2 build jobs)
#   ABI_BASE_REF=v0.1.0 .ci/abi.sh   (compare the baseline with a release's)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export JOBS=${JOBS:-2}

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v readelf >/dev/null || need+=(binutils)
command -v abidiff >/dev/null || need+=(abigail-tools)
apt_install ${need[@]+"${need[@]}"}

# The baseline this change started from: the previous commit's, or the
# working tree's own at HEAD in a first commit.
base_ref=${ABI_BASE_REF:-}
if [ -z "$base_ref" ]; then
    if git rev-parse --verify -q 'HEAD^^{commit}' >/dev/null 2>&1; then
        base_ref=HEAD^
    else
        base_ref=HEAD
    fi
fi
echo "abi.sh: baseline compared with the one at $base_ref"
tools/check_abi.sh --base-ref "$base_ref"
tools/check_abi.sh --selftest
