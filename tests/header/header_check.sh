#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# header_check.sh - the public headers against every compiler and standard
# they promise (docs/cpp.md): gort.h as C99 and C11 with gcc and clang and
# as C++11, C++14, C++17, C++20 and C++23 (c++2b where c++23 is unknown)
# with g++ and clang++; gort.hpp as C++17 and later, and refused with its
# own message as C++14.  Each translation unit (header_use.c,
# header_use_hpp.cpp) is compiled under -Wall -Wextra -Wpedantic -Werror,
# so any warning fails.  layout.c, built and run under each C and C++
# setting, must print the same struct layout everywhere, equal to
# layout.expected on LP64 targets: the ABI.  typed_misuse.c compiles as
# it is and fails to compile with each of its -DMISUSE=N: typed channels
# refuse other element types.  The compilers that are not
# installed are skipped, each named; with none at all the test exits 77.
#
#   header_check.sh <source root>
# Environment: GORT_HEADER_CC and GORT_HEADER_CXX replace the compiler
# lists (default "gcc clang" and "g++ clang++").
set -euo pipefail

root=${1:?usage: header_check.sh <source root>}
here="$root/tests/header"
flags=(-Wall -Wextra -Wpedantic -Werror -I"$root/include")
read -r -a ccs <<<"${GORT_HEADER_CC:-gcc clang}"
read -r -a cxxs <<<"${GORT_HEADER_CXX:-g++ clang++}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail=0
ran=0
layout_ref=""

# check_layout <label> <compiler and flags...>: build layout.c with the
# given compiler, run it and compare its output with the first one seen.
check_layout() {
    local label=$1
    shift
    local out="$tmp/layout.$ran"
    if ! "$@" -o "$tmp/layout" "$here/layout.c" 2>"$tmp/err"; then
        echo "FAIL layout   $label: does not build:"
        cat "$tmp/err"
        fail=1
        return
    fi
    "$tmp/layout" >"$out"
    if [ -z "$layout_ref" ]; then
        layout_ref=$out
        layout_ref_label=$label
    elif ! diff -u "$layout_ref" "$out" >"$tmp/diff"; then
        echo "FAIL layout   $label differs from $layout_ref_label:"
        cat "$tmp/diff"
        fail=1
        return
    fi
    echo "ok   layout   $label"
}

# compile <label> <compiler and flags...> <file>: compile to an object,
# failing on any diagnostic.
compile() {
    local label=$1
    shift
    if "$@" -c -o "$tmp/tu.o" 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
        echo "ok   compile  $label"
    else
        echo "FAIL compile  $label:"
        cat "$tmp/err"
        fail=1
    fi
}

for cc in "${ccs[@]}"; do
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "skip $cc: not installed"
        continue
    fi
    for std in c99 c11; do
        ran=$((ran + 1))
        compile "gort.h $cc -std=$std" "$cc" -std=$std "${flags[@]}" \
            "$here/header_use.c"
        check_layout "$cc -std=$std" "$cc" -std=$std "${flags[@]}"
        # A typed channel: the right types compile, each misuse fails.
        compile "typed channels $cc -std=$std" "$cc" -std=$std "${flags[@]}" \
            "$here/typed_misuse.c"
        for n in 1 2 3 4 5 6; do
            if "$cc" -std=$std "${flags[@]}" -DMISUSE=$n -c -o "$tmp/tu.o" \
                "$here/typed_misuse.c" 2>/dev/null; then
                echo "FAIL refuse   typed channel misuse $n $cc -std=$std: compiled"
                fail=1
            else
                echo "ok   refuse   typed channel misuse $n $cc -std=$std"
            fi
        done
    done
done

for cxx in "${cxxs[@]}"; do
    if ! command -v "$cxx" >/dev/null 2>&1; then
        echo "skip $cxx: not installed"
        continue
    fi
    for std in c++11 c++14 c++17 c++20 c++23; do
        if ! echo "" | "$cxx" -std=$std -x c++ -fsyntax-only - 2>/dev/null; then
            if [ $std = c++23 ]; then
                std=c++2b
            else
                echo "skip $cxx -std=$std: not supported by this compiler"
                continue
            fi
        fi
        ran=$((ran + 1))
        compile "gort.h $cxx -std=$std" "$cxx" -std=$std "${flags[@]}" \
            -x c++ "$here/header_use.c"
        check_layout "$cxx -std=$std" "$cxx" -std=$std "${flags[@]}" -x c++
        case $std in
        c++11 | c++14)
            # gort.hpp refuses these with its own message, not with errors
            # from deep inside it.
            if [ $std = c++14 ]; then
                if "$cxx" -std=$std "${flags[@]}" -c -o "$tmp/tu.o" \
                    "$here/header_use_hpp.cpp" 2>"$tmp/err"; then
                    echo "FAIL refuse   gort.hpp $cxx -std=$std: compiled"
                    fail=1
                elif grep -q "gort.hpp needs C++17 or later" "$tmp/err"; then
                    echo "ok   refuse   gort.hpp $cxx -std=$std"
                else
                    echo "FAIL refuse   gort.hpp $cxx -std=$std: not with its message:"
                    cat "$tmp/err"
                    fail=1
                fi
            fi
            ;;
        *)
            compile "gort.hpp $cxx -std=$std" "$cxx" -std=$std "${flags[@]}" \
                "$here/header_use_hpp.cpp"
            ;;
        esac
    done
done

if [ $ran -eq 0 ]; then
    echo "header_check: none of ${ccs[*]} ${cxxs[*]} is installed" \
         "(Debian: gcc, g++, clang)"
    exit 77
fi

if [ -n "$layout_ref" ] && [ "$(getconf LONG_BIT)" = 64 ]; then
    if diff -u "$here/layout.expected" "$layout_ref" >"$tmp/diff"; then
        echo "ok   layout   equal to layout.expected"
    else
        echo "FAIL layout   differs from layout.expected (the ABI changed):"
        cat "$tmp/diff"
        fail=1
    fi
fi

exit $fail
