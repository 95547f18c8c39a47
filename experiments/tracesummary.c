/* SPDX-License-Identifier: MIT */
/*
 * tracesummary - a workload for the execution trace: spinning Ms,
 * stop-the-world pauses and syscall hand-offs, to be found in the trace.
 *
 * Run it under the tracer and summarise the trace with
 * tools/tracesummary.py, which does both:
 *
 *     python3 tools/tracesummary.py --run build/experiments/tracesummary
 *
 * (or GORTDEBUG=trace=/tmp/t.json build/experiments/tracesummary, then
 * python3 tools/tracesummary.py /tmp/t.json; open the same file in
 * tools/traceview.html to see the intervals the summary counts).  The
 * program runs R rounds (default 20) on 4 Ps of:
 *
 *   - spinning: bursts of 64 short goroutines started from one P, with a
 *     pause between bursts that lets every other P go idle; each burst
 *     wakes an idle P, whose M spins looking for work (stealing from the
 *     busy P) until it finds some or gives up: the trace's "spinning"
 *     slices on the Threads (M) tracks;
 *   - syscall hand-offs, while 8 CPU-bound goroutines keep the Ps busy
 *     and work queued: 2 goroutines sleep 3 ms in gort_nanosleep, a call
 *     known to block, which hands its P to another thread as it enters;
 *     1 reads a blocking pipe with gort_read, which keeps the P with the
 *     thread for a quick return until sysmon or the syscall watcher sees
 *     the call last and retakes the P (the trace's "procsteal" instant,
 *     "P retaken from a syscall"); a 4th goroutine writes the pipe 3 ms
 *     later.  Either way the trace shows a "syscall" slice on one M's
 *     track and the same P's slice starting on another M's;
 *   - stop-the-world, every other round: GOMAXPROCS goes 4 -> 3 -> 4 (two
 *     stops of the world, each waiting for every P, the CPU-bound ones' by
 *     preemption): the
 *     trace's "stop-the-world" slices on the Scheduler track.
 *
 * Mirrors the lesson's Go program under runtime/trace (trace.Start(f);
 * defer trace.Stop(); workload), looked at in `go tool trace` for
 * spinning intervals, STW gaps and syscall hand-offs.  The program itself
 * prints what it did; tools/tracesummary.py prints the summary and a check
 * line (see there and docs/design.md's "Execution trace").
 *
 * Flags: -rounds N (default 20), -short (5 rounds: the form `make test`
 * runs, through tools/tracesummary.py --run --check).
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flags.h"

#define PROCS 4
#define BURST 64
#define SLEEPERS 2 /* in gort_nanosleep */
#define READERS 1  /* in gort_read, each with a writer */
#define SPINNERS 4

static int rounds = 20;
static gort_waitgroup wg;
static volatile uint64_t sink;
static int pipes[READERS][2];

/* About `us` microseconds of computation that calls nothing. */
static void compute(int64_t us)
{
    int64_t end = gort_nanotime() + us * 1000;
    uint64_t s = 0;
    /* Long stretches between clock reads: a preemption signal that lands
     * in the clock's code cannot stop the goroutine there. */
    while (gort_nanotime() < end)
        for (int i = 0; i < 100000; i++)
            s += (uint64_t)i ^ (s >> 3);
    /* Relaxed: several goroutines store it; only that it is stored
     * matters (the loop must not be optimised away). */
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
}

static void short_work(void *arg)
{
    (void)arg;
    compute(20);
    gort_waitgroup_done(&wg);
}

static void cpu_bound(void *arg)
{
    (void)arg;
    compute(8000);
    gort_waitgroup_done(&wg);
}

/* A sleep of known length: gort_nanosleep hands its P off at once. */
static void sleeper(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 3 * 1000 * 1000};
    gort_nanosleep(&ts, NULL);
    gort_waitgroup_done(&wg);
}

/* A read of a blocking pipe (not the poller's): the P stays with the
 * thread until sysmon or the syscall watcher retakes it.  The writer
 * writes 3 ms later. */
static void reader(void *arg)
{
    int *fds = arg;
    char c;
    gort_read(fds[0], &c, 1);
    gort_waitgroup_done(&wg);
}

static void writer(void *arg)
{
    int *fds = arg;
    gort_sleep(3 * 1000 * 1000);
    gort_write(fds[1], "x", 1);
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    gort_gomaxprocs(PROCS);
    int stws = 0;
    for (int i = 0; i < READERS; i++)
        if (pipe(pipes[i]) != 0) {
            perror("pipe");
            exit(1);
        }
    for (int r = 0; r < rounds; r++) {
        /* Spinning: a burst from this P while the others are idle. */
        gort_sleep(2 * 1000 * 1000);
        gort_waitgroup_add(&wg, BURST);
        for (int i = 0; i < BURST; i++)
            gort_go(short_work, NULL);
        gort_waitgroup_wait(&wg);

        /* Syscall hand-offs: sleepers and readers in syscalls beside
         * CPU-bound work (twice the Ps' worth, so that some of it waits in
         * a queue). */
        gort_waitgroup_add(&wg, SLEEPERS + 2 * READERS + 2 * SPINNERS);
        for (int i = 0; i < SLEEPERS; i++)
            gort_go(sleeper, NULL);
        for (int i = 0; i < READERS; i++) {
            gort_go(reader, pipes[i]);
            gort_go(writer, pipes[i]);
        }
        for (int i = 0; i < 2 * SPINNERS; i++)
            gort_go(cpu_bound, NULL);

        /* Stop-the-world, twice, while the CPU-bound goroutines run. */
        if (r % 2 == 0) {
            gort_gomaxprocs(PROCS - 1);
            gort_gomaxprocs(PROCS);
            stws += 2;
        }
        gort_waitgroup_wait(&wg);
    }
    printf("tracesummary: %d rounds on %d Ps: %d bursts of %d goroutines, "
           "%d nanosleeps and %d pipe reads beside %d CPU-bound goroutines, "
           "%d GOMAXPROCS changes\n",
           rounds, PROCS, rounds, BURST, rounds * SLEEPERS, rounds * READERS,
           rounds * 2 * SPINNERS, stws);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-rounds") == 0 && i + 1 < argc)
            rounds = intflag(argv[0], "-rounds", argv[++i], 1);
        else if (strcmp(argv[i], "-short") == 0)
            rounds = 5;
        else {
            fprintf(stderr,
                    "usage: %s [-rounds N] [-short]\n"
                    "  (unknown or incomplete flag: %s)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    if (rounds > 100000) {
        fprintf(stderr, "%s: -rounds wants at most 100000, got %d\n", argv[0],
                rounds);
        return 2;
    }
    int err = gort_main(run, NULL);
    if (err) {
        fprintf(stderr, "gort_main: %d\n", err);
        return 1;
    }
    return 0;
}
