/* SPDX-License-Identifier: MIT */
/*
 * netpoll - goroutines waiting on pipes cost no threads when they wait in
 * the network poller, and a thread each when they block in read(2).
 *
 *   build/experiments/netpoll [-n 100] [-short]
 *
 * Phase 1: n goroutines read from n empty pipes made with gort_pipe (the
 * poller's): they park in "IO wait" and the thread count barely moves.
 * Phase 2: n goroutines call gort_read on n empty pipes made with pipe(2),
 * which the poller does not know: the syscall path, as Go's syscall.Read.
 * Each read blocks its thread and hands its P on, so about n threads
 * appear.
 * Phase 3: the same with plain read(2), no wrapper at all.  The runtime
 * is not told about the calls: sysmon looks through /proc at a goroutine
 * that has held its P for 10 ms, finds its thread asleep in the program's
 * call and hands the P on (docs/design.md, "Unwrapped blocking calls"),
 * one P at a time, so the reads begin over about n * 10 ms / GOMAXPROCS.
 * Each phase lasts until every reader is waiting as the phase says (or
 * 30 s pass); then the counts are printed, one byte is written to every
 * pipe, and the counts are printed again once the readers have returned:
 *
 *     before:                  threads=3    goroutines=1
 *     100 netpoll readers:     threads=T1   goroutines=101
 *     after:                   threads=T1   goroutines=1
 *     100 blocking reads:      threads=T2   goroutines=101
 *     after:                   threads=T2   goroutines=1
 *     100 unwrapped read(2)s:  threads=T2   goroutines=101
 *     after:                   threads=T2   goroutines=1
 *     check: 100 readers parked in the poller (waiting 100) on T1 threads, at
 *       most 3 + GOMAXPROCS 2: ok
 *     check: the poller made the 100 readers runnable (netpoll wake-ups +100
 *       >= 100), 100 read their byte: ok
 *     check: 100 reads blocked in the kernel at once through the syscall path
 *       (not-in-go 100) within Dms, on T2 threads >= 102 (a thread a read,
 *       sysmon, main's), 100 read their byte: ok
 *     check: 100 unwrapped read(2)s in the kernel at once, each P handed off
 *       (not-in-go 100, syscall hand-offs +H >= 100), 100 read their byte: ok
 *     check: the unwrapped read(2)s began over Rms >= 432ms (9 ms for each of
 *       the 50 readers on the busiest P but its first and last): ok
 *
 * (with GOMAXPROCS 2).  T1 is the start's count or one more (an M started
 * to run goroutines on the second P), T2 about n above it.  (Threads made
 * for blocking calls stay, idle, for reuse: phase 3 reuses phase 2's.)
 *
 * The checks, each a count that a busy machine or a sanitizer's slowness
 * does not change, or a lower bound on a time that they only lengthen:
 * parked in the poller, the readers added at most GOMAXPROCS threads (the
 * Ms that run goroutines), and the poller itself woke them
 * (/gort/sched/netpoll-wakeups:goroutines); through the syscall path all n
 * were in the kernel at once (/sched/goroutines/not-in-go:goroutines), a
 * thread each beside sysmon and the thread running main; unwrapped, all n
 * were too, each found and its P handed off
 * (/gort/sched/syscall-handoffs:events); and since sysmon looks only at a
 * goroutine that has held its P for 10 ms, the last of the k readers that
 * the busiest P ran (k >= n / GOMAXPROCS) began at least (k - 2) * 9 ms
 * after the phase did: every reader but the first (whose P may have been
 * taken before the phase began) and the last held the P for 10 ms (9 of
 * them are asked for, a margin).  Phase 2's time is printed, not judged:
 * it is a thread's creation or wake-up per read.
 *
 * Flags: -n N (default 100), -short (n = 30: the form `make test` runs).
 * Exits 1 when a check fails, 2 on bad flags.
 */
#include <gort.h>

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "flags.h"

static int n = 100;
static int (*fds)[2];
static long *got;              /* what each reader's read returned */
static int64_t *began;         /* when each reader began its read */
static gort_waitgroup entered; /* the readers about to read */
static gort_waitgroup wg;      /* the readers that have returned */

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

/* Print the counts; return the thread count printed. */
static int show(const char *what)
{
    int t = threads();
    printf("%-24s threads=%-4d goroutines=%lld\n", what, t,
           (long long)gort_numgoroutine());
    fflush(stdout);
    return t;
}

enum { WAITING, NOTINGO, WAKEUPS, HANDOFFS, NMETRICS };
static const char *const metric_names[NMETRICS] = {
    [WAITING] = "/sched/goroutines/waiting:goroutines",
    [NOTINGO] = "/sched/goroutines/not-in-go:goroutines",
    [WAKEUPS] = "/gort/sched/netpoll-wakeups:goroutines",
    [HANDOFFS] = "/gort/sched/syscall-handoffs:events",
};

static uint64_t metric(int which)
{
    gort_metric_sample s = {.name = metric_names[which]};
    if (gort_metrics_read(&s, 1) != 0 || s.kind != GORT_METRIC_UINT64) {
        fprintf(stderr, "netpoll: cannot read %s\n", s.name);
        exit(1);
    }
    return s.u64;
}

/* Sleep until metric `which` reaches n (30 s at most); return its value. */
static uint64_t settle(int which)
{
    uint64_t v = metric(which);
    for (int i = 0; v < (uint64_t)n && i < 30000; i++) {
        gort_sleep(1000 * 1000);
        v = metric(which);
    }
    return v;
}

static void poll_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    gort_waitgroup_done(&entered);
    got[i] = gort_read(fds[i][0], &c, 1); /* parks in IO wait */
    gort_waitgroup_done(&wg);
}

static void sys_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    began[i] = gort_nanotime();
    gort_waitgroup_done(&entered);
    /* Not the poller's pipe: the read blocks a thread. */
    got[i] = gort_read(fds[i][0], &c, 1);
    gort_waitgroup_done(&wg);
}

static void raw_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    began[i] = gort_nanotime();
    gort_waitgroup_done(&entered);
    got[i] = read(fds[i][0], &c, 1); /* blocks the thread, P and all */
    if (got[i] < 0)
        got[i] = -errno;
    gort_waitgroup_done(&wg);
}

/* What a phase saw while its readers waited. */
struct seen {
    int threads;     /* threads while they waited */
    uint64_t count;  /* the metric the phase waited for */
    uint64_t wakeups, handoffs; /* over the phase, readers' return included */
    int64_t spread;  /* ns from the phase's start to the last read's start */
    int bytes;       /* readers whose read returned their byte */
};

/* Start n readers running fn; wait until they have all begun and metric
 * `which` reaches n; print the counts; release them and print again. */
static struct seen phase(void (*fn)(void *), const char *label, int which)
{
    struct seen s = {0};
    uint64_t wake0 = metric(WAKEUPS), hand0 = metric(HANDOFFS);
    memset(got, 0, (size_t)n * sizeof *got);
    memset(began, 0, (size_t)n * sizeof *began);
    /* main waits without a timer until the last reader has begun: a due
     * timer on a P makes sysmon look at its goroutine after 1 ms instead
     * of 10 (sysmon.c), which would hurry phase 3 along. */
    int64_t start = gort_nanotime();
    gort_waitgroup_add(&entered, n);
    gort_waitgroup_add(&wg, n);
    for (int i = 0; i < n; i++)
        gort_go(fn, (void *)(intptr_t)i);
    gort_waitgroup_wait(&entered);
    s.count = settle(which);
    for (int i = 0; i < n; i++)
        if (began[i] - start > s.spread)
            s.spread = began[i] - start;
    s.threads = show(label);
    for (int i = 0; i < n; i++)
        gort_write(fds[i][1], "x", 1);
    gort_waitgroup_wait(&wg);
    s.wakeups = metric(WAKEUPS) - wake0;
    s.handoffs = metric(HANDOFFS) - hand0;
    for (int i = 0; i < n; i++)
        s.bytes += got[i] == 1;
    gort_sleep(50 * 1000 * 1000);
    show("after:");
    return s;
}

static void exp_main(void *arg)
{
    (void)arg;
    char label[64];
    fds = calloc((size_t)n, sizeof *fds);
    got = calloc((size_t)n, sizeof *got);
    began = calloc((size_t)n, sizeof *began);
    if (!fds || !got || !began) {
        fprintf(stderr, "netpoll: out of memory\n");
        exit(1);
    }
    int procs = gort_gomaxprocs(0);
    gort_sleep(20 * 1000 * 1000);
    int before = show("before:");
    for (int i = 0; i < n; i++)
        if (gort_pipe(fds[i]) != 0) {
            fprintf(stderr, "netpoll: gort_pipe failed\n");
            exit(1);
        }
    snprintf(label, sizeof label, "%d netpoll readers:", n);
    struct seen p1 = phase(poll_reader, label, WAITING);
    for (int i = 0; i < n; i++) {
        gort_close(fds[i][0]);
        gort_close(fds[i][1]);
        if (pipe(fds[i]) != 0) {
            perror("pipe");
            exit(1);
        }
    }
    snprintf(label, sizeof label, "%d blocking reads:", n);
    struct seen p2 = phase(sys_reader, label, NOTINGO);
    snprintf(label, sizeof label, "%d unwrapped read(2)s:", n);
    struct seen p3 = phase(raw_reader, label, NOTINGO);
    for (int i = 0; i < n; i++) {
        close(fds[i][0]);
        close(fds[i][1]);
    }

    check(p1.count >= (uint64_t)n && p1.threads <= before + procs,
          "%d readers parked in the poller (waiting %llu) on %d threads, at "
          "most %d + GOMAXPROCS %d",
          n, (unsigned long long)p1.count, p1.threads, before, procs);
    check(p1.wakeups >= (uint64_t)n && p1.bytes == n,
          "the poller made the %d readers runnable (netpoll wake-ups +%llu "
          ">= %d), %d read their byte",
          n, (unsigned long long)p1.wakeups, n, p1.bytes);
    check(p2.count >= (uint64_t)n && p2.threads >= n + 2 && p2.bytes == n,
          "%d reads blocked in the kernel at once through the syscall path "
          "(not-in-go %llu) within %.1fms, on %d threads >= %d (a thread a "
          "read, sysmon, main's), %d read their byte",
          n, (unsigned long long)p2.count, p2.spread / 1e6, p2.threads,
          n + 2, p2.bytes);
    check(p3.count >= (uint64_t)n && p3.handoffs >= (uint64_t)n &&
              p3.bytes == n,
          "%d unwrapped read(2)s in the kernel at once, each P handed off "
          "(not-in-go %llu, syscall hand-offs +%llu >= %d), %d read their "
          "byte",
          n, (unsigned long long)p3.count, (unsigned long long)p3.handoffs,
          n, p3.bytes);
    /* The busiest P ran at least ceil(n / procs) readers, one after
     * another.  sysmon's clock for a P starts when a thread takes it, and
     * each reader after the first ran on a thread that took the P after
     * the phase began, so all but the last held it 10 ms from then. */
    int k = (n + procs - 1) / procs;
    int64_t bound = k > 2 ? (int64_t)(k - 2) * 9000000 : 0;
    check(p3.spread >= bound,
          "the unwrapped read(2)s began over %.0fms >= %.0fms (9 ms for each "
          "of the %d readers on the busiest P but its first and last)",
          p3.spread / 1e6, bound / 1e6, k);
    fflush(stdout);
    free(fds);
    free(got);
    free(began);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = intflag("netpoll", "-n", argv[++i], 1);
        } else if (!strcmp(argv[i], "-short")) {
            n = 30;
        } else {
            fprintf(stderr, "usage: netpoll [-n GOROUTINES] [-short]\n");
            return 2;
        }
    }
    int err = gort_main(exp_main, NULL);
    if (err < 0) {
        fprintf(stderr, "netpoll: gort_main: error %d\n", err);
        return 1;
    }
    return failed;
}
