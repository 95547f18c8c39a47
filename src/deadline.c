/* SPDX-License-Identifier: MIT */
/*
 * deadline.c - blocking calls with a deadline (gort.h's gort_deadline):
 * channel send and receive, select, sleep, and the descriptor deadline in
 * the same type.
 *
 * A send or a receive (and a select of one case) waits on its channel
 * with the G's own deadline timer (chan.c, "Waiting with a deadline").  A
 * select of several cases waits as a select with one case more: a
 * receive from the G's channel timer (timerchan.c), armed for the
 * deadline before and stopped after.  The timer is made on the G's first
 * such wait and kept with the G (Gs are never freed; the next goroutine
 * on the G uses it too), so a wait allocates nothing, where Go's
 * time.After in a select loop makes a timer and a channel each time.
 * Stopping a channel timer empties its channel (Go 1.23's semantics):
 * the next wait never sees a stale firing.  Whichever comes first wins,
 * by select's own claim (select.c): a value that arrives as the deadline
 * passes is either taken, and the timer stopped, or left for the next
 * receiver.
 */
#include "chan.h"
#include "defs.h"
#include "proc.h"
#include "san.h"
#include "sched.h"

#include <errno.h>

/* Whether d is none: wait as long as it takes. */
static bool forever(gort_deadline d)
{
    return d.at == 0 || d.at == INT64_MAX;
}

/* The calling G's timer armed for at: its channel, or NULL when the
 * timer cannot be made. */
static gort_chan *arm(int64_t at)
{
    struct gdl *dl = gort__gdl(gort__getg());
    if (!dl)
        return NULL;
    int64_t ns = at - gort_nanotime();
    if (!dl->sel) {
        if (gort_timer_make(&dl->sel, ns, NULL, NULL) < 0)
            return NULL;
    } else {
        gort_timer_reset(dl->sel, ns);
    }
    return gort_timer_chan(dl->sel);
}

/* Stop the calling G's timer: the channel is empty after. */
static void disarm(void)
{
    gort_timer_stop(gort__getg()->dl->sel);
}

int gort_select_until(gort_case *cases, int ncases, gort_deadline d)
{
    GORT_SAN_SCOPE();
    if (ncases < 0 || ncases > 65535 || (!cases && ncases > 0))
        return -EINVAL;
    bool dflt = false;
    for (int i = 0; i < ncases; i++)
        dflt |= cases[i].dir == GORT_CASE_DEFAULT;
    if (dflt || forever(d))
        return gort_select(cases, ncases);
    struct m *mp = gort__need_goroutine("gort_select_until");
    if (ncases == 1 && (cases[0].dir == GORT_CASE_RECV ||
                        cases[0].dir == GORT_CASE_SEND)) {
        /* One case: the channel's own wait with a deadline. */
        bool ok = false;
        int r = cases[0].dir == GORT_CASE_RECV
                    ? gort__chanrecv_until(cases[0].ch, cases[0].elem, &ok,
                                           d.at)
                    : gort__chansend_until(cases[0].ch, cases[0].elem, d.at);
        if (r < 0)
            return r;
        cases[0].ok = ok;
        return 0;
    }
    /* Passed: the cases that can go on now, else a default. */
    bool passed = d.at <= gort_nanotime();
    gort_case extra = {.dir = GORT_CASE_DEFAULT};
    if (!passed) {
        /* The G's timer goes on its P: a thread gort did not create has
         * none (its gort_timer_make would fail, with -EPERM). */
        if (GORT_UNLIKELY(mp->curg->foreign))
            gort__fatal_no_goroutine("gort_select_until");
        extra.dir = GORT_CASE_RECV;
        if (!(extra.ch = arm(d.at)))
            return -ENOMEM;
    }
    int r = gort__select_extra(cases, ncases, extra);
    /* The timer's value was received when its case won: nothing pending. */
    if (!passed && r != ncases)
        disarm();
    return r == ncases ? -ETIMEDOUT : r;
}

int gort_chan_send_until(gort_chan *ch, const void *elem, gort_deadline d)
{
    GORT_SAN_SCOPE();
    if (forever(d)) {
        gort_chan_send(ch, elem);
        return 0;
    }
    int r = gort__chansend_until(ch, elem, d.at);
    return r < 0 ? r : 0;
}

int gort_chan_recv_until(gort_chan *ch, void *elem, gort_deadline d)
{
    GORT_SAN_SCOPE();
    if (forever(d))
        return gort_chan_recv(ch, elem);
    bool ok = false;
    int r = gort__chanrecv_until(ch, elem, &ok, d.at);
    return r < 0 ? r : ok;
}

void gort_sleep_until(gort_deadline d)
{
    GORT_SAN_SCOPE();
    if (!forever(d))
        gort_sleep(d.at - gort_nanotime());
}

int gort_fd_deadline(int fd, unsigned dirs, gort_deadline d)
{
    GORT_SAN_SCOPE();
    if (dirs == 0 || (dirs & ~(unsigned)(GORT_FD_READ | GORT_FD_WRITE)))
        return -EINVAL;
    int mode = (dirs & GORT_FD_READ ? 'r' : 0) + (dirs & GORT_FD_WRITE ? 'w' : 0);
    return gort_fd_set_deadline(fd, mode, forever(d) ? 0 : d.at);
}

