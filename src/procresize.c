/* SPDX-License-Identifier: MIT */
/*
 * procresize.c - Ps: which M holds each (acquirep, releasep) and the list
 * of idle ones, stop-the-world, and GOMAXPROCS.  Mirrors acquirep,
 * releasep, pidleput, pidleget, gcstopm, stopTheWorldWithSema,
 * startTheWorldWithSema and procresize (proc.go).
 *
 * Stopping the world: set sched.gcwaiting, mark the caller's P stopped,
 * take every idle P, and ask every running G to yield at its next runtime
 * call (preemptall); each M that sees gcwaiting in findrunnable stops its
 * P (gcstopm) and counts it down in sched.stopwait; the last one wakes the
 * stopper.  Starting it again applies a pending GOMAXPROCS change
 * (procresize) and hands every P with work to an M.
 *
 * Invariants:
 *   - sched.npidle equals the length of sched.pidle; idlepmask mirrors
 *     it, and a P on the list has an empty run queue.
 *   - While the world is stopped, only the stopper's M holds a P, and no M
 *     runs findrunnable's steal loop (it needs a P), so allp, the steal
 *     order and the P structures may change.
 *   - A P removed by a GOMAXPROCS decrease is P_DEAD with empty queues;
 *     its Gs went to the head of the global queue, in order.
 */
#include "atomic.h"
#include "env.h"
#include "fatal.h"
#include "lock_futex.h"
#include "mthread.h"
#include "preempt.h"
#include "proc.h"
#include "procresize.h"
#include "rawsys.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "schedstats.h"
#include "sema.h"
#include "stack.h"
#include "sysmon.h"
#include "timers.h"
#include "tracehooks.h"

#include <stdlib.h>
#include <string.h>

int32_t gort__newprocs; /* GOMAXPROCS wanted by the next start; STW only */
/* When the current stop-the-world began (nanotime), for the pause
 * metrics.  Written by the stopper; relaxed: one stopper at a time. */
static int64_t stw_began;
/* When the last stop-the-world let the world run again, for the trace's
 * stop-the-world slice: the stopper's own (stw_start writes it,
 * start_the_world on the same M reads it). */
static int64_t stw_restarted;

/* ---------------------------------------------------------------------------
 * P ownership.
 * ------------------------------------------------------------------------- */

void gort__setidlep(int32_t id, bool idle)
{
    uint32_t bit = 1u << (id % 32);
    if (idle)
        or_relaxed(&gort__idlepmask[id / 32], bit);
    else
        and_relaxed(&gort__idlepmask[id / 32], ~bit);
}

/* Associate pp with mp.  Mirrors gort__acquirep/wirep (proc.go). */
void gort__acquirep(struct m *mp, struct p *pp)
{
    if (mp->p || pp->m)
        gort__throw("gort__acquirep: M%lld already has P%d or P%d has an M",
                    (long long)mp->id, mp->p ? mp->p->id : -1, pp->id);
    /* Relaxed: the caller took the P (a list under sched.lock, or a CAS
     * out of P_SYSCALL); this only checks it. */
    uint32_t st = load_relaxed(&pp->status);
    if (st != P_IDLE)
        gort__throw("gort__acquirep: P%d has status %u, want idle", pp->id,
                    st);
    store_relaxed(&mp->p, pp);
    if (gort__sim_on()) {
        /* The simulation's random state comes with its one P. */
        mp->fastrand[0] = gort__sim.rand[0];
        mp->fastrand[1] = gort__sim.rand[1];
    }
    store_relaxed(&pp->sysmon_schedwhen, 0); /* restart sysmon's clock */
    /* Release: sysmon load-acquires pp->m and then reads the M. */
    store_rel(&pp->m, mp);
    store_relaxed(&pp->status, P_RUNNING);
    gort__trace_procstart(mp, pp);
    /* sysmon sleeps deeply while every P is idle; work has resumed.
     * (The npidle change that made this P busy was seq-cst: see
     * deep_sleep in sysmon.c.) */
    gort__sysmon_wake();
}

/* Disassociate mp's P from it and return the P, now idle.  Mirrors
 * releasep (proc.go). */
struct p *gort__releasep(struct m *mp)
{
    struct p *pp = mp->p;
    if (!pp || pp->m != mp)
        gort__throw("releasep: M%lld has P%d whose M is %lld",
                    (long long)mp->id, pp ? pp->id : -1,
                    pp && pp->m ? (long long)pp->m->id : -1LL);
    gort__trace_procstop(mp, pp);
    if (gort__sim_on()) {
        /* ...and leaves with it (the next holder's acquirep). */
        gort__sim.rand[0] = mp->fastrand[0];
        gort__sim.rand[1] = mp->fastrand[1];
    }
    store_relaxed(&mp->p, NULL);
    store_relaxed(&pp->m, NULL);
    store_relaxed(&pp->status, P_IDLE);
    return pp;
}

/* Idle P list; sched.lock held.  Mirrors pidleput/pidleget. */
void gort__pidleput_locked(struct p *pp)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (!gort__runqempty(pp))
        gort__throw("pidleput: P%d has a non-empty run queue", pp->id);
    pp->link = gort__sched.pidle;
    gort__sched.pidle = pp;
    gort__setidlep(pp->id, true);
    /* Seq-cst: readers of npidle outside the lock (wakep, the spinning
     * limit) see the P on the list once they see the count, and sysmon's
     * deep_sleep handshake needs a total order. */
    xadd_seqcst(&gort__sched.npidle, 1);
}

struct p *gort__pidleget_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct p *pp = gort__sched.pidle;
    if (pp) {
        gort__sched.pidle = pp->link;
        pp->link = NULL;
        gort__setidlep(pp->id, false);
        xadd_seqcst(&gort__sched.npidle, -1); /* see pidleput */
    }
    return pp;
}

/* As pidleget, but if no P is idle, record that a spinning M was wanted
 * so that the next M releasing its P spins instead.  Mirrors
 * pidlegetSpinning (proc.go). */
struct p *gort__pidlegetspinning_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct p *pp = gort__pidleget_locked();
    if (!pp)
        store_relaxed(&gort__sched.needspinning, 1);
    return pp;
}

/* ---------------------------------------------------------------------------
 * Stop-the-world.
 * ------------------------------------------------------------------------- */

/* Ask every running G to yield at its next runtime call.  A P whose
 * thread has slept for a while in a system call nobody wrapped is handed
 * off instead (rawsys.c): it would not yield before its call returns.
 * Not under sched.lock (the hand-off takes it). */
static void preemptall(void)
{
    int64_t now = gort_nanotime();
    for (int32_t i = 0; i < gort__gomaxprocs; i++) {
        struct p *pp = gort__allp[i];
        if (load_acq(&pp->status) != P_RUNNING)
            continue;
        enum rawsys_result r =
            gort__rawsys_inspect(pp, now, GORT_RAWSYS_SLEPT_NS);
        if (r != RAWSYS_BLOCKED && r != RAWSYS_HANDEDOFF)
            gort__preempt_request(pp);
    }
}

/* Take every P sitting in a syscall (its M gets another P, or queues its
 * G, when it comes back).  sched.lock held.  Returns how many. */
static int32_t stop_syscall_ps_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    int32_t n = 0;
    for (int32_t i = 0; i < gort__gomaxprocs; i++) {
        struct p *pp = gort__allp[i];
        /* Seq-cst: pairs with entersyscall's store of the word and its
         * load of gcwaiting (one of us sees the other). */
        uint32_t w = load_seqcst(&pp->status);
        if (gort__pstatus(w) == P_SYSCALL &&
            cas_acqrel(&pp->status, w, P_GCSTOP)) {
            gort__trace_procsteal(pp, TRACE_STEAL_STW);
            n++;
        }
    }
    gort__sched.stopwait -= n;
    return n;
}

/* Stop the current M's P for a pending stop-the-world.  Mirrors gcstopm. */
bool gort__gcstopm(struct m *mp)
{
    if (mp->spinning) {
        gort__trace_spinning(mp, false);
        mp->spinning = false;
        if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
            gort__throw("gcstopm: negative nmspinning");
    }
    struct p *pp = gort__releasep(mp);
    gort__lock(&gort__sched.lock);
    store_relaxed(&pp->status, P_GCSTOP);
    if (--gort__sched.stopwait == 0)
        gort__notewakeup(&gort__sched.stopnote);
    gort__unlock(&gort__sched.lock);
    return gort__stopm(mp);
}

/* Stop every P but the caller's.  Runs on any stack of an M holding a P;
 * on return the caller's P is P_GCSTOP and all others are stopped.
 * Mirrors stopTheWorldWithSema (proc.go). */
void gort__stw_stop(struct m *mp)
{
    int64_t began = gort_nanotime();
    store_relaxed(&stw_began, began);
    gort__lock(&gort__sched.lock);
    gort__sched.stopwait = gort__gomaxprocs;
    store_seqcst(&gort__sched.gcwaiting, 1); /* see stop_syscall_ps */
    /* Our own P first, so that preemptall skips it: the stopper must not
     * ask itself to yield (as in Go, where it is _Pgcstop by then). */
    store_relaxed(&mp->p->status, P_GCSTOP);
    gort__sched.stopwait--;
    stop_syscall_ps_locked();
    struct p *pp;
    while ((pp = gort__pidleget_locked())) {
        store_relaxed(&pp->status, P_GCSTOP);
        gort__sched.stopwait--;
    }
    bool wait = gort__sched.stopwait > 0;
    gort__unlock(&gort__sched.lock);
    if (wait) {
        preemptall();
        /* Re-ask every 100 us: a G may have been scheduled after the
         * first request (Go's stopTheWorldWithSema loop). */
        while (!gort__m_notetsleep(mp, &gort__sched.stopnote, 100 * 1000)) {
            preemptall();
            gort__lock(&gort__sched.lock);
            if (stop_syscall_ps_locked() > 0 && gort__sched.stopwait == 0) {
                gort__unlock(&gort__sched.lock);
                break;
            }
            gort__unlock(&gort__sched.lock);
        }
        gort__noteclear(&gort__sched.stopnote);
    }
    /* Acquire loads: the status is an atomic word that sysmon, the
     * syscall exit and handoffp change by CAS and atomic stores; the last
     * change to each reached us through sched.lock or the stop note, but
     * a plain read of it is still a data race in the memory model's
     * terms (ThreadSanitizer reported one against retake's CAS). */
    for (int32_t i = 0; i < gort__gomaxprocs; i++) {
        uint32_t st = load_acq(&gort__allp[i]->status);
        if (st != P_GCSTOP)
            gort__throw("stopTheWorld: P%d not stopped (status %u)", i, st);
    }
    gort__stw_record_stopping(began, gort_nanotime());
}

/* The P that procresize leaves the stopper holding with nprocs Ps: its
 * own, unless that one goes, then P0. */
static struct p *keptp(struct m *mp, int32_t nprocs)
{
    return mp->p && mp->p->id < nprocs ? mp->p : gort__allp[0];
}

/* Move the timers of the Ps that procresize is about to destroy (ids from
 * nprocs up) to the P it leaves the stopper: they go on running from
 * there.  The world is stopped and sched.lock not held: a timer's
 * function runs under its heap's lock and may take sched.lock, so heap
 * locks come before sched.lock in the lock order (sched.h).  Mirrors
 * the timer move of (*p).destroy. */
static void movetimers(struct m *mp, int32_t nprocs)
{
    struct p *to = keptp(mp, nprocs);
    for (int32_t i = nprocs; i < gort__gomaxprocs; i++)
        gort__timers_move(gort__allp[i], to);
}

/* Restart after gort__stw_stop, applying a pending GOMAXPROCS change.  Mirrors
 * startTheWorldWithSema (proc.go). */
void gort__stw_start(struct m *mp)
{
    int32_t procs = gort__newprocs ? gort__newprocs : gort__gomaxprocs;
    gort__newprocs = 0;
    movetimers(mp, procs);
    gort__lock(&gort__sched.lock);
    struct p *runnable = gort__procresize(mp, procs);
    /* Seq-cst, then sysmon_wake's seq-cst load: sysmon's deep_sleep
     * handshake (it sleeps while gcwaiting is set). */
    store_seqcst(&gort__sched.gcwaiting, 0);
    gort__sysmon_wake();
    gort__unlock(&gort__sched.lock);
    /* The world runs again (Ms are being woken for the Ps with work). */
    stw_restarted = gort_nanotime();
    gort__stw_record_total(load_relaxed(&stw_began), stw_restarted);
    while (runnable) {
        struct p *pp = runnable;
        runnable = pp->link;
        pp->link = NULL;
        struct m *nmp = pp->m;
        if (nmp) {
            store_relaxed(&pp->m, NULL);
            if (nmp->nextp)
                gort__throw("startTheWorld: inconsistent M->nextp");
            nmp->nextp = pp;
            gort__notewakeup(&nmp->park);
        } else {
            gort__newm(pp, false);
        }
    }
    gort__wakep();
}

/* One stop-the-world at a time: a second stopper parks here until the
 * first has started the world again (Go's worldsema).  1 = free. */
uint32_t gort__worldsema = 1;

void gort__stop_the_world(const char *why)
{
    gort__semacquire(&gort__worldsema, WAIT_STOP_THE_WORLD);
    gort__trace_stw_begin(why);
    struct m *mp = gort__getm(); /* after the park: maybe another M */
    mp->locks++; /* no preemption while the world is stopped */
    gort__stw_stop(mp);
}

void gort__start_the_world(void)
{
    struct m *mp = gort__getm();
    gort__stw_start(mp);
    gort__trace_stw_end(mp, stw_restarted);
    mp->locks--;
    gort__semrelease(&gort__worldsema, false);
}

/* ---------------------------------------------------------------------------
 * GOMAXPROCS.  Mirrors gort__procresize (proc.go).
 * ------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------
 * GOMAXPROCS.
 * ------------------------------------------------------------------------- */

static struct p *newp(int32_t id)
{
    struct p *pp = gort__calloc(1, sizeof *pp);
    if (!pp)
        gort__fatal("out of memory allocating P%d", id);
    pp->id = id;
    gort__lock_init(&pp->timers.lock, LOCKRANK_TIMERS);
    /* Until it has timed a run: as if Gs ran long, so readied ones wake
     * idle Ps as in Go (proc.c, injectglist). */
    pp->runavg = GORT_WAKE_WORTH_NS;
    store_relaxed(&pp->status, P_GCSTOP);
    return pp;
}

/* Return a dead P's free Gs to the global list (gfpurge). */
static void gfpurge(struct p *pp)
{
    gort__lock(&gort__sched.gfree_lock);
    for (int32_t i = 0; i < pp->ngfree; i++)
        gort__gsegq_push_head(&gort__sched.gfree, pp->gfree[i]);
    store_relaxed(&gort__sched.ngfree, gort__sched.ngfree + pp->ngfree);
    pp->ngfree = 0;
    gort__unlock(&gort__sched.gfree_lock);
}

/* pp's timers went to the caller's P before (movetimers). */
static void destroyp_locked(struct p *pp)
{
    gort__lock_assert_held(&gort__sched.lock);
    gort__runqdrain_to_global_locked(pp);
    gfpurge(pp);
    gort__stackcache_flush(&pp->stackcache);
    gort__stackunreserve(pp->stackres);
    pp->stackres = 0;
    store_relaxed(&pp->status, P_DEAD);
}

/* Grow gort__allp to hold n Ps, keeping the Ps it has (dead ones are
 * revived when GOMAXPROCS grows again, as in Go). */
static void growallp(int32_t n)
{
    if (n <= gort__allp_len)
        return;
    /* allplock: sysmon walks allp without sched.lock. */
    gort__lock(&gort__allplock);
    struct p **na = gort__calloc((size_t)n, sizeof *na);
    if (!na)
        gort__fatal("out of memory growing allp to %d", n);
    if (gort__allp)
        memcpy(na, gort__allp, (size_t)gort__allp_len * sizeof *na);
    for (int32_t i = gort__allp_len; i < n; i++)
        na[i] = newp(i);
    /* The old array stays readable: Ms without a P (checkrunqsnop, the
     * poller, timers_earliest) are not stopped by stop-the-world and may
     * be reading it.  Freed at shutdown. */
    if (gort__allp)
        gort__retire(gort__allp);
    /* Release: readers load it with acquire (gort__allp_load), then read
     * the Ps it points to; the count they use was published after it. */
    store_rel(&gort__allp, na);
    gort__allp_len = n;
    gort__unlock(&gort__allplock);
}

/* Change the number of Ps to nprocs.  The world is stopped (or not yet
 * started) and sched.lock is held.  Returns the Ps with local work, each
 * with an idle M reserved in p->m (or NULL), linked through p->link; the
 * caller must start them.  The current M keeps (or gets) a running P. */
struct p *gort__procresize(struct m *mp, int32_t nprocs)
{
    int32_t old = gort__gomaxprocs;
    if (nprocs <= 0 || nprocs > GORT_MAX_PROCS)
        gort__throw("gort__procresize: invalid arg %d", nprocs);
    growallp(nprocs);
    for (int32_t i = old; i < nprocs; i++)
        store_relaxed(&gort__allp[i]->status, P_GCSTOP);
    if (keptp(mp, nprocs) == mp->p) {
        store_relaxed(&mp->p->status, P_RUNNING);
    } else {
        if (mp->p) {
            gort__trace_procstop(mp, mp->p);
            store_relaxed(&mp->p->m, NULL);
            store_relaxed(&mp->p->status, P_IDLE);
            mp->p = NULL;
        }
        struct p *pp = gort__allp[0];
        store_relaxed(&pp->m, NULL);
        store_relaxed(&pp->status, P_IDLE);
        gort__acquirep(mp, pp);
    }
    for (int32_t i = nprocs; i < old; i++)
        destroyp_locked(gort__allp[i]);
    for (int32_t i = nprocs; i < GORT_MAX_PROCS && i < gort__allp_len; i++)
        gort__setidlep(i, false);
    store_rel(&gort__gomaxprocs, nprocs);
    gort__steal_order_reset((uint32_t)nprocs); /* no M is stealing: STW */
    struct p *runnable = NULL;
    for (int32_t i = nprocs - 1; i >= 0; i--) {
        struct p *pp = gort__allp[i];
        if (mp->p == pp)
            continue;
        store_relaxed(&pp->status, P_IDLE);
        if (gort__runqempty(pp)) {
            gort__pidleput_locked(pp);
        } else {
            /* Relaxed: sysmon reads pp->m racily (it is only a hint
             * here: the M taking the P over sets it properly). */
            store_relaxed(&pp->m, gort__mget_locked());
            pp->link = runnable;
            runnable = pp;
        }
    }
    return runnable;
}

int gort_gomaxprocs(int n)
{
    GORT_SAN_SCOPE();
    int32_t cur = load_relaxed(&gort__gomaxprocs);
    if (n <= 0)
        return cur;
    /* Only a goroutine stops the world: not a thread gort did not
     * create, which holds no P. */
    struct g *gp = gort__getg();
    if (!gp || gp->foreign)
        return cur;
    /* The simulation's one P (docs/sim.md). */
    if (gort__sim_on())
        return cur;
    if (n > GORT_MAX_PROCS)
        n = GORT_MAX_PROCS;
    /* From now on GOMAXPROCS is the program's, even when n is the value
     * it has (Go's customGOMAXPROCS).  Release: pairs with the acquire
     * loads of gort__maxprocs_poll; gort__maxprocs_apply reads it under
     * the stop-the-world that worldsema orders after this one. */
    store_rel(&gort__maxprocs_custom, 1);
    if (n == cur)
        return cur;
    gort__stop_the_world("GOMAXPROCS");
    gort__newprocs = n;
    gort__start_the_world();
    gort__preempt_check();
    return cur;
}

/*
 * Apply the GOMAXPROCS that sysmon found the CPUs available call for
 * (gort__maxprocs_poll), on the goroutine that saw it at a preemption
 * check.  The exchange lets one goroutine take it; the program's choice
 * is looked at again with the world stopped, so that a gort_gomaxprocs
 * call racing with sysmon wins.  Returns whether it stopped the world
 * (which parked the goroutine: a yield).  Mirrors updateMaxProcsGoroutine
 * (proc.go), which does this on a goroutine of its own.
 */
bool gort__maxprocs_apply(void)
{
    /* Acq-rel: takes the value with what sysmon read to make it. */
    int32_t want = xchg_acqrel(&gort__maxprocs_want, 0);
    if (want <= 0)
        return false; /* another goroutine took it */
    gort__stop_the_world("GOMAXPROCS");
    /* Relaxed: the world is stopped; sysmon sets them again only if
     * another change waits.  Every P allocated, the ones beyond
     * GOMAXPROCS too, which a later increase brings back. */
    for (int32_t i = 0; i < gort__allp_len; i++)
        if (gort__allp[i])
            store_relaxed(&gort__allp[i]->maxprocs_ask, 0);
    /* Acquire: pairs with gort_gomaxprocs' release store. */
    if (!load_acq(&gort__maxprocs_custom) && want != gort__gomaxprocs) {
        gort__newprocs = want;
        /* Relaxed: a statistic, read by the metrics. */
        xadd_relaxed(&gort__maxprocs_updates, 1);
    }
    gort__start_the_world();
    return true;
}

