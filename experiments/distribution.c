/* SPDX-License-Identifier: MIT */
/*
 * distribution - the classic work-distribution experiment on Go's scheduler.
 *
 * GOMAXPROCS=4 (on any number of cores), schedtrace every 10 ms.  One
 * goroutine creates 1000 goroutines, each burning about 0.6 ms of CPU.
 * The creator's P overflows its 256-slot ring into the global queue
 * (runqputslow moves half the ring and the new goroutine, 129, at once),
 * idle Ps take batches from there and steal from each other, and the
 * final per-P schedticks come out nearly equal although only one P
 * created work.
 *
 * Mirrors the Go program, run with GOMAXPROCS=4 GODEBUG=schedtrace=10:
 *
 *     go func() {
 *         for i := 0; i < 1000; i++ {
 *             wg.Add(1)
 *             go func() { defer wg.Done(); burn(600 * time.Microsecond) }()
 *         }
 *         wg.Done()
 *     }()
 *     wg.Wait()
 *
 * The program runs the experiment in a child (itself, forked before any
 * goroutine runs) whose stderr it reads: it passes the SCHED lines on to
 * its own stderr as they come, as Go prints them, and reads the global
 * queue's length (runqueue=) from them.  The child prints, on stdout, the
 * final schedticks and its checks; then the parent prints its own
 * (figures from runs are in docs/experiments.md):
 *
 *     SCHED Tms: gomaxprocs=4 idleprocs=0 threads=5 ... runqueue=G [ L L L L ] schedticks=[ S S S S ]
 *     ...                                                   (on stderr)
 *     schedticks=[ S S S S ] total=T
 *     check: 1000 of 1000 goroutines ran: ok
 *     check: every P ran a share of the work although one P created it:
 *       fewest schedticks S >= B (a quarter of an even share): ok
 *     check: the creator's ring spilled into the global queue: the SCHED
 *       lines show runqueue up to G (at Tms) > 128: ok
 *
 * How to read it: runqueue is the global queue, the brackets the Ps' local
 * queues, schedticks how many times each P scheduled a goroutine (a
 * goroutine taken from runnext shares the time slice and adds none; one
 * preempted and run again adds another).  Only a spill puts more than 128
 * goroutines on the global queue at once here (a preempted goroutine goes
 * there alone), so a runqueue above 128 shows one; the spill check is
 * judged when the rings could not have held all the goroutines (more than
 * 256 + 128 per other P, each of which takes at most half a ring before
 * it is busy running it) and the goroutines burn at least 100 µs each.
 * On 2 CPUs the 4 Ps' threads take turns, and a P whose thread waits for
 * a CPU ticks less: the spread is judged loosely, each P at least a
 * quarter of an even share (in the short form, at least one goroutine:
 * its run is short enough for a P's thread to wait a good part of it).
 *
 * Flags: -procs N (default 4), -n GOROUTINES (default 1000),
 * -burn-us MICROSECONDS (default 600), -trace MS (default 10, 0 = off:
 * the spill is then not judged; a GORTDEBUG in the environment is used as
 * it is), -short (the form `make test` runs: burn-us 200, the rest as
 * the defaults).  Exits 1 when a check fails (or the child dies), 2 on
 * bad flags.
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "child.h"
#include "flags.h"

#define RING 256 /* a P's local run queue (GORT_RUNQ_SIZE) */

/* burn_us -1: not given; main fills in the default of the form it runs. */
static int procs = 4, ngoroutines = 1000, burn_us = -1, trace_ms = 10;
static bool short_form;
static gort_waitgroup wg;
static int ran;       /* goroutines that ran to the end */
static uint64_t sink; /* keeps the loop from being optimised away */

/* ---------------------------------------------------------------------------
 * The child: the experiment.
 * ------------------------------------------------------------------------- */

static void burn(void *arg)
{
    (void)arg;
    int64_t end = gort_nanotime() + (int64_t)burn_us * 1000;
    uint64_t s = 0;
    while (gort_nanotime() < end)
        for (int i = 0; i < 1000; i++)
            s += (uint64_t)i ^ ((uint64_t)i >> 3);
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ran, 1, __ATOMIC_RELAXED);
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
    uint32_t ticks[GORT_MAX_PROCS];
    int n = gort_sched_ticks(ticks, GORT_MAX_PROCS);
    uint64_t total = 0;
    uint32_t fewest = UINT32_MAX;
    printf("schedticks=[ ");
    for (int i = 0; i < n; i++) {
        printf("%u ", ticks[i]);
        total += ticks[i];
        if (ticks[i] < fewest)
            fewest = ticks[i];
    }
    printf("] total=%llu\n", (unsigned long long)total);

    int nran = __atomic_load_n(&ran, __ATOMIC_RELAXED);
    check(nran == ngoroutines, "%d of %d goroutines ran", nran, ngoroutines);
    if (n == 1) {
        printf("check: the spread is not judged: one P\n");
        return;
    }
    uint64_t bound = short_form ? 1 : total / (uint64_t)n / 4;
    check(fewest >= bound,
          "every P ran a share of the work although one P created it: "
          "fewest schedticks %u >= %llu (%s)",
          fewest, (unsigned long long)bound,
          short_form ? "one goroutine, in the short form"
                     : "a quarter of an even share");
}

/* ---------------------------------------------------------------------------
 * The parent: runs the child, passes its stderr on and reads the SCHED
 * lines.
 * ------------------------------------------------------------------------- */

static int sched_lines, max_runqueue = -1;
static char max_at[32];

static void sched_line(const char *l)
{
    long long ms;
    if (sscanf(l, "SCHED %lldms:", &ms) != 1)
        return;
    sched_lines++;
    const char *r = strstr(l, " runqueue=");
    int q;
    if (r && sscanf(r, " runqueue=%d", &q) == 1 && q > max_runqueue) {
        max_runqueue = q;
        snprintf(max_at, sizeof max_at, "%lldms", ms);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-procs") == 0 && i + 1 < argc)
            procs = intflag(argv[0], "-procs", argv[++i], 1);
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            ngoroutines = intflag(argv[0], "-n", argv[++i], 1);
        else if (strcmp(argv[i], "-burn-us") == 0 && i + 1 < argc)
            burn_us = intflag(argv[0], "-burn-us", argv[++i], 0);
        else if (strcmp(argv[i], "-trace") == 0 && i + 1 < argc)
            trace_ms = intflag(argv[0], "-trace", argv[++i], 0);
        else if (strcmp(argv[i], "-short") == 0)
            short_form = true;
        else {
            fprintf(stderr,
                    "usage: %s [-procs N] [-n N] [-burn-us US] [-trace MS] "
                    "[-short]\n"
                    "  (unknown or incomplete flag: %s)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    if (burn_us < 0)
        burn_us = short_form ? 200 : 600;
    if (procs > GORT_MAX_PROCS) {
        fprintf(stderr, "%s: -procs wants at most %d, got %d\n", argv[0],
                GORT_MAX_PROCS, procs);
        return 2;
    }
    if (trace_ms > 0 && !getenv("GORTDEBUG")) {
        char buf[64];
        snprintf(buf, sizeof buf, "schedtrace=%d", trace_ms);
        setenv("GORTDEBUG", buf, 1);
    }
    int st = run_child("distribution", main_g, sched_line);
    if (child_broke(st))
        return 1;
    failed = WEXITSTATUS(st);

    /* The rings can hold 256 on the creator's P and, before each other P
     * is busy with what it took, half a ring on each of those; and each P
     * has a runnext. */
    long held = RING + (long)(RING / 2) * (procs - 1) + procs;
    if (sched_lines == 0)
        printf("check: the spill into the global queue is not judged: no "
               "SCHED lines to read (schedtrace off)\n");
    else if (ngoroutines <= held || burn_us < 100)
        printf("check: the spill into the global queue is not judged for "
               "%d goroutines of %d us (judged for more than the %ld the "
               "rings can hold, of at least 100 us each); runqueue up to "
               "%d\n",
               ngoroutines, burn_us, held, max_runqueue);
    else
        check(max_runqueue > RING / 2,
              "the creator's ring spilled into the global queue: the SCHED "
              "lines show runqueue up to %d (at %s) > %d",
              max_runqueue, max_at, RING / 2);
    return failed;
}
