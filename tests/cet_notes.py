#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the control-flow protection notes of the built library against
docs/design.md ("Control-flow enforcement").

Every object of the library and the library itself (libgort.a's members,
libgort.so) carry a GNU property note whose feature bits (x86-64: IBT,
SHSTK; aarch64: BTI, PAC) the linker ANDs over its inputs.  The design
document has a table, per processor, of what the C objects say (it
depends on the compiler flags), what the assembler objects say, and what
the library then says.  This check reads the notes with readelf, finds
the table's row for what the C objects say, and fails naming every object
whose note differs from the row, every C object that differs from the
others, and a library that says SHSTK.  The shared library also takes in
the start files the compiler links into every shared object (crti.o,
crtbeginS.o, crtendS.o, crtn.o), so it is expected to say what the row
says ANDed with what they say.

usage: cet_notes.py --readelf PROG --arch PROCESSOR --design docs/design.md
                    --objects LIST --static libgort.a --shared libgort.so
                    [--cc COMPILER]
       cet_notes.py --selftest
LIST has one object file a line (the build writes it: gort_objects.txt).
Exit status 0 when every note is as documented, 1 naming each one that is
not, 2 on bad usage, 77 (skipped) without readelf.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

MARKER = "<!-- tests/cet_notes.py reads this table -->"
FEATURE = re.compile(r"(?:x86|AArch64) feature: ([A-Za-z0-9_, ]+)")


def norm(cell):
    """A table cell or a readelf feature list as a sorted tuple of bits;
    'none' or empty is ()."""
    cell = re.sub(r"\(.*?\)", "", cell.replace("`", "")).strip()
    if cell.lower() in ("none", "", "-"):
        return ()
    return tuple(sorted(b.strip() for b in cell.split(",") if b.strip()))


def show(bits):
    return ", ".join(bits) if bits else "none"


def design_table(path):
    """{processor: [(c_bits, asm_bits, lib_bits)]} from the table after
    MARKER in the design document."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        k = lines.index(MARKER)
    except ValueError:
        raise SystemExit("cet_notes: %s has no line %r before the table of "
                         "notes" % (path, MARKER))
    rows = {}
    for l in lines[k + 1:]:
        if not l.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if len(cells) != 4 or set(cells[1]) <= set("-: "):
            continue
        if cells[0].lower().startswith("processor"):
            continue
        arch = cells[0].replace("`", "").strip()
        rows.setdefault(arch, []).append(
            (norm(cells[1]), norm(cells[2]), norm(cells[3])))
    if not rows:
        raise SystemExit("cet_notes: no rows in the table after %r in %s" %
                         (MARKER, path))
    return rows


def notes(readelf, path):
    """{member: feature bits} of an object, archive or shared library (an
    object's member is its own path)."""
    r = subprocess.run([readelf, "-n", "-W", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit("cet_notes: %s -n %s failed: %s" %
                         (readelf, path, r.stderr.strip()))
    res = {}
    member = path
    for l in r.stdout.splitlines():
        m = re.match(r"File: (.*)", l.strip())
        if m:
            member = m.group(1)
            res[member] = ()
            continue
        m = FEATURE.search(l)
        if m:
            res[member] = norm(m.group(1))
    if not res:
        res[path] = ()
    return res


def arch_name(processor):
    if re.match(r"(x86_64|amd64|AMD64)$", processor):
        return "x86-64"
    if re.match(r"(aarch64|arm64)$", processor):
        return "aarch64"
    return processor


def start_files(readelf, cc):
    """The feature bits every shared object gets from the compiler's start
    files (their AND), or None when cc names none."""
    bits = None
    for name in ("crti.o", "crtbeginS.o", "crtendS.o", "crtn.o"):
        try:
            r = subprocess.run([cc, "-print-file-name=" + name],
                               capture_output=True, text=True)
        except OSError:
            return None
        path = r.stdout.strip()
        if r.returncode != 0 or not os.path.isabs(path) or \
                not os.path.exists(path):
            continue
        b = set(notes(readelf, path)[path])
        bits = b if bits is None else bits & b
    return None if bits is None else tuple(sorted(bits))


def check(table, arch, c_objs, asm_objs, libs, shared=None, crt=None):
    """Failure messages.  c_objs, asm_objs: {path: bits}; libs: {name:
    {member: bits}}; shared names the shared library in libs, whose
    expectation is ANDed with crt, the start files' bits."""
    errs = []
    rows = table.get(arch)
    if not rows:
        return ["docs/design.md's table has no row for %s" % arch]
    c_bits = set(c_objs.values())
    if len(c_bits) > 1:
        common = max(c_bits, key=lambda b: list(c_objs.values()).count(b))
        for p, b in sorted(c_objs.items()):
            if b != common:
                errs.append("%s says %s where the other C objects say %s" %
                            (p, show(b), show(common)))
        c = common
    else:
        c = c_bits.pop() if c_bits else ()
    row = [r for r in rows if r[0] == c]
    if not row:
        errs.append("the C objects say %s, which docs/design.md's table "
                    "does not list for %s (it lists %s)" %
                    (show(c), arch, "; ".join(show(r[0]) for r in rows)))
        return errs
    _, want_asm, want_lib = row[0]
    for p, b in sorted(asm_objs.items()):
        if b != want_asm:
            errs.append("%s says %s; docs/design.md says %s" %
                        (p, show(b), show(want_asm)))
    for lib, members in sorted(libs.items()):
        want = want_lib
        why = "with C objects that say %s" % show(c)
        if lib == shared and crt is not None:
            want = tuple(x for x in want_lib if x in crt)
            why += ", and start files that say %s" % show(crt)
        for m, b in sorted(members.items()):
            if b != want:
                errs.append("%s says %s; docs/design.md says %s (%s)" %
                            (m, show(b), show(want), why))
            if "SHSTK" in b:
                errs.append("%s says SHSTK, but the context switch keeps no "
                            "shadow stack" % m)
    return errs


def selftest():
    table = {"x86-64": [((), ("IBT",), ()),
                        (("IBT", "SHSTK"), ("IBT",), ("IBT",))]}
    ok = True

    def expect(errs, n, what):
        nonlocal ok
        if len(errs) != n:
            print("selftest: FAIL: %s: %r" % (what, errs))
            ok = False

    expect(check(table, "x86-64", {"a.c.o": ()}, {"s.S.o": ("IBT",)},
                 {"lib": {"lib": ()}}), 0, "default build")
    expect(check(table, "x86-64", {"a.c.o": ("IBT", "SHSTK")},
                 {"s.S.o": ("IBT",)}, {"lib": {"lib": ("IBT",)}}), 0,
           "-fcf-protection=full")
    expect(check(table, "x86-64", {"a.c.o": ()}, {"s.S.o": ()},
                 {"lib": {"lib": ()}}), 1, "an unmarked assembler object")
    expect(check(table, "x86-64", {"a.c.o": ("IBT", "SHSTK")},
                 {"s.S.o": ("IBT", "SHSTK")},
                 {"lib": {"lib": ("IBT", "SHSTK")}}), 3,
           "SHSTK declared by the assembler objects")
    expect(check(table, "x86-64", {"a.c.o": ("IBT",)}, {"s.S.o": ("IBT",)},
                 {"lib": {"lib": ("IBT",)}}), 1, "an unlisted C note")
    expect(check(table, "x86-64", {"a.c.o": (), "b.c.o": (), "c.c.o": ("IBT",)},
                 {"s.S.o": ("IBT",)}, {"lib": {"lib": ()}}), 1,
           "one C object unlike the others")
    expect(check(table, "aarch64", {}, {}, {}), 1, "no row for the processor")
    expect(check(table, "x86-64", {"a.c.o": ("IBT", "SHSTK")},
                 {"s.S.o": ("IBT",)}, {"a": {"a": ("IBT",)}, "so": {"so": ()}},
                 "so", ()), 0, "unmarked start files")
    expect(check(table, "x86-64", {"a.c.o": ("IBT", "SHSTK")},
                 {"s.S.o": ("IBT",)}, {"a": {"a": ("IBT",)}, "so": {"so": ()}},
                 "so", ("IBT", "SHSTK")), 1, "marked start files")
    if norm("`IBT`, `SHSTK`") != ("IBT", "SHSTK") or norm("none") != () or \
            norm("IBT, SHSTK (`-fcf-protection=full`)") != ("IBT", "SHSTK") \
            or norm("none (the default build)") != ():
        print("selftest: FAIL: cell parsing")
        ok = False
    print("selftest: " + ("ok" if ok else "failed"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--arch")
    ap.add_argument("--design")
    ap.add_argument("--objects")
    ap.add_argument("--static")
    ap.add_argument("--shared")
    ap.add_argument("--cc")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args()
    if args.selftest:
        return selftest()
    for need in ("arch", "design", "objects", "static", "shared"):
        if not getattr(args, need):
            ap.error("--%s is required" % need)
    readelf = shutil.which(args.readelf)
    if not readelf:
        print("cet_notes: skipped: %s not found (Debian package binutils)" %
              args.readelf)
        return 77
    table = design_table(args.design)
    with open(args.objects) as f:
        objs = [l.strip() for l in f if l.strip()]
    c_objs, asm_objs = {}, {}
    for o in objs:
        bits = notes(readelf, o)[o]
        (asm_objs if o.endswith((".S.o", ".s.o", ".S.obj")) else c_objs)[o] = bits
    if not asm_objs:
        print("cet_notes: no assembler object in %s" % args.objects)
        return 1
    libs = {p: notes(readelf, p) for p in (args.static, args.shared)}
    arch = arch_name(args.arch)
    crt = start_files(readelf, args.cc) if args.cc else None
    errs = check(table, arch, c_objs, asm_objs, libs, args.shared, crt)
    c = set(c_objs.values())
    print("cet_notes: %s: C objects %s, assembler objects %s, start files "
          "%s, %s" % (
        arch, " / ".join(show(b) for b in sorted(c)) or "none",
        " / ".join(show(b) for b in sorted(set(asm_objs.values()))),
        "unknown" if crt is None else show(crt),
        ", ".join("%s %s" % (os.path.basename(m), show(b))
                  for l in libs.values() for m, b in sorted(l.items()))))
    for e in errs:
        print("cet_notes: " + e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
