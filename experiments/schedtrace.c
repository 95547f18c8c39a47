/* SPDX-License-Identifier: MIT */
/*
 * schedtrace - reading the scheduler: schedtrace with scheddetail while
 * work spreads over the Ps, then every metric.
 *
 *   build/experiments/schedtrace [-procs 4] [-n 1000] [-burn-us 600]
 *                                [-trace 40] [-detail 1]
 *
 * The work-distribution program (one goroutine creates n goroutines that
 * each burn about 0.6 ms of CPU, GOMAXPROCS 4) run with
 * GORTDEBUG=schedtrace=40,scheddetail=1 (set here unless GORTDEBUG is
 * already set): every 40 ms sysmon prints, on stderr in Go's format, the
 * SCHED line with scheddetail's fields, one line per P (its status,
 * schedtick, syscalltick, M and local queue), one per M (its P, current
 * goroutine, spinning) and one per goroutine (status, wait reason, M).
 * Cut to a few lines of the first trace:
 *
 *     SCHED 35ms: gomaxprocs=4 idleprocs=0 threads=5 spinningthreads=0 needspinning=0 idlethreads=0 runqueue=0 gcwaiting=false nmidlelocked=0 stopwait=0 sysmonwait=false
 *       P0: status=1 schedtick=0 syscalltick=0 m=0 runqsize=223 gfreecnt=0 timerslen=0
 *       P1: status=1 schedtick=3 syscalltick=0 m=2 runqsize=28 gfreecnt=2 timerslen=0
 *       M3: p=2 curg=35 throwing=0 preemptoff= locks=0 dying=0 spinning=false blocked=false lockedg=nil
 *       M1: p=nil curg=nil throwing=0 preemptoff= locks=2 dying=0 spinning=false blocked=false lockedg=nil
 *       G1: status=4(sync.WaitGroup.Wait) m=nil lockedm=nil
 *       G2: status=2() m=0 lockedm=nil
 *       G5: status=1() m=nil lockedm=nil
 *
 * P status 1 is running; G status 1 is runnable, 2 running, 4 waiting
 * (with the reason), 6 dead.  G1 is main, parked in the WaitGroup; G2 the
 * creator, still spawning onto P0's queue; M1 is sysmon, which never holds
 * a P.  Printing the detail holds the scheduler lock (as Go's does), so a
 * run with 1000 goroutine lines per trace takes longer than without.
 *
 * Then, on stdout, every metric as gort_metrics_read returns it (the
 * /sched/ ones under Go's names; histograms as their sample count and the
 * buckets holding the median and the 99th percentile), and a read of
 * /sched/threads:threads, the name Go 1.26's release notes give, which is
 * no metric (GORT_METRIC_BAD, Go's KindBad; the real one is
 * /sched/threads/total:threads):
 *
 *     metrics after the run (gort_metrics_read):
 *       /gort/sched/netpoll-wakeups:goroutines     0
 *       /gort/sched/preemptions/async:events       34
 *       /gort/sched/preemptions/sync:events        8
 *       /gort/sched/steals:goroutines              407
 *       ...
 *       /sched/goroutines-created:goroutines       1002
 *       ...
 *       /sched/latencies:seconds                   132 samples, median in [0.167772, 0.201327) s, p99 in [0.402653, 0.469762) s
 *       ...
 *       /sched/threads/total:threads               5
 *       /sched/threads:threads                     kind 0: no such metric
 *
 * One goroutine in 8 is timed from creation to its first run: most wait
 * in a queue for a large part of the run, since 1000 x 0.6 ms of work
 * takes at least 150 ms on 4 Ps (and 300 ms on 2 cores).
 */
#include <gort.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"

static int procs = 4, ngoroutines = 1000, burn_us = 600, trace_ms = 40;
static int detail = 1;
static gort_waitgroup wg;
static uint64_t sink; /* keeps the loop from being optimised away */

static void burn(void *arg)
{
    (void)arg;
    int64_t end = gort_nanotime() + (int64_t)burn_us * 1000;
    uint64_t s = 0;
    while (gort_nanotime() < end)
        for (int i = 0; i < 1000; i++)
            s += (uint64_t)i ^ ((uint64_t)i >> 3);
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
    gort_waitgroup_done(&wg);
}

static void creator(void *arg)
{
    (void)arg;
    for (int i = 0; i < ngoroutines; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(burn, NULL);
    }
    gort_waitgroup_done(&wg);
}

/* The bucket [lo, hi) seconds holding the sample of rank q (0..1). */
static void quantile(const gort_histogram *h, double q, double *lo,
                     double *hi)
{
    uint64_t want = (uint64_t)(q * (double)(h->total - 1)), seen = 0;
    for (size_t i = 0; i < h->n; i++) {
        seen += h->counts[i];
        if (seen > want) {
            *lo = h->buckets[i];
            *hi = h->buckets[i + 1];
            return;
        }
    }
    *lo = *hi = 0;
}

static void print_metrics(void)
{
    size_t n;
    const gort_metric_desc *d = gort_metrics_all(&n);
    gort_metric_sample *s = calloc(n + 1, sizeof *s);
    uint64_t *counts = calloc(n * GORT_METRIC_HIST_BUCKETS, sizeof *counts);
    if (!s || !counts) {
        fprintf(stderr, "schedtrace: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        s[i].name = d[i].name;
        s[i].hist.counts = counts + i * GORT_METRIC_HIST_BUCKETS;
        s[i].hist.cap = GORT_METRIC_HIST_BUCKETS;
    }
    s[n].name = "/sched/threads:threads";
    if (gort_metrics_read(s, n + 1) != 0) {
        fprintf(stderr, "schedtrace: gort_metrics_read failed\n");
        exit(1);
    }
    printf("metrics after the run (gort_metrics_read):\n");
    for (size_t i = 0; i <= n; i++) {
        printf("  %-42s ", s[i].name);
        switch (s[i].kind) {
        case GORT_METRIC_UINT64:
            printf("%llu\n", (unsigned long long)s[i].u64);
            break;
        case GORT_METRIC_FLOAT64:
            printf("%g\n", s[i].f64);
            break;
        case GORT_METRIC_HISTOGRAM: {
            printf("%llu samples", (unsigned long long)s[i].hist.total);
            if (s[i].hist.total > 0) {
                double lo, hi, lo99, hi99;
                quantile(&s[i].hist, 0.5, &lo, &hi);
                quantile(&s[i].hist, 0.99, &lo99, &hi99);
                printf(", median in [%g, %g) s, p99 in [%g, %g) s", lo, hi,
                       lo99, hi99);
            }
            printf("\n");
            break;
        }
        default:
            printf("kind %d: no such metric\n", s[i].kind);
            break;
        }
    }
    free(counts);
    free(s);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    gort_waitgroup_add(&wg, 1);
    gort_go(creator, NULL);
    gort_waitgroup_wait(&wg);
    print_metrics();
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-procs"))
            procs = intflag("schedtrace", "-procs", v, 1);
        else if (!strcmp(argv[i], "-n"))
            ngoroutines = intflag("schedtrace", "-n", v, 1);
        else if (!strcmp(argv[i], "-burn-us"))
            burn_us = intflag("schedtrace", "-burn-us", v, 0);
        else if (!strcmp(argv[i], "-trace"))
            trace_ms = intflag("schedtrace", "-trace", v, 0);
        else if (!strcmp(argv[i], "-detail"))
            detail = intflag("schedtrace", "-detail", v, 0);
        else {
            fprintf(stderr, "usage: schedtrace [-procs N] [-n N] "
                            "[-burn-us US] [-trace MS] [-detail 0|1]\n");
            return 2;
        }
    }
    if (trace_ms > 0 && !getenv("GORTDEBUG")) {
        char buf[64];
        snprintf(buf, sizeof buf, "schedtrace=%d,scheddetail=%d", trace_ms,
                 detail ? 1 : 0);
        setenv("GORTDEBUG", buf, 1);
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "schedtrace: gort_main: error %d\n", err);
        return 1;
    }
    return 0;
}
