/* SPDX-License-Identifier: MIT */
/*
 * fanout.h - what redis_fanout and pg_fanout share (header only): their
 * clients on one pthread each, and their three figures.  The thread count
 * comes from examples/threads.h, which the examples that show it use too.
 */
#ifndef GORT_BENCH_FANOUT_H
#define GORT_BENCH_FANOUT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "threads.h"

/* Run fn on n pthreads, each given its index, and wait for them all: how
 * many started. */
static inline int fanout_threads(int n, void *(*fn)(void *))
{
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int started = 0;
    while (t && started < n &&
           pthread_create(&t[started], NULL, fn,
                          (void *)(intptr_t)started) == 0)
        started++;
    for (int k = 0; k < started; k++)
        pthread_join(t[k], NULL);
    free(t);
    return started;
}

/* The RESULT lines of n requests (what: "request", "query"; rate: their
 * plural) made by mode in secs, with cpu seconds of the process and at
 * most threads threads: 0, or 1 after failures (nothing printed). */
static inline int fanout_report(const char *name, const char *what,
                                const char *rate, const char *unit,
                                int procs, const char *mode, long n,
                                double secs, double cpu, int threads,
                                long failures)
{
    if (failures) {
        fprintf(stderr, "%s: %ld failures\n", name, failures);
        return 1;
    }
    printf("RESULT name=%s procs=%d metric=%s_per_s_%s value=%.0f unit=%s\n",
           name, procs, rate, mode, (double)n / secs, unit);
    printf("RESULT name=%s procs=%d metric=cpu_us_per_%s_%s value=%.2f "
           "unit=us\n",
           name, procs, what, mode, cpu * 1e6 / (double)n);
    printf("RESULT name=%s procs=%d metric=threads_%s value=%d "
           "unit=threads\n",
           name, procs, mode, threads);
    return 0;
}

#endif /* GORT_BENCH_FANOUT_H */
