/* SPDX-License-Identifier: MIT */
/*
 * lock_futex.c - runtime mutexes and one-shot notes on Linux futexes.
 *
 * The runtime's own locks (sched.lock and friends) are held for a few
 * hundred nanoseconds at most, so a lock first spins (actively with PAUSE,
 * then by yielding the CPU once) and only then sleeps in the kernel.
 * Mirrors lock_futex.go.  Spin locks (gort_spinlock, sched.h: channel
 * locks and a few other short ones) have their contended path here too.
 *
 * Two protocols, chosen once when the library is loaded:
 *
 * Fenced (where membarrier(2) offers MEMBARRIER_CMD_PRIVATE_EXPEDITED,
 * Linux 4.14+; the default).  The word is 0 unlocked or 1 locked, and a
 * count beside it, nsleep, says how many threads sleep or are about to.
 * Unlock stores 0 and then looks at nsleep: no atomic read-modify-write,
 * which saves about 6 ns of a yield's 31 here (the exchange was a fifth
 * of it).  A store followed by a load of another word is the one
 * reordering x86 (and aarch64) allow: the unlocker may read nsleep = 0
 * while its 0 is still in its store buffer, and a sleeper that counted
 * itself could then find the word still 1 and sleep with nobody to wake
 * it.  So a thread about to sleep counts itself in nsleep and then calls
 * membarrier, which runs a full barrier on every CPU that runs a thread of
 * the process; only after it does it look at the word again.  Every
 * unlocker then either ran its barrier before its load (and sees the
 * count) or had its store made visible before the sleeper's look (and the
 * sleeper takes the lock).  The barrier costs 1-25 microseconds, paid
 * only by a thread that has spun and is about to sleep in the kernel
 * anyway (the asymmetric Dekker pattern, as in userspace RCU).
 *
 * Exchange (the fallback, and GORTDEBUG=lockfence=0): Go's lock_futex.
 * Word: 0 unlocked, 1 locked, 2 locked and someone may sleep on it.
 * Unlock exchanges the word and wakes a sleeper only when it says there
 * may be one, so an uncontended lock/unlock pair is two atomic operations
 * and no syscall.
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
 *   - With GORT_LOCKRANK, every lock and unlock, here and in sched.h's
 *     inline paths, is reported to lockrank.c, which checks the lock
 *     order; the reports come after m->locks is counted up and before it
 *     is counted down.
 */
#include "atomic.h"
#include "defs.h"
#include "env.h"
#include "fatal.h"
#include "lock_futex.h"
#include "os_linux.h"
#include "san.h"
#include "sched.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { MUTEX_UNLOCKED = 0, MUTEX_LOCKED = 1, MUTEX_SLEEPING = 2 };
enum { NOTE_CLEAR = 0, NOTE_WOKEN = 1, NOTE_SLEEPING = 2 };

/* Spin counts from lock_futex.go: 4 rounds of 30 PAUSEs, then 1 yield.
 * The fenced protocol yields up to 16 times before it sleeps: its way to
 * sleep, membarrier, interrupts every other CPU running a thread of the
 * process (which a virtual machine pays twice) and costs tens of yields;
 * with one yield, contended locks made it often enough to slow the
 * scheduler down (docs/design.md, "Runtime mutexes unlock with a store",
 * has the figures). */
enum { ACTIVE_SPIN = 4, ACTIVE_SPIN_CNT = 30, PASSIVE_SPIN = 1,
       PASSIVE_SPIN_FENCED = 16 };

void gort__futexsleep(uint32_t *addr, uint32_t val, int64_t ns)
{
    struct timespec ts, *tsp = NULL;
    if (ns >= 0) {
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        tsp = &ts;
    }
    /* EINTR, EAGAIN (value changed) and ETIMEDOUT all mean "look again";
     * the callers loop on the word, so the result is not needed.  errno
     * is the program's: a gort call that waited for a lock leaves it as
     * it was. */
    int saved_errno = errno;
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, tsp, NULL, 0);
    errno = saved_errno;
}

void gort__futexwake(uint32_t *addr, int cnt)
{
    int saved_errno = errno; /* as in gort__futexsleep */
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, cnt, NULL, NULL, 0);
    errno = saved_errno;
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

/* Spin for l before sleeping: actively with PAUSE (when there is another
 * CPU for the holder to run on), then yielding the CPU `passive` times.
 * True when it took the lock, leaving `wait` in the word. */
static bool lock_spin(gort_lock *l, uint32_t wait, int passive)
{
    int spin = gort__ncpu > 1 ? ACTIVE_SPIN : 0;
    for (int i = 0; i < spin; i++) {
        if (lock_spin_take(l, wait))
            return true;
        procyield(ACTIVE_SPIN_CNT);
    }
    for (int i = 0; i < passive; i++) {
        if (lock_spin_take(l, wait))
            return true;
        gort__osyield();
    }
    return false;
}

/* Written once, by the constructor below, before any thread of gort
 * exists; read plainly by every unlock. */
bool gort__lock_fenced;
/* Times a thread went to sleep on a runtime mutex (tests). */
uint64_t gort__lock_sleeps;

/* Whether GORTDEBUG asks for the exchange protocol (lockfence=0).  The
 * whole variable is checked, and malformed settings reported, by
 * gort_main (env.c). */
static bool lockfence_off(void)
{
    struct gort_debugvars dv = {.lockfence = 1};
    gort__parse_debug_quiet(getenv("GORTDEBUG"), &dv);
    return dv.lockfence == 0;
}

/* Priority 102: before the program's own constructors (and any use of a
 * runtime mutex they might make), after san.c's detection (101). */
__attribute__((constructor(102))) static void lock_protocol_init(void)
{
    if (lockfence_off())
        return;
    /* Registration makes the expedited command usable; both fail with
     * EINVAL or ENOSYS on kernels (or emulators) without them. */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0) != 0)
        return;
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
        return;
    gort__lock_fenced = true;
}

/* The sleeper's half of the fenced protocol: every running thread of the
 * process executes a full memory barrier before this returns true.  It
 * worked at start, but the kernel may still refuse (ENOMEM where CPU masks
 * are allocated, a seccomp filter installed since): false, after one
 * retry. */
static bool lock_fence(void)
{
    for (int i = 0; i < 2; i++)
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
            return true;
    return false;
}

/* The fenced protocol's contended lock: spin, then count ourselves a
 * sleeper, fence, and sleep until the word is 0 and ours. */
static void lock_slow_fenced(gort_lock *l)
{
    if (lock_spin(l, MUTEX_LOCKED, PASSIVE_SPIN_FENCED))
        return;
    /* Acq-rel: ordered before the fence and the exchanges below. */
    xadd_acqrel(&l->nsleep, 1);
    /* Without the fence an unlock may have missed our count: sleep in
     * slices of 1 ms, so that a lost wake-up costs at most that. */
    int64_t slice = lock_fence() ? -1 : 1000 * 1000;
    while (xchg_acqrel(&l->key, MUTEX_LOCKED) != MUTEX_UNLOCKED) {
        xadd_relaxed(&gort__lock_sleeps, 1);
        gort__futexsleep(&l->key, MUTEX_LOCKED, slice);
    }
    xadd_acqrel(&l->nsleep, (uint32_t)-1);
}

void gort__lock(gort_lock *l)
{
    struct m *mp = gort__getm_noextra();
    if (mp) {
        gort__lock_m(mp, l);
        return;
    }
    /* No M (a thread outside the runtime): no lock count to keep. */
#ifdef GORT_LOCKRANK
    gort__lockrank_acquire(l, l->rank);
#endif
    uint32_t v = xchg_acqrel(&l->key, MUTEX_LOCKED);
    if (v != MUTEX_UNLOCKED)
        gort__lock_slow(l, v);
}

/* The contended part of lock2: the exchange that found the lock taken
 * returned v. */
void gort__lock_slow(gort_lock *l, uint32_t v)
{
    if (gort__lock_fenced) {
        lock_slow_fenced(l);
        return;
    }
    /* Remember whether a sleeper may exist: we must leave SLEEPING in the
     * word if we take the lock from under one, or its wake-up is lost. */
    uint32_t wait = v;
    for (;;) {
        if (lock_spin(l, wait, PASSIVE_SPIN))
            return;
        v = xchg_acqrel(&l->key, MUTEX_SLEEPING);
        if (v == MUTEX_UNLOCKED)
            return;
        wait = MUTEX_SLEEPING;
        xadd_relaxed(&gort__lock_sleeps, 1);
        gort__futexsleep(&l->key, MUTEX_SLEEPING, -1);
    }
}

/* A spin lock's contended path (sched.h): spin on a plain load (the line
 * stays shared), then let the holder's thread run if it was descheduled. */
void gort__spinlock_slow(gort_spinlock *l)
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

bool gort__spinunlock_commit(struct m *mp, struct g *gp, void *lock)
{
    (void)gp;
    gort__spinunlock_m(mp, lock);
    return true;
}

void gort__unlock(gort_lock *l)
{
    struct m *mp = gort__getm_noextra();
    if (mp) {
        gort__unlock_m(mp, l);
        if (GORT_UNLIKELY(mp->locks < 0))
            gort__throw("runtime lock count went negative");
        return;
    }
    /* No M (a thread outside the runtime): no lock count to keep. */
    gort__unlock_word(l);
#ifdef GORT_LOCKRANK
    gort__lockrank_release(l);
#endif
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

/* Under ThreadSanitizer, while channels are notified of signals, a
 * note's sleep lasts at most TSAN_WATCH_SLICE at a time and then lets the
 * sanitizer run the handlers it deferred on this thread (san.h,
 * gort__san_sigwatch): an idle thread is where the kernel may well put a
 * signal sent to the process.  Otherwise at most TSAN_SLICE, so that a
 * thread asleep since before the first notify sees the flag. */
#define TSAN_WATCH_SLICE (10 * 1000 * 1000)
#define TSAN_SLICE (1000 * 1000 * 1000)

/* The longest sleep of a note's, ns (-1: no limit). */
static int64_t note_slice(bool tsan, bool *watch)
{
    *watch = tsan && load_relaxed(&gort__san_sigwatch);
    return *watch ? TSAN_WATCH_SLICE : tsan ? TSAN_SLICE : -1;
}

bool gort__notetsleep(gort_note *n, int64_t ns)
{
    int64_t deadline = ns >= 0 ? gort__nanotime_real() + ns : 0;
    bool tsan = (gort__san & GORT_SAN_TSAN) != 0, watch;
    for (;;) {
        /* Acquire: pairs with the exchange in notewakeup. */
        uint32_t v = load_acq(&n->key);
        if (v == NOTE_WOKEN)
            return true;
        if (v == NOTE_CLEAR && !cas_acq(&n->key, NOTE_CLEAR, NOTE_SLEEPING))
            continue; /* woken in between: look again */
        if (ns >= 0) {
            int64_t left = deadline - gort__nanotime_real();
            if (left <= 0) {
                /* Time-out: put the word back to CLEAR unless a wake-up
                 * raced us, in which case report it. */
                if (cas_acq(&n->key, NOTE_SLEEPING, NOTE_CLEAR))
                    return false;
                return true;
            }
            int64_t slice = note_slice(tsan, &watch);
            gort__futexsleep(&n->key, NOTE_SLEEPING,
                             slice >= 0 && left > slice ? slice : left);
        } else {
            gort__futexsleep(&n->key, NOTE_SLEEPING, note_slice(tsan, &watch));
        }
        if (GORT_UNLIKELY(watch))
            gort__san_yield();
    }
}
