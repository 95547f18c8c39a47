#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that docs/guide.md quotes its programs as they are.

A code block of the guide that quotes a file is marked by an HTML comment
on the line before its opening fence:

    <!-- quote: examples/guide/echo.c -->
    ```c
    ...
    ```

Its lines must be lines of that file (path relative to the root), one
after another, exactly; a marker indented (in a list item) indents its
block by as much, which is taken off each line first.  The check fails,
naming the block's line in the guide and the first line not found, when
a quoted file changed under its quote, when a marked file is missing,
when a marker is malformed or not followed by a fenced block, and when a
program of the quoted directory (every .c file in examples/guide/) is
quoted nowhere.

usage: check_guide.py [--root DIR] [--guide FILE] [--programs DIR]
       check_guide.py --selftest
Exit status 0 when every quote is current, 1 naming each one that is not,
2 on bad usage.
"""

import argparse
import os
import re
import sys
import tempfile

MARK = re.compile(r"^( *)<!-- quote: (\S+) -->\s*$")
FENCE = re.compile(r"^(```+|~~~+)")


def blocks(guide_lines):
    """(line number of the marker, quoted path, the block's lines) for
    each marked block; a marker without a block gives lines None."""
    i = 0
    n = len(guide_lines)
    while i < n:
        m = MARK.match(guide_lines[i])
        if not m:
            i += 1
            continue
        start, indent, path = i + 1, m.group(1), m.group(2)
        nxt = guide_lines[i + 1] if i + 1 < n else ""
        f = FENCE.match(nxt[len(indent):]) if nxt.startswith(indent) else None
        if not f:
            yield start, path, None
            i += 1
            continue
        fence = indent + f.group(1)
        body = []
        j = i + 2
        while j < n and not guide_lines[j].startswith(fence):
            line = guide_lines[j]
            body.append(line[len(indent):] if line.startswith(indent)
                        else line.lstrip(" "))
            j += 1
        if j == n:
            yield start, path, None
            return
        yield start, path, body
        i = j + 1


def find(body, lines):
    """(True, None) when body occurs in lines as consecutive lines; else
    (False, the first line of body past its longest match)."""
    best = 0
    for s in range(len(lines)):
        k = 0
        while k < len(body) and s + k < len(lines) and lines[s + k] == body[k]:
            k += 1
        if k == len(body):
            return True, None
        best = max(best, k)
    return not body, (body[best] if body else None)


def check(root, guide, programs):
    errors = []
    try:
        with open(guide, encoding="utf-8") as f:
            glines = f.read().split("\n")
    except OSError as e:
        return ["%s: %s" % (guide, e.strerror)], 0
    for k, line in enumerate(glines):
        if "<!-- quote" in line and not MARK.match(line):
            errors.append("%s:%d: a quote marker not of the form "
                          "'<!-- quote: PATH -->'"
                          % (os.path.relpath(guide, root), k + 1))
    quoted = set()
    count = 0
    for start, path, body in blocks(glines):
        count += 1
        where = "%s:%d" % (os.path.relpath(guide, root), start)
        if body is None:
            errors.append("%s: quote of %s: no fenced block follows"
                          % (where, path))
            continue
        full = os.path.join(root, path)
        try:
            with open(full, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except OSError as e:
            errors.append("%s: quote of %s: %s" % (where, path, e.strerror))
            continue
        quoted.add(os.path.normpath(path))
        ok, line = find(body, lines)
        if not ok:
            errors.append("%s: the quote of %s is not in the file any more; "
                          "first line not found where expected:\n    %s"
                          % (where, path, line))
    if programs:
        pdir = os.path.join(root, programs)
        for name in sorted(os.listdir(pdir)):
            rel = os.path.normpath(os.path.join(programs, name))
            if name.endswith(".c") and rel not in quoted:
                errors.append("%s: %s is quoted nowhere"
                              % (os.path.relpath(guide, root), rel))
    return errors, count


def selftest():
    """The check passes a current guide and fails each kind of stale one."""
    prog = "int main(void)\n{\n    return 0;\n}\n"
    cases = [
        ("current", "<!-- quote: p/a.c -->\n```c\n{\n    return 0;\n```\n",
         True),
        ("whole file", "<!-- quote: p/a.c -->\n```c\n" + prog + "```\n",
         True),
        ("indented", "- item:\n\n  <!-- quote: p/a.c -->\n  ```c\n  {\n"
         "      return 0;\n  ```\n", True),
        ("indented, changed", "- item:\n\n  <!-- quote: p/a.c -->\n"
         "  ```c\n  {\n    return 0;\n  ```\n", False),
        ("changed line",
         "<!-- quote: p/a.c -->\n```c\n{\n    return 1;\n```\n", False),
        ("lines apart",
         "<!-- quote: p/a.c -->\n```c\nint main(void)\n    return 0;\n```\n",
         False),
        ("missing file",
         "<!-- quote: p/a.c -->\n```c\n{\n```\n"
         "<!-- quote: p/gone.c -->\n```c\n{\n```\n", False),
        ("no block", "<!-- quote: p/a.c -->\ntext\n", False),
        ("malformed marker", "<!-- quote:p/a.c -->\n```c\n{\n```\n", False),
        ("unclosed block", "<!-- quote: p/a.c -->\n```c\n{\n", False),
        ("program quoted nowhere", "no quotes here\n", False),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, "p"))
        with open(os.path.join(root, "p", "a.c"), "w") as f:
            f.write(prog)
        for name, text, want in cases:
            guide = os.path.join(root, "guide.md")
            with open(guide, "w") as f:
                f.write(text)
            errors, _ = check(root, guide, "p")
            if (not errors) != want:
                print("selftest: %s: want %s, got %s"
                      % (name, "pass" if want else "failure",
                         errors or "pass"))
                failed = 1
            else:
                print("selftest: %s: %s" % (name, "passes" if want else
                                            "fails: " + errors[0]
                                            .split("\n")[0]))
    print("selftest: %s" % ("FAILED" if failed else "ok"))
    return failed


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(here))
    ap.add_argument("--guide", help="default: ROOT/docs/guide.md")
    ap.add_argument("--programs", default="examples/guide",
                    help="the directory whose .c files must all be quoted")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
    guide = args.guide or os.path.join(args.root, "docs", "guide.md")
    errors, count = check(args.root, guide, args.programs)
    for e in errors:
        print(e)
    if not errors:
        print("%s: %d quotes, every one current" % (guide, count))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
