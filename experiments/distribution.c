/* SPDX-License-Identifier: MIT */
/*
 * distribution - the classic work-distribution experiment on Go's scheduler.
 *
 * GOMAXPROCS=4 (on any number of cores), schedtrace every 10 ms.  One
 * goroutine creates 1000 goroutines, each burning about 0.6 ms of CPU.
 * The creator's P overflows its 256-slot ring into the global queue
 * (runqputslow), idle Ps take batches from there and steal from each
 * other, and the final per-P schedticks come out nearly equal although
 * only one P created work.  Prints the SCHED lines (on stderr, as Go) and
 * then, on stdout:
 *
 *     schedticks=[ 250 250 252 253 ] total=1005
 *
 * Flags: -procs N (default 4), -n GOROUTINES (default 1000),
 * -burn-us MICROSECONDS (default 600), -trace MS (default 10, 0 = off).
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"

static int procs = 4, ngoroutines = 1000, burn_us = 600, trace_ms = 10;
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

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    gort_waitgroup_add(&wg, 1);
    gort_go(creator, NULL);
    gort_waitgroup_wait(&wg);
    uint32_t ticks[1024];
    int n = gort_sched_ticks(ticks, 1024);
    uint64_t total = 0;
    printf("schedticks=[ ");
    for (int i = 0; i < n; i++) {
        printf("%u ", ticks[i]);
        total += ticks[i];
    }
    printf("] total=%llu\n", (unsigned long long)total);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-procs"))
            procs = intflag("distribution", "-procs", v, 1);
        else if (!strcmp(argv[i], "-n"))
            ngoroutines = intflag("distribution", "-n", v, 1);
        else if (!strcmp(argv[i], "-burn-us"))
            burn_us = intflag("distribution", "-burn-us", v, 0);
        else if (!strcmp(argv[i], "-trace"))
            trace_ms = intflag("distribution", "-trace", v, 0);
        else {
            fprintf(stderr, "usage: distribution [-procs N] [-n N] "
                            "[-burn-us US] [-trace MS]\n");
            return 2;
        }
    }
    if (trace_ms > 0 && !getenv("GORTDEBUG")) {
        char buf[64];
        snprintf(buf, sizeof buf, "schedtrace=%d", trace_ms);
        setenv("GORTDEBUG", buf, 1);
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "distribution: gort_main: error %d\n", err);
        return 1;
    }
    return 0;
}
