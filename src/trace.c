/*
 * trace.c - the execution tracer: gort_trace_start/gort_trace_stop
 * (GORTDEBUG=trace=path), the event buffers, and the writer thread that
 * turns them into Chrome Trace Event JSON (Perfetto, chrome://tracing,
 * tools/traceview.html).
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
 * Writing.  A writer thread (not an M: it never runs goroutines) takes
 * full buffers off the queue in the order they were queued (so each P's
 * events come in order), keeps a little state per P (the G running on it
 * and since when, the M holding it and since when) and writes:
 *   pid 1 "Procs": one track per P; a slice per stretch a goroutine ran,
 *                  "G12 worker" (id and start function), its args saying
 *                  why it stopped; instants for creations, wake-ups,
 *                  steals, preemption requests, retakes, netpoll, timers;
 *   pid 2 "Threads": one track per M; a slice "P3" while it held P3, a
 *                  slice "syscall" per system call;
 *   pid 3 "Scheduler": stop-the-world slices, and counters (runnable
 *                  goroutines, threads, idle Ps, GOMAXPROCS);
 * plus flow arrows from the goroutine that created or woke another to the
 * slice where that one next started.  Slices are complete events ("X"),
 * emitted when they end; those still open at the stop end at the stop
 * time.  Slices on a track never overlap: a P's goroutine slices follow
 * each other, and an M's "P" slices end where its syscall slices begin.
 *
 * Invariants:
 *   - gort__trace_on changes only while the world is stopped (or while
 *     the runtime has a single thread), so a hook that saw it on while
 *     holding a P records into that P's buffer before the stop can
 *     collect it.
 *   - A buffer is in exactly one place: the free list, a P or M (being
 *     filled), the shared foreign slot, or the writer's queue (under the
 *     buffer lock), or with the writer (being converted).
 *   - tr.state goes IDLE -> STARTING -> RUNNING -> STOPPING -> IDLE, the
 *     first three steps by CAS, so one start or stop runs at a time and a
 *     second start gets -EBUSY without touching its path; the last step
 *     is made by whoever waited for the writer (session_close).
 */
#include "runtime.h"
#include "symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Records and buffers.
 * ------------------------------------------------------------------------- */

/* Event kinds, with what the fields hold ("g": the goroutine's id). */
enum {
    EV_NONE = 0,
    EV_GO_CREATE,   /* g, a1 fn, a2 flow id; on the creator's track */
    EV_GO_START,    /* g, a1 fn, a2 flow id (0: none) */
    EV_GO_STOP,     /* g, reason STOP_* (still runnable) */
    EV_GO_BLOCK,    /* g, reason its waitreason */
    EV_GO_END,      /* g */
    EV_GO_UNBLOCK,  /* g, a1 flow id, reason its waitreason */
    EV_GO_SYSCALL,  /* g: it enters a syscall (leaves its P) */
    EV_SYSCALL,     /* g, a1 begin; ts is the end; on m's track; reason 1:
                       still in it when tracing stopped */
    EV_PROC_START,  /* the P in p taken by m, a1 its kernel tid */
    EV_PROC_STOP,   /* the P in p released by m */
    EV_PROC_STEAL,  /* the P in p taken from its syscall; reason TRACE_STEAL_* */
    EV_STEAL,       /* the P in p stole Gs from P a1 */
    EV_PREEMPT,     /* sysmon asked the G on the P in p to yield */
    EV_STW,         /* a1 begin, a2 why (a static string), g gomaxprocs */
    EV_NETPOLL,     /* a1 goroutines made ready */
    EV_TIMERS,      /* a1 timers fired, a2 the P whose heap */
    EV_DROPPED,     /* a1 records lost, a2 when the first was lost; for
                       the P in p (or m's stream when p < 0) */
    EV_MINFO,       /* m's kernel tid in a1 (first record of an M buffer) */
};

/* Why a running G stopped while still runnable. */
enum { STOP_YIELD = 1, STOP_PREEMPT, STOP_SIGNAL };

/* One event.  p is the P track it belongs to, or -1 for m's track. */
struct tev {
    int64_t ts;
    int64_t g;
    int64_t a1, a2;
    int32_t m;
    int16_t p;
    uint8_t kind;
    uint8_t reason;
};
_Static_assert(sizeof(struct tev) == 40, "trace records are 40 bytes");

#define TRACE_BUF_EVENTS 1024

struct gort__tracebuf {
    struct gort__tracebuf *next; /* in the free list or the queue */
    uint32_t n;                  /* records used */
    struct tev ev[TRACE_BUF_EVENTS];
};

/* Session states (tr.state). */
enum { T_IDLE = 0, T_STARTING, T_RUNNING, T_STOPPING };

struct writer;

uint32_t gort__trace_on;
uint32_t gort__trace_stall;

static struct {
    /* Read by every recording M, written only by start and stop: a line
     * of their own (the pool's fields below change all the time). */
    uint32_t state GORT_CACHELINE; /* T_*; changed by CAS */
    uint32_t session;        /* bumped by every start (g->traceseq tags) */
    int64_t t0;              /* when tracing started */
    int32_t nbufs;
    int fd;
    struct gort__tracebuf *mem;
    struct writer *w;
    /* The running stop-the-world (its stopper only). */
    int64_t stw_begin;
    const char *stw_why;
    /* The buffer lock: a leaf (runtime.h).  Protects the lists below and
     * the foreign slot. */
    gort_spinlock lock GORT_CACHELINE;
    struct gort__tracebuf *free;
    int32_t nfree;           /* atomic: read without the lock as a hint */
    struct gort__tracebuf *qhead, *qtail;
    struct gort__tracebuf *fbuf; /* threads gort did not create */
    uint64_t fdropped;
    int64_t fdropts;
    /* The writer. */
    uint32_t wgen GORT_CACHELINE; /* futex word: bumped to wake it */
    uint32_t wstop;          /* atomic: all buffers are queued; finish */
    uint32_t began;          /* atomic: t0 is set (the writer samples) */
    int64_t stop_ts;         /* set before wstop (release) */
    uint64_t stop_dropped;   /* lost records no marker reported */
    int werr;                /* the writer's first error (-errno) */
    pthread_t thread;
    bool thread_started;
} tr = {.fd = -1};

/* ---------------------------------------------------------------------------
 * The writer's queue.
 * ------------------------------------------------------------------------- */

static void writer_wake(void)
{
    /* Release: orders the queue change before the writer's futex check. */
    xadd_acqrel(&tr.wgen, 1);
    gort__futexwake(&tr.wgen, 1);
}

/* Queue a buffer for the writer; the buffer lock is held. */
static void enqueue_locked(struct gort__tracebuf *b)
{
    b->next = NULL;
    if (tr.qtail)
        tr.qtail->next = b;
    else
        tr.qhead = b;
    tr.qtail = b;
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
    if (full || load_relaxed(&tr.nfree) > 0) {
        if (!s->locked)
            gort__spinlock_m(s->mp, &tr.lock);
        if (full)
            enqueue_locked(full);
        b = tr.free;
        if (b) {
            tr.free = b->next;
            store_relaxed(&tr.nfree, tr.nfree - 1);
        }
        /* Wake the writer early when the pool runs low; otherwise it
         * looks every millisecond. */
        wake = tr.nfree < tr.nbufs / 4;
        if (!s->locked)
            gort__spinunlock_m(s->mp, &tr.lock);
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
        gort__spinlock_m(mp, &tr.lock);
        /* Acquire: pairs with the seq-cst store that turned tracing on,
         * after the session's state was set up.  Under the lock, which
         * collect takes after turning it off. */
        if (!load_acq(&gort__trace_on)) {
            gort__spinunlock_m(mp, &tr.lock);
            return false;
        }
        s->kind = SINK_FOREIGN;
        s->locked = true;
        s->bufp = &tr.fbuf;
        s->dropped = &tr.fdropped;
        s->dropts = &tr.fdropts;
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
        gort__spinunlock_m(s->mp, &tr.lock);
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
    uint32_t t = gp->traceseq, sess = tr.session & 0xff;
    uint32_t n = (t >> 24) == sess ? ((t >> 1) & 0x7fffff) + 1 : 1;
    gp->traceseq = sess << 24 | (n & 0x7fffff) << 1 | 1;
    return flow_id(gp->goid, n);
}

static int64_t flow_take(struct g *gp)
{
    uint32_t t = gp->traceseq;
    if (!(t & 1) || (t >> 24) != (tr.session & 0xff))
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
    if (begin < tr.t0)
        begin = tr.t0; /* began before tracing did */
    if (end < begin || end > ts)
        end = ts; /* exitsyscall ran while tracing was off */
    put(s, EV_SYSCALL, 0, -1, end, gp->goid, begin, 0);
    store_relaxed(&mp->trace.sysbegin, 0);
}

static void gstatus_event(struct m *mp, struct g *gp, uint32_t from,
                          uint32_t to);

void gort__trace_gstatus_slow(struct g *gp, uint32_t from, uint32_t to)
{
    /* A foreign thread's own G and a G being made (no id yet) are not
     * goroutines of the trace. */
    if (gp->foreign || gp->goid == 0)
        return;
    struct m *mp = gort__getm_raw();
    if (mp)
        gstatus_event(mp, gp, from, to);
}

void gort__trace_syscall_marked_slow(struct m *mp, struct g *gp)
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

void gort__trace_procstart_slow(struct m *mp, struct p *pp)
{
    struct sink s;
    int64_t ts = gort_nanotime();
    if (!sink_open(mp, &s))
        return;
    put(&s, EV_PROC_START, 0, (int16_t)pp->id, ts, 0, mp->procid, 0);
    start_running_curg(&s, mp, ts);
    sink_close(&s);
}

void gort__trace_procstop_slow(struct m *mp, struct p *pp)
{
    struct sink s;
    int64_t ts = gort_nanotime();
    if (!sink_open(mp, &s))
        return;
    put(&s, EV_PROC_STOP, 0, (int16_t)pp->id, ts, 0, 0, 0);
    sink_close(&s);
}

void gort__trace_syscall_exit_slow(struct m *mp)
{
    /* Owner only: read when the G's status leaves G_SYSCALL. */
    mp->trace.sysend = gort_nanotime();
}

/* One instant-like record by the current M. */
static void record(int kind, int reason, int16_t p, int64_t g, int64_t a1,
                   int64_t a2)
{
    struct m *mp = gort__getm_raw();
    if (!mp)
        return;
    int64_t ts = gort_nanotime();
    struct sink s;
    if (!sink_open(mp, &s))
        return;
    put(&s, kind, reason, p == -2 ? ptrack(mp) : p, ts, g, a1, a2);
    sink_close(&s);
}

void gort__trace_procsteal_slow(struct p *pp, int why)
{
    record(EV_PROC_STEAL, why, (int16_t)pp->id, 0, 0, 0);
}

void gort__trace_steal_slow(struct m *mp, struct p *victim)
{
    (void)mp;
    record(EV_STEAL, 0, -2, 0, victim->id, 0);
}

void gort__trace_preempt_request_slow(struct p *pp)
{
    record(EV_PREEMPT, 0, (int16_t)pp->id, 0, 0, 0);
}

void gort__trace_preempted_slow(struct m *mp)
{
    mp->trace.stopreason = STOP_PREEMPT; /* owner only */
}

void gort__trace_stw_begin_slow(const char *why)
{
    /* Only the stopper (worldsema) touches these. */
    tr.stw_begin = gort_nanotime();
    tr.stw_why = why;
}

void gort__trace_stw_end_slow(struct m *mp)
{
    (void)mp;
    if (tr.stw_begin == 0)
        return; /* began while tracing was off */
    record(EV_STW, 0, -1, load_relaxed(&gort__gomaxprocs), tr.stw_begin,
           (int64_t)(uintptr_t)tr.stw_why);
    tr.stw_begin = 0;
}

void gort__trace_netpoll_slow(int32_t n)
{
    record(EV_NETPOLL, 0, -2, 0, n, 0);
}

void gort__trace_timers_slow(struct p *owner, int32_t n)
{
    if (n == 0)
        return;
    record(EV_TIMERS, 0, -2, 0, n, owner->id);
}

void gort__trace_mpark_slow(struct m *mp)
{
    /* An idle M may sleep for long: give the writer what it has. */
    struct sink s;
    if (!sink_open(mp, &s))
        return;
    if (s.kind == SINK_M && mp->trace.buf) {
        gort__spinlock_m(mp, &tr.lock);
        enqueue_locked(mp->trace.buf);
        gort__spinunlock_m(mp, &tr.lock);
        mp->trace.buf = NULL;
    }
    sink_close(&s);
}

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

struct writer {
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
    while (off < o->n && tr.werr == 0) {
        ssize_t w = write(tr.fd, o->buf + off, o->n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            tr.werr = w < 0 ? -errno : -EIO;
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
static void ev_open(struct writer *w, char ph, int pid, int64_t tid,
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
    out_us(o, ts - tr.t0);
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
static const char *fn_name(struct writer *w, uintptr_t fn)
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
static struct mstate *mstate(struct writer *w, int32_t m)
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
static void ev_open_track(struct writer *w, char ph, const struct tev *e,
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
static void j_instant(struct writer *w, const struct tev *e,
                      const char *cat)
{
    ev_open_track(w, 'i', e, e->ts);
    out_s(&w->out, ",\"s\":\"t\",\"cat\":\"");
    out_s(&w->out, cat);
    out_s(&w->out, "\",\"name\":\"");
}

/* One end of a flow arrow: 's' where a G was made runnable, 'f' on the
 * slice where it next started. */
static void j_flow(struct writer *w, char ph, const struct tev *e,
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
static void j_gslice(struct writer *w, int32_t p, struct pstate *ps,
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
static void j_pslice(struct writer *w, int32_t m, int32_t p, int64_t begin,
                     int64_t end)
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
static struct pstate *pstate_at(struct writer *w, int p, int64_t *ts)
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

static void close_g(struct writer *w, int p, struct pstate *ps, int64_t end,
                    const char *why)
{
    if (ps->g) {
        j_gslice(w, p, ps, end, why);
        ps->g = 0;
    }
}

static void close_m(struct writer *w, int p, struct pstate *ps, int64_t end)
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
static void conv_pstate(struct writer *w, const struct tev *e)
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

static void conv(struct writer *w, const struct tev *e)
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
GORT_NO_TSAN static void sample(struct writer *w, int64_t now)
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
static void drain(struct writer *w)
{
    for (;;) {
        gort__spinlock_m(NULL, &tr.lock);
        struct gort__tracebuf *q = tr.qhead;
        tr.qhead = tr.qtail = NULL;
        gort__spinunlock_m(NULL, &tr.lock);
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
        gort__spinlock_m(NULL, &tr.lock);
        last->next = tr.free;
        tr.free = q;
        store_relaxed(&tr.nfree, tr.nfree + n);
        gort__spinunlock_m(NULL, &tr.lock);
    }
}

static void j_meta(struct writer *w, int pid, int64_t tid, const char *what,
                   const char *name, int64_t sort)
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
static void finish(struct writer *w)
{
    struct out *o = &w->out;
    int64_t t1 = tr.stop_ts;
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
    w->dropped += tr.stop_dropped;
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
             "\"clock\":\"CLOCK_MONOTONIC\",\"start_ns\":");
    out_i64(o, tr.t0);
    out_s(o, ",\"stop_ns\":");
    out_i64(o, t1);
    out_s(o, ",\"trace_events\":");
    out_i64(o, w->nevents);
    out_s(o, ",\"dropped_events\":");
    out_i64(o, (int64_t)w->dropped);
    out_s(o, ",\"buffers\":");
    out_i64(o, tr.nbufs);
    out_s(o, ",\"records_per_buffer\":");
    out_i64(o, TRACE_BUF_EVENTS);
    out_s(o, "}}\n");
    out_flush(o);
    if (close(tr.fd) < 0 && tr.werr == 0)
        tr.werr = -errno;
    tr.fd = -1;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    out_s(&w->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    w->out.first = true;
    for (;;) {
        /* Acquire both: the queue and the stop record were published
         * before them. */
        uint32_t gen = load_acq(&tr.wgen);
        bool stop = load_acq(&tr.wstop);
        /* Relaxed: a test's switch, polled. */
        if (stop || !load_relaxed(&gort__trace_stall))
            drain(w);
        if (stop)
            break; /* everything was queued before wstop */
        int64_t now = gort_nanotime();
        /* Acquire: t0, which the samples are relative to, was set first. */
        if (load_acq(&tr.began) && now - w->lastsample >= 1000 * 1000)
            sample(w, now);
        gort__futexsleep(&tr.wgen, gen, 1000 * 1000);
    }
    finish(w);
    return NULL;
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
    if (tr.w) {
        for (int i = 0; i < NAMES; i++)
            gort__free(tr.w->names[i].name);
        gort__sym_fini(&tr.w->sym);
        gort__free(tr.w->ms);
        gort__free(tr.w);
        tr.w = NULL;
    }
    gort__free(tr.mem);
    tr.mem = NULL;
    tr.free = tr.qhead = tr.qtail = tr.fbuf = NULL;
    store_relaxed(&tr.nfree, 0);
    if (tr.fd >= 0)
        close(tr.fd);
    tr.fd = -1;
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
    tr.fd = fd;
    tr.nbufs = pool_size();
    tr.mem = gort__calloc((size_t)tr.nbufs, sizeof *tr.mem);
    tr.w = gort__calloc(1, sizeof *tr.w);
    int err = tr.mem && tr.w ? 0 : -ENOMEM;
    if (tr.w)
        gort__sym_init(&tr.w->sym);
    if (!err) {
        tr.free = NULL;
        for (int32_t i = 0; i < tr.nbufs; i++) {
            tr.mem[i].next = tr.free;
            tr.free = &tr.mem[i];
        }
        store_relaxed(&tr.nfree, tr.nbufs);
        tr.qhead = tr.qtail = tr.fbuf = NULL;
        tr.fdropped = 0;
        tr.wgen = 0;
        store_relaxed(&tr.wstop, 0);
        store_relaxed(&tr.began, 0);
        tr.stop_ts = 0;
        tr.stop_dropped = 0;
        tr.werr = 0;
        /* The writer takes no signal: they are the program's (and
         * SIGURG is gort's preemption). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        err = -pthread_create(&tr.thread, NULL, writer_main, tr.w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        tr.thread_started = err == 0;
        if (!err)
            pthread_setname_np(tr.thread, "gort-trace");
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
    tr.session++;
    tr.t0 = gort_nanotime();
    tr.stw_begin = 0;
    store_rel(&tr.began, 1); /* see writer_main */
    /* Seq-cst: after the session's state above (Ms without a P load the
     * flag seq-cst, foreign threads with acquire); see sink_open. */
    store_seqcst(&gort__trace_on, 1);
    struct sink s;
    if (mp->p && sink_open(mp, &s)) {
        put(&s, EV_PROC_START, 0, (int16_t)mp->p->id, tr.t0, 0, mp->procid,
            0);
        start_running_curg(&s, mp, tr.t0);
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
    struct writer *w = tr.w;
    tr.stop_ts = gort_nanotime();
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
        struct tev e = {.ts = tr.stop_ts,
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
    gort__spinlock_m(mp, &tr.lock);
    lost += tr.fdropped;
    tr.fdropped = 0;
    if (tr.fbuf)
        enqueue_locked(tr.fbuf);
    tr.fbuf = NULL;
    struct p *own = mp->p;
    for (int32_t i = 0; i < gort__allp_len; i++) {
        struct p *pp = gort__allp[i];
        if (pp->trace.dropped) {
            lost += pp->trace.dropped;
            w->pdropn[i] = pp->trace.dropped;
            w->pdrop[i] = pp->trace.dropts;
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
    tr.stop_dropped = lost;
    gort__spinunlock_m(mp, &tr.lock);
    /* Release: the queue and the stop record before the flag. */
    store_rel(&tr.wstop, 1);
    writer_wake();
}

/* Wait for the writer to finish, free the session and return the first
 * error writing the file (0 if none). */
static int session_close(void)
{
    if (tr.thread_started) {
        if (!load_acq(&tr.wstop)) {
            /* Stopped before any record was collected (a start cut off
             * by shutdown): an empty trace. */
            tr.stop_ts = gort_nanotime();
            store_rel(&tr.wstop, 1);
        }
        writer_wake();
        pthread_join(tr.thread, NULL);
        tr.thread_started = false;
    }
    int err = tr.werr;
    session_free();
    store_rel(&tr.state, T_IDLE);
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
    if (!cas_acqrel(&tr.state, T_IDLE, T_STARTING))
        return -EBUSY;
    int err = session_open(path);
    if (err) {
        store_rel(&tr.state, T_IDLE);
        return err;
    }
    gort__stop_the_world("trace start");
    session_begin(gort__getm());
    gort__start_the_world();
    store_rel(&tr.state, T_RUNNING);
    return 0;
}

int gort_trace_stop(void)
{
    GORT_SAN_SCOPE();
    if (!caller_m())
        return -EPERM;
    if (!cas_acqrel(&tr.state, T_RUNNING, T_STOPPING))
        return load_acq(&tr.state) == T_IDLE ? -EINVAL : -EBUSY;
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

void gort__trace_boot(struct m *mp, const char *path)
{
    if (!path[0])
        return;
#ifdef GORT_NO_TRACE
    gort__printf(2, "gort: GORTDEBUG=trace=%s: this build has no tracer; "
                    "not tracing\n", path);
    return;
#endif
    if (!cas_acqrel(&tr.state, T_IDLE, T_STARTING))
        return;
    int err = session_open(path);
    if (err) {
        store_rel(&tr.state, T_IDLE);
        gort__printf(2, "gort: GORTDEBUG=trace=%s: cannot write the trace "
                        "(%s); not tracing\n", path, strerror(-err));
        return;
    }
    session_begin(mp);
    store_rel(&tr.state, T_RUNNING);
}

void gort__trace_shutdown(void)
{
    if (load_acq(&tr.state) == T_IDLE)
        return;
    /* Every M but ours has ended.  A start or stop cut off by the end of
     * gort_main (its goroutine discarded) is finished here too. */
    if (load_relaxed(&gort__trace_on))
        session_collect(gort__getm_raw());
    session_close();
}
