/* SPDX-License-Identifier: MIT */
/*
 * spin_update.c - a lost update in code that never calls gort.
 *
 * Two workers bump a shared counter: each reads it, calls a function of
 * the program's (a stand-in for real work), and stores the value read
 * plus one.  Nothing in the loop calls gort, so without preemption
 * points the simulation runs each worker's loop to its end and never
 * interleaves them.  Built with -finstrument-functions and
 * gort_simpoints.h (sim_spin_update), every function entry is a point,
 * and the workers' updates interleave and get lost; built plain
 * (sim_spin_update_plain), the same program passes every seed: that
 * pair is what shows the points at work.
 *
 * The fix: an atomic add.
 */
#include "planted.h"

#ifdef WITH_SIMPOINTS
#include <gort_simpoints.h>
#endif

#include <stdatomic.h>

#define PER_WORKER 200

static atomic_long counter;
static atomic_long work;
static gort_waitgroup wg;

/* The work between the read and the store: a function entry. */
static __attribute__((noinline)) void step(long v)
{
    atomic_fetch_add_explicit(&work, v & 1, memory_order_relaxed);
}

static void worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_WORKER; i++) {
        /* BUG: a load and a store, not one atomic add. */
        long v = atomic_load_explicit(&counter, memory_order_relaxed);
        step(v);
        atomic_store_explicit(&counter, v + 1, memory_order_relaxed);
    }
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, 2);
    gort_go(worker, NULL);
    gort_go(worker, NULL);
    gort_waitgroup_wait(&wg);
    long n = atomic_load(&counter);
    NOTE("counter=%ld", n);
    BUG_IF_NOT(n == 2 * PER_WORKER, "%ld of %d increments were lost",
               2 * PER_WORKER - n, 2 * PER_WORKER);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
