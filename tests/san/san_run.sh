#!/usr/bin/env bash
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
# ctest.  On failure the whole output is printed.
set -u
mode=$1 want=$2
shift 2
cmd="$*"
out=$("$@" 2>&1)
rc=$?
flat=$(printf '%s' "$out" | tr '\n' '|')
fail() {
    printf 'san_run: %s\n--- exit status %d, output of %s ---\n%s\n---\n' \
        "$1" "$rc" "$cmd" "$out"
    exit 1
}
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
