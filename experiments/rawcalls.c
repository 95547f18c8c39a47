/* SPDX-License-Identifier: MIT */
/*
 * rawcalls - goroutines that compute and then sleep in a raw system call:
 * does gort's preemption signal ever interrupt the call?
 *
 * Each of -procs goroutines (GOMAXPROCS is -procs) loops: compute for
 * -burst-ms (plus 0-6 ms more, varying), then sleep 1 ms in a plain
 * nanosleep(2) or poll(2) that tells gort nothing.  One more goroutine
 * spins without calls beside them, so that every P has more work than it
 * can run and sysmon asks each goroutine to yield every 10 ms.  A signal
 * that lands in nanosleep or poll makes it return EINTR (SA_RESTART does
 * not restart them); the program counts the calls that did, for -seconds.
 *
 *     build/experiments/rawcalls -procs 1 -burst-ms 30
 *     rawcalls: GOMAXPROCS=1, 30 ms of computation between calls: 273 calls, 1 EINTR
 *
 * docs/design.md ("Unwrapped blocking calls") gives the figures for
 * -burst-ms 2, 12, 30 and 60 on 1 and 2 Ps.
 */
#include <gort.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "flags.h"

static int stop;
static int calls, eintrs;
static int burst_ms = 12;
static gort_waitgroup wg;

static void hog(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        ;
    gort_waitgroup_done(&wg);
}

/* Compute for ms milliseconds, reading the clock (a vDSO call, no system
 * call) to know when to stop. */
static void compute_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 <
           ms);
}

static void worker(void *arg)
{
    (void)arg;
    for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
        compute_ms(burst_ms + i % 7);
        int r;
        if (i & 1) {
            struct timespec ts = {0, 1000 * 1000};
            r = nanosleep(&ts, NULL);
        } else {
            r = poll(NULL, 0, 1);
        }
        __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
        if (r < 0 && errno == EINTR)
            __atomic_add_fetch(&eintrs, 1, __ATOMIC_RELAXED);
    }
    gort_waitgroup_done(&wg);
}

static int seconds = 10;

static void main_g(void *arg)
{
    (void)arg;
    int procs = gort_gomaxprocs(0);
    gort_waitgroup_add(&wg, procs + 1);
    gort_go(hog, NULL);
    for (int i = 0; i < procs; i++)
        gort_go(worker, NULL);
    gort_sleep((int64_t)seconds * 1000 * 1000 * 1000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    gort_waitgroup_wait(&wg);
    printf("rawcalls: GOMAXPROCS=%d, %d ms of computation between calls: "
           "%d calls, %d EINTR\n",
           procs, burst_ms, calls, eintrs);
}

int main(int argc, char **argv)
{
    int procs = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-procs"))
            procs = intflag("rawcalls", "-procs", v, 1);
        else if (!strcmp(argv[i], "-burst-ms"))
            burst_ms = intflag("rawcalls", "-burst-ms", v, 0);
        else if (!strcmp(argv[i], "-seconds"))
            seconds = intflag("rawcalls", "-seconds", v, 1);
        else {
            fprintf(stderr, "usage: rawcalls [-procs N] [-burst-ms MS] "
                            "[-seconds S]\n");
            return 2;
        }
    }
    char env[16];
    snprintf(env, sizeof env, "%d", procs);
    setenv("GORTMAXPROCS", env, 1);
    return gort_main(main_g, NULL) ? 1 : 0;
}
