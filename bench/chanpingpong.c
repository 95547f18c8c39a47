/* SPDX-License-Identifier: MIT */
/*
 * chanpingpong - round trips over two unbuffered channels between two
 * goroutines.
 *
 * The main goroutine makes two unbuffered channels of int64_t, ping and
 * pong, and starts a ponger that receives each value from ping and sends it
 * back on pong until ping is closed.  The main goroutine then does, SIZE
 * times (default 1,000,000):
 *     gort_chan_send(ping, &i); gort_chan_recv(pong, &v);
 * checking that v == i.  Each iteration is one round trip: two hand-offs
 * through an unbuffered channel, each waking the goroutine parked on the
 * other side.  The figure is the wall time of the SIZE round trips divided
 * by SIZE: ns_per_roundtrip.  Closing ping and waiting for the ponger to
 * end come after the clock stops.
 *
 * Go peer: bench/go/chanpingpong (ping <- i; v := <-pong).
 * Rows: procs 1 and 2 (BENCHMARKS.md).
 */
#include "bench.h"

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;

struct pair {
    gort_chan *ping;
    gort_chan *pong;
};

static void ponger(void *arg)
{
    const struct pair *p = arg;
    int64_t v;

    while (gort_chan_recv(p->ping, &v))
        gort_chan_send(p->pong, &v);
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    struct pair p;
    int64_t t0, elapsed;
    int rc;

    (void)arg;
    bench_set_procs(&opt);
    if ((rc = gort_chan_make(&p.ping, sizeof(int64_t), 0)) < 0 ||
        (rc = gort_chan_make(&p.pong, sizeof(int64_t), 0)) < 0) {
        fprintf(stderr, "chanpingpong: gort_chan_make: %s\n", strerror(-rc));
        exit(1);
    }
    gort_waitgroup_add(&wg, 1);
    if (gort_go(ponger, &p) < 0) {
        fprintf(stderr, "chanpingpong: gort_go failed\n");
        exit(1);
    }
    t0 = bench_now_ns();
    for (int64_t i = 0; i < opt.n; i++) {
        int64_t v = -1;

        gort_chan_send(p.ping, &i);
        gort_chan_recv(p.pong, &v);
        if (v != i) {
            fprintf(stderr, "chanpingpong: sent %" PRId64 ", got back %" PRId64
                    "\n", i, v);
            exit(1);
        }
    }
    elapsed = bench_now_ns() - t0;
    gort_chan_close(p.ping);
    gort_waitgroup_wait(&wg);
    gort_chan_free(p.ping);
    gort_chan_free(p.pong);
    bench_result(&opt, "ns_per_roundtrip", (double)elapsed / (double)opt.n,
                 "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "chanpingpong", 0, 1000000);
    return bench_run(&opt, main_g, NULL);
}
