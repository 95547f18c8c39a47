/* SPDX-License-Identifier: MIT */
/*
 * proc.c - the scheduler: schedule and findrunnable, spinning Ms,
 * running a G on its M and switching to and from it, the direct G-to-G
 * hand-off, and what is built on them: parking and readying a G,
 * yielding (gort_gosched, cooperative preemption), and a goroutine's
 * first code and its exit.  Mirrors schedule, findRunnable, execute,
 * gopark, goready, goschedImpl and goexit (proc.go).  The hot paths
 * (park, ready, yield, goexit, schedule, execute) share always-inline
 * pieces (pick_fast, pick_handoff, execute_prep, g_handoff, g_switch),
 * which keeps them in this one translation unit.
 *
 * Design (Go's, from proc.go's header): an M runs Go code only while it
 * holds a P.  When an M's G blocks or ends, the M switches to its g0 and
 * runs schedule(), which finds the next runnable G: every 61st tick from
 * the global queue, then runnext and the local ring, then findrunnable's
 * slow path (global batch, stealing from other Ps, and finally parking the
 * M).  A new G goes into runnext, so a spawner hands the CPU to its newest
 * child when it blocks.  Idle Ps are woken sparingly: at most one M spins
 * looking for work at a time from wakep, and at most half the busy Ps'
 * worth of Ms spin at all (2*nmspinning < gomaxprocs-npidle).  The last M
 * to stop spinning re-checks every queue, so no work is stranded while Ps
 * sit idle ("the delicate dance" in proc.go).
 *
 * Stacks and switching: a G switches only to its M's g0 (mcall), and g0
 * switches only to a G (run_g).  The G -> g0 switch saves the G's context
 * first; only then does g0 publish the G (make it runnable, release the
 * park lock), so no other M can resume a G whose registers are still
 * being saved.
 *
 * Invariants:
 *   - mp->p != NULL iff the M may run Gs; pp->m == mp for the P it holds.
 *   - A G in G_RUNNING has gp->m set and is mp->curg of that M.
 *   - nmspinning counts Ms with m->spinning set (plus wakep's reservation
 *     between its CAS and the woken M taking over the count).
 *   - Runtime code reaches the current M through gort__getm() after every
 *     switch, never through a cached TLS address.
 *
 * Not here: Ms and LockOSThread (mthread.c), P ownership, stop-the-world
 * and GOMAXPROCS (procresize.c), goroutine creation (newproc.c), foreign
 * threads (foreign.c), boot and shutdown (boot.c), the shared globals
 * and the current M (sched.c), run queues (runq.c), stacks (stack.c),
 * sysmon (sysmon.c), schedtrace (debug.c), fatal errors (fatal.c).
 */
#include "arch.h"
#include "atomic.h"
#include "defs.h"
#include "env.h"
#include "fatal.h"
#include "foreign.h"
#include "lock_futex.h"
#include "mthread.h"
#include "netpoll.h"
#include "netpoll_epoll.h"
#include "newproc.h"
#include "os_linux.h"
#include "preempt.h"
#include "proc.h"
#include "procresize.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "stack.h"
#include "timers.h"
#include "tracehooks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Context switching with the sanitizers told about it.
 * ------------------------------------------------------------------------- */

/* Switch from `from` (the running context) to `to`, passing arg; dying
 * says `from` will never run again (it is exiting).  Returns the arg of
 * whoever switches back to `from`.  With a sanitizer in the process the
 * switch is announced to it (san.c). */
static inline void *switch_to(struct g *from, struct g *to, void *arg,
                              bool dying)
{
    if (GORT_UNLIKELY(gort__san))
        return gort__san_switch(from, to, arg, dying);
    return gort__ctx_switch(&from->sched_sp, to->sched_sp, arg);
}

/* First thing a G does when it resumes (or starts): finish the switch
 * that brought it here.  If the previous G handed over directly (not via
 * g0), it left work to do for itself now that its context is saved:
 * queue it, release its park lock, or recycle it.  That work must not run
 * before the switch, or another M could resume a half-saved G. */
static inline void after_switch(struct g *prev)
{
    struct m *mp = gort__getm();
    void (*fn)(struct m *, struct g *) = mp->post_fn;
    if (fn) {
        mp->post_fn = NULL;
        gort__stack_check(prev);
        fn(mp, prev);
    }
}

/* Switch away from the running G gp to `to` (g0 or another G), keeping
 * gp's errno; returns when gp runs again, possibly on another M.  Nothing
 * on the way here changes errno: the runtime's lock waits and wake-ups
 * keep it (lock_futex.c). */
static inline void g_switch(struct m *mp, struct g *gp, struct g *to,
                            bool dying)
{
    int saved_errno = *mp->errnop;
    struct g *prev = switch_to(gp, to, gp, dying);
    mp = gort__getm(); /* maybe another thread now */
    void (*fn)(struct m *, struct g *) = mp->post_fn;
    if (fn) {
        mp->post_fn = NULL;
        gort__stack_check(prev);
        fn(mp, prev);
    }
    /* Last: the hand-off above may make system calls (a futex wake-up)
     * or, under a sanitizer, intercepted calls that set errno. */
    *mp->errnop = saved_errno;
}

/* Run fn(gp) on g0 with gp's context saved: the G -> g0 half of a switch.
 * fn returns NULL to go back to schedule(), or a G to run next at once.
 * Returns when gp is resumed, possibly on another M.  Mirrors mcall. */
static void mcall(struct g *(*fn)(struct g *), bool dying)
{
    struct m *mp = gort__getm_raw();
    struct g *gp = mp->curg;
    mp->mcall_fn = fn;
    g_switch(mp, gp, mp->g0, dying);
}

void gort__mcall(struct g *(*fn)(struct g *))
{
    mcall(fn, false);
}

void gort__dropg(struct m *mp)
{
    struct g *gp = mp->curg;
    /* Relaxed stores: sysmon and schedtrace read these racily. */
    store_relaxed(&gp->m, NULL);
    store_relaxed(&mp->curg, NULL);
}

/* ---------------------------------------------------------------------------
 * Spinning Ms.
 * ------------------------------------------------------------------------- */

/*
 * The spinning handshake (Go's "delicate dance", findRunnable).  A
 * submitter queues work and then calls wakep, which looks at npidle and
 * nmspinning; an M that stops spinning decrements nmspinning and then
 * looks at every queue again (findrunnable_drop).  Each side writes, then
 * reads what the other wrote: a StoreLoad pattern, which acquire and
 * release alone do not order.  Why acq_rel is enough here, source by
 * source:
 *
 *   - The global queue: the submitter puts under sched.lock and the
 *     dropping M re-checks under sched.lock.  If the put comes first, the
 *     re-check sees it.  If the re-check comes first, the M's decrement
 *     (before it took the lock) happens before the submitter's critical
 *     section, so the wakep that follows the put sees the decremented
 *     nmspinning, and the M's P already in the idle list (pidleput, also
 *     under the lock), and starts an M.
 *   - A P's own ring: the submitter is the P's owner, running, and puts
 *     with a release store of runqtail; the dropping M reads every ring
 *     after its decrement.  Here both sides may miss (the owner's store
 *     still in its store buffer while it reads an old nmspinning, the M's
 *     read of the ring before the store drains).  Nothing is lost: the
 *     work sits on a running P whose owner runs it at its next schedule,
 *     or another M steals it when it next looks; the window costs only
 *     parallelism for a moment.  Go's runqput and wakep leave the same
 *     window (a release store and plain loads).
 *     wakep's early exit (npidle == 0, mthread.c) leaves a window of the
 *     same kind, and of the same cost, against an M that is not spinning:
 *     it gives up its P without looking at the rings again, and a wakep
 *     that read npidle before that does nothing.  Go 1.21+ closes that
 *     one with sched.needspinning under sched.lock; gort does not, for
 *     the lock it would take on every wake-up (docs/design.md).
 *   - Timers and the network: the poller's sleep has its own seq-cst
 *     handshake (polluntil against gort__netpoll_wake_by, netpoll.c),
 *     which does not depend on nmspinning.
 *
 * The RMWs on nmspinning are acq_rel so that the count itself is exact
 * (each decrement pairs with one increment; a negative count throws).
 */

static void become_spinning(struct m *mp)
{
    mp->spinning = true;
    xadd_acqrel(&gort__sched.nmspinning, 1);
    store_relaxed(&gort__sched.needspinning, 0);
    gort__trace_spinning(mp, true);
}

/* The current M found work and stops spinning; if it was the last
 * spinning M, start another so that more work is looked for.  Mirrors
 * resetspinning (proc.go). */
static void resetspinning(struct m *mp)
{
    gort__trace_spinning(mp, false);
    mp->spinning = false;
    if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
        gort__throw("resetspinning: negative nmspinning");
    gort__wakep();
}

/* ---------------------------------------------------------------------------
 * Finding work.
 * ------------------------------------------------------------------------- */

/* Steal order: all Ps visited once in a random order generated by a
 * random start and a stride coprime to the count.  Mirrors randomOrder. */
static uint32_t coprimes[GORT_MAX_PROCS];
static uint32_t ncoprimes, coprime_count;

static uint32_t gcd(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void gort__steal_order_reset(uint32_t count)
{
    coprime_count = count;
    ncoprimes = 0;
    for (uint32_t i = 1; i <= count; i++)
        if (gcd(i, count) == 1)
            coprimes[ncoprimes++] = i;
}

/* Look for a G to steal: 4 passes over all Ps in random order, taking
 * half of a victim's ring; the last pass may take its runnext.  Sets
 * *newwork when a stop-the-world is pending.  Mirrors stealWork. */
static struct g *stealwork(struct m *mp, struct p *pp, bool *newwork)
{
    uint32_t n = (uint32_t)load_acq(&gort__gomaxprocs);
    if (n != coprime_count)
        return NULL; /* resizing; the caller re-checks */
    for (int i = 0; i < GORT_STEAL_TRIES; i++) {
        bool last = i == GORT_STEAL_TRIES - 1;
        uint32_t r = gort__fastrand();
        uint32_t pos = r % n, inc = coprimes[r % ncoprimes];
        for (uint32_t k = 0; k < n; k++, pos = (pos + inc) % n) {
            if (load_relaxed(&gort__sched.gcwaiting)) {
                *newwork = true;
                return NULL;
            }
            struct p *p2 = gort__allp_load()[pos];
            if (p2 == pp)
                continue;
            if (last && load_relaxed(&p2->timers.minwhen) != 0) {
                /* Run the victim's due timers for it (it may be idle or
                 * busy in a long G); what they ready lands on our P. */
                gort__timers_check(p2, 0);
                bool inherit;
                struct g *gp = gort__runqget(pp, &inherit);
                if (gp)
                    return gp;
            }
            if (gort__isidlep((int32_t)pos))
                continue;
            struct g *gp = gort__runqsteal(pp, p2, last);
            if (gp) {
                gort__trace_steal(mp, p2);
                return gp;
            }
        }
    }
    return NULL;
}

/* With no P of our own: is there a non-idle P with local work?  If so
 * take an idle P to go steal it.  Mirrors checkRunqsNoP (proc.go). */
static struct p *checkrunqsnop(void)
{
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++) {
        struct p *p2 = gort__allp_load()[i];
        if (!gort__isidlep(i) && !gort__runqempty(p2)) {
            gort__lock(&gort__sched.lock);
            struct p *pp = gort__pidlegetspinning_locked();
            gort__unlock(&gort__sched.lock);
            return pp;
        }
    }
    return NULL;
}

/* Take the next G the way schedule() would, but only what is at hand:
 * NULL when the slow path (findrunnable: stealing, parking, a pending
 * stop-the-world) is needed.  When it took from the global queue it keeps
 * sched.lock held and sets *locked. */
static inline __attribute__((always_inline)) struct g *
pick_fast(struct m *mp, struct p *pp, bool *inherit, bool *locked,
          bool global_turn)
{
    struct g *gp;
    *inherit = false;
    *locked = false;
    if (load_relaxed(&gort__sched.gcwaiting))
        return NULL;
    /* The simulation draws the next G from all runnable ones (runq.c). */
    if (gort__sim_on())
        return gort__sim_runqpick(pp);
    bool global = load_relaxed(&gort__sched.runqsize) > 0;
    /* Every 61st schedule, the global queue's turn (Go's fairness check
     * for the global queue against the local ones), its two parts in
     * turn; and when the caller gives it its turn (a yield on 1 P).  A G
     * in runnext (just readied: by its timer, by a channel partner) runs
     * before the 61-tick turn, which the next pick then takes: taken
     * first, the turn would make it wait out a whole time slice of the
     * global queue's head. */
    if (GORT_UNLIKELY(global &&
                      (global_turn || pp->globowed ||
                       pp->schedtick % GORT_GLOBAL_CHECK_TICKS == 0))) {
        if (!global_turn && !pp->globowed && load_relaxed(&pp->runnext)) {
            pp->globowed = true;
        } else {
            pp->globowed = false;
            gort__lock_m(mp, &gort__sched.lock);
            if ((gp = gort__globrunqget_turn_locked(pp))) {
                *locked = true;
                return gp;
            }
            gort__unlock_m(mp, &gort__sched.lock);
        }
    }

    /* Owner's view of its own queue: relaxed loads suffice to see that it
     * is empty (thieves only ever make it emptier). */
    if ((load_relaxed(&pp->runnext) ||
         load_relaxed(&pp->runqhead) != pp->runqtail) &&
        (gp = gort__runqget(pp, inherit)))
        return gp;
    if (global) {
        gort__lock_m(mp, &gort__sched.lock);
        if ((gp = gort__globrunqget_locked(pp, 0))) {
            *locked = true;
            return gp;
        }
        gort__unlock_m(mp, &gort__sched.lock);
    }
    return NULL;
}

/* pick_fast for the direct hand-offs (park, gosched, goexit): NULL also
 * when a timer of this P is due, so that it runs on g0 first
 * (findrunnable); a stream of hand-offs could hold it back otherwise. */
static GORT_NOINLINE void unpick_locked_g(struct m *mp, struct p *pp,
                                           struct g *gp, bool locked)
{
    if (locked)
        gort__unlock_m(mp, &gort__sched.lock);
    /* Back at the front: schedule() takes it next and hands it over. */
    gort__runqput(pp, gp, true);
}

static inline __attribute__((always_inline)) struct g *
pick_handoff(struct m *mp, struct p *pp, bool *inherit, bool *locked,
             bool global_turn)
{
    /* m->locks from here until g_handoff has prepared the next G (then
     * post_fn keeps the signal out): this code holds pp and reads the
     * clock, a system call where there is no vDSO, and the preemption
     * signal must never take it for a blocking call of the program's own
     * and hand pp to another M (preempt.c, "unwrapped blocking calls"). */
    mp->locks++;
    /* Relaxed: a hint, re-read under the heap's lock.  A wired M (the
     * outgoing G is wired, or the main goroutine wants M0) goes through
     * schedule() too. */
    int64_t tw = load_relaxed(&pp->timers.minwhen);
    if (tw != 0) {
        int64_t now = gort_nanotime();
        if (now >= tw) {
            *inherit = *locked = false;
            mp->locks--;
            return NULL;
        }
        /* None due: a check as gort__timers_check's (sysmon's clock of
         * the next G's run; relaxed, a hint). */
        store_relaxed(&pp->timers.checked, now);
    }
    if (GORT_UNLIKELY(load_relaxed(&mp->lockedg))) {
        *inherit = *locked = false;
        mp->locks--;
        return NULL;
    }
    struct g *gp = pick_fast(mp, pp, inherit, locked, global_turn);
    if (GORT_UNLIKELY(gp && gp->lockedm)) {
        unpick_locked_g(mp, pp, gp, *locked);
        *inherit = *locked = false;
        gp = NULL;
    }
    if (!gp)
        mp->locks--;
    return gp; /* non-NULL: g_handoff drops the count */
}

/* The simulation's idle step, taken by the M that holds the one P when
 * no G is runnable (docs/sim.md): goroutines whose descriptors are ready
 * (real I/O, looked at without waiting), else the virtual clock jumps to
 * the earliest timer and its timers fire.  Returns whether anything may
 * have become runnable; false leaves the M to park as usual, with no
 * timer left (a deadlock, or a wait on real I/O). */
static GORT_NOINLINE bool sim_advance(struct p *pp)
{
    if (gort__netpoll_waiters() > 0) {
        struct gqueue q;
        int32_t n = gort__netpoll(0, &q);
        if (n > 0) {
            gort__injectglist(&q, n);
            return true;
        }
    }
    int64_t until = gort__timers_earliest();
    if (until == 0)
        return false;
    /* Relaxed: one M drives the simulation; other threads read the clock
     * only to compute times. */
    if (until > load_relaxed(&gort__sim.now))
        store_relaxed(&gort__sim.now, until);
    gort__timers_check(pp, 0);
    return true;
}

/* Whether sysmon's crowd meter runs one event loop (the CPUs are taken,
 * and one loop was measured to get more done: sysmon.c, "The crowd
 * meter") and Gs run short on pp (its runavg under GORT_WAKE_WORTH_NS):
 * then one event loop does the network's work, and a second thread would
 * only wait for a CPU (poll_nap_ok).  pp is the caller's own (runavg is
 * owner only). */
static bool crowded_short(const struct p *pp)
{
    /* Relaxed: sysmon's hint, re-read at every use. */
    return load_relaxed(&gort__sched.crowded) &&
           pp->runavg < GORT_WAKE_WORTH_NS;
}

/* The part of findrunnable that looks without giving up the P.  Returns a
 * G, or NULL with *again set when the search must restart. */
static struct g *findrunnable_fast(struct m *mp, struct p *pp, bool *inherit,
                                   bool *again)
{
    /* The 61-tick global check, runnext, the ring, a global batch: the
     * same order as the direct hand-off takes (pick_fast). */
    bool locked;
    struct g *gp = pick_fast(mp, pp, inherit, &locked, false);
    if (locked)
        gort__unlock_m(mp, &gort__sched.lock);
    if (gp)
        return gp;
    /* Network readiness, without blocking, before stealing (Go's
     * findRunnable): only when goroutines wait on descriptors and no M
     * is blocked in epoll already (it would get the events).  Not when
     * every other P is idle: there is nothing to steal, so this M goes
     * on to block in epoll as the poller, which returns at once with
     * whatever is ready (a server at partial load would otherwise make
     * two epoll calls for every idle spell).  Nor while the CPUs are
     * crowded (crowded_short): what this poll finds would start a second
     * event loop beside the other P's, for which no CPU is free; this M
     * steals, then gives up its P. */
    int32_t procs = load_acq(&gort__gomaxprocs);
    if (gort__netpoll_waiters() > 0 &&
        load_relaxed(&gort__sched.npidle) < procs - 1 &&
        !crowded_short(pp)) {
        int64_t last = load_seqcst(&gort__sched.lastpoll);
        if (last != 0) {
            struct gqueue q;
            int32_t n = gort__netpoll(0, &q);
            cas_acqrel(&gort__sched.lastpoll, last, gort_nanotime());
            if (n > 0) {
                gp = gort__gqueue_pop(&q);
                gort__injectglist(&q, n - 1);
                return gp;
            }
        }
    }
    if (mp->spinning || 2 * load_relaxed(&gort__sched.nmspinning) <
                            procs - load_relaxed(&gort__sched.npidle)) {
        if (!mp->spinning)
            become_spinning(mp);
        bool newwork = false;
        if ((gp = stealwork(mp, pp, &newwork)))
            return gp;
        if (newwork) {
            *again = true;
            return NULL;
        }
    }
    return NULL;
}

/* With a P, the first readied goroutine is ours to run and the rest are
 * injected (one per other idle P globally, with an M for each, the others
 * on our P): a single readiness wakes no other thread (Go's findRunnable
 * does the same).  Without a P, all are injected.  Returns whether we hold
 * a P, with *gpp the G to run or NULL to search again. */
static bool after_poll(struct m *mp, struct gqueue *ready, int32_t nready,
                       struct g **gpp)
{
    gort__lock(&gort__sched.lock);
    struct p *p2 = load_relaxed(&gort__sched.gcwaiting)
                       ? NULL
                       : gort__pidleget_locked();
    gort__unlock(&gort__sched.lock);
    if (!p2) {
        gort__injectglist(ready, nready);
        return false;
    }
    gort__acquirep(mp, p2);
    struct g *gp = nready > 0 ? gort__gqueue_pop(ready) : NULL;
    if (nready > 1)
        gort__injectglist(ready, nready - 1);
    /* Run what is due everywhere now (then gp, or search again). */
    int32_t n = load_acq(&gort__gomaxprocs);
    int64_t now = gort_nanotime();
    for (int32_t i = 0; i < n; i++)
        gort__timers_check(gort__allp_load()[i], now);
    *gpp = gp;
    return true;
}

/*
 * The poll nap, while the CPUs are crowded (sched.crowded, set by sysmon
 * while this process's threads wait for CPUs and one event loop gets
 * more done than two: sysmon.c, "The crowd meter").  An M that gives up
 * its P while another P still runs Gs would sleep in epoll as the
 * poller, and then every request that arrives wakes it to run on a
 * second CPU, beside the running P which would have come to it within
 * microseconds.  With a CPU free that is parallelism; with
 * none it is a third runnable thread where two CPUs are already taken,
 * and the kernel time-slices it against ours and everyone else's.  So
 * while crowded, and while Gs run short here (this P's runavg under
 * GORT_WAKE_WORTH_NS, the bound injectglist uses for the same trade),
 * the M naps GORT_POLL_NAP_NS on a futex nobody wakes instead, and the
 * running P polls when it runs dry (it sleeps in epoll as the poller and
 * returns at once with what has come), as a single-threaded event loop
 * does.  After the nap the M polls without blocking if nobody else is
 * polling, and runs what it finds on an idle P.
 *
 * The nap bounds what a long-running G on the other P costs the network:
 * its descriptors wait at most one nap.  A nap whose poll finds events
 * nobody polled for during it turns napping off for GORT_POLL_NAP_OFF_NS,
 * so a P busy with long Gs leaves the poller in epoll as before.  One M
 * naps at a time (sched.napping); the others stop as usual.  Not in the
 * simulation, where the one P's M drives the clock.
 */
/* What an M giving up its P does about the poller. */
enum pollnap { PN_POLL, PN_NAP, PN_STOP };

static enum pollnap poll_nap_ok(int64_t runavg)
{
    /* Relaxed: sysmon's hint, re-read at every drop. */
    if (!load_relaxed(&gort__sched.crowded) ||
        runavg >= GORT_WAKE_WORTH_NS || gort__sim_on())
        return PN_POLL;
    int32_t procs = load_acq(&gort__gomaxprocs);
    /* Relaxed: hints; a wrong guess costs one nap or one epoll sleep. */
    if (load_relaxed(&gort__sched.npidle) >= procs ||
        gort__netpoll_waiters() == 0)
        return PN_POLL;
    int64_t off = load_relaxed(&gort__sched.napoff);
    if (off != 0 && gort_nanotime() < off)
        return PN_POLL;
    /* Acq_rel: the one napper; poll_nap's release store ends it.  The
     * others stop: the napper looks within a nap, the running P sooner. */
    return cas_acqrel(&gort__sched.napping, 0, 1) ? PN_NAP : PN_STOP;
}

/* Nap, then poll without blocking.  Returns how many Gs it readied into
 * *ready, or -1 when it did not poll (a poller is in epoll, or another M
 * polled just now): the caller stops. */
static int32_t poll_nap(int64_t until, struct gqueue *ready)
{
    int64_t began = gort_nanotime();
    int64_t ns = GORT_POLL_NAP_NS;
    if (until != 0 && until - began < ns)
        ns = until - began > 0 ? until - began : 0;
    if (ns > 0) {
        uint32_t word = 0;
        gort__futexsleep(&word, 0, ns);
    }
    /* Release: pairs with poll_nap_ok's CAS. */
    store_rel(&gort__sched.napping, 0);
    /* As sysmon's poll: only when no M sleeps in epoll (lastpoll 0), and
     * claimed by moving lastpoll on, so two Ms never poll at once. */
    int64_t last = load_seqcst(&gort__sched.lastpoll);
    int64_t now = gort_nanotime();
    if (last == 0 || !cas_acqrel(&gort__sched.lastpoll, last, now))
        return -1;
    int32_t n = gort__netpoll(0, ready);
    /* Nobody polled during the nap and something was waiting: the other
     * P runs long.  Relaxed: a hint. */
    if (n > 0 && last < began)
        store_relaxed(&gort__sched.napoff, now + GORT_POLL_NAP_OFF_NS);
    return n;
}

/* Give up the P and park, re-checking for work on the way so none is
 * stranded.  Returns a G (with the M holding a P again), or NULL with the
 * M either holding a P to search again or told to exit (*exit). */
static struct g *findrunnable_drop(struct m *mp, struct p *pp, bool *exit)
{
    /* Ours while we hold pp (owner only): read before we let it go. */
    int64_t runavg = pp->runavg;
    gort__lock(&gort__sched.lock);
    if (load_relaxed(&gort__sched.gcwaiting)) {
        gort__unlock(&gort__sched.lock);
        return NULL;
    }
    if (gort__sched.runqsize != 0) {
        struct g *gp = gort__globrunqget_locked(pp, 0);
        gort__unlock(&gort__sched.lock);
        return gp;
    }
    if (!mp->spinning && load_relaxed(&gort__sched.needspinning)) {
        /* A wakep found no idle P: spin instead of idling (the delicate
         * dance in proc.go). */
        become_spinning(mp);
        gort__unlock(&gort__sched.lock);
        return NULL;
    }
    if (mp->spinning)
        gort__trace_spinning(mp, false); /* inside the P slice */
    gort__releasep(mp);
    gort__pidleput_locked(pp);
    gort__unlock(&gort__sched.lock);

    if (mp->spinning) {
        /* The last M to stop spinning re-checks every queue: a G may have
         * been queued after our checks while wakep saw us spinning and did
         * nothing. */
        mp->spinning = false;
        if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
            gort__throw("findrunnable: negative nmspinning");
        gort__lock(&gort__sched.lock);
        if (gort__sched.runqsize != 0) {
            struct p *p2 = gort__pidlegetspinning_locked();
            if (p2) {
                struct g *gp = gort__globrunqget_locked(p2, 0);
                gort__unlock(&gort__sched.lock);
                gort__acquirep(mp, p2);
                become_spinning(mp);
                return gp;
            }
        }
        gort__unlock(&gort__sched.lock);
        struct p *p2 = checkrunqsnop();
        if (p2) {
            gort__acquirep(mp, p2);
            become_spinning(mp);
            return NULL;
        }
    }
    /* Sleep until the next timer of any P, or a descriptor's readiness,
     * as the one poller M (Go's blocking netpoll); the others stop.  But
     * while the CPUs are crowded and another P runs short Gs, nap
     * instead (poll_nap_ok). */
    /* In the simulation the timers are the P holder's (sim_advance): a
     * poller here waits for descriptors only. */
    int64_t until = gort__sim_on() ? 0 : gort__timers_earliest();
    if ((until != 0 || gort__netpoll_waiters() > 0) &&
        !load_relaxed(&gort__sched.exiting)) {
        struct gqueue ready;
        int32_t nready = -1;
        enum pollnap pn = poll_nap_ok(runavg);
        if (pn == PN_NAP) {
            nready = poll_nap(until, &ready);
        } else if (pn == PN_POLL &&
                   xchg_seqcst(&gort__sched.lastpoll, 0) != 0) {
            nready = gort__netpoll_sleep(until, &ready);
            /* Seq-cst: pairs with gort__netpoll_wake_by's load of
             * lastpoll. */
            store_seqcst(&gort__sched.lastpoll, gort_nanotime());
        }
        struct g *gp;
        if (nready >= 0 && after_poll(mp, &ready, nready, &gp))
            return gp;
    }
    if (!gort__stopm(mp))
        *exit = true;
    return NULL;
}

/* Find a runnable G, parking the M while there is none.  Returns NULL
 * only when the M must exit.  Mirrors findRunnable (proc.go). */
static struct g *findrunnable(struct m *mp, bool *inherit)
{
    for (;;) {
        if (load_relaxed(&gort__sched.exiting) && !mp->p)
            return NULL;
        if (GORT_UNLIKELY(load_relaxed(&mp->lockedg))) {
            /* Wired while we searched (M0, for the main goroutine). */
            *inherit = false;
            return gort__stoplockedm_g(mp);
        }
        if (load_relaxed(&gort__sched.gcwaiting)) {
            if (!gort__gcstopm(mp))
                return NULL;
            continue;
        }
        struct p *pp = mp->p;
        /* This P's due timers first: what they ready is found below. */
        gort__timers_check(pp, 0);
        bool again = false;
        struct g *gp = findrunnable_fast(mp, pp, inherit, &again);
        if (gp || again) {
            if (gp)
                return gp;
            continue;
        }
        if (gort__sim_on() && sim_advance(pp))
            continue;
        bool exit = false;
        *inherit = false;
        gp = findrunnable_drop(mp, pp, &exit);
        if (exit)
            return NULL;
        if (gp)
            return gp;
    }
}

/* ---------------------------------------------------------------------------
 * Running Gs on g0.
 * ------------------------------------------------------------------------- */

static void gostart(void *prev);

/* Make gp, taken from a run queue, the M's current G.  Mirrors the first
 * half of execute (proc.go). */
static inline __attribute__((always_inline)) void
execute_prep(struct m *mp, struct g *gp, bool inherit, enum gtrace t)
{
    if (!gp->sched_sp) {
        /* First run: take the hottest free stack of this P (stack.c,
         * "Per-P stack caches and reservations"); the G's reservation
         * then joins this P's batch. */
        struct p *pp = mp->p;
        if (gort__stackcache_get(&pp->stackcache, &gp->stack) == 0) {
            if (++pp->stackres > 2 * GORT_STACKRES_BATCH) {
                gort__stackunreserve(GORT_STACKRES_BATCH);
                pp->stackres -= GORT_STACKRES_BATCH;
            }
        } else {
            gort__stackcache_refill_reserved(&pp->stackcache, &gp->stack);
        }
        gp->sched_sp = gort__ctx_make((void *)gp->stack.hi, gostart,
                                      &gp->fpctl);
    }
    /* A new stretch of execution (rawsys.c).  Relaxed store: inspectors
     * on other threads read it. */
    store_relaxed(&mp->nexecute, mp->nexecute + 1);
    /* Release: sysmon load-acquires curg and then touches the G, whose
     * memory another thread may have initialised. */
    store_rel(&mp->curg, gp);
    store_relaxed(&gp->m, mp);
    gort__casgstatus_t(gp, G_RUNNABLE, G_RUNNING, t);
    gp->waitsince = 0;
    if (inherit) {
        /* Same time slice: a pending request for it holds for gp. */
        store_relaxed(&gp->preempt, load_relaxed(&mp->p->preempt));
    } else {
        /* Normally 0; 1 while a GOMAXPROCS change waits for a G to apply
         * it (sysmon's maxprocs_ask). */
        store_relaxed(&gp->preempt, load_relaxed(&mp->p->maxprocs_ask));
        store_relaxed(&mp->p->preempt, 0);
    }
    if (!inherit)
        store_relaxed(&mp->p->schedtick, mp->p->schedtick + 1);
}

/* Run gp on the current M, and whatever its mcall functions hand back
 * directly, until one returns to the scheduler.  g0 only.  Mirrors
 * execute (proc.go). */
static void run_g(struct m *mp, struct g *gp, bool inherit)
{
    for (;;) {
        execute_prep(mp, gp, inherit, GT_CHECK);
        /* arg NULL: no handover work for the G to do (after_switch). */
        struct g *from = switch_to(mp->g0, gp, NULL, false);
        gort__stack_check(from);
        struct g *(*fn)(struct g *) = mp->mcall_fn;
        mp->mcall_fn = NULL;
        gp = fn(from);
        if (!gp)
            return;
        inherit = true;
    }
}

/* One round of scheduling after another, on g0, until shutdown.
 * Mirrors schedule (proc.go). */
void gort__schedule(void)
{
    struct m *mp = gort__getm_raw(); /* g0 never changes thread */
    for (;;) {
        if (mp->locks)
            gort__throw("schedule: holding locks");
        /* Relaxed: another M wires the main goroutine to M0 (lock_to_m0)
         * and hands it over through startlockedm's note. */
        if (GORT_UNLIKELY(load_relaxed(&mp->lockedg))) {
            /* Wired: run only our G, when it is handed to us. */
            struct g *lg = gort__stoplockedm_g(mp);
            if (!lg)
                return;
            run_g(mp, lg, false);
            if (GORT_UNLIKELY(mp->exitlocked) && !gort__mexit(mp))
                return;
            continue;
        }
        bool inherit = false;
        struct g *gp = findrunnable(mp, &inherit);
        if (!gp)
            return;
        if (mp->spinning)
            resetspinning(mp);
        if (GORT_UNLIKELY(gp->lockedm && gp->lockedm != mp)) {
            if (!gort__startlockedm(mp, gp))
                return;
            continue;
        }
        run_g(mp, gp, inherit);
        if (GORT_UNLIKELY(mp->exitlocked) && !gort__mexit(mp))
            return;
    }
}

/* ---------------------------------------------------------------------------
 * Direct hand-off: G to G without a trip through g0.
 *
 * When a G yields, parks or exits and its own P has a runnable G at hand,
 * it switches straight to that G: one context switch instead of two.  The
 * order of schedule() is kept (61-tick global check, runnext, ring, global
 * batch).  The outgoing G is published only by the post-switch function
 * (after_switch), which runs on the incoming G's stack once the outgoing
 * context is saved.  A needed sched.lock taken before the switch is
 * released by that function: the lock never leaves the M.
 * ------------------------------------------------------------------------- */

/* Switch from the running gp (whose new status the caller has set) to
 * next; post(mp, gp) runs on next's stack.  Returns when gp runs again.
 * t: whether next's start is traced (enum gtrace). */
static inline __attribute__((always_inline)) void
g_handoff(struct m *mp, struct g *gp, struct g *next, bool inherit,
          bool locked, void (*post)(struct m *, struct g *), bool dying,
          enum gtrace t)
{
    store_relaxed(&gp->m, NULL);
    mp->post_locked = locked;
    mp->post_fn = post;
    execute_prep(mp, next, inherit, t);
    mp->locks--; /* pick_handoff's; post_fn guards the rest */
    g_switch(mp, gp, next, dying);
}

static void post_unlock_sched(struct m *mp)
{
    if (mp->post_locked) {
        mp->post_locked = false;
        gort__unlock_m(mp, &gort__sched.lock);
    }
}

/* ---------------------------------------------------------------------------
 * Goroutine start and exit.
 * ------------------------------------------------------------------------- */

static GORT_NORETURN void goexit1(struct g *gp);

/* gostart with a sanitizer in the process (san.c). */
static GORT_NOINLINE GORT_NORETURN void gostart_san(void *prev)
{
    gort__san_gostart();
    after_switch(prev);
    struct g *gp = gort__getg();
    *gort__errno_ptr() = 0;
    gort__san_acquire(gp); /* gort_go happens before the body (san.c) */
    gort__san_callback(gp->fn, gp->arg);
    goexit1(gp);
}

/* First code of every goroutine, on its own stack. */
static void gostart(void *prev)
{
    if (GORT_UNLIKELY(gort__san))
        gostart_san(prev);
    after_switch(prev);
    struct g *gp = gort__getg();
    *gort__errno_ptr() = 0;
    gp->fn(gp->arg);
    goexit1(gp);
}

/* Forget what a dead G ran (gdestroy's field resets).  Its goid stays,
 * as in Go, for schedtrace's G lines; gsetup gives it a new one. */
static void gclear(struct g *gp)
{
    gp->fn = NULL;
    gp->arg = NULL;
    gp->is_main = false;
    gp->waitreason = WAIT_ZERO;
}

/* On g0: the G is finished; recycle it.  Mirrors goexit0/gdestroy. */
static struct g *goexit0(struct g *gp)
{
    struct m *mp = gort__getm_raw();
    gort__casgstatus(gp, G_RUNNING, G_DEAD);
    gort__dropg(mp);
    if (GORT_UNLIKELY(gp->lockedm)) {
        /* Exited wired: the thread goes too (schedule, gort__mexit). */
        mp->exitlocked = mp->lockedext > 0;
        mp->lockedext = mp->lockedint = 0;
        store_relaxed(&mp->lockedg, NULL);
        gp->lockedm = NULL;
    }
    gclear(gp);
    gort__gfree_stack_and_put(mp->p, gp);
    return NULL;
}

/* Run the G's deferred handlers, LIFO.  A handler may defer more (they
 * run next).  A record stays on the list while its handler runs, so that
 * a goroutine discarded at shutdown in the middle of a handler (it may
 * park) still has every record freed by teardown. */
static void rundefers(struct g *gp)
{
    struct gort_defer_rec *d;
    while ((d = gp->defers)) {
        if (d->started) {
            /* Its handler called gort_goexit: it never returns, so drop
             * the record and go on with the rest (Go's d.started). */
            gp->defers = d->next;
            gort__free(d);
            continue;
        }
        d->started = true;
        gort__san_callback(d->fn, d->arg);
        struct gort_defer_rec **pp = &gp->defers;
        while (*pp != d)
            pp = &(*pp)->next; /* handlers deferred by d sit above it */
        *pp = d->next;
        gort__free(d);
    }
}

/* After a direct hand-off from an exiting G: recycle it. */
static void post_goexit(struct m *mp, struct g *prev)
{
    post_unlock_sched(mp);
    gort__gfree_stack_and_put(mp->p, prev);
}

/* goexit1's hand-off to the next G, traced or not (enum gtrace). */
static inline __attribute__((always_inline)) GORT_NORETURN void
goexit_handoff(struct m *mp, struct g *gp, enum gtrace t)
{
    bool inherit, locked;
    struct g *next = pick_handoff(mp, mp->p, &inherit, &locked, false);
    if (!next)
        mcall(goexit0, true);
    gort__casgstatus_t(gp, G_RUNNING, G_DEAD, t);
    gclear(gp);
    g_handoff(mp, gp, next, inherit, locked, post_goexit, true, t);
    gort__throw("goexit: dead goroutine resumed");
}

static GORT_NOINLINE GORT_NORETURN void goexit_traced(struct m *mp,
                                                      struct g *gp)
{
    goexit_handoff(mp, gp, GT_ON);
}

static GORT_NORETURN void goexit1(struct g *gp)
{
    rundefers(gp);
    struct m *mp = gort__getm();
    if (gp->is_main && !load_relaxed(&gort__sched.main_goexited)) {
        /* ThreadSanitizer: what main did happens before gort_main
         * returns. */
        gort__san_release(&gort__main_status);
        mcall(gort__main_exit_m, true);
    }
    /* From here on the G holds its P until it is gone. */
    if (GORT_TRACE_ON())
        goexit_traced(mp, gp);
    goexit_handoff(mp, gp, GT_OFF);
}

int gort_defer(void (*fn)(void *), void *arg)
{
    GORT_SAN_SCOPE();
    if (!fn)
        return -EINVAL;
    /* A thread gort did not create never ends as a goroutine: its
     * handlers would never run. */
    struct g *gp = gort__getg();
    if (!gp || gp->foreign)
        return -EPERM;
    struct gort_defer_rec *d = gort__malloc(sizeof *d);
    if (!d)
        return -ENOMEM;
    d->fn = fn;
    d->arg = arg;
    d->started = false;
    d->next = gp->defers;
    gp->defers = d;
    return 0;
}

void gort_goexit(void)
{
    /* Never left: the goroutine's last switch leaves it (san.c). */
    gort__san_enter();
    struct g *gp = gort__need_goroutine("gort_goexit")->curg;
    if (gp->foreign) /* it stands for the thread: it cannot end */
        gort__fatal_no_goroutine("gort_goexit");
    if (gort__san & GORT_SAN_TSAN)
        gp->tsan_stale = true; /* frames that never return (san.c) */
    if (gp->is_main)
        /* Go: the main goroutine ends but the program goes on; when no
         * goroutine is left, checkdead reports it. */
        store_relaxed(&gort__sched.main_goexited, 1);
    goexit1(gp);
}

/* ---------------------------------------------------------------------------
 * Parking, readying, yielding.
 * ------------------------------------------------------------------------- */

static struct g *park_m(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_RUNNING, G_WAITING);
    gort__dropg(mp);
    gort__unlockf fn = mp->waitunlockf;
    if (fn) {
        void *lock = mp->waitlock;
        mp->waitunlockf = NULL;
        mp->waitlock = NULL;
        if (!fn(mp, gp, lock)) {
            gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
            return gp; /* resume it at once, same time slice */
        }
    }
    return NULL;
}

/* After a direct hand-off from a parking G: release its park lock, now
 * that its context is saved; if unlockf says not to park after all, make
 * it runnable again (next in line). */
static void post_park(struct m *mp, struct g *prev)
{
    post_unlock_sched(mp);
    gort__unlockf fn = mp->waitunlockf;
    if (!fn)
        return;
    void *lock = mp->waitlock;
    mp->waitunlockf = NULL;
    mp->waitlock = NULL;
    if (!fn(mp, prev, lock)) {
        gort__casgstatus(prev, G_WAITING, G_RUNNABLE);
        gort__runqput(mp->p, prev, true);
    }
}

/* gort__park's body, traced or not (enum gtrace). */
static inline __attribute__((always_inline)) void
park_impl(gort__unlockf unlockf, void *lock, uint32_t reason,
          enum gtrace t)
{
    struct m *mp = gort__getm();
    struct g *gp = mp->curg;
    if (GORT_UNLIKELY(!gp)) /* every caller has checked */
        gort__throw("park: not on a goroutine");
    gp->waitreason = reason;
    gp->waitsince = load_relaxed(&gort__sched.coarsenow);
    if (GORT_UNLIKELY(gp->foreign)) {
        gort__foreign_park(mp, gp, unlockf, lock);
        return;
    }
    mp->waitunlockf = unlockf;
    mp->waitlock = lock;
    bool inherit, locked;
    struct g *next = pick_handoff(mp, mp->p, &inherit, &locked, false);
    if (!next) {
        /* Not mcall's assertions: the caller may hold the lock that
         * unlockf releases on g0, so m->locks may be raised here. */
        mp->mcall_fn = park_m;
        g_switch(mp, gp, mp->g0, false);
        return;
    }
    gort__casgstatus_t(gp, G_RUNNING, G_WAITING, t);
    g_handoff(mp, gp, next, inherit, locked, post_park, false, t);
}

static GORT_NOINLINE __attribute__((cold)) void
park_traced(gort__unlockf unlockf, void *lock, uint32_t reason)
{
    park_impl(unlockf, lock, reason, GT_ON);
}

void gort__park(gort__unlockf unlockf, void *lock,
                uint32_t reason)
{
    /* The parking G holds its P until it switches away. */
    if (GORT_TRACE_ON())
        park_traced(unlockf, lock, reason);
    else
        park_impl(unlockf, lock, reason, GT_OFF);
}

/* gort__ready's traced body (enum gtrace). */
static GORT_NOINLINE __attribute__((cold)) void
ready_traced(struct m *mp, struct g *gp, bool next)
{
    gort__ready_m(mp, gp, next, GT_ON);
}

void gort__ready(struct g *gp, bool next)
{
    struct m *mp = gort__getm();
    /* A caller holding a P keeps it throughout (one without a P goes to
     * gort__foreign_ready, which looks at the flag itself). */
    if (GORT_TRACE_ON())
        ready_traced(mp, gp, next);
    else
        gort__ready_m(mp, gp, next, GT_OFF);
}

/* Make a batch of readied Gs runnable where they will run soonest.
 * Mirrors injectglist (proc.go). */
void gort__injectglist(struct gqueue *q, int32_t n)
{
    if (n == 0)
        return;
    struct m *mp = gort__getm_raw();
    struct p *pp = mp ? mp->p : NULL;
    if (mp)
        mp->locks++;
    /* As many on the global queue as there are idle Ps, each with an M
     * started to run one; the rest on our own ring, where this M finds
     * them next (Go 1.21's injectglist).  Without a P, all go globally.
     * On the global queue alone, a busy P would look at them only every
     * 61 ticks, which gave round trips of milliseconds.  But when the
     * batch is short work (this P's runavg, how long a G runs, times n,
     * under GORT_WAKE_WORTH_NS), this M runs it all: waking a thread
     * costs more CPU than the work, and more time too.  So it does while
     * the CPUs are crowded and Gs run short here (crowded_short): the
     * thread woken would wait for a CPU. */
    int32_t idle = pp ? load_relaxed(&gort__sched.npidle) : n;
    if (pp && idle > 0 &&
        (pp->runavg * n < GORT_WAKE_WORTH_NS || crowded_short(pp)))
        idle = 0;
    int32_t nglob = idle < n ? idle : n;
    if (nglob > 0) {
        struct gqueue globq = {NULL, NULL};
        for (int32_t i = 0; i < nglob; i++)
            gort__gqueue_push(&globq, gort__gqueue_pop(q));
        gort__lock(&gort__sched.lock);
        gort__globrunqputbatch_locked(&globq, nglob);
        int32_t npidle = load_relaxed(&gort__sched.npidle);
        gort__unlock(&gort__sched.lock);
        for (int32_t i = 0; i < nglob && i < npidle; i++)
            gort__startm_idle();
    }
    if (q->head) {
        gort__runqputbatch(pp, q, n - nglob);
        if (idle > 0)
            gort__wakep();
    }
    if (mp)
        mp->locks--;
}

/* On g0: put the G at the tail of the global queue.  Mirrors goschedImpl,
 * used by Gosched and by cooperative preemption (gopreempt_m). */
static struct g *gosched_m(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_RUNNING, G_RUNNABLE);
    gort__dropg(mp);
    gort__lock(&gort__sched.lock);
    gort__globrunqput_locked(gp);
    gort__unlock(&gort__sched.lock);
    if (load_relaxed(&gort__main_started))
        gort__wakep();
    return NULL;
}

/* After a direct hand-off from a yielding G: queue it globally. */
static void post_gosched(struct m *mp, struct g *prev)
{
    if (!mp->post_locked)
        gort__lock_m(mp, &gort__sched.lock);
    mp->post_locked = false;
    gort__globrunqput_locked(prev);
    gort__unlock_m(mp, &gort__sched.lock);
    if (load_relaxed(&gort__sched.npidle) != 0) /* wakep's own first test */
        gort__wakep();
}

/* After a direct hand-off from a G that yielded while its P had other Gs
 * queued: to the tail of the P's own queue. */
static void post_gosched_local(struct m *mp, struct g *prev)
{
    if (mp->post_locked) {
        mp->post_locked = false;
        gort__unlock_m(mp, &gort__sched.lock);
    }
    gort__runqput(mp->p, prev, false);
    if (load_relaxed(&gort__sched.npidle) != 0) /* wakep's own first test */
        gort__wakep();
}

/* Yield: to the tail of the global queue, as Go's Gosched (and
 * gopreempt_m for cooperative preemption), except for a G that yields on
 * the only P where it would wait less in the P's own queue (fewer Gs
 * there than 61 for each G ahead of it in the global queue's plain part,
 * which gets one schedule in 61): that one gives the global queue its
 * turn (its head runs next, if it has one) and goes to the tail of the
 * P's own queue.  The global queue gets one schedule in 61 while the
 * P's queue never empties, so behind it a yield would cost 61 schedules
 * for every G there (docs/design.md, "Timer wake-ups run ahead of new
 * work").  Giving the turn keeps what a yield is for: a
 * goroutine that yields in a loop until others have done their work lets
 * the global queue run one G per yield.  With more Ps the global queue
 * also evens yielding goroutines out between them (a P's own queue gives
 * up Gs only to a P that runs dry), so there the yield is Go's. */
static void gosched(struct m *mp, struct g *gp, bool preempted)
{
    struct p *pp = mp->p;
    /* Relaxed: GOMAXPROCS changes stop the world, and this G runs; the
     * queue lengths are hints (the owner's view of its own ring, which
     * thieves only empty, and the global queue's size outside its
     * lock). */
    bool local = false;
    if (!preempted && load_relaxed(&gort__gomaxprocs) == 1) {
        int32_t ring = (int32_t)(pp->runqtail - load_relaxed(&pp->runqhead));
        int32_t plain = load_relaxed(&gort__sched.runqsize) -
                        load_relaxed(&gort__sched.nwoken);
        local = ring < GORT_GLOBAL_CHECK_TICKS * (plain + 1);
    }
    bool inherit, locked;
    struct g *next = pick_handoff(mp, pp, &inherit, &locked, local);
    if (!next) {
        mcall(gosched_m, false);
        return;
    }
    gort__casgstatus(gp, G_RUNNING, G_RUNNABLE);
    g_handoff(mp, gp, next, inherit, locked,
              local ? post_gosched_local : post_gosched, false, GT_CHECK);
}

static inline __attribute__((always_inline)) void gosched_common(void)
{
    struct m *mp = gort__getm();
    if (!mp || !mp->curg || mp->curg->foreign) {
        gort__osyield();
        return;
    }
    gosched(mp, mp->curg, false);
}

static GORT_NOINLINE void gosched_san(void)
{
    GORT_SAN_SCOPE();
    gosched_common();
}

void gort_gosched(void)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        gosched_san();
        return;
    }
    gosched_common();
}

/* The simulation's preemption point (docs/sim.md), reached because every
 * G runs with its preempt flag set there (the P's maxprocs_ask, which
 * execute_prep copies, stays 1 from boot on).  With the random strategy
 * a yield with chance 1 in GORT_SIM_YIELD_ONE_IN, drawn from the seeded
 * state; with PCT a yield at a change point or to a runnable G of higher
 * priority.  Returns whether gp yields; when not, its flag stays set. */
static GORT_NOINLINE bool sim_preempt_point(struct m *mp, struct g *gp)
{
    if (!mp->p)
        return false;
    return gort__sim.strategy == SIM_PCT
               ? gort__sim_pct_preempt(mp, gp)
               : gort__fastrandn(GORT_SIM_YIELD_ONE_IN) == 0;
}

void gort__preempt_check(void)
{
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    /* Relaxed: a late sighting only delays the preemption a little. */
    if (gp && load_relaxed(&gp->preempt) && mp->locks == 0)
        gort__preempt_yield(mp, gp);
}

void gort__preempt_yield(struct m *mp, struct g *gp)
{
    if (GORT_UNLIKELY(gp->foreign))
        return;
    if (gort__sim_on() && !sim_preempt_point(mp, gp))
        return;
    store_relaxed(&gp->preempt, 0);
    store_relaxed(&mp->p->preempt, 0);
    /* A GOMAXPROCS that the CPUs available call for (sysmon asked for this
     * check to apply it: maxprocs_ask, execute_prep): the stop-the-world
     * parks this G, which is the yield.  When another G took the value
     * first, yield as asked.  Relaxed look; the exchange in
     * gort__maxprocs_apply takes the value with acquire. */
    if (GORT_UNLIKELY(load_relaxed(&gort__maxprocs_want) > 0) &&
        gort__maxprocs_apply())
        return;
    gort__stat_add(&mp->p->npreemptsync, 1);
    gort__trace_preempted(mp);
    gosched(mp, gp, true);
}
