/* SPDX-License-Identifier: MIT */
/*
 * preempt - a tight loop without calls, and who gets the CPU back from it.
 *
 * A loop that calls nothing (no gort call, no library call) gives the
 * scheduler no point at which to switch goroutines cooperatively.  gort,
 * like Go since 1.14, interrupts such a goroutine with a signal once it has
 * run 10 ms and makes it yield at a safe point.  Three phases:
 *
 *   1. spin alone: the main goroutine runs the loop once, to calibrate it
 *      to about 300 ms, and prints how long it took.
 *   2. One P: main starts a goroutine running the loop and asks to sleep
 *      1 ms.  The spinner takes the only P as main parks; main's timer
 *      expires after 1 ms, but main can run again only when the spinner
 *      lets go of the P: after about 10 ms when it is preempted, after the
 *      whole loop when it is not.
 *   3. Two Ps: main starts two spinners (the second loops twice as long)
 *      and sleeps 20 ms, so that each spinner holds one P.  Once main is
 *      running again it changes GOMAXPROCS from 2 to 3, which stops the
 *      world: every P must be taken from its goroutine, so the change waits
 *      for the spinner still running on the other P.  With preemption that
 *      is a signal away; without it, it is the rest of that loop.  The
 *      time to stop the world is also read where a monitoring program
 *      would read it: the bucket of /sched/pauses/stopping/other:seconds
 *      (Go's runtime/metrics histogram) that the change's sample fell in,
 *      beside the worst bucket of the stops before it (the GOMAXPROCS
 *      changes to 1 and 2, with nothing running to stop).
 *
 * Mirrors the Go program
 *
 *     func spin(n int) { // no calls, no allocation: no cooperative point
 *         s := 0
 *         for i := 0; i < n; i++ {
 *             s += i ^ (i >> 3)
 *         }
 *         sink = s
 *     }
 *
 *     func main() {
 *         ... spin alone, print how long it took ...
 *         runtime.GOMAXPROCS(1)
 *         done := make(chan struct{})
 *         go func() { spin(n); close(done) }()
 *         t := time.Now()
 *         time.Sleep(time.Millisecond)
 *         fmt.Printf("GOMAXPROCS=1: main asked for 1ms, woke after %v\n",
 *             time.Since(t))
 *         <-done
 *         runtime.GOMAXPROCS(2)
 *         go spinner(n); go spinner(2 * n)
 *         time.Sleep(20 * time.Millisecond)
 *         t = time.Now()
 *         runtime.GOMAXPROCS(3) // stop-the-world
 *         ... print how long the change took ...
 *     }
 *
 * and prints (times vary from run to run):
 *
 *     spin alone: 243.4ms
 *     GOMAXPROCS=1: main asked for 1ms, woke after 7.9ms
 *     GOMAXPROCS=2, two spinners: main asked for 20ms, woke after 20.8ms;
 *       GOMAXPROCS(3) (stop-the-world) took 288.1µs;
 *       stopping latency <= 327.7µs (worst before: <= 6.1µs)
 *     check: the world stopped 287.5ms before the loop ended, stopping
 *       latency <= 327.7µs under a quarter of the loop (75ms): ok
 *
 * Run it again with asynchronous preemption off to see the difference:
 *
 *     $ GORTDEBUG=asyncpreemptoff=1 build/experiments/preempt
 *     spin alone: 300.6ms
 *     GOMAXPROCS=1: main asked for 1ms, woke after 298.7ms
 *     GOMAXPROCS=2, two spinners: main asked for 20ms, woke after 511.9ms;
 *       GOMAXPROCS(3) (stop-the-world) took 163ms;
 *       stopping latency <= 167.8ms (worst before: <= 6.1µs)
 *     check: without preemption by signal the world stopped only after
 *       the loop ended (31µs after), stopping latency <= 167.8ms: ok
 *
 * On one P main now wakes only when the loop ends.  On two Ps it wakes
 * when the shorter spinner ends and frees a P, and the GOMAXPROCS change
 * then waits for the longer one to end.  (Two spinners on a 2-core machine
 * that runs other work as well get less than a core each, so their loops
 * take longer than "spin alone".)
 *
 * The check line judges the stop against the longer loop's end: with
 * preemption by signal, the world stopped before the loop ended, and the
 * stopping latency's bucket lies under a quarter of the loop; with
 * GORTDEBUG=asyncpreemptoff=1, the world stopped only after the loop
 * ended (how long that was depends on how busy the machine is, so it is
 * not judged).  The program exits 1 when the check fails.  `make test`
 * runs the short form, with and without (experiments.preempt).
 *
 * Flags: -spin-ms MS (the loop's calibrated length, default 300); -short
 * (the same as -spin-ms 120).
 */
#include <gort.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flags.h"

static int spin_ms = 300;
static uint64_t iters;          /* the loop's length, calibrated by main */
static volatile uint64_t sink;  /* keeps the loop from being optimised away */
static gort_waitgroup wg;
static int failed; /* the check line said FAILED */

/* The tight loop: no calls at all, only arithmetic on registers. */
static __attribute__((noinline)) void spin(uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += i ^ (i >> 3);
    /* Relaxed: several goroutines store it; only that it is stored
     * matters (the loop must not be optimised away). */
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
}

/* When the last spinner of phase 3 finished its loop (atomic). */
static int64_t last_end;

static void spinner(void *arg)
{
    spin((uint64_t)(uintptr_t)arg);
    /* Relaxed: main reads it after gort_waitgroup_wait, which orders. */
    int64_t now = gort_nanotime();
    int64_t prev = __atomic_load_n(&last_end, __ATOMIC_RELAXED);
    while (prev < now &&
           !__atomic_compare_exchange_n(&last_end, &prev, now, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
    gort_waitgroup_done(&wg);
}

/* A duration as Go prints it, to one decimal: 301ms, 11.4ms, 52µs, 740ns. */
static const char *dur(int64_t ns, char *buf, size_t len)
{
    static const struct { int64_t scale; const char *unit; } u[] = {
        {1000000000, "s"}, {1000000, "ms"}, {1000, "\xc2\xb5s"}, {1, "ns"},
    };
    int i = 0;
    while (i < 3 && ns < u[i].scale)
        i++;
    double v = (double)ns / (double)u[i].scale;
    snprintf(buf, len, "%.1f", v);
    size_t n = strlen(buf);
    if (n > 2 && !strcmp(buf + n - 2, ".0"))
        buf[n - 2] = '\0';
    snprintf(buf + strlen(buf), len - strlen(buf), "%s", u[i].unit);
    return buf;
}

/* The CPU time of the calling thread, in ns. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Find how many iterations take spin_ms of CPU time: double until the
 * loop takes at least 30 ms, then scale.  CPU time rather than elapsed
 * time: on a busy machine the thread waits for a core now and then, and
 * a loop calibrated by the clock would come out much shorter than asked.
 * (With one P and no other goroutine, main stays on its thread.) */
static void calibrate(void)
{
    uint64_t n = 1 << 20;
    int64_t ns;
    for (;;) {
        int64_t t0 = thread_cpu_ns();
        spin(n);
        ns = thread_cpu_ns() - t0;
        if (ns >= 30 * 1000000LL || n >= (1ULL << 40))
            break;
        n *= 2;
    }
    iters = (uint64_t)((double)n * (double)spin_ms * 1e6 / (double)ns);
    if (iters == 0)
        iters = 1;
}

/* The counts of /sched/pauses/stopping/other:seconds into counts
 * (GORT_METRIC_HIST_BUCKETS of them); the bucket boundaries in *bounds. */
static size_t stopping_hist(uint64_t *counts, const double **bounds)
{
    gort_metric_sample s = {.name = "/sched/pauses/stopping/other:seconds"};
    s.hist.counts = counts;
    s.hist.cap = GORT_METRIC_HIST_BUCKETS;
    if (gort_metrics_read(&s, 1) != 0 || s.kind != GORT_METRIC_HISTOGRAM) {
        fprintf(stderr, "preempt: cannot read %s\n", s.name);
        exit(1);
    }
    *bounds = s.hist.buckets;
    return s.hist.n;
}

/* The highest bucket holding a sample of after that before did not hold
 * (before NULL: any sample), or -1. */
static int worst_bucket(const uint64_t *after, const uint64_t *before,
                        size_t n)
{
    for (size_t i = n; i-- > 0;)
        if (after[i] > (before ? before[i] : 0))
            return (int)i;
    return -1;
}

/* "<= hi" for bucket i, as Go's lesson prints a histogram bucket. */
static const char *bucket_str(const double *bounds, int i, char *buf,
                              size_t len)
{
    char d[32];
    if (i < 0)
        snprintf(buf, len, "none");
    else if (bounds[i + 1] > 1e30)
        snprintf(buf, len, "> %s",
                 dur((int64_t)(bounds[i] * 1e9), d, sizeof d));
    else
        snprintf(buf, len, "<= %s",
                 dur((int64_t)(bounds[i + 1] * 1e9 + 0.5), d, sizeof d));
    return buf;
}

static void main_g(void *arg)
{
    (void)arg;
    char b1[32], b2[32];

    gort_gomaxprocs(1);
    calibrate();
    int64_t t0 = gort_nanotime();
    spin(iters);
    printf("spin alone: %s\n", dur(gort_nanotime() - t0, b1, sizeof b1));
    fflush(stdout);

    /* One P: the spinner goes into runnext and runs as soon as main parks. */
    gort_waitgroup_add(&wg, 1);
    gort_go(spinner, (void *)(uintptr_t)iters);
    t0 = gort_nanotime();
    gort_sleep(1000000);
    int64_t woke = gort_nanotime() - t0;
    printf("GOMAXPROCS=1: main asked for 1ms, woke after %s\n",
           dur(woke, b1, sizeof b1));
    fflush(stdout);
    gort_waitgroup_wait(&wg);

    /* Two Ps, two spinners: each ends up on its own P while main sleeps. */
    gort_gomaxprocs(2);
    __atomic_store_n(&last_end, 0, __ATOMIC_RELAXED); /* no G runs spin */
    gort_waitgroup_add(&wg, 2);
    gort_go(spinner, (void *)(uintptr_t)iters);
    gort_go(spinner, (void *)(uintptr_t)(2 * iters));
    t0 = gort_nanotime();
    gort_sleep(20 * 1000000LL);
    woke = gort_nanotime() - t0;
    static uint64_t before[GORT_METRIC_HIST_BUCKETS];
    static uint64_t after[GORT_METRIC_HIST_BUCKETS];
    const double *bounds;
    size_t nb = stopping_hist(before, &bounds);
    int64_t t1 = gort_nanotime();
    gort_gomaxprocs(3);  /* stop-the-world, resize, start the world */
    int64_t took = gort_nanotime() - t1;
    stopping_hist(after, &bounds);
    int now = worst_bucket(after, before, nb);
    int prev = worst_bucket(before, NULL, nb);
    char b3[48], b4[48];
    printf("GOMAXPROCS=2, two spinners: main asked for 20ms, woke after %s;\n"
           "  GOMAXPROCS(3) (stop-the-world) took %s;\n"
           "  stopping latency %s (worst before: %s)\n",
           dur(woke, b1, sizeof b1), dur(took, b2, sizeof b2),
           bucket_str(bounds, now, b3, sizeof b3),
           bucket_str(bounds, prev, b4, sizeof b4));
    fflush(stdout);
    gort_waitgroup_wait(&wg);

    /* The check.  With preemption by signal the world stopped while the
     * longer loop still ran, within a quarter of the loop (room for a
     * loaded machine); without it, the world could stop only once the
     * loop had ended. */
    int64_t stopped = t1 + took;
    int64_t end = __atomic_load_n(&last_end, __ATOMIC_RELAXED);
    double quarter = (double)spin_ms / 4 * 1e-3;
    const char *env = getenv("GORTDEBUG");
    bool async = !(env && strstr(env, "asyncpreemptoff=1"));
    dur((int64_t)(quarter * 1e9), b1, sizeof b1);
    if (now < 0) {
        printf("check: the change left no stopping sample: FAILED\n");
        failed = 1;
    } else if (async) {
        bool ok = bounds[now + 1] < quarter && stopped < end;
        printf("check: the world stopped %s before the loop ended, stopping "
               "latency %s under a quarter of the loop (%s): %s\n",
               dur(end - stopped, b2, sizeof b2), b3, b1,
               ok ? "ok" : "FAILED");
        failed |= !ok;
    } else {
        bool ok = stopped >= end;
        printf("check: without preemption by signal the world stopped only "
               "after the loop ended (%s after), stopping latency %s: %s\n",
               dur(stopped - end, b2, sizeof b2), b3, ok ? "ok" : "FAILED");
        failed |= !ok;
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-spin-ms")) {
            spin_ms = intflag("preempt", "-spin-ms", v, 1);
        } else if (!strcmp(argv[i], "-short")) {
            spin_ms = 120;
            i--; /* takes no value */
        } else {
            fprintf(stderr, "usage: preempt [-spin-ms MS] [-short]\n"
                            "  GORTDEBUG=asyncpreemptoff=1 turns preemption "
                            "by signal off\n");
            return 2;
        }
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "preempt: gort_main: error %d\n", err);
        return 1;
    }
    return failed;
}
