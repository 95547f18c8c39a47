#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tracesummary.py - summarise a gort execution trace (GORTDEBUG=trace=FILE
or gort_trace_start) the way one looks for them in a trace viewer: the
spinning intervals of each M, the stop-the-world pauses, and the syscall
hand-offs (a P leaving a thread blocked in a system call for another).

    python3 tools/tracesummary.py TRACE.json [--check]
    python3 tools/tracesummary.py --run PROGRAM [ARG...] [--check]

With --run, runs PROGRAM under GORTDEBUG=trace=<a temporary file> first
(experiments/tracesummary is the workload made for it).  --check ends with
a check line: at least --min-spins spinning intervals (default 1),
--min-stw stop-the-world pauses (default 1) and --min-handoffs syscall
hand-offs (default 1); exit status 1 when one is short, or when the trace
or the program is bad.

What it reads (docs/design.md, "Execution trace"):
  - "spinning" slices on the Threads (M) tracks: an M looking for work;
  - "stop-the-world" slices on the Scheduler track (from when the stopper
    took worldsema to when the world ran again), with why and the
    GOMAXPROCS after; for each, how many goroutines ran on other Ps during
    it (still running when it began, or started by an M that had not seen
    the request yet) and when the last of them stopped: the stopping part
    of the pause, the gap a viewer shows on the P tracks;
  - "syscall" slices on the M tracks: the M's "P" slice ends where its
    syscall begins; when that P's next slice starts on another M before
    the syscall ends, the P was handed off, at entry (a call known to
    block) or retaken ("procsteal" instants: by sysmon, the syscall
    watcher or a stop-the-world); the lag is from the syscall's start to
    the P's start on the other M.
"""
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

PID_PROCS, PID_THREADS, PID_SCHED = 1, 2, 3


class Bad(Exception):
    pass


def ns(us):
    return int(round(float(us) * 1000))


def fmt(t):
    """A duration in ns, in the unit that reads best."""
    if t >= 1000000:
        return "%.2fms" % (t / 1e6)
    if t >= 1000:
        return "%.1fus" % (t / 1e3)
    return "%dns" % t


def stats(xs):
    if not xs:
        return "none"
    xs = sorted(xs)
    return "n=%d total %s median %s max %s" % (
        len(xs), fmt(sum(xs)), fmt(xs[len(xs) // 2]), fmt(xs[-1]))


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Bad("%s: %s" % (path, e))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise Bad("%s: not a gort trace (want an object with a traceEvents "
                  "list)" % path)
    return doc


def summarise(doc):
    names = {}
    spins = defaultdict(list)      # M track -> [(start, dur)]
    pslices = defaultdict(list)    # M track -> [(start, end, p)]
    pstarts = defaultdict(list)    # p -> [(start, M track)]
    syscalls = []                  # (M track, start, end, g)
    steals = defaultdict(list)     # p -> [(ts, by)]
    stws = []                      # (start, end, why, gomaxprocs)
    gslices = defaultdict(list)    # p -> [(start, end)]
    for e in doc["traceEvents"]:
        ph, pid, tid = e.get("ph"), e.get("pid"), e.get("tid")
        if ph == "M":
            if e.get("name") == "thread_name":
                names[(pid, tid)] = e.get("args", {}).get("name", "")
            continue
        cat = e.get("cat")
        if ph == "X":
            s, d = ns(e["ts"]), ns(e["dur"])
            if pid == PID_THREADS and cat == "spinning":
                spins[tid].append((s, d))
            elif pid == PID_THREADS and cat == "proc":
                p = e["args"]["p"]
                pslices[tid].append((s, s + d, p))
                pstarts[p].append((s, tid))
            elif pid == PID_THREADS and cat == "syscall":
                syscalls.append((tid, s, s + d, e.get("args", {}).get("g")))
            elif pid == PID_SCHED and cat == "stw":
                a = e.get("args", {})
                stws.append((s, s + d, a.get("why", "?"), a.get("gomaxprocs")))
            elif pid == PID_PROCS and cat == "goroutine":
                gslices[tid].append((s, s + d))
        elif ph == "i" and cat == "procsteal":
            steals[tid].append((ns(e["ts"]), e.get("args", {}).get("by", "?")))
    out = []
    mname = lambda t: names.get((PID_THREADS, t), "M track %d" % t)

    # Spinning.
    allspins = [d for lst in spins.values() for _, d in lst]
    out.append("spinning Ms: %d intervals on %d Ms (%s)"
               % (len(allspins), len(spins), stats(allspins)))
    for t in sorted(spins):
        out.append("  %-24s %s" % (mname(t), stats([d for _, d in spins[t]])))

    # Stop-the-world.
    stws.sort()
    out.append("stop-the-world: %d pauses (%s)"
               % (len(stws), stats([e - s for s, e, _, _ in stws])))
    for s, e, why, procs in stws:
        # The stopping part: goroutines that ran on other Ps during the
        # pause, and when the last of them stopped (the stopper's own runs
        # on through the pause and is not counted; one that started after
        # the pause began was taken by an M that had not yet seen it).
        ran = [(gs, ge) for lst in gslices.values() for gs, ge in lst
               if gs < e and s < ge <= e]
        late = sum(1 for gs, _ in ran if gs >= s)
        out.append("  at %9.3fms: %-10s %-12s GOMAXPROCS after %s; %s"
                   % (s / 1e6, fmt(e - s), why, procs,
                      "%d goroutines ran on other Ps (%d started after it "
                      "began), the last stopped after %s"
                      % (len(ran), late, fmt(max(ge for _, ge in ran) - s))
                      if ran else "no other goroutine ran"))

    # Syscall hand-offs.
    for lst in pstarts.values():
        lst.sort()
    handoffs, lags, returned = defaultdict(int), defaultdict(list), 0
    for m, s, e, g in syscalls:
        own = [p for ps, pe, p in pslices.get(m, []) if abs(pe - s) <= 1000]
        if not own:
            continue
        p = own[0]
        other = [(ts, t) for ts, t in pstarts.get(p, []) if s <= ts <= e and t != m]
        if not other:
            returned += 1
            continue
        ts, _ = other[0]
        by = [b for st, b in steals.get(p, []) if s <= st <= ts]
        kind = ("retaken by " + by[0]) if by else "handed off at entry"
        handoffs[kind] += 1
        lags[kind].append(ts - s)
    total = sum(handoffs.values())
    out.append("syscall hand-offs: %d of %d syscalls; %d kept their P"
               % (total, len(syscalls), returned))
    for k in sorted(handoffs):
        out.append("  %-30s lag from the syscall's start to the P running "
                   "elsewhere: %s" % (k, stats(lags[k])))
    return out, len(allspins), len(stws), total


def run_program(argv):
    fd, path = tempfile.mkstemp(prefix="gort-trace-", suffix=".json")
    os.close(fd)
    env = dict(os.environ)
    env["GORTDEBUG"] = "trace=" + path + (
        "," + env["GORTDEBUG"] if env.get("GORTDEBUG") else "")
    try:
        r = subprocess.run(argv, env=env)
    except OSError as e:
        os.unlink(path)
        raise Bad("cannot run %s: %s" % (argv[0], e))
    if r.returncode != 0:
        os.unlink(path)
        raise Bad("%s exited with status %d" % (argv[0], r.returncode))
    return path


def main(args):
    opts = {"--min-spins": 1, "--min-stw": 1, "--min-handoffs": 1}
    check, run, rest = False, None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--check":
            check = True
        elif a in opts:
            if i + 1 >= len(args) or not args[i + 1].isdigit():
                print("tracesummary: %s wants a count (an integer >= 0)" % a)
                return 2
            opts[a] = int(args[i + 1])
            i += 1
        elif a == "--run":
            run = args[i + 1:]
            if not run:
                print("tracesummary: --run wants a program to run")
                return 2
            # The program's own flags follow it, but ours may end the line.
            while run and (run[-1] == "--check" or
                           (len(run) > 2 and run[-2] in opts)):
                if run[-1] == "--check":
                    check = True
                    run = run[:-1]
                else:
                    if not run[-1].isdigit():
                        print("tracesummary: %s wants a count" % run[-2])
                        return 2
                    opts[run[-2]] = int(run[-1])
                    run = run[:-2]
            break
        elif a.startswith("-"):
            print("tracesummary: unknown flag %s\n%s" % (a, __doc__.split("\n\n")[1]))
            return 2
        else:
            rest.append(a)
        i += 1
    if (run is None) == (len(rest) != 1):
        print("tracesummary: want one trace file or --run PROGRAM\n%s"
              % __doc__.split("\n\n")[1])
        return 2
    tmp = None
    try:
        path = tmp = run_program(run) if run else None
        path = path or rest[0]
        lines, nspin, nstw, nhand = summarise(load(path))
    except Bad as e:
        print("tracesummary: %s" % e)
        return 1
    finally:
        if tmp:
            os.unlink(tmp)
    print("\n".join(lines))
    if not check:
        return 0
    ok = (nspin >= opts["--min-spins"] and nstw >= opts["--min-stw"] and
          nhand >= opts["--min-handoffs"])
    print("check: %d spinning intervals >= %d, %d stop-the-world pauses >= %d, "
          "%d syscall hand-offs >= %d: %s"
          % (nspin, opts["--min-spins"], nstw, opts["--min-stw"], nhand,
             opts["--min-handoffs"], "ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
