/* SPDX-License-Identifier: MIT */
/*
 * lock_futex.h - what lock_futex.c and lockrank.c offer: runtime locks,
 * spin locks and notes, their ranks and the checks (the lock paths that
 * need the M are at the end of sched.h).
 */
#ifndef GORT_LOCK_FUTEX_H
#define GORT_LOCK_FUTEX_H

#include "defs.h"

struct g;
struct m;

/*
 * Lock ranks: the lock order at the top of this file as numbers, lowest
 * first.  A thread may take a lock only while every lock it holds ranks
 * lower; the two cyclic ranks (TIMERS, HCHAN) also allow another lock of
 * the same rank at a higher address.  Builds with GORT_LOCKRANK (a CMake
 * option, on in Debug builds) keep each lock's rank in it and check every
 * acquisition (lockrank.c); other builds keep neither, and their lock and
 * unlock paths are the instructions they would be without ranks.  Mirrors
 * lockrank.go.
 */
enum lockrank {
    LOCKRANK_NONE, /* never given one: fatal to take when checked */
    LOCKRANK_SCHEDTRACE,
    LOCKRANK_TIMER,
    LOCKRANK_TIMERS, /* cyclic */
    LOCKRANK_SEMAROOT,
    LOCKRANK_NOTIFYLIST,
    LOCKRANK_HCHAN, /* cyclic */
    LOCKRANK_SCHED,
    LOCKRANK_ALLP,
    LOCKRANK_GFREE,
    LOCKRANK_ALLG,
    LOCKRANK_STACKPOOL,
    LOCKRANK_PREEMPTRANGES,
    LOCKRANK_POLLCACHE,
    LOCKRANK_HOOK,
    LOCKRANK_RETIRED,
    LOCKRANK_TRACEBUF,
    LOCKRANK_N
};

/* A runtime mutex (lock_futex.c): key 0 unlocked, 1 locked; in the
 * exchange protocol also 2, locked and someone may sleep.  nsleep: in the
 * fenced protocol, the threads asleep or about to sleep on key. */
typedef struct gort_lock {
    uint32_t key;
    uint32_t nsleep;
#ifdef GORT_LOCKRANK
    uint32_t rank;        /* enum lockrank; set before first use */
#endif
} gort_lock;

/* A spin lock (below): key 0 unlocked, 1 locked; waiters never sleep. */
typedef struct gort_spinlock {
    uint32_t key;
#ifdef GORT_LOCKRANK
    uint32_t rank;        /* enum lockrank; set before first use */
#endif
} gort_spinlock;

/* A lock's rank (either lock type): GORT_LOCK_INIT(rank) for a static
 * lock, gort__lock_init(l, rank) where a lock is set up (after any memset
 * of its structure).  Without GORT_LOCKRANK they store nothing. */
#ifdef GORT_LOCKRANK
#define GORT_LOCK_INIT(r) {.rank = (r)}
#define gort__lock_init(l, r) ((void)((l)->rank = (enum lockrank)(r)))
#else
#define GORT_LOCK_INIT(r) {0}
#define gort__lock_init(l, r) ((void)(l), (void)(enum lockrank)(r))
#endif

#ifdef GORT_LOCKRANK
/* The checks (lockrank.c), on a list of the locks the calling thread
 * holds.  acquire: before taking l, throws unless rank may be taken now;
 * record: after a trylock took l (it never waits, so only what comes
 * after it is checked); release: after l is released, throws unless the
 * thread held it; held: throws, naming fn, unless the thread holds l. */
GORT_HIDDEN void gort__lockrank_acquire(const void *l, uint32_t rank);
GORT_HIDDEN void gort__lockrank_record(const void *l, uint32_t rank);
GORT_HIDDEN void gort__lockrank_release(const void *l);
GORT_HIDDEN void gort__lockrank_held(const void *l, uint32_t rank,
                                     const char *fn);
/* The precondition of a _locked function: the caller holds l (either
 * lock type).  Checked only with GORT_LOCKRANK; l is not evaluated
 * otherwise. */
#define gort__lock_assert_held(l)                                              \
    gort__lockrank_held((l), (l)->rank, __func__)
#else
#define gort__lock_assert_held(l) ((void)sizeof(l))
#endif

/* A one-shot wake-up event: sleep until woken, wake exactly once, clear
 * before reuse.  key 0 = not signalled, 1 = signalled. */
typedef struct gort_note {
    uint32_t key;
} gort_note;

GORT_HIDDEN void gort__lock(gort_lock *l);
GORT_HIDDEN void gort__unlock(gort_lock *l);
GORT_HIDDEN void gort__lock_slow(gort_lock *l, uint32_t v);
/* Which protocol the runtime mutexes follow, fixed when the library is
 * loaded (lock_futex.c): true, the fenced one (unlock is a store). */
GORT_HIDDEN extern bool gort__lock_fenced;
/* The contended path of a spin lock (below, and lock_futex.c). */
GORT_HIDDEN void gort__spinlock_slow(gort_spinlock *l);
/* gort__park's commit function for a G that parks holding the spin lock
 * `lock` (a channel's, a gort_cond's list): releases it. */
GORT_HIDDEN bool gort__spinunlock_commit(struct m *mp, struct g *gp,
                                         void *lock);

GORT_HIDDEN void gort__noteclear(gort_note *n);
GORT_HIDDEN void gort__notewakeup(gort_note *n);
GORT_HIDDEN void gort__notesleep(gort_note *n);
/* Sleep at most ns (< 0: forever); true when woken, false on time-out. */
GORT_HIDDEN bool gort__notetsleep(gort_note *n, int64_t ns);
GORT_HIDDEN void gort__futexsleep(uint32_t *addr, uint32_t val, int64_t ns);
GORT_HIDDEN void gort__futexwake(uint32_t *addr, int cnt);

#endif /* GORT_LOCK_FUTEX_H */
