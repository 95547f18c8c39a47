/* SPDX-License-Identifier: MIT */
/*
 * metrics - the scheduler metrics while goroutines read pipes: parked in
 * the network poller they cost no thread and count as waiting; blocked in
 * read(2) they hold a thread each and count as not-in-go.
 *
 *   build/experiments/metrics [-n 100] [-procs N]
 *
 * Samples four metrics with gort_metrics_read (Go's metrics.Read) at four
 * moments: at the start; with n goroutines reading empty pipes made by
 * gort_pipe (the poller's: they park in "IO wait"); with n goroutines
 * reading empty pipes made by pipe(2), which gort_read reads through the
 * syscall path (Go's syscall.Read: the thread blocks in the kernel and its
 * P moves on); and after every read has returned.  Output:
 *
 *     start                     threads=3   not-in-go=0   waiting=0   NumGoroutine=1
 *     100 in netpoll pipe reads threads=3   not-in-go=0   waiting=100 NumGoroutine=101
 *     100 in blocking read(2)   threads=103 not-in-go=100 waiting=0   NumGoroutine=101
 *     after the reads returned  threads=103 not-in-go=0   waiting=0   NumGoroutine=1
 *
 * threads is /sched/threads/total:threads, the threads the runtime owns;
 * the ones made for the blocking reads stay afterwards, idle, for reuse
 * (up to gort_set_max_threads).  not-in-go and waiting are
 * /sched/goroutines/not-in-go and /sched/goroutines/waiting;
 * NumGoroutine is gort_numgoroutine().  A Go program shows the same
 * shape, with a few more waiting goroutines of its runtime's own (gort
 * has none) and one thread per P more at the start.
 */
#include <gort.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flags.h"

static int n = 100, procs = 0;
static int (*fds)[2];
static gort_waitgroup wg;

enum { THREADS, NOTINGO, WAITING, NSAMPLES };
static gort_metric_sample samples[NSAMPLES] = {
    [THREADS] = {.name = "/sched/threads/total:threads"},
    [NOTINGO] = {.name = "/sched/goroutines/not-in-go:goroutines"},
    [WAITING] = {.name = "/sched/goroutines/waiting:goroutines"},
};

static void sample(void)
{
    if (gort_metrics_read(samples, NSAMPLES) != 0) {
        fprintf(stderr, "metrics: gort_metrics_read failed\n");
        exit(1);
    }
}

static void show(const char *what)
{
    sample();
    char t[32], s[32], w[32];
    snprintf(t, sizeof t, "threads=%llu",
             (unsigned long long)samples[THREADS].u64);
    snprintf(s, sizeof s, "not-in-go=%llu",
             (unsigned long long)samples[NOTINGO].u64);
    snprintf(w, sizeof w, "waiting=%llu",
             (unsigned long long)samples[WAITING].u64);
    printf("%-26s %-11s %-13s %-11s NumGoroutine=%lld\n", what, t, s, w,
           (long long)gort_numgoroutine());
    fflush(stdout);
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
 * every pipe and wait for the readers to finish. */
static void phase(const char *label, int which)
{
    gort_waitgroup_add(&wg, n);
    for (int i = 0; i < n; i++)
        gort_go(reader, (void *)(intptr_t)i);
    settle(which, (uint64_t)n);
    show(label);
    for (int i = 0; i < n; i++)
        gort_write(fds[i][1], "x", 1);
    gort_waitgroup_wait(&wg);
}

static void exp_main(void *arg)
{
    (void)arg;
    char label[64];
    if (procs > 0)
        gort_gomaxprocs(procs);
    fds = calloc((size_t)n, sizeof *fds);
    if (!fds) {
        fprintf(stderr, "metrics: out of memory\n");
        exit(1);
    }
    gort_sleep(20 * 1000 * 1000);
    show("start");
    for (int i = 0; i < n; i++)
        if (gort_pipe(fds[i]) != 0) {
            fprintf(stderr, "metrics: gort_pipe failed (descriptor limit?)\n");
            exit(1);
        }
    snprintf(label, sizeof label, "%d in netpoll pipe reads", n);
    phase(label, WAITING);
    for (int i = 0; i < n; i++) {
        gort_close(fds[i][0]);
        gort_close(fds[i][1]);
        if (pipe(fds[i]) != 0) {
            perror("metrics: pipe");
            exit(1);
        }
    }
    snprintf(label, sizeof label, "%d in blocking read(2)", n);
    phase(label, NOTINGO);
    while (gort_numgoroutine() > 1)
        gort_sleep(1000 * 1000);
    gort_sleep(20 * 1000 * 1000);
    show("after the reads returned");
    for (int i = 0; i < n; i++) {
        close(fds[i][0]);
        close(fds[i][1]);
    }
    free(fds);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-n"))
            n = intflag("metrics", "-n", v, 1);
        else if (!strcmp(argv[i], "-procs"))
            procs = intflag("metrics", "-procs", v, 1);
        else {
            fprintf(stderr, "usage: metrics [-n GOROUTINES] [-procs N]\n");
            return 2;
        }
    }
    int err = gort_main(exp_main, NULL);
    if (err < 0) {
        fprintf(stderr, "metrics: gort_main: error %d\n", err);
        return 1;
    }
    return 0;
}
