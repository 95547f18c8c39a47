/* SPDX-License-Identifier: MIT */
/*
 * sync.c - synchronisation for goroutines built on sema.c.  Mirrors Go's
 * sync package (waitgroup.go, mutex.go, rwmutex.go, once.go, cond.go).
 * Everything here parks the goroutine, never the thread.
 *
 * WaitGroup: one 64-bit state word, the counter in the high 32 bits and
 * the number of waiters in the low 32, plus a semaphore the waiters sleep
 * on.  Add that brings the counter to zero resets the state and releases
 * every waiter.
 *
 * Mutex: one state word and one semaphore.
 *
 *     state:  31 ........................ 3   2         1       0
 *             [ waiters parked or parking ] [starving] [woken] [locked]
 *
 *   locked    held by someone.
 *   woken     a goroutine is awake and about to try (a woken waiter, or
 *             a spinner that claimed the flag): Unlock need not wake
 *             another.
 *   starving  starvation mode, below.
 *   waiters   goroutines counted as waiting on sema.
 *
 * In normal mode waiters queue FIFO on the semaphore, but a woken waiter
 * does not own the mutex: it competes with goroutines that arrive meanwhile
 * and usually loses to them, as they are already running (and may spin).
 * A waiter that loses queues again at the front (LIFO).  A waiter that has
 * waited over 1 ms switches the mutex to starvation mode, in which Unlock
 * hands the mutex to the first waiter through the semaphore, newcomers
 * neither take it nor spin but queue at the tail, and the locked bit stays
 * clear while the starving bit stands in for it.  The waiter that receives
 * it leaves starvation mode if it is the last waiter or waited under 1 ms.
 * Normal mode is much faster (a goroutine can take the mutex many times in
 * a row); starvation mode bounds the tail latency.
 *
 * Spinning: a goroutine that finds the mutex locked spins a little before
 * parking, when that can pay: at most 4 rounds of 30 PAUSEs, only on a
 * multicore machine with another P running (which may unlock soon) and
 * nothing else queued on our own P (sync_runtime_canSpin in proc.go).
 * Unlike the runtime's locks there is no passive spinning (yield): the
 * time is better given to the goroutines waiting for the P.
 *
 * RWMutex: a writer first takes w (one writer at a time), then subtracts
 * 2^30 from reader_count, which makes every later RLock see a negative
 * count and park on reader_sem; it then waits on writer_sem for the
 * readers that were inside, whose number it adds to reader_wait; the last
 * of them to leave wakes it.  Unlock adds 2^30 back, releases the readers
 * that arrived meanwhile and unlocks w.  So a waiting writer holds off new
 * readers and is never starved by a stream of them.
 *
 * Unlike Go, a new writer does not overtake readers, nor do readers
 * overtake it, through the units of reader_sem.  Those units are not bound
 * to the readers they were released for: a reader counted while writer 1
 * waited that has not yet taken its unit (it is between its add and its
 * park, or readied but not yet run) leaves it in the semaphore, and once
 * writer 2 has announced itself, a reader arriving after writer 2 could
 * take that unit in semacquire's fast path and enter first.  Two changes
 * close this:
 *   - Unlock releases the parked readers with hand-off, so each is readied
 *     holding its unit (one CAS more; semrelease does not yield for it);
 *   - Lock, once it holds w, waits (yielding) until reader_sem is back to
 *     zero before it announces itself.  Only readers released by the
 *     previous writer can take those units (no reader parks while the
 *     count is not negative), so this ends as soon as the stragglers have
 *     run; with the hand-off that is nearly always at once.
 *
 * Once: done is read with acquire on the fast path; the slow path runs fn
 * under the mutex and sets done with release after fn returns.
 *
 * Cond: the ticket-based notify list of sema.c.  Wait takes a ticket
 * before unlocking c->l, so a signal between the unlock and the park is
 * not lost; waiters wake in ticket order.
 *
 * ThreadSanitizer (san.c): each public operation has a plain body and,
 * chosen by one branch, a variant that runs it inside gort's ignored
 * region and announces the happens-before the operation gives, on the
 * object's address (Go's sync package does the same with its race
 * annotations): Unlock -> Lock; a writer's Unlock -> RLock (on
 * &reader_count) and RUnlock -> a writer's Lock (on &reader_wait), so
 * readers stay unordered among themselves; Done -> Wait's return; Once's
 * function -> every return of gort_once_do; Signal/Broadcast -> the
 * woken Wait.
 *
 * Invariants:
 *   - The WaitGroup counter never goes negative (fatal, as Go panics);
 *     waiters are only added while the counter is positive.
 *   - mutex: waiters >= the goroutines parked on sema plus the proxies
 *     queued there (a timed-out gort_mutex_lock_until's stand-in, which
 *     keeps its count); starving implies waiters > 0 or the hand-off in
 *     progress (locked is then clear, the receiving waiter still
 *     counted).
 *   - rwmutex: reader_count in [-2^30, 2^30): readers inside or parked,
 *     minus 2^30 while a writer holds or waits; reader_wait >= 0; only
 *     readers whose add made reader_count negative touch reader_sem, and
 *     it is 0 whenever a writer announces itself.
 */
#include "atomic.h"
#include "chan.h"
#include "defs.h"
#include "fatal.h"
#include "preempt.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "sema.h"

static inline __attribute__((always_inline)) void
waitgroup_add(gort_waitgroup *wg, int delta)
{
    /* Acq-rel: Done's release pairs with Wait's acquire, so a waiter
     * sees everything the finished goroutines wrote. */
    uint64_t state = xadd_acqrel(&wg->state, (uint64_t)(int64_t)delta << 32);
    int32_t v = (int32_t)(state >> 32);
    uint32_t w = (uint32_t)state;
    if (v < 0)
        gort__fatal("sync: negative WaitGroup counter");
    if (w != 0 && delta > 0 && v == delta)
        gort__fatal("sync: WaitGroup misuse: Add called concurrently with "
                    "Wait");
    if (v > 0 || w == 0) {
        gort__preempt_check();
        return;
    }
    /* Counter is 0 and there are waiters: nobody may change the state
     * now but us (a concurrent Add would be the misuse above). */
    if (load_acq(&wg->state) != state)
        gort__fatal("sync: WaitGroup misuse: Add called concurrently with "
                    "Wait");
    store_rel(&wg->state, 0);
    for (; w != 0; w--)
        gort__semrelease(&wg->sema, false);
    gort__preempt_check();
}

static GORT_NOINLINE void waitgroup_add_san(gort_waitgroup *wg, int delta)
{
    GORT_SAN_SCOPE();
    if (delta < 0)
        gort__san_release(wg);
    waitgroup_add(wg, delta);
}

void gort_waitgroup_add(gort_waitgroup *wg, int delta)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        waitgroup_add_san(wg, delta);
        return;
    }
    waitgroup_add(wg, delta);
}

void gort_waitgroup_done(gort_waitgroup *wg)
{
    gort_waitgroup_add(wg, -1);
}

/* gort_waitgroup_go's goroutine: fn, then Done, also when fn ends the
 * goroutine with gort_goexit (a deferred Done, as Go's WaitGroup.Go). */
struct wg_go {
    gort_waitgroup *wg;
    void (*fn)(void *);
    void *arg;
};

static void wg_done(void *wg)
{
    gort_waitgroup_done(wg);
}

static void wg_go_main(void *p)
{
    struct wg_go w = *(struct wg_go *)p;
    gort__free(p);
    /* Dumps show fn as the goroutine's function. */
    struct g *gp = gort__getg();
    gp->fn = w.fn;
    gp->arg = w.arg;
    if (gort_defer(wg_done, w.wg) == 0) {
        w.fn(w.arg);
    } else {
        w.fn(w.arg);
        gort_waitgroup_done(w.wg);
    }
}

int64_t gort_waitgroup_go(gort_waitgroup *wg, void (*fn)(void *), void *arg)
{
    GORT_SAN_SCOPE();
    if (!wg || !fn)
        return -EINVAL;
    struct wg_go *w = gort__malloc(sizeof *w);
    if (!w)
        return -ENOMEM;
    *w = (struct wg_go){wg, fn, arg};
    gort_waitgroup_add(wg, 1);
    int64_t id = gort_go(wg_go_main, w);
    if (id < 0) {
        gort_waitgroup_add(wg, -1);
        gort__free(w);
    }
    return id;
}

static inline __attribute__((always_inline)) void
waitgroup_wait(gort_waitgroup *wg)
{
    for (;;) {
        uint64_t state = load_acq(&wg->state);
        if ((int32_t)(state >> 32) == 0) {
            gort__preempt_check();
            return;
        }
        /* Count ourselves as a waiter; retry if the state moved. */
        if (cas_acqrel(&wg->state, state, state + 1)) {
            gort__semacquire(&wg->sema, WAIT_SYNC_WAITGROUP_WAIT);
            if (load_acq(&wg->state) != 0)
                gort__fatal("sync: WaitGroup is reused before previous "
                            "Wait has returned");
            return;
        }
    }
}

static GORT_NOINLINE void waitgroup_wait_san(gort_waitgroup *wg)
{
    GORT_SAN_SCOPE();
    waitgroup_wait(wg);
    gort__san_acquire(wg);
}

void gort_waitgroup_wait(gort_waitgroup *wg)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        waitgroup_wait_san(wg);
        return;
    }
    waitgroup_wait(wg);
}

/* Whether d is no deadline at all (gort_no_deadline, or at 0). */
static bool forever(gort_deadline d)
{
    return d.at == 0 || d.at == INT64_MAX;
}

int gort_waitgroup_wait_until(gort_waitgroup *wg, gort_deadline d)
{
    GORT_SAN_SCOPE();
    if (!wg)
        return -EINVAL;
    if (forever(d)) {
        waitgroup_wait(wg);
        gort__san_acquire(wg);
        return 0;
    }
    struct g *gp = gort__need_goroutine("gort_waitgroup_wait_until")->curg;
    for (;;) {
        uint64_t state = load_acq(&wg->state);
        if ((int32_t)(state >> 32) == 0)
            break;
        if (gort_nanotime() >= d.at)
            return -ETIMEDOUT;
        int err = gort__dl_arm(gp, d.at, "gort_waitgroup_wait_until");
        if (err)
            return err;
        /* Count ourselves as a waiter; retry if the state moved. */
        if (!cas_acqrel(&wg->state, state, state + 1))
            continue;
        if (gort__semacquire_until(&wg->sema, false,
                                   WAIT_SYNC_WAITGROUP_WAIT, d.at, NULL)) {
            if (load_acq(&wg->state) != 0)
                gort__fatal("sync: WaitGroup is reused before previous "
                            "Wait has returned");
            break;
        }
        /* The deadline passed: uncount ourselves, unless the counter
         * reached zero meanwhile.  The Add that took it there releases
         * one unit for every waiter it saw, us included, and resets the
         * state: take our unit (it is released at once) and return as
         * a wait that ended. */
        for (;;) {
            state = load_acq(&wg->state);
            if ((int32_t)(state >> 32) == 0) {
                gort__semacquire(&wg->sema, WAIT_SYNC_WAITGROUP_WAIT);
                gort__san_acquire(wg);
                return 0;
            }
            if (cas_acqrel(&wg->state, state, state - 1))
                return -ETIMEDOUT;
        }
    }
    gort__preempt_check();
    gort__san_acquire(wg);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Mutex.  Mirrors sync.Mutex (mutex.go).
 * ------------------------------------------------------------------------- */

enum {
    MUTEX_LOCKED = 1,
    MUTEX_WOKEN = 2,
    MUTEX_STARVING = 4,
    MUTEX_WAITER_SHIFT = 3,
};
#define MUTEX_WAITER (1 << MUTEX_WAITER_SHIFT)

/* starvationThresholdNs in mutex.go: a waiter that has waited 1 ms is
 * starving.  Long against a critical section, short against a time
 * slice (10 ms). */
#define STARVATION_THRESHOLD_NS (1000 * 1000)

/* active_spin and active_spin_cnt in proc.go: 4 rounds of 30 PAUSEs, a
 * few hundred nanoseconds each, about what a short critical section
 * takes; more would waste a P that has goroutines to run. */
#define ACTIVE_SPIN 4
#define ACTIVE_SPIN_CNT 30

/* Whether spinning round iter can pay.  Mirrors sync_runtime_canSpin
 * (proc.go).  All loads are relaxed: this is a heuristic, a stale value
 * only costs a spin too many or too few. */
static bool canspin(int iter)
{
    if (iter >= ACTIVE_SPIN || load_relaxed(&gort__ncpu) <= 1)
        return false;
    /* Another P must be running (the holder, presumably), apart from the
     * idle and spinning ones and our own. */
    if (load_relaxed(&gort__gomaxprocs) <=
        load_relaxed(&gort__sched.npidle) +
            load_relaxed(&gort__sched.nmspinning) + 1)
        return false;
    /* Goroutines queued on our P would rather run than wait for us. */
    struct m *mp = gort__getm();
    return mp && mp->p && gort__runqempty(mp->p);
}

/* Mirrors sync_runtime_doSpin (proc.go). */
static void dospin(void)
{
    for (int i = 0; i < ACTIVE_SPIN_CNT; i++)
        gort__cpu_relax();
}

/* The contended part of Lock.  Mirrors Mutex.lockSlow (mutex.go).  With
 * at (not 0) the waits end at that time: px, the caller's proxy, then
 * takes the waiter's place, and false is returned. */
static GORT_NOINLINE bool mutex_lock_slow(gort_mutex *m, int64_t at,
                                          void *px)
{
    int64_t wait_start = 0;
    bool waited = false;   /* parked at least once: requeue at the front */
    bool starving = false; /* waited over the threshold */
    bool awoke = false;    /* we own the woken flag and must clear it */
    int iter = 0;
    /* Relaxed loads of state here and below: each value only feeds a CAS
     * that checks it. */
    int32_t old = load_relaxed(&m->state);
    for (;;) {
        /* Spin while it is locked in normal mode; in starvation mode the
         * mutex goes to the first waiter, spinning cannot get it. */
        if ((old & (MUTEX_LOCKED | MUTEX_STARVING)) == MUTEX_LOCKED &&
            canspin(iter)) {
            /* Claim the woken flag so that Unlock wakes nobody while we
             * are about to take the mutex.  Relaxed: a flag, no data. */
            if (!awoke && !(old & MUTEX_WOKEN) &&
                (old >> MUTEX_WAITER_SHIFT) != 0 &&
                cas_relaxed(&m->state, old, old | MUTEX_WOKEN))
                awoke = true;
            dospin();
            iter++;
            old = load_relaxed(&m->state);
            continue;
        }
        int32_t new_ = old;
        /* A starving mutex belongs to the first waiter: queue instead. */
        if (!(old & MUTEX_STARVING))
            new_ |= MUTEX_LOCKED;
        if (old & (MUTEX_LOCKED | MUTEX_STARVING))
            new_ += MUTEX_WAITER;
        /* Switch to starvation mode, but only while it is locked: Unlock
         * expects a starving mutex to have waiters. */
        if (starving && (old & MUTEX_LOCKED))
            new_ |= MUTEX_STARVING;
        if (awoke) {
            if (!(new_ & MUTEX_WOKEN))
                gort__throw("sync: inconsistent mutex state");
            new_ &= ~MUTEX_WOKEN;
        }
        /* Acquire on success: when this takes the lock it pairs with the
         * release of the previous Unlock (directly or through the release
         * sequence of the RMWs on state since). */
        if (!cas_acq(&m->state, old, new_)) {
            old = load_relaxed(&m->state);
            continue;
        }
        if (!(old & (MUTEX_LOCKED | MUTEX_STARVING)))
            return true; /* locked it */
        if (!waited)
            wait_start = gort_nanotime();
        if (!at)
            gort__semacquire1(&m->sema, waited, WAIT_SYNC_MUTEX_LOCK);
        else if (!gort__semacquire_until(&m->sema, waited,
                                         WAIT_SYNC_MUTEX_LOCK, at, px))
            return false; /* px waits in our place, with our count */
        waited = true;
        starving = starving ||
                   gort_nanotime() - wait_start > STARVATION_THRESHOLD_NS;
        old = load_relaxed(&m->state);
        if (old & MUTEX_STARVING) {
            /* Handed to us: locked is clear and we still count as a
             * waiter.  Fix both in one add. */
            if ((old & (MUTEX_LOCKED | MUTEX_WOKEN)) ||
                (old >> MUTEX_WAITER_SHIFT) == 0)
                gort__throw("sync: inconsistent mutex state");
            int32_t delta = MUTEX_LOCKED - MUTEX_WAITER;
            /* Leave starvation mode when nobody else waits or we did not
             * wait long: two goroutines could otherwise pass the mutex
             * back and forth in this slow mode for ever. */
            if (!starving || (old >> MUTEX_WAITER_SHIFT) == 1)
                delta -= MUTEX_STARVING;
            /* Acq-rel: acquire pairs with the releasing Unlock's add
             * (the semaphore hand-off also ordered it before us). */
            xadd_acqrel(&m->state, delta);
            return true;
        }
        awoke = true;
        iter = 0;
    }
}

static inline __attribute__((always_inline)) void mutex_lock(gort_mutex *m)
{
    gort__preempt_check();
    /* Acquire: pairs with the release in gort_mutex_unlock. */
    if (GORT_LIKELY(cas_acq(&m->state, 0, MUTEX_LOCKED)))
        return;
    mutex_lock_slow(m, 0, NULL);
}

static GORT_NOINLINE void mutex_lock_san(gort_mutex *m)
{
    GORT_SAN_SCOPE();
    mutex_lock(m);
    gort__san_acquire(m);
}

void gort_mutex_lock(gort_mutex *m)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        mutex_lock_san(m);
        return;
    }
    mutex_lock(m);
}

static inline __attribute__((always_inline)) bool
mutex_trylock(gort_mutex *m)
{
    /* Relaxed: the CAS below checks the value. */
    int32_t old = load_relaxed(&m->state);
    if (old & (MUTEX_LOCKED | MUTEX_STARVING))
        return false;
    /* A waiter may be about to wake, but we run now and may take the
     * mutex first, as in Go.  Acquire: pairs with Unlock's release. */
    return cas_acq(&m->state, old, old | MUTEX_LOCKED);
}

static GORT_NOINLINE bool mutex_trylock_san(gort_mutex *m)
{
    GORT_SAN_SCOPE();
    if (!mutex_trylock(m))
        return false;
    gort__san_acquire(m);
    return true;
}

bool gort_mutex_trylock(gort_mutex *m)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN))
        return mutex_trylock_san(m);
    return mutex_trylock(m);
}

int gort_mutex_lock_until(gort_mutex *m, gort_deadline d)
{
    if (!m)
        return -EINVAL;
    if (forever(d)) {
        gort_mutex_lock(m);
        return 0;
    }
    GORT_SAN_SCOPE();
    gort__preempt_check();
    /* Acquire: pairs with the release in gort_mutex_unlock. */
    if (cas_acq(&m->state, 0, MUTEX_LOCKED) ||
        (gort_nanotime() >= d.at && mutex_trylock(m))) {
        gort__san_acquire(m);
        return 0;
    }
    if (gort_nanotime() >= d.at)
        return -ETIMEDOUT;
    struct g *gp = gort__need_goroutine("gort_mutex_lock_until")->curg;
    void *px = gort__semproxy_alloc();
    if (!px || gort__dl_arm(gp, d.at, "gort_mutex_lock_until") != 0) {
        gort__free(px);
        return -ENOMEM;
    }
    if (!mutex_lock_slow(m, d.at, px))
        return -ETIMEDOUT; /* px is queued, the mutex's now */
    gort__free(px);
    gort__san_acquire(m);
    return 0;
}

/* A proxy of a waiter whose deadline passed (gort_mutex_lock_until) got
 * the unit of a wake-up or a hand-off: do what that waiter would have
 * done on waking, short of keeping the mutex.  Returns whether it now
 * holds the mutex, which the caller then unlocks on its behalf. */
static bool mutex_proxy_woken(gort_mutex *m)
{
    /* Relaxed: each value feeds a CAS or an add that checks it. */
    int32_t old = load_relaxed(&m->state);
    for (;;) {
        if (old & MUTEX_STARVING) {
            /* Handed to it, as in mutex_lock_slow, and it leaves
             * starvation mode: it did not wait to take the mutex. */
            if ((old & (MUTEX_LOCKED | MUTEX_WOKEN)) ||
                (old >> MUTEX_WAITER_SHIFT) == 0)
                gort__throw("sync: inconsistent mutex state");
            xadd_acqrel(&m->state,
                        MUTEX_LOCKED - MUTEX_WAITER - MUTEX_STARVING);
            return true;
        }
        /* Woken in normal mode: the unlock that woke it set woken and
         * took it off the count.  Take the mutex if it is free (to pass
         * it on), else only give woken back (its holder's unlock wakes
         * the next).  Acquire: pairs with that unlock's release. */
        if (!(old & MUTEX_LOCKED)) {
            if (cas_acq(&m->state, old, (old | MUTEX_LOCKED) & ~MUTEX_WOKEN))
                return true;
        } else if (cas_relaxed(&m->state, old, old & ~MUTEX_WOKEN)) {
            return false;
        }
        old = load_relaxed(&m->state);
    }
}

/* Mirrors Mutex.unlockSlow (mutex.go); new_ is the state after the
 * locked bit was dropped.  A proxy that a wake-up or hand-off reaches
 * (semrelease's value) is served here, in a loop rather than by a
 * nested unlock, since proxies may follow one another in the queue. */
static GORT_NOINLINE void mutex_unlock_slow(gort_mutex *m, int32_t new_)
{
    if (((new_ + MUTEX_LOCKED) & MUTEX_LOCKED) == 0)
        gort__fatal("sync: unlock of unlocked mutex");
    for (;;) {
        void *px = NULL;
        if (new_ & MUTEX_STARVING) {
            /* Hand the mutex to the first waiter.  locked stays clear
             * until it sets it, but starving keeps newcomers out
             * meanwhile. */
            px = gort__semrelease(&m->sema, true);
        } else {
            int32_t old = new_;
            for (;;) {
                /* Nobody to wake, or someone is already awake or has
                 * taken the lock, or the mutex turned starving after our
                 * add (then the hand-off is the next Unlock's business,
                 * not ours). */
                if ((old >> MUTEX_WAITER_SHIFT) == 0 ||
                    (old & (MUTEX_LOCKED | MUTEX_WOKEN | MUTEX_STARVING)))
                    return;
                /* Take the right to wake one waiter.  Relaxed: our
                 * critical section was published by the add in
                 * gort_mutex_unlock, and the semaphore orders the
                 * wake-up. */
                if (cas_relaxed(&m->state, old,
                                (old - MUTEX_WAITER) | MUTEX_WOKEN)) {
                    px = gort__semrelease(&m->sema, false);
                    break;
                }
                old = load_relaxed(&m->state);
            }
        }
        if (!px)
            return;
        gort__free(px);
        if (!mutex_proxy_woken(m))
            return;
        /* Unlock on the proxy's behalf (acq-rel: as gort_mutex_unlock). */
        new_ = xadd_acqrel(&m->state, -MUTEX_LOCKED);
        if (new_ == 0)
            return;
    }
}

static inline __attribute__((always_inline)) void
mutex_unlock(gort_mutex *m)
{
    /* Acq-rel (release is what matters): publishes the critical section
     * to the next owner, whose CAS or add on state acquires it. */
    int32_t new_ = xadd_acqrel(&m->state, -MUTEX_LOCKED);
    if (GORT_UNLIKELY(new_ != 0))
        mutex_unlock_slow(m, new_);
}

static GORT_NOINLINE void mutex_unlock_san(gort_mutex *m)
{
    GORT_SAN_SCOPE();
    gort__san_release(m);
    mutex_unlock(m);
}

void gort_mutex_unlock(gort_mutex *m)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        mutex_unlock_san(m);
        return;
    }
    mutex_unlock(m);
}

/* ---------------------------------------------------------------------------
 * RWMutex.  Mirrors sync.RWMutex (rwmutex.go).
 * ------------------------------------------------------------------------- */

/* rwmutexMaxReaders in rwmutex.go: the bias a writer subtracts; more
 * readers than this at once is not supported. */
#define RWMUTEX_MAX_READERS (1 << 30)

/* RWMutex is no hot path: its operations take GORT_SAN_SCOPE and the
 * plain annotation helpers (one branch each when no sanitizer is there). */

void gort_rwmutex_rlock(gort_rwmutex *rw)
{
    GORT_SAN_SCOPE();
    gort__preempt_check();
    /* Acq-rel: acquire pairs with the writer's release in unlock (the
     * add of 2^30), so a reader that enters sees the writer's critical
     * section; a reader that parks is ordered by the semaphore. */
    if (xadd_acqrel(&rw->reader_count, 1) < 0)
        gort__semacquire1(&rw->reader_sem, false, WAIT_SYNC_RWMUTEX_RLOCK);
    gort__san_acquire(&rw->reader_count);
}

bool gort_rwmutex_tryrlock(gort_rwmutex *rw)
{
    GORT_SAN_SCOPE();
    for (;;) {
        /* Relaxed: the CAS checks it. */
        int32_t c = load_relaxed(&rw->reader_count);
        if (c < 0)
            return false; /* a writer holds or waits */
        /* Acquire: as in rlock. */
        if (cas_acq(&rw->reader_count, c, c + 1)) {
            gort__san_acquire(&rw->reader_count);
            return true;
        }
    }
}

static GORT_NOINLINE void rwmutex_runlock_slow(gort_rwmutex *rw, int32_t r)
{
    if (r + 1 == 0 || r + 1 == -RWMUTEX_MAX_READERS)
        gort__fatal("sync: RUnlock of unlocked RWMutex");
    /* A writer waits.  Acq-rel: the last reader out acquires the other
     * departing readers' decrements and releases them all to the writer
     * through the semaphore. */
    if (xadd_acqrel(&rw->reader_wait, -1) == 0)
        gort__semrelease(&rw->writer_sem, false);
}

void gort_rwmutex_runlock(gort_rwmutex *rw)
{
    GORT_SAN_SCOPE();
    gort__san_release(&rw->reader_wait);
    /* Acq-rel (release is what matters): publishes the read-side section
     * to a writer whose add on reader_count comes later. */
    int32_t r = xadd_acqrel(&rw->reader_count, -1);
    if (GORT_UNLIKELY(r < 0))
        rwmutex_runlock_slow(rw, r);
}

void gort_rwmutex_lock(gort_rwmutex *rw)
{
    GORT_SAN_SCOPE();
    /* One writer at a time (it also honours preemption). */
    gort_mutex_lock(&rw->w);
    /* Let readers released by the previous writer take their units before
     * any reader can park behind us (see the file comment).  Relaxed: a
     * wait condition only; what those readers did reaches us through
     * reader_count below. */
    while (load_relaxed(&rw->reader_sem) != 0)
        gort_gosched();
    /* Announce the writer: from here new readers park.  Acq-rel: acquire
     * pairs with the release of the readers that already left; r is the
     * number still inside. */
    int32_t r = xadd_acqrel(&rw->reader_count, -RWMUTEX_MAX_READERS) +
                RWMUTEX_MAX_READERS;
    /* Wait for them, unless they all left before we added their number
     * (then this add acquires their departures). */
    if (r != 0 && xadd_acqrel(&rw->reader_wait, r) != 0)
        gort__semacquire1(&rw->writer_sem, false, WAIT_SYNC_RWMUTEX_LOCK);
    gort__san_acquire(&rw->reader_count);
    gort__san_acquire(&rw->reader_wait);
}

bool gort_rwmutex_trylock(gort_rwmutex *rw)
{
    GORT_SAN_SCOPE();
    if (!gort_mutex_trylock(&rw->w))
        return false;
    /* Acquire: pairs with the release of departed readers. */
    if (!cas_acq(&rw->reader_count, 0, -RWMUTEX_MAX_READERS)) {
        gort_mutex_unlock(&rw->w);
        return false;
    }
    gort__san_acquire(&rw->reader_count);
    gort__san_acquire(&rw->reader_wait);
    return true;
}

void gort_rwmutex_unlock(gort_rwmutex *rw)
{
    GORT_SAN_SCOPE();
    gort__san_release(&rw->reader_count);
    /* Let readers in again.  Acq-rel (release is what matters): readers
     * that enter from now acquire our critical section with their add;
     * r is the number of readers that arrived meanwhile (parked, or
     * about to park). */
    int32_t r = xadd_acqrel(&rw->reader_count, RWMUTEX_MAX_READERS);
    if (GORT_UNLIKELY(r >= RWMUTEX_MAX_READERS))
        gort__fatal("sync: Unlock of unlocked RWMutex");
    /* With hand-off (Go releases without): see the file comment. */
    for (int32_t i = 0; i < r; i++)
        gort__semrelease(&rw->reader_sem, true);
    gort_mutex_unlock(&rw->w);
}

/* ---------------------------------------------------------------------------
 * Once.  Mirrors sync.Once (once.go).
 *
 * Not a CAS on done: every caller must return after fn has completed,
 * so the losers wait on the mutex while the winner runs fn.  fn must
 * return: if it ends its goroutine, the mutex stays held and later calls
 * block for ever.
 * ------------------------------------------------------------------------- */

static GORT_NOINLINE void once_do_slow(gort_once *o, void (*fn)(void *),
                                       void *arg)
{
    GORT_SAN_SCOPE();
    gort_mutex_lock(&o->m);
    /* Relaxed: every store of done is made under the mutex we hold. */
    if (!load_relaxed(&o->done)) {
        gort__san_callback(fn, arg);
        gort__san_release(o);
        /* Release: pairs with the fast path's acquire, so a caller that
         * sees done sees everything fn did. */
        store_rel(&o->done, 1);
    } else {
        gort__san_acquire(o);
    }
    gort_mutex_unlock(&o->m);
}

void gort_once_do(gort_once *o, void (*fn)(void *), void *arg)
{
    /* Acquire: pairs with the store-release after fn. */
    if (GORT_LIKELY(load_acq(&o->done))) {
        gort__san_acquire(o);
        return;
    }
    once_do_slow(o, fn, arg);
}

/* ---------------------------------------------------------------------------
 * Cond.  Mirrors sync.Cond (cond.go) on the notify list of sema.c.
 * ------------------------------------------------------------------------- */

void gort_cond_wait(gort_cond *c)
{
    GORT_SAN_SCOPE();
    gort__preempt_check();
    /* The ticket is taken while c->l is held, so any signal made after
     * the unlock below counts us. */
    uint32_t t = gort__notifylistadd(c);
    gort_mutex_unlock(c->l);
    gort__notifylistwait(c, t);
    gort__san_acquire(c);
    gort_mutex_lock(c->l);
}

int gort_cond_wait_until(gort_cond *c, gort_deadline d)
{
    if (!c || !c->l)
        return -EINVAL;
    if (forever(d)) {
        gort_cond_wait(c);
        return 0;
    }
    GORT_SAN_SCOPE();
    gort__preempt_check();
    struct g *gp = gort__need_goroutine("gort_cond_wait_until")->curg;
    if (gort_nanotime() >= d.at)
        return -ETIMEDOUT;
    /* The timer and the tombstone before the ticket: once it is taken,
     * leaving must not fail. */
    void *tomb = gort__notifytomb_alloc();
    if (!tomb || gort__dl_arm(gp, d.at, "gort_cond_wait_until") != 0) {
        gort__free(tomb);
        return -ENOMEM;
    }
    uint32_t t = gort__notifylistadd(c);
    gort_mutex_unlock(c->l);
    bool notified = gort__notifylistwait_until(c, t, d.at, tomb);
    gort__san_acquire(c);
    gort_mutex_lock(c->l);
    return notified ? 0 : -ETIMEDOUT;
}

void gort_cond_signal(gort_cond *c)
{
    GORT_SAN_SCOPE();
    gort__san_release(c);
    gort__notifylistnotifyone(c);
}

void gort_cond_broadcast(gort_cond *c)
{
    GORT_SAN_SCOPE();
    gort__san_release(c);
    gort__notifylistnotifyall(c);
}
