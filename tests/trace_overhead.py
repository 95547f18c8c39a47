#!/usr/bin/env python3
"""trace_overhead.py - what the execution tracer costs while it is off.

    python3 tests/trace_overhead.py TRACED_BENCH_DIR NOTRACE_BENCH_DIR
        [--bench spawn,chanpingpong] [--n 200000] [--procs 1] [--limit 2.0]

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

Exits 0 when every benchmark is within the limit, 1 otherwise, 77 (with a
reason) when valgrind or objdump is missing.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict


def callgrind(binary, args, out):
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
           binary] + args
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        sys.exit("trace_overhead: %s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return parse(out)


def parse(path):
    """Exclusive Ir and incoming calls per function (recursion levels
    such as "f'2" merged into f) from a callgrind output file."""
    names = {}
    self_ir = defaultdict(int)
    calls = defaultdict(int)
    total = 0
    fn = cfn = None
    after_calls = False

    def name_of(ref):
        m = re.match(r"\((\d+)\)(?:\s+(.*))?$", ref)
        if not m:
            return ref.split("'")[0]
        if m.group(2):
            names[m.group(1)] = m.group(2).split("'")[0]
        return names.get(m.group(1), "?")

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = name_of(line[3:])
                after_calls = False
            elif line.startswith("cfn="):
                cfn = name_of(line[4:])
            elif line.startswith("calls="):
                calls[cfn] += int(line[6:].split()[0])
                after_calls = True
            elif line.startswith("summary:") or line.startswith("totals:"):
                total = int(line.split()[1])
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                if after_calls:
                    after_calls = False  # a call's inclusive cost
                elif fn is not None:
                    self_ir[fn] += ir
            elif "=" in line and not line.startswith(("fl=", "fi=", "fe=", "cfi=", "cfl=", "ob=", "cob=")):
                after_calls = False
    return total, self_ir, calls


def functions(binary):
    """Each function's instructions with numbers (addresses, offsets,
    immediates) blanked, from objdump."""
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                       stdout=subprocess.PIPE, universal_newlines=True, check=True)
    funcs, cur = {}, None
    for line in r.stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
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
        print("    %-8s build: G structs allocated %d; coupling: send_direct %d, recv_direct %d calls"
              % (label, calls["malg"], calls["gort__chan_send_direct"], calls["gort__chan_recv_direct"]))
    return hooks <= limit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traced_dir")
    ap.add_argument("notrace_dir")
    ap.add_argument("--bench", default="spawn,chanpingpong")
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--limit", type=float, default=2.0)
    o = ap.parse_args()
    for tool in ("valgrind", "objdump"):
        if not shutil.which(tool):
            print("trace_overhead: SKIP: %s is not installed" % tool)
            return 77
    ok = True
    for b in o.bench.split(","):
        ok &= measure(b, os.path.join(o.traced_dir, b),
                      os.path.join(o.notrace_dir, b + "_notrace"),
                      ["-procs", str(o.procs), "-n", str(o.n)], o.limit)
    print("trace_overhead: %s" % ("ok" if ok else "FAILED: the hooks cost more than %.1f%%" % o.limit))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
