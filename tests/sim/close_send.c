/* SPDX-License-Identifier: MIT */
/*
 * close_send.c - a channel close racing a send.
 *
 * Each round four requests run at once and send their answers on a
 * buffered channel; the collector takes the first two answers, then sets
 * a "stopping" flag and closes the channel.  A request tests the flag
 * before sending: when the close comes between its test and its send,
 * the send is on a closed channel, which is a fatal error.
 *
 * The fix: never close a channel other goroutines still send on; here
 * the requests would select on their send and on a "stop" channel that
 * the collector closes, and the answers channel would not be closed at
 * all.
 */
#include "planted.h"

#include <stdatomic.h>

#define ROUNDS 40
#define REQUESTS 4

static atomic_int stopping;
static gort_waitgroup wg;

static gort_chan *answers;

static void request(void *arg)
{
    int id = (int)(intptr_t)arg;
    /* BUG: the collector may close the channel after this test. */
    if (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        gort_chan_send(answers, &id);
        NOTE("request %d answered", id);
    }
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    for (int r = 0; r < ROUNDS; r++) {
        if (gort_chan_make(&answers, sizeof(int), REQUESTS) != 0)
            abort();
        atomic_store_explicit(&stopping, 0, memory_order_relaxed);
        gort_waitgroup_add(&wg, REQUESTS);
        for (int i = 0; i < REQUESTS; i++)
            gort_go(request, (void *)(intptr_t)(r * REQUESTS + i));
        int v;
        gort_chan_recv(answers, &v);
        gort_chan_recv(answers, &v);
        atomic_store_explicit(&stopping, 1, memory_order_relaxed);
        gort_chan_close(answers);
        gort_waitgroup_wait(&wg);
        gort_chan_free(answers);
    }
    NOTE("%d rounds", ROUNDS);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
