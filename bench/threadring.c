/* SPDX-License-Identifier: MIT */
/*
 * threadring - the Benchmarks Game thread-ring: 503 goroutines linked in a
 * ring by unbuffered channels pass a token around.
 *
 * Goroutine k (1..503) receives the token, an int64_t, from its channel;
 * when the token is 0 it reports its k, otherwise it sends token - 1 to
 * goroutine k+1 (goroutine 503 to goroutine 1).  The main goroutine starts
 * the ring, sends SIZE (default 10,000,000) to goroutine 1 and waits for
 * the report, so the token makes SIZE hops between goroutines; each hop is
 * a send on an unbuffered channel that wakes the next goroutine while the
 * sender parks on its own receive.  The holder at the end must be
 * SIZE % 503 + 1, as in the Benchmarks Game's output.  The figure is the
 * wall time from the first send to the report, divided by SIZE:
 * ns_per_hop.  Nothing but the RESULT line is printed.
 *
 * The row is procs=1, so -procs defaults to 1 here, not to all CPUs.
 *
 * Go peer: bench/go/threadring (the Benchmarks Game's Go program, the
 * holder reported on a channel instead of printed).
 */
#include "bench.h"

#define RING 503

static struct bench_opts opt;
static gort_chan *done;  /* the final holder sends its number here */

struct member {
    int64_t id;       /* 1..RING */
    gort_chan *in;    /* from the previous member */
    gort_chan *out;   /* to the next member */
};

static struct member ring[RING];

static void member(void *arg)
{
    const struct member *m = arg;
    int64_t token;

    for (;;) {
        gort_chan_recv(m->in, &token);
        if (token == 0) {
            gort_chan_send(done, &m->id);
            return;
        }
        token--;
        gort_chan_send(m->out, &token);
    }
}

static void main_g(void *arg)
{
    gort_chan *links[RING];
    int64_t t0, elapsed, holder = 0;
    int err;

    (void)arg;
    bench_set_procs(&opt);
    /* links[k] carries the token into member k. */
    for (int k = 0; k < RING; k++) {
        if ((err = gort_chan_make(&links[k], sizeof(int64_t), 0)) < 0) {
            fprintf(stderr, "threadring: gort_chan_make: %s\n", strerror(-err));
            exit(1);
        }
    }
    if ((err = gort_chan_make(&done, sizeof(int64_t), 0)) < 0) {
        fprintf(stderr, "threadring: gort_chan_make: %s\n", strerror(-err));
        exit(1);
    }
    for (int k = 0; k < RING; k++) {
        ring[k].id = k + 1;
        ring[k].in = links[k];
        ring[k].out = links[(k + 1) % RING];
        if (gort_go(member, &ring[k]) < 0) {
            fprintf(stderr, "threadring: gort_go failed\n");
            exit(1);
        }
    }
    t0 = bench_now_ns();
    gort_chan_send(links[0], &opt.n);
    gort_chan_recv(done, &holder);
    elapsed = bench_now_ns() - t0;
    /* The other members stay parked on their channels; they are discarded
     * with the runtime when the main goroutine returns. */
    if (holder != opt.n % RING + 1) {
        fprintf(stderr, "threadring: the token ended at %" PRId64 ", not %"
                PRId64 "\n", holder, opt.n % RING + 1);
        exit(1);
    }
    bench_result(&opt, "ns_per_hop", (double)elapsed / (double)opt.n, "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "threadring", 1, 10000000);
    return bench_run(&opt, main_g, NULL);
}
