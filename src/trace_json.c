/* SPDX-License-Identifier: MIT */
/*
 * trace_json.c - the execution trace's writer, the half of the tracer
 * that turns the recorder's buffers (trace.c) into Chrome Trace Event
 * JSON.  Goroutines are named by their start functions with the dumps'
 * symbolizer (symbolize.c), static functions included.
 *
 * Writing.  A writer thread (not an M: it never runs goroutines) takes
 * full buffers off the queue in the order they were queued (so each P's
 * events come in order), keeps a little state per P (the G running on it
 * and since when, the M holding it and since when) and writes:
 *   pid 1 "Procs": one track per P; a slice per stretch a goroutine ran,
 *                  "G12 worker" (id and start function), its args saying
 *                  why it stopped; instants for creations, wake-ups,
 *                  steals, preemption requests, retakes, netpoll, timers;
 *   pid 2 "Threads": one track per M; a slice "P3" while it held P3, a
 *                  slice "syscall" per system call, a slice "spinning"
 *                  (inside a "P" slice) while it looked for work;
 *   pid 3 "Scheduler": stop-the-world slices, and counters (runnable
 *                  goroutines, threads, idle Ps, GOMAXPROCS);
 * plus flow arrows from the goroutine that created or woke another to the
 * slice where that one next started.  Slices are complete events ("X"),
 * emitted when they end; those still open at the stop end at the stop
 * time.  Slices on a track never overlap: a P's goroutine slices follow
 * each other, and an M's "P" slices end where its syscall slices begin.
 */
#include "atomic.h"
#include "defs.h"
#include "libc.h"
#include "lock_futex.h"
#include "sched.h"
#include "symbolize.h"
#include "trace.h"
#include "trace_impl.h"
#include "tracehooks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * The writer: JSON output.
 * ------------------------------------------------------------------------- */

#define OUT_SIZE (1 << 16)
#define NAMES 4096 /* function name cache entries (a power of two) */
#define PID_PROCS 1
#define PID_THREADS 2
#define PID_SCHED 3
#define FOREIGN_TID_BASE 1000000 /* tid of extra M -n: base + n */

struct fname {
    uintptr_t fn;
    char *name;
};

/* What the writer knows about a P track. */
struct pstate {
    int64_t g;        /* the G running on it (0: none), since gts */
    uintptr_t fn;
    int64_t gts;
    int32_t m;        /* the M holding it, since mts, when mheld */
    bool mheld;
    int64_t mts;
    int64_t last;     /* latest time seen (timestamps never go back) */
    bool used;
};

/* What the writer knows about an M track. */
struct mstate {
    int32_t id;
    int32_t tid;      /* kernel tid, 0 unknown */
    bool sysmon;      /* it made sysmon's records */
};

struct gort__tracew {
    struct out {
        char buf[OUT_SIZE];
        size_t n;
        bool first;
    } out;
    struct pstate ps[GORT_MAX_PROCS];
    struct mstate *ms;
    int32_t nms, capms;
    struct fname names[NAMES];
    char namebuf[256];
    /* The dumps' symbolizer (ELF symbol tables: static functions too),
     * used by the writer's thread only. */
    struct symcache sym;
    uint64_t dropped;
    int64_t nevents;
    int64_t lastsample;
    /* P p's losses no record reported (its pool ran dry until the stop):
     * how many and since when; set by collect before wstop. */
    uint64_t pdropn[GORT_MAX_PROCS];
    int64_t pdrop[GORT_MAX_PROCS];
};

static void out_flush(struct out *o)
{
    size_t off = 0;
    while (off < o->n && gort__tr.werr == 0) {
        ssize_t w = gort__libc.write(gort__tr.fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            gort__tr.werr = w < 0 ? -errno : -EIO;
        else
            off += (size_t)w;
    }
    o->n = 0;
}

static inline void out_need(struct out *o, size_t n)
{
    if (o->n + n > OUT_SIZE)
        out_flush(o);
}

static void out_raw(struct out *o, const char *s, size_t n)
{
    while (n > 0) {
        out_need(o, 1);
        size_t k = OUT_SIZE - o->n < n ? OUT_SIZE - o->n : n;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

static inline void out_s(struct out *o, const char *s)
{
    out_raw(o, s, strlen(s));
}

static void out_i64(struct out *o, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    out_need(o, 21);
    if (v < 0)
        o->buf[o->n++] = '-';
    while (n)
        o->buf[o->n++] = tmp[--n];
}

/* Nanoseconds since the start, as microseconds with three decimals (the
 * format's unit is the microsecond). */
static void out_us(struct out *o, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    out_i64(o, ns / 1000);
    int64_t f = ns % 1000;
    out_need(o, 4);
    o->buf[o->n++] = '.';
    o->buf[o->n++] = (char)('0' + f / 100);
    o->buf[o->n++] = (char)('0' + f / 10 % 10);
    o->buf[o->n++] = (char)('0' + f % 10);
}

/* s escaped for a JSON string, without the quotes. */
static void out_esc(struct out *o, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        out_need(o, 6);
        if (c == '"' || c == '\\') {
            o->buf[o->n++] = '\\';
            o->buf[o->n++] = (char)c;
        } else if (c < 0x20) {
            memcpy(o->buf + o->n, "\\u00", 4);
            o->n += 4;
            o->buf[o->n++] = hex[c >> 4];
            o->buf[o->n++] = hex[c & 15];
        } else {
            o->buf[o->n++] = (char)c;
        }
    }
}

/* A JSON string, quoted and escaped. */
static void out_q(struct out *o, const char *s)
{
    out_s(o, "\"");
    out_esc(o, s);
    out_s(o, "\"");
}

/* Open one trace event object, {"ph":"X","pid":1,"tid":2,"ts":3.000;
 * the caller adds the rest and the closing brace. */
static void ev_open(struct gort__tracew *w, char ph, int pid, int64_t tid,
                    int64_t ts)
{
    struct out *o = &w->out;
    out_s(o, w->out.first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    w->out.first = false;
    out_raw(o, &ph, 1);
    out_s(o, "\",\"pid\":");
    out_i64(o, pid);
    out_s(o, ",\"tid\":");
    out_i64(o, tid);
    out_s(o, ",\"ts\":");
    out_us(o, ts - gort__tr.t0);
    w->nevents++;
}

/* ,"dur":D for a slice from begin to end. */
static void out_dur(struct out *o, int64_t begin, int64_t end)
{
    out_s(o, ",\"dur\":");
    out_us(o, end > begin ? end - begin : 0);
}

/* The start function of a goroutine as a name: its symbol (with +0xoff
 * when fn is inside it), or its address when it has none.  Cached per
 * address. */
static const char *fn_name(struct gort__tracew *w, uintptr_t fn)
{
    if (!fn)
        return "?";
    uint32_t h = (uint32_t)(((uint64_t)fn * 0x9e3779b97f4a7c15ull) >> 52);
    struct fname *slot = NULL;
    for (uint32_t i = 0; i < NAMES; i++) {
        struct fname *f = &w->names[(h + i) & (NAMES - 1)];
        if (f->fn == fn)
            return f->name;
        if (!f->fn) {
            slot = f;
            break;
        }
    }
    char *buf = w->namebuf;
    struct symres r;
    gort__sym_lookup(&w->sym, fn, &r);
    if (!r.name)
        snprintf(buf, sizeof w->namebuf, "%#lx", (unsigned long)fn);
    else if (r.start == fn)
        snprintf(buf, sizeof w->namebuf, "%s", r.name);
    else
        snprintf(buf, sizeof w->namebuf, "%s+%#lx", r.name,
                 (unsigned long)(fn - r.start));
    if (slot) {
        char *copy = strdup(buf);
        if (copy) {
            slot->fn = fn;
            slot->name = copy;
            return copy;
        }
    }
    return buf; /* the table is full, or no memory: not cached */
}

/* The tid of M m's track: its id, or for extra Ms (negative ids) above
 * every runtime M. */
static int64_t m_tid(int32_t m)
{
    return m >= 0 ? m : FOREIGN_TID_BASE + (int64_t)-m;
}

/* The writer's record of M m, made on first sight (NULL without memory:
 * its track then goes unnamed). */
static struct mstate *mstate(struct gort__tracew *w, int32_t m)
{
    for (int32_t i = w->nms - 1; i >= 0; i--)
        if (w->ms[i].id == m)
            return &w->ms[i];
    if (w->nms == w->capms) {
        int32_t cap = w->capms ? w->capms * 2 : 64;
        struct mstate *n = gort__realloc(w->ms, (size_t)cap * sizeof *n);
        if (!n)
            return NULL;
        w->ms = n;
        w->capms = cap;
    }
    w->ms[w->nms] = (struct mstate){.id = m};
    return &w->ms[w->nms++];
}

/* The track of an event: its P's, or its M's. */
static void ev_open_track(struct gort__tracew *w, char ph, const struct tev *e,
                          int64_t ts)
{
    if (e->p >= 0) {
        w->ps[e->p].used = true;
        ev_open(w, ph, PID_PROCS, e->p, ts);
    } else {
        mstate(w, e->m);
        ev_open(w, ph, PID_THREADS, m_tid(e->m), ts);
    }
}

/* An instant on the event's track: name, category, then the caller's
 * args (a JSON object body) and closing. */
static void j_instant(struct gort__tracew *w, const struct tev *e,
                      const char *cat)
{
    ev_open_track(w, 'i', e, e->ts);
    out_s(&w->out, ",\"s\":\"t\",\"cat\":\"");
    out_s(&w->out, cat);
    out_s(&w->out, "\",\"name\":\"");
}

/* One end of a flow arrow: 's' where a G was made runnable, 'f' on the
 * slice where it next started. */
static void j_flow(struct gort__tracew *w, char ph, const struct tev *e,
                   int64_t id, int64_t ts)
{
    struct out *o = &w->out;
    ev_open_track(w, ph, e, ts);
    out_s(o, ph == 'f' ? ",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"ready\","
                         "\"id\":"
                       : ",\"cat\":\"flow\",\"name\":\"ready\",\"id\":");
    out_i64(o, id);
    out_s(o, "}");
}

/* A goroutine's slice on P track p, from ps->gts to end. */
static void j_gslice(struct gort__tracew *w, int32_t p, struct pstate *ps,
                     int64_t end, const char *why)
{
    struct out *o = &w->out;
    const char *fn = fn_name(w, ps->fn);
    ev_open(w, 'X', PID_PROCS, p, ps->gts);
    out_dur(o, ps->gts, end);
    out_s(o, ",\"cat\":\"goroutine\",\"name\":\"G");
    out_i64(o, ps->g);
    out_s(o, " ");
    out_esc(o, fn);
    out_s(o, "\",\"args\":{\"g\":");
    out_i64(o, ps->g);
    out_s(o, ",\"fn\":");
    out_q(o, fn);
    out_s(o, ",\"end\":");
    out_q(o, why);
    out_s(o, "}}");
}

/* M m held P p from begin to end: a slice "P<p>" on the M's track. */
static void j_pslice(struct gort__tracew *w, int32_t m, int32_t p,
                     int64_t begin, int64_t end)
{
    struct out *o = &w->out;
    mstate(w, m);
    ev_open(w, 'X', PID_THREADS, m_tid(m), begin);
    out_dur(o, begin, end);
    out_s(o, ",\"cat\":\"proc\",\"name\":\"P");
    out_i64(o, p);
    out_s(o, "\",\"args\":{\"p\":");
    out_i64(o, p);
    out_s(o, "}}");
}

/* ---------------------------------------------------------------------------
 * The writer: from records to events.
 * ------------------------------------------------------------------------- */

/* P p's state, with ts moved up to the latest time seen on it (a record
 * can carry a time a little before the previous one's when two Ms read
 * the clock around a hand-off). */
static struct pstate *pstate_at(struct gort__tracew *w, int p, int64_t *ts)
{
    if (p < 0 || p >= GORT_MAX_PROCS)
        return NULL;
    struct pstate *ps = &w->ps[p];
    ps->used = true;
    if (*ts < ps->last)
        *ts = ps->last;
    ps->last = *ts;
    return ps;
}

static void close_g(struct gort__tracew *w, int p, struct pstate *ps,
                    int64_t end, const char *why)
{
    if (ps->g) {
        j_gslice(w, p, ps, end, why);
        ps->g = 0;
    }
}

static void close_m(struct gort__tracew *w, int p, struct pstate *ps,
                    int64_t end)
{
    if (ps->mheld) {
        j_pslice(w, ps->m, p, ps->mts, end);
        ps->mheld = false;
    }
}

static void hold(struct pstate *ps, int32_t m, int64_t ts)
{
    ps->mheld = true;
    ps->m = m;
    ps->mts = ts;
}

static const char *stop_name(int reason)
{
    switch (reason) {
    case STOP_PREEMPT: return "preempted";
    case STOP_SIGNAL: return "preempted (signal)";
    default: return "yield";
    }
}

static const char *steal_name(int why)
{
    switch (why) {
    case TRACE_STEAL_SYSMON: return "sysmon";
    case TRACE_STEAL_WATCHER: return "syscall watcher";
    default: return "stop-the-world";
    }
}

#define LOST "unknown (events lost)"

/* The records that change what a P track shows. */
static void conv_pstate(struct gort__tracew *w, const struct tev *e)
{
    int64_t ts = e->ts;
    struct pstate *ps = pstate_at(w, e->p, &ts);
    if (!ps)
        return; /* a G's own records without a P (none are made) */
    switch (e->kind) {
    case EV_PROC_START: {
        close_g(w, e->p, ps, ts, LOST);
        close_m(w, e->p, ps, ts);
        hold(ps, e->m, ts);
        struct mstate *m = mstate(w, e->m);
        if (m)
            m->tid = (int32_t)e->a1;
        break;
    }
    case EV_PROC_STOP:
        close_g(w, e->p, ps, ts, "its P was released");
        close_m(w, e->p, ps, ts);
        break;
    case EV_GO_START:
        close_g(w, e->p, ps, ts, LOST);
        if (!ps->mheld || ps->m != e->m) {
            close_m(w, e->p, ps, ts);
            hold(ps, e->m, ts);
        }
        ps->g = e->g;
        ps->fn = (uintptr_t)e->a1;
        ps->gts = ts;
        if (e->a2)
            j_flow(w, 'f', e, e->a2, ts);
        break;
    default: { /* the G stops running here */
        const char *why = e->kind == EV_GO_STOP    ? stop_name(e->reason)
                          : e->kind == EV_GO_BLOCK ? gort__waitreason_name(
                                                         e->reason)
                          : e->kind == EV_GO_END   ? "exit"
                                                   : "syscall";
        if (ps->g && ps->g != e->g)
            close_g(w, e->p, ps, ts, LOST);
        close_g(w, e->p, ps, ts, why);
        if (e->kind == EV_GO_SYSCALL)
            close_m(w, e->p, ps, ts); /* the M keeps no P in a syscall */
        break;
    }
    }
}

static void conv(struct gort__tracew *w, const struct tev *e)
{
    struct out *o = &w->out;
    switch (e->kind) {
    case EV_PROC_START:
    case EV_PROC_STOP:
    case EV_GO_START:
    case EV_GO_STOP:
    case EV_GO_BLOCK:
    case EV_GO_END:
    case EV_GO_SYSCALL:
        conv_pstate(w, e);
        break;
    case EV_GO_CREATE:
    case EV_GO_UNBLOCK: {
        bool create = e->kind == EV_GO_CREATE;
        j_instant(w, e, create ? "create" : "unblock");
        out_s(o, create ? "create G" : "unblock G");
        out_i64(o, e->g);
        out_s(o, "\",\"args\":{\"g\":");
        out_i64(o, e->g);
        if (create) {
            out_s(o, ",\"fn\":");
            out_q(o, fn_name(w, (uintptr_t)e->a1));
        } else {
            out_s(o, ",\"reason\":");
            out_q(o, gort__waitreason_name(e->reason));
        }
        out_s(o, "}}");
        j_flow(w, 's', e, create ? e->a2 : e->a1, e->ts);
        break;
    }
    case EV_SYSCALL:
        mstate(w, e->m);
        ev_open(w, 'X', PID_THREADS, m_tid(e->m), e->a1);
        out_dur(o, e->a1, e->ts);
        out_s(o, ",\"cat\":\"syscall\",\"name\":\"syscall\",\"args\":{\"g\":");
        out_i64(o, e->g);
        if (e->reason)
            out_s(o, ",\"unfinished\":true");
        out_s(o, "}}");
        break;
    case EV_SPIN:
        mstate(w, e->m);
        ev_open(w, 'X', PID_THREADS, m_tid(e->m), e->a1);
        out_dur(o, e->a1, e->ts);
        out_s(o, ",\"cat\":\"spinning\",\"name\":\"spinning\",\"args\":{}}");
        break;
    case EV_PROC_STEAL: {
        struct mstate *m = mstate(w, e->m);
        if (m && e->reason == TRACE_STEAL_SYSMON)
            m->sysmon = true;
        j_instant(w, e, "procsteal");
        out_s(o, "P");
        out_i64(o, e->p);
        out_s(o, " retaken from a syscall\",\"args\":{\"by\":\"");
        out_s(o, steal_name(e->reason));
        out_s(o, "\"}}");
        break;
    }
    case EV_STEAL:
        j_instant(w, e, "steal");
        out_s(o, "steal from P");
        out_i64(o, e->a1);
        out_s(o, "\",\"args\":{\"victim\":");
        out_i64(o, e->a1);
        out_s(o, "}}");
        break;
    case EV_PREEMPT: {
        struct mstate *m = mstate(w, e->m);
        if (m)
            m->sysmon = true;
        j_instant(w, e, "preempt");
        out_s(o, "preempt request\",\"args\":{\"by\":\"sysmon\"}}");
        break;
    }
    case EV_STW:
        ev_open(w, 'X', PID_SCHED, 1, e->a1);
        out_dur(o, e->a1, e->ts);
        out_s(o, ",\"cat\":\"stw\",\"name\":\"stop-the-world\",\"args\":"
                 "{\"why\":");
        out_q(o, e->a2 ? (const char *)(uintptr_t)e->a2 : "?");
        out_s(o, ",\"gomaxprocs\":");
        out_i64(o, e->g);
        out_s(o, "}}");
        ev_open(w, 'C', PID_SCHED, 0, e->ts);
        out_s(o, ",\"name\":\"gomaxprocs\",\"args\":{\"procs\":");
        out_i64(o, e->g);
        out_s(o, "}}");
        break;
    case EV_NETPOLL:
        j_instant(w, e, "netpoll");
        out_s(o, "netpoll\",\"args\":{\"ready\":");
        out_i64(o, e->a1);
        out_s(o, "}}");
        break;
    case EV_TIMERS:
        j_instant(w, e, "timers");
        out_s(o, "timers\",\"args\":{\"fired\":");
        out_i64(o, e->a1);
        out_s(o, ",\"heap_of\":");
        out_i64(o, e->a2);
        out_s(o, "}}");
        break;
    case EV_DROPPED: {
        w->dropped += (uint64_t)e->a1;
        int64_t ts = e->a2;
        struct pstate *ps = e->p >= 0 ? pstate_at(w, e->p, &ts) : NULL;
        if (ps) {
            close_g(w, e->p, ps, ts, LOST);
            close_m(w, e->p, ps, ts);
        }
        j_instant(w, e, "lost");
        out_s(o, "events lost\",\"args\":{\"count\":");
        out_i64(o, e->a1);
        out_s(o, "}}");
        break;
    }
    case EV_MINFO: {
        struct mstate *m = mstate(w, e->m);
        if (m)
            m->tid = (int32_t)e->a1;
        break;
    }
    }
}

/* Counters, sampled by the writer: racy reads of the scheduler's state,
 * some of it written under sched.lock with plain stores; as schedtrace's
 * (debug.c), excluded from ThreadSanitizer for that reason only.  Ps and
 * Ms are never freed while the runtime runs, and the writer is joined
 * before gort_main frees them. */
GORT_NO_TSAN static void sample(struct gort__tracew *w, int64_t now)
{
    struct out *o = &w->out;
    int32_t n = load_acq(&gort__gomaxprocs);
    struct p **allp = gort__allp_load();
    int64_t local = 0;
    for (int32_t i = 0; allp && i < n; i++) {
        struct p *pp = allp[i];
        int32_t len = (int32_t)(load_relaxed(&pp->runqtail) -
                                load_relaxed(&pp->runqhead));
        local += len > 0 ? len : 0;
        local += load_relaxed(&pp->runnext) != NULL;
    }
    ev_open(w, 'C', PID_SCHED, 0, now);
    out_s(o, ",\"name\":\"runnable goroutines\",\"args\":{\"global\":");
    out_i64(o, load_relaxed(&gort__sched.runqsize));
    out_s(o, ",\"local\":");
    out_i64(o, local);
    out_s(o, "}}");
    ev_open(w, 'C', PID_SCHED, 0, now);
    out_s(o, ",\"name\":\"threads\",\"args\":{\"total\":");
    out_i64(o, load_relaxed(&gort__sched.mnext) -
                   load_relaxed(&gort__sched.nmfreed));
    out_s(o, ",\"idle\":");
    out_i64(o, load_relaxed(&gort__sched.nmidle));
    out_s(o, ",\"spinning\":");
    out_i64(o, load_relaxed(&gort__sched.nmspinning));
    out_s(o, "}}");
    ev_open(w, 'C', PID_SCHED, 0, now);
    out_s(o, ",\"name\":\"idle procs\",\"args\":{\"idle\":");
    out_i64(o, load_relaxed(&gort__sched.npidle));
    out_s(o, "}}");
    w->lastsample = now;
}

/* Convert every queued buffer and give them back to the pool. */
static void drain(struct gort__tracew *w)
{
    for (;;) {
        gort__spinlock_m(NULL, &gort__tr.lock);
        struct gort__tracebuf *q = gort__tr.qhead;
        gort__tr.qhead = gort__tr.qtail = NULL;
        gort__spinunlock_m(NULL, &gort__tr.lock);
        if (!q)
            return;
        struct gort__tracebuf *last = q;
        int32_t n = 0;
        for (struct gort__tracebuf *b = q; b; b = b->next) {
            for (uint32_t i = 0; i < b->n; i++)
                conv(w, &b->ev[i]);
            last = b;
            n++;
        }
        gort__spinlock_m(NULL, &gort__tr.lock);
        last->next = gort__tr.free;
        gort__tr.free = q;
        store_relaxed(&gort__tr.nfree, gort__tr.nfree + n);
        gort__spinunlock_m(NULL, &gort__tr.lock);
    }
}

static void j_meta(struct gort__tracew *w, int pid, int64_t tid,
                   const char *what, const char *name, int64_t sort)
{
    struct out *o = &w->out;
    char ph = 'M';
    out_s(o, w->out.first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    w->out.first = false;
    out_raw(o, &ph, 1);
    out_s(o, "\",\"pid\":");
    out_i64(o, pid);
    out_s(o, ",\"tid\":");
    out_i64(o, tid);
    out_s(o, ",\"name\":\"");
    out_s(o, what);
    out_s(o, "\",\"args\":{");
    if (name) {
        out_s(o, "\"name\":");
        out_q(o, name);
    } else {
        out_s(o, "\"sort_index\":");
        out_i64(o, sort);
    }
    out_s(o, "}}");
}

/* The end of the trace: close what is open at the stop time, name the
 * tracks, write the metadata and close the file. */
static void finish(struct gort__tracew *w)
{
    struct out *o = &w->out;
    int64_t t1 = gort__tr.stop_ts;
    for (int p = 0; p < GORT_MAX_PROCS; p++) {
        struct pstate *ps = &w->ps[p];
        if (!ps->used)
            continue;
        /* Events lost at the end: what ran then is unknown. */
        int64_t end = w->pdrop[p] ? w->pdrop[p] : t1;
        if (end < ps->last)
            end = ps->last;
        close_g(w, p, ps, end,
                w->pdrop[p] ? LOST : "running when tracing stopped");
        close_m(w, p, ps, end);
        if (w->pdropn[p]) {
            struct tev e = {.ts = end, .p = (int16_t)p};
            j_instant(w, &e, "lost");
            out_s(o, "events lost\",\"args\":{\"count\":");
            out_i64(o, (int64_t)w->pdropn[p]);
            out_s(o, "}}");
        }
    }
    w->dropped += gort__tr.stop_dropped;
    char name[96];
    j_meta(w, PID_PROCS, 0, "process_name", "Procs (P)", 0);
    j_meta(w, PID_PROCS, 0, "process_sort_index", NULL, 1);
    j_meta(w, PID_THREADS, 0, "process_name", "Threads (M)", 0);
    j_meta(w, PID_THREADS, 0, "process_sort_index", NULL, 2);
    j_meta(w, PID_SCHED, 0, "process_name", "Scheduler", 0);
    j_meta(w, PID_SCHED, 0, "process_sort_index", NULL, 3);
    j_meta(w, PID_SCHED, 1, "thread_name", "stop-the-world", 0);
    for (int p = 0; p < GORT_MAX_PROCS; p++) {
        if (!w->ps[p].used)
            continue;
        snprintf(name, sizeof name, "P%d", p);
        j_meta(w, PID_PROCS, p, "thread_name", name, 0);
        j_meta(w, PID_PROCS, p, "thread_sort_index", NULL, p);
    }
    for (int32_t i = 0; i < w->nms; i++) {
        struct mstate *m = &w->ms[i];
        int k = snprintf(name, sizeof name, "M%d", m->id);
        if (m->id < 0)
            snprintf(name + k, sizeof name - (size_t)k, " (foreign thread)");
        else if (m->tid)
            k += snprintf(name + k, sizeof name - (size_t)k, " tid %d",
                          m->tid);
        if (m->id >= 0 && m->sysmon)
            snprintf(name + k, sizeof name - (size_t)k, " sysmon");
        j_meta(w, PID_THREADS, m_tid(m->id), "thread_name", name, 0);
        j_meta(w, PID_THREADS, m_tid(m->id), "thread_sort_index", NULL,
               m_tid(m->id));
    }
    out_s(o, "\n],\n\"metadata\":{\"producer\":\"gort\",\"format_version\":1,"
             "\"clock\":\"");
    /* The simulation mode's timestamps are its virtual clock's. */
    out_s(o, gort__sim_on() ? "virtual" : "CLOCK_MONOTONIC");
    out_s(o, "\",\"start_ns\":");
    out_i64(o, gort__tr.t0);
    out_s(o, ",\"stop_ns\":");
    out_i64(o, t1);
    out_s(o, ",\"trace_events\":");
    out_i64(o, w->nevents);
    out_s(o, ",\"dropped_events\":");
    out_i64(o, (int64_t)w->dropped);
    out_s(o, ",\"buffers\":");
    out_i64(o, gort__tr.nbufs);
    out_s(o, ",\"records_per_buffer\":");
    out_i64(o, TRACE_BUF_EVENTS);
    out_s(o, "}}\n");
    out_flush(o);
    if (gort__libc.close(gort__tr.fd) < 0 && gort__tr.werr == 0)
        gort__tr.werr = -errno;
    gort__tr.fd = -1;
}

void *gort__tracew_main(void *arg)
{
    struct gort__tracew *w = arg;
    out_s(&w->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    w->out.first = true;
    for (;;) {
        /* Acquire both: the queue and the stop record were published
         * before them. */
        uint32_t gen = load_acq(&gort__tr.wgen);
        bool stop = load_acq(&gort__tr.wstop);
        /* Relaxed: a test's switch, polled. */
        if (stop || !load_relaxed(&gort__trace_stall))
            drain(w);
        if (stop)
            break; /* everything was queued before wstop */
        int64_t now = gort_nanotime();
        /* Acquire: t0, which the samples are relative to, was set first.
         * None in the simulation mode: this thread wakes by the real
         * clock, so what it would sample, and at which virtual time,
         * would differ from run to run of the same seed, whose trace is
         * otherwise the same (docs/sim.md). */
        if (!gort__sim_on() && load_acq(&gort__tr.began) &&
            now - w->lastsample >= 1000 * 1000)
            sample(w, now);
        gort__futexsleep(&gort__tr.wgen, gen, 1000 * 1000);
    }
    finish(w);
    return NULL;
}

struct gort__tracew *gort__tracew_new(void)
{
    struct gort__tracew *w = gort__calloc(1, sizeof *w);
    if (w)
        gort__sym_init(&w->sym);
    return w;
}

void gort__tracew_free(struct gort__tracew *w)
{
    if (!w)
        return;
    for (int i = 0; i < NAMES; i++)
        gort__free(w->names[i].name);
    gort__sym_fini(&w->sym);
    gort__free(w->ms);
    gort__free(w);
}

void gort__tracew_lost(struct gort__tracew *w, int p, uint64_t n,
                       int64_t since)
{
    w->pdropn[p] = n;
    w->pdrop[p] = since;
}
