/* SPDX-License-Identifier: MIT */
/*
 * lost_wakeup.c - a lost wake-up on a condition variable.
 *
 * Each round a consumer waits for a producer's "ready".  The consumer
 * tests the flag before it takes the lock: when the producer sets the
 * flag and signals between that test and the consumer's gort_cond_wait,
 * the signal finds no waiter and the consumer waits for ever.  Every
 * goroutine is then blocked and gort reports the deadlock.
 *
 * The fix: test the flag with the lock held, in a loop around the wait
 * (lock; while (!ready) gort_cond_wait(&cv); unlock).
 */
#include "planted.h"

#include <stdatomic.h>

#define ROUNDS 100

static gort_mutex mu = GORT_MUTEX_INIT;
static gort_cond cv = GORT_COND_INIT(&mu);
static atomic_int ready;
static gort_waitgroup wg;

static void consumer(void *arg)
{
    int round = (int)(intptr_t)arg;
    /* BUG: the flag is read without the lock. */
    if (!atomic_load_explicit(&ready, memory_order_relaxed)) {
        NOTE("round %d: consumer waits", round);
        gort_mutex_lock(&mu);
        gort_cond_wait(&cv); /* may wait for a signal already sent */
        gort_mutex_unlock(&mu);
    }
    gort_waitgroup_done(&wg);
}

static void producer(void *arg)
{
    (void)arg;
    gort_mutex_lock(&mu);
    atomic_store_explicit(&ready, 1, memory_order_relaxed);
    gort_cond_signal(&cv);
    gort_mutex_unlock(&mu);
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        atomic_store_explicit(&ready, 0, memory_order_relaxed);
        gort_waitgroup_add(&wg, 2);
        gort_go(consumer, (void *)(intptr_t)r);
        gort_go(producer, NULL);
        gort_waitgroup_wait(&wg);
    }
    NOTE("%d rounds", ROUNDS);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
