/* SPDX-License-Identifier: MIT */
/*
 * sysmon - goroutines in blocking system calls, and why a program has more
 * threads than GOMAXPROCS.
 *
 * GOMAXPROCS=2.  1000 goroutines each make 3 blocking sleeps of 100 ms in
 * a row through the syscall path (gort_nanosleep: nanosleep(2) between
 * gort_entersyscall and gort_exitsyscall).  A goroutine in a system call
 * keeps its thread, which sleeps in the kernel; sysmon sees the call last
 * and hands the thread's P to another thread (starting one when none is
 * idle), which runs the next goroutine, which blocks in turn.  So the
 * number of threads climbs far above GOMAXPROCS, to about one per blocked
 * goroutine, while at most 2 goroutines ever run gort code at once.  When
 * the sleeps return, a thread that finds no P to take back queues its
 * goroutine and parks: idle threads are kept for reuse, so the count stays
 * up.  Go behaves the same for blocking calls (cgo calls, read(2) on files,
 * raw syscalls), though not for time.Sleep, which parks only the goroutine.
 *
 * A monitor goroutine prints a schedtrace line (gort_schedtrace, Go's
 * format, on stderr) every 100 ms with the number of threads the kernel
 * lists in /proc/self/task, then a summary:
 *
 *     SCHED 110ms: gomaxprocs=2 idleprocs=0 threads=635 spinningthreads=0 needspinning=0 idlethreads=0 runqueue=255 [ 79 34 ] schedticks=[ 330 306 ]
 *       /proc/self/task: 637 threads
 *     SCHED 216ms: gomaxprocs=2 idleprocs=0 threads=1003 spinningthreads=1 needspinning=0 idlethreads=0 runqueue=0 [ 0 0 ] schedticks=[ 810 753 ]
 *       /proc/self/task: 1003 threads
 *     SCHED 321ms: gomaxprocs=2 idleprocs=0 threads=1004 spinningthreads=1 needspinning=0 idlethreads=2 runqueue=1 [ 0 0 ] schedticks=[ 824 792 ]
 *       /proc/self/task: 1004 threads
 *     SCHED 423ms: gomaxprocs=2 idleprocs=0 threads=1004 spinningthreads=1 needspinning=0 idlethreads=699 runqueue=0 [ 0 0 ] schedticks=[ 842 815 ]
 *       /proc/self/task: 1004 threads
 *     SCHED 527ms: gomaxprocs=2 idleprocs=0 threads=1004 spinningthreads=1 needspinning=0 idlethreads=1001 runqueue=0 [ 0 0 ] schedticks=[ 873 815 ]
 *       /proc/self/task: 1004 threads
 *     1000 goroutines x 3 blocking sleeps of 100 ms (gort_nanosleep), GOMAXPROCS=2: 0.45 s (one thread per P would need 150 s)
 *     threads in /proc/self/task: 2 before, at most 1004, 1004 at the end
 *
 * (the counts vary).  threads= is the runtime's count of its threads
 * (Ms), idlethreads= those parked with nothing to do: as the sleeps
 * return, the threads that slept find no P, queue their goroutines and
 * park, and stay for reuse.  Mirrors the Go program run with
 * GODEBUG=schedtrace=100 that starts 1000 goroutines each making blocking
 * system calls every 100 ms.
 *
 * Flags: -procs N (default 2), -n GOROUTINES (default 1000), -sleep-ms MS
 * (default 100), -rounds N (default 3), -trace MS (default 100, 0 = only
 * the summary), -usleep (sleep with GORT_BLOCKING(usleep(...)) instead of
 * gort_nanosleep).
 */
#include <dirent.h>
#include <errno.h>
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flags.h"

static int procs = 2, ngoroutines = 1000, sleep_ms = 100, rounds = 3;
static int trace_ms = 100;
static bool use_usleep;

static gort_waitgroup sleepers, monitor_done;
static int done;        /* set by main when the sleepers are done */
static int peak;        /* the monitor's highest /proc/self/task count */
static int failures;    /* sleeps that returned an error */

/* Threads of this process, as the kernel lists them. */
static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void sleeper(void *arg)
{
    (void)arg;
    struct timespec ts = {sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000};
    for (int r = 0; r < rounds; r++) {
        int rc;
        if (use_usleep)
            rc = GORT_BLOCKING(usleep((useconds_t)sleep_ms * 1000));
        else
            rc = gort_nanosleep(&ts, NULL);
        if (rc != 0)
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    }
    gort_waitgroup_done(&sleepers);
}

static void note_peak(int n)
{
    if (n > peak)
        peak = n;
}

static void monitor(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        gort_sleep((int64_t)trace_ms * 1000000);
        gort_schedtrace(0);
        int n = count_tasks();
        note_peak(n);
        printf("  /proc/self/task: %d threads\n", n);
        fflush(stdout);
    }
    gort_waitgroup_done(&monitor_done);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    int before = count_tasks();
    note_peak(before);
    if (trace_ms > 0) {
        gort_waitgroup_add(&monitor_done, 1);
        gort_go(monitor, NULL);
    }
    int64_t t0 = gort_nanotime();
    gort_waitgroup_add(&sleepers, ngoroutines);
    for (int i = 0; i < ngoroutines; i++) {
        if (gort_go(sleeper, NULL) < 0) {
            fprintf(stderr, "sysmon: gort_go failed at goroutine %d\n", i);
            exit(1);
        }
    }
    gort_waitgroup_wait(&sleepers);
    int64_t elapsed = gort_nanotime() - t0;
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    if (trace_ms > 0)
        gort_waitgroup_wait(&monitor_done);
    int end = count_tasks();
    note_peak(end);
    printf("%d goroutines x %d blocking sleeps of %d ms (%s), GOMAXPROCS=%d: "
           "%.2f s (one thread per P would need %.0f s)\n", ngoroutines,
           rounds, sleep_ms, use_usleep ? "GORT_BLOCKING(usleep)" :
           "gort_nanosleep", procs, (double)elapsed / 1e9,
           (double)ngoroutines * rounds * sleep_ms / 1000.0 / procs);
    printf("threads in /proc/self/task: %d before, at most %d, %d at the "
           "end\n", before, peak, end);
    if (failures)
        printf("%d sleeps returned an error\n", failures);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-usleep")) {
            use_usleep = true;
            i--; /* no value */
            continue;
        }
        if (!strcmp(argv[i], "-procs"))
            procs = intflag("sysmon", "-procs", v, 1);
        else if (!strcmp(argv[i], "-n"))
            ngoroutines = intflag("sysmon", "-n", v, 1);
        else if (!strcmp(argv[i], "-sleep-ms"))
            sleep_ms = intflag("sysmon", "-sleep-ms", v, 0);
        else if (!strcmp(argv[i], "-rounds"))
            rounds = intflag("sysmon", "-rounds", v, 1);
        else if (!strcmp(argv[i], "-trace"))
            trace_ms = intflag("sysmon", "-trace", v, 0);
        else {
            fprintf(stderr, "usage: sysmon [-procs N] [-n N] [-sleep-ms MS] "
                            "[-rounds N] [-trace MS] [-usleep]\n");
            return 2;
        }
    }
    if (use_usleep && sleep_ms >= 1000) {
        fprintf(stderr, "sysmon: -usleep wants -sleep-ms below 1000\n");
        return 2;
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "sysmon: gort_main: error %d\n", err);
        return 1;
    }
    return failures ? 1 : 0;
}
