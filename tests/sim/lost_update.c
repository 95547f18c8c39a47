/* SPDX-License-Identifier: MIT */
/*
 * lost_update.c - an unlocked read-modify-write of a counter.
 *
 * Two workers count requests in a shared counter: they read it, record
 * the request in a statistics table guarded by its own mutex, then store
 * the value read plus one.  Taking that mutex is a point where the
 * scheduler may run the other worker; its increments made in between
 * are then overwritten (lost updates).  The end checks the total.
 *
 * The fix: an atomic add (atomic_fetch_add), or the counter under the
 * statistics mutex too.
 */
#include "planted.h"

#include <stdatomic.h>

#define PER_WORKER 100

static atomic_long counter;
static gort_mutex stats_mu = GORT_MUTEX_INIT;
static long stats[2];
static gort_waitgroup wg;

static void worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < PER_WORKER; i++) {
        /* BUG: a load and a store, not one atomic add. */
        long v = atomic_load_explicit(&counter, memory_order_relaxed);
        gort_mutex_lock(&stats_mu);
        stats[id]++;
        gort_mutex_unlock(&stats_mu);
        atomic_store_explicit(&counter, v + 1, memory_order_relaxed);
    }
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, 2);
    gort_go(worker, (void *)0);
    gort_go(worker, (void *)1);
    gort_waitgroup_wait(&wg);
    long n = atomic_load(&counter);
    NOTE("counter=%ld", n);
    BUG_IF_NOT(n == 2 * PER_WORKER, "%ld of %d increments were lost",
               2 * PER_WORKER - n, 2 * PER_WORKER);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
