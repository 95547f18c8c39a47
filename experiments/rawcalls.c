/* SPDX-License-Identifier: MIT */
/*
 * rawcalls - goroutines that compute and then sleep in a raw system call:
 * does gort's preemption signal ever interrupt the call?
 *
 * Go 1.14's release notes give the price of asynchronous preemption: the
 * signal makes slow system calls made through package syscall return
 * EINTR more often.  Each of -procs goroutines (GOMAXPROCS is -procs)
 * loops: compute for -burst-ms (plus 0-6 ms more, varying; the program's
 * own code, reading the clock between chunks of a few tens of
 * microseconds), then sleep 1 ms in a plain nanosleep(2) or poll(2) that
 * tells gort nothing.  One more goroutine spins without calls beside
 * them, so that every P has more work than it can run and sysmon asks
 * each goroutine to yield every 10 ms: the preemption signal flies all
 * the time.  A signal that lands in nanosleep or poll makes it return
 * EINTR (SA_RESTART does not restart them); the program counts the calls
 * that did, for -seconds.  gort raises the signal from a timer on the
 * thread's CPU-time clock, which fires only while the thread runs and
 * delivers on its way back to user mode, so a thread asleep in a call
 * gets nothing (docs/design.md, "Unwrapped blocking calls").
 *
 *     build/experiments/rawcalls -procs 1 -burst-ms 30
 *
 * prints (figures from runs are in docs/experiments.md):
 *
 *     rawcalls: GOMAXPROCS=1, 30 ms of computation between calls: C calls, E
 *       EINTR
 *     check: the goroutines were preempted by signal N times, at least once a
 *       second of the run (10): ok
 *     check: every worker made raw calls: the fewest made W of the C: ok
 *     check: E of C raw calls returned EINTR, at most 1 in 500: ok
 *
 * The first check makes sure the signals were sent (without them the EINTR
 * count would say nothing): N is /gort/sched/preemptions/async:events over
 * the run.  The second that no worker was starved of its P for the whole
 * run.  It asks for no more than a call each: with more goroutines than
 * Ps the shares are uneven (a preempted goroutine goes to the global
 * queue, and which P takes it next is chance), and on a loaded machine
 * one worker can make several times the calls of another.  The third is
 * the lesson's price, which gort does not pay: a signal sent by tgkill
 * the moment sysmon asks, as Go's is, interrupted 10-14% of such calls
 * (docs/design.md).  None of the bounds is a time: each holds on a loaded
 * machine and under the sanitizers.  docs/design.md ("Unwrapped blocking
 * calls") gives the figures for longer runs.  Without preemption by
 * signal (GORTDEBUG=asyncpreemptoff=1) the spinner keeps its P until the
 * run's end; the first check then fails.
 *
 * Flags: -procs N (default 1), -burst-ms MS (default 12), -seconds S
 * (default 10), -short (1 second: the form `make test` runs).  Exits 1
 * when a check fails, 2 on bad flags.
 */
#include <gort.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flags.h"

static int stop;
static int calls, eintrs;
static int *worker_calls;
static int burst_ms = 12, seconds = 10;
static int64_t deadline; /* CLOCK_MONOTONIC ns: the run's end */
static gort_waitgroup wg;
static int failed; /* a check line said FAILED */

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Some tens of microseconds of the program's own code, calling nothing:
 * where the preemption signal finds a thread here, it can stop the
 * goroutine at once (a safe point); in the C library or the vDSO it must
 * try again at the next tick. */
static void spin_chunk(void)
{
    for (unsigned i = 0; i < (1u << 16); i++)
        __asm__ volatile("" ::: "memory"); /* keeps the loop */
}

/* Spin without calls, looking at the clock between chunks, so that the
 * spinner also stops at the run's end when nothing preempts it (and main,
 * which sets stop, cannot get its P). */
static void hog(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && now_ns() < deadline)
        spin_chunk();
    gort_waitgroup_done(&wg);
}

/* Compute for ms milliseconds by the clock (a vDSO call, no system call),
 * read between chunks: nearly all the time goes to the program's own
 * code.  A loop that did nothing but read the clock would spend it in the
 * vDSO, where no signal can stop it, and on a loaded machine a worker
 * could keep its P for a whole short run without being preempted. */
static void compute_ms(int ms)
{
    int64_t end = now_ns() + (int64_t)ms * 1000000;
    while (now_ns() < end)
        spin_chunk();
}

static void worker(void *arg)
{
    int w = (int)(intptr_t)arg;
    for (int i = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED) &&
                    now_ns() < deadline;
         i++) {
        compute_ms(burst_ms + i % 7);
        int r;
        if (i & 1) {
            struct timespec ts = {0, 1000 * 1000};
            r = nanosleep(&ts, NULL);
        } else {
            r = poll(NULL, 0, 1);
        }
        __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&worker_calls[w], 1, __ATOMIC_RELAXED);
        if (r < 0 && errno == EINTR)
            __atomic_add_fetch(&eintrs, 1, __ATOMIC_RELAXED);
    }
    gort_waitgroup_done(&wg);
}

static uint64_t async_preemptions(void)
{
    gort_metric_sample s = {.name = "/gort/sched/preemptions/async:events"};
    if (gort_metrics_read(&s, 1) != 0 || s.kind != GORT_METRIC_UINT64) {
        fprintf(stderr, "rawcalls: cannot read %s\n", s.name);
        exit(1);
    }
    return s.u64;
}

static void main_g(void *arg)
{
    (void)arg;
    int procs = gort_gomaxprocs(0);
    worker_calls = calloc((size_t)procs, sizeof *worker_calls);
    if (!worker_calls) {
        fprintf(stderr, "rawcalls: out of memory\n");
        exit(1);
    }
    uint64_t pre0 = async_preemptions();
    deadline = now_ns() + (int64_t)seconds * 1000000000;
    gort_waitgroup_add(&wg, procs + 1);
    gort_go(hog, NULL);
    for (int i = 0; i < procs; i++)
        gort_go(worker, (void *)(intptr_t)i);
    gort_sleep((int64_t)seconds * 1000 * 1000 * 1000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    gort_waitgroup_wait(&wg);
    uint64_t pre = async_preemptions() - pre0;
    printf("rawcalls: GOMAXPROCS=%d, %d ms of computation between calls: "
           "%d calls, %d EINTR\n",
           procs, burst_ms, calls, eintrs);

    bool ok = pre >= (uint64_t)seconds;
    printf("check: the goroutines were preempted by signal %llu times, at "
           "least once a second of the run (%d): %s\n",
           (unsigned long long)pre, seconds, ok ? "ok" : "FAILED");
    failed |= !ok;

    int fewest = worker_calls[0];
    for (int i = 1; i < procs; i++)
        if (worker_calls[i] < fewest)
            fewest = worker_calls[i];
    ok = fewest >= 1;
    printf("check: every worker made raw calls: the fewest made %d of the "
           "%d: %s\n", fewest, calls, ok ? "ok" : "FAILED");
    failed |= !ok;

    ok = (int64_t)eintrs * 500 <= calls;
    printf("check: %d of %d raw calls returned EINTR, at most 1 in 500: "
           "%s\n",
           eintrs, calls, ok ? "ok" : "FAILED");
    failed |= !ok;
    fflush(stdout);
    free(worker_calls);
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
        else if (!strcmp(argv[i], "-short")) {
            seconds = 1;
            i--; /* takes no value */
        } else {
            fprintf(stderr, "usage: rawcalls [-procs N] [-burst-ms MS] "
                            "[-seconds S] [-short]\n");
            return 2;
        }
    }
    if (procs > GORT_MAX_PROCS) {
        fprintf(stderr, "rawcalls: -procs wants at most %d, got %d\n",
                GORT_MAX_PROCS, procs);
        return 2;
    }
    char env[16];
    snprintf(env, sizeof env, "%d", procs);
    setenv("GORTMAXPROCS", env, 1);
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "rawcalls: gort_main: error %d\n", err);
        return 1;
    }
    return failed;
}
