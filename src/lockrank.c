/* SPDX-License-Identifier: MIT */
/*
 * lockrank.c - the lock order, checked (builds with GORT_LOCKRANK only).
 * Mirrors lockrank_on.go.
 *
 * Every runtime lock carries a rank (enum lockrank, sched.h), the
 * position of its kind in the lock order written at the top of
 * sched.h.  Each thread keeps the list of the locks it holds, and the
 * lock paths (sched.h, lock_futex.c) report to it: before a lock is
 * taken, gort__lockrank_acquire checks its rank against every lock the
 * thread holds and throws, naming both locks, when one of them ranks the
 * same or higher; after a lock is released, gort__lockrank_release takes
 * it off the list and throws when the thread did not hold it.  A
 * function named *_locked asserts its lock is on the list
 * (gort__lock_assert_held).  Without GORT_LOCKRANK none of this is
 * compiled and the locks carry no rank.
 *
 * The list is per thread, not per M: locks are also taken on threads
 * without an M (foreign threads, the trace writer, tests), and a lock is
 * released on the thread that took it even when a context switch comes
 * between (park hands it to g0 or the next G of the same M, sched.h).
 * It lives in thread-local storage that only these out-of-line functions
 * touch, so the address is computed afresh at each call and never carried
 * across a switch to another thread.
 *
 * Cyclic ranks.  Two kinds of lock are taken several at a time: channel
 * locks (select.c, in address order) and P timers locks (moving a
 * destroyed P's timers, time.c, also in address order).  Another lock of
 * such a rank may be taken above the highest address of its rank already
 * held.  A select may hold thousands of channel locks, so the list keeps
 * a run of one cyclic rank as one entry: its lowest and highest address
 * and how many locks it holds.  Releasing a lock of a run only counts it
 * down, so for runs the list knows the span, not each member.
 *
 * Signal handlers.  The preemption handler may take locks (entering a
 * syscall for a G it finds in the kernel), but only on an M whose
 * m->locks is 0; the lock paths count m->locks before they report and
 * report before they uncount, so the handler never finds the list
 * half-changed.  Threads without an M get no signal from gort.
 *
 * Invariants:
 *   - A thread's list holds, in the order taken, the locks it holds:
 *     each entry ranks above every entry below it, except that a run
 *     grows in place.
 *   - At most LOCKRANK_MAXHELD entries; more is a fatal error (no path
 *     in gort nests that deep).
 */
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"

#include <stdio.h>
#include <string.h>

#ifndef GORT_LOCKRANK
#error "lockrank.c is built only with GORT_LOCKRANK"
#endif

/* Deepest nesting: timer, timers, channel, sched, gfree, allg, stack
 * pool, trace buffers is 8 kinds; twice that leaves room. */
#define LOCKRANK_MAXHELD 16

static const char *const ranknames[LOCKRANK_N] = {
    [LOCKRANK_NONE] = "unranked lock",
    [LOCKRANK_SCHEDTRACE] = "schedtrace lock",
    [LOCKRANK_TIMER] = "timer mu",
    [LOCKRANK_TIMERS] = "P timers lock",
    [LOCKRANK_SEMAROOT] = "semaphore root lock",
    [LOCKRANK_NOTIFYLIST] = "notify list lock",
    [LOCKRANK_HCHAN] = "channel lock",
    [LOCKRANK_SCHED] = "sched.lock",
    [LOCKRANK_ALLP] = "allplock",
    [LOCKRANK_GFREE] = "sched.gfree_lock",
    [LOCKRANK_ALLG] = "allglock",
    [LOCKRANK_STACKPOOL] = "stack pool lock",
    [LOCKRANK_PREEMPTRANGES] = "preempt ranges lock",
    [LOCKRANK_POLLCACHE] = "poll cache lock",
    [LOCKRANK_HOOK] = "gort-hook's table lock",
    [LOCKRANK_RETIRED] = "retired-array lock",
    [LOCKRANK_TRACEBUF] = "trace buffer lock",
};

struct heldlock {
    uintptr_t lo, hi; /* the lock; for a run, its lowest and highest */
    uint32_t rank;
    uint32_t n;       /* locks in the entry: 1, or a run's count */
};

struct heldlist {
    uint32_t n;
    struct heldlock l[LOCKRANK_MAXHELD];
};

/* The calling thread's locks; only this thread reads or writes it. */
static __thread struct heldlist held
    __attribute__((tls_model("initial-exec")));

static const char *rankname(uint32_t rank)
{
    return rank < LOCKRANK_N ? ranknames[rank] : "bad rank";
}

static bool cyclic(uint32_t rank)
{
    return rank == LOCKRANK_TIMERS || rank == LOCKRANK_HCHAN;
}

/* "name 0x..." or, for a run, "name 0x...-0x... (n locks)". */
static void describe(char *buf, size_t size, const struct heldlock *e)
{
    if (e->n == 1)
        snprintf(buf, size, "%s %#lx", rankname(e->rank),
                 (unsigned long)e->lo);
    else
        snprintf(buf, size, "%s %#lx-%#lx (%u locks)", rankname(e->rank),
                 (unsigned long)e->lo, (unsigned long)e->hi, e->n);
}

static GORT_NORETURN void order_violation(const struct heldlist *h,
                                          const void *l, uint32_t rank,
                                          const struct heldlock *bad)
{
    char b[128], all[512];
    size_t off = 0;
    all[0] = 0;
    for (uint32_t i = 0; i < h->n && off < sizeof all; i++) {
        describe(b, sizeof b, &h->l[i]);
        int w = snprintf(all + off, sizeof all - off, "%s%s",
                         i ? ", " : "", b);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    describe(b, sizeof b, bad);
    gort__throw("lock order: taking %s %p while holding %s (held, in the "
                "order taken: %s)",
                rankname(rank), l, b, all);
}

static void push(struct heldlist *h, uintptr_t a, uint32_t rank)
{
    if (h->n > 0) {
        struct heldlock *top = &h->l[h->n - 1];
        if (top->rank == rank && cyclic(rank) && a > top->hi) {
            top->hi = a;
            top->n++;
            return;
        }
    }
    if (h->n == LOCKRANK_MAXHELD)
        gort__throw("lock rank: more than %d kinds of lock held at once "
                    "(taking %s %p)",
                    LOCKRANK_MAXHELD, rankname(rank), (const void *)a);
    h->l[h->n++] = (struct heldlock){a, a, rank, 1};
}

static void check_ranked(const void *l, uint32_t rank)
{
    if (rank == LOCKRANK_NONE || rank >= LOCKRANK_N)
        gort__throw("lock rank: lock %p has rank %u: it was never given "
                    "one (gort__lock_init where it is set up)",
                    l, rank);
}

void gort__lockrank_acquire(const void *l, uint32_t rank)
{
    struct heldlist *h = &held;
    uintptr_t a = (uintptr_t)l;
    check_ranked(l, rank);
    for (uint32_t i = 0; i < h->n; i++) {
        const struct heldlock *e = &h->l[i];
        if (e->rank < rank)
            continue;
        if (e->rank == rank && cyclic(rank) && a > e->hi)
            continue;
        order_violation(h, l, rank, e);
    }
    push(h, a, rank);
}

void gort__lockrank_record(const void *l, uint32_t rank)
{
    check_ranked(l, rank);
    push(&held, (uintptr_t)l, rank);
}

/* The entry that holds l, or NULL: one that names it, else a run whose
 * span takes it in (a lock of another kind may lie inside a span, so
 * exact entries are looked at first). */
static struct heldlock *find(struct heldlist *h, uintptr_t a)
{
    for (uint32_t i = h->n; i-- > 0;) {
        struct heldlock *e = &h->l[i];
        if (a == e->lo || a == e->hi)
            return e;
    }
    for (uint32_t i = h->n; i-- > 0;) {
        struct heldlock *e = &h->l[i];
        if (a > e->lo && a < e->hi)
            return e;
    }
    return NULL;
}

void gort__lockrank_release(const void *l)
{
    struct heldlist *h = &held;
    struct heldlock *e = find(h, (uintptr_t)l);
    if (!e)
        gort__throw("lock rank: unlock of lock %p, which this thread does "
                    "not hold",
                    l);
    if (--e->n > 0)
        return;
    struct heldlock *end = &h->l[h->n];
    memmove(e, e + 1, (size_t)(end - (e + 1)) * sizeof *e);
    h->n--;
}

void gort__lockrank_held(const void *l, uint32_t rank, const char *fn)
{
    const struct heldlock *e = find(&held, (uintptr_t)l);
    if (!e || e->rank != rank)
        gort__throw("%s: called without holding %s %p", fn, rankname(rank),
                    l);
}
