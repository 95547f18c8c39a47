#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sim_cost.py - what the simulation mode (GORTDEBUG=sim, docs/sim.md)
costs against normal runs: the whole-process wall time of skynet and
chanpingpong, and tcp_echo's round trips per second (it runs for a fixed
time), each run with GORTMAXPROCS=1 and 2 and under sim=1 with the
random and the pct strategies, in alternating rounds; medians, and the
ratios to the normal run on 1 P.

    python3 bench/sim_cost.py [--bench DIR] [--rounds N]
        [--skynet-n N] [--only NAME...]

DIR is the build's bench directory (default build/bench).  Prints a
Markdown table.  Exit status 1 when a program fails.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

MODES = [
    ("GORTMAXPROCS=1", {"GORTMAXPROCS": "1"}, ["-procs", "1"]),
    ("GORTMAXPROCS=2", {"GORTMAXPROCS": "2"}, ["-procs", "2"]),
    ("sim=1 random", {"GORTDEBUG": "sim=1"}, []),
    ("sim=1 pct", {"GORTDEBUG": "sim=1,simstrategy=pct"}, []),
]


def run(bench, prog, args, env_extra):
    """Run one program; its wall time in s and its RESULT lines."""
    env = dict(os.environ)
    env.pop("GORTDEBUG", None)
    env.pop("GORTMAXPROCS", None)
    env.update(env_extra)
    t0 = time.perf_counter()
    p = subprocess.run([os.path.join(bench, prog)] + args, env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write("%s %s %s: exit %d\n%s" % (
            prog, args, env_extra, p.returncode, p.stderr))
        sys.exit(1)
    results = {}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            kv = dict(f.split("=", 1) for f in line.split()[1:])
            results[kv["metric"]] = float(kv["value"])
    return wall, results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--skynet-n", type=int, default=100000)
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    # (row name, program, arguments, figure): None for the whole
    # process's wall time, else a RESULT metric.
    progs = [
        ("skynet -n %d" % a.skynet_n, "skynet", ["-n", str(a.skynet_n)],
         None),
        ("chanpingpong", "chanpingpong", [], None),
        ("tcp_echo -n 2 (req/s)", "tcp_echo", ["-n", "2"],
         "requests_per_s"),
    ]
    if a.only:
        progs = [p for p in progs if p[1] in a.only]
    got = {(p[0], m[0]): [] for p in progs for m in MODES}
    for _ in range(a.rounds):
        for name, prog, args, metric in progs:
            for mname, env, margs in MODES:
                wall, res = run(a.bench, prog, args + margs, env)
                got[(name, mname)].append(res[metric] if metric else wall)
    print("| program | " + " | ".join(m[0] for m in MODES) + " |")
    print("|---|" + "---|" * len(MODES))
    for name, prog, args, metric in progs:
        base = statistics.median(got[(name, MODES[0][0])])
        cells = []
        for mname, _, _ in MODES:
            med = statistics.median(got[(name, mname)])
            # Time: the mode's over the base; a rate: the base's over the
            # mode's.  Either way > 1 means the mode is slower.
            ratio = base / med if metric else med / base
            val = "%.0f/s" % med if metric else "%.3f s" % med
            cells.append("%s (%.2f)" % (val, ratio))
        print("| %s | %s |" % (name, " | ".join(cells)))
    print("\n%d rounds, medians; in brackets the slowdown against "
          "GORTMAXPROCS=1." % a.rounds)


if __name__ == "__main__":
    main()
