/* SPDX-License-Identifier: MIT */
/*
 * timerlat - how late a timer-woken goroutine runs while every P is busy.
 *
 * HOGS goroutines (11) run loops without calls on -procs Ps (2), so that
 * every P always has a goroutine to run and a queue behind it; only the
 * preemption signal takes a P from a hog.  One more goroutine sleeps 1 ms
 * in a loop, -n times (default 300), and records how late each sleep ended
 * (the time from calling sleep to running again, minus 1 ms).  Its timer
 * fires on a P that runs a hog; the question is how soon the woken
 * goroutine gets a P: at best within one time slice (10 ms), not behind
 * every hog in the queue.
 *
 * Figures: late_p50, late_p99, late_max (us).
 *
 * Go peer: bench/go/timerlat (the same loop, time.Sleep(time.Millisecond)).
 */
#include "bench.h"

#define HOGS 11
#define SLEEP_NS 1000000

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;
static int stop;
static volatile uint64_t sink;

/* A loop without calls: no point at which to yield cooperatively. */
static void hog(void *arg)
{
    (void)arg;
    uint64_t s = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        for (int i = 0; i < 1000; i++)
            s += (uint64_t)i ^ (s >> 3);
    sink = s;
    gort_waitgroup_done(&wg);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void main_g(void *arg)
{
    (void)arg;
    bench_set_procs(&opt);
    int64_t *late = malloc((size_t)opt.n * sizeof *late);
    if (!late)
        abort();
    gort_waitgroup_add(&wg, HOGS);
    for (int i = 0; i < HOGS; i++)
        gort_go(hog, NULL);
    gort_sleep(50 * 1000000LL); /* every hog started */
    for (int64_t i = 0; i < opt.n; i++) {
        int64_t t0 = bench_now_ns();
        gort_sleep(SLEEP_NS);
        late[i] = bench_now_ns() - t0 - SLEEP_NS;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    gort_waitgroup_wait(&wg);
    qsort(late, (size_t)opt.n, sizeof *late, cmp_i64);
    bench_result(&opt, "late_p50", (double)late[opt.n / 2] / 1e3, "us");
    bench_result(&opt, "late_p99", (double)late[opt.n * 99 / 100] / 1e3, "us");
    bench_result(&opt, "late_max", (double)late[opt.n - 1] / 1e3, "us");
    free(late);
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "timerlat", 2, 300);
    return bench_run(&opt, main_g, NULL);
}
