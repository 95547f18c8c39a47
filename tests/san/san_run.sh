#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# san_run.sh clean|report REGEX COMMAND... - run a program of tests/san
# under a sanitizer or Valgrind and judge its output.
#
#   clean   the program must exit 0, and its output must hold no report
#           and no warning of the tool (a line with "Sanitizer", one that
#           starts with Valgrind's "==PID==" or "--PID--", or "warning:" in
#           any case fails it); REGEX must match the output (what the
#           program prints when it got to its end).
#   report  the program must fail (a non-zero exit) with a report that
#           matches REGEX (extended regular expression, over the whole
#           output joined into one line with "|" between lines).
#
# The environment (ASAN_OPTIONS, TSAN_OPTIONS, GORTMAXPROCS...) comes from
# ctest.  On failure the whole output is printed.  A program still running
# after SAN_RUN_LIMIT seconds (default 200, under ctest's 300) gets SIGQUIT,
# so that gort prints every goroutine's stack before it ends: a hang fails
# with the place it waited instead of a bare ctest timeout.
set -u
mode=$1 want=$2
shift 2
cmd="$*"
limit=${SAN_RUN_LIMIT:-200}
out=$(timeout -s QUIT -k 20 "$limit" "$@" 2>&1)
rc=$?
flat=$(printf '%s' "$out" | tr '\n' '|')
fail() {
    printf 'san_run: %s\n--- exit status %d, output of %s ---\n%s\n---\n' \
        "$1" "$rc" "$cmd" "$out"
    exit 1
}
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] ||
    fail "still running after ${limit}s: stopped with SIGQUIT (the goroutine dump, if any, is at the end)"
case $mode in
clean)
    [ "$rc" -eq 0 ] || fail "expected exit status 0"
    if printf '%s\n' "$out" | grep -Eq 'Sanitizer|^==[0-9]+==|^--[0-9]+--' ||
        printf '%s\n' "$out" | grep -iq 'warning:'; then
        fail "the tool reported something"
    fi
    printf '%s' "$flat" | grep -Eq -- "$want" || fail "output lacks /$want/"
    ;;
report)
    [ "$rc" -ne 0 ] || fail "expected a failing exit status"
    printf '%s' "$flat" | grep -Eq -- "$want" || fail "no report matching /$want/"
    ;;
*)
    echo "san_run: unknown mode '$mode'"
    exit 2
    ;;
esac
printf 'san_run: %s as expected (exit status %d)\n' "$mode" "$rc"
