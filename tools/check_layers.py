#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that gort's runtime is built in layers that only reach downward.

Every file under src/ belongs to a module (its name without extension;
a header belongs to the module of the .c file that owns it), and every
module to one layer in LAYERS below.  Two rules:

  includes  a file may include only headers of its own layer or below;
  calls     an object file may refer (call or load) only to symbols defined
            in its own layer or below;
  alone     (with --cc) every header of src/ compiles by itself, and twice
            in a row: it includes what it uses and has an include guard;
  libc      no object but libc.o refers to a function that gort-hook
            replaces (INTERPOSED below): the runtime's own calls go through
            libc.h's table, or gort-hook would take them back into the
            runtime.

The include rule reads the sources; the call rule reads the compiled
objects with nm, so it sees what the compiler emitted, inline functions
included.  Upcalls the lower layers need (tracing a status change, dumping
goroutines on a fatal error) go through hooks the higher layer registers.

usage: check_layers.py --src DIR [--objects LISTFILE] [--nm NM] [--cc CC]
       check_layers.py --selftest --src DIR [--cc CC]
Exit status 0 when both rules hold, 1 with one line per breach otherwise,
2 on bad usage (an unknown file, a missing object).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Lowest first.  A module may use its own layer and those listed before it.
LAYERS = [
    ("base", "compiler attributes, atomics and the context switch (arch/)",
     ["defs", "atomic", "libc", "arch", "aarch64", "aarch64_bti", "x86_64",
      "x86_64_cet"]),
    ("core", "G, M, P, sched and the status change; the OS; locks; fatal "
             "errors; settings; run queues; stacks; symbol tables; "
             "sanitizer glue; scheduling statistics; the hooks; the "
             "library's version",
     ["sched", "tracehooks", "os_linux", "lock_futex", "lockrank",
      "fatal", "env",
      "symbolize", "runq", "stack", "san", "schedstats", "version"]),
    ("scheduler", "scheduling, Ps, the preemption trampoline (arch/), "
                  "sysmon and the schedtrace it prints, "
                  "syscalls, preemption, the runtime semaphore, timers, "
                  "the network poller, what a program asks of the "
                  "simulation mode (its faults and preemption points)",
     ["aarch64_preempt", "x86_64_preempt", "proc", "procresize",
      "mthread", "newproc", "foreign", "sysmon",
      "debug", "syscall", "preempt", "rawsys", "sema", "time", "timers",
      "netpoll",
      "netpoll_epoll", "sim"]),
    ("objects", "channels, select, sync, timer channels, descriptor I/O, "
                "listening and dialing by address, signals delivered to "
                "channels, the goroutine side of gort-hook",
     ["chan", "select", "sync", "timerchan", "deadline", "ctx", "fdio",
      "net", "signal", "hook"]),
    ("observability", "the execution trace, metrics, goroutine dumps",
     ["trace", "trace_impl", "trace_json", "metrics", "traceback"]),
    ("boot", "start and teardown of the whole runtime",
     ["boot"]),
]

# Headers that are not any module's and may be included from anywhere.
PUBLIC = {"gort.h"}

# The C library's functions that gort-hook defines (docs/hooks.md).
INTERPOSED = set('''
    socket socketpair pipe pipe2 accept accept4 connect read write readv
    writev recv recvfrom recvmsg send sendto sendmsg poll ppoll select
    pselect epoll_wait epoll_pwait sleep usleep nanosleep clock_nanosleep
    close dup dup2 dup3 fcntl fcntl64 ioctl setsockopt getsockopt
    getaddrinfo getnameinfo gethostbyname gethostbyname_r
    gethostbyname2 gethostbyname2_r
'''.split())


def layer_of():
    """Module name -> (layer index, layer name)."""
    out = {}
    for i, (name, _, mods) in enumerate(LAYERS):
        for m in mods:
            out[m] = (i, name)
    return out


def module(path):
    base = os.path.basename(path)
    return base.split(".", 1)[0]


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(src, layers, problems):
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".S")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            mod = module(f)
            if mod not in layers:
                problems.append(("usage", f"{rel}: module {mod!r} has no "
                                 f"layer (add it to LAYERS in "
                                 f"{os.path.basename(__file__)})"))
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for m in INCLUDE.finditer(text):
                inc = os.path.basename(m.group(1))
                if inc in PUBLIC:
                    continue
                imod = module(inc)
                if imod not in layers:
                    problems.append(("usage", f"{rel}: includes {inc}, "
                                     f"whose module {imod!r} has no layer"))
                    continue
                if layers[imod][0] > layers[mod][0]:
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(("breach",
                                     f"{rel}:{line}: includes {inc} "
                                     f"({layers[imod][1]}) from "
                                     f"{layers[mod][1]}"))


def symbols(nm, obj):
    """(defined, undefined) global symbol sets of one object file."""
    res = subprocess.run([nm, obj], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"check_layers: {nm} {obj} failed: "
                         f"{res.stderr.strip()}")
    defined, undefined = set(), set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRCGSVW":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] in ("U", "w"):
            undefined.add(parts[1])
    return defined, undefined


def check_calls(tables, layers, problems):
    """tables: module -> (defined, undefined)."""
    owner = {}
    for mod, (defined, _) in tables.items():
        for s in defined:
            owner[s] = mod
    for mod, (_, undefined) in sorted(tables.items()):
        if mod not in layers:
            problems.append(("usage", f"object of module {mod!r} has no "
                             f"layer"))
            continue
        for s in sorted(undefined):
            to = owner.get(s)
            if to is None or to == mod or to not in layers:
                continue
            if layers[to][0] > layers[mod][0]:
                problems.append(("breach",
                                 f"{mod}.c ({layers[mod][1]}) uses {s} of "
                                 f"{to}.c ({layers[to][1]})"))


def check_libc(tables, problems):
    """tables: module -> (defined, undefined)."""
    for mod, (_, undefined) in sorted(tables.items()):
        if mod == "libc":
            continue
        for s in sorted(undefined & INTERPOSED):
            problems.append(("breach", f"{mod}.c calls {s} directly: "
                             f"call gort__libc.{s} (libc.h)"))


# The settings a header must compile under alone: the plain build, and the
# checked one (lock ranks, debug assertions), whose code paths differ.
ALONE_FLAGS = [[], ["-DGORT_LOCKRANK", "-DGORT_DEBUG"]]


def check_alone(src, cc, problems):
    """Compile each header of src/ (not arch/, whose headers are the
    assembler's) as the only content of a C file, included twice."""
    inc = os.path.join(os.path.dirname(os.path.abspath(src)), "include")
    with tempfile.TemporaryDirectory() as tmp:
        for f in sorted(os.listdir(src)):
            if not f.endswith(".h"):
                continue
            path = os.path.abspath(os.path.join(src, f))
            unit = os.path.join(tmp, "alone.c")
            with open(unit, "w") as fh:
                fh.write(f'#include "{path}"\n#include "{path}"\n')
            for extra in ALONE_FLAGS:
                cmd = [cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
                       "-Wno-unused-parameter", "-Werror", "-fsyntax-only",
                       "-I", inc] + extra + [unit]
                try:
                    res = subprocess.run(cmd, capture_output=True, text=True)
                except OSError as e:
                    problems.append(("usage", f"--cc {cc}: {e.strerror}"))
                    return
                if res.returncode != 0:
                    first = next((l for l in res.stderr.splitlines()
                                  if "error" in l), res.stderr.strip())
                    how = " ".join(extra) or "plain"
                    problems.append(("alone", f"{f} does not compile alone "
                                     f"({how}): {first.strip()}"))
                    break


def run(src, objects, nm, cc=None):
    layers = layer_of()
    problems = []
    check_includes(src, layers, problems)
    if cc:
        check_alone(src, cc, problems)
    if objects:
        tables = {}
        for obj in objects:
            if not os.path.exists(obj):
                problems.append(("usage", f"object {obj} does not exist "
                                 f"(build first)"))
                continue
            tables[module(obj)] = symbols(nm, obj)
        check_calls(tables, layers, problems)
        check_libc(tables, problems)
    return problems


def selftest(src, cc):
    """The check passes on src, and fails on a copy of it with one upward
    include, on a symbol table with one upward call, on one with a direct
    call of an interposed function and (with cc) on a
    copy with a header that leaves out an include it needs."""
    layers = layer_of()
    ok = [p for p in run(src, [], "nm", cc) if p[0] != "usage"]
    if ok:
        print("selftest: the tree itself breaches its layers:")
        for _, msg in ok:
            print("  " + msg)
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy)
        victim = os.path.join(copy, "runq.c")
        with open(victim, "a") as fh:
            fh.write('\n#include "trace.h"\n')
        got = [msg for kind, msg in run(copy, [], "nm") if kind == "breach"]
        want = "runq.c"
        if not any(msg.startswith(want) and "trace.h" in msg for msg in got):
            print(f"selftest: an upward include in {want} went unseen; "
                  f"got {got}")
            failures += 1
        else:
            print(f"selftest: upward include caught: {got[0]}")
    problems = []
    check_calls({"runq": ({"gort__runqget"}, {"gort__trace_boot"}),
                 "trace": ({"gort__trace_boot"}, {"gort__runqget"})},
                layers, problems)
    got = [msg for kind, msg in problems if kind == "breach"]
    if len(got) != 1 or "gort__trace_boot" not in got[0]:
        print(f"selftest: the upward call went unseen or the downward one "
              f"was reported; got {got}")
        failures += 1
    else:
        print(f"selftest: upward call caught: {got[0]}")
    problems = []
    check_libc({"fdio": ({"gort_read"}, {"read", "gort__fd_ref"}),
                "libc": ({"gort__libc"}, {"read", "close"})}, problems)
    got = [msg for kind, msg in problems if kind == "breach"]
    if len(got) != 1 or not got[0].startswith("fdio.c calls read"):
        print(f"selftest: a direct call of an interposed function went "
              f"unseen or libc.c's own was reported; got {got}")
        failures += 1
    else:
        print(f"selftest: direct call caught: {got[0]}")
    if cc:
        failures += selftest_alone(src, cc)
    return 1 if failures else 0


def selftest_alone(src, cc):
    """runq.h without its include of sched.h must fail the alone rule."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy)
        public = os.path.join(os.path.dirname(os.path.abspath(src)),
                              "include")
        shutil.copytree(public, os.path.join(tmp, "include"))
        victim = os.path.join(copy, "runq.h")
        with open(victim) as fh:
            text = fh.read()
        cut = text.replace('#include "sched.h"\n', "")
        if cut == text:
            print("selftest: runq.h does not include sched.h; pick another "
                  "header for this test")
            return 1
        with open(victim, "w") as fh:
            fh.write(cut)
        problems = []
        check_alone(copy, cc, problems)
        got = [msg for kind, msg in problems if kind == "alone"]
        if len(got) != 1 or not got[0].startswith("runq.h"):
            print(f"selftest: a header missing an include went unseen or "
                  f"others were reported; got {got}")
            return 1
        print(f"selftest: header missing an include caught: {got[0]}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the runtime's src/")
    ap.add_argument("--objects", help="file listing object files, one per "
                    "line or separated by ';'")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--cc", help="C compiler for the alone rule (every "
                    "header compiles by itself); the rule is skipped "
                    "without it")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.src):
        print(f"check_layers: --src {a.src}: not a directory")
        return 2
    if a.selftest:
        return selftest(a.src, a.cc)
    objects = []
    if a.objects:
        with open(a.objects) as fh:
            objects = [o for o in re.split(r"[;\n]", fh.read()) if o.strip()]
    problems = run(a.src, objects, a.nm, a.cc)
    for kind, msg in problems:
        print(("usage: " if kind == "usage" else "") + msg)
    if any(kind == "usage" for kind, _ in problems):
        return 2
    if problems:
        print(f"check_layers: {len(problems)} breaches of the layers "
              f"(lowest first: {', '.join(n for n, _, _ in LAYERS)})")
        return 1
    print(f"check_layers: every include and call goes downward "
          f"({len(objects)} objects)" +
          ("; every header compiles alone" if a.cc else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
