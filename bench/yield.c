/* SPDX-License-Identifier: MIT */
/*
 * yield - two goroutines calling gort_gosched in turn.
 *
 * The main goroutine starts two goroutines that each call gort_gosched in a
 * loop, SIZE calls between them (default 10,000,000; the first does
 * ceil(SIZE/2), the second floor(SIZE/2)), and waits for both on a
 * WaitGroup.  On one P every gosched hands the P to the other goroutine, so
 * each call is one goroutine switch through the global run queue.  The
 * figure is the wall time from starting the pair to the return of the
 * wait, divided by SIZE: ns_per_switch.
 *
 * The row is procs=1, so unlike the other benchmarks -procs defaults to 1
 * here, not to all CPUs.
 *
 * Go peer: bench/go/yield (runtime.Gosched in the same two loops).
 */
#include "bench.h"

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;

struct yielder {
    int64_t calls;  /* how many times this goroutine calls gort_gosched */
};

static void yielder(void *arg)
{
    const struct yielder *y = arg;

    for (int64_t i = 0; i < y->calls; i++)
        gort_gosched();
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    struct yielder pair[2];
    int64_t t0, elapsed;

    (void)arg;
    bench_set_procs(&opt);
    pair[0].calls = opt.n - opt.n / 2;
    pair[1].calls = opt.n / 2;
    t0 = bench_now_ns();
    gort_waitgroup_add(&wg, 2);
    for (int i = 0; i < 2; i++) {
        if (gort_go(yielder, &pair[i]) < 0) {
            fprintf(stderr, "yield: gort_go failed\n");
            exit(1);
        }
    }
    gort_waitgroup_wait(&wg);
    elapsed = bench_now_ns() - t0;
    bench_result(&opt, "ns_per_switch", (double)elapsed / (double)opt.n, "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "yield", 1, 10000000);
    return bench_run(&opt, main_g, NULL);
}
