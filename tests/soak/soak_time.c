/* SPDX-License-Identifier: MIT */
/*
 * soak_time.c - sleeps and timers under the soak.
 *
 *   sleep      gort_sleep of 0 to 20 ms: never early; how late is recorded
 *   yield      gort_gosched, timed: how long a goroutine sent to the
 *              global run queue waits to run again
 *   after      gort_after received (directly or in a select beside a NULL
 *              channel's case) or freed while pending: the value is the
 *              firing time, not before the due time nor after the receive
 *   timer      channel timers through the sequences whose results Go 1.23
 *              fixes: stop and reset before and after firing, a fired
 *              value never received discarded by reset and by stop (no
 *              stale value afterwards), reset earlier and later
 *   afterfunc  function timers stopped and reset at random while they
 *              fire: each function runs exactly once per arming that no
 *              stop or reset cancelled (counted from the calls' results),
 *              never early, never after the count is complete
 *
 * Lateness goes to the statistics and never fails the run: the machine
 * may hold any thread off its CPU.  Early wake-ups fail it.
 */
#include "soak.h"

#include <stdlib.h>
#include <string.h>

/* A duration for a sleep or timer: 0, up to 100 us, up to 2 ms or up to
 * 20 ms, each class a quarter of the time. */
static int64_t pick_duration(struct soak_worker *w)
{
    switch (soak_rand(w) % 4) {
    case 0:
        return soak_one_in(w, 2) ? 0 : -1;
    case 1:
        return soak_between(w, 1, 100 * SOAK_US);
    case 2:
        return soak_between(w, 100 * SOAK_US, 2 * SOAK_MS);
    default:
        return soak_between(w, 2 * SOAK_MS, 20 * SOAK_MS);
    }
}

/* ---------------------------------------------------------------------------
 * sleep
 * ------------------------------------------------------------------------- */

void soak_sleep(struct soak_worker *w)
{
    while (soak_running()) {
        int64_t d = pick_duration(w);
        int64_t t0 = gort_nanotime();
        gort_sleep(d);
        int64_t slept = gort_nanotime() - t0;
        if (d > 0 && slept < d)
            soak_fail(w, "gort_sleep(%lld) returned after %lld ns",
                      (long long)d, (long long)slept);
        if (d > 0)
            soak_lat_add(&soak_stats.sleep, slept - d);
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * yield
 * ------------------------------------------------------------------------- */

void soak_yield(struct soak_worker *w)
{
    while (soak_running()) {
        int64_t t0 = gort_nanotime();
        gort_gosched();
        soak_lat_add(&soak_stats.yield, gort_nanotime() - t0);
        soak_progress(w);
        gort_sleep(soak_between(w, 0, SOAK_MS));
    }
}

/* ---------------------------------------------------------------------------
 * after
 * ------------------------------------------------------------------------- */

/* Receive the value of an after channel made at t0 for d ns, directly or
 * through a select, and check it. */
static void after_receive(struct soak_worker *w, gort_chan *ch, int64_t t0,
                          int64_t d)
{
    int64_t v = 0;
    bool ok;
    if (soak_one_in(w, 2)) {
        ok = gort_chan_recv(ch, &v);
    } else {
        gort_case c[2] = {{.ch = NULL, .dir = GORT_CASE_RECV},
                          {.ch = ch, .dir = GORT_CASE_RECV, .elem = &v}};
        int idx = gort_select(c, 2);
        if (idx != 1)
            soak_fail(w, "select on a NULL channel and an after channel "
                         "returned %d",
                      idx);
        ok = c[1].ok;
    }
    int64_t now = gort_nanotime();
    int64_t due = t0 + (d > 0 ? d : 0);
    if (!ok || v < due || v > now)
        soak_fail(w, "gort_after(%lld): ok %d, value at +%lld ns, received "
                     "at +%lld ns",
                  (long long)d, ok, (long long)(v - t0),
                  (long long)(now - t0));
    soak_lat_add(&soak_stats.after, now - due);
}

void soak_after(struct soak_worker *w)
{
    while (soak_running()) {
        bool abandon = soak_one_in(w, 4);
        int64_t d = abandon ? soak_between(w, 10 * SOAK_MS, 500 * SOAK_MS)
                            : pick_duration(w);
        int64_t t0 = gort_nanotime();
        gort_chan *ch = gort_after(d);
        if (ch == NULL)
            soak_fail(w, "gort_after(%lld) returned NULL", (long long)d);
        if (abandon)
            gort_sleep(soak_between(w, 0, 5 * SOAK_MS));
        else
            after_receive(w, ch, t0, d);
        soak_chan_free(w, ch); /* stops a pending timer */
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * timer
 * ------------------------------------------------------------------------- */

/* Receive from t's channel and check the value: due no earlier than
 * `due`, not after now. */
static void timer_receive(struct soak_worker *w, gort_timer *t, int64_t due,
                          const char *what)
{
    int64_t v = 0;
    if (!gort_chan_recv(gort_timer_chan(t), &v))
        soak_fail(w, "%s: the timer's channel is closed", what);
    int64_t now = gort_nanotime();
    if (v < due || v > now)
        soak_fail(w, "%s: value %lld ns from its due time, received %lld ns "
                     "after it",
                  what, (long long)(v - due), (long long)(now - due));
    soak_lat_add(&soak_stats.timer, now - due);
}

/* Nothing may be waiting in t's channel. */
static void timer_empty(struct soak_worker *w, gort_timer *t, const char *what)
{
    int64_t v;
    bool ok;
    if (gort_chan_tryrecv(gort_timer_chan(t), &v, &ok))
        soak_fail(w, "%s: a value (%lld, ok %d) arrived after it", what,
                  (long long)v, ok);
}

static void timer_expect(struct soak_worker *w, bool got, bool want,
                         const char *what)
{
    if (got != want)
        soak_fail(w, "%s returned %d, want %d", what, got, want);
}

/* Fire, then stop and reset after the value was received. */
static void timer_fired(struct soak_worker *w, gort_timer *t, int64_t t0,
                        int64_t d)
{
    timer_receive(w, t, t0 + d, "fired timer");
    timer_expect(w, gort_timer_stop(t), false, "stop after receiving");
    int64_t d2 = pick_duration(w), t1 = gort_nanotime();
    timer_expect(w, gort_timer_reset(t, d2), false, "reset after receiving");
    timer_receive(w, t, t1 + (d2 > 0 ? d2 : 0), "reset after receiving");
}

/* Stop before firing: nothing arrives, reset arms it again. */
static void timer_stopped(struct soak_worker *w, gort_timer *t)
{
    gort_sleep(soak_between(w, 0, SOAK_MS));
    timer_expect(w, gort_timer_stop(t), true, "stop of a pending timer");
    gort_sleep(soak_between(w, 0, SOAK_MS));
    timer_empty(w, t, "stop of a pending timer");
    int64_t d2 = pick_duration(w), t1 = gort_nanotime();
    timer_expect(w, gort_timer_reset(t, d2), false, "reset after stop");
    timer_receive(w, t, t1 + (d2 > 0 ? d2 : 0), "reset after stop");
}

/* The due time passes with nobody receiving; reset (or stop) discards the
 * value, whether or not it was sent yet, and reports the timer pending. */
static void timer_unreceived(struct soak_worker *w, gort_timer *t, int64_t d)
{
    gort_sleep(d + soak_between(w, 0, 2 * SOAK_MS));
    if (soak_one_in(w, 2)) {
        timer_expect(w, gort_timer_stop(t), true,
                     "stop after the due time, value not received");
        gort_sleep(soak_between(w, 0, 2 * SOAK_MS));
        timer_empty(w, t, "stop after the due time");
        return;
    }
    int64_t d2 = pick_duration(w), t1 = gort_nanotime();
    timer_expect(w, gort_timer_reset(t, d2), true,
                 "reset after the due time, value not received");
    timer_receive(w, t, t1 + (d2 > 0 ? d2 : 0),
                  "reset after the due time (a stale value?)");
}

void soak_timer(struct soak_worker *w)
{
    while (soak_running()) {
        int scenario = (int)(soak_rand(w) % 4);
        bool far = scenario == 1 || scenario == 3;
        int64_t d = far ? 10 * SOAK_S : pick_duration(w);
        int64_t t0 = gort_nanotime();
        gort_timer *t = NULL;
        SOAK_OK(w, gort_timer_make(&t, d, NULL, NULL));
        if (gort_timer_chan(t) == NULL)
            soak_fail(w, "a channel timer has no channel");
        if (scenario == 0) {
            timer_fired(w, t, t0, d > 0 ? d : 0);
        } else if (scenario == 1) {
            timer_stopped(w, t);
        } else if (scenario == 2) {
            timer_unreceived(w, t, d > 0 ? d : 0);
        } else {
            /* Reset a far timer to a near time. */
            int64_t d2 = pick_duration(w), t1 = gort_nanotime();
            timer_expect(w, gort_timer_reset(t, d2), true,
                         "reset of a pending timer");
            timer_receive(w, t, t1 + (d2 > 0 ? d2 : 0), "reset earlier");
        }
        SOAK_OK(w, gort_timer_free(t));
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * afterfunc
 * ------------------------------------------------------------------------- */

#define AF_MAX 32

struct af_timer {
    struct soak_worker *w;
    gort_timer *t;
    int runs;        /* calls of the function: each adds with release
                        after its reads, the worker loads with acquire
                        before it reuses the timer's slot */
    int resets;      /* resets so far; stored with release before each */
    int64_t due;     /* due time of the first arming, set before it */
};

static void af_fn(void *arg)
{
    struct af_timer *a = arg;
    int64_t now = gort_nanotime();
    /* Acquire pairs with the release before a reset: a function of a
     * later arming sees the reset and skips the early check, whose due
     * time belongs to the first arming. */
    if (__atomic_load_n(&a->resets, __ATOMIC_ACQUIRE) == 0) {
        if (now < a->due)
            soak_fail(a->w, "a function timer ran %lld ns early",
                      (long long)(a->due - now));
        soak_lat_add(&soak_stats.afterfunc, now - a->due);
    }
    __atomic_add_fetch(&a->runs, 1, __ATOMIC_RELEASE);
}

/* Stop or reset timers at random for a while; returns the armings that
 * no call cancelled, that is the runs to expect. */
static int af_churn(struct soak_worker *w, struct af_timer *af, int k)
{
    int armed = k, cancelled = 0;
    int ops = (int)soak_between(w, 0, 2 * k);
    for (int j = 0; j < ops; j++) {
        struct af_timer *a = &af[soak_rand(w) % (uint64_t)k];
        if (soak_one_in(w, 3))
            gort_sleep(soak_between(w, 0, SOAK_MS));
        if (soak_one_in(w, 2)) {
            cancelled += gort_timer_stop(a->t);
            continue;
        }
        __atomic_add_fetch(&a->resets, 1, __ATOMIC_RELEASE);
        cancelled += gort_timer_reset(a->t, pick_duration(w));
        armed++;
    }
    return armed - cancelled;
}

static int af_runs(struct af_timer *af, int k)
{
    int runs = 0;
    for (int i = 0; i < k; i++)
        runs += __atomic_load_n(&af[i].runs, __ATOMIC_ACQUIRE);
    return runs;
}

void soak_afterfunc(struct soak_worker *w)
{
    struct af_timer *af = soak_alloc(w, sizeof *af * AF_MAX);
    while (soak_running()) {
        int k = (int)soak_between(w, 1, AF_MAX);
        memset(af, 0, sizeof *af * AF_MAX);
        for (int i = 0; i < k; i++) {
            int64_t d = pick_duration(w);
            af[i].w = w;
            af[i].due = gort_nanotime() + (d > 0 ? d : 0);
            SOAK_OK(w, gort_timer_make(&af[i].t, d, af_fn, &af[i]));
            if (gort_timer_chan(af[i].t) != NULL)
                soak_fail(w, "a function timer has a channel");
        }
        int want = af_churn(w, af, k);
        /* Every arming left is due within 20 ms; allow for a slow machine. */
        int64_t end = gort_nanotime() + soak_patience();
        while (af_runs(af, k) < want && gort_nanotime() < end)
            gort_sleep(SOAK_MS);
        gort_sleep(25 * SOAK_MS); /* past every due time: no extra run */
        int runs = af_runs(af, k);
        if (runs != want)
            soak_fail(w, "%d function timers ran %d times, want %d (armings "
                         "not cancelled by stop or reset)",
                      k, runs, want);
        for (int i = 0; i < k; i++)
            SOAK_OK(w, gort_timer_free(af[i].t));
        soak_progress(w);
    }
    free(af);
}
