/* SPDX-License-Identifier: MIT */
/*
 * trace.c - the execution tracer's recorder: gort_trace_start and
 * gort_trace_stop (GORTDEBUG=trace=path), the hooks and the event
 * buffers.  The writer thread that turns the buffers into Chrome Trace
 * Event JSON (Perfetto, chrome://tracing, tools/traceview.html) is
 * trace_json.c; what the two share is trace_impl.h.
 *
 * What is recorded follows Go's tracer (runtime/traceruntime.go,
 * internal/trace/tracev2/events.go): goroutines created, started, stopped
 * (yield, preemption), blocked (with the wait reason), unblocked, ended,
 * in and out of syscalls; Ps taken and released by Ms, and retaken from
 * syscalls; work stealing; sysmon's preemption requests; stop-the-world;
 * goroutines made ready by the network poller and by timers.  The writer
 * samples run queue and thread counts every millisecond.
 *
 * Recording.  Every event is a fixed 40-byte record (struct tev) with a
 * CLOCK_MONOTONIC timestamp, appended to a buffer of 1024 records:
 *   - the buffer of the P the recording M holds, without a lock (only the
 *     M holding a P writes its buffer; P hand-offs order the writers);
 *   - for an M without a P (sysmon, an M back from a syscall without its
 *     P, the network poller), the M's own buffer, also without a lock:
 *     the M makes its sequence word odd, checks that tracing is still on,
 *     appends, and makes the word even again; stopping waits for even;
 *   - for threads gort did not create (extra Ms), one shared buffer under
 *     the buffer lock (they create and wake goroutines, rarely).
 * Buffers come from a pool allocated when tracing starts (bounded memory:
 * 64 buffers or more, 40 KiB each).  A full buffer goes to the writer's
 * queue and a free one is taken; when none is free (the writer is behind)
 * events are dropped and counted, and the next buffer the P or M gets
 * starts with a record of how many were lost and since when.  The total
 * is in the trace's metadata ("dropped_events").
 *
 * Timestamps: CLOCK_MONOTONIC through the vDSO (gort_nanotime).  RDTSC is
 * cheaper, but where the kernel marks the TSC unstable (virtual machines
 * whose TSC may jump across snapshots and differ between vCPUs) it cannot
 * order events recorded on different CPUs; the monotonic clock can
 * (docs/design.md has the costs measured).
 *
 * Starting and stopping stop the world (as Go's StartTrace/StopTrace did
 * before Go 1.22): while it is stopped no M holds a P but the caller's, so
 * the on flag can change under no P's feet, the caller's running
 * goroutine is recorded as running from the start, and every P buffer can
 * be collected at the stop.  Ms without a P are waited for through their
 * sequence words.  GORTDEBUG=trace=path starts before any other thread
 * exists and stops after they have all ended, without a stop-the-world.
 *
 * Writing: trace_json.c's file comment says what the file holds.
 *
 * Invariants:
 *   - gort__trace_on changes only while the world is stopped (or while
 *     the runtime has a single thread), so a hook that saw it on while
 *     holding a P records into that P's buffer before the stop can
 *     collect it.
 *   - A buffer is in exactly one place: the free list, a P or M (being
 *     filled), the shared foreign slot, or the writer's queue (under the
 *     buffer lock), or with the writer (being converted).
 *   - gort__tr.state goes IDLE -> STARTING -> RUNNING -> STOPPING ->
 *     IDLE, the first three steps by CAS, so one start or stop runs at a
 *     time and a second start gets -EBUSY without touching its path; the
 *     last step is made by whoever waited for the writer (session_close).
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "lock_futex.h"
#include "procresize.h"
#include "san.h"
#include "sched.h"
#include "trace.h"
#include "trace_impl.h"
#include "tracehooks.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint32_t gort__trace_stall;
struct gort__trace_state gort__tr = {
    .lock = GORT_LOCK_INIT(LOCKRANK_TRACEBUF),
    .fd = -1,
};

/* ---------------------------------------------------------------------------
 * The writer's queue.
 * ------------------------------------------------------------------------- */

static void writer_wake(void)
{
    /* Release: orders the queue change before the writer's futex check. */
    xadd_acqrel(&gort__tr.wgen, 1);
    gort__futexwake(&gort__tr.wgen, 1);
}

/* Queue a buffer for the writer; the buffer lock is held. */
static void enqueue_locked(struct gort__tracebuf *b)
{
    gort__lock_assert_held(&gort__tr.lock);
    b->next = NULL;
    if (gort__tr.qtail)
        gort__tr.qtail->next = b;
    else
        gort__tr.qhead = b;
    gort__tr.qtail = b;
}

/* ---------------------------------------------------------------------------
 * Recording: where an M's events go (a sink), and appending to it.
 * ------------------------------------------------------------------------- */

enum { SINK_P, SINK_M, SINK_FOREIGN };

struct sink {
    struct m *mp;
    int kind;
    bool locked;                  /* the buffer lock is held */
    struct gort__tracebuf **bufp; /* the buffer being filled */
    uint64_t *dropped;
    int64_t *dropts;
    int16_t owner_p;              /* the P of a P sink, else -1 */
};

/* Hand the full buffer (if any) to the writer and take a free one for the
 * sink.  Without a free buffer the record being put is lost and counted;
 * the next buffer begins with the count.  Returns the new buffer or NULL. */
static struct gort__tracebuf *buf_next(struct sink *s,
                                       struct gort__tracebuf *full,
                                       int64_t ts)
{
    struct gort__tracebuf *b = NULL;
    bool wake = false;
    /* Relaxed: a hint; the pop below, under the lock, decides. */
    if (full || load_relaxed(&gort__tr.nfree) > 0) {
        if (!s->locked)
            gort__spinlock_m(s->mp, &gort__tr.lock);
        if (full)
            enqueue_locked(full);
        b = gort__tr.free;
        if (b) {
            gort__tr.free = b->next;
            store_relaxed(&gort__tr.nfree, gort__tr.nfree - 1);
        }
        /* Wake the writer early when the pool runs low; otherwise it
         * looks every millisecond. */
        wake = gort__tr.nfree < gort__tr.nbufs / 4;
        if (!s->locked)
            gort__spinunlock_m(s->mp, &gort__tr.lock);
    }
    *s->bufp = b;
    if (wake)
        writer_wake();
    if (!b) {
        if ((*s->dropped)++ == 0)
            *s->dropts = ts;
        return NULL;
    }
    b->n = 0;
    if (*s->dropped) {
        b->ev[b->n++] = (struct tev){.ts = ts,
                                     .a1 = (int64_t)*s->dropped,
                                     .a2 = *s->dropts,
                                     .m = (int32_t)s->mp->id,
                                     .p = s->owner_p,
                                     .kind = EV_DROPPED};
        *s->dropped = 0;
    }
    if (s->kind == SINK_M)
        b->ev[b->n++] = (struct tev){.ts = ts,
                                     .a1 = s->mp->procid,
                                     .m = (int32_t)s->mp->id,
                                     .p = -1,
                                     .kind = EV_MINFO};
    return b;
}

static inline void sink_put(struct sink *s, const struct tev *e)
{
    struct gort__tracebuf *b = *s->bufp;
    if (GORT_UNLIKELY(!b || b->n == TRACE_BUF_EVENTS)) {
        b = buf_next(s, b, e->ts);
        if (!b)
            return;
    }
    b->ev[b->n++] = *e;
}

/* Start recording for mp: false when tracing is off after all (an M
 * without a P may see the flag late).  Every true must be followed by
 * sink_close. */
static bool sink_open(struct m *mp, struct sink *s)
{
    s->mp = mp;
    s->locked = false;
    s->owner_p = -1;
    if (GORT_UNLIKELY(mp->foreign)) {
        gort__spinlock_m(mp, &gort__tr.lock);
        /* Acquire: pairs with the seq-cst store that turned tracing on,
         * after the session's state was set up.  Under the lock, which
         * collect takes after turning it off. */
        if (!load_acq(&gort__trace_on)) {
            gort__spinunlock_m(mp, &gort__tr.lock);
            return false;
        }
        s->kind = SINK_FOREIGN;
        s->locked = true;
        s->bufp = &gort__tr.fbuf;
        s->dropped = &gort__tr.fdropped;
        s->dropts = &gort__tr.fdropts;
        return true;
    }
    struct p *pp = mp->p;
    if (pp) {
        /* Holding a P: tracing cannot stop before we let go of it. */
        s->kind = SINK_P;
        s->bufp = &pp->trace.buf;
        s->dropped = &pp->trace.dropped;
        s->dropts = &pp->trace.dropts;
        s->owner_p = (int16_t)pp->id;
        return true;
    }
    /* Seq-cst store of an odd sequence, then seq-cst load of the flag;
     * collect stores the flag (seq-cst) and then loads every sequence
     * (seq-cst).  One of us sees the other: either we see tracing off, or
     * collect waits until we make the sequence even. */
    uint32_t seq = load_relaxed(&mp->trace.seq);
    store_seqcst(&mp->trace.seq, seq + 1);
    if (!load_seqcst(&gort__trace_on)) {
        store_rel(&mp->trace.seq, seq + 2);
        return false;
    }
    s->kind = SINK_M;
    s->bufp = &mp->trace.buf;
    s->dropped = &mp->trace.dropped;
    s->dropts = &mp->trace.dropts;
    return true;
}

static void sink_close(struct sink *s)
{
    if (s->kind == SINK_FOREIGN) {
        gort__spinunlock_m(s->mp, &gort__tr.lock);
    } else if (s->kind == SINK_M) {
        /* Release: publishes the records to collect's seq-cst load. */
        store_rel(&s->mp->trace.seq, load_relaxed(&s->mp->trace.seq) + 1);
    }
}

/* The P track of an event recorded by mp now: its P, or -1. */
static inline int16_t ptrack(struct m *mp)
{
    return mp->p && !mp->foreign ? (int16_t)mp->p->id : -1;
}

static inline void put(struct sink *s, int kind, int reason, int16_t p,
                       int64_t ts, int64_t g, int64_t a1, int64_t a2)
{
    struct tev e = {.ts = ts, .g = g, .a1 = a1, .a2 = a2,
                    .m = (int32_t)s->mp->id, .p = p,
                    .kind = (uint8_t)kind, .reason = (uint8_t)reason};
    sink_put(s, &e);
}

/* ---------------------------------------------------------------------------
 * Flows: which creation or wake-up led to which start.
 *
 * g->traceseq holds the session (8 bits), a count of the times the G was
 * made runnable by someone (23 bits) and a pending bit: set by the
 * creator or waker, cleared by the M that next starts the G.  Both sides
 * derive the same flow id from the G's id and the count.  Each side owns
 * the G at that moment (the transition's one entitled party), and the run
 * queue between them orders the two.
 * ------------------------------------------------------------------------- */

static inline int64_t flow_id(int64_t goid, uint32_t n)
{
    return (goid << 23) | (int64_t)(n & 0x7fffff);
}

static int64_t flow_give(struct g *gp)
{
    uint32_t t = gp->traceseq, sess = gort__tr.session & 0xff;
    uint32_t n = (t >> 24) == sess ? ((t >> 1) & 0x7fffff) + 1 : 1;
    gp->traceseq = sess << 24 | (n & 0x7fffff) << 1 | 1;
    return flow_id(gp->goid, n);
}

static int64_t flow_take(struct g *gp)
{
    uint32_t t = gp->traceseq;
    if (!(t & 1) || (t >> 24) != (gort__tr.session & 0xff))
        return 0;
    gp->traceseq = t & ~1u;
    return flow_id(gp->goid, (t >> 1) & 0x7fffff);
}

/* ---------------------------------------------------------------------------
 * The hooks' recording halves (trace.h says when each is called).
 * ------------------------------------------------------------------------- */

/* mp's G left its syscall (now ts): the syscall's slice on mp's track. */
static void syscall_done(struct sink *s, struct m *mp, struct g *gp,
                         int64_t ts)
{
    /* Relaxed: our own field; collect reads it too, with the world
     * stopped or after our sequence went even. */
    int64_t begin = load_relaxed(&mp->trace.sysbegin);
    int64_t end = mp->trace.sysend;
    mp->trace.sysend = 0;
    if (begin < gort__tr.t0)
        begin = gort__tr.t0; /* began before tracing did */
    if (end < begin || end > ts)
        end = ts; /* exitsyscall ran while tracing was off */
    put(s, EV_SYSCALL, 0, -1, end, gp->goid, begin, 0);
    store_relaxed(&mp->trace.sysbegin, 0);
}

static void gstatus_event(struct m *mp, struct g *gp, uint32_t from,
                          uint32_t to);

static void rec_gstatus(struct g *gp, uint32_t from, uint32_t to)
{
    /* A foreign thread's own G and a G being made (no id yet) are not
     * goroutines of the trace. */
    if (gp->foreign || gp->goid == 0)
        return;
    struct m *mp = gort__getm_raw();
    if (mp)
        gstatus_event(mp, gp, from, to);
}

static void rec_syscall_marked(struct m *mp, struct g *gp)
{
    if (!gp->foreign && gp->goid != 0)
        gstatus_event(mp, gp, G_RUNNING, G_SYSCALL);
}

/* The event for gp's change from -> to, as seen on mp (the M running it,
 * or, for gort__trace_syscall_marked, the M it sleeps on). */
static void gstatus_event(struct m *mp, struct g *gp, uint32_t from,
                          uint32_t to)
{
    int64_t ts = gort_nanotime();
    struct sink s;
    if (!sink_open(mp, &s))
        return;
    int16_t p = ptrack(mp);
    int64_t goid = gp->goid;
    if (to == G_RUNNING) {
        if (from == G_SYSCALL)
            syscall_done(&s, mp, gp, ts);
        put(&s, EV_GO_START, 0, p, ts, goid, (int64_t)(uintptr_t)gp->fn,
            flow_take(gp));
    } else if (from == G_RUNNING) {
        switch (to) {
        case G_RUNNABLE: {
            uint32_t why = mp->trace.stopreason;
            mp->trace.stopreason = 0;
            put(&s, EV_GO_STOP, why ? (int)why : STOP_YIELD, p, ts, goid,
                0, 0);
            break;
        }
        case G_PREEMPTED:
            put(&s, EV_GO_STOP, STOP_SIGNAL, p, ts, goid, 0, 0);
            break;
        case G_WAITING:
            put(&s, EV_GO_BLOCK, (int)gp->waitreason, p, ts, goid, 0, 0);
            break;
        case G_DEAD:
            put(&s, EV_GO_END, 0, p, ts, goid, 0, 0);
            break;
        case G_SYSCALL:
            store_relaxed(&mp->trace.sysg, goid);
            store_relaxed(&mp->trace.sysbegin, ts);
            put(&s, EV_GO_SYSCALL, 0, p, ts, goid, 0, 0);
            break;
        }
    } else if (to == G_RUNNABLE) {
        if (from == G_DEAD)
            put(&s, EV_GO_CREATE, 0, p, ts, goid,
                (int64_t)(uintptr_t)gp->fn, flow_give(gp));
        else if (from == G_WAITING)
            put(&s, EV_GO_UNBLOCK, (int)gp->waitreason, p, ts, goid,
                flow_give(gp), 0);
        else if (from == G_SYSCALL)
            syscall_done(&s, mp, gp, ts); /* queued: no P to go back to */
        /* PREEMPTED -> RUNNABLE follows the stop on the same M. */
    }
    sink_close(&s);
}

/* A G that is running as its M takes a P (the stopper's G when
 * GOMAXPROCS moves it to another P): it runs on the new P from now. */
static void start_running_curg(struct sink *s, struct m *mp, int64_t ts)
{
    struct g *cg = mp->curg;
    if (cg && !cg->foreign && cg->goid != 0 &&
        gort__readgstatus(cg) == G_RUNNING)
        put(s, EV_GO_START, 0, ptrack(mp), ts, cg->goid,
            (int64_t)(uintptr_t)cg->fn, 0);
}

static void rec_procstart(struct m *mp, struct p *pp)
{
    struct sink s;
    int64_t ts = gort_nanotime();
    if (!sink_open(mp, &s))
        return;
    put(&s, EV_PROC_START, 0, (int16_t)pp->id, ts, 0, mp->procid, 0);
    start_running_curg(&s, mp, ts);
    sink_close(&s);
}

static void rec_procstop(struct m *mp, struct p *pp)
{
    struct sink s;
    int64_t ts = gort_nanotime();
    if (!sink_open(mp, &s))
        return;
    put(&s, EV_PROC_STOP, 0, (int16_t)pp->id, ts, 0, 0, 0);
    sink_close(&s);
}

static void rec_syscall_exit(struct m *mp)
{
    /* Owner only: read when the G's status leaves G_SYSCALL. */
    mp->trace.sysend = gort_nanotime();
}

/* One instant-like record by the current M, at ts (0: now). */
static void record_at(int64_t ts, int kind, int reason, int16_t p,
                      int64_t g, int64_t a1, int64_t a2)
{
    struct m *mp = gort__getm_raw();
    if (!mp)
        return;
    if (ts == 0)
        ts = gort_nanotime();
    struct sink s;
    if (!sink_open(mp, &s))
        return;
    put(&s, kind, reason, p == -2 ? ptrack(mp) : p, ts, g, a1, a2);
    sink_close(&s);
}

static void record(int kind, int reason, int16_t p, int64_t g, int64_t a1,
                   int64_t a2)
{
    record_at(0, kind, reason, p, g, a1, a2);
}

static void rec_procsteal(struct p *pp, int why)
{
    record(EV_PROC_STEAL, why, (int16_t)pp->id, 0, 0, 0);
}

static void rec_steal(struct m *mp, struct p *victim)
{
    (void)mp;
    record(EV_STEAL, 0, -2, 0, victim->id, 0);
}

static void rec_preempt_request(struct p *pp)
{
    record(EV_PREEMPT, 0, (int16_t)pp->id, 0, 0, 0);
}

static void rec_preempted(struct m *mp)
{
    mp->trace.stopreason = STOP_PREEMPT; /* owner only */
}

static void rec_stw_begin(const char *why)
{
    /* Only the stopper (worldsema) touches these. */
    gort__tr.stw_begin = gort_nanotime();
    gort__tr.stw_why = why;
}

static void rec_stw_end(struct m *mp, int64_t end)
{
    (void)mp;
    if (gort__tr.stw_begin == 0)
        return; /* began while tracing was off */
    /* Ends when the world ran again, not now: the stopper's thread may
     * have waited for a CPU since, while the other Ps ran goroutines. */
    record_at(end, EV_STW, 0, -1, load_relaxed(&gort__gomaxprocs),
              gort__tr.stw_begin, (int64_t)(uintptr_t)gort__tr.stw_why);
    gort__tr.stw_begin = 0;
}

static void rec_netpoll(int32_t n)
{
    record(EV_NETPOLL, 0, -2, 0, n, 0);
}

static void rec_timers(struct p *owner, int32_t n)
{
    if (n == 0)
        return;
    record(EV_TIMERS, 0, -2, 0, n, owner->id);
}

static void rec_mpark(struct m *mp)
{
    /* An idle M may sleep for long: give the writer what it has. */
    struct sink s;
    if (!sink_open(mp, &s))
        return;
    if (s.kind == SINK_M && mp->trace.buf) {
        gort__spinlock_m(mp, &gort__tr.lock);
        enqueue_locked(mp->trace.buf);
        gort__spinunlock_m(mp, &gort__tr.lock);
        mp->trace.buf = NULL;
    }
    sink_close(&s);
}

static void rec_spinning(struct m *mp, bool on)
{
    /* spinbegin is the M's own (owner only). */
    int64_t now = gort_nanotime();
    if (on) {
        mp->trace.spinbegin = now;
        return;
    }
    int64_t begin = mp->trace.spinbegin;
    mp->trace.spinbegin = 0;
    /* A spin that began before this session (or in an earlier one) has no
     * known start inside it: its interval is left out rather than cut at
     * t0, where it could straddle the start of the M's P slice. */
    if (begin == 0 || begin < gort__tr.t0)
        return;
    record(EV_SPIN, 0, -1, 0, begin, 0);
}

/* ---------------------------------------------------------------------------
 * Sessions.
 * ------------------------------------------------------------------------- */

/* Buffers for a session: 4 per P and CPU plus 32, within [64, 1024]
 * (2.5 to 40 MiB). */
static int32_t pool_size(void)
{
    int32_t n = 4 * (gort__allp_len + gort__ncpu) + 32;
    return n < 64 ? 64 : n > 1024 ? 1024 : n;
}

/* Give back what session_open took (the file is closed by the writer,
 * or here when it never ran). */
static void session_free(void)
{
    gort__tracew_free(gort__tr.w);
    gort__tr.w = NULL;
    gort__free(gort__tr.mem);
    gort__tr.mem = NULL;
    gort__tr.free = gort__tr.qhead = gort__tr.qtail = gort__tr.fbuf = NULL;
    store_relaxed(&gort__tr.nfree, 0);
    if (gort__tr.fd >= 0)
        gort__libc.close(gort__tr.fd);
    gort__tr.fd = -1;
}

/* Open the file, allocate the pool and start the writer.  0 or -errno;
 * on failure nothing is left (a file we created is removed). */
static int session_open(const char *path)
{
    struct stat st;
    bool existed = stat(path, &st) == 0;
    int fd = gort_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return fd;
    gort__tr.fd = fd;
    gort__tr.nbufs = pool_size();
    gort__tr.mem = gort__calloc((size_t)gort__tr.nbufs, sizeof *gort__tr.mem);
    gort__tr.w = gort__tracew_new();
    int err = gort__tr.mem && gort__tr.w ? 0 : -ENOMEM;
    if (!err) {
        gort__tr.free = NULL;
        for (int32_t i = 0; i < gort__tr.nbufs; i++) {
            gort__tr.mem[i].next = gort__tr.free;
            gort__tr.free = &gort__tr.mem[i];
        }
        store_relaxed(&gort__tr.nfree, gort__tr.nbufs);
        gort__tr.qhead = gort__tr.qtail = gort__tr.fbuf = NULL;
        gort__tr.fdropped = 0;
        gort__tr.wgen = 0;
        store_relaxed(&gort__tr.wstop, 0);
        store_relaxed(&gort__tr.began, 0);
        gort__tr.stop_ts = 0;
        gort__tr.stop_dropped = 0;
        gort__tr.werr = 0;
        /* The writer takes no signal: they are the program's (and
         * SIGURG is gort's preemption). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        err = -pthread_create(&gort__tr.thread, NULL, gort__tracew_main,
                              gort__tr.w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        gort__tr.thread_started = err == 0;
        if (!err)
            pthread_setname_np(gort__tr.thread, "gort-trace");
    }
    if (err) {
        session_free();
        if (!existed)
            unlink(path);
    }
    return err;
}

/* Tracing begins: the world is stopped (or only mp's thread runs), and
 * mp holds a P.  The running G (if any) is recorded as running from now. */
static void session_begin(struct m *mp)
{
    gort__tr.session++;
    gort__tr.t0 = gort_nanotime();
    gort__tr.stw_begin = 0;
    store_rel(&gort__tr.began, 1); /* see gort__tracew_main */
    /* Seq-cst: after the session's state above (Ms without a P load the
     * flag seq-cst, foreign threads with acquire); see sink_open. */
    store_seqcst(&gort__trace_on, 1);
    struct sink s;
    if (mp->p && sink_open(mp, &s)) {
        put(&s, EV_PROC_START, 0, (int16_t)mp->p->id, gort__tr.t0, 0,
            mp->procid, 0);
        start_running_curg(&s, mp, gort__tr.t0);
        sink_close(&s);
    }
}

/* A sink on mp's own stream with tracing already off (collect): only
 * mp writes it now. */
static void sink_raw(struct m *mp, struct sink *s)
{
    s->mp = mp;
    s->locked = false;
    s->owner_p = -1;
    if (mp->p) {
        s->kind = SINK_P;
        s->bufp = &mp->p->trace.buf;
        s->dropped = &mp->p->trace.dropped;
        s->dropts = &mp->p->trace.dropts;
        s->owner_p = (int16_t)mp->p->id;
    } else {
        s->kind = SINK_M;
        s->bufp = &mp->trace.buf;
        s->dropped = &mp->trace.dropped;
        s->dropts = &mp->trace.dropts;
    }
}

/* Tracing ends: the world is stopped (or only mp's thread runs).  Turn
 * tracing off, wait for Ms without a P that are recording, and queue
 * every buffer for the writer, mp's last; then tell the writer to
 * finish. */
static void session_collect(struct m *mp)
{
    struct gort__tracew *w = gort__tr.w;
    gort__tr.stop_ts = gort_nanotime();
    /* Seq-cst: see sink_open. */
    store_seqcst(&gort__trace_on, 0);
    struct m *allm = load_acq(&gort__allm);
    for (struct m *m = allm; m; m = m->alllink)
        while (load_seqcst(&m->trace.seq) & 1)
            gort__cpu_relax();
    /* Syscalls still running: their slices end now. */
    struct sink c;
    sink_raw(mp, &c);
    for (struct m *m = allm; m; m = m->alllink) {
        int64_t begin = load_relaxed(&m->trace.sysbegin);
        if (begin == 0)
            continue;
        struct tev e = {.ts = gort__tr.stop_ts,
                        .g = load_relaxed(&m->trace.sysg),
                        .a1 = begin,
                        .m = (int32_t)m->id,
                        .p = -1,
                        .kind = EV_SYSCALL,
                        .reason = 1};
        sink_put(&c, &e);
        store_relaxed(&m->trace.sysbegin, 0);
    }
    uint64_t lost = 0;
    gort__spinlock_m(mp, &gort__tr.lock);
    lost += gort__tr.fdropped;
    gort__tr.fdropped = 0;
    if (gort__tr.fbuf)
        enqueue_locked(gort__tr.fbuf);
    gort__tr.fbuf = NULL;
    struct p *own = mp->p;
    for (int32_t i = 0; i < gort__allp_len; i++) {
        struct p *pp = gort__allp[i];
        if (pp->trace.dropped) {
            lost += pp->trace.dropped;
            gort__tracew_lost(w, i, pp->trace.dropped, pp->trace.dropts);
            pp->trace.dropped = 0;
        }
        if (pp != own && pp->trace.buf) {
            enqueue_locked(pp->trace.buf);
            pp->trace.buf = NULL;
        }
    }
    for (struct m *m = allm; m; m = m->alllink) {
        lost += m->trace.dropped;
        m->trace.dropped = 0;
        if (m != mp && m->trace.buf) {
            enqueue_locked(m->trace.buf);
            m->trace.buf = NULL;
        }
    }
    if (own && own->trace.buf) {
        enqueue_locked(own->trace.buf);
        own->trace.buf = NULL;
    }
    if (mp->trace.buf) {
        enqueue_locked(mp->trace.buf);
        mp->trace.buf = NULL;
    }
    gort__tr.stop_dropped = lost;
    gort__spinunlock_m(mp, &gort__tr.lock);
    /* Release: the queue and the stop record before the flag. */
    store_rel(&gort__tr.wstop, 1);
    writer_wake();
}

/* Wait for the writer to finish, free the session and return the first
 * error writing the file (0 if none). */
static int session_close(void)
{
    if (gort__tr.thread_started) {
        if (!load_acq(&gort__tr.wstop)) {
            /* Stopped before any record was collected (a start cut off
             * by shutdown): an empty trace. */
            gort__tr.stop_ts = gort_nanotime();
            store_rel(&gort__tr.wstop, 1);
        }
        writer_wake();
        pthread_join(gort__tr.thread, NULL);
        gort__tr.thread_started = false;
    }
    int err = gort__tr.werr;
    session_free();
    store_rel(&gort__tr.state, T_IDLE);
    return err;
}

/* ---------------------------------------------------------------------------
 * The API.
 * ------------------------------------------------------------------------- */

/* The caller must be a goroutine on a P (not a foreign thread): the
 * world is stopped from it. */
static struct m *caller_m(void)
{
    struct m *mp = gort__getm();
    if (!mp || !mp->curg || mp->curg->foreign || !mp->p)
        return NULL;
    return mp;
}

int gort_trace_start(const char *path)
{
    GORT_SAN_SCOPE();
#ifdef GORT_NO_TRACE
    /* The baseline build for the overhead measurement: no hooks. */
    if (path)
        return -ENOSYS;
#endif
    if (!path || !*path)
        return -EINVAL;
    if (!caller_m())
        return -EPERM;
    if (!cas_acqrel(&gort__tr.state, T_IDLE, T_STARTING))
        return -EBUSY;
    int err = session_open(path);
    if (err) {
        store_rel(&gort__tr.state, T_IDLE);
        return err;
    }
    gort__stop_the_world("trace start");
    session_begin(gort__getm());
    gort__start_the_world();
    store_rel(&gort__tr.state, T_RUNNING);
    return 0;
}

int gort_trace_stop(void)
{
    GORT_SAN_SCOPE();
    if (!caller_m())
        return -EPERM;
    if (!cas_acqrel(&gort__tr.state, T_RUNNING, T_STOPPING))
        return load_acq(&gort__tr.state) == T_IDLE ? -EINVAL : -EBUSY;
    gort__stop_the_world("trace stop");
    session_collect(gort__getm());
    gort__start_the_world();
    /* The writer may have a pool's worth of records to write: let the
     * P go to another thread meanwhile. */
    gort_entersyscallblock();
    int err = session_close();
    gort_exitsyscall();
    return err;
}

void gort__trace_register(void)
{
    gort__tracehooks = (struct gort__tracehooks){
        .gstatus = rec_gstatus,
        .procstart = rec_procstart,
        .procstop = rec_procstop,
        .syscall_exit = rec_syscall_exit,
        .syscall_marked = rec_syscall_marked,
        .procsteal = rec_procsteal,
        .steal = rec_steal,
        .preempt_request = rec_preempt_request,
        .preempted = rec_preempted,
        .stw_begin = rec_stw_begin,
        .stw_end = rec_stw_end,
        .netpoll = rec_netpoll,
        .timers = rec_timers,
        .mpark = rec_mpark,
        .spinning = rec_spinning,
    };
}

void gort__trace_boot(struct m *mp, const char *path)
{
    if (!path[0])
        return;
#ifdef GORT_NO_TRACE
    gort__printf(2, "gort: GORTDEBUG=trace=%s: this build has no tracer; "
                    "not tracing\n", path);
    return;
#endif
    if (!cas_acqrel(&gort__tr.state, T_IDLE, T_STARTING))
        return;
    int err = session_open(path);
    if (err) {
        store_rel(&gort__tr.state, T_IDLE);
        gort__printf(2, "gort: GORTDEBUG=trace=%s: cannot write the trace "
                        "(%s); not tracing\n", path, strerror(-err));
        return;
    }
    session_begin(mp);
    store_rel(&gort__tr.state, T_RUNNING);
}

void gort__trace_shutdown(void)
{
    if (load_acq(&gort__tr.state) == T_IDLE)
        return;
    /* Every M but ours has ended.  A start or stop cut off by the end of
     * gort_main (its goroutine discarded) is finished here too. */
    if (load_relaxed(&gort__trace_on))
        session_collect(gort__getm_raw());
    session_close();
}
