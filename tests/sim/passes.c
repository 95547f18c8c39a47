/* SPDX-License-Identifier: MIT */
/*
 * passes.c - the correct program beside the planted bugs, for
 * gort-shake's own test: lost_update.c with an atomic add, so no
 * interleaving loses an increment.  It exits 0 on every seed.
 */
#include "planted.h"

#include <stdatomic.h>

#define PER_WORKER 20

static atomic_long counter;
static gort_mutex stats_mu = GORT_MUTEX_INIT;
static long stats[2];
static gort_waitgroup wg;

static void worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < PER_WORKER; i++) {
        gort_mutex_lock(&stats_mu);
        stats[id]++;
        gort_mutex_unlock(&stats_mu);
        atomic_fetch_add(&counter, 1);
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
    BUG_IF_NOT(n == 2 * PER_WORKER, "%ld increments lost", 2 * PER_WORKER - n);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
