#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""trace_overhead.py - what the execution tracer costs while it is off.

    python3 tests/trace_overhead.py TRACED_BENCH_DIR NOTRACE_BENCH_DIR
        [--bench spawn,chanpingpong] [--n 200000] [--procs 1] [--limit 2.0]
        [--tries 3]

Runs each benchmark twice under `valgrind --tool=callgrind`: built with the
tracer's hooks (TRACED_BENCH_DIR/<name>) and with them compiled out
(GORT_NO_TRACE, NOTRACE_BENCH_DIR/<name>_notrace), tracing off in both.

Instruction counts, not time: they do not depend on the machine's load.
Two figures per benchmark:

  run       the whole run's instructions, traced build over baseline.
            Printed, not checked: which way the two goroutines of
            chanpingpong are coupled (the sender parks and the receiver
            takes the value, or the other way round) flips whenever sysmon
            preempts one of them, the two couplings cost some 3% apart, and
            which one a run settles in depends on where in the loop the
            preemptions land; spawn allocates as many G structs as
            goroutines pile up before sysmon preempts the spawner, which
            varies from run to run.  The last lines show both.
  hooks     the instructions the hooks add: for every function whose
            machine code differs between the two builds (addresses and
            offsets aside), its extra instructions per call in the traced
            build, times the baseline's calls, over the baseline's total.
            Functions whose code is the same cost the same per path, so
            this is the whole difference the hooks make, without the
            coupling's noise.  Checked: at most --limit percent.
            The coupling still reaches it through the functions that
            hold hooks, since their per-call cost depends on which of
            their paths a run takes (one run in a few dozen showed
            gort_chan_recv +19 and gort_chan_send -13 instructions a
            call, where +2 and 0 are usual): a benchmark over the limit
            is measured again, up to --tries times in all, and passes
            if one measurement is within it.

Exits 0 when every benchmark is within the limit, 1 otherwise, 77 (with a
reason) when valgrind or objdump is missing.
"""
import argparse
import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict


def callgrind(binary, args, out):
    cmd = ["valgrind", "--tool=callgrind", "--dump-instr=yes",
           "--callgrind-out-file=" + out, binary] + args
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("trace_overhead: %s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return parse(out, binary)


def parse(path, binary):
    """Exclusive Ir and incoming calls per function (recursion levels
    such as "f'2" merged into f) from a callgrind output file made with
    --dump-instr=yes.

    The exclusive cost is summed by instruction address over each
    function's range in the binary's symbol table, not taken from
    callgrind's per-function figures: those follow callgrind's shadow call
    stack, which a context switch confuses (gort__park returns on another
    goroutine's stack), so they move instructions between functions, and
    differently in two builds.  Addresses are exact.  Callgrind writes
    them relative to the object for some code and absolute for the rest
    (the library's code shows as object "???"), so each object's offset is
    found from its functions: the offset most of them agree on between
    their lowest executed address and their start in the symbol table."""
    ids = {"fn": {}, "ob": {}}
    cost = defaultdict(int)          # (ob, address) -> Ir
    lowest = {}                      # (ob, fn) -> lowest address
    calls = defaultdict(int)
    total = 0
    fn = ob = cfn = None
    after_calls = False
    last = 0

    def name_of(kind, ref):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", ref)
        if not m:
            return ref.split("'")[0]
        if m.group(2):
            ids[kind][m.group(1)] = m.group(2).split("'")[0]
        return ids[kind].get(m.group(1), "?")

    def position(tok):
        """An instruction address: absolute (0x...), relative to the last
        one (+N, -N), or the same (*)."""
        nonlocal last
        if tok.startswith("0x"):
            last = int(tok, 16)
        elif tok.startswith("+"):
            last += int(tok[1:])
        elif tok.startswith("-"):
            last -= int(tok[1:])
        return last

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = name_of("fn", line[3:])
                after_calls = False
            elif line.startswith("ob="):
                ob = name_of("ob", line[3:])
            elif line.startswith("cob="):
                name_of("ob", line[4:])
            elif line.startswith("cfn="):
                cfn = name_of("fn", line[4:])
            elif line.startswith("calls="):
                # A part split off a function ("f.cold", gort's
                # "gort_chan_recv.full") is reached by a jump, which
                # callgrind counts as a call only sometimes: count the
                # calls of whole functions only.
                if "." not in cfn:
                    calls[cfn] += int(line[6:].split()[0])
                after_calls = True
            elif line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
            elif line and (line[0] in "0+-*"):
                parts = line.split()
                if after_calls:
                    # A call's inclusive cost.  Its position is written
                    # relative to the call's own line, which it does not
                    # replace as the base for the next one.
                    after_calls = False
                    continue
                addr = position(parts[0])
                ir = int(parts[-1]) if len(parts) > 1 else 0
                if fn is not None:
                    cost[(ob, addr)] += ir
                    key = (ob, fn)
                    if key not in lowest or addr < lowest[key]:
                        lowest[key] = addr
            elif "=" in line and not line.startswith(("fl=", "fi=", "fe=", "cfi=", "cfl=")):
                after_calls = False
    # Only the binary itself: its path, or "???" for the part callgrind
    # does not place (libraries share crt names such as frame_dummy).
    mine = {o for o in set(ob for ob, _ in cost) if o == "???" or
            (o and os.path.realpath(o) == os.path.realpath(binary))}
    syms = symbols(binary)
    unique = {}
    for lo, hi, name in syms:
        unique[name] = None if name in unique else lo
    votes = defaultdict(lambda: defaultdict(int))
    for (o, name), lo in lowest.items():
        if o in mine and unique.get(name) is not None:
            votes[o][lo - unique[name]] += 1
    offset = {}
    for o, v in votes.items():
        best, n = max(v.items(), key=lambda kv: kv[1])
        if n >= 3 and 2 * n > sum(v.values()):
            offset[o] = best
    if not offset:
        sys.exit("trace_overhead: could not place %s's code in its profile" % binary)
    los = [r[0] for r in syms]
    self_ir = defaultdict(int)
    for (o, addr), ir in cost.items():
        if o not in offset:
            continue  # another object (libc, the dynamic linker)
        a = addr - offset[o]
        k = bisect.bisect_right(los, a) - 1
        if k >= 0 and syms[k][0] <= a < syms[k][1]:
            # Copies of one static name add up, and so do a function's
            # split-off parts ("f.cold", "f.full").
            self_ir[base_name(syms[k][2])] += ir
    return total, self_ir, calls


def base_name(name):
    """The function a symbol belongs to: "f" for "f", "f.cold",
    "f.isra.0" or gort's "f.full" (a general body reached by a jump)."""
    return name.split(".")[0]


def symbols(binary):
    """The binary's functions as (start, end, name), sorted, from its
    symbol table (a static name may appear more than once)."""
    r = subprocess.run(["nm", "-S", "--defined-only", binary],
                       stdout=subprocess.PIPE, universal_newlines=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            lo, size = int(parts[0], 16), int(parts[1], 16)
            if size:
                out.append((lo, lo + size, parts[3]))
    return sorted(out)


def functions(binary):
    """Each function's instructions with numbers (addresses, offsets,
    immediates) blanked, from objdump."""
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                       stdout=subprocess.PIPE, universal_newlines=True, check=True)
    funcs, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            cur = funcs.setdefault(base_name(m.group(1)), [])
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+(.*)$", line)
        if m and cur is not None:
            ins = re.sub(r"<[^>]*>", "", m.group(1))
            ins = re.sub(r"#.*", "", ins)
            ins = re.sub(r"(0x)?[0-9a-f]+\b", "N", ins)
            cur.append(ins.strip())
    return funcs


def measure(name, traced, base, args, limit):
    tmp = tempfile.mkdtemp(prefix="gort-overhead-")
    try:
        tt, tself, tcalls = callgrind(traced, args, os.path.join(tmp, "t"))
        bt, bself, bcalls = callgrind(base, args, os.path.join(tmp, "b"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tf, bf = functions(traced), functions(base)
    changed = [f for f in bself if f in tf and f in bf and tf[f] != bf[f]]
    extra, rows = 0.0, []
    for f in changed:
        if bcalls[f] == 0 or tcalls[f] == 0:
            continue
        per = tself[f] / tcalls[f] - bself[f] / bcalls[f]
        extra += per * bcalls[f]
        if abs(per * bcalls[f]) > bt * 1e-4:
            rows.append((per * bcalls[f], f, per, bcalls[f]))
    run = 100.0 * (tt - bt) / bt
    hooks = 100.0 * extra / bt
    print("%s %s: baseline %d Ir, traced build %d Ir: run %+.2f%%, hooks %+.2f%% (limit %.1f%%)"
          % (name, " ".join(args), bt, tt, run, hooks, limit))
    for cost, f, per, n in sorted(rows, reverse=True):
        print("    %-28s %+6.2f Ir/call x %d calls" % (f, per, n))
    # What makes the runs differ besides the hooks (see the top).
    for label, calls in (("traced", tcalls), ("baseline", bcalls)):
        print("    %-8s build: G structs allocated %d" % (label, calls["gort__malg"]))
    return hooks <= limit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traced_dir")
    ap.add_argument("notrace_dir")
    ap.add_argument("--bench", default="spawn,chanpingpong")
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--tries", type=int, default=3)
    o = ap.parse_args()
    for tool in ("valgrind", "objdump"):
        if not shutil.which(tool):
            print("trace_overhead: SKIP: %s is not installed" % tool)
            return 77
    ok = True
    for b in o.bench.split(","):
        for attempt in range(o.tries):
            within = measure(b, os.path.join(o.traced_dir, b),
                             os.path.join(o.notrace_dir, b + "_notrace"),
                             ["-procs", str(o.procs), "-n", str(o.n)], o.limit)
            if within:
                break
        ok &= within
    print("trace_overhead: %s" % ("ok" if ok else "FAILED: the hooks cost more than %.1f%%" % o.limit))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
