/* SPDX-License-Identifier: MIT */
/*
 * chanstream - one producer and one consumer on a buffered channel.
 *
 * The main goroutine makes a channel of int64_t with 1024 buffered slots
 * and starts a producer that sends 0, 1, ..., SIZE-1 (default 10,000,000)
 * and closes the channel.  The main goroutine is the consumer: it receives
 * until the channel is closed and drained, summing the values, and checks
 * the count and the sum (SIZE * (SIZE-1) / 2).  The figure is the wall time
 * from starting the producer to seeing the channel closed, divided by SIZE:
 * ns_per_item.  Most operations find a free slot or a value in the buffer;
 * a goroutine parks only when the buffer is full (producer) or empty
 * (consumer).
 *
 * Go peer: bench/go/chanstream (ch := make(chan int64, 1024)).
 * Rows: procs 1 and 2 (BENCHMARKS.md).
 */
#include "bench.h"

#define CAP 1024

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;

/* 0 + 1 + ... + (n-1), modulo 2^64 as the running sum wraps. */
static uint64_t triangle(int64_t n)
{
    uint64_t u = (uint64_t)n;

    return u % 2 == 0 ? u / 2 * (u - 1) : (u - 1) / 2 * u;
}

static void producer(void *arg)
{
    gort_chan *ch = arg;

    for (int64_t i = 0; i < opt.n; i++)
        gort_chan_send(ch, &i);
    gort_chan_close(ch);
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    gort_chan *ch;
    int64_t t0, elapsed, v, count = 0;
    uint64_t sum = 0;
    int rc;

    (void)arg;
    bench_set_procs(&opt);
    if ((rc = gort_chan_make(&ch, sizeof(int64_t), CAP)) < 0) {
        fprintf(stderr, "chanstream: gort_chan_make: %s\n", strerror(-rc));
        exit(1);
    }
    t0 = bench_now_ns();
    gort_waitgroup_add(&wg, 1);
    if (gort_go(producer, ch) < 0) {
        fprintf(stderr, "chanstream: gort_go failed\n");
        exit(1);
    }
    while (gort_chan_recv(ch, &v)) {
        sum += (uint64_t)v;
        count++;
    }
    elapsed = bench_now_ns() - t0;
    gort_waitgroup_wait(&wg);
    gort_chan_free(ch);
    if (count != opt.n || sum != triangle(opt.n)) {
        fprintf(stderr, "chanstream: received %" PRId64 " values summing to %"
                PRIu64 "\n", count, sum);
        exit(1);
    }
    bench_result(&opt, "ns_per_item", (double)elapsed / (double)opt.n, "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "chanstream", 0, 10000000);
    return bench_run(&opt, main_g, NULL);
}
