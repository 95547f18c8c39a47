/* SPDX-License-Identifier: MIT */
/*
 * mthread.c - Ms, the threads that run Gs: making them (allocm, newm,
 * mstart), parking an M that has no work and starting one for a P
 * (stopm, startm, handoffp, wakep), wiring a G to its M (LockOSThread),
 * an M's exit, the thread limit, and deadlock detection, which counts the
 * Ms that could still run something.  Mirrors the M half of proc.go.
 *
 * An M without work parks on its note on the idle list (sched.midle);
 * startm hands it a P through m->nextp and wakes it, or makes a new M
 * when none is idle.  When wakep starts a spinning M, and how that pairs
 * with an M that stops spinning, is proc.c's ("The spinning handshake").
 *
 * Invariants:
 *   - sched.nmidle equals the length of sched.midle; an M on it has
 *     m->inmidle set, holds no P and does not spin.
 *   - The Ms made (sched.mnext - sched.nmfreed) never pass
 *     sched.maxmcount: the thread limit is fatal (checkmcount_locked).
 *   - Whenever an M goes idle (or sleeps wired, or exits), checkdead
 *     counts the Ms that could still run a G, under sched.lock.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "mthread.h"
#include "netpoll.h"
#include "os_linux.h"
#include "preempt.h"
#include "proc.h"
#include "procresize.h"
#include "rawsys.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "syscall.h"
#include "timers.h"
#include "tracehooks.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * M lifecycle.
 * ------------------------------------------------------------------------- */

static int32_t mcount_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    return (int32_t)(gort__sched.mnext - gort__sched.nmfreed);
}

/* Threads the runtime has made (racy outside sched.lock; for reports). */
int32_t gort__mcount(void)
{
    return (int32_t)(load_relaxed(&gort__sched.mnext) -
                     load_relaxed(&gort__sched.nmfreed));
}

/* Fatal if one more M would pass the thread limit.  sched.lock held.
 * Mirrors checkmcount (proc.go). */
void gort__checkmcount_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (mcount_locked() > gort__sched.maxmcount) {
        gort__printf(2, "gort: program exceeds %d-thread limit\n",
                     gort__sched.maxmcount);
        gort__fatal("thread exhaustion");
    }
}

struct m *gort__allocm(void)
{
    struct m *mp = gort__calloc(1, sizeof *mp);
    struct g *g0 = gort__calloc(1, sizeof *g0);
    if (!mp || !g0) {
        gort__free(mp);
        gort__free(g0);
        return NULL;
    }
    mp->g0 = g0;
    mp->cputimer = -1;
    g0->atomicstatus = G_RUNNING;
    return mp;
}

void gort__freem(struct m *mp)
{
    gort__free(mp->g0);
    gort__free(mp);
}

/* Count one more M and return its id.  sched.lock held.  Mirrors
 * mReserveID: an M about to be created counts as running for checkdead
 * from the moment its creator lets go of the lock. */
static int64_t mreserveid_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    int64_t id = gort__sched.mnext++;
    gort__checkmcount_locked();
    return id;
}

/* Give mp an id (reserved, or a new one when id < 0), seed its random
 * state and publish it on allm.  sched.lock held.  Mirrors mcommoninit. */
void gort__mcommoninit_id_locked(struct m *mp, int64_t id)
{
    gort__lock_assert_held(&gort__sched.lock);
    mp->id = id >= 0 ? id : mreserveid_locked();
    uint64_t seed = (uint64_t)gort_nanotime() ^ ((uint64_t)mp->id << 32) ^
                    (uint64_t)(uintptr_t)mp;
    /* The simulation draws every choice from its seed (docs/sim.md): the
     * M's id, not its address, tells the Ms apart. */
    if (gort__sim_on())
        seed = gort__sim_mix(gort__sim.seed ^ ((uint64_t)mp->id << 32));
    mp->fastrand[0] = (uint32_t)(seed | 1);
    mp->fastrand[1] = (uint32_t)(seed >> 32) | 0x9e3779b9u;
    mp->alllink = gort__allm;
    /* Release: schedtrace walks allm without the lock. */
    store_rel(&gort__allm, mp);
}

static struct g *take_lockedwant_locked(struct m *mp);

/* An M for a runtime thread that runs without a P (sysmon): counted in
 * nmsys so that deadlock detection ignores it. */
struct m *gort__allocm_sys(void)
{
    struct m *mp = gort__allocm();
    if (!mp)
        return NULL;
    gort__lock(&gort__sched.lock);
    gort__mcommoninit_id_locked(mp, -1);
    gort__sched.nmsys++;
    gort__unlock(&gort__sched.lock);
    return mp;
}

/* Set up the current thread as mp: TLS, signal stack, sanitizer fiber
 * (M0 is the program's thread, inside gort_main; the others are gort's
 * own). */
int gort__mstart_common(struct m *mp)
{
    gort__setm(mp);
    gort__rawsys_thread_start(mp, &gort__tls_mfast);
    mp->errnop = gort__errno_ptr();
    int err = gort__minit(mp);
    if (err)
        return err;
    gort__preempt_thread_start(mp);
    if (GORT_UNLIKELY(gort__san))
        gort__san_thread_start(mp->g0, !mp->is_m0);
    return 0;
}

/* Thread entry of every M but M0.  Mirrors mstart1 (proc.go). */
static void *mstart(void *arg)
{
    struct m *mp = arg;
    if (gort__mstart_common(mp) != 0)
        gort__throw("mstart: could not set up thread for M%lld",
                    (long long)mp->id);
    /* A spinning start (wakep) set mp->spinning before the thread
     * existed; nmspinning already counts it (Go's mspinning). */
    struct p *pp = mp->nextp;
    mp->nextp = NULL;
    gort__acquirep(mp, pp);
    if (mp->spinning)
        gort__trace_spinning(mp, true);
    gort__schedule();
    gort__rawsys_thread_exit(mp);
    gort__preempt_thread_exit(mp);
    gort__unminit(mp);
    gort__setm(NULL);
    if (GORT_UNLIKELY(gort__san))
        gort__san_thread_end(1);
    return NULL;
}

/* Create a new M to run pp, with an id reserved by mreserveid_locked or
 * -1.  Mirrors newm (proc.go). */
static void newm_id(struct p *pp, bool spinning, int64_t id)
{
    struct m *mp = gort__allocm();
    if (!mp)
        gort__fatal("out of memory allocating an M");
    gort__lock(&gort__sched.lock);
    gort__mcommoninit_id_locked(mp, id);
    gort__unlock(&gort__sched.lock);
    mp->nextp = pp;
    mp->spinning = spinning;
    int err = gort__newosproc(mp, mstart);
    if (err)
        gort__fatal("newosproc: cannot create a thread (%s; threads=%d)",
                    strerror(-err), (int)gort__mcount());
}

void gort__newm(struct p *pp, bool spinning)
{
    newm_id(pp, spinning, -1);
}

/* Put mp on the idle list and check for deadlock.  sched.lock held. */
static void mput_locked(struct m *mp)
{
    gort__lock_assert_held(&gort__sched.lock);
    mp->inmidle = true;
    mp->schedlink = gort__sched.midle;
    gort__sched.midle = mp;
    store_relaxed(&gort__sched.nmidle, gort__sched.nmidle + 1);
    gort__checkdead_locked();
}

struct m *gort__mget_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct m *mp = gort__sched.midle;
    if (mp) {
        gort__sched.midle = mp->schedlink;
        store_relaxed(&gort__sched.nmidle, gort__sched.nmidle - 1);
        mp->schedlink = NULL;
        mp->inmidle = false;
    }
    return mp;
}

/* Park the current M until startm hands it a P (or shutdown).  Returns
 * false when the M must exit.  Mirrors stopm (proc.go). */
bool gort__stopm(struct m *mp)
{
    if (mp->locks)
        gort__throw("stopm: holding locks");
    if (mp->p)
        gort__throw("stopm: holding P%d", mp->p->id);
    if (mp->spinning)
        gort__throw("stopm: spinning");
    gort__trace_mpark(mp);
    gort__lock(&gort__sched.lock);
    if (load_relaxed(&gort__sched.exiting)) {
        /* Shutting down: gort__main_exit_m may already have emptied the idle
         * list (a gcstopm counts its P stopped before it gets here), so
         * nobody would wake us.  Exit instead of parking. */
        gort__unlock(&gort__sched.lock);
        return false;
    }
    struct g *want = take_lockedwant_locked(mp);
    if (GORT_UNLIKELY(want)) {
        /* Our wired G was handed to us while we had no P: take an idle
         * one, or let the G go round the global queue again (whoever
         * takes it hands us a P with it: startlockedm). */
        struct p *pp = gort__pidleget_locked();
        if (pp) {
            store_relaxed(&mp->lockedwant, want);
            gort__unlock(&gort__sched.lock);
            gort__acquirep(mp, pp);
            return true;
        }
        gort__globrunqput_locked(want);
    }
    mput_locked(mp);
    gort__unlock(&gort__sched.lock);
    gort__m_notesleep(mp, &mp->park);
    gort__noteclear(&mp->park);
    if (mp->exiting)
        return false;
    if (GORT_UNLIKELY(mp->watchp)) {
        /* Woken to watch a syscall (syscall.c): with its P, or back to
         * sleep. */
        if (gort__syscall_watch(mp))
            return true;
        return gort__stopm(mp);
    }
    gort__acquirep(mp, mp->nextp);
    mp->nextp = NULL;
    if (mp->spinning)
        gort__trace_spinning(mp, true); /* started by wakep */
    return true;
}

/* Run some M on pp (an idle P taken from the list when pp is NULL),
 * waking an idle M or creating one.  With spinning, the caller has
 * already counted the M in nmspinning.  Mirrors startm (proc.go). */
static void startm(struct p *pp, bool spinning, bool lockheld)
{
    if (!lockheld)
        gort__lock(&gort__sched.lock);
    if (!pp) {
        if (spinning)
            gort__throw("startm: P required for spinning M");
        pp = gort__pidleget_locked();
        if (!pp) {
            if (!lockheld)
                gort__unlock(&gort__sched.lock);
            return;
        }
    }
    struct m *nmp = gort__mget_locked();
    if (!nmp) {
        int64_t id = mreserveid_locked();
        gort__unlock(&gort__sched.lock);
        newm_id(pp, spinning, id);
        if (lockheld)
            gort__lock(&gort__sched.lock);
        return;
    }
    if (!lockheld)
        gort__unlock(&gort__sched.lock);
    if (nmp->spinning)
        gort__throw("startm: M is spinning");
    if (nmp->nextp)
        gort__throw("startm: M has P");
    if (spinning && !gort__runqempty(pp))
        gort__throw("startm: P has runnable Gs");
    nmp->spinning = spinning;
    nmp->nextp = pp;
    gort__notewakeup(&nmp->park);
}

/* gort__stopm for exitsyscall0 (syscall.c): the M parks until it is
 * handed a P; if it must exit instead, schedule() sees that. */
void gort__stopm_schedule(struct m *mp)
{
    (void)gort__stopm(mp);
}

void gort__startm_idle(void)
{
    startm(NULL, false, false);
}

/* Hand off pp from an M that is blocking or exiting: start an M for it if
 * there is work, else put it on the idle list.  Mirrors handoffp. */
void gort__handoffp(struct p *pp)
{
    if (!gort__runqempty(pp) || load_relaxed(&gort__sched.runqsize) != 0) {
        startm(pp, false, false);
        return;
    }
    /* No local work: if nobody spins or idles, start a spinning M so that
     * work arriving later is found. */
    if (load_relaxed(&gort__sched.nmspinning) +
                load_relaxed(&gort__sched.npidle) == 0 &&
        cas_acqrel(&gort__sched.nmspinning, 0, 1)) {
        store_relaxed(&gort__sched.needspinning, 0);
        startm(pp, true, false);
        return;
    }
    gort__lock(&gort__sched.lock);
    if (load_relaxed(&gort__sched.gcwaiting)) {
        store_relaxed(&pp->status, P_GCSTOP);
        if (--gort__sched.stopwait == 0)
            gort__notewakeup(&gort__sched.stopnote);
        gort__unlock(&gort__sched.lock);
        return;
    }
    if (gort__sched.runqsize != 0) {
        gort__unlock(&gort__sched.lock);
        startm(pp, false, false);
        return;
    }
    gort__pidleput_locked(pp);
    gort__unlock(&gort__sched.lock);
}

/* Try to put one more P to work, with a spinning M (the spinning
 * handshake: proc.c).  Mirrors wakep. */
void gort__wakep(void)
{
    /* No idle P: nothing to wake (Go 1.19's early exit; a busy M will
     * find the work itself).  Go 1.21+ goes on to take sched.lock and set
     * needspinning, which closes one window: an M that found nothing and
     * is releasing its P, read here as still busy, parks while the work
     * waits on a busy P for its next schedule.  That lock on every
     * wake-up of a fully busy program costs more than the window does
     * (docs/design.md, "wakep returns at once when no P is idle"). */
    if (load_relaxed(&gort__sched.npidle) == 0)
        return;
    /* Only one M spins up from wakep at a time: the CAS reserves the
     * spinning slot that the started M then owns. */
    if (load_relaxed(&gort__sched.nmspinning) != 0 ||
        !cas_acqrel(&gort__sched.nmspinning, 0, 1))
        return;
    struct m *mp = gort__getm();
    mp->locks++;
    gort__lock(&gort__sched.lock);
    struct p *pp = gort__pidlegetspinning_locked();
    if (!pp) {
        if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
            gort__throw("wakep: negative nmspinning");
        gort__unlock(&gort__sched.lock);
        mp->locks--;
        return;
    }
    gort__unlock(&gort__sched.lock);
    startm(pp, true, false);
    mp->locks--;
}

/* A wired G exited without unlocking: its thread ends with it (Go's
 * mexit), its P goes to another M.  M0 stays (gort_main returns on it).
 * Returns false when the M must exit. */
bool gort__mexit(struct m *mp)
{
    mp->exitlocked = false;
    if (mp->is_m0)
        return true;
    struct p *pp = gort__releasep(mp);
    gort__handoffp(pp);
    gort__lock(&gort__sched.lock);
    gort__sched.nmfreed++;
    mp->dead = true;
    gort__checkdead_locked();
    gort__unlock(&gort__sched.lock);
    return false;
}

/* ---------------------------------------------------------------------------
 * LockOSThread.  Mirrors lockOSThread, stoplockedm and startlockedm.
 *
 * A wired M runs only its G.  When that G blocks, the M gives its P away
 * and sleeps on its note (stoplockedm), counted in sched.nmidlelocked;
 * when the G is made runnable it goes to a run queue as any G, and the M
 * that takes it from there hands the G to the wired M (startlockedm):
 *
 *   - the wired M sleeps (in stoplockedm, or in stopm on the idle list):
 *     it gets the taker's P with the G (m->lockedwant), and the taker
 *     parks;
 *   - it is awake (about to sleep, or, for M0 asked for by the main
 *     goroutine, still running other Gs): the G waits in its lockedwant
 *     slot, and the wired M takes it before it next sleeps or at its next
 *     schedule (its running G is asked to yield).
 *
 * All of it under sched.lock, so that a wired M never sleeps with a G in
 * its slot.  Direct G-to-G hand-offs never involve a wired G or a wired M
 * (pick_handoff).
 * ------------------------------------------------------------------------- */

/* Take the G waiting for mp, if any.  sched.lock held. */
static struct g *take_lockedwant_locked(struct m *mp)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct g *gp = mp->lockedwant;
    if (gp)
        store_relaxed(&mp->lockedwant, NULL);
    return gp;
}

/* The wired G of mp cannot run: give the P away and sleep until a P comes
 * with the G.  Returns the G to run (mp holding a P), or NULL when the M
 * must exit (shutdown). */
struct g *gort__stoplockedm_g(struct m *mp)
{
    struct g *wired = load_relaxed(&mp->lockedg);
    if (!wired || load_relaxed(&wired->lockedm) != mp)
        gort__throw("stoplockedm: inconsistent locking");
    gort__lock(&gort__sched.lock);
    struct g *gp = take_lockedwant_locked(mp);
    if (gp && mp->p) {
        gort__unlock(&gort__sched.lock);
        return gp;
    }
    /* Handed its G with no P to run it on: an M that took the G from a
     * run queue while this one, out of a syscall without a P, had queued
     * it and not yet gone to sleep (startlockedm found it awake).  Back
     * to the queue: the next M to take it finds this one asleep and hands
     * it a P. */
    if (gp)
        gort__globrunqput_locked(gp);
    mp->lockedsleep = true;
    gort__unlock(&gort__sched.lock);
    if (gp)
        gort__wakep();
    if (mp->p) {
        struct p *pp = gort__releasep(mp);
        gort__handoffp(pp);
    }
    gort__lock(&gort__sched.lock);
    /* Counted idle only once its P is handed off, as in Go's
     * stoplockedm: until then that P, released and not yet idle, may hold
     * runnable Gs, and another M's checkdead must see this M running. */
    if (mp->lockedsleep) {
        gort__sched.nmidlelocked++;
        mp->lockedcounted = true;
    }
    gort__checkdead_locked();
    bool exiting = load_relaxed(&gort__sched.exiting);
    gort__unlock(&gort__sched.lock);
    if (!exiting) {
        gort__m_notesleep(mp, &mp->park);
        gort__noteclear(&mp->park);
    }
    gort__lock(&gort__sched.lock);
    if (mp->lockedsleep) { /* nobody woke us: shutdown */
        gort__sched.nmidlelocked -= mp->lockedcounted;
        mp->lockedsleep = mp->lockedcounted = false;
    }
    gp = take_lockedwant_locked(mp);
    gort__unlock(&gort__sched.lock);
    if (!gp || mp->exiting || load_relaxed(&gort__sched.exiting))
        return NULL;
    gort__acquirep(mp, mp->nextp);
    mp->nextp = NULL;
    return gp;
}

bool gort__stoplockedm(struct m *mp)
{
    struct g *gp = gort__stoplockedm_g(mp);
    if (gp && gp != load_relaxed(&mp->lockedg))
        gort__throw("stoplockedm: handed a G wired elsewhere");
    return gp != NULL;
}

static void unlink_midle_locked(struct m *mp)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct m **pp = &gort__sched.midle;
    while (*pp != mp)
        pp = &(*pp)->schedlink;
    *pp = mp->schedlink;
    mp->schedlink = NULL;
    mp->inmidle = false;
    store_relaxed(&gort__sched.nmidle, gort__sched.nmidle - 1);
}

/* gp, just taken from a run queue, is wired to another M: hand it over.
 * Returns false when the caller must exit; otherwise the caller goes on
 * scheduling (holding a P again).  Mirrors startlockedm (proc.go). */
bool gort__startlockedm(struct m *mp, struct g *gp)
{
    struct m *lm = gp->lockedm;
    if (lm == mp)
        gort__throw("startlockedm: locked to me");
    gort__lock(&gort__sched.lock);
    if (lm->lockedwant)
        gort__throw("startlockedm: M%lld already has a G waiting",
                    (long long)lm->id);
    store_relaxed(&lm->lockedwant, gp);
    bool asleep = lm->lockedsleep || lm->inmidle;
    if (asleep) {
        if (lm->inmidle)
            unlink_midle_locked(lm);
        if (lm->lockedsleep) {
            gort__sched.nmidlelocked -= lm->lockedcounted;
            lm->lockedsleep = lm->lockedcounted = false;
        }
        lm->nextp = gort__releasep(mp);
    }
    gort__unlock(&gort__sched.lock);
    if (!asleep) {
        /* It takes gp at its next schedule: make that soon. */
        struct g *cur = load_acq(&lm->curg);
        if (cur)
            store_relaxed(&cur->preempt, 1);
        gort__netpoll_wake(); /* it may sleep as the poller */
        return true;
    }
    gort__notewakeup(&lm->park);
    return gort__stopm(mp);
}

/* The current G wires itself to the current M.  Mirrors dolockOSThread. */
static void dolock(struct m *mp, struct g *gp)
{
    store_relaxed(&mp->lockedg, gp);
    store_relaxed(&gp->lockedm, mp);
}

/* On g0: the main goroutine asked to be wired while on another M than
 * M0: hand it to M0 (through startlockedm, as if taken from a queue). */
static struct g *lock_to_m0(struct g *gp)
{
    struct m *mp = gort__getm_raw();
    gort__casgstatus(gp, G_RUNNING, G_RUNNABLE);
    gort__dropg(mp);
    /* Under sched.lock: M0's own G may be wiring itself right now. */
    gort__lock(&gort__sched.lock);
    bool taken = load_relaxed(&gort__m0->lockedg) || gort__m0->dead ||
                 gort__m0->exiting;
    if (!taken) {
        gort__m0->lockedext = 1;
        store_relaxed(&gort__m0->lockedg, gp);
        store_relaxed(&gp->lockedm, gort__m0);
    }
    gort__unlock(&gort__sched.lock);
    if (taken) {
        /* M0 is wired to another G: stay on this thread instead. */
        mp->lockedext = 1;
        dolock(mp, gp);
        return gp;
    }
    /* false (shutdown): schedule() sees it. */
    (void)gort__startlockedm(mp, gp);
    return NULL;
}

void gort_lock_os_thread(void)
{
    GORT_SAN_SCOPE();
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->foreign)
        return; /* a thread of its own already */
    if (mp->lockedext > 0 || mp->lockedint > 0) {
        mp->lockedext++;
        return;
    }
    if (gp->is_main && !mp->is_m0) {
        /* The main goroutine belongs on the main thread. */
        gort__mcall(lock_to_m0);
        return;
    }
    if (mp->is_m0)
        gort__lock(&gort__sched.lock); /* see lock_to_m0 */
    if (!load_relaxed(&mp->lockedg)) {
        mp->lockedext = 1;
        dolock(mp, gp);
    }
    if (mp->is_m0)
        gort__unlock(&gort__sched.lock);
    /* M0 already promised to the main goroutine: move on and retry. */
    if (load_relaxed(&mp->lockedg) != gp) {
        gort_gosched();
        gort_lock_os_thread();
    }
}

void gort_unlock_os_thread(void)
{
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->foreign || mp->lockedext == 0 ||
        load_relaxed(&mp->lockedg) != gp)
        return;
    if (--mp->lockedext == 0 && mp->lockedint == 0) {
        store_relaxed(&mp->lockedg, NULL);
        store_relaxed(&gp->lockedm, NULL);
    }
}

/* ---------------------------------------------------------------------------
 * Deadlock detection.  Mirrors checkdead (proc.go).
 * ------------------------------------------------------------------------- */

/* Where a runnable G found by checkdead is queued, for the message:
 * nothing runs, so the queues hold still.  sched.lock held. */
static const char *where_queued_locked(struct g *gp, char *buf, size_t n)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (gort__globrunq_has_locked(gp))
        return "on the global queue";
    int32_t procs = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < procs; i++) {
        struct p *pp = gort__allp_load()[i];
        const char *how = NULL;
        if (load_relaxed(&pp->runnext) == gp)
            how = "in runnext";
        uint32_t h = load_relaxed(&pp->runqhead);
        uint32_t t = load_relaxed(&pp->runqtail);
        for (uint32_t k = h; !how && k != t; k++)
            if (load_relaxed(&pp->runq[k % GORT_RUNQ_SIZE]) == gp)
                how = "in the run queue";
        if (how) {
            snprintf(buf, n, "%s of P%d (status %u, idle %d)", how, i,
                     (unsigned)load_relaxed(&pp->status),
                     (int)gort__isidlep(i));
            return buf;
        }
    }
    return "on no run queue";
}

void gort__checkdead_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (gort__debug.checkdeadoff || load_relaxed(&gort__sched.exiting))
        return;
    int32_t run = mcount_locked() - gort__sched.nmidle -
                  gort__sched.nmidlelocked - gort__sched.nmsys +
                  gort__sched.nforeigninside +
                  load_seqcst(&gort__sched.nretaking);
    if (run > 0)
        return;
    if (run < 0)
        gort__throw("checkdead: inconsistent counts: run=%d nmidle=%d "
                    "mcount=%d nmsys=%d", run, gort__sched.nmidle,
                    mcount_locked(), gort__sched.nmsys);
    int32_t waiting = 0;
    uint32_t n = load_acq(&gort__allglen);
    for (uint32_t i = 0; i < n; i++) {
        struct g *gp = gort__allgs[i];
        uint32_t s = gort__readgstatus(gp);
        if (gp->foreign)
            continue; /* a thread outside gort: not ours to judge */
        if (s == G_WAITING || s == G_PREEMPTED)
            waiting++;
        else if (s == G_RUNNABLE || s == G_RUNNING || s == G_SYSCALL) {
            char buf[96];
            gort__throw("checkdead: runnable goroutine %lld (status %s, %s; "
                        "npidle=%d nmspinning=%d runqsize=%d)",
                        (long long)gp->goid, gort__gstatus_name(s),
                        where_queued_locked(gp, buf, sizeof buf),
                        (int)load_relaxed(&gort__sched.npidle),
                        (int)load_relaxed(&gort__sched.nmspinning),
                        (int)gort__sched.runqsize);
        }
    }
    if (waiting == 0 && load_relaxed(&gort__sched.main_goexited))
        gort__fatal("no goroutines (main called runtime.Goexit) - deadlock!");
    /* A pending timer will wake someone (a sleeper, a timer's channel
     * or function): not a deadlock, as in Go. */
    if (gort__timers_any())
        return;
    gort__fatal("all goroutines are asleep - deadlock!");
}

/* ---------------------------------------------------------------------------
 * The end of gort_main's main goroutine.
 * ------------------------------------------------------------------------- */

/* On g0 of the M that ran the main goroutine when it returned: stop the
 * world, then tell every M to exit; M0 frees everything in gort_main. */
struct g *gort__main_exit_m(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_RUNNING, G_DEAD);
    gort__dropg(mp);
    store_relaxed(&gort__sched.exiting, 1);
    gort__stw_stop(mp);
    gort__lock(&gort__sched.lock);
    struct m *idle;
    while ((idle = gort__mget_locked())) {
        idle->exiting = true;
        gort__notewakeup(&idle->park);
    }
    for (struct m *w = gort__allm; w; w = w->alllink)
        if (w->lockedsleep) {
            w->exiting = true;
            gort__notewakeup(&w->park);
        }
    gort__unlock(&gort__sched.lock);
    /* An M sleeping as the poller finds exiting set when it wakes. */
    gort__netpoll_wake();
    /* Our own P stays with us; we exit through findrunnable's check. */
    store_relaxed(&mp->p->m, NULL);
    store_relaxed(&mp->p, NULL);
    return NULL;
}
