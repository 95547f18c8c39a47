/* SPDX-License-Identifier: MIT */
/*
 * metrics - the scheduler metrics while goroutines read pipes: parked in
 * the network poller they cost no thread and count as waiting; blocked in
 * read(2) they hold a thread each and count as not-in-go.
 *
 *   build/experiments/metrics [-n 100] [-procs N] [-short]
 *
 * Samples four metrics with gort_metrics_read (Go's metrics.Read) at four
 * moments: at the start; with n goroutines reading empty pipes made by
 * gort_pipe (the poller's: they park in "IO wait"); with n goroutines
 * reading empty pipes made by pipe(2), which gort_read reads through the
 * syscall path (Go's syscall.Read: the thread blocks in the kernel and its
 * P moves on); and after every read has returned.  Output with
 * GOMAXPROCS 2:
 *
 *     start                      threads=3   not-in-go=0   waiting=0   NumGoroutine=1
 *     100 in netpoll pipe reads  threads=3   not-in-go=0   waiting=100 NumGoroutine=101
 *     100 in blocking read(2)    threads=103 not-in-go=100 waiting=0   NumGoroutine=101
 *     after the reads returned   threads=103 not-in-go=0   waiting=0   NumGoroutine=1
 *     check: at the start only main: NumGoroutine=1, waiting=0, not-in-go=0: ok
 *     check: the 100 netpoll reads wait without a thread each: waiting=100
 *       (want 100), not-in-go=0, threads=3 <= 5 (the start's 3 + an M for
 *       each of the 2 Ps), the poller woke 100 >= 100: ok
 *     check: the 100 blocking read(2)s hold a thread each: not-in-go=100
 *       (want 100), threads=103 >= 102 (one per read, sysmon and main's):
 *       ok
 *     check: after the reads the threads stay for reuse: threads=103 >=
 *       103, not-in-go=0, waiting=0, NumGoroutine=1: ok
 *
 * threads is /sched/threads/total:threads, the threads the runtime owns;
 * the ones made for the blocking reads stay afterwards, idle, for reuse
 * (up to gort_set_max_threads).  not-in-go and waiting are
 * /sched/goroutines/not-in-go and /sched/goroutines/waiting;
 * NumGoroutine is gort_numgoroutine().  A Go program shows the same
 * shape, with a few more waiting goroutines of its runtime's own (gort
 * has none) and one thread per P more at the start.  "The poller woke" is
 * how much /gort/sched/netpoll-wakeups:goroutines grew while the netpoll
 * readers were fed.
 *
 * The checks are counts, not times: each phase waits (up to 10 s) for its
 * count to reach n before it samples, so a slow machine only makes the
 * run longer.  The netpoll phase may add threads, but never one per read:
 * its goroutines wake idle Ps, each of which may need an M.  In the
 * blocking phase each read holds its thread in the kernel, sysmon has its
 * own, and main samples from yet another.
 *
 * Flags: -n GOROUTINES (default 100), -procs N (default: gort's), -short
 * (the form `make test` runs; the same as the full form, which takes a
 * fraction of a second).  Exits 1 when a check fails, 2 on bad flags.
 */
#include <gort.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "flags.h"

static int n = 100, procs = 0;
static int (*fds)[2];
static gort_waitgroup wg;

enum { THREADS, NOTINGO, WAITING, WAKEUPS, NSAMPLES };
static gort_metric_sample samples[NSAMPLES] = {
    [THREADS] = {.name = "/sched/threads/total:threads"},
    [NOTINGO] = {.name = "/sched/goroutines/not-in-go:goroutines"},
    [WAITING] = {.name = "/sched/goroutines/waiting:goroutines"},
    [WAKEUPS] = {.name = "/gort/sched/netpoll-wakeups:goroutines"},
};

/* What a line shows. */
struct counts {
    unsigned long long threads, notingo, waiting, wakeups;
    long long numg;
};

static void sample(void)
{
    if (gort_metrics_read(samples, NSAMPLES) != 0) {
        fprintf(stderr, "metrics: gort_metrics_read failed\n");
        exit(1);
    }
}

static struct counts show(const char *what)
{
    sample();
    struct counts c = {samples[THREADS].u64, samples[NOTINGO].u64,
                       samples[WAITING].u64, samples[WAKEUPS].u64,
                       (long long)gort_numgoroutine()};
    char t[32], s[32], w[32];
    snprintf(t, sizeof t, "threads=%llu", c.threads);
    snprintf(s, sizeof s, "not-in-go=%llu", c.notingo);
    snprintf(w, sizeof w, "waiting=%llu", c.waiting);
    printf("%-26s %-11s %-13s %-11s NumGoroutine=%lld\n", what, t, s, w,
           c.numg);
    fflush(stdout);
    return c;
}

/* Sleep until sample `which` reaches want (or 10 s pass: shown anyway). */
static void settle(int which, uint64_t want)
{
    for (int i = 0; i < 10000; i++) {
        sample();
        if (samples[which].u64 >= want)
            break;
        gort_sleep(1000 * 1000);
    }
    gort_sleep(20 * 1000 * 1000); /* and let the threads settle */
}

static void reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    if (gort_read(fds[i][0], &c, 1) != 1)
        fprintf(stderr, "metrics: read of pipe %d failed\n", i);
    gort_waitgroup_done(&wg);
}

/* Start n readers, show the counts once `which` reaches n, then feed
 * every pipe and wait for the readers to finish.  *woke gets how many
 * goroutines the poller made runnable meanwhile. */
static struct counts phase(const char *label, int which, uint64_t *woke)
{
    gort_waitgroup_add(&wg, n);
    for (int i = 0; i < n; i++)
        gort_go(reader, (void *)(intptr_t)i);
    settle(which, (uint64_t)n);
    struct counts c = show(label);
    for (int i = 0; i < n; i++)
        gort_write(fds[i][1], "x", 1);
    gort_waitgroup_wait(&wg);
    sample();
    *woke = samples[WAKEUPS].u64 - c.wakeups;
    return c;
}

static void exp_main(void *arg)
{
    (void)arg;
    char label[64];
    if (procs > 0)
        gort_gomaxprocs(procs);
    int nprocs = gort_gomaxprocs(0);
    fds = calloc((size_t)n, sizeof *fds);
    if (!fds) {
        fprintf(stderr, "metrics: out of memory\n");
        exit(1);
    }
    gort_sleep(20 * 1000 * 1000);
    struct counts start = show("start");
    for (int i = 0; i < n; i++)
        if (gort_pipe(fds[i]) != 0) {
            fprintf(stderr, "metrics: gort_pipe failed (descriptor limit?)\n");
            exit(1);
        }
    snprintf(label, sizeof label, "%d in netpoll pipe reads", n);
    uint64_t woke, unused;
    struct counts poll = phase(label, WAITING, &woke);
    for (int i = 0; i < n; i++) {
        gort_close(fds[i][0]);
        gort_close(fds[i][1]);
        if (pipe(fds[i]) != 0) {
            perror("metrics: pipe");
            exit(1);
        }
    }
    snprintf(label, sizeof label, "%d in blocking read(2)", n);
    struct counts blocked = phase(label, NOTINGO, &unused);
    while (gort_numgoroutine() > 1)
        gort_sleep(1000 * 1000);
    gort_sleep(20 * 1000 * 1000);
    struct counts after = show("after the reads returned");
    for (int i = 0; i < n; i++) {
        close(fds[i][0]);
        close(fds[i][1]);
    }
    free(fds);

    unsigned long long un = (unsigned long long)n;
    check(start.numg == 1 && start.waiting == 0 && start.notingo == 0,
          "at the start only main: NumGoroutine=%lld, waiting=%llu, "
          "not-in-go=%llu",
          start.numg, start.waiting, start.notingo);

    /* The readers wake idle Ps, each of which may need an M. */
    unsigned long long most = start.threads + (unsigned long long)nprocs;
    check(poll.waiting == un && poll.notingo == 0 && poll.threads <= most &&
              woke >= un,
          "the %d netpoll reads wait without a thread each: waiting=%llu "
          "(want %d), not-in-go=%llu, threads=%llu <= %llu (the start's %llu "
          "+ an M for each of the %d Ps), the poller woke %llu >= %d",
          n, poll.waiting, n, poll.notingo, poll.threads, most,
          start.threads, nprocs, (unsigned long long)woke, n);

    /* Each read's thread, sysmon's and the one main samples from. */
    unsigned long long least = un + 2;
    check(blocked.notingo == un && blocked.threads >= least,
          "the %d blocking read(2)s hold a thread each: not-in-go=%llu (want "
          "%d), threads=%llu >= %llu (one per read, sysmon and main's)",
          n, blocked.notingo, n, blocked.threads, least);

    check(after.threads >= blocked.threads && after.notingo == 0 &&
              after.waiting == 0 && after.numg == 1,
          "after the reads the threads stay for reuse: threads=%llu >= %llu, "
          "not-in-go=%llu, waiting=%llu, NumGoroutine=%lld",
          after.threads, blocked.threads, after.notingo, after.waiting,
          after.numg);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = intflag(argv[0], "-n", argv[++i], 1);
        else if (strcmp(argv[i], "-procs") == 0 && i + 1 < argc)
            procs = intflag(argv[0], "-procs", argv[++i], 1);
        else if (strcmp(argv[i], "-short") == 0)
            ; /* the full form is already short */
        else {
            fprintf(stderr,
                    "usage: %s [-n GOROUTINES] [-procs N] [-short]\n"
                    "  (unknown or incomplete flag: %s)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    int err = gort_main(exp_main, NULL);
    if (err < 0) {
        fprintf(stderr, "metrics: gort_main: error %d\n", err);
        return 1;
    }
    return failed;
}
