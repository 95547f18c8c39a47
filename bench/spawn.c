/* SPDX-License-Identifier: MIT */
/*
 * spawn - create and finish goroutines that do nothing but signal a
 * WaitGroup.
 *
 * The main goroutine does, SIZE times (default 1,000,000):
 *     gort_waitgroup_add(&wg, 1); gort_go(worker, &wg);
 * where worker only calls gort_waitgroup_done(&wg), then waits for the
 * group.  The figure is the wall time from the first spawn to the return of
 * the wait, divided by SIZE: ns_per_goroutine.  It covers creating each
 * goroutine (and its stack), scheduling it, running it, ending it and
 * reusing what it held, with the main goroutine competing for the Ps.
 *
 * Go peer: bench/go/spawn (wg.Add(1); go func() { wg.Done() }()).
 * Rows: procs 1 and 2 (BENCHMARKS.md).
 */
#include "bench.h"

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;

static void worker(void *arg)
{
    gort_waitgroup_done(arg);
}

static void main_g(void *arg)
{
    int64_t t0, elapsed;

    (void)arg;
    bench_set_procs(&opt);
    t0 = bench_now_ns();
    for (int64_t i = 0; i < opt.n; i++) {
        gort_waitgroup_add(&wg, 1);
        if (gort_go(worker, &wg) < 0) {
            fprintf(stderr, "spawn: gort_go failed at goroutine %" PRId64 "\n",
                    i);
            exit(1);
        }
    }
    gort_waitgroup_wait(&wg);
    elapsed = bench_now_ns() - t0;
    bench_result(&opt, "ns_per_goroutine", (double)elapsed / (double)opt.n,
                 "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "spawn", 0, 1000000);
    return bench_run(&opt, main_g, NULL);
}
