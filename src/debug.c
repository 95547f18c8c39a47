/* SPDX-License-Identifier: MIT */
/*
 * debug.c - schedtrace and scheddetail (the goroutine dumps of fatal
 * errors and SIGQUIT are traceback.c's; the errors themselves fatal.c's).
 *
 * Output formats are Go's, so that people and tools that read Go's output
 * read ours:
 *
 *   gort: fatal error: all goroutines are asleep - deadlock!
 *
 *   goroutine 1 [sync.WaitGroup.Wait]:
 *   main_g(...)
 *   	/path/to/prog:0x1b2e3 +0x23
 *
 *   SIGQUIT: quit
 *   PC=0x7f3a1c2d4e5f m=0 sigcode=0
 *
 *   SCHED 14ms: gomaxprocs=4 idleprocs=4 threads=5 spinningthreads=0
 *     needspinning=0 idlethreads=3 runqueue=0 [ 0 0 0 0 ] schedticks=[ 1 0 2 3 ]
 *
 * (the SCHED line is one line; with scheddetail=1 it is followed by one
 * line per P, M and G, as schedtrace(true) prints them in proc.go).
 *
 * schedtrace holds sched.lock while it prints, as Go's does, so the
 * scheduler-wide counts are consistent; the per-P, per-M and per-G fields
 * are a racy snapshot (their owners change them without any lock), as in
 * Go.  Structures are never freed while the runtime runs, so the racy
 * reads are safe; the functions that make them are excluded from
 * ThreadSanitizer (GORT_NO_TSAN) for that reason only.  The fatal-error
 * dump reads without locks: it must work whatever lock is held.
 *
 * Invariants:
 *   - One report at a time: a second fatal error on the reporting thread
 *     aborts at once, one on another thread waits for the first to end
 *     the process.
 *   - Printing never allocates (fixed stack buffers), so it works when
 *     malloc is broken or the fatal error is "out of memory".
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "lock_futex.h"
#include "mthread.h"
#include "san.h"
#include "sched.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * schedtrace.  Mirrors schedtrace (proc.go).
 * ------------------------------------------------------------------------- */

/* A line being assembled for one write(2). */
struct line {
    char buf[8192];
    size_t len;
};

static void lput(struct line *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void lflush(struct line *l)
{
    size_t off = 0;
    struct m *mp = gort__libc_begin();
    while (off < l->len) {
        ssize_t w = gort__libc.write(2, l->buf + off, l->len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    gort__libc_end(mp);
    l->len = 0;
    l->buf[0] = 0;
}

/* Append to the line; a line longer than the buffer (thousands of Ps) is
 * written out in pieces rather than cut. */
static void lput(struct line *l, const char *fmt, ...)
{
    char piece[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof piece ? (size_t)n : sizeof piece - 1;
    if (l->len + len >= sizeof l->buf)
        lflush(l);
    memcpy(l->buf + l->len, piece, len);
    l->len += len;
    l->buf[l->len] = 0;
}

GORT_NO_TSAN static void trace_p(struct line *l, struct p *pp, bool detail, int32_t i,
                    int32_t n)
{
    uint32_t h = load_relaxed(&pp->runqhead);
    uint32_t t = load_relaxed(&pp->runqtail);
    if (!detail) {
        lput(l, " %s%u%s", i == 0 ? "[ " : "", t - h, i == n - 1 ? " ]" : "");
        return;
    }
    struct m *mp = load_relaxed(&pp->m);
    /* The state only: a P in a system call carries that entry's sequence
     * number in the bits above it (enum pstatus). */
    lput(l, "  P%d: status=%u schedtick=%u syscalltick=%u m=", i,
         gort__pstatus(load_relaxed(&pp->status)),
         load_relaxed(&pp->schedtick), load_relaxed(&pp->syscalltick));
    if (mp)
        lput(l, "%lld", (long long)mp->id);
    else
        lput(l, "nil");
    /* timerslen: the heap's length, read without the P's timers lock as
     * Go reads len(pp.timers.heap). */
    lput(l, " runqsize=%u gfreecnt=%d timerslen=%u\n", t - h, pp->ngfree,
         load_relaxed(&pp->timers.len));
    lflush(l);
}

/* " lockedg=" and " lockedm=" fields: a goid or an M id, or nil. */
static void put_id(struct line *l, const char *key, bool ok, long long id)
{
    if (ok)
        lput(l, " %s=%lld", key, id);
    else
        lput(l, " %s=nil", key);
}

/* Go's M line without mallocing, which marks an M inside Go's own
 * allocator (mallocgc) and has no counterpart here (docs/design.md,
 * "schedtrace's detail lines"). */
GORT_NO_TSAN static void trace_ms(struct line *l)
{
    int dying = gort__fatal_dying();
    for (struct m *mp = load_acq(&gort__allm); mp; mp = mp->alllink) {
        struct p *pp = load_relaxed(&mp->p);
        struct g *cg = load_relaxed(&mp->curg);
        struct g *lg = load_relaxed(&mp->lockedg);
        lput(l, "  M%lld: p=", (long long)mp->id);
        if (pp)
            lput(l, "%d", pp->id);
        else
            lput(l, "nil");
        lput(l, " curg=");
        if (cg)
            lput(l, "%lld", (long long)cg->goid);
        else
            lput(l, "nil");
        /* preemptoff: Go's names why the M may not be preempted; here
         * the one reason is its G's gort_preempt_disable. */
        lput(l, " throwing=%d preemptoff=%s locks=%d dying=%d "
                "spinning=%s blocked=%s",
             dying, cg && cg->preemptoff ? "gort_preempt_disable" : "",
             mp->locks, dying, mp->spinning ? "true" : "false",
             load_relaxed(&mp->blocked) ? "true" : "false");
        put_id(l, "lockedg", lg != NULL, lg ? (long long)lg->goid : 0);
        lput(l, "\n");
        lflush(l);
    }
}

/* Every G ever made, dead ones too (with the goid they last had), as
 * Go's forEachG shows them. */
GORT_NO_TSAN static void trace_gs(struct line *l)
{
    uint32_t n = load_acq(&gort__allglen);
    for (uint32_t i = 0; i < n; i++) {
        struct g *gp = gort__allgs[i];
        uint32_t s = gort__readgstatus(gp);
        struct m *mp = load_relaxed(&gp->m);
        struct m *lm = load_relaxed(&gp->lockedm);
        lput(l, "  G%lld: status=%u(%s) m=", (long long)gp->goid, s,
             s == G_WAITING ? gort__waitreason_name(gp->waitreason) : "");
        if (mp)
            lput(l, "%lld", (long long)mp->id);
        else
            lput(l, "nil");
        put_id(l, "lockedm", lm != NULL, lm ? (long long)lm->id : 0);
        lput(l, "\n");
        lflush(l);
    }
}

void gort__schedtrace(bool detail)
{
    static struct line l; /* sysmon or a G calls this: serialised below */
    static gort_lock tracelock = GORT_LOCK_INIT(LOCKRANK_SCHEDTRACE);
    gort__lock(&tracelock);
    gort__lock(&gort__sched.lock);
    int64_t now = gort_nanotime();
    lput(&l, "SCHED %lldms: gomaxprocs=%d idleprocs=%d threads=%d "
             "spinningthreads=%d needspinning=%u idlethreads=%d runqueue=%d",
         (long long)((now - gort__runtime_init_time) / 1000000),
         load_relaxed(&gort__gomaxprocs), load_relaxed(&gort__sched.npidle),
         gort__mcount(), load_relaxed(&gort__sched.nmspinning),
         load_relaxed(&gort__sched.needspinning),
         load_relaxed(&gort__sched.nmidle),
         load_relaxed(&gort__sched.runqsize));
    if (detail) {
        lput(&l, " gcwaiting=%s nmidlelocked=%d stopwait=%d sysmonwait=%s\n",
             load_relaxed(&gort__sched.gcwaiting) ? "true" : "false",
             load_relaxed(&gort__sched.nmidlelocked),
             load_relaxed(&gort__sched.stopwait),
             load_relaxed(&gort__sched.sysmonwait) ? "true" : "false");
        lflush(&l);
    }
    gort__lock(&gort__allplock);
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++)
        trace_p(&l, gort__allp[i], detail, i, n);
    if (!detail) {
        lput(&l, " schedticks=[ ");
        for (int32_t i = 0; i < n; i++)
            lput(&l, "%u ", load_relaxed(&gort__allp[i]->schedtick));
        lput(&l, "]\n");
        lflush(&l);
    }
    gort__unlock(&gort__allplock);
    if (detail) {
        trace_ms(&l);
        trace_gs(&l);
    }
    gort__unlock(&gort__sched.lock);
    gort__unlock(&tracelock);
}

void gort_schedtrace(int detail)
{
    GORT_SAN_SCOPE();
    if (load_relaxed(&gort__main_started))
        gort__schedtrace(detail != 0);
}

int gort_sched_ticks(uint32_t *ticks, int n)
{
    if (!load_relaxed(&gort__main_started))
        return 0;
    if (!ticks)
        n = 0; /* the count alone */
    gort__lock(&gort__allplock);
    int32_t procs = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < procs && i < n; i++)
        ticks[i] = load_relaxed(&gort__allp[i]->schedtick);
    gort__unlock(&gort__allplock);
    return procs;
}
