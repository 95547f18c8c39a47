#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# guide_test.sh PROGRAM EXPECTED [RUNNER...] - run one of docs/guide.md's
# programs (examples/guide/) and check what it did: exit status 0, its
# standard output exactly the file EXPECTED, nothing on standard error (a
# program reports every failure there, as do the sanitizers and Valgrind
# with -q).  RUNNER, when given, runs the program: the cross build's
# emulator, or valgrind with its options.  A program that has not ended
# after 60 s is killed and fails.
set -uo pipefail
prog=$1 expected=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
timeout -k 5 60 "$@" "$prog" >"$tmp/out" 2>"$tmp/err" || status=$?
fail=0
if [ "$status" -ne 0 ]; then
    echo "FAIL: $prog exited with status $status"
    fail=1
fi
if ! diff -u "$expected" "$tmp/out"; then
    echo "FAIL: the output above (+) differs from $expected (-)"
    fail=1
fi
if [ -s "$tmp/err" ]; then
    echo "FAIL: $prog wrote to standard error:"
    cat "$tmp/err"
    fail=1
fi
[ "$fail" -eq 0 ] && echo "ok: $prog printed $expected"
exit "$fail"
