/* SPDX-License-Identifier: MIT */
/*
 * double_close.c - a channel closed twice by two owners.
 *
 * A job's "done" channel is closed to tell everyone the job is over.
 * The worker closes it when it has finished; the supervisor closes it
 * when a client cancels the job, to stop it early.  The client waits as
 * long as the job usually takes and cancels it if it has not finished by
 * then.  Both closers believe they are the only one.  When the cancel
 * comes before the worker's close, or together with it and the
 * supervisor's select picks the cancel, the channel is closed twice,
 * which is a fatal error.
 *
 * The fix: one owner closes.  The supervisor would close a separate
 * "cancel" channel that the worker selects on, and only the worker
 * would close "done".
 */
#include "planted.h"

#define ROUNDS 2
#define MS 1000000LL
#define JOB MS      /* how long the job takes */
#define PATIENCE MS /* how long the client waits for it */

static gort_waitgroup wg;

struct job {
    gort_chan *done, *cancel;
};

static void worker(void *arg)
{
    struct job *j = arg;
    gort_sleep(JOB);
    /* BUG: the supervisor may have closed it already. */
    NOTE("worker closes done");
    gort_chan_close(j->done);
    gort_waitgroup_done(&wg);
}

static void client(void *arg)
{
    struct job *j = arg;
    bool ok;
    gort_sleep(PATIENCE);
    /* Cancel the job unless done is closed already. */
    if (!gort_chan_tryrecv(j->done, NULL, &ok)) {
        int why = 1;
        NOTE("client cancels");
        gort_chan_send(j->cancel, &why);
    }
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    int early = 0;
    for (int r = 0; r < ROUNDS; r++) {
        struct job j;
        if (gort_chan_make(&j.done, 0, 0) != 0 ||
            gort_chan_make(&j.cancel, sizeof(int), 1) != 0)
            abort();
        gort_waitgroup_add(&wg, 2);
        gort_go(worker, &j);
        gort_go(client, &j);
        int why;
        gort_case cases[2] = {{j.done, GORT_CASE_RECV, NULL, false},
                              {j.cancel, GORT_CASE_RECV, &why, false}};
        if (gort_select(cases, 2) == 1) {
            early++;
            NOTE("supervisor closes done");
            gort_chan_close(j.done); /* stop the job */
        }
        gort_waitgroup_wait(&wg);
        gort_chan_free(j.done);
        gort_chan_free(j.cancel);
    }
    NOTE("%d rounds, %d cancelled", ROUNDS, early);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
