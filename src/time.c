/* SPDX-License-Identifier: MIT */
/*
 * time.c - timers: per-P 4-ary heaps run by the scheduler, and
 * gort_sleep.  Mirrors time.go (the heap, check/run).  The timers a
 * program makes (channel and function timers) are timerchan.c's.
 *
 * Every P has a heap of its timers, ordered by when, with the earliest
 * time mirrored in ts->minwhen so that schedulers can see without a lock
 * whether anything is due.  A timer goes on the heap of the P that starts
 * it.  Due timers are run by:
 *   - the P's own M at every trip through the scheduler (findrunnable)
 *     and before a direct G-to-G hand-off (pick_fast, proc.c);
 *   - any M on its last steal pass (the P's M may be busy or idle);
 *   - the M that parks as the "poller" until the earliest timer of all
 *     Ps when it has nothing else to do (proc.c, findrunnable_drop; the
 *     sleep is netpoll.c's).
 * Adding a timer earlier than what the poller sleeps for wakes it
 * (gort__netpoll_wake_by), or, with no poller, wakes a P.  An internal
 * timer moved later keeps its heap key (a lower bound) and is re-sifted
 * when the key comes due: a heap key never exceeds its timer's when.
 *
 * A timer's function runs with its heap's lock held, on an M that holds
 * a P (so readying a G or starting one works), and must not block.
 *
 * Stop and reset from any goroutine, on any P: t->mu serialises them;
 * removal happens under the lock of the heap the timer is in (t->ts),
 * which is also held while its function runs, so a stop that returns has
 * either removed the timer or seen its function complete.
 *
 * Lock order: timer mu, then a P's timers lock, then a channel lock (the
 * function of a channel timer sends), then sched.lock.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "mthread.h"
#include "netpoll.h"
#include "preempt.h"
#include "proc.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "timers.h"
#include "tracehooks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * The 4-ary heap (siftupTimer / siftdownTimer in time.go).  ts->lock held.
 * ------------------------------------------------------------------------- */

static inline void heap_set(struct timers *ts, uint32_t i, struct timerwhen tw)
{
    ts->heap[i] = tw;
    tw.t->idx = (int32_t)i;
}

static void siftup(struct timers *ts, uint32_t i)
{
    struct timerwhen tw = ts->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (tw.when >= ts->heap[p].when)
            break;
        heap_set(ts, i, ts->heap[p]);
        i = p;
    }
    heap_set(ts, i, tw);
}

static void siftdown(struct timers *ts, uint32_t i)
{
    uint32_t n = ts->len;
    struct timerwhen tw = ts->heap[i];
    for (;;) {
        uint32_t c = i * 4 + 1, c3 = c + 2;
        if (c >= n)
            break;
        int64_t w = ts->heap[c].when;
        if (c + 1 < n && ts->heap[c + 1].when < w) {
            w = ts->heap[c + 1].when;
            c++;
        }
        if (c3 < n) {
            int64_t w3 = ts->heap[c3].when;
            if (c3 + 1 < n && ts->heap[c3 + 1].when < w3) {
                w3 = ts->heap[c3 + 1].when;
                c3++;
            }
            if (w3 < w) {
                w = w3;
                c = c3;
            }
        }
        if (w >= tw.when)
            break;
        heap_set(ts, i, ts->heap[c]);
        i = c;
    }
    heap_set(ts, i, tw);
}

static void update_minwhen(struct timers *ts)
{
    /* Seq-cst: the adder's side of the handshake with the poller (see
     * gort__netpoll_wake_by); it also releases the heap to readers that then
     * take the lock.  Readers outside the lock only use it as a hint. */
    store_seqcst(&ts->minwhen, ts->len ? ts->heap[0].when : 0);
}

/* Double ts's room (64 entries at first).  False when out of memory. */
static bool heap_grow(struct timers *ts)
{
    uint32_t ncap = ts->cap ? 2 * ts->cap : 64;
    struct timerwhen *nh = gort__realloc(ts->heap, ncap * sizeof *nh);
    if (!nh)
        return false;
    ts->heap = nh;
    ts->cap = ncap;
    return true;
}

static void heap_add(struct timers *ts, struct gtimer *t)
{
    if (ts->len == ts->cap && !heap_grow(ts))
        gort__throw("out of memory growing a timer heap to %u",
                    ts->cap ? 2 * ts->cap : 64);
    uint32_t i = ts->len++;
    heap_set(ts, i, (struct timerwhen){t->when, t});
    siftup(ts, i);
    /* Relaxed: t->ts is read without ts->lock only to find which lock to
     * take; the reader re-checks it under that lock. */
    store_relaxed(&t->ts, ts);
    update_minwhen(ts);
}

static void heap_delete(struct timers *ts, uint32_t i)
{
    struct gtimer *t = ts->heap[i].t;
    uint32_t last = --ts->len;
    if (i != last) {
        heap_set(ts, i, ts->heap[last]);
        /* The moved timer may belong above i or below it. */
        siftup(ts, i);
        siftdown(ts, i);
    }
    t->idx = -1;
    update_minwhen(ts);
}

/* ---------------------------------------------------------------------------
 * Running due timers.
 * ------------------------------------------------------------------------- */

/* Queue the Gs that sleep timers woke.  The first (the earliest
 * deadline) goes to runnext, so that it runs when the G now on this P
 * yields, within a time slice of its timer, not behind the work queued
 * here (a G already in runnext moves to the ring's tail; sysmon asks the
 * running G to yield when a timer is due).  The rest go to the
 * timer-woken region at the head of the global queue, in deadline order:
 * ahead of Gs that have not started or that yielded, behind sleepers
 * woken earlier.  Go readies each into runnext instead; with thousands
 * of sleepers that starves the ones pushed out of the ring.
 *
 * The region itself is taken from only on the global queue's turns and
 * when this P's queue runs dry, so a stream of wake-ups, each going
 * ahead through runnext, would leave it waiting.  So while any wait
 * there, the newly woken queue behind them, and the region's oldest
 * takes runnext unless this P's ring holds Gs (taken from the region
 * before, so older still): when sleepers outrun the Ps, they run in
 * deadline order. */
static void flush_woken(struct m *mp)
{
    int32_t n = mp->nwoken;
    if (n == 0)
        return;
    struct gqueue q = mp->woken;
    mp->woken.head = mp->woken.tail = NULL;
    mp->nwoken = 0;
    mp->locks++;
    struct g *first;
    /* Relaxed: a hint, which a stale count only makes take the other
     * way once. */
    if (load_relaxed(&gort__sched.nwoken) > 0) {
        gort__lock_m(mp, &gort__sched.lock);
        gort__globrunqputwoken_locked(&q, n);
        /* Gs in our ring came from the region before (older): none goes
         * ahead of them. */
        first = gort__runqlen(mp->p) == 0
                    ? gort__globrunqget_locked(mp->p, 1)
                    : NULL;
        gort__unlock_m(mp, &gort__sched.lock);
    } else {
        first = gort__gqueue_pop(&q);
        if (n > 1) {
            gort__lock_m(mp, &gort__sched.lock);
            gort__globrunqputwoken_locked(&q, n - 1);
            gort__unlock_m(mp, &gort__sched.lock);
        }
    }
    if (first) {
        gort__runqput(mp->p, first, true);
        /* It will run from runnext, inheriting the time slice: count its
         * schedule here, or a stream of wake-ups would stop the ticks and
         * with them the 61-tick turn of the global queue (relaxed: sysmon
         * reads it). */
        store_relaxed(&mp->p->schedtick, mp->p->schedtick + 1);
    }
    gort__wakep();
    mp->locks--;
}

/* Run pp's due timers.  now == 0: read the clock if anything is pending.
 * Returns the earliest remaining when (0: none).  The caller's M holds a
 * P (not necessarily pp).  Mirrors timers.check. */
int64_t gort__timers_check(struct p *pp, int64_t now)
{
    struct timers *ts = &pp->timers;
    /* Relaxed: a stale value only delays the check to the next one (and
     * an added timer earlier than the poller's sleep wakes it). */
    int64_t next = load_relaxed(&ts->minwhen);
    if (next == 0)
        return 0;
    if (now == 0)
        now = gort_nanotime();
    /* Relaxed: sysmon's hint (retake: a timer due since has not run). */
    store_relaxed(&ts->checked, now);
    if (now < next)
        return next;
    gort__lock(&ts->lock);
    int32_t fired = 0;
    while (ts->len > 0 && ts->heap[0].when <= now) {
        struct gtimer *t = ts->heap[0].t;
        /* Relaxed: a time its G pushed (gort__gtimer_push) is never
         * GTIMER_FIRING while the timer is on a heap; the firing below
         * takes it again atomically. */
        int64_t later = load_relaxed(&t->later);
        if (later > t->when)
            t->when = later;
        if (t->when > now) {
            /* Moved later in place (gort__gtimer_reset, gort__gtimer_push):
             * take its new place in the heap now that it is at the top. */
            ts->heap[0].when = t->when;
            siftdown(ts, 0);
            update_minwhen(ts);
            continue;
        }
        if (t->period > 0) {
            /* A ticker stays on the heap at its next time, which skips
             * the ticks that are past (Go drops them too), and f runs
             * with it there: a stop waits for f under the heap's lock
             * and takes it off. */
            t->when += t->period * (1 + (now - t->when) / t->period);
            ts->heap[0].when = t->when;
            siftdown(ts, 0);
            update_minwhen(ts);
            fired++;
            t->f(t, now);
            continue;
        }
        if (t->selfonly || t->pushable) {
            /* Claim the firing against the pushes: one that comes
             * after this sees GTIMER_FIRING and starts the timer again
             * (under its locks, after us); one that came before is seen
             * here, and when it is later the timer stays.  Seq-cst: the
             * CAS of gort__gtimer_push. */
            later = xchg_seqcst(&t->later, GTIMER_FIRING);
            if (later > now) {
                /* Unless its G has reset it meanwhile. */
                cas_seqcst(&t->later, GTIMER_FIRING, later);
                t->when = later;
                continue;
            }
        }
        heap_delete(ts, 0);
        fired++;
        if (t->selfonly) {
            /* Its G may run and return (freeing t) as soon as f readies
             * it: forget it first.  Nobody stops such a timer; its G may
             * start it again.  Release: our reads of t before its G's
             * writes (gort__gtimer_reset's acquire in timer_remove). */
            store_rel(&t->ts, NULL);
            t->f(t, now);
        } else {
            t->f(t, now);
            /* Release, the last touch of t here: a stopper that loads
             * NULL with acquire (timer_remove) may free t at once. */
            store_rel(&t->ts, NULL);
        }
    }
    next = ts->len ? ts->heap[0].when : 0;
    gort__unlock(&ts->lock);
    gort__trace_timers(pp, fired);
    flush_woken(gort__getm());
    return next;
}

/* The earliest timer of all Ps, 0 when there is none. */
int64_t gort__timers_earliest(void)
{
    int64_t min = 0;
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++) {
        /* Seq-cst: after the poller's claim of sched.lastpoll (see
         * gort__netpoll_wake_by). */
        int64_t w = load_seqcst(&gort__allp_load()[i]->timers.minwhen);
        if (w != 0 && (min == 0 || w < min))
            min = w;
    }
    return min;
}

/* Some P has a timer (checkdead: a sleeper will wake). */
bool gort__timers_any(void)
{
    for (int32_t i = 0; i < gort__gomaxprocs; i++)
        if (load_relaxed(&gort__allp_load()[i]->timers.minwhen) != 0)
            return true;
    return false;
}

/* ---------------------------------------------------------------------------
 * Internal timers.
 * ------------------------------------------------------------------------- */

/* Internal timers for other parts of the runtime (netpoll deadlines):
 * (re)start t at when on the current P, or stop it. */
void gort__gtimer_reset(struct gtimer *t, int64_t when)
{
    struct p *pp = gort__timer_p("gtimer_reset");
    gort__lock(&t->mu);
    /* Moving a pending timer later (an idle deadline pushed on at every
     * request) only records the new time: the heap keeps the old one, a
     * lower bound, and gort__timers_check re-sifts the timer when that
     * comes due (Go's timerModified, for the later-only case).  Relaxed
     * load: a hint, re-checked under the heap's lock. */
    struct timers *ts = load_relaxed(&t->ts);
    if (ts) {
        gort__lock(&ts->lock);
        bool later = load_relaxed(&t->ts) == ts && when >= t->when;
        if (later)
            t->when = when;
        gort__unlock(&ts->lock);
        if (later) {
            gort__unlock(&t->mu);
            return;
        }
    }
    gort__timer_remove(t);
    t->when = when;
    gort__timer_add(pp, t);
    gort__unlock(&t->mu);
}

bool gort__gtimer_push(struct gtimer *t, int64_t when)
{
    /* Relaxed: the CAS decides.  Seq-cst CAS: against the run loop's
     * exchange (gort__timers_check) and a stop's (gort__gtimer_stop); a
     * timer that has not fired or been stopped since it was started is
     * on a heap (ts, which the starter set or saw set). */
    int64_t old = load_relaxed(&t->later);
    return old != GTIMER_FIRING && cas_seqcst(&t->later, old, when) &&
           load_relaxed(&t->ts) != NULL;
}

bool gort__gtimer_stop(struct gtimer *t)
{
    /* A push after this fails and starts the timer again under mu, after
     * the stop; one before it is undone by the stop.  Seq-cst: against
     * the push's CAS. */
    if (t->pushable)
        store_seqcst(&t->later, GTIMER_FIRING);
    gort__lock(&t->mu);
    bool pending = gort__timer_remove(t);
    gort__unlock(&t->mu);
    return pending;
}

/* ---------------------------------------------------------------------------
 * Starting, stopping, resetting.
 * ------------------------------------------------------------------------- */

struct p *gort__timer_p(const char *who)
{
    struct m *mp = gort__need_goroutine(who);
    if (!mp->p) /* a thread gort did not create: no P for its timers */
        gort__fatal_no_goroutine(who);
    return mp->p;
}

int gort__timer_reserve(struct p *pp)
{
    struct timers *ts = &pp->timers;
    gort__lock(&ts->lock);
    bool room = ts->len < ts->cap || heap_grow(ts);
    gort__unlock(&ts->lock);
    return room ? 0 : -ENOMEM;
}

/* Put t (not in any heap) on pp's heap at t->when. */
void gort__timer_add(struct p *pp, struct gtimer *t)
{
    struct timers *ts = &pp->timers;
    /* Read before the unlock: once it is released the timer may fire, and
     * a sleeper's timer (on its stack) be gone. */
    int64_t when = t->when;
    gort__lock(&ts->lock);
    heap_add(ts, t);
    gort__unlock(&ts->lock);
    gort__netpoll_wake_by(when);
}

/* Take t off its heap if it is on one.  t->mu held.  True when it was
 * pending.  Returns only once a running function of t has finished. */
bool gort__timer_remove(struct gtimer *t)
{
    for (;;) {
        /* Acquire: pairs with the release in gort__timers_check, so a
         * function that ran on another M is over before we go on (and
         * our caller may free t). */
        struct timers *ts = load_acq(&t->ts);
        if (!ts)
            return false;
        gort__lock(&ts->lock);
        if (load_relaxed(&t->ts) != ts) {
            gort__unlock(&ts->lock);
            continue;
        }
        /* Under the lock, t->ts == ts means it is on the heap: a
         * running function clears t->ts before the lock is released. */
        heap_delete(ts, (uint32_t)t->idx);
        store_relaxed(&t->ts, NULL);
        gort__unlock(&ts->lock);
        return true;
    }
}

/* Move every timer of a removed P to pp (procresize, world stopped).
 * The two heaps' locks are taken in address order, as two locks of one
 * rank must be (sched.h).  Mirrors moveTimers. */
void gort__timers_move(struct p *from, struct p *to)
{
    struct timers *src = &from->timers, *dst = &to->timers;
    bool srcfirst = (uintptr_t)src < (uintptr_t)dst;
    struct timers *first = srcfirst ? src : dst;
    struct timers *second = srcfirst ? dst : src;
    gort__lock(&first->lock);
    gort__lock(&second->lock);
    for (uint32_t i = 0; i < src->len; i++) {
        struct gtimer *t = src->heap[i].t;
        heap_add(dst, t);
    }
    src->len = 0;
    update_minwhen(src);
    gort__unlock(&second->lock);
    gort__unlock(&first->lock);
}

/* Forget every pending timer at shutdown: their owners may still stop or
 * free them afterwards, which must find them stopped. */
void gort__timers_fini(struct p *pp)
{
    struct timers *ts = &pp->timers;
    for (uint32_t i = 0; i < ts->len; i++) {
        store_relaxed(&ts->heap[i].t->ts, NULL);
        ts->heap[i].t->idx = -1;
    }
    gort__free(ts->heap);
    memset(ts, 0, sizeof *ts);
    gort__lock_init(&ts->lock, LOCKRANK_TIMERS);
}

/* ---------------------------------------------------------------------------
 * Sleep.  The timer lives on the sleeper's stack and is started by the
 * park's unlock function, once the G is parked: it cannot fire earlier.
 * ------------------------------------------------------------------------- */

/* Make the sleeper runnable; it is queued after the heap's lock is
 * released, with the others due now (flush_woken). */
static void sleep_fire(struct gtimer *t, int64_t now)
{
    (void)now;
    struct m *mp = gort__getm();
    struct g *gp = t->arg;
    gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
    gort__gqueue_push(&mp->woken, gp);
    mp->nwoken++;
}

static bool sleep_commit(struct m *mp, struct g *gp, void *arg)
{
    (void)gp;
    gort__timer_add(mp->p, arg);
    return true;
}

static inline __attribute__((always_inline)) void sleep_common(int64_t ns)
{
    gort__preempt_check();
    if (ns <= 0)
        return;
    /* The sleeper's timer goes on its P: a thread gort did not create,
     * which never holds one, cannot sleep here. */
    struct m *mp = gort__need_goroutine("gort_sleep");
    if (!mp->p)
        gort__fatal_no_goroutine("gort_sleep");
    struct g *gp = mp->curg;
    struct gtimer t;
    memset(&t, 0, sizeof t);
    gort__lock_init(&t.mu, LOCKRANK_TIMER);
    t.idx = -1;
    t.f = sleep_fire;
    t.arg = gp;
    t.selfonly = true;
    int64_t now = gort_nanotime();
    t.when = now + ns < now ? INT64_MAX : now + ns;
    gp->waitobj = NULL;
    gort__park(sleep_commit, &t, WAIT_SLEEP);
}

static GORT_NOINLINE void sleep_san(int64_t ns)
{
    GORT_SAN_SCOPE();
    sleep_common(ns);
}

void gort_sleep(int64_t ns)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        sleep_san(ns);
        return;
    }
    sleep_common(ns);
}
