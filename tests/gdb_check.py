# SPDX-License-Identifier: MIT
# gdb_check.py - run inside gdb (after tools/gort-gdb.py) on test_gdbtarget,
# live or from a core: checks `info goroutines` and `goroutine N bt`
# against what the program wrote to $GORT_GDB_EXPECT (see
# tests/unit/test_gdbtarget.c), then quits gdb with status 0 (all good) or
# 1 (the failures are printed).
#
# Checked:
#   - info goroutines lists exactly the goroutines the program made and did
#     not end (the dead one is absent), each with its "*" mark, status,
#     wait reason and start function;
#   - goroutine N bt, for each: frames numbered from #0 without a gap, the
#     function that blocked (or loops) among them, and the walk reaching
#     the bottom of the goroutine's stack (gort__ctx_trampoline); for the
#     goroutine that never ran, its start function;
#   - goroutine all bt prints every goroutine once, under Go's header;
#   - bad ids are refused with a message;
#   - afterwards the selected thread and its plain backtrace are as before.
#
# With GORT_GDB_STACKLESS=1 (a core from gdb's gcore of a program whose
# stacks have guard regions: gcore cannot copy the stack arenas), the list
# is checked as above, and `goroutine N bt` of each parked goroutine must
# say that its stack is not in the core instead of unwinding it.

import os
import re

import gdb

failures = []


def fail(msg):
    failures.append(msg)
    gdb.write("gdb_check: FAIL: %s\n" % msg)


def run(cmd):
    return gdb.execute(cmd, to_string=True)


def read_expect():
    path = os.environ.get("GORT_GDB_EXPECT", "")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except (IOError, OSError) as e:
        raise gdb.GdbError("gdb_check: cannot read the expectations %r (%s): "
                           "did the program stop where it should?" % (path, e))
    if not lines or lines[-1] != "END":
        raise gdb.GdbError("gdb_check: %s is incomplete" % path)
    want, dead = {}, []
    for line in lines[:-1]:
        f = line.split("|")
        if f[0] == "G":
            want[int(f[1])] = {"mark": "*" if f[2] == "*" else " ",
                               "status": f[3],
                               "reason": "" if f[4] == "-" else f[4],
                               "fn": f[5], "btfn": f[6]}
        elif f[0] == "D":
            dead.append(int(f[1]))
    return want, dead


LINE = re.compile(r"^([* ]) +(\d+)  (\w+)(?: \[([^\]]*)\])? +(\S+)")


def check_list(want, dead):
    out = run("info goroutines")
    gdb.write(out)
    got = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            fail("info goroutines: unparsable line %r" % line)
            continue
        goid = int(m.group(2))
        if goid in got:
            fail("info goroutines: goroutine %d listed twice" % goid)
        got[goid] = {"mark": m.group(1), "status": m.group(3),
                     "reason": m.group(4) or "", "fn": m.group(5)}
    for goid in sorted(set(want) - set(got)):
        fail("info goroutines: goroutine %d is missing" % goid)
    for goid in sorted(set(got) - set(want)):
        fail("info goroutines: goroutine %d should not be listed%s" % (
            goid, " (it is dead)" if goid in dead else ""))
    for goid in sorted(set(want) & set(got)):
        for key in ("mark", "status", "reason", "fn"):
            if got[goid][key] != want[goid][key]:
                fail("info goroutines: goroutine %d: %s is %r, want %r" % (
                    goid, key, got[goid][key], want[goid][key]))


STACKLESS = os.environ.get("GORT_GDB_STACKLESS") == "1"
NOT_IN_CORE = "its stack is not in this core file"


def check_bt(goid, w, out):
    if w["status"] == "runnable" and w["fn"] == w["btfn"] and \
            "has not started" in out:
        if "it will run %s(" % w["fn"] not in out:
            fail("goroutine %d bt: no start function in %r" % (goid, out))
        return
    if STACKLESS:
        if w["mark"] == " " and w["fn"] == w["btfn"] and \
                NOT_IN_CORE not in out:
            fail("goroutine %d bt: does not say %r:\n%s" % (
                goid, NOT_IN_CORE, out))
        return
    frames = [l for l in out.splitlines() if l.startswith("#")]
    levels = [int(re.match(r"#(\d+)", l).group(1)) for l in frames]
    if levels != list(range(len(levels))):
        fail("goroutine %d bt: frames numbered %s" % (goid, levels))
    if not any(re.search(r"\b%s\b" % re.escape(w["btfn"]), l)
               for l in frames):
        fail("goroutine %d bt: %s is not in it:\n%s" % (goid, w["btfn"], out))
    # gdb's own name for the symbol is gort.ctx_trampoline (`info symbol`
    # says so); a backtrace shows that name in programs built with clang,
    # whose assembler describes the labels of src/arch/ in DWARF
    # (DW_TAG_label), and the linker's name in programs built with gcc.
    if not frames or not re.search(r"\bgort(__|\.)ctx_trampoline\b",
                                   frames[-1]):
        fail("goroutine %d bt: does not reach the bottom of the goroutine's "
             "stack (gort__ctx_trampoline):\n%s" % (goid, out))


def check_bts(want):
    for goid in sorted(want):
        out = run("goroutine %d bt" % goid)
        gdb.write("goroutine %d bt:\n%s\n" % (goid, out))
        check_bt(goid, want[goid], out)
    out = run("goroutine all bt")
    headers = re.findall(r"^goroutine (\d+) \[([^\]]*)\]:$", out, re.M)
    ids = sorted(int(h[0]) for h in headers)
    if ids != sorted(want):
        fail("goroutine all bt: headers for %s, want %s" % (ids, sorted(want)))
    for goid, what in headers:
        w = want.get(int(goid))
        if w and what != (w["reason"] or w["status"]):
            fail("goroutine all bt: goroutine %s headed [%s]" % (goid, what))


def check_errors(want):
    bad = max(want) + 1000
    for cmd, msg in (("goroutine %d bt" % bad, "no goroutine %d" % bad),
                     ("goroutine abc bt", "not a goroutine id"),
                     ("goroutine", "usage")):
        try:
            run(cmd)
            fail("%r did not fail" % cmd)
        except gdb.error as e:
            if msg not in str(e):
                fail("%r: message %r, want it to say %r" % (cmd, str(e), msg))


def main():
    want, dead = read_expect()
    thread = gdb.selected_thread().num
    before = run("bt")
    check_list(want, dead)
    check_bts(want)
    check_errors(want)
    if gdb.selected_thread().num != thread:
        fail("the selected thread changed from %d to %d" % (
            thread, gdb.selected_thread().num))
    after = run("bt")
    if after != before:
        fail("the thread's own backtrace changed:\n%s\nthen:\n%s" % (
            before, after))
    if failures:
        gdb.write("gdb_check: %d failures\n" % len(failures))
        gdb.execute("quit 1")
    if STACKLESS:
        gdb.write("gdb_check: %d goroutines listed (their stacks not in the "
                  "core) as expected\n" % len(want))
    else:
        gdb.write("gdb_check: %d goroutines listed and unwound as expected\n"
                  % len(want))


try:
    if gdb.selected_thread() is None:
        raise gdb.GdbError("no process or core file to look at")
    main()
except Exception as e:  # anything unexpected fails the check too
    gdb.write("gdb_check: FAIL: %s: %s\n" % (type(e).__name__, e))
    gdb.execute("quit 1")
