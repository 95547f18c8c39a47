#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_abi.sh - holds libgort.so's ABI to the policy of docs/abi.md: the
# public ABI (the exported functions and the public structs of gort.h)
# changes only together with its recorded baseline abi/<soname>.abi, and
# incompatibly only together with the ABI number (GORT_SOVERSION in
# CMakeLists.txt, the N of libgort.so.N).
#
#   tools/check_abi.sh [--lib LIB] [--base-ref REF | --base FILE]
#       Compare the shared library (LIB, or one built now in
#       $ABI_BUILD, default build-abi) with abi/<its soname>.abi using
#       abidiff, changes to types private to src/ left out.  Fails when
#       the public ABI changed and the baseline was not updated, naming
#       the command that updates it; and when the change is incompatible
#       while the soname is still the baseline's, saying to raise
#       GORT_SOVERSION.  Then compares that baseline with the one the
#       change started from (abi/<soname>.abi at git REF, default HEAD,
#       or FILE): a baseline rewritten over an incompatible change without
#       a new soname fails too.
#   tools/check_abi.sh --update
#       Build the library and record its ABI as abi/<soname>.abi,
#       removing the baselines of earlier sonames.
#   tools/check_abi.sh --selftest
#       Build changed copies of the tree and show the check failing on
#       each: an added function (baseline not updated), a grown public
#       struct (gort_mutex) under the same soname, the same with the
#       soname raised but no baseline for it, and a baseline rewritten
#       over the grown struct without a new soname.
#
# A change is compatible when it only adds functions or variables; any
# removal or change of a function, a variable or a public type they reach
# is incompatible (programs allocate gort's public structs themselves).
# Exit 0 when the ABI is as recorded, 1 with the reasons when not, 2 on
# bad usage or a failed build, 77 when abigail-tools (abidw, abidiff) are
# missing or the library is for another architecture than the baseline.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-2}
update_cmd="tools/check_abi.sh --update"

usage() {
    sed -n '/^#   tools/,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
die() { echo "check_abi: $*" >&2; exit 2; }

for tool in abidw abidiff; do
    command -v "$tool" >/dev/null 2>&1 ||
        { echo "SKIP: $tool not found (Debian package abigail-tools)"; exit 77; }
done
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not found (binutils)"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build_lib SRC BUILD: configure SRC's library alone in BUILD and build the
# shared library; prints its path.
build_lib() {
    local src=$1 build=$2
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DGORT_BUILD_TESTS=OFF -DGORT_BUILD_BENCH=OFF \
        -DGORT_BUILD_EXAMPLES=OFF -DGORT_INSTALL=OFF -DGORT_WERROR=OFF \
        >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log" >&2; die "configuring $src failed"; }
    cmake --build "$build" -j "$JOBS" --target gort_shared \
        >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; die "building $src failed"; }
    readlink -f "$build/libgort.so"
}

# dump LIB OUT: LIB's ABI as abidw's XML, in the form the baselines have:
# no library path, file names without directories, no build directory
# (comp-dir-path), so that it does not depend on where the tree and the
# build are.
dump() {
    abidw --no-corpus-path --short-locs --headers-dir "$root/include" \
        --drop-private-types "$1" >"$2.raw" ||
        die "abidw failed on $1"
    sed "s/ comp-dir-path='[^']*'//" "$2.raw" >"$2"
    rm -f -- "$2.raw"
}

soname_of() {
    readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'
}

# classify OLD NEW REPORT: none, compatible or incompatible; abidiff's
# report in REPORT.  Types defined outside include/ (the runtime's own,
# such as the opaque gort_chan's definition) are left out of the comparison.
classify() {
    local rc=0
    abidiff --headers-dir1 "$root/include" --headers-dir2 "$root/include" \
        "$1" "$2" >"$3" 2>&1 || rc=$?
    if [ $((rc & 3)) -ne 0 ]; then
        cat "$3" >&2
        die "abidiff $1 $2 failed (status $rc)"
    fi
    if [ "$rc" -eq 0 ]; then
        echo none
        return
    fi
    if [ $((rc & 8)) -ne 0 ]; then
        echo incompatible
        return
    fi
    # Removed or changed functions and variables, and their symbols.
    local bad
    bad=$(grep -E 'changes summary:' "$3" |
          grep -oE '[0-9]+ (Removed|Changed)' | awk '{s += $1} END {print s + 0}')
    if [ "$bad" -gt 0 ]; then
        echo incompatible
    else
        echo compatible
    fi
}

# check LIB ABI_DIR BASE: the checks above for LIB against ABI_DIR's
# baseline, and of that baseline against BASE (a file, or empty).
check() {
    local lib=$1 abidir=$2 base=$3
    local soname baseline kind
    soname=$(soname_of "$lib")
    [ -n "$soname" ] || die "$lib has no SONAME"
    dump "$lib" "$tmp/current.abi"
    baseline=$abidir/$soname.abi
    if [ ! -f "$baseline" ]; then
        local others
        others=$(cd "$abidir" 2>/dev/null && ls -- *.abi 2>/dev/null | tr '\n' ' ' || true)
        echo "check_abi: FAIL: no ABI baseline for $soname (${baseline#"$root"/})." >&2
        echo "  The ABI number is new: once the library's incompatible change is" >&2
        echo "  complete, record its ABI in the same change with: $update_cmd" >&2
        [ -n "$others" ] && echo "  (it replaces ${others% })" >&2
        return 1
    fi
    local want got
    want=$(sed -n "1s/.*architecture='\([^']*\)'.*/\1/p" "$baseline")
    got=$(sed -n "1s/.*architecture='\([^']*\)'.*/\1/p" "$tmp/current.abi")
    if [ "$want" != "$got" ]; then
        echo "SKIP: the baseline ${baseline#"$root"/} is for $want, $lib for $got"
        return 77
    fi
    kind=$(classify "$baseline" "$tmp/current.abi" "$tmp/report")
    case $kind in
    none) ;;
    compatible)
        cat "$tmp/report" >&2
        echo "check_abi: FAIL: the public ABI of $soname changed compatibly (above)," >&2
        echo "  but ${baseline#"$root"/} was not updated.  Record it in the same change:" >&2
        echo "    $update_cmd" >&2
        return 1 ;;
    incompatible)
        cat "$tmp/report" >&2
        echo "check_abi: FAIL: the public ABI changed incompatibly (above) and the" >&2
        echo "  library is still $soname.  Raise GORT_SOVERSION in CMakeLists.txt" >&2
        echo "  (docs/abi.md), then record the new baseline: $update_cmd" >&2
        return 1 ;;
    esac
    if [ -n "$base" ]; then
        kind=$(classify "$base" "$baseline" "$tmp/report")
        if [ "$kind" = incompatible ]; then
            cat "$tmp/report" >&2
            echo "check_abi: FAIL: ${baseline#"$root"/} was rewritten over an incompatible" >&2
            echo "  change (above) without a new ABI number: restore it, raise" >&2
            echo "  GORT_SOVERSION in CMakeLists.txt (docs/abi.md), then: $update_cmd" >&2
            return 1
        fi
    fi
    echo "check_abi: $soname matches ${baseline#"$root"/}"
}

# base_from_ref REF SONAME: that baseline as committed at REF, in a file
# (printed); nothing when REF has none or this is no git checkout.
base_from_ref() {
    local out=$tmp/base.abi
    if git -C "$root" rev-parse --verify -q "$1^{commit}" >/dev/null 2>&1 &&
       git -C "$root" show "$1:abi/$2.abi" >"$out" 2>/dev/null; then
        echo "$out"
    fi
}

# selftest_case NAME WANT ABI_DIR BASE: run check on the copy's library,
# expecting failure with WANT in its message.
selftest_case() {
    local name=$1 want=$2 abidir=$3 base=$4 rc=0
    check "$tmp/lib" "$abidir" "$base" >"$tmp/out" 2>&1 || rc=$?
    if [ "$rc" -ne 1 ] || ! grep -q -- "$want" "$tmp/out"; then
        cat "$tmp/out" >&2
        echo "check_abi selftest: FAIL: $name: status $rc, want 1 with '$want'" >&2
        exit 1
    fi
    echo "selftest: $name: fails as it should:"
    grep 'check_abi: FAIL' -A3 "$tmp/out" | sed 's/^/    /'
}

selftest() {
    local copy=$tmp/src lib
    mkdir -p "$copy"
    cp -r "$root/CMakeLists.txt" "$root/cmake" "$root/include" "$root/src" "$root/hook" "$copy/"
    # An added function: compatible, but the baseline is not updated.
    cat >>"$copy/src/version.c" <<'C'

GORT_EXTERN int gort_abi_selftest_added(void);
GORT_EXTERN int gort_abi_selftest_added(void) { return 1; }
C
    lib=$(build_lib "$copy" "$tmp/build")
    cp "$lib" "$tmp/lib"
    selftest_case "added function" "changed compatibly" "$root/abi" ""
    # gort_mutex grown by a field: incompatible, same soname.
    cp "$root/src/version.c" "$copy/src/version.c"
    sed -i 's/^\(    uint32_t sema;\)$/\1\n    uint32_t selftest_added;/' "$copy/include/gort.h"
    [ "$(grep -c selftest_added "$copy/include/gort.h")" = 1 ] &&
        grep -B2 selftest_added "$copy/include/gort.h" | grep -q 'int32_t state' ||
        die "selftest: could not add a field to gort_mutex in gort.h"
    lib=$(build_lib "$copy" "$tmp/build")
    cp "$lib" "$tmp/lib"
    selftest_case "grown gort_mutex" "changed incompatibly" "$root/abi" ""
    # The same baseline rewritten over it, the soname unchanged.
    mkdir -p "$tmp/abi"
    dump "$tmp/lib" "$tmp/abi/$(soname_of "$tmp/lib").abi"
    local base
    base=$(ls "$root"/abi/*.abi | head -n 1)
    selftest_case "baseline rewritten" "rewritten over an incompatible" "$tmp/abi" "$base"
    # The soname raised, its baseline not recorded.
    sed -i 's/^set(GORT_SOVERSION \([0-9]*\))/set(GORT_SOVERSION 9\1)/' "$copy/CMakeLists.txt"
    lib=$(build_lib "$copy" "$tmp/build")
    cp "$lib" "$tmp/lib"
    selftest_case "raised soname" "no ABI baseline" "$root/abi" ""
    echo "check_abi selftest passed"
}

mode=check lib="" base="" base_ref=HEAD
while [ $# -gt 0 ]; do
    case $1 in
    --lib) [ $# -ge 2 ] || usage; lib=$2; shift 2 ;;
    --base) [ $# -ge 2 ] || usage; base=$2; base_ref=""; shift 2 ;;
    --base-ref) [ $# -ge 2 ] || usage; base_ref=$2; shift 2 ;;
    --update) mode=update; shift ;;
    --selftest) mode=selftest; shift ;;
    -h|--help) usage ;;
    *) echo "check_abi: unknown argument '$1'" >&2; usage ;;
    esac
done

case $mode in
selftest)
    selftest ;;
update)
    lib=$(build_lib "$root" "${ABI_BUILD:-$root/build-abi}")
    soname=$(soname_of "$lib")
    mkdir -p "$root/abi"
    dump "$lib" "$root/abi/$soname.abi.new"
    for f in "$root"/abi/*.abi; do
        [ -e "$f" ] && [ "$f" != "$root/abi/$soname.abi" ] &&
            { rm -- "$f"; echo "check_abi: removed ${f#"$root"/}"; }
    done
    mv "$root/abi/$soname.abi.new" "$root/abi/$soname.abi"
    echo "check_abi: recorded abi/$soname.abi" ;;
check)
    if [ -z "$lib" ]; then
        lib=$(build_lib "$root" "${ABI_BUILD:-$root/build-abi}")
    fi
    [ -f "$lib" ] || die "no library at $lib"
    if [ -n "$base_ref" ]; then
        base=$(base_from_ref "$base_ref" "$(soname_of "$lib")")
    fi
    rc=0
    check "$lib" "$root/abi" "$base" || rc=$?
    exit "$rc" ;;
esac
