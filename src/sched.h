/* SPDX-License-Identifier: MIT */
/*
 * sched.h - sched.c's header: gort's internal structures and their
 * invariants (G, M, P, schedt, the status change), Go's constants, the
 * lock order, the globals, the current M and the lock paths that need it.
 * Every file that touches a G, an M or a P includes it; like every header
 * under src/, it includes what it uses and compiles alone
 * (tools/check_layers.py).  The core's other modules have a header each.
 * It runs past 1,200 lines because the four structures, with every
 * field's owner and memory order, are most of it and belong together.
 *
 * The scheduler's vocabulary is Go's (runtime2.go, proc.go):
 *
 *   G  a goroutine: a stack, a saved context and a status.
 *   M  an OS thread ("machine").  Each M has a g0 whose stack is the
 *      thread's own; the scheduler runs on g0, user code on a G's stack.
 *   P  a processor: the right to run goroutines, and the per-P caches that
 *      go with it (local run queue, runnext, free Gs, goid cache).  There
 *      are exactly GOMAXPROCS Ps.
 *
 * Invariants (checked where they can be):
 *   - An M runs goroutines only while it holds a P (m->p != NULL and
 *     p->m == m, p->status == P_RUNNING).  An M that parks holds no P.
 *   - A G's status changes only through gort__casgstatus(), which checks
 *     the transition against the table beside enum gstatus.
 *   - A G is in at most one queue at a time (a local ring, a runnext slot,
 *     the global queue, a free list, a wait queue), linked through
 *     schedlink when the queue is a list.
 *   - The local run queue is owned by its P: only the M holding the P
 *     writes runq slots and runqtail; any M may advance runqhead by CAS
 *     while there is more than one P (with one, only the owner touches
 *     runqhead and runnext, by plain stores: runq.c).
 *
 * Lock order: a thread may take a lock only while every lock it holds
 * comes earlier in this list.  Each line is a rank (enum lockrank,
 * LOCKRANK_<name>); builds with GORT_LOCKRANK check every acquisition
 * against it (lockrank.c) and every _locked function's lock.
 *
 *     SCHEDTRACE     the schedtrace print lock (debug.c)
 *     TIMER          a timer's mu: stop/reset/free of one timer (time.c,
 * timerchan.c) TIMERS         a P's timers lock: its heap; held while due
 * timers run.  Cyclic: two only in address order (moving a destroyed P's
 * timers, gort__timers_move) SEMAROOT       a semaphore root (sema.c)
 *     NOTIFYLIST     a gort_cond's notify list (sema.c)
 *     HCHAN          a channel (chan.c).  Cyclic: several only in address
 *                    order (select.c)
 *                    These three are the object locks; a root and a
 *                    notify list are never held with another of the three.
 *     SCHED          gort__sched.lock: idle lists, global queue
 *     ALLP           gort__allplock: the allp array (sysmon walks it
 *                    without sched.lock; procresize grows it)
 *     GFREE          gort__sched.gfree_lock: the global free-G list
 *     ALLG           gort__allglock: the all-G table
 *     STACKPOOL      the global stack pool and arenas (stack.c)
 *     PREEMPTRANGES  preempt.c's ranges lock (gort_preempt_allow_object);
 *                    a leaf
 *     POLLCACHE      netpoll.c's poll cache lock: held with no other
 *                    runtime lock but RETIRED
 *     HOOK           hook.c's descriptor-kind table lock and its
 *                    epoll pool lock, never both: held with no other
 *                    runtime lock but RETIRED
 *     RETIRED        the retired-array lock (boot.c): a leaf, under
 *                    ALLP, ALLG, POLLCACHE or HOOK
 *     TRACEBUF       trace.c's buffer lock: a leaf, taken under any of the
 *                    above (an event is recorded wherever the scheduler
 *                    is)
 *
 *   A lock may be held across a context switch only on the same M: park
 *   hands its lock to g0 or to the next G, which releases it once the
 *   parking G's context is saved (gort__park, the direct hand-off in
 *   proc.c); a hand-off may likewise carry sched.lock.
 */
#ifndef GORT_SCHED_H
#define GORT_SCHED_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../include/gort.h"
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "san.h"
#include "tracehooks.h"

/* ---------------------------------------------------------------------------
 * Constants from Go, with their reasons.
 * ------------------------------------------------------------------------- */

/* Local run queue size: runq [256]guintptr in runtime2.go.  Big enough that
 * a P rarely spills to the global queue, small enough to scan. */
#ifndef GORT_RUNQ_SIZE
#define GORT_RUNQ_SIZE 256
#endif
/* runq.c indexes with free-running uint32 counters modulo the size, which
 * is only correct across wrap-around for a power of two; and a steal takes
 * half, rounded up, which must fit in half the ring. */
_Static_assert(GORT_RUNQ_SIZE >= 2 &&
                   (GORT_RUNQ_SIZE & (GORT_RUNQ_SIZE - 1)) == 0,
               "GORT_RUNQ_SIZE must be a power of two >= 2");
/* Every 61st schedule looks at the global queue first (proc.go): a prime,
 * so that it does not fall into step with periodic user patterns. */
#define GORT_GLOBAL_CHECK_TICKS 61
/* Steal passes over all Ps (stealTries in proc.go). */
#define GORT_STEAL_TRIES 4
/* Work readied together that would take less than this in all is run by
 * the M that readied it, not spread over other threads (injectglist): a
 * thread's wake-up would cost more CPU and latency than the work. */
#define GORT_WAKE_WORTH_NS (50 * 1000)
/* While the CPUs are crowded, an M that gives up its P while another P
 * runs short Gs naps this long rather than sleep in epoll (proc.c,
 * poll_nap): the most a descriptor waits while the other P runs a long
 * G. */
#define GORT_POLL_NAP_NS (1000 * 1000)
/* A nap that found events nobody had polled for turns napping off for
 * this long. */
#define GORT_POLL_NAP_OFF_NS (100 * 1000 * 1000)
/* The crowd meter (sysmon.c): a window lasts at least
 * GORT_CROWD_WINDOW_NS and has at least GORT_CROWD_MIN_WAKEUPS
 * descriptor wake-ups (one that has not had them after GORT_CROWD_MAX_NS
 * ends the trials); trials of one event loop against two start when this
 * process's threads waited for a CPU at least GORT_CROWD_WAIT_PERMILLE
 * thousandths of a window run with two loops (summed over its threads:
 * 250 is a quarter of a thread waiting all the time).  A trial runs one
 * window in GORT_CROWD_TRIAL_EVERY, backing off to one in
 * GORT_CROWD_TRIAL_MAX while the favored mode wins them, and the other
 * mode is favored only after GORT_CROWD_TRIALS trials since the last
 * change. */
#define GORT_CROWD_WINDOW_NS (10 * 1000 * 1000)
#define GORT_CROWD_MIN_WAKEUPS 64
#define GORT_CROWD_MAX_NS (200 * 1000 * 1000)
#define GORT_CROWD_WAIT_PERMILLE 250
#define GORT_CROWD_TRIAL_EVERY 8
#define GORT_CROWD_TRIALS 4
#define GORT_CROWD_TRIAL_MAX 64
/* A G that has run 10 ms on one P is preempted (forcePreemptNS). */
#define GORT_FORCE_PREEMPT_NS (10 * 1000 * 1000)
/* A G is asked to yield for its P's due timer only once it has run this
 * long: shorter, it is about to give up the P anyway, and a P that is
 * overloaded with timer-woken Gs would have each of them preempted
 * (sysmon.c, retake). */
#define GORT_TIMER_PREEMPT_RUN_NS (1000 * 1000)
/* A G seen twice at one system call instruction this far apart is blocked
 * in the kernel (preempt.c: rawsys_confirmed); half of sysmon's period. */
#define GORT_RAWSYS_CONFIRM_NS (5 * 1000 * 1000)
/* A thread seen asleep in one system call of the program's, not switched
 * in since, this long ago has its P handed off (rawsys.c). */
#define GORT_RAWSYS_SLEPT_NS (200 * 1000)
/* sysmon: 20 us sleeps, doubling after 50 idle rounds, up to 10 ms. */
#define GORT_SYSMON_MIN_US 20
#define GORT_SYSMON_MAX_US 10000
#define GORT_SYSMON_IDLE_ROUNDS 50
/* sysmon's round after one that found every P idle, once its rounds are
 * at their longest; each further such round doubles it, up to
 * GORTDEBUG=sysmonidle (ms), while no round has retaken a P or asked a G
 * to yield for GORT_SYSMON_CALM_NS (sysmon.c). */
#define GORT_SYSMON_ALLIDLE_US 20000
#define GORT_SYSMON_IDLE_MAX_MS 160
#define GORT_SYSMON_CALM_NS (1000 * 1000 * 1000)
/* Free G cache per P: spill to the global list at 64, down to 32 (gfput). */
#define GORT_GFREE_MAX 64
#define GORT_GFREE_KEEP 32
/* goids are handed to each P in batches of 16 (goidcacheend in proc.go). */
#define GORT_GOID_BATCH 16
/* A stack left unused in the global pool this long has its pages
 * returned to the OS by sysmon (stack.c, gort__stack_scavenge). */
#define GORT_STACK_IDLE_MS 5000
/* How long the poller M polls without blocking before it sleeps in
 * epoll_wait (GORTDEBUG=netpollspin, us; netpoll.c, gort__netpoll_sleep). */
#define GORT_NETPOLL_SPIN_US 50
/* How long the poller naps on a timer instead of waiting in epoll_wait,
 * while the spin trial finds that naps answer more requests a second
 * (GORTDEBUG=netpollnap, us; half of it on one P: netpoll.c,
 * gort__netpoll_nap_ns). */
#define GORT_NETPOLL_NAP_US 20
/* Default thread limit (sched.maxmcount in proc.go). */
#define GORT_DEFAULT_MAX_THREADS 10000
/* Name lookups (getaddrinfo and the like) under way at once, each on a
 * thread of its own (syscall.c, gort__dns_call); more goroutines wait for
 * a slot parked, not on threads.  The C library's resolver has no
 * non-blocking form that keeps its semantics (nsswitch, /etc/hosts,
 * resolv.conf's search and timeouts); Go's cgo resolver caps its threads
 * the same way. */
#define GORT_DNS_THREADS 4

/* ---------------------------------------------------------------------------
 * G: goroutine.  Mirrors type g (runtime2.go).
 * ------------------------------------------------------------------------- */

/*
 * G status.  Legal transitions (anything else is fatal, naming both):
 *   IDLE     -> DEAD                      (new G, before first use)
 *   DEAD     -> RUNNABLE                  (gort_go reuses or creates it)
 *   RUNNABLE -> RUNNING                   (execute)
 *   RUNNING  -> RUNNABLE                  (gosched, preemption)
 *   RUNNING  -> WAITING                   (park)
 *   RUNNING  -> SYSCALL, SYSCALL -> RUNNING, SYSCALL -> RUNNABLE
 *   RUNNING  -> PREEMPTED, PREEMPTED -> RUNNABLE (asynchronous preemption)
 *   WAITING  -> RUNNABLE                  (ready)
 *   RUNNING  -> DEAD                      (goexit)
 */
enum gstatus {
    G_IDLE = 0,
    G_RUNNABLE = 1,
    G_RUNNING = 2,
    G_SYSCALL = 3,
    G_WAITING = 4,
    G_DEAD = 6,
    G_PREEMPTED = 9,
};

/* Why a G waits: Go's waitReason strings (runtime2.go). */
enum waitreason {
    WAIT_ZERO = 0,
    WAIT_SYNC_WAITGROUP_WAIT,
    WAIT_SEMACQUIRE,
    WAIT_STOP_THE_WORLD,  /* waiting for another stop-the-world to end */
    WAIT_GOEXIT_MAIN, /* the main goroutine after gort_goexit */
    WAIT_TEST_PARK,   /* white-box tests parking a G directly */
    WAIT_CHAN_RECV_NIL,
    WAIT_CHAN_SEND_NIL,
    WAIT_SELECT,
    WAIT_SELECT_NO_CASES,
    WAIT_CHAN_RECV,
    WAIT_CHAN_SEND,
    WAIT_SLEEP,
    WAIT_SYNC_MUTEX_LOCK,
    WAIT_SYNC_RWMUTEX_RLOCK,
    WAIT_SYNC_RWMUTEX_LOCK,
    WAIT_SYNC_COND_WAIT,
    WAIT_IO,
    WAIT_NREASONS
};

/* A cleanup handler registered with gort_defer. */
struct gort_defer_rec {
    void (*fn)(void *);
    void *arg;
    bool started;  /* its handler is running (or called gort_goexit) */
    struct gort_defer_rec *next;
};

/* The stack a G runs on (stack.c).  [lo, hi) is usable; the guard, when
 * there is one, is the page just below lo. */
struct gstack {
    uintptr_t lo, hi;  /* usable bounds */
    uintptr_t base;    /* start of the slot including the guard page (the
                          slot's size is the pool's, stack.c) */
    uint8_t guard;     /* STACK_GUARD_* how overflow is caught */
    unsigned valgrind_id; /* Valgrind stack registration id, 0 if none */
};

struct g {
    /* Saved stack pointer while not running (written by ctx_switch on the
     * G's own M; read by the M that resumes it after the status CAS that
     * made it RUNNING, which orders the two). */
    void *sched_sp;
    struct gstack stack;
    uint32_t atomicstatus;  /* enum gstatus; changed only by casgstatus */
    /* Bytes, to keep struct g within 224 bytes: a G reused on one P
     * after it ran and ended on another comes line by line from the
     * other CPU's cache, so every line it spans costs each spawn. */
    uint8_t waitreason;     /* enum waitreason while WAITING; owner writes */
    uint8_t selectdone;     /* atomic: a select case already won */
    uint8_t preempt;        /* preemption requested: sysmon writes, the G
                               reads at runtime entries (relaxed: a late
                               read only delays preemption) */
    bool is_main;           /* the main goroutine (goid 1) */
    int64_t goid;           /* 0 until it first runs; a dead G keeps
                               its last one (dumps show it, as Go's) */
    struct m *m;            /* M running it, or NULL; owner M writes */
    struct g *schedlink;    /* next in whatever list holds this G */
    void (*fn)(void *);     /* entry and its argument, set by gort_go;
                               kept while it lives, for dumps */
    void *arg;
    void *param;            /* passed by the waker to the parked G */
    const void *waitobj;    /* what it waits on (a channel, a semaphore
                               address), for dumps; owner writes */
    struct sudog *waiting;  /* sudogs of the select/chan op it is parked
                               in, linked by waitlink; owner only */
    struct gort_defer_rec *defers; /* LIFO cleanup handlers; owner only */
    struct gdl *dl;         /* its waits with a deadline: made on the
                               first, kept with the G; owner only (the
                               timer finds the record from itself) */
    struct m *lockedm;      /* M it is wired to (LockOSThread), or NULL;
                               owner writes, schedulers read */
    uint32_t preemptoff;    /* gort_preempt_disable depth: no async
                               preemption while > 0; owner only (the
                               signal handler reads it on the same thread) */
    uint32_t traceseq;      /* trace.c: times it was made runnable by
                               another G (<< 1), low bit set until it
                               starts: links the two in the trace */
    /* /sched/latencies sampling (Go's trackingSeq): written by whoever
     * makes a status change, under the same hand-over as the status
     * (trackingstamp below). */
    uint8_t trackingseq;    /* transitions out of RUNNING, mod 256 */
    bool tracking;          /* this scheduling round is being timed */
    bool runtiming;         /* ... and then how long it runs (its P's
                               runstamp) */
    bool foreign;           /* stands for a thread gort did not create
                               (extra M): parks on the M's note */
    bool tsan_stale;        /* its last goroutine ended in gort_goexit:
                               the fiber holds frames that never
                               returned (san.c) */
    bool syscalltrap;       /* see syscallpc */
    uint64_t fpctl;         /* creator's FP modes, for the first context
                               (gort__fpctl_save) */
    union {
        int64_t waitsince;  /* while waiting or in a syscall: about when
                               it began (sched.coarsenow), for dumps */
        int64_t trackingstamp; /* while runnable and tracked: when it
                               became runnable (metrics.c) */
    };
    uintptr_t gopc;         /* return address of the gort_go call */
    union {                 /* one sanitizer at a time (san.c) */
        void *asan_fake_stack; /* AddressSanitizer fake-stack save slot */
        void *tsan_fiber;  /* ThreadSanitizer fiber, or NULL */
    };
    /* For dumps (traceback.c); owner writes, dumps read racily. */
    int64_t parentgoid;     /* goid of the goroutine that created it, or 0 */
    /* A G is in a syscall or asynchronously preempted, never both: the
     * dumps read the first three only in G_SYSCALL, preemptctx in any
     * other status (traceback.c). */
    union {
        struct {
            uintptr_t syscallfp; /* in a syscall: the frame record of the
                                    function that called entersyscall, */
            uintptr_t syscallpc; /* and the return address into it; or,
                                    for a call found by the preemption
                                    signal (syscalltrap), the interrupted
                                    fp and pc */
            uintptr_t syscallret; /* with syscalltrap: where the
                                    interrupted function returns if it has
                                    no frame record (tbstart.leafret), or
                                    0 */
        };
        uintptr_t preemptctx;   /* its signal context copied at an
                                   asynchronous preemption (a ucontext_t),
                                   while preempted, or 0 */
    };
    union {
        /* A stack of its own for preemptions that find it too deep in
         * its stack for the preemption's frames (preempt.c):
         * GORT_PREEMPT_STK bytes from here, or 0.  Kept while the G
         * struct lives. */
        uintptr_t preemptstk;
        /* Under ThreadSanitizer, which turns asynchronous preemption off
         * (preempt.c), so that no preemption stack is ever made: the
         * fiber its gort-hook calls run on, or NULL; while one runs, the
         * two fibers swap places (gort__san_hook_enter). */
        void *tsan_hook_fiber;
    };
};
/* 3.5 cache lines on 64-bit targets: see the byte fields above. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct g) <= 224,
               "struct g is over 224 bytes");
_Static_assert(WAIT_NREASONS <= 256, "g.waitreason is a byte");
/* gp's preemption stack, or 0.  Under ThreadSanitizer, which turns
 * asynchronous preemption off, there is none: the word is the hook
 * fiber's (struct g). */
static inline uintptr_t gort__preemptstk(const struct g *gp)
{
    return (gort__san & GORT_SAN_TSAN) ? 0 : gp->preemptstk;
}
/* The size of a G's preemption stack (gp->preemptstk). */
#if defined(GORT_ASAN)
#define GORT_PREEMPT_STK (128 * 1024)
#else
#define GORT_PREEMPT_STK (64 * 1024)
#endif

/* gort__legal[from] has bit `to` set when from -> to is a legal
 * transition (the table beside enum gstatus).  Static in every file that
 * includes this one, so that the compiler folds the check of a status
 * change whose states it knows (most of them) to nothing. */
#define GORT_B_(s) (1u << (s))
static const uint16_t gort__legal[16] = {
    [G_IDLE] = GORT_B_(G_DEAD),
    [G_DEAD] = GORT_B_(G_RUNNABLE),
    [G_RUNNABLE] = GORT_B_(G_RUNNING),
    [G_RUNNING] = GORT_B_(G_RUNNABLE) | GORT_B_(G_WAITING) |
                  GORT_B_(G_SYSCALL) | GORT_B_(G_PREEMPTED) | GORT_B_(G_DEAD),
    [G_SYSCALL] = GORT_B_(G_RUNNING) | GORT_B_(G_RUNNABLE),
    [G_WAITING] = GORT_B_(G_RUNNABLE),
    [G_PREEMPTED] = GORT_B_(G_RUNNABLE),
};
#undef GORT_B_
GORT_HIDDEN GORT_NORETURN void gort__casgstatus_fail(struct g *gp,
                                                      uint32_t oldval,
                                                      uint32_t newval);

/* One scheduling round in GORT_TRACKING_PERIOD is timed for
 * /sched/latencies (gTrackingPeriod in Go): the clock is read only for
 * those.  The cold half, in schedstats.c, stamps a tracked G when it
 * becomes runnable and records the wait in its P's histogram when it
 * runs. */
#define GORT_TRACKING_PERIOD 8
/* The samples' clock (schedstats.c), set up by gort_main. */
GORT_HIDDEN void gort__track_clock_init(void);
GORT_HIDDEN __attribute__((cold)) void gort__gtrack(struct g *gp, uint32_t oldval,
                                                  uint32_t newval);
/* A timed round's G stops running: how long it ran goes into its P's
 * runavg. */
GORT_HIDDEN __attribute__((cold)) void gort__gtrack_ran(struct g *gp);
/*
 * Whether a status change goes into the execution trace (trace.c):
 * GT_CHECK looks at gort__trace_on, one load and a predictable branch.
 * The hottest paths (park, ready and goexit in proc.c, gort_go in
 * newproc.c) look once on entry instead and run a body made with GT_OFF
 * or GT_ON: the untraced body then has no call to keep registers around
 * (a call site costs saved registers on every wake-up).
 * The flag cannot change meanwhile: it changes only while the world is
 * stopped, and those paths hold their P throughout.
 */
enum gtrace { GT_CHECK = 0, GT_OFF, GT_ON };

/* Mirrors casgstatus (proc.go): change gp's status from old to new, fatal
 * (naming both states) if the transition is illegal or the current status
 * is not old.  Inline: it is on every switch; the reporting half is out of
 * line.
 *
 * A checked store, not a CAS: every transition has exactly one party
 * entitled to make it (the G's own M, or the M that took the G off a run
 * queue or a wait list under that list's synchronisation), so there is no
 * race for the CAS to arbitrate.  Go needs its CAS because the garbage
 * collector sets a scan bit concurrently; gort has no such party.  The
 * check still catches a double ready or a wake-up of a running G.  This
 * saves a locked instruction per transition, three per park/wake cycle. */
static inline __attribute__((always_inline)) void
gort__casgstatus_t(struct g *gp, uint32_t oldval, uint32_t newval,
                   enum gtrace t)
{
    /* Relaxed load: the caller's right to the transition came through the
     * queue or lock that handed it the G; this only checks it.  Release
     * store: publishes everything done to the G before the change (its
     * saved context, queue links) to whoever next observes the new status
     * with an acquire load. */
    uint32_t cur = load_relaxed(&gp->atomicstatus);
    if (GORT_UNLIKELY(oldval >= 16 || !((gort__legal[oldval] >> newval) & 1) ||
                      cur != oldval))
        gort__casgstatus_fail(gp, oldval, newval);
    /* Every GORT_TRACKING_PERIOD-th transition out of running starts a
     * timed round (Go's casgstatus); the clock is read only in timed
     * rounds, when the G becomes runnable and when it runs.  oldval and
     * newval are constants at every call site, so each transition keeps
     * only its half: a byte increment and flag update out of running, a
     * load and a branch into runnable or running. */
    if (oldval == G_RUNNING) {
        if (GORT_UNLIKELY(gp->runtiming))
            gort__gtrack_ran(gp);
        gp->tracking |= gp->trackingseq++ % GORT_TRACKING_PERIOD == 0;
    }
    if ((newval == G_RUNNABLE || newval == G_RUNNING) &&
        GORT_UNLIKELY(gp->tracking))
        gort__gtrack(gp, oldval, newval);
    if (t == GT_ON || (t == GT_CHECK && GORT_TRACE_ON()))
        gort__tracehooks.gstatus(gp, oldval, newval);
    store_rel(&gp->atomicstatus, newval);
}
static inline void gort__casgstatus(struct g *gp, uint32_t oldval,
                                    uint32_t newval)
{
    gort__casgstatus_t(gp, oldval, newval, GT_CHECK);
}
static inline uint32_t gort__readgstatus(struct g *gp)
{
    /* Acquire: pairs with the release in casgstatus so that a reader that
     * sees a new status also sees the writes made before it. */
    return load_acq(&gp->atomicstatus);
}
GORT_HIDDEN const char *gort__gstatus_name(uint32_t s);
GORT_HIDDEN const char *gort__waitreason_name(uint32_t r);
/* The names behind those two, indexed by value ("" for a value without
 * one).  Character arrays, not pointers: tools/gort-gdb.py reads them by
 * name from a live process or a core file, so they hold no relocation
 * and the debugger never keeps a copy that could drift from the enums. */
#define GORT_GSTATUS_NAMES 16
#define GORT_NAME_MAX 32
GORT_HIDDEN extern const char gort__gstatus_names[GORT_GSTATUS_NAMES]
                                                [GORT_NAME_MAX];
GORT_HIDDEN extern const char gort__waitreason_names[WAIT_NREASONS]
                                                   [GORT_NAME_MAX];

/* A P's cache of free stacks (stack.c): a double-ended ring.  The top
 * holds the most recently freed, hot in the cache; the bottom the
 * coldest.  Owner P only. */
#define GORT_STACKCACHE 64
/* Stack reservations move between a P and the pool in batches of 32. */
#define GORT_STACKRES_BATCH 32
struct stackcache {
    struct gstack s[GORT_STACKCACHE];
    uint32_t bottom; /* index of the bottom entry */
    uint32_t n;      /* entries */
};

/* Timers (time.c).  A timer internal to the runtime; f runs with the
 * heap's lock held on an M holding a P, and must not block. */
struct gtimer {
    gort_lock mu;          /* serialises stop/reset/free of this timer */
    struct timers *ts;     /* heap it is in, or NULL; written under that
                              heap's lock, read racily (relaxed) to find
                              which lock to take */
    int32_t idx;           /* position in ts->heap; under ts->lock */
    bool selfonly;         /* only its own G starts it (sleep): forgotten
                              before f runs */
    bool pushable;         /* any goroutine may move it later without
                              locks (gort__gtimer_push): a descriptor's
                              deadline; set before it is first started */
    int64_t when;          /* nanotime to fire; under ts->lock once heaped;
                              may be later than its heap key, never
                              earlier (gort__gtimer_reset) */
    int64_t later;         /* atomic: a time pushed without locks while
                              it was pending (gort__gtimer_push; a
                              selfonly or pushable timer's), which the run
                              loop takes for when once it comes due; 0:
                              none; GTIMER_FIRING once taken to fire */
    int64_t period;        /* > 0: fires every period ns (a ticker); set
                              under mu while off the heap */
    void (*f)(struct gtimer *t, int64_t now);
    void *arg;
};
/* A G's waits with a deadline (chan.c, "Waiting with a deadline"; sema.c;
 * deadline.c): made on its first such wait and kept with the G, which
 * the next goroutine on the G uses too.  Most goroutines never wait with
 * a deadline, so struct g holds only the pointer. */
struct gdl {
    struct gtimer t;        /* ends its channel, semaphore and notify-list
                               waits (dl_fire); t.arg is the G */
    int64_t at;             /* atomic: the last wait's deadline */
    int64_t key;            /* t is pending at this time or earlier, if at
                               all; owner only */
    struct gort_chan *c;    /* atomic: the channel it waits on, or NULL;
                               set under that channel's lock */
    struct dlwait *sync;    /* atomic: its semaphore or notify-list wait
                               (sema.c), or NULL; set under that lock */
    uint32_t busy;          /* atomic: the timer's function looks at c or
                               sync */
    struct gort_timer *sel; /* the channel timer of its selects with a
                               deadline (deadline.c), or NULL; owner
                               only */
};
struct timerwhen {
    int64_t when;
    struct gtimer *t;
};
/* A P's timers: a 4-ary heap by when (timers in time.go). */
struct timers {
    gort_lock lock;
    uint32_t len, cap;     /* under lock */
    struct timerwhen *heap;
    int64_t minwhen;       /* heap[0].when or 0; atomic (time.c) */
    int64_t checked;       /* when the P last looked for due timers (the
                              clock of gort__timers_check, or of a direct
                              hand-off that found none due): a timer due
                              after it waits for the next schedule, and
                              the G running began no earlier; relaxed,
                              sysmon reads it */
};

/* A histogram of durations with Go's timeHistogram layout (histogram.go),
 * so that figures compare with Go's: durations below 2^9 ns fall in one
 * range of 4 sub-buckets, then each power of two from 2^9 to 2^47 ns is
 * cut into 4 linear sub-buckets; counts[0] holds negative durations and
 * counts[GORT_TIMEHIST_N - 1] those of 2^47 ns or more (metrics.c).
 * Written by one party at a time (the P's owner, the stopper) with
 * relaxed loads and stores, read by anyone with relaxed loads. */
#define GORT_TIMEHIST_MINBIT 9
#define GORT_TIMEHIST_MAXBIT 48
#define GORT_TIMEHIST_SUBBITS 2
#define GORT_TIMEHIST_N                                                        \
    ((GORT_TIMEHIST_MAXBIT - GORT_TIMEHIST_MINBIT + 1) *                       \
         (1 << GORT_TIMEHIST_SUBBITS) + 2)
struct gort_timehist {
    uint64_t counts[GORT_TIMEHIST_N];
};
GORT_HIDDEN void gort__timehist_record(struct gort_timehist *h, int64_t ns);
/* Stop-the-world pauses (schedstats.c): from the stop request to the
 * world stopped, and to the world started again. */
GORT_HIDDEN extern struct gort_timehist gort__stw_pauses_stopping,
    gort__stw_pauses_total;

/* Add d to a statistics counter written only by its owner (a P's M, an
 * M's own thread, a single stopper): a relaxed load and store, no
 * read-modify-write, so no locked instruction on the paths that count.
 * Readers sum such counters with relaxed loads (metrics.c). */
static inline void gort__stat_add(uint64_t *c, uint64_t d)
{
    store_relaxed(c, load_relaxed(c) + d);
}

/* A queue of Gs linked through schedlink (gQueue in runtime2.go). */
struct gqueue {
    struct g *head, *tail;
};
/*
 * The global run queue holds G pointers in segments, not a list through
 * the Gs: a G waits there long enough to go cold, and a list makes the
 * batch moves touch every G one after another (a cache miss each,
 * serialised by the links).  A segment is 1 KiB.  Only a queue's last
 * segment may be empty: a queue that empties keeps it, reset, so that a
 * queue going between empty and one G (two goroutines yielding) does not
 * trade a segment with the spares at every operation.
 */
#define GORT_GQSEG_N 126
struct gqseg {
    struct gqseg *next;
    uint32_t head, tail;           /* live slots: g[head, tail) */
    struct g *g[GORT_GQSEG_N];
};
struct gsegq {
    struct gqseg *head, *tail;     /* both NULL when empty */
    struct gqseg *spare;           /* emptied segments, kept for reuse */
};
/* ---------------------------------------------------------------------------
 * M: OS thread.  Mirrors type m (runtime2.go).
 * ------------------------------------------------------------------------- */

/* A park's commit function (gort__park): runs on the parking G's M once
 * the G's context is saved; false makes the G runnable again at once. */
typedef bool (*gort__unlockf)(struct m *mp, struct g *gp, void *arg);

struct m {
    struct g *g0;          /* scheduling stack: the thread's own */
    struct g *curg;        /* the user G running, or NULL; owner writes */
    struct p *p;           /* P held, or NULL; owner writes */
    struct p *nextp;       /* P handed over by startm; written before the
                              wake-up note, read after it */
    int64_t id;
    int32_t procid;        /* kernel thread id; atomic where sysmon reads
                              it for all Ms (the crowd meter) */
    int64_t runqwait;      /* ns it had waited for a CPU at sysmon's last
                              crowd reading (0: none); sysmon's */
    bool spinning;         /* looking for work; owner writes, counted in
                              sched.nmspinning */
    bool exiting;          /* told to exit at shutdown; set under sched.lock
                              before its park note is woken */
    bool is_m0;            /* the thread that called gort_main */
    int32_t locks;         /* >0: runtime locks held / preemption off */
    uint32_t fastrand[2];  /* xorshift state for this M */
    gort_note park;        /* stopm sleeps here */
    uint32_t blocked;      /* asleep on park (gort__mpark), as Go's
                              m.blocked: the owner stores, schedtrace
                              reads (relaxed: a snapshot) */
    struct m *schedlink;   /* next in sched.midle; under sched.lock */
    struct m *alllink;     /* next in gort__allm; written before publish */
    pthread_t thread;
    uint32_t threadset;    /* thread holds a thread gort__newosproc made:
                              release-stored by the creating thread after
                              pthread_create, acquire-loaded by join_ms */
    bool joined;           /* join_ms has joined thread (M0 only) */
    /* mcall: the function g0 runs for the G that switched to it. */
    struct g *(*mcall_fn)(struct g *);
    /* Direct hand-off: work the incoming G does for the outgoing one once
     * its context is saved (proc.c after_switch); owner M only. */
    void (*post_fn)(struct m *, struct g *);
    bool post_locked;      /* the hand-off holds sched.lock for post_fn */
    /* park: unlock function and its argument, run on g0 after switch. */
    gort__unlockf waitunlockf;
    void *waitlock;
    struct gqueue woken;   /* Gs woken by sleep timers, being collected
                              (time.c flush_woken); owner only */
    int32_t nwoken;
    int *errnop;           /* this thread's errno, cached at thread start */
    void *sigaltstack_mem; /* alternate signal stack (overflow reports) */
    size_t sigaltstack_size;

    /* System calls (syscall.c).  Owner writes. */
    struct p *oldp;        /* P it held when it entered the syscall */
    uint32_t oldpstatus;   /* the P_SYSCALL word it stored in oldp */
    uint32_t insyscall;    /* 1 explicit, 2 marked by the preemption
                              signal (an unwrapped blocking call) */
    int64_t syscallwhen;   /* when the marked call was noticed; relaxed */
    struct p *watchp;      /* woken to watch this P's syscall (set with
                              watchword by the waker, before the note) */
    uint32_t watchword;
    /* LockOSThread (mthread.c). */
    struct g *lockedg;     /* G wired to this M, or NULL; the owner writes
                              (M0: under sched.lock), others read relaxed */
    uint32_t lockedext;    /* gort_lock_os_thread depth; owner */
    uint32_t lockedint;    /* the runtime's own wiring; owner */
    struct g *lockedwant;  /* its wired G, runnable, handed over by
                              another M (startlockedm); under sched.lock */
    bool lockedsleep;      /* asleep in stoplockedm; under sched.lock */
    bool lockedcounted;    /* and counted in sched.nmidlelocked, which
                              waits until its P is handed off; under
                              sched.lock */
    bool inmidle;          /* on sched.midle; under sched.lock */
    bool exitlocked;       /* its wired G exited locked: the thread ends */
    bool dead;             /* its thread has ended (mexit); under lock */
    bool foreign;          /* an extra M: a thread gort did not create */
    uint32_t foreign_gen;  /* the gort_main it was made under */
    /* Asynchronous preemption (preempt.c). */
    int32_t cputimer;      /* the kernel's id of the thread's CPU-time
                              timer that sends it the preemption signal,
                              or -1 (preempt.c); the thread writes it,
                              senders read it (relaxed) */
    uint32_t nexecute;     /* Gs this M has switched to (execute_prep);
                              owner writes (relaxed), its own signal
                              handler and inspectors (rawsys.c) read */
    uint32_t urgpending;   /* a preemption signal is on its way to this
                              thread: set by the sender's exchange, cleared
                              by the handler (or by the sender when it
                              decides not to send): only where the
                              signal is sent by tgkill (preempt.c,
                              gort__urg_wait) */
    /* The last signal that found this M's G at a system call instruction
     * outside gort (preempt.c marks the G only when a later signal finds
     * the same G there, not switched out since); the handler's own.  Used
     * only where /proc cannot show a thread's system call (rawsys.c). */
    struct {
        uintptr_t pc, sp;
        struct g *gp;
        uint32_t nexecute;
        int64_t when;
    } rawsys;
    /* System calls nobody wrapped (rawsys.c). */
    struct m **mfastp;     /* this thread's gort__tls_mfast */
                           /* set by the thread before it runs Gs,
                              valid while rawexit is clear */
    uint32_t rawmark;      /* RAWMARK_*: an inspector's claim that the
                              thread is blocked in a call nobody wrapped;
                              CAS by the inspector and by the thread */
    uint32_t rawbusy;      /* an inspector is looking at this M (CAS 0->1,
                              seq-cst; pairs with rawexit) */
    uint32_t rawexit;      /* the thread is ending: no inspector may touch
                              *mfastp (seq-cst; pairs with rawbusy) */
    struct gort__rawseen { /* the inspector's, under rawbusy */
        struct g *gp;      /* the G looked at, and the M's nexecute then: */
        uint32_t nexecute; /*   another G starts everything over */
        int64_t since;     /* when the inspector first saw this G there */
        int64_t when0;     /* the window for "sleeps most of the time": */
        uint64_t exec0;    /*   since when, and the CPU time then */
        long nr;           /* the call it was last seen asleep in, */
        uintptr_t sp, pc;
        uint64_t switches; /*   its switch-in count, */
        int64_t when;      /*   and since when (0: none) */
    } rawseen;
    /* A spare stack for preempting a G too deep in its own stack to take
     * the preemption's frames (preempt.c); the signal handler gives it to
     * the G, the G's next preemption path makes another. */
    /* Metrics (gort__stat_add by this M's thread; metrics.c sums allm). */
    uint64_t nhandoffs;    /* Ps it took from syscalls and handed on */
    uint64_t nnetpollwake; /* goroutines its epoll waits made runnable */
    uint64_t nnetpollnap;  /* naps it took as the poller (netpoll.c) */
    struct gort__mtrace trace; /* execution trace (trace.c) */
};

/* ---------------------------------------------------------------------------
 * P: processor.  Mirrors type p (runtime2.go).
 * ------------------------------------------------------------------------- */

/*
 * P status.  IDLE: on sched.pidle, no M.  RUNNING: owned by an M.
 * SYSCALL: its M is in a system call.  GCSTOP: stopped for
 * stop-the-world.  DEAD: removed by a GOMAXPROCS decrease.
 *
 * The status word holds the state in its low 4 bits.  While P_SYSCALL the
 * bits above hold a sequence number of that syscall entry, so that the
 * CAS that takes the P back (exitsyscall, retake, stop-the-world) cannot
 * mistake a later syscall of another M on the same P for its own (ABA).
 * Compare with P_SYSCALL through gort__pstatus().
 */
enum pstatus { P_IDLE = 0, P_RUNNING, P_SYSCALL, P_GCSTOP, P_DEAD };
#define GORT_PSTATUS_MASK 0xfu

struct p {
    int32_t id;
    uint32_t status;       /* enum pstatus; changed under sched.lock or by
                              the owner M (acquirep/releasep) */
    struct p *link;        /* next in sched.pidle; under sched.lock */
    uint32_t preempt;      /* sysmon asked this P's time slice to end: a G
                              that inherits the slice (runnext) inherits
                              the request too.  Relaxed: sysmon sets, the
                              owner clears */
    uint32_t maxprocs_ask; /* a GOMAXPROCS change waits: each G this P
                              starts on a new slice is asked to apply it at
                              its first preemption check.  Relaxed: sysmon
                              sets it on every P, gort__maxprocs_apply
                              clears it with the world stopped.  In the
                              simulation mode 1 throughout (docs/sim.md):
                              every preemption check is a seeded point */
    uint32_t schedtick;    /* incremented on every non-inherited schedule;
                              owner writes, sysmon reads relaxed */
    uint32_t syscalltick;  /* incremented on every syscall; owner M writes,
                              sysmon reads relaxed */
    bool globwoken;        /* the last 61-tick turn of the global queue
                              that had both parts to choose from took
                              its woken part; owner only */
    bool globowed;         /* the global queue's 61-tick turn came while
                              runnext held a G: taken at the next pick;
                              the owner's */
    int64_t runavg;        /* how long a G runs here before it parks or
                              yields, ns: a moving average over the timed
                              rounds (metrics.c).  Per P, owner only: a
                              shared one would bounce its cache line
                              between every P's schedules */
    uint64_t runstamp;     /* when the timed run of runstampg began
                              (ticks); owner only */
    struct g *runstampg;
    int64_t syscallwhen;   /* when the current syscall began, if work
                              waited on the P then, else 0; relaxed */
    struct m *m;           /* back-link to the owning M, or NULL */
    /* sysmon's view: the schedtick it last saw and since when (0: start
     * over).  sysmon writes both; acquirep zeroes schedwhen (relaxed)
     * because a G that moves to another P without a new tick (procresize)
     * must not inherit that P's stale clock. */
    int64_t sysmon_schedwhen;
    uint32_t sysmon_schedtick;
    /* The due timer (its heap key) for which sysmon last asked the
     * running G to yield: not asked again for the same one. */
    int64_t sysmon_duewhen;
    /* The same for syscalls: the syscalltick last seen and since when. */
    int64_t sysmon_syscallwhen;
    uint32_t sysmon_syscalltick;

    /* Local run queue: owner writes slots and runqtail (store-release);
     * with more than one P anyone may CAS runqhead (with one, the owner
     * stores it: runq.c).  Free-running counters: size = tail - head. */
    uint32_t runqhead;
    uint32_t runqtail;
    struct g *runq[GORT_RUNQ_SIZE];
    /* The G to run next, ahead of runq; owner sets it, thieves CAS it out
     * on their last pass only. */
    struct g *runnext;

    struct timers timers;  /* timers started on this P (time.c) */
    /* Dead Gs (without stacks) for reuse, oldest first; owner only.  An
     * array, not a list through the Gs: moving a batch to or from the
     * global list then copies pointers instead of visiting each G. */
    struct g *gfree[GORT_GFREE_MAX];
    int32_t ngfree;
    struct stackcache stackcache; /* free stacks; owner only */
    int32_t stackres;      /* stack reservations held for new Gs; owner */
    int64_t goidcache, goidcacheend; /* goids handed to this P */
    /* Metrics: the owner counts with gort__stat_add; metrics.c sums them
     * over every P ever made (a P removed by GOMAXPROCS keeps its
     * counts, so sums never go down). */
    uint64_t ngcreated;    /* goroutines created on this P */
    uint64_t ngexited;     /* goroutines that ended on this P */
    uint64_t nsteals;      /* Gs its M took from other Ps' queues */
    uint64_t npreemptsync; /* yields at runtime calls asked by sysmon or
                              a stop-the-world */
    uint64_t npreemptasync;/* yields forced by the preemption signal */
    struct gort_timehist latencies; /* time runnable before running, of
                                       the timed rounds run here */
    struct gort__ptrace trace; /* execution trace (trace.c) */
};

static inline uint32_t gort__pstatus(uint32_t word)
{
    return word & GORT_PSTATUS_MASK;
}

/* ---------------------------------------------------------------------------
 * schedt: global scheduler state.  Mirrors type schedt (runtime2.go).
 * ------------------------------------------------------------------------- */

/* Fields are grouped by who writes them, one cache line per group
 * (GORT_CACHELINE), so that Ps reading the hot flags (npidle, gcwaiting)
 * on every spawn and switch do not lose the line each time another P
 * takes a lock. */
#define GORT_CACHELINE __attribute__((aligned(64)))

struct schedt {
    /* Read on every spawn and switch, written rarely. */
    uint32_t gcwaiting GORT_CACHELINE; /* atomic: stop-the-world pending */
    uint32_t exiting;      /* atomic: gort_main is shutting down */
    uint32_t main_goexited;/* atomic: main called gort_goexit */
    int32_t runqsize;      /* under lock; read racily (relaxed) outside */

    /* Idle accounting, read outside the lock by wakep and findrunnable. */
    int32_t npidle GORT_CACHELINE; /* atomic: readers outside the lock */
    int32_t nmspinning;    /* atomic: spinning Ms */
    uint32_t needspinning; /* atomic: a P was wanted while none was idle */
    uint32_t sysmonwait;   /* atomic: sysmon is parked on sysmonnote */
    int64_t coarsenow;     /* atomic: nanotime as of sysmon's last round
                              (within 10 ms while any G runs), for
                              waitsince without a clock read per park */

    /* Everything under lock. */
    gort_lock lock GORT_CACHELINE;
    /* The global run queue, in two parts taken in this order: Gs woken
     * by sleep timers (in deadline order), then everything else.
     * runqsize counts both.  Under lock, as is the spare-segment list. */
    struct gsegq runq_woken;
    int32_t nwoken;        /* Gs in runq_woken; written under lock,
                              read outside it as a hint (relaxed) */
    struct gsegq runq;
    struct m *midle;       /* idle Ms; under lock */
    int32_t nmidle;        /* under lock; read racily (relaxed) */
    int32_t nmidlelocked;  /* idle Ms with a locked G (LockOSThread) */
    int64_t mnext;         /* Ms created so far; next M id; under lock */
    int32_t maxmcount;     /* thread limit; under lock */
    int32_t nmsys;         /* system Ms (sysmon) not counted for deadlock */
    int32_t nmfreed;       /* Ms that exited */
    int32_t nforeigninside;/* foreign threads blocked or waking a G inside
                              gort: running, for checkdead */
    int64_t nforeign;      /* extra Ms made (their ids are negative) */
    uint64_t ngcreatednop; /* goroutines created by threads without a P
                              (foreign threads); written under lock,
                              read relaxed by metrics.c */
    int32_t nretaking;     /* atomic: Ps sysmon is handing off from
                              syscalls: running Ms, for checkdead */
    uint32_t watching;     /* atomic: an M is watching a syscall */
    int64_t watchquiet;    /* atomic: no watcher before this nanotime */
    struct p *pidle;       /* idle Ps; under lock */
    int32_t stopwait;      /* Ps still to stop; under lock */
    gort_note stopnote;    /* the stopper sleeps here */
    gort_note sysmonnote;

    uint64_t goidgen GORT_CACHELINE; /* atomic: next goid batch */

    /* The poller (netpoll.c): the M sleeping until the next timer. */
    int64_t lastpoll GORT_CACHELINE; /* atomic: 0 while an M sleeps as
                                        the poller, else when it last did */
    int64_t polluntil;     /* atomic: when the poller wakes, 0 unknown */
    uint32_t crowded;      /* atomic: one event loop does the network's
                              work (sysmon.c, the crowd meter) */
    uint32_t napping;      /* atomic: an M naps off epoll (proc.c) */
    int64_t napoff;        /* atomic: no nap before this nanotime */
    uint32_t pollgen;      /* atomic: bumped (futex) to wake the poller */

    gort_lock gfree_lock GORT_CACHELINE; /* protects gfree */
    struct gsegq gfree;    /* global free Gs, a stack (push_head, pop) */
    int32_t ngfree;        /* how many; under gfree_lock, peeked relaxed */
};

/* ---------------------------------------------------------------------------
 * Globals (sched.c).
 * ------------------------------------------------------------------------- */

GORT_HIDDEN extern struct schedt gort__sched;
GORT_HIDDEN extern struct p **gort__allp;      /* [gort__gomaxprocs] */
/* allp for code that may run while it grows (Ms without a P): load the
 * count first, then this. */
static inline struct p **gort__allp_load(void)
{
    /* Acquire: pairs with growallp's release store. */
    return load_acq(&gort__allp);
}
GORT_HIDDEN extern int32_t gort__allp_len;     /* entries allocated (>= procs) */
GORT_HIDDEN extern int32_t gort__gomaxprocs;   /* atomic reads outside STW */
GORT_HIDDEN extern int32_t gort__ncpu;
GORT_HIDDEN extern struct m *gort__allm;       /* atomic head, push-only */
GORT_HIDDEN extern gort_lock gort__allglock;
GORT_HIDDEN extern gort_lock gort__allplock;
GORT_HIDDEN extern struct g **gort__allgs;     /* under allglock; dumps
                                                  read it racily (a grown
                                                  array's old one is
                                                  retired, not freed) */
GORT_HIDDEN extern uint32_t gort__allglen;
GORT_HIDDEN extern uint32_t gort__idlepmask[GORT_MAX_PROCS / 32];
GORT_HIDDEN extern int64_t gort__runtime_init_time;
GORT_HIDDEN extern uint32_t gort__main_started; /* atomic */

/* Debug settings parsed from GORTDEBUG (env.c).  A trace path is at most
 * this long, its NUL included. */
#define GORT_TRACE_PATH_MAX 1024
struct gort_debugvars {
    int32_t schedtrace;      /* ms between SCHED lines; 0 off */
    int32_t scheddetail;     /* 1: P, M and G lines too */
    int32_t asyncpreemptoff; /* 1: no signal-based preemption */
    int32_t randomize;       /* 1: randomise runnext and queue order */
    int32_t stackguard;      /* STACK_GUARD_* forced, or -1 = auto */
    int32_t checkdeadoff;    /* 1: no deadlock detection */
    int32_t lockfence;       /* 0: runtime mutexes use the exchange
                                protocol (read again, and acted on, by
                                lock_futex.c when the library loads) */
    int32_t stackidle;       /* ms a free stack stays committed in the
                                pool before sysmon returns its pages */
    int32_t netpollspin;     /* us the poller polls without blocking
                                before it sleeps in epoll_wait; read
                                atomically (tests change it) */
    int32_t netpollnap;      /* us the poller naps on a timer before it
                                sleeps in epoll_wait; read atomically
                                (tests change it) */
    int32_t sysmonidle;      /* ms: sysmon's longest sleep while every
                                P is idle, 20 .. 10000; read atomically
                                (tests change it) */
    int32_t cpucrowd;        /* 1 (the default): sysmon's crowd meter
                                tries one event loop against two while
                                the CPUs are taken; 0: never one loop;
                                2: always (sysmon.c); read atomically
                                (tests change it) */
    int32_t hook;            /* 0: gort-hook's calls are the C library's
                                (docs/hooks.md) */
    int32_t sim;             /* 1: sim=SEED was given (docs/sim.md) */
    int32_t simstrategy;     /* SIM_RANDOM or SIM_PCT */
    int32_t simpct;          /* PCT's priority-change points (d) */
    int32_t simfault;        /* gort_sim_fault's rate, per million calls */
    uint64_t simseed;        /* sim=SEED */
    char trace[GORT_TRACE_PATH_MAX]; /* trace=path: trace file, "" off */
};
GORT_HIDDEN extern struct gort_debugvars gort__debug;

/*
 * The deterministic simulation mode (GORTDEBUG=sim=SEED, docs/sim.md):
 * one M runs every goroutine on one P, every scheduling choice comes from
 * the seeded random state, and gort_nanotime reads a virtual clock that
 * moves only when nothing can run.  Set by gort__read_env before any
 * other thread exists and cleared at shutdown; `on` is the one flag the
 * normal mode's paths test.
 */
enum { SIM_RANDOM = 0, SIM_PCT = 1 };
/* The virtual clock's first reading: a fixed, non-zero time (0 means
 * "none" for timers and deadlines). */
#define GORT_SIM_EPOCH ((int64_t)1000000000000)
/* A runtime entry (gort__preempt_check) yields with chance 1 in this. */
#define GORT_SIM_YIELD_ONE_IN 4
/* PCT's change points fall among this many scheduling steps. */
#define GORT_SIM_PCT_STEPS 2000
struct gort__simstate {
    uint32_t on;      /* atomic (relaxed): 1 in the simulation mode */
    int32_t strategy; /* SIM_RANDOM or SIM_PCT */
    int32_t pctdepth; /* PCT's d */
    uint64_t seed;
    int64_t now;      /* atomic (relaxed): the virtual clock */
    /* PCT (the driving M only): scheduling steps so far, and the d-1
     * steps (change[i] < 0: none) where the running G's priority drops
     * to i + 1, below every first priority (which are d or more). */
    int64_t step;
    int64_t change[64];
    /* The random state (an M's fastrand) of the one P while no M holds
     * it: it passes with the P from M to M (gort__acquirep,
     * gort__releasep), so the draws follow the seed whichever thread
     * takes the P next (a wired goroutine's, say).  Plain: the P's
     * hand-over (sched.lock, a note) orders one holder's writes before
     * the next one's reads. */
    uint32_t rand[2];
    /* gort_sim_fault: its rate per million calls, and its own random
     * state, seeded from the seed alone and apart from the scheduler's
     * so that calls that inject nothing leave the schedule as it was.
     * Touched only by the goroutine running on the one P's holder:
     * plain, ordered between holders as rand[] is. */
    int32_t faultppm;
    uint32_t faultrand[2];
    /* gort_sim_point: calls left until the next one that is a
     * preemption point (sim.c).  Plain, as rand[]. */
    int32_t points;
};
/* The most gort_sim_point calls between two preemption points. */
#define GORT_SIM_POINT_SPAN 16
GORT_HIDDEN extern struct gort__simstate gort__sim;
/* splitmix64's finaliser: a seed spread over all 64 bits (seeds 1 and 2
 * then start unrelated random sequences). */
static inline uint64_t gort__sim_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}
/* Whether the simulation mode is on: the normal mode's one test. */
static inline bool gort__sim_on(void)
{
    /* Relaxed: written before any other thread exists. */
    return GORT_UNLIKELY(__atomic_load_n(&gort__sim.on, __ATOMIC_RELAXED));
}

/* The thread that called gort_main. */
GORT_HIDDEN extern struct m *gort__m0;
/* gort_main's result; for ThreadSanitizer, the address that orders the
 * main goroutine's work before gort_main's return. */
GORT_HIDDEN extern int gort__main_status;
/* Keep a replaced array until shutdown (racy readers may hold it), and
 * free them all then (sched.c). */
GORT_HIDDEN void gort__retire(void *mem);
GORT_HIDDEN void gort__retired_free(void);

/* ---------------------------------------------------------------------------
 * The current M and G.
 *
 * A goroutine can resume on another thread after any switch, and a
 * compiler may keep a TLS address (or the thread pointer it came from) in
 * a register across a call it believes cannot change it.  So code reaches
 * the M only through gort__getm, which reads the thread pointer afresh at
 * every call:
 *   - on x86-64, inline: the %fs-relative load is volatile asm with a
 *     memory clobber, so it is neither merged with an earlier read nor
 *     moved across a switch (the clobber orders it as a call would);
 *   - elsewhere (aarch64 reads tpidr_el0 into a register the compiler may
 *     reuse), through a function that is never inlined.
 * Every entry into gort comes through it, which makes it the place to
 * finish two states the M may be in without knowing (gort__getm_slow): a
 * syscall marked by the preemption signal, and a thread gort did not
 * create.  One load and one test for the usual case.
 * ------------------------------------------------------------------------- */

/* The M as it is, without finishing a signal-marked syscall or making an
 * extra M: for signal handlers and the code that does those things. */
GORT_HIDDEN struct m *gort__getm_raw(void);
GORT_HIDDEN void gort__setm(struct m *mp);
/* This thread's M as gort__getm's one test sees it: mp, or NULL while
 * the M needs gort__getm_slow (syscall.c, around a signal-marked
 * syscall). */
GORT_HIDDEN void gort__setm_fast(struct m *mp);
GORT_HIDDEN struct m *gort__getm_slow(void);
/* gort__getm_slow's work is the scheduler's (foreign.c: an extra M for a
 * thread gort did not create, a signal-marked syscall finished), which it
 * registers here at start-up; before that no thread has an M to finish
 * and gort__getm_slow returns NULL. */
GORT_HIDDEN void gort__getm_set_slow(struct m *(*fn)(void));
/* gort__getm, but NULL for a thread gort did not create that has no M
 * yet, instead of making it one (runtime locks, read-only calls). */
GORT_HIDDEN struct m *gort__getm_noextra_slow(void);

/* gort__getm's test, the same on every architecture.  It reads a second
 * thread-local slot that holds the M only when there is nothing to
 * finish (not a foreign thread's M, not in a signal-marked syscall), so
 * the usual case is one load and one test. */
static inline __attribute__((always_inline)) struct m *
gort__getm_finish(struct m *fast)
{
    if (GORT_UNLIKELY(!fast))
        return gort__getm_slow();
    return fast;
}

/* The current M's fast slot (sched.c); initial-exec, also in the shared
 * library. */
GORT_HIDDEN extern __thread struct m *gort__tls_mfast
    __attribute__((tls_model("initial-exec")));

#if defined(__x86_64__) && defined(__GNUC__)

/* The fast slot alone: the M, or NULL when gort__getm would have to take
 * its slow path (which a caller with a slow path of its own can leave to
 * it). */
static inline __attribute__((always_inline)) struct m *gort__getm_fast(void)
{
    struct m *mp;
#if defined(__PIC__)
    __asm__ __volatile__("movq gort__tls_mfast@gottpoff(%%rip), %0\n\t"
                         "movq %%fs:(%0), %0"
                         : "=r"(mp)
                         :
                         : "memory");
#else
    __asm__ __volatile__("movq %%fs:gort__tls_mfast@tpoff, %0"
                         : "=r"(mp)
                         :
                         : "memory");
#endif
    return mp;
}

static inline __attribute__((always_inline)) struct m *gort__getm(void)
{
    return gort__getm_finish(gort__getm_fast());
}
#else
GORT_HIDDEN struct m *gort__getm(void);
GORT_HIDDEN struct m *gort__getm_fastslot(void);
static inline struct m *gort__getm_fast(void)
{
    return gort__getm_fastslot();
}
#endif
/* As gort__getm, but a thread gort did not create gets no extra M (NULL
 * unless it has one): for runtime locks and read-only calls.  The fast
 * path inline: every runtime lock takes it. */
static inline __attribute__((always_inline)) struct m *
gort__getm_noextra(void)
{
    struct m *mp = gort__getm_fast();
    if (GORT_LIKELY(mp))
        return mp;
    return gort__getm_noextra_slow();
}

/*
 * gort's own calls into libc that may sleep in the kernel (allocation,
 * mapping memory, creating threads, writing to a descriptor, the dynamic
 * linker's lock), made where the M may hold a P and no runtime lock, go
 * between gort__libc_begin and gort__libc_end: m->locks keeps the
 * inspector of unwrapped system calls (rawsys.c) from taking for the
 * program's a sleep that is gort's, and the P from under gort code.  No
 * switch between the two.
 */
static inline struct m *gort__libc_begin(void)
{
    struct m *mp = gort__getm_raw();
    if (mp)
        mp->locks++;
    return mp;
}
static inline void gort__libc_end(struct m *mp)
{
    if (mp)
        mp->locks--;
}
/* A word of another thread's stack (a redzone the sanitizer poisoned, a
 * racy read by design): os_linux.c. */
GORT_HIDDEN uintptr_t gort__peek(uintptr_t addr);
/* The allocator, so bracketed. */
GORT_HIDDEN void *gort__malloc(size_t n);
GORT_HIDDEN void *gort__calloc(size_t n, size_t size);
GORT_HIDDEN void *gort__realloc(void *p, size_t n);
GORT_HIDDEN void gort__free(void *p);

/* The running user G, or NULL on g0 / outside gort. */
static inline struct g *gort__getg(void)
{
    struct m *mp = gort__getm();
    return mp ? mp->curg : NULL;
}

/* The fatal error of a goroutine-only call (who) made where no goroutine
 * runs: before gort_main, after it returned, or on a thread gort did not
 * create where the call needs a P. */
GORT_HIDDEN GORT_NORETURN __attribute__((cold)) void
gort__fatal_no_goroutine(const char *who);
/* The calling goroutine's M, or the fatal error of a goroutine-only call
 * (who: the public function's name) made where no goroutine runs.  The
 * one test of "called from a goroutine" every such call makes. */
static inline struct m *gort__need_goroutine(const char *who)
{
    struct m *mp = gort__getm();
    if (GORT_UNLIKELY(!mp || !mp->curg))
        gort__fatal_no_goroutine(who);
    return mp;
}

/* Per-M random numbers (Go's fastrand): sched.c. */
GORT_HIDDEN uint32_t gort__fastrand(void);
GORT_HIDDEN uint32_t gort__fastrandn(uint32_t n);

/* ---------------------------------------------------------------------------
 * errno and SIGPIPE around gort's own calls (sched.c, os_linux.c).
 * ------------------------------------------------------------------------- */

/* This thread's errno, its address computed afresh at every call (sched.c):
 * glibc declares __errno_location const, so in a loop that may park (and
 * come back on another thread) the compiler may compute `errno`'s address
 * once, before the loop, and read the first thread's afterwards.  Loops
 * around a call that may park read errno through GORT_ERRNO. */
GORT_HIDDEN GORT_NOINLINE int *gort__errno_ptr(void);
#define GORT_ERRNO (*gort__errno_ptr())
/* Bracket gort's own write(2)-like calls on fd (begin before, end after
 * with the call's errno or 0): on a descriptor other than 1 and 2 the
 * SIGPIPE a broken pipe raises is ignored and the call fails with -EPIPE,
 * as in Go (os_linux.c).  Out of line, never inlined: the compiler takes
 * the thread pointer for a constant within a function and may compute a
 * thread variable's address once, before a loop in which the goroutine
 * parks and comes back on another thread (gcc does so on aarch64); a call
 * computes it afresh on the thread that makes it. */
GORT_HIDDEN GORT_NOINLINE void gort__nosigpipe_begin(int fd);
GORT_HIDDEN GORT_NOINLINE void gort__nosigpipe_end(int err);
/* expr (a write(2)-like call on fd, -1 and errno on failure) bracketed so;
 * the flag is this thread's, so it brackets the call alone (the goroutine
 * may move to another thread between calls).  errno is left as the call
 * set it. */
#define GORT_NOSIGPIPE(fd, expr)                                               \
    __extension__({                                                            \
        gort__nosigpipe_begin(fd);                                             \
        __typeof__(expr) gort__np_r = (expr);                                  \
        gort__nosigpipe_end(gort__np_r < 0 ? GORT_ERRNO : 0);                  \
        gort__np_r;                                                            \
    })
/* gort__lock/unlock for callers that already hold their M (the hot
 * scheduler paths): the uncontended case inline, one atomic each; the
 * rest is in lock_futex.c. */
static inline void gort__lock_m(struct m *mp, gort_lock *l)
{
    mp->locks++;
#ifdef GORT_LOCKRANK
    gort__lockrank_acquire(l, l->rank);
#endif
    /* Acquire: pairs with the release store or exchange in unlock. */
    uint32_t v = xchg_acqrel(&l->key, 1);
    if (GORT_UNLIKELY(v != 0))
        gort__lock_slow(l, v);
}

/* Release l, in either protocol; throws if it was not locked. */
static inline void gort__unlock_word(gort_lock *l)
{
    if (GORT_LIKELY(gort__lock_fenced)) {
        /* Relaxed: only the holder changes a locked word (to 0). */
        if (GORT_UNLIKELY(load_relaxed(&l->key) != 1))
            gort__throw("unlock of unlocked lock");
        /* Release: publishes the critical section to the next locker.
         * Then a plain look at nsleep, kept after the store by the
         * compiler fence; the processor may still read it before the
         * store is visible, which the sleeper's membarrier covers
         * (lock_futex.c). */
        store_rel(&l->key, 0);
        compiler_barrier();
        if (GORT_UNLIKELY(load_relaxed(&l->nsleep) != 0))
            gort__futexwake(&l->key, 1);
        return;
    }
    /* Release: publishes the critical section to the next locker; the
     * old value says whether someone sleeps (2). */
    uint32_t v = xchg_acqrel(&l->key, 0);
    if (GORT_UNLIKELY(v != 1)) {
        if (v == 0)
            gort__throw("unlock of unlocked lock");
        gort__futexwake(&l->key, 1);
    }
}

static inline void gort__unlock_m(struct m *mp, gort_lock *l)
{
    gort__unlock_word(l);
#ifdef GORT_LOCKRANK
    gort__lockrank_release(l);
#endif
    mp->locks--;
}

/*
 * Spin locks: a gort_spinlock for critical sections of a few dozen
 * instructions never held across a blocking call (channel locks; park
 * hands one to the next G on the same M, which releases it at once).
 * Waiters spin, then yield the thread, and never sleep in the kernel, so
 * with nobody to wake unlock is a release store: no locked instruction
 * (docs/design.md, "Channel locks never sleep"), and no sleeper needs to
 * fence (the runtime mutex's
 * fenced protocol, lock_futex.c).  One word, so it fits a public
 * structure's uint32_t (gort_cond); such a lock has no room for a rank
 * even with GORT_LOCKRANK, and its taker passes it
 * (gort__spinlock_rank_m).  mp may be NULL (a thread outside the
 * runtime).
 */
static inline void gort__spinlock_rank_m(struct m *mp, gort_spinlock *l,
                                         enum lockrank rank)
{
    if (mp)
        mp->locks++;
#ifdef GORT_LOCKRANK
    gort__lockrank_acquire(l, rank);
#else
    (void)rank;
#endif
    /* Acquire: pairs with the release store in unlock. */
    if (GORT_UNLIKELY(xchg_acqrel(&l->key, 1) != 0))
        gort__spinlock_slow(l);
}

/* The rank a spin lock holds (LOCKRANK_NONE without GORT_LOCKRANK, where
 * it holds none and nothing reads it). */
#ifdef GORT_LOCKRANK
#define GORT_SPINLOCK_RANK(l) ((enum lockrank)(l)->rank)
#else
#define GORT_SPINLOCK_RANK(l) LOCKRANK_NONE
#endif

static inline void gort__spinlock_m(struct m *mp, gort_spinlock *l)
{
    gort__spinlock_rank_m(mp, l, GORT_SPINLOCK_RANK(l));
}

/* Take l only if it is free at the first try (the buffered channel fast
 * paths, chan.c); false leaves nothing held. */
static inline bool gort__spintrylock_m(struct m *mp, gort_spinlock *l)
{
    mp->locks++;
    /* Acquire: pairs with the release store in unlock. */
    if (GORT_LIKELY(xchg_acqrel(&l->key, 1) == 0)) {
#ifdef GORT_LOCKRANK
        gort__lockrank_record(l, l->rank);
#endif
        return true;
    }
    mp->locks--;
    return false;
}

static inline void gort__spinunlock_m(struct m *mp, gort_spinlock *l)
{
    /* Release: publishes the critical section to the next locker. */
    store_rel(&l->key, 0);
#ifdef GORT_LOCKRANK
    gort__lockrank_release(l);
#endif
    if (mp)
        mp->locks--;
}

static inline void gort__spinlock(gort_spinlock *l)
{
    gort__spinlock_m(gort__getm(), l);
}

static inline void gort__spinunlock(gort_spinlock *l)
{
    gort__spinunlock_m(gort__getm(), l);
}

#endif /* GORT_SCHED_H */
