/* SPDX-License-Identifier: MIT */
/*
 * timerchan.c - the timers a program makes: channel timers (Go's
 * NewTimer and After, time/sleep.go) and function timers (AfterFunc), on
 * top of the scheduler's timers (time.c).  A channel timer's function
 * sends the time on a channel of capacity 1; a function timer's starts
 * a goroutine.  As in Go 1.23, stop and reset empty the channel, so no
 * stale value is received after them.
 *
 * Lock order: the timer's mu, then a P's timers lock, then the channel's
 * lock (the function of a channel timer sends), then sched.lock.
 */
#include "chan.h"
#include "fatal.h"
#include "lock_futex.h"
#include "newproc.h"
#include "preempt.h"
#include "san.h"
#include "sched.h"
#include "timers.h"

/* ---------------------------------------------------------------------------
 * User timers: channel timers (NewTimer, After) and function timers
 * (AfterFunc).
 * ------------------------------------------------------------------------- */

struct gort_timer {
    struct gtimer t;
    struct gort_chan *ch;  /* channel timers: cap 1, int64_t */
    void (*fn)(void *);    /* function timers */
    void *arg;
};

/* ThreadSanitizer (san.c): making or resetting a timer happens before
 * its firing: the value on its channel, its function's goroutine. */
static void chan_fire(struct gtimer *t, int64_t now)
{
    struct gort_timer *ut = (struct gort_timer *)t;
    gort__san_acquire(ut);
    /* Non-blocking, as Go's sendTime: a value nobody took is dropped. */
    gort__chansend(gort__getm(), ut->ch, &now, false,
                   gort__san & GORT_SAN_TSAN);
}

static void func_fire(struct gtimer *t, int64_t now)
{
    (void)now;
    struct gort_timer *ut = (struct gort_timer *)t;
    gort__san_acquire(ut);
    if (gort__newproc_sys(ut->fn, ut->arg) < 0)
        gort__throw("timer: out of memory starting its function");
}

static int64_t deadline(int64_t ns)
{
    int64_t now = gort_nanotime();
    if (ns < 0)
        ns = 0;
    return now + ns < now ? INT64_MAX : now + ns;
}

/* Empty a channel timer's buffer: after stop or reset, no stale value.
 * True when a value was there: the timer fired but nobody received it,
 * which counts as not fired (Go 1.23's synchronous timer channels). */
static bool chan_drain(struct gort_timer *ut)
{
    if (!ut->ch)
        return false;
    bool had = false;
    gort__spinlock(&ut->ch->lock);
    if (ut->ch->qcount > 0) {
        gort__chan_bufrecv(ut->ch, NULL);
        had = true;
    }
    gort__spinunlock(&ut->ch->lock);
    return had;
}

static int timer_make(gort_timer **tp, int64_t ns, int64_t period,
                      void (*fn)(void *), void *arg);

int gort_timer_make(gort_timer **tp, int64_t ns, void (*fn)(void *),
                    void *arg)
{
    GORT_SAN_SCOPE();
    return timer_make(tp, ns, 0, fn, arg);
}

int gort_ticker_make(gort_timer **tp, int64_t ns)
{
    GORT_SAN_SCOPE();
    if (ns <= 0)
        return -EINVAL;
    return timer_make(tp, ns, ns, NULL, NULL);
}

static int timer_make(gort_timer **tp, int64_t ns, int64_t period,
                      void (*fn)(void *), void *arg)
{
    if (!tp)
        return -EINVAL;
    struct m *mp = gort__getm();
    if (!mp || !mp->p || !mp->curg)
        return -EPERM;
    struct gort_timer *ut = gort__calloc(1, sizeof *ut);
    if (!ut)
        return -ENOMEM;
    gort__lock_init(&ut->t.mu, LOCKRANK_TIMER);
    if (!fn) {
        int r = gort__chan_alloc(&ut->ch, sizeof(int64_t), 1);
        if (r < 0) {
            gort__free(ut);
            return r;
        }
        ut->ch->timer = ut;
        ut->ch->timer_owned = true;
        ut->t.f = chan_fire;
    } else {
        ut->t.f = func_fire;
        ut->fn = fn;
        ut->arg = arg;
    }
    ut->t.idx = -1;
    ut->t.period = period;
    ut->t.when = deadline(ns);
    /* The P's heap may have to grow for it: -ENOMEM here, not the throw
     * of a heap that cannot grow. */
    struct p *pp = gort__timer_p("gort_timer_make");
    if (gort__timer_reserve(pp) != 0) {
        gort__free(ut->ch);
        gort__free(ut);
        return -ENOMEM;
    }
    gort__san_release(ut);
    gort__lock(&ut->t.mu);
    gort__timer_add(pp, &ut->t);
    gort__unlock(&ut->t.mu);
    *tp = ut;
    return 0;
}

gort_chan *gort_timer_chan(gort_timer *t)
{
    return t ? t->ch : NULL;
}

bool gort_timer_stop(gort_timer *ut)
{
    GORT_SAN_SCOPE();
    if (!ut)
        return false;
    gort__lock(&ut->t.mu);
    bool pending = gort__timer_remove(&ut->t);
    pending |= chan_drain(ut);
    gort__unlock(&ut->t.mu);
    gort__preempt_check();
    return pending;
}

/* who: the public call, for the fatal error outside a goroutine. */
static bool timer_reset(gort_timer *ut, int64_t ns, int64_t period,
                        const char *who);

bool gort_timer_reset(gort_timer *ut, int64_t ns)
{
    GORT_SAN_SCOPE();
    return ut ? timer_reset(ut, ns, ut->t.period, "gort_timer_reset") : false;
}

int gort_ticker_reset(gort_timer *ut, int64_t ns)
{
    GORT_SAN_SCOPE();
    if (!ut || !ut->ch || ns <= 0)
        return -EINVAL;
    timer_reset(ut, ns, ns, "gort_ticker_reset");
    return 0;
}

static bool timer_reset(gort_timer *ut, int64_t ns, int64_t period,
                        const char *who)
{
    gort__timer_p(who); /* fatal outside a goroutine */
    gort__san_release(ut);
    gort__lock(&ut->t.mu);
    bool pending = gort__timer_remove(&ut->t);
    pending |= chan_drain(ut);
    ut->t.when = deadline(ns);
    ut->t.period = period;
    /* Our P again: taking locks never moves a goroutine. */
    gort__timer_add(gort__timer_p(who), &ut->t);
    gort__unlock(&ut->t.mu);
    gort__preempt_check();
    return pending;
}

/* Stop ut; free it (and its channel) unless goroutines wait on the
 * channel. */
static int timer_free(struct gort_timer *ut)
{
    if (ut->ch) {
        gort__spinlock(&ut->ch->lock);
        bool busy = ut->ch->recvq.first || ut->ch->sendq.first;
        gort__spinunlock(&ut->ch->lock);
        if (busy)
            return -EBUSY;
    }
    gort__lock(&ut->t.mu);
    gort__timer_remove(&ut->t);
    gort__unlock(&ut->t.mu);
    if (ut->ch)
        gort__free(ut->ch);
    gort__free(ut);
    return 0;
}

int gort_timer_free(gort_timer *ut)
{
    GORT_SAN_SCOPE();
    return ut ? timer_free(ut) : 0;
}

gort_chan *gort_after(int64_t ns)
{
    GORT_SAN_SCOPE();
    gort_timer *ut;
    if (gort_timer_make(&ut, ns, NULL, NULL) < 0)
        return NULL;
    ut->ch->timer_owned = false; /* the channel owns the timer */
    return ut->ch;
}

int gort__timer_free_chan(struct gort_chan *c)
{
    return timer_free(c->timer);
}

void gort__timer_discard(struct gort_timer *ut)
{
    gort__free(ut->ch);
    gort__free(ut);
}
