#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How often each planted bug of tests/sim is found (docs/sim.md,
"Planted bugs").

usage: findrates.py [--build DIR] [--runs N] [--jobs J] [--depths LIST]
                    [--replays K] [--timeout S] [PROGRAM...]

For each program (default: all ten, built as DIR/tests/sim_<name>), N runs
each of:
  plain      the normal mode on 2 Ps (GORTMAXPROCS=2), no GORTDEBUG
  randomize  the normal mode on 2 Ps with GORTDEBUG=randomize=1 (runnext
             and the run queue's order randomized)
  random     the simulation mode's random strategy, seeds 1..N
  pct D      PCT of each depth D in LIST (default 3), seeds 1..N
and then the first failing seed of PCT (the first depth) replayed K times
(default 100) by gort-shake --replay, which must fail the same way every
time.  Prints a Markdown table: failing runs of N, and in parentheses the
index of the first failing run (1-based; for the simulation modes also
its seed).  Exit status 0 when every program was found by PCT and every
replay failed the same way, 1 otherwise, 2 on bad usage.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

PROGRAMS = ["lost_wakeup", "map_check_act", "close_send", "timer_reset",
            "lost_update", "start_order", "lock_order", "double_close",
            "wg_reuse", "leak_error"]
HERE = os.path.dirname(os.path.abspath(__file__))
SHAKE = os.path.join(HERE, "..", "..", "tools", "gort-shake")


def plain_runs(prog, n, jobs, timeout, debug):
    """Failures among n runs in the normal mode: (count, first index)."""
    env = dict(os.environ)
    env.pop("GORTDEBUG", None)
    env["GORTMAXPROCS"] = "2"
    if debug:
        env["GORTDEBUG"] = debug

    def one(i):
        try:
            r = subprocess.run([prog], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=timeout)
            return r.returncode != 0
        except subprocess.TimeoutExpired:
            return True

    with ThreadPoolExecutor(jobs) as ex:
        failed = list(ex.map(one, range(n)))
    first = next((i + 1 for i, f in enumerate(failed) if f), None)
    return sum(failed), first


def shake(args):
    env = dict(os.environ)
    env.pop("GORTDEBUG", None)
    r = subprocess.run([sys.executable, SHAKE] + args, env=env,
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def sim_runs(prog, n, jobs, timeout, strategy, depth):
    rc, out = shake(["--count", "--seed", "1", "-n", str(n), "-s", strategy,
                     "-d", str(depth), "-j", str(jobs), "-t", str(timeout),
                     prog])
    m = re.search(r"(\d+) of (\d+) runs failed", out)
    if rc not in (0, 1) or not m:
        sys.exit(f"findrates: gort-shake failed on {prog}:\n{out}")
    f = re.search(r"first failure: run (\d+), seed (\d+)", out)
    return int(m.group(1)), (int(f.group(1)) if f else None), \
        (int(f.group(2)) if f else None)


def replay(prog, seed, depth, k, jobs, timeout):
    rc, out = shake(["--replay", str(seed), "-s", "pct", "-d", str(depth),
                     "-n", str(k), "-j", str(jobs), "-t", str(timeout), "-q",
                     prog])
    m = re.search(r"all (\d+) runs failed the same way: ([^,]+),", out)
    return rc == 1 and m is not None, (m.group(2) if m else out.strip())


def cell(count, first):
    return f"{count} ({first})" if first else f"{count}"


def main(argv):
    p = argparse.ArgumentParser(prog="findrates.py")
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--depths", default="3")
    p.add_argument("--replays", type=int, default=100)
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("programs", nargs="*")
    a = p.parse_args(argv)
    if a.runs < 1 or a.jobs < 1 or a.replays < 1:
        p.error("--runs, --jobs and --replays must be at least 1")
    try:
        depths = [int(d) for d in a.depths.split(",")]
    except ValueError:
        p.error(f"--depths: not a list of integers: {a.depths}")
    names = a.programs or PROGRAMS
    for name in names:
        if name not in PROGRAMS:
            p.error(f"{name}: not a planted bug ({', '.join(PROGRAMS)})")
    heads = (["program", "plain, 2 Ps", "randomize=1, 2 Ps", "sim random"] +
             [f"sim PCT d={d}" for d in depths] +
             [f"PCT d={depths[0]} seed replayed {a.replays}x"])
    print(f"N = {a.runs} runs per column; failing runs (first failing run)")
    print()
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    ok = True
    for name in names:
        prog = os.path.join(a.build, "tests", "sim_" + name)
        if not os.access(prog, os.X_OK):
            sys.exit(f"findrates: {prog}: not built")
        t0 = time.monotonic()
        row = [name]
        row.append(cell(*plain_runs(prog, a.runs, a.jobs, a.timeout, "")))
        row.append(cell(*plain_runs(prog, a.runs, a.jobs, a.timeout,
                                    "randomize=1")))
        c, first, _ = sim_runs(prog, a.runs, a.jobs, a.timeout, "random", 3)
        row.append(cell(c, first))
        pct_seed = None
        for d in depths:
            c, first, seed = sim_runs(prog, a.runs, a.jobs, a.timeout, "pct",
                                      d)
            row.append(cell(c, first))
            if d == depths[0]:
                pct_seed = seed
        if pct_seed is None:
            ok = False
            row.append("not found")
        else:
            same, how = replay(prog, pct_seed, depths[0], a.replays, a.jobs,
                               a.timeout)
            ok &= same
            row.append(f"seed {pct_seed}: " +
                       (f"{a.replays}/{a.replays} alike ({how})" if same
                        else f"DIFFER: {how}"))
        print("| " + " | ".join(row) + " |", flush=True)
        print(f"  ({name}: {time.monotonic() - t0:.0f} s)", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
