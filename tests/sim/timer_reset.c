/* SPDX-License-Identifier: MIT */
/*
 * timer_reset.c - a timer reset racing the timer's own expiry.
 *
 * A session closes itself when it has been idle for TIMEOUT: an
 * AfterFunc timer runs idle_close.  A request that arrives pushes the
 * timeout back with gort_timer_reset, after checking that the session is
 * still open.  The request comes exactly as the timeout passes: when the
 * timer has fired but its function has not run yet, the session still
 * looks open, the reset (whose result is ignored) cannot take back the
 * firing, and idle_close then closes the session under the running
 * request.  idle_close checks that no request is in progress.
 *
 * The fix: stop the timer first and believe its answer: when
 * gort_timer_stop returns false the timeout has fired and the session
 * belongs to idle_close; only after a true answer handle the request and
 * arm the timer again.
 */
#include "planted.h"

#include <stdatomic.h>

#define MS 1000000LL
#define TIMEOUT (10 * MS)

static atomic_int closed, busy, handled;
static gort_timer *idle;
static gort_waitgroup wg;

static void idle_close(void *arg)
{
    (void)arg;
    atomic_store(&closed, 1);
    BUG_IF_NOT(!atomic_load(&busy), "the session was closed while a "
                                    "request was using it");
}

static void client(void *arg)
{
    (void)arg;
    gort_sleep(TIMEOUT); /* the request arrives as the timeout passes */
    if (!atomic_load(&closed)) {
        /* BUG: the timer may have fired already; reset does not undo
         * that, and its result is ignored. */
        gort_timer_reset(idle, TIMEOUT);
        atomic_store(&busy, 1);
        gort_sleep(MS); /* handle the request */
        atomic_store(&busy, 0);
        atomic_store(&handled, 1);
    }
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    if (gort_timer_make(&idle, TIMEOUT, idle_close, NULL) != 0)
        abort();
    gort_waitgroup_add(&wg, 1);
    gort_go(client, NULL);
    gort_waitgroup_wait(&wg);
    /* Let a pending timeout fire before the end. */
    gort_sleep(2 * TIMEOUT);
    NOTE("handled=%d closed=%d", atomic_load(&handled), atomic_load(&closed));
    gort_timer_free(idle);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
