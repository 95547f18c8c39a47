/* SPDX-License-Identifier: MIT */
/*
 * chandeadline - chanpingpong's round trips with a deadline on each
 * receive of the reply: what a timeout costs when it does not fire.
 *
 * As chanpingpong: a ponger sends back on pong each value it receives on
 * ping.  The main goroutine does SIZE round trips (default 1,000,000)
 * twice, each reply received with a deadline one second away:
 *     after   gort_chan_recv_until(pong, &v, gort_deadline_in(1 s))
 *     timer   gort_select_until(&case_pong, 1, gort_deadline_in(1 s))
 * Figures: ns_per_roundtrip_after and ns_per_roundtrip_timer.
 *
 * Go peer: bench/go/chandeadline, the two ways Go code writes it: a
 * select with `case <-time.After(time.Second)` (a timer and a channel a
 * round trip) and a select on a time.Timer made once and Reset each round
 * trip.
 */
#include "bench.h"

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;
static gort_chan *ping, *pong;

static void ponger(void *arg)
{
    int64_t v;

    (void)arg;
    while (gort_chan_recv(ping, &v))
        gort_chan_send(pong, &v);
    gort_waitgroup_done(&wg);
}

/* SIZE round trips, the reply received with a deadline (by select when
 * by_select): ns a round trip. */
static double round_trips(bool by_select)
{
    int64_t t0 = bench_now_ns();

    for (int64_t i = 0; i < opt.n; i++) {
        int64_t v = -1;
        int r;

        gort_chan_send(ping, &i);
        if (by_select) {
            gort_case c = {.ch = pong, .dir = GORT_CASE_RECV, .elem = &v};
            r = gort_select_until(&c, 1, gort_deadline_in(1000000000));
            r = r == 0 ? 1 : r;
        } else {
            r = gort_chan_recv_until(pong, &v, gort_deadline_in(1000000000));
        }
        if (r != 1 || v != i) {
            fprintf(stderr, "chandeadline: sent %" PRId64 ", got back %"
                    PRId64 " (%d)\n", i, v, r);
            exit(1);
        }
    }
    return (double)(bench_now_ns() - t0) / (double)opt.n;
}

static void main_g(void *arg)
{
    int rc;

    (void)arg;
    bench_set_procs(&opt);
    if ((rc = gort_chan_make(&ping, sizeof(int64_t), 0)) < 0 ||
        (rc = gort_chan_make(&pong, sizeof(int64_t), 0)) < 0) {
        fprintf(stderr, "chandeadline: gort_chan_make: %s\n", strerror(-rc));
        exit(1);
    }
    gort_waitgroup_add(&wg, 1);
    if (gort_go(ponger, NULL) < 0) {
        fprintf(stderr, "chandeadline: gort_go failed\n");
        exit(1);
    }
    double after = round_trips(false), timer = round_trips(true);
    gort_chan_close(ping);
    gort_waitgroup_wait(&wg);
    gort_chan_free(ping);
    gort_chan_free(pong);
    bench_result(&opt, "ns_per_roundtrip_after", after, "ns");
    bench_result(&opt, "ns_per_roundtrip_timer", timer, "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "chandeadline", 0, 1000000);
    return bench_run(&opt, main_g, NULL);
}
