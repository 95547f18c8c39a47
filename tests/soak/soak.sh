#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# soak.sh - run the soak program over GOMAXPROCS 1 to 4 (`make soak`).
#
#   tests/soak/soak.sh PROGRAM SECONDS
#
# Twelve runs of SECONDS/12 each (at least 10 s): for each of GOMAXPROCS
# 1, 2, 3 and 4,
#   fixed       -procs N -fixedprocs: N Ps throughout
#   changing    -procs N: starts at N, the gomaxprocs worker moves it
#               among 1..4 every 0.1-2 s
#   randomized  the same under GORTDEBUG=randomize=1 (runnext and the
#               run queue's spill order randomized)
# Each run gets its own seed (SOAK_SEED + its number when SOAK_SEED is
# set, else from the clock), printed before it starts.  Every run goes
# ahead whatever the ones before did; at the end a table lists each run's
# result, with the command that repeats a failed one, and the exit status
# is 1 if any failed.  SOAK_FLAGS adds options to every run (-v for a
# status line every 5 s).
set -u
prog=${1:?usage: soak.sh PROGRAM SECONDS}
total=${2:?usage: soak.sh PROGRAM SECONDS}
each=$((total / 12))
[ "$each" -ge 10 ] || each=10
seed=${SOAK_SEED:-$(date +%s)}
flags=${SOAK_FLAGS:-}
run=0
results=()
failed=0

# one_run NAME ENV ARGS...: one run of the program; its result is kept.
one_run() {
    local name=$1 env=$2
    shift 2
    run=$((run + 1))
    local s=$((seed + run))
    local cmd="$prog -t $each -seed $s $flags $*"
    [ -n "$env" ] && cmd="$env $cmd"
    printf '\n==== soak run %d/12: %s\n==== %s\n' "$run" "$name" "$cmd"
    env $env "$prog" -t "$each" -seed "$s" $flags "$@"
    local status=$?
    if [ "$status" -eq 0 ]; then
        results+=("$(printf '%2d  pass          %s' "$run" "$name")")
    else
        failed=$((failed + 1))
        results+=("$(printf '%2d  FAIL (exit %d) %s\n      %s' "$run" \
            "$status" "$name" "$cmd")")
    fi
}

for procs in 1 2 3 4; do
    one_run "GOMAXPROCS $procs, fixed" "" -procs "$procs" -fixedprocs
    one_run "GOMAXPROCS $procs, changing" "" -procs "$procs"
    one_run "GOMAXPROCS $procs, changing, randomized" GORTDEBUG=randomize=1 \
        -procs "$procs"
done
printf '\n==== soak: %d of 12 runs failed (%d s each)\n' "$failed" "$each"
printf '%s\n' "${results[@]}"
[ "$failed" -eq 0 ]
