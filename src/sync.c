/*
 * sync.c - synchronisation for goroutines built on sema.c.  Mirrors Go's
 * sync package.  Everything here parks the goroutine, never the thread.
 *
 * WaitGroup (sync/waitgroup.go): one 64-bit state word, the counter in the
 * high 32 bits and the number of waiters in the low 32, plus a semaphore
 * the waiters sleep on.  Add that brings the counter to zero resets the
 * state and releases every waiter.
 *
 * Invariants:
 *   - The counter never goes negative (fatal, as Go panics).
 *   - Waiters are only added while the counter is positive.
 */
#include "runtime.h"

void gort_waitgroup_add(gort_waitgroup *wg, int delta)
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

void gort_waitgroup_done(gort_waitgroup *wg)
{
    gort_waitgroup_add(wg, -1);
}

void gort_waitgroup_wait(gort_waitgroup *wg)
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
