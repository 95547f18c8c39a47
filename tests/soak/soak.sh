#!/usr/bin/env bash
# soak.sh - run the soak program over GOMAXPROCS 1 to 4 (`make soak`).
#
#   tests/soak/soak.sh PROGRAM SECONDS
#
# Twelve runs of SECONDS/12 each (at least 10 s): for each of GOMAXPROCS
# 1, 2, 3 and 4,
#   fixed       -procs N -fixedprocs: N Ps throughout
#   changing    -procs N: starts at N, the gomaxprocs worker moves it
#               among 1..4 every 0.1-2 s
#   randomize   the same under GORTDEBUG=randomize=1 (runnext and the
#               run queue's spill order randomized)
# Each run gets its own seed (from SOAK_SEED when set, else the clock),
# printed before it starts.  The first failing run stops the loop; its
# output says which worker failed and how, and the command that repeats
# it.  SOAK_FLAGS adds options to every run (for example -v).
set -u
prog=${1:?usage: soak.sh PROGRAM SECONDS}
total=${2:?usage: soak.sh PROGRAM SECONDS}
each=$((total / 12))
[ "$each" -ge 10 ] || each=10
seed=${SOAK_SEED:-$(date +%s)}
flags=${SOAK_FLAGS:-}
run=0

# one_run NAME ENV ARGS...: run the program, stop the loop on failure.
one_run() {
    local name=$1 env=$2
    shift 2
    run=$((run + 1))
    local s=$((seed + run))
    local cmd="$prog -t $each -seed $s $flags $*"
    [ -n "$env" ] && cmd="$env $cmd"
    printf '\n==== soak run %d/12: %s: %s\n' "$run" "$name" "$cmd"
    if ! env $env "$prog" -t "$each" -seed "$s" $flags "$@"; then
        printf '\n==== soak run %d/12 (%s) FAILED; to repeat it:\n    %s\n' \
            "$run" "$name" "$cmd"
        exit 1
    fi
}

for procs in 1 2 3 4; do
    one_run "GOMAXPROCS $procs, fixed" "" -procs "$procs" -fixedprocs
    one_run "GOMAXPROCS $procs, changing" "" -procs "$procs"
    one_run "GOMAXPROCS $procs, changing, randomized" GORTDEBUG=randomize=1 \
        -procs "$procs"
done
printf '\n==== soak: all 12 runs passed (%d s each)\n' "$each"
