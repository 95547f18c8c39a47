/* SPDX-License-Identifier: MIT */
/*
 * schedtrace - reading the scheduler: schedtrace with scheddetail while
 * work spreads over the Ps, then every metric.
 *
 *   build/experiments/schedtrace [-procs 4] [-n 1000] [-burn-us 600]
 *                                [-trace 40] [-detail 1] [-short]
 *
 * The work-distribution program (one goroutine creates n goroutines that
 * each burn about 0.6 ms of CPU, GOMAXPROCS 4) run with
 * GORTDEBUG=schedtrace=40,scheddetail=1 (set here unless GORTDEBUG is
 * already set): every 40 ms sysmon prints, on stderr in Go's format, the
 * SCHED line with scheddetail's fields, one line per P (its status,
 * schedtick, syscalltick, M and local queue), one per M (its P, current
 * goroutine, spinning) and one per goroutine (status, wait reason, M).
 * Cut to a few lines of one trace (figures from runs are in
 * docs/experiments.md):
 *
 *     SCHED Tms: gomaxprocs=4 idleprocs=0 threads=5 spinningthreads=0 needspinning=0 idlethreads=0 runqueue=G gcwaiting=false nmidlelocked=0 stopwait=0 sysmonwait=false
 *       P0: status=1 schedtick=S syscalltick=0 m=0 runqsize=L gfreecnt=F timerslen=0
 *       P1: status=1 schedtick=S syscalltick=0 m=2 runqsize=L gfreecnt=F timerslen=0
 *       M3: p=2 curg=N throwing=0 preemptoff= locks=0 dying=0 spinning=false blocked=false lockedg=nil
 *       M1: p=nil curg=nil throwing=0 preemptoff= locks=2 dying=0 spinning=false blocked=false lockedg=nil
 *       G1: status=4(sync.WaitGroup.Wait) m=nil lockedm=nil
 *       G2: status=2() m=0 lockedm=nil
 *       G5: status=1() m=nil lockedm=nil
 *
 * P status 1 is running; G status 1 is runnable, 2 running, 4 waiting
 * (with the reason), 6 dead.  G1 is main, parked in the WaitGroup; G2 the
 * creator, still spawning onto P0's queue; M1 is sysmon, which never holds
 * a P.  Printing the detail holds the scheduler lock (as Go's does), so a
 * run with 1000 goroutine lines per trace takes longer than without.
 *
 * Then, on stdout, every metric as gort_metrics_read returns it (the
 * /sched/ ones under Go's names; histograms as their sample count and the
 * buckets holding the median and the 99th percentile), and a read of
 * /sched/threads:threads, the name Go 1.26's release notes give, which is
 * no metric (GORT_METRIC_BAD, Go's KindBad; the real one is
 * /sched/threads/total:threads):
 *
 *     metrics after the run (gort_metrics_read):
 *       /gort/sched/netpoll-wakeups:goroutines     0
 *       /gort/sched/preemptions/async:events       A
 *       /gort/sched/preemptions/sync:events        C
 *       /gort/sched/steals:goroutines              S
 *       ...
 *       /sched/goroutines-created:goroutines       1002
 *       ...
 *       /sched/latencies:seconds                   N samples, median in [lo, hi) s, p99 in [lo, hi) s
 *       ...
 *       /sched/threads/total:threads               5
 *       /sched/threads:threads                     kind 0: no such metric
 *
 * One goroutine in 8 is timed from creation to its first run: most wait
 * in a queue for a large part of the run, since 1000 x 0.6 ms of work
 * takes at least 150 ms on 4 Ps (and 300 ms on 2 cores).
 *
 * The work runs in a child (the program forks before any goroutine runs)
 * whose stderr the program reads: it passes the trace on to its own
 * stderr as it comes and reads the SCHED, P, M and G lines.  The child
 * prints the metrics and checks them; the parent then checks the trace:
 *
 *     check: the 13 /sched/ metrics of Go 1.27 are there under Go's names
 *       (13 of 13 read) and gort has no other /sched/ metric (13): ok
 *     check: /sched/threads:threads reads as kind 0 (no such metric) and
 *       /sched/threads/total:threads counts 5 threads >= 5 (the 4 the
 *       goroutines ran on, and sysmon): ok
 *     check: /sched/goroutines-created:goroutines counts main, the creator
 *       and its 1000: 1002 (want 1002): ok
 *     check: the sampled goroutines waited in the queues: median of
 *       /sched/latencies:seconds in [lo, hi) s, at least 0.015 s (a fifth
 *       of the 0.075 s a FIFO queue would give the median one): ok
 *     check: every trace has a line per P: N of N traces: ok
 *     check: the last trace (at Tms) has a line per M: 5 M lines for
 *       threads=5: ok
 *     check: main waits in the WaitGroup with no M
 *       (G1: status=4(sync.WaitGroup.Wait) m=nil) in K of N traces (want
 *       at least 1): ok
 *
 * Each goroutine notes the thread it runs on (gettid): every such thread
 * is an M, and sysmon is one more, so the thread count must be at least
 * their number plus one.  In FIFO order the median goroutine would wait
 * for half of the others to run, n/2 burns spread over the Ps; the bound
 * is a fifth of that (the samples are 1 in 8, and the queues are not
 * quite FIFO), and a busy machine only lengthens the waits.  An M being
 * made is counted in threads= a moment before it is listed: the M lines
 * are compared with threads= in the last trace only, when the Ms the run
 * needs exist.  The trace checks need the detail (-detail 1, and a
 * GORTDEBUG with scheddetail=1 when one is set); without it, or with
 * -trace 0, they are not judged.
 *
 * Flags: -procs N (default 4), -n GOROUTINES (default 1000),
 * -burn-us MICROSECONDS (default 600), -trace MS (default 40, 0 = off),
 * -detail 0|1 (default 1), -short (the form `make test` runs: 400
 * goroutines of 500 µs, a trace every 10 ms).  Exits 1 when a check fails
 * (or the child dies), 2 on bad flags.
 */
#include <gort.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "flags.h"

/* -1: not given; main fills in the defaults of the form it runs. */
static int procs = 4, ngoroutines = -1, burn_us = -1, trace_ms = -1;
static int detail = 1;
static bool short_form;
static gort_waitgroup wg;
static uint64_t sink; /* keeps the loop from being optimised away */

/* ---------------------------------------------------------------------------
 * The child: the work, the metrics and their checks.
 * ------------------------------------------------------------------------- */

/* The threads the goroutines ran on, by id: a lower bound for the
 * threads metric.  Only thread X adds X, so none is added twice. */
#define MAXTIDS 4096
static int tids[MAXTIDS];
static int ntids;

static void note_thread(void)
{
    gort_preempt_disable(); /* no move to another thread until noted */
    int tid = (int)syscall(SYS_gettid);
    int n = __atomic_load_n(&ntids, __ATOMIC_ACQUIRE);
    bool seen = false;
    for (int i = 0; i < n && i < MAXTIDS && !seen; i++)
        seen = __atomic_load_n(&tids[i], __ATOMIC_RELAXED) == tid;
    if (!seen) {
        int slot = __atomic_fetch_add(&ntids, 1, __ATOMIC_ACQ_REL);
        if (slot < MAXTIDS)
            __atomic_store_n(&tids[slot], tid, __ATOMIC_RELAXED);
    }
    gort_preempt_enable();
}

static void burn(void *arg)
{
    (void)arg;
    note_thread();
    int64_t end = gort_nanotime() + (int64_t)burn_us * 1000;
    uint64_t s = 0;
    while (gort_nanotime() < end)
        for (int i = 0; i < 1000; i++)
            s += (uint64_t)i ^ ((uint64_t)i >> 3);
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
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

/* The bucket [lo, hi) seconds holding the sample of rank q (0..1). */
static void quantile(const gort_histogram *h, double q, double *lo,
                     double *hi)
{
    uint64_t want = (uint64_t)(q * (double)(h->total - 1)), seen = 0;
    for (size_t i = 0; i < h->n; i++) {
        seen += h->counts[i];
        if (seen > want) {
            *lo = h->buckets[i];
            *hi = h->buckets[i + 1];
            return;
        }
    }
    *lo = *hi = 0;
}

/* The /sched/ metrics of Go 1.27's runtime/metrics. */
static const char *const go_sched[] = {
    "/sched/gomaxprocs:threads",
    "/sched/goroutines-created:goroutines",
    "/sched/goroutines/not-in-go:goroutines",
    "/sched/goroutines/runnable:goroutines",
    "/sched/goroutines/running:goroutines",
    "/sched/goroutines/waiting:goroutines",
    "/sched/goroutines:goroutines",
    "/sched/latencies:seconds",
    "/sched/pauses/stopping/gc:seconds",
    "/sched/pauses/stopping/other:seconds",
    "/sched/pauses/total/gc:seconds",
    "/sched/pauses/total/other:seconds",
    "/sched/threads/total:threads",
};
#define NGO_SCHED (int)(sizeof go_sched / sizeof go_sched[0])

static const gort_metric_sample *find(const gort_metric_sample *s, size_t n,
                                      const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0)
            return &s[i];
    return NULL;
}

/* The checks on what print_metrics read: s[0..n) every metric, s[n] the
 * name that is none. */
static void check_metrics(const gort_metric_sample *s, size_t n)
{
    int found = 0, listed = 0;
    for (int i = 0; i < NGO_SCHED; i++) {
        const gort_metric_sample *m = find(s, n, go_sched[i]);
        found += m && m->kind != GORT_METRIC_BAD;
    }
    for (size_t i = 0; i < n; i++)
        listed += strncmp(s[i].name, "/sched/", 7) == 0;
    check(found == NGO_SCHED && listed == NGO_SCHED,
          "the %d /sched/ metrics of Go 1.27 are there under Go's names (%d "
          "of %d read) and gort has no other /sched/ metric (%d)",
          NGO_SCHED, found, NGO_SCHED, listed);

    /* Every thread a goroutine ran on is an M; sysmon is one more. */
    int ran_on = __atomic_load_n(&ntids, __ATOMIC_ACQUIRE);
    if (ran_on > MAXTIDS)
        ran_on = MAXTIDS;
    const gort_metric_sample *t = find(s, n, "/sched/threads/total:threads");
    uint64_t threads = t && t->kind == GORT_METRIC_UINT64 ? t->u64 : 0;
    check(s[n].kind == GORT_METRIC_BAD && threads >= (uint64_t)ran_on + 1,
          "/sched/threads:threads reads as kind %d (no such metric) and "
          "/sched/threads/total:threads counts %llu threads >= %d (the %d "
          "the goroutines ran on, and sysmon)",
          s[n].kind, (unsigned long long)threads, ran_on + 1, ran_on);

    const gort_metric_sample *c =
        find(s, n, "/sched/goroutines-created:goroutines");
    uint64_t created = c && c->kind == GORT_METRIC_UINT64 ? c->u64 : 0;
    check(created == (uint64_t)ngoroutines + 2,
          "/sched/goroutines-created:goroutines counts main, the creator and "
          "its %d: %llu (want %d)",
          ngoroutines, (unsigned long long)created, ngoroutines + 2);

    const gort_metric_sample *l = find(s, n, "/sched/latencies:seconds");
    double burn_s = burn_us / 1e6;
    if (!l || l->kind != GORT_METRIC_HISTOGRAM || l->hist.total == 0) {
        check(false, "/sched/latencies:seconds has samples");
    } else if (burn_us == 0) {
        printf("check: the latencies are not judged: the goroutines do not "
               "burn (-burn-us 0)\n");
    } else {
        /* In FIFO order the median goroutine waits for half of the others,
         * spread over the Ps, each taking at least burn_s. */
        double fifo = (double)ngoroutines / 2 / procs * burn_s, lo, hi;
        quantile(&l->hist, 0.5, &lo, &hi);
        check(lo >= fifo / 5,
              "the sampled goroutines waited in the queues: median of "
              "/sched/latencies:seconds in [%g, %g) s, at least %g s (a "
              "fifth of the %g s a FIFO queue would give the median one)",
              lo, hi, fifo / 5, fifo);
    }
}

static void print_metrics(void)
{
    size_t n;
    const gort_metric_desc *d = gort_metrics_all(&n);
    gort_metric_sample *s = calloc(n + 1, sizeof *s);
    uint64_t *counts = calloc(n * GORT_METRIC_HIST_BUCKETS, sizeof *counts);
    if (!s || !counts) {
        fprintf(stderr, "schedtrace: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        s[i].name = d[i].name;
        s[i].hist.counts = counts + i * GORT_METRIC_HIST_BUCKETS;
        s[i].hist.cap = GORT_METRIC_HIST_BUCKETS;
    }
    s[n].name = "/sched/threads:threads";
    if (gort_metrics_read(s, n + 1) != 0) {
        fprintf(stderr, "schedtrace: gort_metrics_read failed\n");
        exit(1);
    }
    printf("metrics after the run (gort_metrics_read):\n");
    for (size_t i = 0; i <= n; i++) {
        printf("  %-42s ", s[i].name);
        switch (s[i].kind) {
        case GORT_METRIC_UINT64:
            printf("%llu\n", (unsigned long long)s[i].u64);
            break;
        case GORT_METRIC_FLOAT64:
            printf("%g\n", s[i].f64);
            break;
        case GORT_METRIC_HISTOGRAM: {
            printf("%llu samples", (unsigned long long)s[i].hist.total);
            if (s[i].hist.total > 0) {
                double lo, hi, lo99, hi99;
                quantile(&s[i].hist, 0.5, &lo, &hi);
                quantile(&s[i].hist, 0.99, &lo99, &hi99);
                printf(", median in [%g, %g) s, p99 in [%g, %g) s", lo, hi,
                       lo99, hi99);
            }
            printf("\n");
            break;
        }
        default:
            printf("kind %d: no such metric\n", s[i].kind);
            break;
        }
    }
    check_metrics(s, n);
    free(counts);
    free(s);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    gort_waitgroup_add(&wg, 1);
    gort_go(creator, NULL);
    gort_waitgroup_wait(&wg);
    print_metrics();
}

/* ---------------------------------------------------------------------------
 * The parent: runs the child, passes its stderr on and reads the trace.
 * ------------------------------------------------------------------------- */

/* One trace: its SCHED line's figures and the detail lines after it. */
struct trace {
    long long ms;
    int gomaxprocs, threads;
    int plines, mlines;
    bool g1waits; /* G1: status=4(sync.WaitGroup.Wait) m=nil */
};

static struct trace cur, last;
/* Main, parked in its WaitGroup: no M runs it. */
static const char g1_waiting[] = "  G1: status=4(sync.WaitGroup.Wait) m=nil ";
static int ntraces, pline_ok, g1_waits;

static void end_trace(void)
{
    if (cur.gomaxprocs == 0)
        return;
    ntraces++;
    pline_ok += cur.plines == cur.gomaxprocs;
    g1_waits += cur.g1waits;
    last = cur;
    memset(&cur, 0, sizeof cur);
}

static void trace_line(const char *l)
{
    long long ms;
    int id;
    if (sscanf(l, "SCHED %lldms:", &ms) == 1) {
        end_trace();
        const char *g = strstr(l, " gomaxprocs="), *t = strstr(l, " threads=");
        /* Only the detail's SCHED lines (no per-P brackets) start a trace
         * that the checks read. */
        if (g && t && !strchr(l, '[') &&
            sscanf(g, " gomaxprocs=%d", &cur.gomaxprocs) == 1 &&
            sscanf(t, " threads=%d", &cur.threads) == 1)
            cur.ms = ms;
        else
            cur.gomaxprocs = 0;
    } else if (cur.gomaxprocs == 0)
        return;
    else if (sscanf(l, "  P%d:", &id) == 1)
        cur.plines++;
    else if (sscanf(l, "  M%d:", &id) == 1)
        cur.mlines++;
    else if (strncmp(l, g1_waiting, sizeof g1_waiting - 1) == 0)
        cur.g1waits = true;
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
        else if (strcmp(argv[i], "-detail") == 0 && i + 1 < argc)
            detail = intflag(argv[0], "-detail", argv[++i], 0);
        else if (strcmp(argv[i], "-short") == 0)
            short_form = true;
        else {
            fprintf(stderr,
                    "usage: %s [-procs N] [-n N] [-burn-us US] [-trace MS] "
                    "[-detail 0|1] [-short]\n"
                    "  (unknown or incomplete flag: %s)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    if (ngoroutines < 0)
        ngoroutines = short_form ? 400 : 1000;
    if (burn_us < 0)
        burn_us = short_form ? 500 : 600;
    if (trace_ms < 0)
        trace_ms = short_form ? 10 : 40;
    if (procs > GORT_MAX_PROCS) {
        fprintf(stderr, "%s: -procs wants at most %d, got %d\n", argv[0],
                GORT_MAX_PROCS, procs);
        return 2;
    }
    if (trace_ms > 0 && !getenv("GORTDEBUG")) {
        char buf[64];
        snprintf(buf, sizeof buf, "schedtrace=%d,scheddetail=%d", trace_ms,
                 detail ? 1 : 0);
        setenv("GORTDEBUG", buf, 1);
    }
    int st = run_child("schedtrace", main_g, trace_line);
    end_trace();
    if (child_broke(st))
        return 1;
    failed = WEXITSTATUS(st);

    if (ntraces == 0) {
        printf("check: the trace is not judged: no scheddetail traces to "
               "read (-trace 0 or -detail 0)\n");
        return failed;
    }
    check(pline_ok == ntraces, "every trace has a line per P: %d of %d traces",
          pline_ok, ntraces);
    check(last.mlines == last.threads,
          "the last trace (at %lldms) has a line per M: %d M lines for "
          "threads=%d",
          last.ms, last.mlines, last.threads);
    check(g1_waits >= 1,
          "main waits in the WaitGroup with no M "
          "(G1: status=4(sync.WaitGroup.Wait) m=nil) in %d of %d traces "
          "(want at least 1)",
          g1_waits, ntraces);
    return failed;
}
