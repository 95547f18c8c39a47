/* SPDX-License-Identifier: MIT */
/*
 * sysmon - goroutines in blocking system calls, and why a program has more
 * threads than GOMAXPROCS.
 *
 * GOMAXPROCS=2.  1000 goroutines each make 3 blocking sleeps of 100 ms in
 * a row through the syscall path (gort_nanosleep: nanosleep(2) between
 * gort_entersyscallblock and gort_exitsyscall).  A goroutine in a system
 * call keeps its thread, which sleeps in the kernel; its P goes to another
 * thread (one is started when none is idle), which runs the next
 * goroutine, which blocks in turn.  gort_nanosleep says the call blocks,
 * so the P is handed off as the call begins (Go's entersyscallblock);
 * with -usleep (GORT_BLOCKING, Go's entersyscall) the P waits until the
 * syscall watcher or sysmon sees the call last and retakes it.  So the
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
 *     check: every sleep returned 0: 0 errors in 3000 sleeps: ok
 *     check: the threads climbed far above GOMAXPROCS: at most 1004 in /proc/self/task (want at least 252: GOMAXPROCS 2 + a quarter of the 1000 sleepers): ok
 *     check: sleepers running gort code at once, between their sleeps: at most 2 (want at most 2: GOMAXPROCS 2, plus 0 preemptions meanwhile): ok
 *     check: the threads stayed for reuse once the sleeps returned: 1004 at the end, at most 1004 (want the same): ok
 *     check: the sleeps overlapped: 0.45 s (want under a tenth of the 150 s they take one at a time on each P): ok
 *
 * (the counts vary).  threads= is the runtime's count of its threads
 * (Ms), idlethreads= those parked with nothing to do: as the sleeps
 * return, the threads that slept find no P, queue their goroutines and
 * park, and stay for reuse.  Mirrors the Go program run with
 * GODEBUG=schedtrace=100 that starts 1000 goroutines each making blocking
 * system calls every 100 ms.
 *
 * The checks: no sleep failed; the process's threads (the most
 * /proc/self/task listed, before, at every schedtrace line and at the
 * end) reached GOMAXPROCS plus a quarter of the sleepers, where a thread
 * per sleeping goroutine makes it GOMAXPROCS plus all of them, and
 * without the hand-off it would stay at a few (a machine so slow that the
 * first sleeps return before a quarter of the goroutines have started
 * theirs would reuse the first threads and stop the climb: the quarter
 * leaves room for it); the number of sleepers between two of their sleeps
 * at once, counted by the sleepers themselves, never exceeded GOMAXPROCS
 * (a goroutine runs gort code only on a P, however many threads there
 * are); and no thread ended when the sleeps returned (the count at the
 * end is the highest seen).  The full form also judges the wall time
 * against the time the sleeps take one after another on each P, with a
 * factor of ten to spare; the short form prints it without judging it.
 * With sleeps under 50 ms the climb and the wall time are printed, not
 * judged, and so is the wall time with fewer than 20 sleepers per P.  The
 * exit status is 1 when a check fails, 2 on bad flags.
 *
 * Flags: -procs N (default 2), -n GOROUTINES (default 1000), -sleep-ms MS
 * (default 100), -rounds N (default 3), -trace MS (default 100, 0 = only
 * the summary), -usleep (sleep with GORT_BLOCKING(usleep(...)) instead of
 * gort_nanosleep), -short (the form `make test` runs: 300 goroutines, 2
 * rounds, a few tenths of a second; flags after it override it).
 */
#include <dirent.h>
#include <errno.h>
#include <gort.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "flags.h"

static int procs = 2, ngoroutines = 1000, sleep_ms = 100, rounds = 3;
static int trace_ms = 100;
static bool use_usleep, short_form;

static gort_waitgroup sleepers, monitor_done;
static int done;        /* set by main when the sleepers are done */
static int peak;        /* the monitor's highest /proc/self/task count */
static int failures;    /* sleeps that returned an error */
static int in_go;       /* sleepers between two sleeps (atomic) */
static int max_in_go;   /* the most of them at once (atomic) */

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

/* A sleeper runs gort code (holds a P) from its start to its first sleep,
 * between two sleeps, and after its last: enter_go and leave_go count
 * those stretches and keep the most at once.  Relaxed: the count is one
 * variable, whose read-modify-writes are totally ordered whatever the
 * ordering; the P's hand-off around each sleep orders them with the
 * scheduler. */
static void enter_go(void)
{
    int n = __atomic_add_fetch(&in_go, 1, __ATOMIC_RELAXED);
    int m = __atomic_load_n(&max_in_go, __ATOMIC_RELAXED);
    while (n > m && !__atomic_compare_exchange_n(&max_in_go, &m, n, false,
                                                 __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED))
        ;
}

static void leave_go(void)
{
    __atomic_sub_fetch(&in_go, 1, __ATOMIC_RELAXED);
}

/* About 20 µs of computation after each sleep (and before the first),
 * standing for the work a goroutine does with what its call returned:
 * long enough for the goroutines on the Ps to overlap in it, so that the
 * count above measures how many run at once.  No gort call: nothing in
 * it lets the goroutine go but a preemption by signal. */
static void work(void)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
           20000);
}

static void sleeper(void *arg)
{
    (void)arg;
    struct timespec ts = {sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000};
    enter_go();
    work();
    for (int r = 0; r < rounds; r++) {
        int rc;
        leave_go();
        if (use_usleep)
            rc = GORT_BLOCKING(usleep((useconds_t)sleep_ms * 1000));
        else
            rc = gort_nanosleep(&ts, NULL);
        enter_go();
        work();
        if (rc != 0)
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    }
    leave_go();
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

/* Goroutines preempted so far, by the signal or at a call into gort. */
static uint64_t preemptions(void)
{
    gort_metric_sample s[2] = {
        {.name = "/gort/sched/preemptions/async:events"},
        {.name = "/gort/sched/preemptions/sync:events"},
    };
    if (gort_metrics_read(s, 2) != 0 || s[0].kind != GORT_METRIC_UINT64 ||
        s[1].kind != GORT_METRIC_UINT64) {
        fprintf(stderr, "sysmon: cannot read the preemption counts\n");
        exit(1);
    }
    return s[0].u64 + s[1].u64;
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
    uint64_t preempt0 = preemptions();
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

    int nsleeps = ngoroutines * rounds;
    check(failures == 0, "every sleep returned 0: %d errors in %d sleeps",
          failures, nsleeps);
    int want = procs + ngoroutines / 4;
    if (sleep_ms >= 50)
        check(peak >= want,
              "the threads climbed far above GOMAXPROCS: at most %d in "
              "/proc/self/task (want at least %d: GOMAXPROCS %d + a quarter "
              "of the %d sleepers)", peak, want, procs, ngoroutines);
    else
        check(true, "the threads climbed to %d in /proc/self/task; not "
              "judged with sleeps under 50 ms, which may end before the "
              "threads pile up", peak);
    /* A goroutine preempted between two sleeps still counts, off its P,
     * while another runs there: each preemption may add one. */
    int most = __atomic_load_n(&max_in_go, __ATOMIC_RELAXED);
    uint64_t npreempt = preemptions() - preempt0;
    check((uint64_t)most <= (uint64_t)procs + npreempt,
          "sleepers running gort code at once, between their sleeps: at most "
          "%d (want at most %llu: GOMAXPROCS %d, plus %llu preemption%s "
          "meanwhile)",
          most, (unsigned long long)procs + npreempt, procs,
          (unsigned long long)npreempt, npreempt == 1 ? "" : "s");
    check(end == peak,
          "the threads stayed for reuse once the sleeps returned: %d at the "
          "end, at most %d (want the same)", end, peak);
    double serial = (double)nsleeps * sleep_ms / 1000.0 / procs;
    if (short_form)
        check(true, "the sleeps overlapped: %.2f s against %.0f s one at a "
              "time on each P; not judged in the short form (a timing, on "
              "a shared machine)", (double)elapsed / 1e9, serial);
    else if (sleep_ms < 50 || ngoroutines < 20 * procs)
        check(true, "the sleeps overlapped: %.2f s against %.0f s one at a "
              "time on each P; not judged with sleeps under 50 ms or fewer "
              "than 20 sleepers per P (no room for a factor of ten)",
              (double)elapsed / 1e9, serial);
    else
        check((double)elapsed / 1e9 < serial / 10,
              "the sleeps overlapped: %.2f s (want under a tenth of the "
              "%.0f s they take one at a time on each P)",
              (double)elapsed / 1e9, serial);
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
        if (!strcmp(argv[i], "-short")) {
            short_form = true;
            ngoroutines = 300;
            rounds = 2;
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
                            "[-rounds N] [-trace MS] [-usleep] [-short]\n");
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
    return failed ? 1 : 0;
}
