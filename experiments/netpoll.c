/* SPDX-License-Identifier: MIT */
/*
 * netpoll - goroutines waiting on pipes cost no threads when they wait in
 * the network poller, and a thread each when they block in read(2).
 *
 *   build/experiments/netpoll [-n 100]
 *
 * Phase 1: n goroutines read from n empty pipes made with gort_pipe (the
 * poller's): they park in "IO wait" and the thread count barely moves.
 * Phase 2: n goroutines call gort_read on n empty pipes made with pipe(2),
 * which the poller does not know: the syscall path, as Go's syscall.Read.
 * Each read blocks its thread and hands its P on, so about n threads
 * appear.
 * Phase 3: the same with plain read(2), no wrapper at all: the preemption
 * signal finds each thread in the kernel after ~10 ms of holding its P and
 * hands the P on, one P at a time, so the threads appear over about
 * n * 10 ms / GOMAXPROCS.
 * After each phase one byte is written to every pipe and the counts are
 * printed again.  Output (GOMAXPROCS 2):
 *
 *     before:                  threads=3    goroutines=1
 *     100 netpoll readers:     threads=3    goroutines=101
 *     after:                   threads=3    goroutines=1
 *     100 blocking reads:      threads=103  goroutines=101
 *     after:                   threads=103  goroutines=1
 *     100 unwrapped read(2)s:  threads=103  goroutines=101
 *     after:                   threads=103  goroutines=1
 *
 * (Threads made for blocking calls stay, idle, for reuse.)
 */
#include <gort.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n = 100;
static int (*fds)[2];
static gort_waitgroup wg;

static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int k = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        k += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return k;
}

static void show(const char *what)
{
    printf("%-24s threads=%-4d goroutines=%lld\n", what, threads(),
           (long long)gort_numgoroutine());
    fflush(stdout);
}

static void poll_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    gort_read(fds[i][0], &c, 1); /* parks in IO wait */
    gort_waitgroup_done(&wg);
}

static void sys_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    gort_read(fds[i][0], &c, 1); /* not the poller's: blocks a thread */
    gort_waitgroup_done(&wg);
}

static void raw_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    if (read(fds[i][0], &c, 1) != 1) /* blocks the thread */
        perror("read");
    gort_waitgroup_done(&wg);
}

static void phase(void (*fn)(void *), const char *label, int64_t wait_ms)
{
    gort_waitgroup_add(&wg, n);
    for (int i = 0; i < n; i++)
        gort_go(fn, (void *)(intptr_t)i);
    gort_sleep(wait_ms * 1000 * 1000);
    show(label);
    for (int i = 0; i < n; i++)
        gort_write(fds[i][1], "x", 1);
    gort_waitgroup_wait(&wg);
    gort_sleep(50 * 1000 * 1000);
    show("after:");
}

static void exp_main(void *arg)
{
    (void)arg;
    char label[64];
    fds = calloc((size_t)n, sizeof *fds);
    gort_sleep(20 * 1000 * 1000);
    show("before:");
    for (int i = 0; i < n; i++)
        if (gort_pipe(fds[i]) != 0) {
            fprintf(stderr, "netpoll: gort_pipe failed\n");
            exit(1);
        }
    snprintf(label, sizeof label, "%d netpoll readers:", n);
    phase(poll_reader, label, 300);
    for (int i = 0; i < n; i++) {
        gort_close(fds[i][0]);
        gort_close(fds[i][1]);
        if (pipe(fds[i]) != 0) {
            perror("pipe");
            exit(1);
        }
    }
    snprintf(label, sizeof label, "%d blocking reads:", n);
    phase(sys_reader, label, 300);
    snprintf(label, sizeof label, "%d unwrapped read(2)s:", n);
    phase(raw_reader, label, 300 + (int64_t)n * 20);
    for (int i = 0; i < n; i++) {
        close(fds[i][0]);
        close(fds[i][1]);
    }
    free(fds);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            n = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: netpoll [-n GOROUTINES]\n");
            return 2;
        }
    }
    return gort_main(exp_main, NULL) < 0 ? 1 : 0;
}
