/* SPDX-License-Identifier: MIT */
/*
 * tracehooks.h - the execution tracer's hooks and per-P/per-M state: the
 * core's side of tracing.  The recorder (trace.c, in the observability
 * layer above) registers its functions in gort__tracehooks when the
 * runtime starts, so the scheduler reaches it without calling upward.
 *
 * The scheduler calls the gort__trace_* functions below at the points where
 * something worth recording happens: a goroutine changes status (created,
 * started, stopped, blocked, unblocked, in and out of a syscall, ended), a
 * P is taken or released, work is stolen, sysmon asks for a preemption or
 * retakes a P from a syscall, the world stops, the network poller or the
 * timers make goroutines ready, an M begins or ends spinning.  Each hook
 * is one load of gort__trace_on and one predictable branch while tracing
 * is off; the recording half is an indirect call into trace.c.
 *
 * While tracing is on, each event is a fixed 40-byte record appended to the
 * buffer of the P the recording M holds (no lock: only the M holding a P
 * writes its buffer), or, for an M without a P, to that M's own buffer
 * (a per-M sequence word lets gort_trace_stop wait for a write in
 * progress).  Full buffers go to a writer thread that turns them into
 * Chrome Trace Event JSON; see trace.c.
 *
 * Invariants:
 *   - A P's trace buffer is written only by the M holding the P (m->p),
 *     an M's only by that M while it holds no P, so neither takes a lock.
 *   - gort__trace_on changes only while the world is stopped (or before
 *     the runtime starts and after it ends), so an M holding a P sees it
 *     change only across a P hand-off.
 *   - Compiled with GORT_NO_TRACE, every hook is empty (the baseline for
 *     the overhead measurement, tests/trace_overhead.py).
 */
#ifndef GORT_TRACEHOOKS_H
#define GORT_TRACEHOOKS_H

#include "atomic.h"
#include "defs.h"

#include <stdint.h>

struct g;
struct m;
struct p;
struct gort__tracebuf;

/* A P's trace state (struct p's `trace`): owner only. */
struct gort__ptrace {
    struct gort__tracebuf *buf; /* being filled, or NULL */
    uint64_t dropped;           /* events lost since buf was last had */
    int64_t dropts;             /* when the first of them was lost */
};

/* An M's trace state (struct m's `trace`). */
struct gort__mtrace {
    struct gort__tracebuf *buf; /* events recorded without a P, or NULL */
    uint32_t seq;         /* odd while the M writes buf (gort_trace_stop
                             waits for even); seq-cst, see trace.c */
    uint32_t stopreason;  /* why the running G is about to stop (a
                             preemption); owner only */
    int64_t sysbegin;     /* when the current syscall began, 0 if unknown;
                             relaxed: the owner writes, stop reads */
    int64_t sysg;         /* its goroutine (relaxed, as sysbegin) */
    int64_t sysend;       /* when it ended (exitsyscall); owner only */
    int64_t spinbegin;    /* when the M began spinning, 0 when it is not
                             or began untraced; owner only */
    uint64_t dropped;     /* as in gort__ptrace */
    int64_t dropts;
};

/* 1 while tracing.  Read relaxed by every hook: see the invariant. */
GORT_HIDDEN extern uint32_t gort__trace_on;

#ifdef GORT_NO_TRACE
#define GORT_TRACE_ON() 0
#elif defined(__x86_64__) && defined(__GNUC__)
/* On x86-64 the test is a compare with memory and a branch (two
 * instructions); the atomic load below takes three, since compilers load
 * an atomic into a register before testing it.  An aligned 32-bit read is
 * atomic on x86-64 and this one orders nothing (relaxed), which the asm
 * keeps; it is the hottest check in the scheduler, on every park, wake-up,
 * spawn and exit. */
static inline __attribute__((always_inline)) bool gort__trace_on_check(void)
{
    __asm__ goto("cmpl $0, %0\n\t"
                 "jne %l[on]"
                 :
                 : "m"(gort__trace_on)
                 : "cc"
                 : on);
    return false;
on:
#if !defined(__clang__)
    __attribute__((cold));
#endif
    return true;
}
#define GORT_TRACE_ON() gort__trace_on_check()
#else
#define GORT_TRACE_ON() GORT_UNLIKELY(load_relaxed(&gort__trace_on))
#endif

/* The recording halves (trace.c), registered by gort__trace_register
 * before the first gort_main's goroutines run and never changed after:
 * a hook reads the table only after it has seen gort__trace_on set, which
 * happens later still.  A G's status change is recorded by
 * gort__casgstatus_t (sched.h), which calls the first directly. */
struct gort__tracehooks {
    void (*gstatus)(struct g *gp, uint32_t from, uint32_t to);
    void (*procstart)(struct m *mp, struct p *pp);
    void (*procstop)(struct m *mp, struct p *pp);
    void (*syscall_exit)(struct m *mp);
    void (*syscall_marked)(struct m *mp, struct g *gp);
    void (*procsteal)(struct p *pp, int why);
    void (*steal)(struct m *mp, struct p *victim);
    void (*preempt_request)(struct p *pp);
    void (*preempted)(struct m *mp);
    void (*stw_begin)(const char *why);
    void (*stw_end)(struct m *mp, int64_t end);
    void (*netpoll)(int32_t n);
    void (*timers)(struct p *owner, int32_t n);
    void (*mpark)(struct m *mp);
    void (*spinning)(struct m *mp, bool on);
};
GORT_HIDDEN extern struct gort__tracehooks gort__tracehooks;

/* Why a P left a syscall for someone else (gort__trace_procsteal). */
enum { TRACE_STEAL_SYSMON = 0, TRACE_STEAL_WATCHER, TRACE_STEAL_STW };

/* mp has just taken pp (acquirep). */
static inline void gort__trace_procstart(struct m *mp, struct p *pp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.procstart(mp, pp);
}

/* mp is about to let go of pp, which it holds (releasep). */
static inline void gort__trace_procstop(struct m *mp, struct p *pp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.procstop(mp, pp);
}

/* mp's G is back from its syscall (first thing in exitsyscall). */
static inline void gort__trace_syscall_exit(struct m *mp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.syscall_exit(mp);
}

/* An inspector found gp, running on mp, asleep in a system call nobody
 * wrapped and is putting it into G_SYSCALL on mp's behalf (rawsys.c):
 * recorded on mp's P as if mp had entered the call itself. */
static inline void gort__trace_syscall_marked(struct m *mp, struct g *gp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.syscall_marked(mp, gp);
}

/* pp, left in a syscall, was taken by sysmon, a watcher or a
 * stop-the-world (the CAS out of its P_SYSCALL word succeeded). */
static inline void gort__trace_procsteal(struct p *pp, int why)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.procsteal(pp, why);
}

/* mp (holding a P) stole work from victim's run queue. */
static inline void gort__trace_steal(struct m *mp, struct p *victim)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.steal(mp, victim);
}

/* sysmon asked the G running on pp to yield. */
static inline void gort__trace_preempt_request(struct p *pp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.preempt_request(pp);
}

/* mp's G yields because it was asked to (the next stop is a preemption). */
static inline void gort__trace_preempted(struct m *mp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.preempted(mp);
}

/* A stop-the-world begins (after worldsema) and ends: end is when the
 * world ran again, which the stopper records a little later (later still
 * when its thread waits for a CPU then). */
static inline void gort__trace_stw_begin(const char *why)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.stw_begin(why);
}

static inline void gort__trace_stw_end(struct m *mp, int64_t end)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.stw_end(mp, end);
}

/* The network poller made n goroutines ready (n > 0). */
static inline void gort__trace_netpoll(int32_t n)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.netpoll(n);
}

/* n timers of owner's heap fired (nothing is recorded for 0). */
static inline void gort__trace_timers(struct p *owner, int32_t n)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.timers(owner, n);
}

/* mp, holding no P, is about to sleep until it is given work (stopm). */
static inline void gort__trace_mpark(struct m *mp)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.mpark(mp);
}

/* mp begins (on) or ends spinning, looking for work: begins right after
 * it took a P with mp->spinning set or set it itself while holding one;
 * ends while it still holds a P (found work, or is about to let the P
 * go), so the interval lies inside its P slice. */
static inline void gort__trace_spinning(struct m *mp, bool on)
{
    if (GORT_TRACE_ON())
        gort__tracehooks.spinning(mp, on);
}

#endif /* GORT_TRACEHOOKS_H */
