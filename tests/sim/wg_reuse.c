/* SPDX-License-Identifier: MIT */
/*
 * wg_reuse.c - a WaitGroup reused before a previous Wait has returned.
 *
 * Each round runs two workers counted by one WaitGroup, which the main
 * goroutine and a reporter goroutine both wait on.  As soon as its own
 * Wait returns, the main goroutine starts the next round with the same
 * WaitGroup.  When it adds to the counter before the reporter's Wait has
 * returned (both were woken by the last Done, and the main goroutine ran
 * first), the reporter finds the counter raised again: gort stops the
 * program with "sync: WaitGroup is reused before previous Wait has
 * returned".
 *
 * The fix: a WaitGroup per round, or the next round only after the
 * reporter has reported (it sends on a channel the main goroutine
 * receives from before reusing the WaitGroup).
 */
#include "planted.h"

#define ROUNDS 20

static gort_waitgroup wg;
static gort_chan *reports;
static int work[2];

static void worker(void *arg)
{
    int *w = arg;
    (*w)++;
    gort_waitgroup_done(&wg);
}

static void reporter(void *arg)
{
    int round = (int)(intptr_t)arg;
    gort_waitgroup_wait(&wg);
    NOTE("round %d reported", round);
    gort_chan_send(reports, &round);
}

static void run(void *arg)
{
    (void)arg;
    if (gort_chan_make(&reports, sizeof(int), ROUNDS) != 0)
        abort();
    for (int r = 0; r < ROUNDS; r++) {
        gort_waitgroup_add(&wg, 2);
        gort_go(worker, &work[0]);
        gort_go(worker, &work[1]);
        gort_go(reporter, (void *)(intptr_t)r);
        /* BUG: the reporter's Wait may not have returned yet when the
         * next round adds to the same WaitGroup. */
        gort_waitgroup_wait(&wg);
    }
    for (int r = 0; r < ROUNDS; r++)
        gort_chan_recv(reports, NULL);
    NOTE("%d rounds, work %d %d", ROUNDS, work[0], work[1]);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
