#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that every source file of the tree names its license.

A source file (C and C++ sources and headers, assembler, Python, shell,
CMake, Go, the linker script, the pkg-config template, the trace viewer)
must carry the line `SPDX-License-Identifier: MIT` within its first five
lines; LICENSE holds the text.  Build directories (build*), .git, the
fuzzing corpus and documents are not source files.

usage: check_license.py [--root DIR] [--fix]
       check_license.py --selftest
Exit status 0 when every source file has the line, 1 naming each file
without it, 2 on bad usage.  --fix adds the line where it is missing.
"""

import argparse
import os
import subprocess
import sys
import tempfile

TAG = "SPDX-License-Identifier: MIT"
# Comment syntax by file kind: (prefix, suffix).
C_STYLE = ("/* ", " */")
HASH = ("# ", "")
SLASH = ("// ", "")
KINDS = {
    ".c": C_STYLE, ".h": C_STYLE, ".hpp": C_STYLE, ".cc": C_STYLE,
    ".cpp": C_STYLE, ".S": C_STYLE, ".ld": C_STYLE,
    ".py": HASH, ".sh": HASH, ".cmake": HASH, ".in": HASH,
    ".go": SLASH, ".html": ("<!-- ", " -->"),
}
NAMES = {"CMakeLists.txt": HASH, "Makefile": HASH, "run": HASH,
         "rules": HASH}
SKIP_DIRS = {".git", "corpus", "__pycache__"}


def kind(path):
    base = os.path.basename(path)
    if base in NAMES:
        return NAMES[base]
    return KINDS.get(os.path.splitext(base)[1])


def sources(root):
    """The tree's files: git's list (tracked, and untracked but not
    ignored) in a work tree, else a walk that skips build directories."""
    res = subprocess.run(["git", "-C", root, "ls-files", "--cached",
                          "--others", "--exclude-standard", "-z"],
                         capture_output=True)
    if res.returncode == 0 and os.path.isdir(os.path.join(root, ".git")):
        for rel in sorted(set(res.stdout.decode().split("\0"))):
            parts = rel.split("/")
            path = os.path.join(root, rel)
            if (rel and kind(path) and os.path.isfile(path) and
                    not SKIP_DIRS.intersection(parts[:-1])):
                yield path
        return
    for dirpath, dirs, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and
                         not (rel == "." and d.startswith("build")) and
                         not (rel == "debian" and d not in ("source",
                                                            "tests")))
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            if kind(path):
                yield path


def has_tag(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = [fh.readline() for _ in range(5)]
    return any(TAG in line for line in head)


def add_tag(path):
    pre, post = kind(path)
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    line = f"{pre}{TAG}{post}\n"
    at = 0
    if lines and (lines[0].startswith("#!") or
                  lines[0].lower().startswith("<!doctype")):
        at = 1
    lines.insert(at, line)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(lines)


def check(root, fix=False):
    missing = [p for p in sources(root) if not has_tag(p)]
    if fix:
        for p in missing:
            add_tag(p)
        return []
    return missing


def selftest():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "src"))
        os.makedirs(os.path.join(tmp, "build", "x"))
        good = os.path.join(tmp, "src", "a.c")
        bad = os.path.join(tmp, "src", "b.h")
        script = os.path.join(tmp, "run.sh")
        with open(good, "w") as fh:
            fh.write(f"/* {TAG} */\nint a;\n")
        with open(bad, "w") as fh:
            fh.write("int b;\n")
        with open(script, "w") as fh:
            fh.write("#!/bin/sh\necho hi\n")
        with open(os.path.join(tmp, "build", "x", "gen.c"), "w") as fh:
            fh.write("int generated;\n")
        got = sorted(os.path.relpath(p, tmp) for p in check(tmp))
        want = ["run.sh", os.path.join("src", "b.h")]
        if got != want:
            print(f"selftest: expected {want} without the line, got {got}")
            return 1
        check(tmp, fix=True)
        with open(script) as fh:
            first = fh.readline()
        if check(tmp) or not first.startswith("#!"):
            print("selftest: --fix left files without the line or moved "
                  "a #! line")
            return 1
    print("selftest: files without the line found and fixed")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--fix", action="store_true")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    if not os.path.isdir(a.root):
        print(f"check_license: --root {a.root}: not a directory")
        return 2
    missing = check(a.root, a.fix)
    for p in missing:
        print(f"{os.path.relpath(p, a.root)}: no '{TAG}' line in its "
              f"first five lines")
    if missing:
        print(f"check_license: {len(missing)} source files without a "
              f"license line (add it, or run with --fix)")
        return 1
    print("check_license: every source file names its license"
          + (" (fixed)" if a.fix else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
