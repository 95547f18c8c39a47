/* SPDX-License-Identifier: MIT */
/*
 * timers - how late goroutines wake from short sleeps when many sleep at
 * once.
 *
 * The main goroutine starts SIZE goroutines (default 10,000) and waits for
 * them on a WaitGroup.  Each sleeps 1 ms 20 times in a row, timing every
 * sleep with the monotonic clock:
 *     t0 = now; gort_sleep(1 ms); late = now - t0 - 1 ms
 * and storing late in its own slots of one array.  Afterwards the
 * SIZE * 20 lateness values (200,000 by default) are sorted and the figures
 * are their 50th and 99th percentiles (nearest rank), in microseconds:
 * late_p50 and late_p99.  Both cover the timer machinery (how soon an
 * expired timer is noticed and its goroutine made runnable) and the run
 * queue (how long a woken goroutine waits behind the others that woke with
 * it).
 *
 * Go peer: bench/go/timers (time.Sleep(time.Millisecond), time.Now and
 * time.Since).  Rows: procs 1 and 2 (BENCHMARKS.md).
 */
#include "bench.h"

#define SLEEPS 20
#define SLEEP_NS 1000000

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;
static int64_t *late;  /* SLEEPS slots per goroutine, in ns */

static void sleeper(void *arg)
{
    int64_t *slot = late + (intptr_t)arg * SLEEPS;

    for (int k = 0; k < SLEEPS; k++) {
        int64_t t0 = bench_now_ns();

        gort_sleep(SLEEP_NS);
        slot[k] = bench_now_ns() - t0 - SLEEP_NS;
    }
    gort_waitgroup_done(&wg);
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The p-th percentile of the m sorted values v, by nearest rank. */
static int64_t percentile(const int64_t *v, int64_t m, int p)
{
    int64_t rank = (p * m + 99) / 100;

    return v[rank > 0 ? rank - 1 : 0];
}

static void main_g(void *arg)
{
    int64_t m = opt.n * SLEEPS;

    (void)arg;
    bench_set_procs(&opt);
    late = calloc((size_t)m, sizeof *late);
    if (late == NULL) {
        fprintf(stderr, "timers: out of memory\n");
        exit(1);
    }
    gort_waitgroup_add(&wg, (int)opt.n);
    for (int64_t i = 0; i < opt.n; i++) {
        if (gort_go(sleeper, (void *)(intptr_t)i) < 0) {
            fprintf(stderr, "timers: gort_go failed at goroutine %" PRId64
                    "\n", i);
            exit(1);
        }
    }
    gort_waitgroup_wait(&wg);
    qsort(late, (size_t)m, sizeof *late, cmp_int64);
    bench_result(&opt, "late_p50", (double)percentile(late, m, 50) / 1e3,
                 "us");
    bench_result(&opt, "late_p99", (double)percentile(late, m, 99) / 1e3,
                 "us");
    free(late);
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "timers", 0, 10000);
    if (opt.n > INT32_MAX / SLEEPS) {
        fprintf(stderr, "timers: -n must be at most %d\n", INT32_MAX / SLEEPS);
        bench_usage(stderr, &opt);
        return 2;
    }
    return bench_run(&opt, main_g, NULL);
}
