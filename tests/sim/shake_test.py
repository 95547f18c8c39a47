#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The ctest cases of tests/sim (sim.cmake).

usage: shake_test.py --shake GORT_SHAKE planted PROGRAM
       shake_test.py --shake GORT_SHAKE clean PROGRAM
       shake_test.py --shake GORT_SHAKE self PASSING FAILING

planted: gort-shake with PCT from seed 1 must find PROGRAM's bug within
1000 runs (exit status 1) and print the command that replays it; the seed
it names, replayed 20 times, must fail the same way every time (exit 1).

clean: PROGRAM passes 300 seeds of each strategy (exit 0).

self: gort-shake's own behaviour: PASSING (a program that passes on every
seed) gives exit 0 in each mode; FAILING (a planted bug found within 100
PCT runs) gives exit 1 and the same first failure whatever --jobs; a
failing exit, a crash and a timeout are each reported; the environment's
GORTDEBUG is kept in the runs and the replay command; a replay of runs
that differ gives exit 3; bad arguments give exit 2 and a message.
"""

import os
import re
import subprocess
import sys
import tempfile

FAILS = 0


def check(cond, what, detail=""):
    global FAILS
    if cond:
        print(f"ok: {what}")
    else:
        FAILS += 1
        print(f"FAIL: {what}")
        if detail:
            print(detail)


def shake(tool, args, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("GORTDEBUG", None)
    if env:
        e.update(env)
    r = subprocess.run([sys.executable, tool] + args, env=e,
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def show(rc, out, err):
    return f"exit {rc}\n--- stdout ---\n{out}--- stderr ---\n{err}"


def planted(tool, prog):
    rc, out, err = shake(tool, ["--seed", "1", "--runs", "1000", "-s", "pct",
                                "-j", "2", "-t", "30", "-q", prog])
    check(rc == 1, "gort-shake finds the bug within 1000 PCT runs",
          show(rc, out, err))
    m = re.search(r"^gort-shake: run (\d+) of 1000 failed: .*\(seed (\d+), "
                  r"strategy pct;", out, re.M)
    check(m is not None, "it names the failing run and seed",
          show(rc, out, err))
    if not m:
        return
    seed = m.group(2)
    print(f"found at run {m.group(1)}, seed {seed}")
    want = f"GORTDEBUG=sim={seed},simstrategy=pct,simpct=3 "
    check(want in out, "it prints the command that replays it",
          show(rc, out, err))
    rc, out, err = shake(tool, ["--replay", seed, "-s", "pct", "--runs", "20",
                                "-j", "2", "-t", "30", prog])
    check(rc == 1 and "all 20 runs failed the same way" in out,
          f"seed {seed} replayed 20 times fails the same way each time",
          show(rc, out, err))
    check(f"gort: sim seed={seed} strategy=pct" in out,
          "the failure names its seed", show(rc, out, err))


def self_test(tool, passing, failing):
    py = sys.executable

    # A program that passes on every seed: exit 0 in each mode.
    rc, out, err = shake(tool, ["--seed", "1", "-n", "40", "-s", "both", "-j",
                                "2", passing])
    check(rc == 0 and "40 runs, no failure" in out,
          "a passing program: exit 0", show(rc, out, err))
    rc, out, err = shake(tool, ["--count", "-n", "20", "-j", "2", passing])
    check(rc == 0 and "0 of 20 runs failed" in out,
          "a passing program, --count: exit 0", show(rc, out, err))
    rc, out, err = shake(tool, ["--replay", "7", "-n", "5", passing])
    check(rc == 0 and "5 runs, none failed" in out,
          "a passing program, --replay: exit 0", show(rc, out, err))

    # A planted bug: found, and the same first failure with 1 and 2 jobs
    # (runs before the failing one finish, later ones are dropped).
    firsts = []
    for jobs in ("1", "2"):
        rc, out, err = shake(tool, ["--seed", "1", "-n", "100", "-s", "pct",
                                    "-j", jobs, "-q", failing])
        m = re.search(r"\(seed (\d+), strategy pct;", out)
        check(rc == 1 and m, f"a planted bug with -j {jobs}: exit 1",
              show(rc, out, err))
        firsts.append(m.group(1) if m else None)
    check(firsts[0] == firsts[1], "the first failure does not depend on -j",
          f"{firsts}")
    rc, out, err = shake(tool, ["--count", "--seed", "1", "-n", "100", "-s",
                                "pct", "-j", "2", failing])
    m = re.search(r"(\d+) of 100 runs failed", out)
    n = int(m.group(1)) if m else -1
    check(rc == 1 and 0 < n < 100 and f"seed {firsts[0]}," in out,
          "--count: some runs fail, some pass, the first failing seed named",
          show(rc, out, err))

    # Each kind of failure, with any program: an exit status, a signal, a
    # timeout.  The environment's GORTDEBUG comes first in the runs' and
    # in the replay command.
    env = {"GORTDEBUG": "schedtrace=0"}
    code = ("import os, sys; print(os.environ['GORTDEBUG']); "
            "sys.exit(3)")
    rc, out, err = shake(tool, ["--seed", "5", "-n", "3", "-j", "1", py, "-c",
                                code], env=env)
    check(rc == 1 and "exit status 3" in out and
          "schedtrace=0,sim=5,simstrategy=random\n" in out and
          "GORTDEBUG=schedtrace=0,sim=5,simstrategy=random " in out,
          "an exit status, with the environment's GORTDEBUG kept",
          show(rc, out, err))
    code = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    rc, out, err = shake(tool, ["-n", "2", "-j", "1", py, "-c", code])
    check(rc == 1 and "killed by SIGSEGV" in out, "a death by a signal",
          show(rc, out, err))
    code = "import time; time.sleep(30)"
    rc, out, err = shake(tool, ["-n", "2", "-j", "2", "-t", "0.5", py, "-c",
                                code])
    check(rc == 1 and "timed out after 0.5 s" in out, "a timeout",
          show(rc, out, err))

    # A replay whose runs fail differently (the output differs): exit 3.
    code = ("import os, sys; print(os.urandom(8).hex()); sys.exit(1)")
    rc, out, err = shake(tool, ["--replay", "1", "-n", "4", "-j", "1", py,
                                "-c", code])
    check(rc == 3 and "the runs differ" in out and "stdout differs" in out,
          "a replay whose runs differ: exit 3", show(rc, out, err))

    # Bad arguments: exit 2 and a message naming the problem.
    with tempfile.NamedTemporaryFile() as plain:
        bad = [
            ([], "no program given"),
            (["-n", "0", passing], "--runs: 0 is out of range"),
            (["-n", "x", passing], "--runs: not an integer"),
            (["-s", "fifo", passing], "is not random, pct or both"),
            (["-d", "65", passing], "--depth: 65 is out of range"),
            (["-j", "0", passing], "--jobs: 0 is out of range"),
            (["-t", "-1", passing], "--timeout: must be more than 0"),
            (["--seed", "-3", passing], "--seed: -3 is out of range"),
            (["--replay", "1", "-s", "both", passing],
             "--replay needs one strategy"),
            (["--replay", "1", "--count", passing], "do not go together"),
            (["--bogus", passing], "unrecognized arguments"),
            (["/nonexistent/prog"], "no such file"),
            ([plain.name], "not executable"),
        ]
        for args, msg in bad:
            rc, out, err = shake(tool, args)
            check(rc == 2 and msg in err and "usage:" in err,
                  f"bad arguments {args}: exit 2, {msg!r}",
                  show(rc, out, err))
    rc, out, err = shake(tool, ["--help"])
    check(rc == 0 and "usage: gort-shake" in out, "--help",
          show(rc, out, err))


def main(argv):
    if len(argv) < 4 or argv[0] != "--shake":
        print(__doc__, file=sys.stderr)
        return 2
    tool, mode, rest = argv[1], argv[2], argv[3:]
    if mode == "planted" and len(rest) == 1:
        planted(tool, rest[0])
    elif mode == "clean" and len(rest) == 1:
        rc, out, err = shake(tool, ["--seed", "1", "--runs", "600", "-s",
                                    "both", "-j", "2", "-t", "30", "-q",
                                    rest[0]])
        check(rc == 0, "no seed of 300 a strategy fails", show(rc, out, err))
    elif mode == "self" and len(rest) == 2:
        self_test(tool, rest[0], rest[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("FAILED" if FAILS else "PASSED")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
