/* SPDX-License-Identifier: MIT */
/*
 * preempt - how late a 1 ms sleep ends while a tight loop holds the only P.
 *
 * First the main goroutine calibrates the loop (no calls of any kind, only
 * arithmetic: s += i ^ (i >> 3)) to last about 300 ms: it runs it with
 * 2^20 iterations, doubling until one run takes at least 30 ms, and scales
 * that count.  Then SIZE trials (default 5), each:
 *     start a goroutine running the loop; t0 = now; sleep 1 ms;
 *     late = now - t0 - 1 ms; wait for the loop to end
 * On one P the spinner runs as soon as main parks, and main, whose timer
 * expires after 1 ms, runs again only when the spinner lets go of the P:
 * about 10 ms in when the runtime preempts it with a signal, at the end of
 * the loop (about 300 ms) when it does not.  The figure is the median of
 * the trials' lateness: sleep1ms_late, in ms.
 *
 * Rows: procs 1, and procs 1 with asynchronous preemption off
 * (GORTDEBUG=asyncpreemptoff=1 here, GODEBUG=asyncpreemptoff=1 for Go;
 * bench/run.sh sets them), where both sides should wait for the whole
 * loop.  The row is procs=1, so -procs defaults to 1 here.
 *
 * Go peer: bench/go/preempt (the same loop in a //go:noinline function,
 * time.Sleep(time.Millisecond)).
 */
#include "bench.h"

#define SPIN_NS (300 * 1000000LL)
#define SLEEP_NS 1000000

static struct bench_opts opt;
static gort_waitgroup wg = GORT_WAITGROUP_INIT;
static volatile uint64_t sink;

/* The tight loop: no calls, so no point at which to yield cooperatively. */
static __attribute__((noinline)) void spin(uint64_t n)
{
    uint64_t s = 0;

    for (uint64_t i = 0; i < n; i++)
        s += i ^ (i >> 3);
    sink = s;
}

static void spinner(void *arg)
{
    spin((uint64_t)(uintptr_t)arg);
    gort_waitgroup_done(&wg);
}

/* The iteration count that makes spin last about SPIN_NS. */
static uint64_t calibrate(void)
{
    uint64_t n = 1 << 20;
    int64_t ns;

    for (;;) {
        int64_t t0 = bench_now_ns();

        spin(n);
        ns = bench_now_ns() - t0;
        if (ns >= 30 * 1000000LL || n >= (1ULL << 40))
            break;
        n *= 2;
    }
    n = (uint64_t)((double)n * (double)SPIN_NS / (double)ns);
    return n > 0 ? n : 1;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static void main_g(void *arg)
{
    int64_t *late;
    uint64_t iters;
    int64_t m = opt.n;

    (void)arg;
    bench_set_procs(&opt);
    late = calloc((size_t)m, sizeof *late);
    if (late == NULL) {
        fprintf(stderr, "preempt: out of memory\n");
        exit(1);
    }
    iters = calibrate();
    for (int64_t i = 0; i < m; i++) {
        int64_t t0;

        gort_waitgroup_add(&wg, 1);
        if (gort_go(spinner, (void *)(uintptr_t)iters) < 0) {
            fprintf(stderr, "preempt: gort_go failed\n");
            exit(1);
        }
        t0 = bench_now_ns();
        gort_sleep(SLEEP_NS);
        late[i] = bench_now_ns() - t0 - SLEEP_NS;
        gort_waitgroup_wait(&wg);
    }
    qsort(late, (size_t)m, sizeof *late, cmp_int64);
    bench_result(&opt, "sleep1ms_late",
                 (double)(m % 2 ? late[m / 2]
                                : (late[m / 2 - 1] + late[m / 2]) / 2) / 1e6,
                 "ms");
    free(late);
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "preempt", 1, 5);
    if (opt.n > 1000) {
        fprintf(stderr, "preempt: -n must be at most 1000 (trials of "
                        "about 300 ms each)\n");
        bench_usage(stderr, &opt);
        return 2;
    }
    return bench_run(&opt, main_g, NULL);
}
