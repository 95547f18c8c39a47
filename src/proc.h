/*
 * proc.h - the scheduler layer's declarations: Ms, foreign threads, the
 * scheduler itself (park, ready, schedule), goroutine creation, boot's
 * shared state, syscalls, unwrapped calls, P ownership and
 * stop-the-world, preemption, sysmon, timers, the network poller and its
 * epoll backend, the blocking-call wrappers and the runtime's semaphores.
 * What the files of the scheduler layer offer each other and the layers
 * above (objects, observability, boot); the core's declarations, which
 * it includes, are core.h's.
 */
#ifndef GORT_PROC_H
#define GORT_PROC_H

#include "core.h"

/* ---------------------------------------------------------------------------
 * Ms (mthread.c).
 * ------------------------------------------------------------------------- */

/* A new M and its g0, not yet counted or on allm (NULL when out of
 * memory). */
GORT_HIDDEN struct m *gort__allocm(void);
GORT_HIDDEN void gort__freem(struct m *mp);
/* An M for a runtime thread that runs without a P (sysmon), counted in
 * sched.nmsys. */
GORT_HIDDEN struct m *gort__allocm_sys(void);
/* Give mp an id (id, reserved, or a new one when id < 0), seed its
 * random state and put it on allm.  sched.lock held. */
GORT_HIDDEN void gort__mcommoninit_id_locked(struct m *mp, int64_t id);
/* Fatal if the Ms pass sched.maxmcount.  sched.lock held. */
GORT_HIDDEN void gort__checkmcount_locked(void);
/* Threads the runtime has made (racy outside sched.lock; for reports). */
GORT_HIDDEN int32_t gort__mcount(void);
/* Set up the calling thread as mp (TLS, signal stack, sanitizer fiber):
 * 0 or a negative errno. */
GORT_HIDDEN int gort__mstart_common(struct m *mp);
/* A new M (a thread) to run pp.  Mirrors newm (proc.go). */
GORT_HIDDEN void gort__newm(struct p *pp, bool spinning);
/* An M off the idle list, or NULL.  sched.lock held.  Mirrors mget. */
GORT_HIDDEN struct m *gort__mget_locked(void);
/* Park the current M, which holds no P, until it is handed one.  Returns
 * false when the M must exit instead.  Mirrors stopm (proc.go). */
GORT_HIDDEN bool gort__stopm(struct m *mp);
GORT_HIDDEN void gort__stopm_schedule(struct m *mp);
/* startm with an idle P and no spinning (for injectglist). */
GORT_HIDDEN void gort__startm_idle(void);
/* Hand pp, whose M is blocking, to another M or the idle list. */
GORT_HIDDEN void gort__handoffp(struct p *pp);
/* Try to put one more P to work with a spinning M.  Mirrors wakep. */
GORT_HIDDEN void gort__wakep(void);
/* A wired G exited without unlocking: its M's thread ends (not M0's).
 * Returns false when the M must exit.  Mirrors mexit (proc.go). */
GORT_HIDDEN bool gort__mexit(struct m *mp);
/* LockOSThread.  The wired G of mp cannot run: give the P away and sleep
 * until a P comes with the G; returns the G (mp holding a P), or NULL
 * when the M must exit.  gort__stoplockedm: the same, returning whether
 * the M got its G.  Mirrors stoplockedm (proc.go). */
GORT_HIDDEN struct g *gort__stoplockedm_g(struct m *mp);
GORT_HIDDEN bool gort__stoplockedm(struct m *mp);
/* gp, just taken from a run queue, is wired to another M: hand it over.
 * Returns false when the caller must exit.  Mirrors startlockedm. */
GORT_HIDDEN bool gort__startlockedm(struct m *mp, struct g *gp);
/* Deadlock detection whenever an M goes idle.  sched.lock held.  Mirrors
 * checkdead (proc.go). */
GORT_HIDDEN void gort__checkdead_locked(void);

/* ---------------------------------------------------------------------------
 * Foreign threads (foreign.c).  gort__getm_slow and
 * gort__getm_noextra_slow (above) are foreign.c's too.
 * ------------------------------------------------------------------------- */

/* A foreign thread (mp, without a P) makes gp, of status from, runnable:
 * the global queue and a wakep. */
GORT_HIDDEN void gort__foreign_queue(struct m *mp, struct g *gp,
                                     uint32_t from);
/* gort__ready where the G stands for a foreign thread (its thread is
 * woken) or the caller is one (mp without a P: gort__foreign_queue). */
GORT_HIDDEN void gort__foreign_ready(struct m *mp, struct g *gp);
/* gort__park on a foreign thread: it sleeps on its M's note. */
GORT_HIDDEN void gort__foreign_park(struct m *mp, struct g *gp,
                                    gort__unlockf unlockf, void *lock);
/* Teardown: forget the extra Ms (their threads free them). */
GORT_HIDDEN void gort__foreign_fini(void);
/* gort__getm_slow's work (registered at boot). */
GORT_HIDDEN struct m *gort__foreign_getm(void);

/* ---------------------------------------------------------------------------
 * Scheduler (proc.c).
 * ------------------------------------------------------------------------- */

/* Park the running G with the given reason.  On g0, after the G's context
 * is saved, unlockf(mp, gp, lock) runs on its M; if it returns false the
 * G resumes at once.  Mirrors gopark (proc.go). */
GORT_HIDDEN void gort__park(gort__unlockf unlockf, void *lock,
                            uint32_t reason);
/* Make a WAITING G runnable (in runnext when next): on the caller's P;
 * from a caller without a P (a foreign thread), on the global queue; a G
 * standing for a foreign thread has its thread woken.  Mirrors goready
 * (proc.go). */
GORT_HIDDEN void gort__ready(struct g *gp, bool next);
/* Queue a batch of runnable Gs: one on the global queue per idle P (with
 * an M started for it), the rest on the caller's P, if it holds one.
 * Mirrors injectglist (proc.go). */
GORT_HIDDEN void gort__injectglist(struct gqueue *q, int32_t n);
/* gort__ready for a caller that has its M at hand, with the usual case
 * inline: gp is a G of gort's own and mp holds a P, which it keeps
 * throughout (m->locks).  The rest goes to gort__foreign_ready.  t (enum
 * gtrace): GT_OFF or GT_ON from a caller that has looked at the trace
 * flag (gort__ready's two bodies); GT_CHECK looks at it here and sends a
 * traced wake-up to gort__ready (the channel hand-offs).  Mirrors ready
 * (proc.go). */
static inline __attribute__((always_inline)) void
gort__ready_m(struct m *mp, struct g *gp, bool next, enum gtrace t)
{
    if (t == GT_CHECK && GORT_TRACE_ON()) {
        gort__ready(gp, next);
        return;
    }
    struct p *pp = mp->p;
    if (GORT_UNLIKELY(gp->foreign || !pp)) {
        gort__foreign_ready(mp, gp);
        return;
    }
    mp->locks++;
    /* Past the test above, GT_CHECK means untraced. */
    gort__casgstatus_t(gp, G_WAITING, G_RUNNABLE,
                       t == GT_ON ? GT_ON : GT_OFF);
    gort__runqput(pp, gp, next);
    if (load_relaxed(&gort__sched.npidle) != 0) /* wakep's first test */
        gort__wakep();
    mp->locks--;
}

/* The scheduler's loop on g0, until the M must exit.  Mirrors schedule
 * (proc.go). */
GORT_HIDDEN void gort__schedule(void);
GORT_HIDDEN void gort__dropg(struct m *mp);
/* Run fn(gp) on g0 with the current G's context saved (mcall). */
GORT_HIDDEN void gort__mcall(struct g *(*fn)(struct g *));
/* Reset the steal order for count Ps.  World stopped. */
GORT_HIDDEN void gort__steal_order_reset(uint32_t count);

/* ---------------------------------------------------------------------------
 * Goroutine creation (newproc.c).
 * ------------------------------------------------------------------------- */

/* A new G on allgs: G_DEAD, no stack.  NULL when out of memory.  Mirrors
 * malg (proc.go). */
GORT_HIDDEN struct g *gort__malg(void);
/* A G whose goroutine has ended (its context gone): its stack to pp's
 * stack cache, the G to pp's free list.  Owner P only. */
GORT_HIDDEN void gort__gfree_stack_and_put(struct p *pp, struct g *gp);
/* Start a goroutine from the scheduler (g0 of an M holding a P): the
 * goid, or -ENOMEM. */
GORT_HIDDEN int64_t gort__newproc_sys(void (*fn)(void *), void *arg);
/* Queue the main goroutine on pp at boot: 0 or -ENOMEM. */
GORT_HIDDEN int gort__newproc_main(struct p *pp, void (*fn)(void *),
                                   void *arg, uintptr_t pc);
/* Free every G and allgs at shutdown. */
GORT_HIDDEN void gort__allgs_fini(void);

/* ---------------------------------------------------------------------------
 * Boot and shutdown (boot.c).
 * ------------------------------------------------------------------------- */

/* The thread that called gort_main. */
GORT_HIDDEN extern struct m *gort__m0;
/* gort_main's result; for ThreadSanitizer, the address that orders the
 * main goroutine's work before gort_main's return. */
GORT_HIDDEN extern int gort__main_status;
/* On g0, the main goroutine gp having returned: stop the world and tell
 * every M to exit (an mcall function). */
GORT_HIDDEN struct g *gort__main_exit_m(struct g *gp);
/* Keep a replaced array until shutdown (racy readers may hold it), and
 * free them all then (sched.c). */
GORT_HIDDEN void gort__retire(void *mem);
GORT_HIDDEN void gort__retired_free(void);

/* Syscalls (syscall.c).  how: 1 explicit, 2 marked by the preemption
 * signal. */
GORT_HIDDEN void gort__entersyscall_m(struct m *mp, struct g *gp,
                                      uint32_t how);
GORT_HIDDEN void gort__exitsyscall_m(struct m *mp, struct g *gp);
/* A preemption signal is on its way to mp's thread, which is entering a
 * system call: wait until its handler has run (syscall.c). */
GORT_HIDDEN void gort__urg_wait(struct m *mp);

/* Unwrapped blocking calls (rawsys.c). */
enum { RAWSYS_SIGNAL = 0, RAWSYS_PROC };
/* RAWSYS_PROC when /proc shows this process's own system calls, else
 * RAWSYS_SIGNAL (the preemption signal finds them: preempt.c).  Set at
 * start; relaxed. */
GORT_HIDDEN extern uint32_t gort__rawsys_mode;
/* m->rawmark: an inspector's claim on a sleeping thread (rawsys.c). */
enum { RAWMARK_NONE = 0, RAWMARK_INTENT, RAWMARK_COMMITTING, RAWMARK_DONE };
enum rawsys_result {
    RAWSYS_UNKNOWN,   /* /proc cannot tell here: the preemption
                         signal looks instead (preempt.c) */
    RAWSYS_SKIP,      /* nothing to see now (in gort, a lock, a fault) */
    RAWSYS_BUSY,      /* another inspector has the M: look again soon */
    RAWSYS_RUNNING,   /* runnable */
    RAWSYS_BLOCKED,   /* asleep in a call nobody wrapped, not long enough
                         yet: look again soon */
    RAWSYS_HANDEDOFF, /* asleep long enough: its P was handed off */
};
/* Decide how, at start: RAWSYS_PROC or RAWSYS_SIGNAL. */
GORT_HIDDEN void gort__rawsys_init(void);
/* Look at the thread running pp's G: if it sleeps in a call nobody
 * wrapped and has slept long enough (slept_ns), hand its P off.  Any
 * thread but the inspected one. */
GORT_HIDDEN enum rawsys_result gort__rawsys_inspect(struct p *pp, int64_t now,
                                                    int64_t slept_ns);
/* The thread's side: publish its TLS to inspectors (mfast: its
 * gort__tls_mfast) at start, settle an inspector's claim
 * (gort__getm_slow), and let no inspector touch its TLS once it ends. */
GORT_HIDDEN void gort__rawsys_thread_start(struct m *mp, struct m **mfast);
GORT_HIDDEN void gort__rawsys_back(struct m *mp);
GORT_HIDDEN void gort__rawsys_thread_exit(struct m *mp);
/* On an idle M woken to watch a syscall: take its P if the syscall lasts.
 * True when mp now holds a P. */
GORT_HIDDEN bool gort__syscall_watch(struct m *mp);
/* Cooperative preemption point: yield if sysmon asked this G to. */
GORT_HIDDEN void gort__preempt_check(void);
GORT_HIDDEN void gort__preempt_yield(struct m *mp, struct g *gp);
/* gort__preempt_check for a caller that has its M at hand. */
static inline void gort__preempt_check_m(struct m *mp)
{
    struct g *gp = mp->curg;
    /* Relaxed: a late sighting only delays the preemption a little. */
    if (GORT_UNLIKELY(gp && load_relaxed(&gp->preempt) && mp->locks == 0))
        gort__preempt_yield(mp, gp);
}
GORT_HIDDEN void gort__stop_the_world(const char *why);
GORT_HIDDEN void gort__start_the_world(void);
/* The halves of stop/start-the-world that run on any stack of an M
 * holding a P (procresize.c). */
GORT_HIDDEN void gort__stw_stop(struct m *mp);
GORT_HIDDEN void gort__stw_start(struct m *mp);
/* Change the number of Ps; world stopped, sched.lock held.  Returns the
 * Ps that have work, linked through p->link (procresize.c). */
GORT_HIDDEN struct p *gort__procresize(struct m *mp, int32_t nprocs);
GORT_HIDDEN extern int32_t gort__newprocs;
GORT_HIDDEN extern uint32_t gort__worldsema;
GORT_HIDDEN extern int32_t gort__allp_len;
/* P ownership and the idle P list (procresize.c); the _locked ones need
 * sched.lock. */
GORT_HIDDEN void gort__acquirep(struct m *mp, struct p *pp);
/* Take mp's P from it and return the P, now idle.  Mirrors releasep. */
GORT_HIDDEN struct p *gort__releasep(struct m *mp);
GORT_HIDDEN void gort__pidleput_locked(struct p *pp);
GORT_HIDDEN struct p *gort__pidleget_locked(void);
/* pidleget, recording that a spinning M was wanted when no P is idle.
 * Mirrors pidlegetSpinning (proc.go). */
GORT_HIDDEN struct p *gort__pidlegetspinning_locked(void);
GORT_HIDDEN void gort__setidlep(int32_t id, bool idle);
static inline bool gort__isidlep(int32_t id)
{
    return (load_relaxed(&gort__idlepmask[id / 32]) >> (id % 32)) & 1;
}
/* Stop the current M's P for a pending stop-the-world; false when the M
 * must exit.  Mirrors gcstopm (procresize.c). */
GORT_HIDDEN bool gort__gcstopm(struct m *mp);

/* Asynchronous preemption (preempt.c). */
GORT_HIDDEN int gort__preempt_init(void);
GORT_HIDDEN void gort__preempt_fini(void);

/* A G's own stack for preemptions deep in its stack (preempt.c; its
 * size, GORT_PREEMPT_STK, is in core.h beside struct g). */
GORT_HIDDEN void gort__preemptstk_free(struct g *gp);
/* Whether preemption signals are used (not under ThreadSanitizer or
 * Valgrind, nor with GORTDEBUG=asyncpreemptoff=1). */
GORT_HIDDEN bool gort__preempt_async_on(void);
/* The M's CPU-time timer, which carries its preemption signal where
 * /proc shows the threads' calls (preempt.c): made on the M's own thread
 * (after gort__minit; M0's by gort__preempt_init), deleted before its
 * gort__unminit. */
GORT_HIDDEN void gort__preempt_thread_start(struct m *mp);
GORT_HIDDEN void gort__preempt_thread_exit(struct m *mp);
/* Send mp's thread the preemption signal (when asynchronous preemption
 * is on): by its CPU-time timer, which fires only while the thread runs;
 * at once where it has none (RAWSYS_SIGNAL, where the signal itself looks
 * for blocked calls, or the kernel refused a timer). */
GORT_HIDDEN void gort__preempt_signal(struct m *mp);
/* Ask the G running on pp to yield, and signal its thread. */
GORT_HIDDEN void gort__preempt_request(struct p *pp);

/* sysmon (sysmon.c). */
GORT_HIDDEN int gort__sysmon_start(void);
GORT_HIDDEN void gort__sysmon_stop(void);
GORT_HIDDEN void gort__sysmon_wake(void);
/* Put sysmon back on its shortest rounds (a syscall holds a P that has
 * work waiting). */
GORT_HIDDEN void gort__sysmon_kick(void);

/* ---------------------------------------------------------------------------
 * Timers (time.c).
 * ------------------------------------------------------------------------- */

GORT_HIDDEN int64_t gort__timers_check(struct p *pp, int64_t now);
GORT_HIDDEN int64_t gort__timers_earliest(void);
GORT_HIDDEN bool gort__timers_any(void);
GORT_HIDDEN void gort__timers_move(struct p *from, struct p *to);
GORT_HIDDEN void gort__timers_fini(struct p *pp);
GORT_HIDDEN void gort__gtimer_reset(struct gtimer *t, int64_t when);
GORT_HIDDEN bool gort__gtimer_stop(struct gtimer *t);
/* The calling goroutine's P, whose heap its timers go on (fatal, naming
 * who, outside a goroutine or on a thread gort did not create). */
GORT_HIDDEN struct p *gort__timer_p(const char *who);
/* Put t, in no heap, on pp's heap at t->when; take t out of its heap
 * (true if it was pending).  Both with t->mu held. */
GORT_HIDDEN void gort__timer_add(struct p *pp, struct gtimer *t);
GORT_HIDDEN bool gort__timer_remove(struct gtimer *t);

/* ---------------------------------------------------------------------------
 * Network poller (netpoll.c).  Mirrors netpoll.go.
 * ------------------------------------------------------------------------- */

/* A registered descriptor's state in the poller: its goroutines waiting
 * to read and to write, its deadlines, its references.  Mirrors pollDesc
 * (netpoll.go). */
struct polldesc {
    struct polldesc *link;  /* free list; under pollcache.lock */
    int fd;                 /* atomic (relaxed): set under pollcache.lock
                             * at registration, read by gort__fd_ref */
    uint32_t refs;          /* atomic: PD_REF_* | calls in flight */
    uint32_t seq;           /* bumped on reuse; events carry it */
    uint32_t closing;       /* atomic: gort_close began */
    bool stream;            /* a pipe or stream socket: a short read
                             * leaves it empty; set at registration */
    bool inq;               /* a TCP socket of gort's own with TCP_INQ on:
                             * every read says whether it left the socket
                             * empty (fdio.c, fd_read); set at
                             * registration */
    uint32_t rdrained;      /* atomic: the last read was short (see
                             * fdio.c, fd_read) */
    uint32_t rdhup;         /* atomic: an event said hang-up or error:
                             * reads never wait first again */
    uintptr_t rg, wg;       /* atomic: PD_* (netpoll.c) or a G */
    int64_t rd, wd;         /* atomic: deadline (0 none, -1 expired) */
    struct gtimer rt, wt;   /* deadline timers */
};

/* Set (release) once the backend is set up, on the first registration. */
GORT_HIDDEN extern uint32_t gort__netpollinited;
/* Whether the backend is set up.  Acquire: a thread that sees it set sees
 * the backend's descriptors. */
static inline bool gort__netpoll_inited(void)
{
    return load_acq(&gort__netpollinited) != 0;
}
GORT_HIDDEN void gort__netpoll_fini(void);
/* Goroutines parked in IO wait. */
GORT_HIDDEN uint32_t gort__netpoll_waiters(void);
/* For the backend: readiness for mode ('r', 'w' or 'r' + 'w') arrived on
 * pd (hup: it hung up or failed); the Gs it unblocks, RUNNABLE, go in q.
 * Returns how many. */
GORT_HIDDEN int32_t gort__netpoll_ready(struct polldesc *pd, int mode,
                                        bool hup, struct gqueue *q);

/* The poller's sleep, until `until` (0: until woken); returns the Gs the
 * backend readied meanwhile (RUNNABLE, linked in q).  The caller holds no
 * P and has claimed sched.lastpoll. */
GORT_HIDDEN int32_t gort__netpoll_sleep(int64_t until, struct gqueue *q);
/* Wake the M sleeping as the poller: through the backend once it is set
 * up (gort__netpoll_break), else on the futex it then sleeps on. */
GORT_HIDDEN void gort__netpoll_wake(void);
/* A timer at `when` was added: wake the poller if it would sleep past
 * it, or, with no poller, a P.  Mirrors wakeNetPoller (proc.go). */
GORT_HIDDEN void gort__netpoll_wake_by(int64_t when);
/* Whether the poller's spin pays: spin now (SPINPAY_*: while it
 * does not pay, one idle spell in 64 to 1,024 probes)?  Does an idle spell that
 * ended after gap ns, spun or slept, tell anything?  Record it (probe: it
 * was a probe).  Reset (gort_main's start, and tests).  The poller M
 * only. */
enum { SPINPAY_SLEEP = 0, SPINPAY_SPIN, SPINPAY_PROBE };
GORT_HIDDEN int gort__spinpay_spin(void);
GORT_HIDDEN bool gort__spinpay_counts(bool spun, int64_t gap, int64_t spin);
GORT_HIDDEN void gort__spinpay_record(int64_t gap, int64_t spin, bool probe);
GORT_HIDDEN void gort__spinpay_reset(void);
/* A sleep of the poller cost its thread cpu ns of CPU (measured). */
GORT_HIDDEN void gort__spinpay_sleepcpu(int64_t cpu);

/* A registered descriptor's pollDesc, for fdio.c's calls.  Register fd
 * (inq: a TCP socket with TCP_INQ on): 0 or -errno. */
GORT_HIDDEN int gort__fd_register(int fd, bool inq);
/* The pollDesc of a registered fd with a reference held (a closed one
 * too: the call fails with -EBADF), or NULL; every call that uses it
 * drops it with gort__fd_unref when done. */
GORT_HIDDEN struct polldesc *gort__fd_ref(int fd);
GORT_HIDDEN void gort__fd_unref(struct polldesc *pd);
/* Close a registered fd (0 or -errno), or 1 when it is not registered. */
GORT_HIDDEN int gort__fd_close(int fd);
/* Park until pd is ready for mode ('r' or 'w'): 0, or -EBADF (closed),
 * -ETIMEDOUT (its deadline passed). */
GORT_HIDDEN int gort__fd_wait(struct polldesc *pd, int mode);
GORT_HIDDEN int gort__fd_set_deadline(struct polldesc *pd, int mode,
                                      int64_t when);
/* The error that ends a wait in direction mode (0 none).  Mirrors
 * netpollcheckerr.
 *
 * Closing and deadlines against a parking waiter are a store-buffer
 * handshake: the waiter stores PD_WAIT in rg/wg and then loads closing and
 * rd/wd; a closer or an expired deadline stores its flag and then loads
 * rg/wg (netpollunblock).  With acquire/release alone both loads may read
 * the old values (on x86-64 a plain store waits in the store buffer while
 * the next load goes ahead), the waiter parks, nobody wakes it.  So all
 * four accesses are sequentially consistent, as Go's atomics are: one of
 * the two sides sees the other.  (On x86-64 the loads stay plain moves.) */
static inline int gort__fd_checkerr(struct polldesc *pd, int mode)
{
    if (load_seqcst(&pd->closing)) {
        /* ThreadSanitizer (san.c): the close happens before this. */
        gort__san_acquire(&pd->closing);
        return -EBADF;
    }
    int64_t d = load_seqcst(mode == 'r' ? &pd->rd : &pd->wd);
    if (d < 0)
        return -ETIMEDOUT;
    return 0;
}

/* ---------------------------------------------------------------------------
 * epoll backend (netpoll_epoll.c).  Mirrors netpoll_epoll.go: what
 * netpoll.c asks of the system's poller, and the poll the scheduler
 * makes, under the names a backend for another system would define too
 * (Go's netpollinit, netpollopen, netpollclose, netpollBreak, netpoll).
 * init, open and close run under pollcache.lock (netpoll.c), uninit
 * with the runtime stopped.
 * ------------------------------------------------------------------------- */

/* Set the backend up (0 or -errno), and close it at teardown. */
GORT_HIDDEN int gort__netpoll_init(void);
GORT_HIDDEN void gort__netpoll_uninit(void);
/* Add fd, whose pollDesc is pd, for reading and writing (0 or -errno);
 * take it out. */
GORT_HIDDEN int gort__netpoll_open(int fd, struct polldesc *pd);
GORT_HIDDEN void gort__netpoll_close(int fd);
/* Wake the M blocked in the backend's wait.  Mirrors netpollBreak. */
GORT_HIDDEN void gort__netpoll_break(void);
/* Collect Gs whose descriptors are ready, waiting up to delay ns (0: no
 * wait, < 0: until an event or a break); RUNNABLE, linked in q. */
GORT_HIDDEN int32_t gort__netpoll(int64_t delay, struct gqueue *q);
/* Poll without blocking until `end` or an event while every P is idle:
 * the Gs readied (0 for a break alone), or -1 when nothing came. */
GORT_HIDDEN int32_t gort__netpoll_spin(int64_t end, struct gqueue *q);

/* ---------------------------------------------------------------------------
 * Blocking-call wrappers (syscall.c, fdio.c) and semaphores (sema.c).
 * ------------------------------------------------------------------------- */

/* The body of a blocking-call wrapper: `call`, an expression of type
 * `type` (-1 and errno on failure), between gort_entersyscall and
 * gort_exitsyscall, retried on EINTR; returns its value or -errno from the
 * enclosing function.  errno is read before exitsyscall: the G may come
 * back on another thread, whose errno is another variable. */
#define GORT_SYSCALL_RETRY(type, call)                                         \
    do {                                                                       \
        for (;;) {                                                             \
            gort_entersyscall();                                               \
            type r_ = (call);                                                  \
            int e_ = r_ < 0 ? GORT_ERRNO : 0;                                  \
            gort_exitsyscall();                                                \
            if (r_ >= 0)                                                       \
                return r_;                                                     \
            if (e_ != EINTR)                                                   \
                return -e_;                                                    \
        }                                                                      \
    } while (0)

/* Semaphores (sema.c).  Mirrors sema.go.  semacquire1 parks until it can
 * take a unit from *addr; lifo queues the caller first among the waiters
 * on addr (a mutex waiter that has waited before).  semrelease adds a unit
 * and wakes the first waiter; with handoff the unit goes straight to that
 * waiter.  Both must run on a goroutine. */
GORT_HIDDEN void gort__semacquire1(uint32_t *addr, bool lifo,
                                   uint32_t reason);
GORT_HIDDEN void gort__semacquire(uint32_t *addr, uint32_t reason);
GORT_HIDDEN void gort__semrelease(uint32_t *addr, bool handoff);
GORT_HIDDEN void gort__semafini(void);
/* Notify lists (sema.c), on the storage of a gort_cond.  Mirrors
 * notifyList: add hands out a ticket (call it before dropping the user's
 * lock), wait parks until that ticket is notified, notifyone wakes the
 * oldest unnotified ticket, notifyall every ticket handed out.  The
 * list's lock ranks with the semaphore roots (object locks). */
GORT_HIDDEN uint32_t gort__notifylistadd(gort_cond *c);
GORT_HIDDEN void gort__notifylistwait(gort_cond *c, uint32_t ticket);
GORT_HIDDEN void gort__notifylistnotifyone(gort_cond *c);
GORT_HIDDEN void gort__notifylistnotifyall(gort_cond *c);

#endif /* GORT_PROC_H */
