/*
 * lock_futex.c - runtime mutexes and one-shot notes on Linux futexes.
 *
 * The runtime's own locks (sched.lock and friends) are held for a few
 * hundred nanoseconds at most, so a lock first spins (actively with PAUSE,
 * then by yielding the CPU once) and only then sleeps in the kernel.
 * Mirrors lock_futex.go.  Spin locks (runtime.h: channel locks) share the
 * lock word and have their contended path here too.
 *
 * Lock word: 0 unlocked, 1 locked, 2 locked and someone may sleep on it.
 * Unlock wakes a sleeper only when the word says there may be one, so an
 * uncontended lock/unlock pair is two atomic operations and no syscall.
 *
 * Note word: 0 clear, 1 woken, 2 a sleeper is (about to be) in the kernel.
 * Unlike Go's notes, notewakeup skips the futex wake when nobody sleeps:
 * on these virtual machines a FUTEX_WAKE with no waiter costs ~1.2 us.
 *
 * Invariants:
 *   - gort__lock increments the current M's `locks` count and unlock
 *     decrements it, so code holding a runtime lock is never preempted
 *     asynchronously (the signal handler checks m->locks).
 *   - A note is woken at most once between clears (double wake: fatal).
 */
#include "runtime.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { MUTEX_UNLOCKED = 0, MUTEX_LOCKED = 1, MUTEX_SLEEPING = 2 };
enum { NOTE_CLEAR = 0, NOTE_WOKEN = 1, NOTE_SLEEPING = 2 };

/* Spin counts from lock_futex.go: 4 rounds of 30 PAUSEs, then 1 yield. */
enum { ACTIVE_SPIN = 4, ACTIVE_SPIN_CNT = 30, PASSIVE_SPIN = 1 };

void gort__futexsleep(uint32_t *addr, uint32_t val, int64_t ns)
{
    struct timespec ts, *tsp = NULL;
    if (ns >= 0) {
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        tsp = &ts;
    }
    /* EINTR, EAGAIN (value changed) and ETIMEDOUT all mean "look again";
     * the callers loop on the word, so the result is not needed. */
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, tsp, NULL, 0);
}

void gort__futexwake(uint32_t *addr, int cnt)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, cnt, NULL, NULL, 0);
}

static inline void procyield(int n)
{
    for (int i = 0; i < n; i++)
        gort__cpu_relax();
}

/* Try to take an unlocked word, leaving `wait` in it; see lock2 in Go. */
static inline bool lock_spin_take(gort_lock *l, uint32_t wait)
{
    /* Relaxed peek: only a hint; the CAS below (acquire) decides. */
    while (load_relaxed(&l->key) == MUTEX_UNLOCKED)
        if (cas_acq(&l->key, MUTEX_UNLOCKED, wait))
            return true;
    return false;
}

void gort__lock(gort_lock *l)
{
    struct m *mp = gort__getm();
    if (mp) {
        gort__lock_m(mp, l);
        return;
    }
    /* No M (a thread outside the runtime): no lock count to keep. */
    uint32_t v = xchg_acqrel(&l->key, MUTEX_LOCKED);
    if (v != MUTEX_UNLOCKED)
        gort__lock_slow(l, v);
}

/* The contended part of lock2: the exchange that found the lock taken
 * returned v. */
void gort__lock_slow(gort_lock *l, uint32_t v)
{
    /* Remember whether a sleeper may exist: we must leave SLEEPING in the
     * word if we take the lock from under one, or its wake-up is lost. */
    uint32_t wait = v;
    int spin = gort__ncpu > 1 ? ACTIVE_SPIN : 0;
    for (;;) {
        for (int i = 0; i < spin; i++) {
            if (lock_spin_take(l, wait))
                return;
            procyield(ACTIVE_SPIN_CNT);
        }
        for (int i = 0; i < PASSIVE_SPIN; i++) {
            if (lock_spin_take(l, wait))
                return;
            gort__osyield();
        }
        v = xchg_acqrel(&l->key, MUTEX_SLEEPING);
        if (v == MUTEX_UNLOCKED)
            return;
        wait = MUTEX_SLEEPING;
        gort__futexsleep(&l->key, MUTEX_SLEEPING, -1);
    }
}

/* A spin lock's contended path (runtime.h): spin on a plain load (the line
 * stays shared), then let the holder's thread run if it was descheduled. */
void gort__spinlock_slow(gort_lock *l)
{
    for (;;) {
        for (int i = 0; i < 64; i++) {
            procyield(1);
            if (load_relaxed(&l->key) == MUTEX_UNLOCKED &&
                xchg_acqrel(&l->key, MUTEX_LOCKED) == MUTEX_UNLOCKED)
                return;
        }
        gort__osyield();
    }
}

void gort__unlock(gort_lock *l)
{
    struct m *mp = gort__getm();
    if (mp) {
        gort__unlock_m(mp, l);
        if (GORT_UNLIKELY(mp->locks < 0))
            gort__throw("runtime lock count went negative");
        return;
    }
    uint32_t v = xchg_acqrel(&l->key, MUTEX_UNLOCKED);
    if (GORT_UNLIKELY(v == MUTEX_UNLOCKED))
        gort__throw("unlock of unlocked lock");
    if (v == MUTEX_SLEEPING)
        gort__futexwake(&l->key, 1);
}

void gort__noteclear(gort_note *n)
{
    store_relaxed(&n->key, NOTE_CLEAR);
}

void gort__notewakeup(gort_note *n)
{
    /* Release: the waker's writes (e.g. m->nextp) are visible to the
     * sleeper, whose acquire load sees NOTE_WOKEN. */
    uint32_t old = xchg_acqrel(&n->key, NOTE_WOKEN);
    if (old == NOTE_WOKEN)
        gort__throw("notewakeup - double wakeup");
    if (old == NOTE_SLEEPING)
        gort__futexwake(&n->key, 1);
}

void gort__notesleep(gort_note *n)
{
    gort__notetsleep(n, -1);
}

bool gort__notetsleep(gort_note *n, int64_t ns)
{
    int64_t deadline = ns >= 0 ? gort_nanotime() + ns : 0;
    for (;;) {
        /* Acquire: pairs with the exchange in notewakeup. */
        uint32_t v = load_acq(&n->key);
        if (v == NOTE_WOKEN)
            return true;
        if (v == NOTE_CLEAR && !cas_acq(&n->key, NOTE_CLEAR, NOTE_SLEEPING))
            continue; /* woken in between: look again */
        if (ns >= 0) {
            int64_t left = deadline - gort_nanotime();
            if (left <= 0) {
                /* Time-out: put the word back to CLEAR unless a wake-up
                 * raced us, in which case report it. */
                if (cas_acq(&n->key, NOTE_SLEEPING, NOTE_CLEAR))
                    return false;
                return true;
            }
            gort__futexsleep(&n->key, NOTE_SLEEPING, left);
        } else {
            gort__futexsleep(&n->key, NOTE_SLEEPING, -1);
        }
    }
}
