#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gdb_test.sh MODE TARGET SRC_DIR [GDB] - tools/gort-gdb.py against
# test_gdbtarget (tests/unit/test_gdbtarget.c), checked by tests/gdb_check.py.
#
#   live     gdb runs the program until it stops itself, then checks
#            `info goroutines` and `goroutine N bt` on the live process
#   core     the same process saved with gdb's generate-core-file, then
#            checked from the core in a fresh gdb
#   attach   the program stops itself (SIGSTOP) outside gdb; gdb -p
#            attaches and checks
#   gcore    the program stops itself (SIGSTOP) outside gdb under the
#            default stack guards; gdb's gcore script saves it; checked
#            from that core.  Where the guards are Linux guard regions,
#            gcore cannot copy the stack arenas (see the README): every
#            goroutine must still be listed, and `goroutine N bt` of a
#            parked one must say that its stack is not in the core
#            (GORT_GDB_STACKLESS, tests/gdb_check.py)
#   abort    the program aborts and its core is written by the kernel, or,
#            under an emulator (GORT_TEST_EMULATOR, the aarch64 build under
#            qemu-user), by qemu itself; checked from that core.  The core
#            is looked for where /proc/sys/kernel/core_pattern says
#
# Exits 0 when the check passes, 1 when it fails, 77 (ctest's skip) with the
# reason on stdout when the mode cannot run here.  The core mode uses
# GORTDEBUG=stackguard=mprotect, so that gdb's core holds the stacks too;
# kernel and qemu cores need nothing.
set -euo pipefail
set +m # no job control: a stopped background program stays stopped

mode=$1 target=$2 src=$3 gdb=${4:-gdb}
skip() { echo "gdb_test: $mode skipped: $*"; exit 77; }

command -v "$gdb" >/dev/null 2>&1 || skip "$gdb is not installed"
"$gdb" -nx -batch -ex 'python import gdb.unwinder' >/dev/null 2>&1 ||
    skip "$gdb has no Python support (gdb.unwinder)"
# tools/gort-gdb.py reads gort's structures by name from the debug
# information.  The top CMakeLists.txt compiles with -g, but a toolchain or
# a distribution's flags may take it away again (a -g0 after it, a
# stripped link): then there is nothing to check.  Asked of gdb itself, so
# that a separate debug file that gdb would find counts.
gtype=$("$gdb" -nx -batch -ex 'ptype struct g' "$target" 2>&1 || true)
if [[ $gtype == *"No struct type named g"* ]]; then
    skip "$target has no debug information for gort's structures (built" \
        "without -g, e.g. a -g0 after it or a stripped link);" \
        "tools/gort-gdb.py needs it"
fi

tmp=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"

export GORT_GDB_EXPECT=$tmp/expect
# One malloc arena: the cores stay around 10 MB instead of 200.
export MALLOC_ARENA_MAX=1
gdbx=("$gdb" -nx -batch -ex 'set pagination off' -ex 'set confirm off')
# The target's libraries, for a cross build's core (GORT_GDB_SYSROOT).
if [ -n "${GORT_GDB_SYSROOT:-}" ]; then
    gdbx+=(-ex "set sysroot $GORT_GDB_SYSROOT")
fi
gdbx+=(-x "$src/tools/gort-gdb.py")

# check GDB-OPTIONS... -- PROGRAM [CORE]: run gdb with the check; pass
# when it printed its success line.
check() {
    local opts=() out=$tmp/check.txt rc=0
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    timeout 240 "${gdbx[@]}" "${opts[@]}" -x "$src/tests/gdb_check.py" "$@" \
        >"$out" 2>&1 </dev/null || rc=$?
    cat "$out"
    if [ "$rc" -ne 0 ] || ! grep -q '^gdb_check: .* as expected$' "$out"; then
        echo "gdb_test: $mode failed (gdb exit status $rc)"
        exit 1
    fi
    echo "gdb_test: $mode passed"
}

# Wait (60 s at most) until the program wrote its expectations and, for a
# live pid, stopped.
await_stopped() {
    local i
    for i in $(seq 600); do
        if grep -qx END expect 2>/dev/null; then
            [ -z "${1:-}" ] && return 0
            [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ] &&
                return 0
        fi
        kill -0 "${1:-$$}" 2>/dev/null || break
        sleep 0.1
    done
    echo "gdb_test: $mode: the program did not stop as expected"
    cat prog.txt 2>/dev/null || true
    exit 1
}

# core_glob PATTERN PID: where the kernel writes the core of process PID
# (in this directory, its working directory) by core_pattern PATTERN, as a
# shell glob: %p is the PID, %% a percent sign, every other specifier (the
# time, host name, program name...) matches anything; core_uses_pid adds
# .PID to a pattern without %p.
core_glob() {
    local pattern=$1 p=$2 glob="" i c
    for ((i = 0; i < ${#pattern}; i++)); do
        c=${pattern:i:1}
        if [ "$c" = % ] && [ $((i + 1)) -lt ${#pattern} ]; then
            i=$((i + 1))
            case ${pattern:i:1} in
            p) glob+=$p ;;
            %) glob+=% ;;
            *) glob+='*' ;;
            esac
        else
            glob+=$c
        fi
    done
    if [[ $pattern != *%p* ]] &&
       [ "$(cat /proc/sys/kernel/core_uses_pid 2>/dev/null)" = 1 ]; then
        glob+=".$p"
    fi
    echo "$glob"
}

emu=${GORT_TEST_EMULATOR:-}
if [ -n "${GORT_GDB_SANITIZE:-}" ]; then
    case $mode in
    core | gcore | abort)
        skip "a core of a $GORT_GDB_SANITIZE-sanitizer build holds the" \
             "sanitizer's shadow mappings (terabytes)" ;;
    esac
fi
if [ -n "$emu" ] && [ "$mode" != abort ]; then
    skip "under an emulator ($emu) gdb cannot run or attach to the" \
         "program natively; the abort mode reads qemu's core instead"
fi

case $mode in
live)
    export GORT_GDB_STOP=trap
    check -ex run -- --args "$target" target
    ;;
core)
    GORT_GDB_STOP=trap GORTDEBUG=stackguard=mprotect timeout 300 \
        "${gdbx[@]}" -ex run -ex "generate-core-file $tmp/core" \
        --args "$target" target >gen.txt 2>&1 </dev/null || true
    if [ ! -s core ]; then
        cat gen.txt
        echo "gdb_test: core: gdb made no core file"
        exit 1
    fi
    check -- "$target" core
    ;;
gcore)
    gcore=$(dirname "$(command -v "$gdb")")/gcore
    [ -x "$gcore" ] || gcore=$(command -v gcore || true)
    [ -n "$gcore" ] || skip "gdb's gcore script is not installed"
    GORT_GDB_STOP=stop GORTDEBUG= "$target" target >prog.txt 2>&1 \
        </dev/null &
    pid=$!
    await_stopped "$pid"
    "$gcore" -o "$tmp/core" "$pid" >gcore.txt 2>&1 || true
    if grep -q 'ptrace: Operation not permitted' gcore.txt; then
        cat gcore.txt
        skip "this user may not attach to a process (ptrace restricted)"
    fi
    if [ ! -s "core.$pid" ]; then
        cat gcore.txt
        echo "gdb_test: gcore: gcore made no core file"
        exit 1
    fi
    core=core.$pid
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
    # What gcore could not copy, but for the vsyscall page (never
    # readable): the stack arenas, when their guards are guard regions.
    stackless=0
    if grep 'Memory read failed' gcore.txt |
        grep -v 'at 0xffffffffff600000\.'; then
        stackless=1
    fi
    GORT_GDB_STACKLESS=$stackless check -- "$target" "$core"
    ;;
attach)
    GORT_GDB_STOP=stop "$target" target >prog.txt 2>&1 </dev/null &
    pid=$!
    await_stopped "$pid"
    if ! "$gdb" -nx -batch -p "$pid" -ex detach >attach.txt 2>&1 ||
       grep -q 'ptrace: Operation not permitted' attach.txt; then
        cat attach.txt
        skip "this user may not attach to a process (ptrace restricted)"
    fi
    check -p "$pid" --
    ;;
abort)
    ulimit -c unlimited 2>/dev/null || skip "cannot raise the core size limit"
    if [ -z "$emu" ]; then
        pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo '?')
        case $pattern in
        '|'*) skip "the kernel's core_pattern '$pattern' pipes cores to a" \
                   "program instead of writing a file" ;;
        esac
    fi
    # shellcheck disable=SC2086 # the emulator command is words
    GORT_GDB_STOP=abort $emu "$target" target >prog.txt 2>&1 </dev/null &
    apid=$!
    wait "$apid" || true
    await_stopped
    # qemu names its core qemu_<program>_<date>_<pid>.core (the kernel may
    # write qemu's own core beside it, named by core_pattern).
    if [ -n "$emu" ]; then
        core=$(ls -t | grep '^qemu_.*\.core$' | head -n1 || true)
        [ -n "$core" ] || skip "no core file was written (the emulator's" \
                               "policy)"
    else
        glob=$(core_glob "$pattern" "$apid")
        # shellcheck disable=SC2086 # the glob is to be expanded
        core=$(ls -td $glob 2>/dev/null | head -n1 || true)
        [ -n "$core" ] && [ -f "$core" ] ||
            skip "no core file was written where the kernel's core_pattern" \
                 "'$pattern' says ($glob)"
    fi
    check -- "$target" "$core"
    ;;
*)
    echo "usage: gdb_test.sh live|core|gcore|attach|abort TARGET SRC_DIR [GDB]" >&2
    exit 2
    ;;
esac
