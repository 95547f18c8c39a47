/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the one door from the white-box tests into gort's runtime.
 *
 * A test that checks what the public API cannot show includes this header
 * and no other header of src/: the test binaries do not have src/ on their
 * include path (tests/CMakeLists.txt).  It brings in the runtime's headers
 * for the types, constants and functions listed below, and offers setters
 * for the runtime state the tests change, so that no test writes a runtime
 * global itself.  When the runtime's headers are split or renamed, this is
 * the one file of the tests to change; keep the list in step with what the
 * tests use, and add a setter here rather than a write in a test.
 *
 * What the tests read or call, by the module that owns it:
 *
 *   the G, M and P (sched.c)    struct g (goid, atomicstatus, m, stack,
 *                               preempt, preemptstk), struct m (p, locks,
 *                               fastrand), struct p (id, status, runq,
 *                               runqhead, runqtail, runnext, schedtick);
 *                               G_RUNNABLE,
 *                               G_WAITING, G_SYSCALL, P_IDLE, P_RUNNING,
 *                               P_SYSCALL, WAIT_SEMACQUIRE; gort__getg,
 *                               gort__getm, gort__setm, gort__readgstatus;
 *                               gort__allgs, gort__allglen,
 *                               gort__gomaxprocs, gort__runtime_init_time;
 *                               GORT_GFREE_MAX, GORT_GLOBAL_CHECK_TICKS,
 *                               GORT_MAX_PROCS, GORT_DEFAULT_MAX_THREADS
 *   run queues (runq.c)         gort__sched (lock, runq, runq_woken,
 *                               runqsize), struct gqseg, struct gsegq,
 *                               struct gqueue, GORT_RUNQ_SIZE, GORT_GQSEG_N,
 *                               GORT_STEAL_TRIES; gort__runqput,
 *                               gort__runqget, gort__runqlen,
 *                               gort__runqempty, gort__runqsteal,
 *                               gort__globrunqput_locked,
 *                               gort__globrunqputhead_locked,
 *                               gort__globrunqputwoken_locked,
 *                               gort__globrunqget_locked,
 *                               gort__globrunq_has_locked,
 *                               gort__gqueue_push
 *   locks (lock_futex.c)        gort__lock, gort__unlock, gort__lock_fenced,
 *                               gort__spinlock, gort__spinunlock,
 *                               gort_spinlock, GORT_LOCK_INIT,
 *                               LOCKRANK_*, gort__allplock,
 *                               gort__pidleget_locked (test_lock),
 *                               gort__lock_sleeps (declared here)
 *   context switch (arch/)      gort__ctx_make, gort__ctx_switch
 *   stacks (stack.c)            GORT_PREEMPT_STK, STACK_GUARD_CANARY,
 *                               STACK_GUARD_MPROTECT, STACK_GUARD_MADVISE,
 *                               gort__stack_size
 *   settings (env.c)            struct gort_debugvars, gort__debug,
 *                               gort__ncpu, gort__parse_maxprocs,
 *                               gort__parse_debug, gort__parse_stacksize,
 *                               gort__parse_traceback, gort__read_env,
 *                               gort__default_procs, gort__affinity_cpus,
 *                               gort__cgroup_cpu_limit, TRACEBACK_NONE,
 *                               TRACEBACK_SINGLE, TRACEBACK_ALL,
 *                               TRACEBACK_SYSTEM, GORT_TRACE_PATH_MAX
 *   semaphores (sema.c)         gort__semacquire, gort__semacquire1,
 *                               gort__semrelease
 *   channels (chan.h)           struct gort_chan (recvq.first)
 *   the poller's spin policy    gort__spinpay_reset, gort__spinpay_record,
 *     (netpoll.c)               gort__spinpay_spin, gort__spinpay_sleepcpu,
 *                               gort__spinpay_counts, SPINPAY_PROBE,
 *                               SPINPAY_SLEEP
 *   the spin trial (netpoll.c)  gort__spintrial_reset, _due, _turn,
 *                               _mode, _drop, SPINTRIAL_SLEEP,
 *                               SPINTRIAL_SPIN, SPINTRIAL_NAP
 *   the crowd meter (sysmon.c)  struct gort__crowd, gort__crowd_step,
 *                               gort__crowd_on, GORT_CROWD_TRIAL_EVERY,
 *                               GORT_CROWD_TRIAL_MAX,
 *                               GORT_CROWD_WAIT_PERMILLE, gort__sched
 *                               (crowded)
 *   fatal errors (fatal.c)      gort__throw, gort__fatal
 *   stack walks (traceback.c)   struct tbstart, gort__unwind,
 *                               GORT_TB_MAXFRAMES, gort__async_preempt_ret
 *                               (declared here)
 *   build switches              GORT_NOINLINE, GORT_ASAN, GORT_TSAN
 *   atomics (atomic.h)          load_acq, load_relaxed
 *
 * What the tests set, through the functions below: the scheduler's global
 * state (rt_sched_reset, rt_set_gomaxprocs, rt_globrunq_pop(_locked)), the
 * debug knobs (rt_set_randomize, rt_set_schedtrace, rt_set_netpollspin,
 * rt_set_netpollnap, rt_set_cpucrowd), the goroutine stack size
 * (rt_set_stack_size), a G's wait start (rt_set_waitsince) and the tracer's
 * writer (rt_set_trace_stall).
 */
#ifndef GORT_TESTS_INTERNAL_H
#define GORT_TESTS_INTERNAL_H

#include "../../src/arch.h"
#include "../../src/atomic.h"
#include "../../src/chan.h"
#include "../../src/defs.h"
#include "../../src/env.h"
#include "../../src/fatal.h"
#include "../../src/lock_futex.h"
#include "../../src/netpoll.h"
#include "../../src/procresize.h"
#include "../../src/runq.h"
#include "../../src/sched.h"
#include "../../src/sema.h"
#include "../../src/stack.h"
#include "../../src/symbolize.h"
#include "../../src/sysmon.h"
#include "../../src/trace.h"

#include <string.h>

/* Futex sleeps of the runtime locks so far (lock_futex.c; only the tests
 * read it).  Relaxed atomic counter. */
GORT_HIDDEN extern uint64_t gort__lock_sleeps;
/* The return address the preemption trampoline leaves in its frame
 * (arch/<arch>.S), where a stack walk crosses into the signal context
 * (traceback.c declares it for itself). */
GORT_HIDDEN extern const char gort__async_preempt_ret[];

/* ---------------------------------------------------------------------------
 * Scheduler state.  Off the runtime only: no M may be running.
 * ------------------------------------------------------------------------- */

/* A fresh gort__sched: the global queue's segments freed, every field 0. */
static inline void rt_sched_reset(void)
{
    gort__globrunq_fini();
    memset(&gort__sched, 0, sizeof gort__sched);
    gort__lock_init(&gort__sched.lock, LOCKRANK_SCHED);
    gort__lock_init(&gort__sched.gfree_lock, LOCKRANK_GFREE);
}

/* GOMAXPROCS as the run queues see it (globrunqget divides by it), without
 * resizing anything. */
static inline void rt_set_gomaxprocs(int32_t procs)
{
    /* Relaxed: the runtime reads it with load_relaxed. */
    store_relaxed(&gort__gomaxprocs, procs);
}

/* Pop the global queue's head as the scheduler does, counting it off
 * runqsize (the woken part first); NULL when runqsize is 0.  sched.lock
 * held, or off the runtime. */
static inline struct g *rt_globrunq_pop_locked(void)
{
    if (gort__sched.runqsize == 0)
        return NULL;
    store_relaxed(&gort__sched.runqsize, gort__sched.runqsize - 1);
    return gort__globpop_locked();
}

/* rt_globrunq_pop_locked with sched.lock taken around it. */
static inline struct g *rt_globrunq_pop(void)
{
    gort__lock(&gort__sched.lock);
    struct g *gp = rt_globrunq_pop_locked();
    gort__unlock(&gort__sched.lock);
    return gp;
}

/* ---------------------------------------------------------------------------
 * Debug knobs (GORTDEBUG) and settings.
 * ------------------------------------------------------------------------- */

/* GORTDEBUG=randomize: runnext and the steal order randomized.  Set before
 * the threads that read it start, or from the owner of the queues. */
static inline void rt_set_randomize(bool on)
{
    gort__debug.randomize = on;
}

/* GORTDEBUG=schedtrace, in ms.  Before gort_main. */
static inline void rt_set_schedtrace(int32_t ms)
{
    gort__debug.schedtrace = ms;
}

/* GORTDEBUG=netpollspin, in us; returns the value before.  Any time: the
 * poller reads it at each sleep, atomically (relaxed). */
static inline int32_t rt_set_netpollspin(int32_t us)
{
    int32_t old = load_relaxed(&gort__debug.netpollspin);
    store_relaxed(&gort__debug.netpollspin, us);
    return old;
}

/* GORTDEBUG=netpollnap, in us; returns the value before.  Any time: the
 * spin trial and the poller read it, atomically (relaxed). */
static inline int32_t rt_set_netpollnap(int32_t us)
{
    int32_t old = load_relaxed(&gort__debug.netpollnap);
    store_relaxed(&gort__debug.netpollnap, us);
    return old;
}

/* GORTDEBUG=cpucrowd (0, 1 or 2); returns the value before.  Any time:
 * sysmon reads it at each round, atomically (relaxed), and sets
 * gort__sched.crowded from it. */
static inline int32_t rt_set_cpucrowd(int32_t mode)
{
    int32_t old = load_relaxed(&gort__debug.cpucrowd);
    store_relaxed(&gort__debug.cpucrowd, mode);
    return old;
}

/* The goroutine stack size (GORTSTACKSIZE, gort_set_stack_size).  Before
 * gort_main. */
static inline void rt_set_stack_size(size_t bytes)
{
    gort__stack_size = bytes;
}

/* ---------------------------------------------------------------------------
 * Goroutines and the tracer.
 * ------------------------------------------------------------------------- */

/* Fake when gp started waiting (the dump's ", N minutes"), in
 * gort_nanotime's clock; 0 for unknown.  gp must be parked or in a system
 * call, and stay so until the dump that reads it. */
static inline void rt_set_waitsince(struct g *gp, int64_t when)
{
    gp->waitsince = when;
}

/* While on, the trace writer takes no buffers, so that records are dropped
 * once the pool is used up. */
static inline void rt_set_trace_stall(bool on)
{
    /* Relaxed, as the writer reads it. */
    store_relaxed(&gort__trace_stall, on ? 1u : 0u);
}

#endif /* GORT_TESTS_INTERNAL_H */
