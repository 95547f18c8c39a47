/* SPDX-License-Identifier: MIT */
/*
 * timeouts - docs/guide.md's timeouts, the Go idioms in C.
 *
 * A context with a timeout: a producer that needs WORK_MS for each value,
 * a context that allows DEADLINE_MS; the producer and its consumer both
 * stop with the context's reason, Go's "context deadline exceeded".  It
 * runs first: the deadline's timer gives back its reference to the
 * context in a goroutine of its own, which would be discarded, and the
 * context never freed, if the program ended at once.
 *
 * A select with a timeout in a loop: two producers send 3 and 2 values,
 * and main receives from both until nothing has come for IDLE_MS
 * (gort_select_until with a fresh deadline each time round: no timer or
 * channel is made per wait, unlike Go's `case <-time.After(d)`).
 *
 * A ticker: NTICKS ticks TICK_MS apart, each checked to come no earlier
 * than its time.
 *
 * The exit status is the main goroutine's return value (gort_run).
 * Prints (always the same; tests/guide_test.sh compares it with
 * timeouts.expected):
 *
 *     context: consumer: context deadline exceeded (Connection timed out)
 *     context: producer: context deadline exceeded, after 0 values
 *     context: the deadline held: stopped no sooner than 50 ms
 *     select: 3 values from a, 2 from b, then 500 ms without one: timed out
 *     ticker: 5 ticks 10 ms apart, none early
 *
 * and exits 0; on a failure it says what failed on stderr and exits 1.
 */
#include <gort.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

/* Go's time.Millisecond: gort.h's, 64 bits wide. */
#define MS GORT_MILLISECOND
#define IDLE_MS 500
#define NTICKS 5
#define TICK_MS 10
#define DEADLINE_MS 50
#define WORK_MS 10000

/* chan int */
GORT_CHAN_OF(int_chan, int);

/* Say what failed on stderr; returns err. */
static int fail(const char *what, int err)
{
    fprintf(stderr, "timeouts: %s: %s\n", what, gort_strerror(err));
    return err;
}

/* Go's texts for a context's two reasons; gort_strerror's for the rest. */
static const char *ctx_reason(int err)
{
    if (err == -ETIMEDOUT)
        return "context deadline exceeded";
    if (err == -ECANCELED)
        return "context canceled";
    return gort_strerror(err);
}

/* ---------------------------------------------------------------------------
 * A context with a timeout.
 * ------------------------------------------------------------------------- */

struct slow {
    gort_ctx *ctx; /* a reference of the producer's own */
    int_chan out;
    int sent; /* values sent */
    int err;  /* why the producer stopped */
};

/* Sends a value every WORK_MS, until its context is done. */
static void slow_producer(void *arg)
{
    struct slow *s = arg;
    for (;;) {
        /* select {
         * case <-ctx.Done(): return ctx.Err()
         * case <-time.After(work):  // the work of a value
         * } */
        gort_case done = {gort_ctx_done(s->ctx), GORT_CASE_RECV, NULL, false};
        int r = gort_select_until(&done, 1, gort_deadline_in(WORK_MS * MS));
        if (r == 0) {
            s->err = gort_ctx_err(s->ctx);
            break;
        }
        if (r != -ETIMEDOUT) {
            s->err = r;
            break;
        }
        r = int_chan_send_ctx(s->out, s->sent, s->ctx);
        if (r < 0) {
            s->err = r;
            break;
        }
        s->sent++;
    }
    gort_ctx_release(s->ctx); /* the producer's reference */
}

static int with_timeout(void)
{
    int64_t start = gort_nanotime();
    /* ctx, cancel := context.WithTimeout(context.Background(), 50ms) */
    gort_ctx *ctx;
    int err = gort_ctx_with_deadline(gort_ctx_background(),
                                     gort_deadline_in(DEADLINE_MS * MS), &ctx);
    if (err < 0)
        return fail("context", err);
    struct slow s = {.ctx = ctx};
    err = int_chan_make(&s.out, 0);
    if (err < 0) {
        gort_ctx_cancel_release(ctx);
        return fail("make", err);
    }
    /* The producer keeps ctx past main's cancel below: it takes a
     * reference of its own, given back when it ends. */
    gort_ctx_retain(ctx);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    int64_t id = gort_waitgroup_go(&wg, slow_producer, &s);
    if (id < 0) {
        gort_ctx_release(ctx); /* the producer's, which it never got */
        gort_ctx_cancel_release(ctx);
        int_chan_free(s.out);
        return fail("start", (int)id);
    }

    int v;
    int r = int_chan_recv_ctx(s.out, &v, ctx); /* 1, 0 (closed) or ctx's */
    int64_t took = gort_nanotime() - start;
    gort_ctx_cancel_release(ctx); /* defer cancel() */
    gort_waitgroup_wait(&wg);     /* the producer is done with s */
    err = int_chan_free(s.out);
    if (err < 0)
        return fail("free", err);
    if (r != -ETIMEDOUT || s.err != -ETIMEDOUT || took < DEADLINE_MS * MS) {
        fprintf(stderr, "timeouts: consumer %d, producer %s after %lld ns\n", r,
                gort_strerror(s.err), (long long)took);
        return -EPROTO;
    }
    printf("context: consumer: %s (%s)\n", ctx_reason(r), gort_strerror(r));
    printf("context: producer: %s, after %d values\n", ctx_reason(s.err),
           s.sent);
    printf("context: the deadline held: stopped no sooner than %d ms\n",
           DEADLINE_MS);
    return 0;
}

/* ---------------------------------------------------------------------------
 * A select with a timeout in a loop.
 * ------------------------------------------------------------------------- */

struct sender {
    int_chan ch;
    int n; /* values to send */
};

static void send_values(void *arg)
{
    struct sender *s = arg;
    for (int i = 0; i < s->n; i++)
        int_chan_send(s->ch, i);
}

static int select_loop(void)
{
    struct sender a = {.n = 3}, b = {.n = 2};
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    int err = int_chan_make(&a.ch, 0);
    if (err < 0)
        return fail("make a", err);
    err = int_chan_make(&b.ch, 0);
    if (err < 0) {
        int_chan_free(a.ch);
        return fail("make b", err);
    }
    int64_t id = gort_waitgroup_go(&wg, send_values, &a);
    if (id >= 0)
        id = gort_waitgroup_go(&wg, send_values, &b);
    if (id < 0) /* a sender that did start is received from below */
        err = fail("start", (int)id);

    int from_a = 0, from_b = 0, v;
    for (;;) {
        /* select {
         * case v := <-a: ...
         * case v := <-b: ...
         * case <-time.After(IDLE_MS * time.Millisecond): ...
         * } */
        gort_case cases[] = {
            int_chan_recv_case(a.ch, &v),
            int_chan_recv_case(b.ch, &v),
        };
        int r = gort_select_until(cases, 2, gort_deadline_in(IDLE_MS * MS));
        if (r == 0) {
            from_a++;
        } else if (r == 1) {
            from_b++;
        } else if (r == -ETIMEDOUT) {
            break;
        } else {
            err = fail("select", r);
            break;
        }
    }
    gort_waitgroup_wait(&wg); /* the senders are done with the channels */
    int fa = int_chan_free(a.ch), fb = int_chan_free(b.ch);
    if (fa < 0 || fb < 0)
        return err ? err : fail("free", fa < 0 ? fa : fb);
    if (err == 0 && (from_a != a.n || from_b != b.n)) {
        fprintf(stderr, "timeouts: %d from a, %d from b\n", from_a, from_b);
        err = -EPROTO;
    }
    if (err == 0)
        printf("select: %d values from a, %d from b, then %d ms without one: "
               "timed out\n",
               from_a, from_b, IDLE_MS);
    return err;
}

/* ---------------------------------------------------------------------------
 * A ticker.
 * ------------------------------------------------------------------------- */

static int ticker(void)
{
    /* Taken before the ticker is made: tick k comes at least k periods
     * after it. */
    int64_t start = gort_nanotime();
    gort_timer *t;
    int err = gort_ticker_make(&t, TICK_MS * MS);
    if (err < 0)
        return fail("ticker", err);
    int early = 0;
    for (int k = 1; k <= NTICKS && err == 0; k++) {
        /* A timer's channel carries the int64_t gort_nanotime() of the
         * tick; GORT_CHAN_RECV checks that size against the channel's. */
        int64_t when;
        int r = GORT_CHAN_RECV(gort_timer_chan(t), &when);
        if (r != 1)
            err = fail("tick", r < 0 ? r : -EPIPE);
        else if (when - start < k * TICK_MS * MS)
            early++;
    }
    int ferr = gort_timer_free(t); /* t.Stop(), and the memory */
    if (ferr < 0)
        return err ? err : fail("free ticker", ferr);
    if (err == 0 && early) {
        fprintf(stderr, "timeouts: %d ticks early\n", early);
        err = -EPROTO;
    }
    if (err == 0)
        printf("ticker: %d ticks %d ms apart, none early\n", NTICKS, TICK_MS);
    return err;
}

/* The main goroutine's return value is the program's exit status. */
static int app(void *arg)
{
    (void)arg;
    int err = with_timeout();
    if (err == 0)
        err = select_loop();
    if (err == 0)
        err = ticker();
    return err == 0 ? 0 : 1;
}

int main(void)
{
    int status = gort_run(app, NULL);
    if (status < 0) { /* the runtime did not start */
        fprintf(stderr, "timeouts: gort_run: %s\n", gort_strerror(status));
        return 1;
    }
    return status;
}
