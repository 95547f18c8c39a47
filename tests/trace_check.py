#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""trace_check.py - check an execution trace written by gort (gort_trace_start
or GORTDEBUG=trace=path) against the Chrome Trace Event format and against
what the scheduler can do.

    python3 tests/trace_check.py TRACE.json [--expect CAT,...]
        [--expect-fn NAME,...] [--expect-end REASON,...]
        [--min-dropped N] [--max-dropped N] [--min-goroutines N]

Checks, each failing with a message naming the offending event:
  - the file parses as JSON: {"traceEvents": [...], "displayTimeUnit": "ns",
    "metadata": {... "dropped_events": N ...}};
  - every event has ph, pid, tid and (but metadata) a ts >= 0;
  - B/E events pair up on each track (E closes the latest open B, names
    agree); X events have dur >= 0;
  - slices on one track nest or follow each other, never overlap partly
    (Perfetto requires it);
  - goroutine slices are named "G<id> <fn>" with args.g == id and
    args.fn == fn, and a goroutine never runs on two Ps at once;
  - a goroutine is created at most once, and never runs before it is;
  - spinning slices lie on the Threads (M) tracks, each inside one of that
    M's "P" slices (an M spins holding a P);
  - flow arrows: with no events dropped, every flow end ("f") has its
    start ("s"); each end lies at the start of a slice of goroutine
    id >> 23 on the same track, each start on a create or unblock instant
    of that goroutine;
  - every track used has a thread_name, every process a process_name;
  - with --expect, an event of each category is present (for counters:
    "counter"); with --expect-fn, a goroutine slice for each function;
    with --expect-end, a goroutine slice that ended for each reason;
  - the dropped_events count is within --min-dropped/--max-dropped.
Prints a one-line summary and exits 0, or prints the failures and exits 1.
"""
import argparse
import json
import re
import sys
from collections import Counter, defaultdict


class Fail(Exception):
    pass


def ns(us):
    """A timestamp in microseconds (3 decimals) as integer nanoseconds."""
    return int(round(float(us) * 1000))


def describe(e):
    return json.dumps(e, sort_keys=True)[:300]


def check(doc, opts):
    if not isinstance(doc, dict):
        raise Fail("top level is not an object")
    evs = doc.get("traceEvents")
    if not isinstance(evs, list):
        raise Fail("no traceEvents list")
    if doc.get("displayTimeUnit") != "ns":
        raise Fail("displayTimeUnit is %r, want \"ns\"" % doc.get("displayTimeUnit"))
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("dropped_events"), int):
        raise Fail("metadata lacks an integer dropped_events")
    dropped = meta["dropped_events"]

    cats = Counter()
    open_b = defaultdict(list)         # track -> stack of B events
    slices = defaultdict(list)         # track -> [(start, end, event)]
    gruns = defaultdict(list)          # goid -> [(start, end, track)]
    created = {}                       # goid -> ts
    flow_s, flow_f = {}, {}            # id -> event
    instants = defaultdict(list)       # (track, ts) -> [instant events]
    names = set()                      # (pid, tid) with a thread_name
    pnames = set()                     # pids with a process_name
    used = set()                       # (pid, tid) of every other event
    fns, ends = set(), set()
    spins = []                         # (track, start, end, event)

    for e in evs:
        for k in ("ph", "pid", "tid"):
            if k not in e:
                raise Fail("event without %s: %s" % (k, describe(e)))
        ph, track = e["ph"], (e["pid"], e["tid"])
        if ph == "M":
            if e.get("name") == "thread_name":
                names.add(track)
            elif e.get("name") == "process_name":
                pnames.add(e["pid"])
            continue
        used.add(track)
        if not isinstance(e.get("ts"), (int, float)) or e["ts"] < 0:
            raise Fail("bad ts: %s" % describe(e))
        ts = ns(e["ts"])
        cats["counter" if ph == "C" else e.get("cat", "")] += 1
        if ph == "B":
            open_b[track].append(e)
        elif ph == "E":
            if not open_b[track]:
                raise Fail("E without B: %s" % describe(e))
            b = open_b[track].pop()
            if "name" in e and e["name"] != b.get("name"):
                raise Fail("E %r closes B %r" % (e["name"], b.get("name")))
            if ts < ns(b["ts"]):
                raise Fail("E before its B: %s" % describe(e))
            slices[track].append((ns(b["ts"]), ts, b))
        elif ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                raise Fail("X without a dur >= 0: %s" % describe(e))
            end = ts + ns(e["dur"])
            slices[track].append((ts, end, e))
            if e.get("cat") == "spinning":
                if e["pid"] != 2:
                    raise Fail("spinning slice off the M tracks: %s" % describe(e))
                spins.append((track, ts, end, e))
            if e.get("cat") == "goroutine":
                m = re.match(r"^G(\d+) (.+)$", e.get("name", ""))
                args = e.get("args", {})
                if not m or int(m.group(1)) != args.get("g") or m.group(2) != args.get("fn"):
                    raise Fail("goroutine slice name and args disagree: %s" % describe(e))
                gruns[args["g"]].append((ts, end, track))
                fns.add(args["fn"])
                ends.add(args.get("end"))
        elif ph == "i":
            instants[(track, ts)].append(e)
            if e.get("cat") == "create":
                g = e["args"]["g"]
                if g in created:
                    raise Fail("goroutine %d created twice" % g)
                created[g] = ts
        elif ph in ("s", "f"):
            table = flow_s if ph == "s" else flow_f
            if e.get("id") in table:
                raise Fail("flow id %s used twice (%s)" % (e.get("id"), ph))
            table[e.get("id")] = e
        elif ph != "C":
            raise Fail("unexpected ph %r: %s" % (ph, describe(e)))

    for track, stack in open_b.items():
        if stack:
            raise Fail("B without E on %s: %s" % (track, describe(stack[-1])))

    # Slices on a track nest or follow each other.
    for track, lst in slices.items():
        lst.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, e in lst:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                raise Fail("slices overlap on %s: %s and %s"
                           % (track, describe(stack[-1][2]), describe(e)))
            stack.append((start, end, e))

    # An M spins while it holds a P.
    for track, start, end, e in spins:
        if not any(s.get("cat") == "proc" and ps <= start and end <= pe
                   for ps, pe, s in slices[track]):
            raise Fail("spinning slice outside the M's P slices: %s" % describe(e))

    # A goroutine runs on one P at a time, and not before its creation.
    for g, runs in gruns.items():
        runs.sort()
        for (s1, e1, t1), (s2, e2, t2) in zip(runs, runs[1:]):
            if s2 < e1:
                raise Fail("goroutine %d runs on %s and %s at once" % (g, t1, t2))
        if g in created and runs[0][0] < created[g]:
            raise Fail("goroutine %d runs before its creation" % g)

    # Flow arrows link a create/unblock of G to a slice of G.
    starts = defaultdict(list)  # (track, ts) -> goroutine ids starting
    for g, runs in gruns.items():
        for s, _, t in runs:
            starts[(t, s)].append(g)
    for fid, f in flow_f.items():
        g = fid >> 23
        if g not in starts.get(((f["pid"], f["tid"]), ns(f["ts"])), []):
            raise Fail("flow end %s is not at a start of goroutine %d" % (describe(f), g))
        if dropped == 0 and fid not in flow_s:
            raise Fail("flow end without a start: %s" % describe(f))
    for fid, s in flow_s.items():
        g = fid >> 23
        at = instants.get(((s["pid"], s["tid"]), ns(s["ts"])), [])
        if not any(i.get("cat") in ("create", "unblock") and i["args"]["g"] == g for i in at):
            raise Fail("flow start %s is not at a create/unblock of goroutine %d" % (describe(s), g))

    for track in used:
        if track[0] not in pnames:
            raise Fail("process %d has no process_name" % track[0])
        if track not in names and track != (3, 0):  # counters: per process
            raise Fail("track %s has no thread_name" % (track,))

    for c in opts.expect:
        if cats[c] == 0:
            raise Fail("no %r events (have %s)" % (c, dict(cats)))
    for fn in opts.expect_fn:
        if fn not in fns:
            raise Fail("no goroutine slice for function %r (have %s)" % (fn, sorted(fns)[:20]))
    for r in opts.expect_end:
        if r not in ends:
            raise Fail("no goroutine slice ended by %r (have %s)" % (r, sorted(x for x in ends if x)))
    if opts.min_dropped is not None and dropped < opts.min_dropped:
        raise Fail("dropped_events %d < %d" % (dropped, opts.min_dropped))
    if opts.max_dropped is not None and dropped > opts.max_dropped:
        raise Fail("dropped_events %d > %d" % (dropped, opts.max_dropped))
    if len(gruns) < opts.min_goroutines:
        raise Fail("%d goroutines ran, want at least %d" % (len(gruns), opts.min_goroutines))
    return ("trace ok: %d events, %d goroutines, %d slices, %d flows, "
            "%d dropped; categories %s"
            % (len(evs), len(gruns), sum(len(v) for v in slices.values()),
               len(flow_f), dropped, dict(sorted(cats.items()))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    split = lambda s: [x for x in s.split(",") if x]
    ap.add_argument("--expect", type=split, default=[])
    ap.add_argument("--expect-fn", type=split, default=[])
    ap.add_argument("--expect-end", type=split, default=[])
    ap.add_argument("--min-dropped", type=int)
    ap.add_argument("--max-dropped", type=int)
    ap.add_argument("--min-goroutines", type=int, default=0)
    opts = ap.parse_args()
    try:
        with open(opts.trace) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("trace_check: %s: %s" % (opts.trace, e))
        return 1
    try:
        print(check(doc, opts))
    except Fail as e:
        print("trace_check: %s: %s" % (opts.trace, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
