#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates docs/api.md, the API reference, from include/gort.h.

The header's comments are the source of truth.  The reference lists every
public function, macro and type, grouped under the header's section
banners (a comment that starts with a line of dashes) in header order,
each with its declaration as the header spells it and the comment that
documents it.  A comment documents the declarations that follow it up to
the next blank line or comment; a conditional block (#if ... #endif) that
defines macros or declares functions counts as one declaration, shown
whole.  The header is read as text, not through a compiler: attribute
macros (GORT_EXTERN, a noreturn macro before or after it, __attribute__,
C++'s [[...]]), declarations over several lines, struct and enum bodies
and #if blocks are recognised by their syntax.  Names with two
underscores after the prefix (gort__x, GORT__X) are internal and listed
under no heading.

usage: gen_api.py [--header FILE] [--out FILE]     write the reference
       gen_api.py --check [--header FILE] [--out FILE]
       gen_api.py --selftest
Exit status 0 when written (or, with --check, when --out is what the
header generates now); 1 when a public declaration has no comment (each
is named, with its line) or, with --check, when --out differs (the diff
and the command that regenerates it are printed); 2 on bad usage or an
unreadable header.
"""

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_HEADER = os.path.join(ROOT, "include", "gort.h")
DEFAULT_OUT = os.path.join(ROOT, "docs", "api.md")

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEYWORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed",
    "unsigned", "const", "volatile", "restrict", "struct", "union", "enum",
    "static", "extern", "inline", "typedef", "_Bool", "bool", "_Noreturn",
    "noreturn", "_Atomic", "register", "auto", "sizeof", "return",
}


class HeaderError(Exception):
    """The header has a construct the generator cannot read."""


# ---------------------------------------------------------------------------
# Lexing: the header as a sequence of comments, blank lines, preprocessor
# blocks and declarations, each with the line it starts on.
# ---------------------------------------------------------------------------

def skip_comment(text, i):
    """Index after the comment that starts at text[i]."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    j = text.find("*/", i + 2)
    if j < 0:
        raise HeaderError("unterminated comment at line %d" % line_of(text, i))
    return j + 2


def skip_literal(text, i):
    """Index after the string or character literal at text[i]."""
    q = text[i]
    j = i + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def line_of(text, i):
    return text.count("\n", 0, i) + 1


def directive_end(text, i):
    """Index of the newline that ends the directive at text[i] (backslash
    continuations and comments within it included)."""
    j = i
    while j < len(text):
        if text.startswith("/*", j):
            j = skip_comment(text, j)
            continue
        c = text[j]
        if c == "\\" and text.startswith("\n", j + 1):
            j += 2
            continue
        if c == "\n":
            return j
        j += 1
    return j


def directive_word(d):
    m = re.match(r"#\s*([a-z]+)", d)
    return m.group(1) if m else ""


def lex(text):
    """Yields (kind, text, line): 'comment', 'blank', 'pp' (one directive),
    'decl' (through its ';' and a comment on the same line), 'brace' (an
    `extern "C" {` or its `}`)."""
    i = 0
    n = len(text)
    at_line_start = True
    newlines = 0
    while i < n:
        c = text[i]
        if c == "\n":
            newlines += 1
            if newlines >= 2:
                yield ("blank", "", line_of(text, i))
                newlines = 0
                # Several blank lines in a row are one break.
                while i + 1 < n and text[i + 1] in " \t\n":
                    i += 1
            at_line_start = True
            i += 1
            continue
        if c in " \t\r\f":
            i += 1
            continue
        newlines = 0
        if text.startswith("/*", i) or text.startswith("//", i):
            j = skip_comment(text, i)
            yield ("comment", text[i:j], line_of(text, i))
            i = j
            continue
        if c == "#" and at_line_start:
            j = directive_end(text, i)
            yield ("pp", text[i:j], line_of(text, i))
            i = j
            continue
        at_line_start = False
        m = re.match(r'extern\s*"C"\s*\{', text[i:])
        if m:
            yield ("brace", m.group(0), line_of(text, i))
            i += m.end()
            continue
        if c == "}":
            yield ("brace", "}", line_of(text, i))
            i += 1
            continue
        j = decl_end(text, i)
        yield ("decl", text[i:j].rstrip(), line_of(text, i))
        i = j


def decl_end(text, i):
    """Index after the declaration that starts at text[i]: its ';' at
    nesting depth 0, and a comment that follows it on the same line."""
    depth = 0
    start = i
    body = None
    while i < len(text):
        if text.startswith("/*", i) or text.startswith("//", i):
            i = skip_comment(text, i)
            continue
        c = text[i]
        if c in "\"'":
            i = skip_literal(text, i)
            continue
        if c == "#" and depth > 0 and text[text.rfind("\n", 0, i) + 1:i].strip() == "":
            raise HeaderError("a preprocessor directive inside a declaration "
                              "at line %d is not supported" % line_of(text, i))
        if c in "({[":
            if c == "{" and depth == 0 and \
                    strip_comments(text[start:i]).rstrip().endswith(")"):
                body = i    # a function defined here (static inline)
            depth += 1
        elif c in ")}]":
            depth -= 1
            if c == "}" and depth == 0 and body is not None:
                return i + 1
        elif c == ";" and depth == 0:
            i += 1
            # A comment on the rest of the line belongs to the declaration.
            m = re.match(r"[ \t]*(/\*.*?\*/|//[^\n]*)[ \t]*(?=\n|$)",
                         text[i:], re.S)
            if m and "\n" not in m.group(1):
                i += m.end()
            return i
        i += 1
    raise HeaderError("declaration at line %d has no ';'" %
                      line_of(text, start))


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------

def strip_comments(s):
    out = []
    i = 0
    while i < len(s):
        if s.startswith("/*", i) or s.startswith("//", i):
            i = skip_comment(s, i)
            out.append(" ")
            continue
        if s[i] in "\"'":
            j = skip_literal(s, i)
            out.append(s[i:j])
            i = j
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


def strip_balanced(s, opener):
    """s without every occurrence of opener and the parenthesised or
    bracketed group that follows it (nesting respected)."""
    while True:
        m = re.search(opener, s)
        if not m:
            return s
        j = m.end()
        while j < len(s) and s[j] in " \t\n":
            j += 1
        if j >= len(s) or s[j] not in "([":
            s = s[:m.start()] + " " + s[m.end():]
            continue
        depth = 0
        k = j
        while k < len(s):
            if s[k] in "([":
                depth += 1
            elif s[k] in ")]":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        s = s[:m.start()] + " " + s[k + 1:]


def strip_groups(s, open_c, close_c):
    """s with the contents of every outermost open_c ... close_c group
    removed (the brackets kept)."""
    out = []
    depth = 0
    for c in s:
        if c == open_c:
            if depth == 0:
                out.append(c)
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def clean_decl(s):
    s = strip_comments(s)
    s = strip_balanced(s, r"\b__attribute__\b")
    s = strip_balanced(s, r"\b__declspec\b")
    s = strip_balanced(s, r"\balignas\b|\b_Alignas\b")
    s = re.sub(r"\[\[.*?\]\]", " ", s, flags=re.S)
    s = re.sub(r"\b__extension__\b", " ", s)
    return s


def decl_names(decl):
    """The names a declaration declares: [] for a forward declaration of
    a struct, union or enum."""
    s = clean_decl(decl).strip().rstrip(";").strip()
    head = s.split("{", 1)[0]
    words = IDENT.findall(head)
    if not words or words[0] in ("_Static_assert", "static_assert"):
        return []
    if words[0] == "typedef":
        flat = strip_groups(s, "{", "}")
        m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", flat)
        if m:
            return [m.group(1)]
        flat = strip_groups(flat, "[", "]")
        ids = IDENT.findall(flat)
        return [ids[-1]] if ids else []
    if words[0] in ("struct", "union", "enum") and "(" not in head:
        if "{" not in s:
            # A forward declaration (struct timespec;) or a variable of
            # a tagged type (struct x name;).
            ids = IDENT.findall(s)
            return [ids[-1]] if len(ids) > 2 else []
        name = "%s %s" % (words[0], words[1]) if len(words) > 1 else words[0]
        rest = strip_groups(s, "{", "}").split("}", 1)[-1]
        after = IDENT.findall(rest)
        return [name] + after[-1:]
    flat = strip_groups(s, "{", "}")
    # A function: an identifier right before a top-level '('.  Attribute
    # macros with arguments (all capitals) give way to the function's own
    # name; a function returning a function pointer is named inside the
    # first group.
    cands = []
    depth = 0
    for m in re.finditer(r"[()]|[A-Za-z_]\w*(?=\s*\()", flat):
        t = m.group(0)
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
        elif depth == 0:
            cands.append(t)
    if cands:
        for c in cands:
            if c not in KEYWORDS and not re.fullmatch(r"[A-Z0-9_]+", c):
                return [c]
        if cands[0] in KEYWORDS:
            m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\(", flat)
            if m:
                return [m.group(1)]
        return [cands[0]]
    # A variable: the last identifier before any initializer.
    flat = strip_groups(flat.split("=", 1)[0], "[", "]")
    ids = [w for w in IDENT.findall(flat) if w not in KEYWORDS]
    return ids[-1:]


def define_name(d):
    m = re.match(r"#\s*define\s+([A-Za-z_]\w*)", d)
    return m.group(1) if m else None


def is_internal(name):
    bare = name.split()[-1]
    return bool(re.match(r"[A-Za-z0-9]+__\w", bare))


# ---------------------------------------------------------------------------
# Structure: sections, groups (a comment and what it documents)
# ---------------------------------------------------------------------------

def comment_lines(c):
    """The text of a comment, one string per line, its markers removed and
    the common indentation kept relative."""
    if c.startswith("//"):
        return [re.sub(r"^\s*//+ ?", "", l) for l in c.splitlines()]
    body = c[2:-2]
    lines = body.split("\n")
    out = []
    for k, l in enumerate(lines):
        if k == 0:
            l = l.lstrip("*")
            l = l[1:] if l.startswith(" ") else l
        else:
            m = re.match(r"^\s*\*(?!/) ?", l)
            l = l[m.end():] if m else l.strip()
        out.append(l.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def is_banner(c):
    lines = c.splitlines()
    return bool(re.match(r"/\*\s*-{10,}\s*$", lines[0])) if lines else False


def banner_title(c):
    """(title, intro lines) of a section banner: the title is the banner's
    first sentence."""
    lines = [l for l in comment_lines(c) if not re.fullmatch(r"-+\s*", l)]
    while lines and not lines[0].strip():
        lines.pop(0)
    first = []
    k = 0
    while k < len(lines) and lines[k].strip():
        first.append(lines[k].strip())
        k += 1
    para = " ".join(first)
    m = re.search(r"\.\s\s|\.$", para)
    if m:
        title, rest = para[:m.start()], para[m.end():].strip()
    else:
        title, rest = para, ""
    intro = ([rest] if rest else []) + lines[k:]
    while intro and not intro[0].strip():
        intro.pop(0)
    return title, intro


class Group:
    def __init__(self, comment, line):
        self.comment = comment       # the documenting comment or None
        self.decls = []              # declaration texts, in order
        self.names = []              # public names declared
        self.name_lines = {}         # name: the line it is declared on
        self.line = line


class Section:
    def __init__(self, title, intro):
        self.title = title
        self.intro = intro           # lines
        self.items = []              # Group or ('prose', lines)


def conditional_block(tokens, k):
    """Index after the #endif that closes the conditional at tokens[k]."""
    depth = 0
    while k < len(tokens):
        kind, text, _ = tokens[k]
        if kind == "pp":
            w = directive_word(text)
            if w in ("if", "ifdef", "ifndef"):
                depth += 1
            elif w == "endif":
                depth -= 1
                if depth == 0:
                    return k + 1
        k += 1
    raise HeaderError("#%s at line %d has no #endif" %
                      (directive_word(tokens[k - 1][1]), tokens[k - 1][2]))


def block_names(tokens):
    names = []
    for kind, text, _ in tokens:
        if kind == "pp" and directive_word(text) == "define":
            names.append(define_name(text))
        elif kind == "decl":
            names.extend(decl_names(text))
    return names


def text_offset(text, line):
    """Offset of the start of line (1-based) in text."""
    off = 0
    for _ in range(line - 1):
        off = text.index("\n", off) + 1
    return off


def parse(text):
    """(intro lines, [Section]) of a header's text."""
    tokens = list(lex(text))
    guard = None
    for k, (kind, t, _) in enumerate(tokens):
        if kind == "pp":
            m = re.match(r"#\s*ifndef\s+(\w+)", t)
            if m and k + 1 < len(tokens) and tokens[k + 1][0] == "pp" and \
                    define_name(tokens[k + 1][1]) == m.group(1):
                guard = k
            break
    if guard is not None:
        ends = [k for k, tok in enumerate(tokens)
                if tok[0] == "pp" and directive_word(tok[1]) == "endif"]
        last = ends[-1]
        tokens = tokens[:guard] + tokens[guard + 2:last] + tokens[last + 1:]

    st = {"intro": [], "sections": [Section("Overview", [])],
          "pending": None, "group": None, "seen_decl": False}

    def close():
        g = st["group"]
        if g is not None:
            # Forward declarations of other headers' types (struct
            # timespec;) alone are no part of the API.
            if g.names:
                st["sections"][-1].items.append(g)
            st["group"] = None
        if st["pending"] is not None:
            lines = comment_lines(st["pending"][0])
            if not st["seen_decl"] and len(st["sections"]) == 1 and \
                    not st["intro"]:
                st["intro"].extend(lines)
            else:
                st["sections"][-1].items.append(("prose", lines))
            st["pending"] = None

    def add(decl, names, line):
        st["seen_decl"] = True
        if st["group"] is None:
            c = st["pending"]
            st["group"] = Group(c[0] if c else None, c[1] if c else line)
            st["pending"] = None
        g = st["group"]
        g.decls.append(decl)
        for n in names:
            if n and not is_internal(n) and n not in g.names:
                g.names.append(n)
                g.name_lines[n] = line

    k = 0
    while k < len(tokens):
        kind, t, line = tokens[k]
        if kind == "comment":
            if "SPDX-License-Identifier" in t and "\n" not in t:
                k += 1
                continue
            close()
            if is_banner(t):
                st["sections"].append(Section(*banner_title(t)))
            else:
                st["pending"] = (t, line)
        elif kind in ("blank", "brace"):
            close()
        elif kind == "pp":
            w = directive_word(t)
            if w in ("if", "ifdef", "ifndef"):
                end = conditional_block(tokens, k)
                inner = tokens[k:end]
                names = block_names(inner)
                if any(n and not is_internal(n) for n in names):
                    start = text_offset(text, inner[0][2])
                    last_kind, last_text, last_line = inner[-1]
                    stop = text.index(last_text, text_offset(text, last_line))
                    add(text[start:stop + len(last_text)], names, line)
                else:
                    # extern "C" and other blocks that declare nothing.
                    close()
                k = end
                continue
            if w == "define":
                add(t, [define_name(t)], line)
        elif kind == "decl":
            add(t, decl_names(t), line)
        k += 1
    close()
    sections = [s for s in st["sections"] if s.items or s.intro]
    return st["intro"], sections


# ---------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------

def md_escape(s):
    """Prose for Markdown.  Text between backticks stays as written; a
    word with an underscore (an identifier, gort_main() with its
    parentheses) is set in backticks, as code; '<', '*' and '[' are
    escaped, and a leading '#', '>' or '+', so that they read as
    themselves."""
    parts = re.split(r"(`[^`]*`)", s)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) > 1:
            out.append(p)
            continue
        words = re.split(r"([\w./-]*_[\w./-]*(?:\(\))?)", p)
        for k, w in enumerate(words):
            if k % 2:
                tail = re.search(r"[./-]*$", w).group(0)
                core = w[:len(w) - len(tail)] if tail else w
                out.append("`%s`%s" % (core, tail))
                continue
            w = w.replace("\\", "\\\\").replace("<", "&lt;")
            w = w.replace("*", "\\*").replace("[", "\\[")
            out.append(w)
    s = "".join(out)
    return re.sub(r"^(\s*)([#>+])", r"\1\\\2", s)


def md_prose(lines):
    """Comment lines as Markdown: paragraphs joined, a paragraph of lines
    indented by two spaces or more (a table, an example) kept as a code
    block, '- ' list items kept as a list."""
    out = []
    paras = []
    cur = []
    for l in lines:
        if l.strip():
            cur.append(l)
        elif cur:
            paras.append(cur)
            cur = []
    if cur:
        paras.append(cur)
    for p in paras:
        if out:
            out.append("")
        first = p[0]
        if re.match(r"\s{2,}\S", first) and not re.match(r"\s*- ", first):
            indent = min(len(l) - len(l.lstrip()) for l in p)
            out.append("```")
            out.extend(l[indent:] for l in p)
            out.append("```")
            continue
        # A paragraph may open with a line and continue with a list.
        text = []           # the lines before the list
        items = []          # each item's lines
        for l in p:
            m = re.match(r"\s*- (.*)", l)
            if m:
                items.append([m.group(1).strip()])
            elif items:
                items[-1].append(l.strip())
            else:
                text.append(l.strip())
        if text:
            out.append(md_escape(" ".join(text)))
            if items:
                out.append("")
        for it in items:
            out.append("- " + md_escape(" ".join(it)))
    return out


def dedent_decl(d):
    lines = d.split("\n")
    return "\n".join(l.rstrip() for l in lines)


def anchor(title):
    a = re.sub(r"[^\w\- ]", "", title.lower()).strip().replace(" ", "-")
    return a


def render(intro, sections, header_rel):
    out = ["<!-- Generated from %s by tools/gen_api.py; do not edit. -->"
           % header_rel,
           "<!-- Regenerate: python3 tools/gen_api.py -->",
           "",
           "# gort API reference",
           "",
           "Every public function, macro and type of `%s`, in the header's "
           "order and under its section headings, with the comment that "
           "documents it in the header." % header_rel,
           ""]
    if intro:
        out.extend(md_prose(intro))
        out.append("")
    out.append("## Contents")
    out.append("")
    for s in sections:
        out.append("- [%s](#%s)" % (s.title, anchor(s.title)))
    out.append("")
    for s in sections:
        out.append("## " + s.title)
        out.append("")
        if s.intro:
            out.extend(md_prose(s.intro))
            out.append("")
        for item in s.items:
            if isinstance(item, tuple):
                out.extend(md_prose(item[1]))
                out.append("")
                continue
            if item.names:
                out.append("### " + ", ".join("`%s`" % n for n in item.names))
                out.append("")
            out.append("```c")
            out.append("\n".join(dedent_decl(d) for d in item.decls))
            out.append("```")
            out.append("")
            if item.comment:
                out.extend(md_prose(comment_lines(item.comment)))
                out.append("")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def undocumented(sections):
    """(line, name) of each public name in a group without a comment."""
    res = []
    for s in sections:
        for item in s.items:
            if isinstance(item, tuple) or item.comment is not None:
                continue
            for n in item.names:
                res.append((item.name_lines[n], n))
    return res


def generate(header_path):
    """(markdown, [(line, name) undocumented])."""
    with open(header_path, encoding="utf-8") as f:
        text = f.read()
    intro, sections = parse(text)
    rel = os.path.relpath(os.path.abspath(header_path), ROOT)
    if rel.startswith(".."):
        rel = os.path.basename(header_path)
    return render(intro, sections, rel), undocumented(sections)


def report_undocumented(header, missing):
    for line, name in missing:
        print("%s:%d: %s has no comment: document it in a comment right "
              "above its declaration (no blank line between)" %
              (header, line, name), file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Generate docs/api.md from include/gort.h.")
    ap.add_argument("--header", default=DEFAULT_HEADER)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true",
                    help="compare --out with what the header generates")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()
    try:
        md, missing = generate(args.header)
    except OSError as e:
        print("gen_api.py: cannot read the header: %s" % e, file=sys.stderr)
        return 2
    except HeaderError as e:
        print("gen_api.py: %s: %s" % (args.header, e), file=sys.stderr)
        return 2
    if missing:
        report_undocumented(args.header, missing)
    regen = "python3 tools/gen_api.py"
    same = os.path.realpath
    if same(args.header) != same(DEFAULT_HEADER) or \
            same(args.out) != same(DEFAULT_OUT):
        regen += " --header %s --out %s" % (args.header, args.out)
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                old = f.read()
        except OSError as e:
            print("gen_api.py: %s: %s; generate it with: %s" %
                  (args.out, e.strerror, regen), file=sys.stderr)
            return 1
        if old != md:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), md.splitlines(True),
                args.out, "generated from " + args.header))
            print("\n%s is out of date with %s; regenerate it with:\n    %s"
                  % (args.out, args.header, regen))
            return 1
        return 1 if missing else 0
    if missing:
        print("gen_api.py: %s not written: %d public declaration(s) without "
              "a comment" % (args.out, len(missing)), file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(md)
    return 0


# ---------------------------------------------------------------------------
# Self-test
# ---------------------------------------------------------------------------

SELFTEST_HEADER = r"""/* SPDX-License-Identifier: MIT */
/*
 * t.h - a header with every construct the generator reads.
 */
#ifndef T_H
#define T_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's functions. */
#if defined(__GNUC__)
#define T_EXTERN __attribute__((visibility("default")))
#else
#define T_EXTERN
#endif

/* Marks a function that does not return. */
#if defined(__cplusplus)
#define T_NORETURN [[noreturn]]
#else
#define T_NORETURN _Noreturn
#endif

/* ---------------------------------------------------------------------------
 * Things.  What things are.
 *
 * More about things.
 * ------------------------------------------------------------------------- */

/*
 * Start a thing.  Returns its id.
 */
T_EXTERN long t_start(void (*fn)(void *),
                      void *arg) __attribute__((nonnull(1)));

/* Never returns. */
T_NORETURN T_EXTERN void t_exit(void);
/* The same, the other way round. */
T_EXTERN T_NORETURN void t_exit2(int code);

/* A thing's state. */
typedef struct t_thing {
    int a;   /* a field; with a ';' in its comment */
    long b;  /* a field whose comment
                spans two lines */
} t_thing;
#define T_THING_INIT {0, 0}

/* A callback type. */
typedef int (*t_cb)(int);

/* Kinds. */
enum t_kind {
    T_A = 1, /* one */
    T_B = 2,
};

/* Returns a function pointer. */
T_EXTERN void (*t_handler(int sig))(int);

/* Both directions, documented together. */
T_EXTERN int t_read(int fd);
T_EXTERN int t_write(int fd);

/* Twice x, inline. */
static inline int t_twice(int x)
{
    return 2 * x;
}

/* The version, with an internal helper. */
#define T_VERSION 3
#define T__HELPER(x) #x

struct timespec;
T_EXTERN int t_undocumented(const struct timespec *ts);

#ifdef __cplusplus
}
#endif

#endif /* T_H */
"""


def selftest():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # Names of single declarations.
    cases = {
        "GORT_EXTERN int64_t gort_go(void (*fn)(void *), void *arg);":
            ["gort_go"],
        "GORT_NORETURN GORT_EXTERN void gort_goexit(void);": ["gort_goexit"],
        "GORT_EXTERN _Noreturn void gort_goexit(void);": ["gort_goexit"],
        "[[noreturn]] GORT_EXTERN void gort_goexit(void);": ["gort_goexit"],
        "GORT_EXTERN GORT_PRINTF(1, 2) int gort_printf(const char *f, ...);":
            ["gort_printf"],
        "GORT_EXTERN int gort_f(const char *f, ...) GORT_FORMAT(1, 2);":
            ["gort_f"],
        "typedef struct gort_chan gort_chan;": ["gort_chan"],
        "typedef struct gort_x {\n int a; /* ; */\n} gort_x;": ["gort_x"],
        "typedef void (*gort_fn)(void *);": ["gort_fn"],
        "enum gort_case_dir {\n GORT_CASE_RECV = 1,\n};":
            ["enum gort_case_dir"],
        "struct timespec;": [],
        "_Static_assert(sizeof(int) == 4, \"int\");": [],
        "GORT_EXTERN const char *gort_name;": ["gort_name"],
        "GORT_EXTERN void (*gort_sig(int s))(int);": ["gort_sig"],
    }
    for decl, want in cases.items():
        got = decl_names(decl)
        check(got == want, "decl_names(%r) = %r, want %r" % (decl, got, want))

    with tempfile.TemporaryDirectory() as tmp:
        hdr = os.path.join(tmp, "t.h")
        out = os.path.join(tmp, "api.md")
        with open(hdr, "w") as f:
            f.write(SELFTEST_HEADER)
        md, missing = generate(hdr)
        check([n for _, n in missing] == ["t_undocumented"],
              "undocumented: %r, want only t_undocumented" % missing)
        for want in ("## Overview", "## Things", "More about things.",
                     "### `T_EXTERN`", "### `T_NORETURN`", "### `t_start`",
                     "### `t_exit`", "### `t_exit2`",
                     "### `t_thing`, `T_THING_INIT`", "### `t_cb`",
                     "### `enum t_kind`", "### `t_handler`",
                     "### `t_read`, `t_write`", "### `T_VERSION`",
                     "### `t_twice`",
                     "spans two lines */\n} t_thing;",
                     "#else\n#define T_EXTERN\n#endif",
                     "Start a thing.  Returns its id."):
            check(want in md, "generated text lacks %r" % want)
        body = md.split("## Contents")[1]
        for unwanted in ("`T_H`", "`T__HELPER`", 'extern "C"', "#ifdef __cplusplus",
                         "`timespec`", "`struct timespec`"):
            check(unwanted not in body, "generated text has %r" % unwanted)
        order = [md.find("### `" + n) for n in
                 ("T_EXTERN", "t_start", "t_exit`", "t_thing", "T_VERSION")]
        check(order == sorted(order) and -1 not in order,
              "items out of header order: %r" % order)
        # The generator refuses a header with an undocumented declaration.
        tool = os.path.abspath(__file__)
        r = subprocess.run([sys.executable, tool, "--header", hdr, "--out",
                            out], capture_output=True, text=True)
        check(r.returncode == 1 and "t_undocumented has no comment" in
              r.stderr and not os.path.exists(out),
              "undocumented declaration not refused: %d %r" %
              (r.returncode, r.stderr))
        # Documented, it writes; --check passes on a fresh copy and fails
        # on a stale one with the diff and the command.
        with open(hdr, "w") as f:
            f.write(SELFTEST_HEADER.replace(
                "struct timespec;\n", "struct timespec;\n/* Waits. */\n"))
        r = subprocess.run([sys.executable, tool, "--header", hdr, "--out",
                            out], capture_output=True, text=True)
        check(r.returncode == 0 and os.path.exists(out),
              "generation failed: %d %r" % (r.returncode, r.stderr))
        r = subprocess.run([sys.executable, tool, "--check", "--header", hdr,
                            "--out", out], capture_output=True, text=True)
        check(r.returncode == 0, "--check failed on a fresh copy: %r" %
              (r.stdout + r.stderr))
        with open(hdr) as f:
            text = f.read()
        with open(hdr, "w") as f:
            f.write(text.replace("Start a thing.", "Start a new thing."))
        r = subprocess.run([sys.executable, tool, "--check", "--header", hdr,
                            "--out", out], capture_output=True, text=True)
        check(r.returncode == 1 and "-Start a thing." in r.stdout and
              "+Start a new thing." in r.stdout and
              "regenerate it with:" in r.stdout and
              "gen_api.py --header" in r.stdout,
              "--check passed a stale copy or printed no diff: %d %r" %
              (r.returncode, r.stdout))
    if failures:
        for f in failures:
            print("selftest: FAIL: " + f)
        return 1
    print("selftest: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
