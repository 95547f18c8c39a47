/* SPDX-License-Identifier: MIT */
/*
 * boot.c - boot and shutdown: gort_main sets up the calling thread as M0
 * and the runtime around it (environment, stacks, Ps, the main goroutine,
 * signals, the execution trace, preemption, sysmon), runs the scheduler
 * there until the main goroutine returns, then ends every other thread
 * and frees everything it made.  Also here: the thread limit
 * (gort_set_max_threads).  Mirrors schedinit, main and exit (proc.go).
 *
 * Shutdown: the M running the main goroutine when it returns stops the
 * world and tells every M to exit (gort__main_exit_m, mthread.c); M0 leaves
 * schedule(), stops sysmon, joins the other threads and frees every G, M
 * and P (teardown).  Goroutines still alive are discarded, as Go
 * discards them at exit, and gort_main can be called again.
 *
 * Invariants:
 *   - One gort_main at a time (gort_running).
 *   - gort__main_started is set once boot is done (the scheduler runs)
 *     and cleared after teardown; code that may run before, after or
 *     beside gort_main (foreign threads, metrics, a wakep during boot)
 *     looks at it first.
 */
#include "atomic.h"
#include "chan.h"
#include "defs.h"
#include "env.h"
#include "fatal.h"
#include "foreign.h"
#include "lock_futex.h"
#include "mthread.h"
#include "netpoll.h"
#include "newproc.h"
#include "os_linux.h"
#include "preempt.h"
#include "proc.h"
#include "procresize.h"
#include "rawsys.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "sema.h"
#include "signal.h"
#include "stack.h"
#include "syscall.h"
#include "sysmon.h"
#include "timers.h"
#include "trace.h"

#include <errno.h>
#include <string.h>

static uint32_t gort_running;  /* atomic: a gort_main is in progress */
static void reset_globals(void)
{
    memset(&gort__sched, 0, sizeof gort__sched);
    gort__lock_init(&gort__sched.lock, LOCKRANK_SCHED);
    gort__lock_init(&gort__sched.gfree_lock, LOCKRANK_GFREE);
    gort__sched.maxmcount = gort__sched.maxmcount ? gort__sched.maxmcount
                                                  : GORT_DEFAULT_MAX_THREADS;
    gort__allp = NULL;
    gort__allp_len = 0;
    gort__gomaxprocs = 0;
    gort__allm = NULL;
    gort__allgs = NULL;
    gort__allglen = 0;
    gort__newprocs = 0;
    gort__worldsema = 1;
    gort__sched.lastpoll = 1; /* nobody sleeps as the poller */
    gort__sched.coarsenow = gort_nanotime();
    memset(gort__idlepmask, 0, sizeof gort__idlepmask);
}

static int32_t max_threads_setting = GORT_DEFAULT_MAX_THREADS;

int gort_set_max_threads(int n)
{
    if (n < 1)
        return -EINVAL;
    int32_t old = max_threads_setting;
    max_threads_setting = n;
    if (load_relaxed(&gort_running)) {
        gort__lock(&gort__sched.lock);
        gort__sched.maxmcount = n;
        gort__checkmcount_locked();
        gort__unlock(&gort__sched.lock);
    }
    return old;
}

/* Free every G, M and P after all threads have exited. */
static void teardown(void)
{
    for (uint32_t i = 0; i < gort__allglen; i++) {
        struct g *gp = gort__allgs[i];
        struct gort_defer_rec *d = gp->defers;
        while (d) {
            struct gort_defer_rec *next = d->next;
            gort__free(d);
            d = next;
        }
        if (gort__san & GORT_SAN_TSAN)
            gort__san_g_teardown(gp);
        gort__stackfree(&gp->stack); /* no-op for stackless Gs */
        gort__preemptstk_free(gp);
    }
    for (int32_t i = 0; i < gort__allp_len; i++) {
        gort__stackcache_flush(&gort__allp[i]->stackcache);
        gort__timers_fini(gort__allp[i]);
    }
    /* The Gs' deadline timers: off the heaps now (timers_fini), pending
     * or not. */
    for (uint32_t i = 0; i < gort__allglen; i++)
        gort__gdl_free(gort__allgs[i]);
    gort__allgs_fini();
    for (int32_t i = 0; i < gort__allp_len; i++)
        gort__free(gort__allp[i]);
    gort__free(gort__allp);
    gort__retired_free();
    struct m *mp = gort__allm;
    while (mp) {
        struct m *next = mp->alllink;
        gort__freem(mp);
        mp = next;
    }
    gort__globrunq_fini();
    gort__gsegq_fini(&gort__sched.gfree);
    gort__semafini();
    gort__dns_fini();
    gort__netpoll_fini();
    gort__stackfini();
    gort__foreign_fini();
    reset_globals();
    gort__sim_fini();
    store_relaxed(&gort__sim.on, 0u); /* gort_nanotime is real again */
}

/* Wait for every M thread but the caller's to end.  The Ms still run
 * while we wait, and one that is starting another (wakep, startm) puts
 * it on allm and then creates its thread: a pass over allm can miss an
 * M pushed after it read the head, or find one whose thread is not made
 * yet.  So the passes repeat until one joins nothing: then every M on
 * the list has ended, and no M is left to start another.  (sysmon, which
 * starts Ms too, was joined before.) */
static void join_ms(struct m *self)
{
    bool again = true;
    while (again) {
        again = false;
        /* Acquire: pairs with mcommoninit's release of each new head. */
        for (struct m *mp = load_acq(&gort__allm); mp; mp = mp->alllink) {
            if (mp == self || mp->joined || !load_acq(&mp->threadset) ||
                !mp->thread)
                continue;
            pthread_join(mp->thread, NULL);
            mp->joined = true;
            again = true;
        }
    }
}

static int boot(struct m *mp, void (*fn)(void *), void *arg)
{
    gort__read_env();
    gort__signals_sim();
    gort__fatal_set_dump(gort__traceback_fatal);
    gort__trace_register();
    gort__getm_set_slow(gort__foreign_getm);
    int err = gort__stackinit();
    if (err)
        return err;
    gort__lock(&gort__sched.lock);
    gort__sched.maxmcount = max_threads_setting;
    gort__mcommoninit_id_locked(mp, -1);
    int32_t procs = gort__gomaxprocs; /* from the environment */
    gort__gomaxprocs = 0;
    gort__procresize(mp, procs);
    /* The simulation's preemption points (docs/sim.md): every G of its
     * one P runs asked to check in (proc.c, sim_preempt_point). */
    if (gort__sim_on())
        store_relaxed(&gort__allp[0]->maxprocs_ask, 1u);
    gort__unlock(&gort__sched.lock);
    return gort__newproc_main(mp->p, fn, arg,
                              (uintptr_t)__builtin_return_address(0));
}

int gort_main(void (*fn)(void *), void *arg)
{
    GORT_SAN_SCOPE();
    if (!fn)
        return -EINVAL;
    if (!cas_acqrel(&gort_running, 0, 1))
        return -EBUSY;
    reset_globals();
    gort__runtime_init_time = gort_nanotime();
    gort__track_clock_init();
    gort__spinpay_reset();
    gort__spintrial_reset();
    struct m *mp = gort__allocm();
    if (!mp) {
        store_rel(&gort_running, 0);
        return -ENOMEM;
    }
    mp->is_m0 = true;
    mp->thread = 0;
    gort__m0 = mp;
    int err = gort__mstart_common(mp);
    if (!err && GORT_UNLIKELY(gort__san))
        gort__san_main_start();
    if (!err)
        err = gort__signals_install();
    if (!err)
        err = boot(mp, fn, arg); /* reads GORTDEBUG */
    if (!err)
        gort__trace_boot(mp, gort__debug.trace);
    if (!err) {
        gort__rawsys_init();
        err = gort__preempt_init();
    }
    /* No sysmon in the simulation: its rounds follow the real clock and
     * would preempt and retake at moments outside the seed (docs/sim.md). */
    if (!err && !gort__sim_on())
        err = gort__sysmon_start();
    if (err) {
        gort__trace_shutdown();
        gort__preempt_fini();
        gort__signals_restore();
        gort__preempt_thread_exit(mp);
        gort__unminit(mp);
        gort__setm(NULL);
        teardown();
        store_rel(&gort_running, 0);
        return err;
    }
    store_rel(&gort__main_started, 1);
    gort__schedule();
    gort__san_acquire(&gort__main_status);
    /* Every other M has been told to exit. */
    gort__sysmon_stop();
    join_ms(mp);
    /* Before preemption's and os_linux.c's handlers go: the actions it
     * puts back may be theirs. */
    gort__signal_fini();
    gort__trace_shutdown(); /* GORTDEBUG=trace, or a trace never stopped */
    gort__preempt_fini();
    gort__rawsys_thread_exit(mp);
    gort__preempt_thread_exit(mp);
    gort__unminit(mp);
    gort__signals_restore();
    gort__setm(NULL);
    teardown();
    store_rel(&gort__main_started, 0);
    store_rel(&gort_running, 0);
    return gort__main_status;
}

/* gort_run's main goroutine: fn's status kept for gort_run. */
struct run_args {
    int (*fn)(void *);
    void *arg;
    int status;
};

static void run_main(void *p)
{
    struct run_args *a = p;
    a->status = a->fn(a->arg);
}

int gort_run(int (*fn)(void *), void *arg)
{
    if (!fn)
        return -EINVAL;
    struct run_args a = {fn, arg, 0};
    int r = gort_main(run_main, &a);
    return r < 0 ? r : a.status;
}
