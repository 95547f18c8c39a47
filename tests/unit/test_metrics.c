/* SPDX-License-Identifier: MIT */
/*
 * test_metrics.c - the metrics against ground truth in controlled
 * programs.
 */
#include "test_util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NB GORT_METRIC_HIST_BUCKETS

/* The value of a uint64 metric; fails the case on any error. */
/* The counts of a histogram metric into counts[NB]; returns the total. */
static uint64_t mhist(const char *name, uint64_t *counts)
{
    gort_metric_sample s;
    memset(&s, 0, sizeof s);
    s.hist.counts = counts;
    s.hist.cap = NB;
    CHECK_EQ(gort_metric_read(name, &s), 0);
    CHECK_EQ(s.kind, GORT_METRIC_HISTOGRAM);
    CHECK_EQ(s.hist.n, NB);
    uint64_t sum = 0;
    for (int i = 0; i < NB; i++)
        sum += counts[i];
    CHECK_EQ(sum, s.hist.total);
    return s.hist.total;
}

/* Yield until metric `name` reaches at least want; fails after 30 s. */
static uint64_t await_metric(const char *name, uint64_t want)
{
    int64_t deadline = gort_nanotime() + 30000 * MS;
    for (;;) {
        uint64_t v = metric_u64(name);
        if (v >= want)
            return v;
        if (gort_nanotime() > deadline) {
            fprintf(stderr, "%s = %llu after 30 s, want >= %llu\n", name,
                    (unsigned long long)v, (unsigned long long)want);
            CHECK(0);
        }
        gort_sleep(1 * MS);
    }
}

/* Burn about us microseconds of CPU without yielding. */
static void burn_us(int64_t us)
{
    int64_t end = gort_nanotime() + us * 1000;
    volatile uint64_t s = 0;
    while (gort_nanotime() < end)
        for (int i = 0; i < 200; i++)
            s += (uint64_t)i ^ (s >> 3);
}

/* ---------------------------------------------------------------------------
 * table
 * ------------------------------------------------------------------------- */

/* Go's syntax: ^/[^:]+:[^:*\/]+([*\/][^:*\/]+)*$ */
static bool name_ok(const char *n)
{
    const char *colon = strchr(n, ':');
    if (n[0] != '/' || !colon || colon == n + 1 || strchr(colon + 1, ':'))
        return false;
    const char *u = colon + 1;
    if (!*u || *u == '*' || *u == '/')
        return false;
    for (const char *c = u; *c; c++)
        if ((*c == '*' || *c == '/') && (!c[1] || c[1] == '*' || c[1] == '/'))
            return false;
    return true;
}

/* The description table: sorted, Go's name syntax, every Go scheduler metric
 * present with its kind. */
TEST(table)
{
    static const struct {
        const char *name;
        int kind;
        bool cumulative;
    } want[] = {
        {"/sched/gomaxprocs:threads", GORT_METRIC_UINT64, false},
        {"/sched/goroutines-created:goroutines", GORT_METRIC_UINT64, true},
        {"/sched/goroutines/not-in-go:goroutines", GORT_METRIC_UINT64, false},
        {"/sched/goroutines/runnable:goroutines", GORT_METRIC_UINT64, false},
        {"/sched/goroutines/running:goroutines", GORT_METRIC_UINT64, false},
        {"/sched/goroutines/waiting:goroutines", GORT_METRIC_UINT64, false},
        {"/sched/goroutines:goroutines", GORT_METRIC_UINT64, false},
        {"/sched/latencies:seconds", GORT_METRIC_HISTOGRAM, true},
        {"/sched/pauses/stopping/gc:seconds", GORT_METRIC_HISTOGRAM, true},
        {"/sched/pauses/stopping/other:seconds", GORT_METRIC_HISTOGRAM, true},
        {"/sched/pauses/total/gc:seconds", GORT_METRIC_HISTOGRAM, true},
        {"/sched/pauses/total/other:seconds", GORT_METRIC_HISTOGRAM, true},
        {"/sched/threads/total:threads", GORT_METRIC_UINT64, false},
        {"/gort/hook/handoffs:calls", GORT_METRIC_UINT64, true},
        {"/gort/hook/parked:calls", GORT_METRIC_UINT64, true},
        {"/gort/sched/gomaxprocs-updates:events", GORT_METRIC_UINT64, true},
        {"/gort/sched/steals:goroutines", GORT_METRIC_UINT64, true},
        {"/gort/sched/preemptions/sync:events", GORT_METRIC_UINT64, true},
        {"/gort/sched/preemptions/async:events", GORT_METRIC_UINT64, true},
        {"/gort/sched/syscall-handoffs:events", GORT_METRIC_UINT64, true},
        {"/gort/sched/netpoll-naps:events", GORT_METRIC_UINT64, true},
        {"/gort/sched/netpoll-wakeups:goroutines", GORT_METRIC_UINT64, true},
        {"/gort/sched/threads/spinning:threads", GORT_METRIC_UINT64, false},
    };
    size_t n = 0;
    const gort_metric_desc *d = gort_metrics_all(&n);
    CHECK(d != NULL);
    CHECK_EQ(n, sizeof want / sizeof want[0]);
    CHECK(gort_metrics_all(NULL) == d);
    for (size_t i = 0; i < n; i++) {
        CHECK(name_ok(d[i].name));
        CHECK(d[i].description && strlen(d[i].description) > 20);
        if (i > 0)
            CHECK_LT(strcmp(d[i - 1].name, d[i].name), 0);
    }
    for (size_t w = 0; w < n; w++) {
        size_t i = 0;
        while (i < n && strcmp(d[i].name, want[w].name))
            i++;
        if (i == n)
            fprintf(stderr, "missing %s\n", want[w].name);
        CHECK_LT(i, n);
        CHECK_EQ(d[i].kind, want[w].kind);
        CHECK_EQ(d[i].cumulative, want[w].cumulative);
    }
}

/* ---------------------------------------------------------------------------
 * bad_input
 * ------------------------------------------------------------------------- */

static void bad_main(void *arg)
{
    (void)arg;
    uint64_t counts[NB + 1];
    gort_metric_sample s[5];
    memset(s, 0, sizeof s);
    s[0].name = "/sched/gomaxprocs:threads";
    s[1].name = "/no/such:metric";
    s[2].name = NULL;
    /* The name in Go 1.26's release notes; the real one is
     * /sched/threads/total:threads. */
    s[3].name = "/sched/threads:threads";
    s[4].name = "/sched/latencies:seconds";
    s[4].hist.counts = counts;
    s[4].hist.cap = 3; /* too small: only 3 counts written */
    for (int i = 0; i <= NB; i++)
        counts[i] = 0xdeadbeef;
    CHECK_EQ(gort_metrics_read(s, 5), 0);
    CHECK_EQ(s[0].kind, GORT_METRIC_UINT64);
    CHECK_EQ(s[0].u64, (uint64_t)gort_gomaxprocs(0));
    CHECK_EQ(s[1].kind, GORT_METRIC_BAD);
    CHECK_EQ(s[2].kind, GORT_METRIC_BAD);
    CHECK_EQ(s[3].kind, GORT_METRIC_BAD);
    CHECK_EQ(s[4].kind, GORT_METRIC_HISTOGRAM);
    CHECK_EQ(s[4].hist.n, NB);
    CHECK(s[4].hist.buckets != NULL);
    for (int i = 0; i < 3; i++)
        CHECK_NE(counts[i], 0xdeadbeef);
    for (int i = 3; i <= NB; i++)
        CHECK_EQ(counts[i], 0xdeadbeef);
    /* No counts array: the total still comes back. */
    gort_metric_sample h;
    memset(&h, 0, sizeof h);
    CHECK_EQ(gort_metric_read("/sched/latencies:seconds", &h), 0);
    CHECK_EQ(h.hist.n, NB);
    uint64_t full[NB];
    CHECK_EQ(mhist("/sched/latencies:seconds", full), h.hist.total);

    gort_metric_sample one;
    memset(&one, 0, sizeof one);
    CHECK_EQ(gort_metric_read("/sched/goroutines:goroutine", &one), -ENOENT);
    CHECK_EQ(one.kind, GORT_METRIC_BAD);
    CHECK_EQ(gort_metric_read(NULL, &one), -ENOENT);
    CHECK_EQ(gort_metric_read("/sched/goroutines:goroutines", NULL), -EINVAL);
    CHECK_EQ(gort_metrics_read(NULL, 1), -EINVAL);
    CHECK_EQ(gort_metrics_read(NULL, 0), 0);
    CHECK_EQ(gort_metrics_prometheus(NULL, NULL), -EINVAL);
    CHECK_EQ(gort_metrics_write_prometheus(-1), -EBADF);
}

/* Unknown and NULL names read as GORT_METRIC_BAD without disturbing the
 * others; -EINVAL, -ENOENT, -EPERM outside gort_main; histogram counts written
 * only up to the caller's capacity. */
TEST(bad_input)
{
    /* Outside gort_main: -EPERM, and every kind BAD. */
    gort_metric_sample s;
    memset(&s, 0, sizeof s);
    s.name = "/sched/gomaxprocs:threads";
    s.kind = 77;
    CHECK_EQ(gort_metrics_read(&s, 1), -EPERM);
    CHECK_EQ(s.kind, GORT_METRIC_BAD);
    CHECK_EQ(gort_metric_read("/sched/gomaxprocs:threads", &s), -EPERM);
    char *text = (char *)&s;
    CHECK_EQ(gort_metrics_prometheus(&text, NULL), -EPERM);
    CHECK(text == NULL);
    CHECK_EQ(gort_metrics_write_prometheus(1), -EPERM);
    run_main(bad_main, NULL);
    /* And again after it returned. */
    CHECK_EQ(gort_metric_read("/sched/gomaxprocs:threads", &s), -EPERM);
}

/* ---------------------------------------------------------------------------
 * waiting
 * ------------------------------------------------------------------------- */

#define W_N 1000
static gort_chan *w_stop;
static gort_waitgroup w_wg;

static void w_parker(void *arg)
{
    (void)arg;
    gort_chan_recv(w_stop, NULL);
    gort_waitgroup_done(&w_wg);
}

static void waiting_main(void *arg)
{
    (void)arg;
    w_stop = make_chan(0, 0);
    CHECK_EQ(metric_u64("/sched/goroutines:goroutines"), 1);
    CHECK_EQ(metric_u64("/sched/goroutines/running:goroutines"), 1);
    CHECK_EQ(metric_u64("/sched/goroutines/waiting:goroutines"), 0);
    gort_waitgroup_add(&w_wg, W_N);
    for (int i = 0; i < W_N; i++)
        CHECK(gort_go(w_parker, NULL) > 0);
    await_metric("/sched/goroutines/waiting:goroutines", W_N);
    const char *names[] = {
        "/sched/goroutines:goroutines",
        "/sched/goroutines/waiting:goroutines",
        "/sched/goroutines/running:goroutines",
        "/sched/goroutines/runnable:goroutines",
        "/sched/goroutines/not-in-go:goroutines",
    };
    gort_metric_sample s[5];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 5; i++)
        s[i].name = names[i];
    CHECK_EQ(gort_metrics_read(s, 5), 0);
    say("parked %d: goroutines=%llu waiting=%llu running=%llu "
        "runnable=%llu not-in-go=%llu\n", W_N,
        (unsigned long long)s[0].u64, (unsigned long long)s[1].u64,
        (unsigned long long)s[2].u64, (unsigned long long)s[3].u64,
        (unsigned long long)s[4].u64);
    CHECK_EQ(s[0].u64, W_N + 1);
    CHECK_EQ(s[1].u64, W_N);
    CHECK_EQ(s[2].u64, 1); /* this goroutine */
    CHECK_EQ(s[3].u64, 0);
    CHECK_EQ(s[4].u64, 0);
    CHECK_EQ((int64_t)s[0].u64, gort_numgoroutine());
    gort_chan_close(w_stop);
    gort_waitgroup_wait(&w_wg);
    /* They end right after Done: wait for the last exits. */
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (metric_u64("/sched/goroutines:goroutines") != 1) {
        CHECK(gort_nanotime() < deadline);
        gort_sleep(1 * MS);
    }
    CHECK_EQ(metric_u64("/sched/goroutines/waiting:goroutines"), 0);
    free_chan(w_stop);
}

/* 1000 goroutines parked on a channel: waiting=1000, goroutines=1001,
 * running=1, runnable=0, exactly; back to 1 goroutine when they end. */
TEST(waiting)
{
    run_main(waiting_main, NULL);
}

/* ---------------------------------------------------------------------------
 * running_runnable
 * ------------------------------------------------------------------------- */

#define RR_K 8
static int rr_ready, rr_exit;
static gort_waitgroup rr_wg;

static void rr_spinner(void *arg)
{
    (void)arg;
    ATOMIC_INC(&rr_ready);
    while (!ATOMIC_LOAD(&rr_exit)) {
        burn_us(1000);
        gort_gosched();
    }
    gort_waitgroup_done(&rr_wg);
}

static void rr_main(void *arg)
{
    (void)arg;
    int old = gort_gomaxprocs(1);
    gort_waitgroup_add(&rr_wg, RR_K);
    for (int i = 0; i < RR_K; i++)
        CHECK(gort_go(rr_spinner, NULL) > 0);
    while (ATOMIC_LOAD(&rr_ready) < RR_K)
        gort_gosched();
    /* One P, held by this goroutine: the 8 spinners can only be queued. */
    gort_metric_sample s[2];
    memset(s, 0, sizeof s);
    s[0].name = "/sched/goroutines/running:goroutines";
    s[1].name = "/sched/goroutines/runnable:goroutines";
    CHECK_EQ(gort_metrics_read(s, 2), 0);
    say("GOMAXPROCS=1: running=%llu runnable=%llu\n",
        (unsigned long long)s[0].u64, (unsigned long long)s[1].u64);
    CHECK_EQ(s[0].u64, 1);
    CHECK_EQ(s[1].u64, RR_K);

    /* Four Ps: all four end up running goroutines. */
    gort_gomaxprocs(4);
    int64_t deadline = gort_nanotime() + 30000 * MS;
    uint64_t running = 0, runnable = 0;
    for (;;) {
        CHECK_EQ(gort_metrics_read(s, 2), 0);
        running = s[0].u64;
        runnable = s[1].u64;
        CHECK_LE(running, 4);
        if (running == 4)
            break;
        CHECK(gort_nanotime() < deadline);
        gort_sleep(2 * MS);
    }
    say("GOMAXPROCS=4: running=%llu runnable=%llu threads=%llu\n",
        (unsigned long long)running, (unsigned long long)runnable,
        (unsigned long long)metric_u64("/sched/threads/total:threads"));
    CHECK_GE(metric_u64("/sched/threads/total:threads"), 4 + 1); /* + sysmon */
    ATOMIC_STORE(&rr_exit, 1);
    gort_waitgroup_wait(&rr_wg);
    gort_gomaxprocs(old);
}

/* One P busy with main: running=1 and the 8 other spinning goroutines
 * runnable=8, exactly; with 4 Ps, 4 running. */
TEST(running_runnable)
{
    run_main(rr_main, NULL);
}

/* ---------------------------------------------------------------------------
 * created
 * ------------------------------------------------------------------------- */

static gort_waitgroup cr_wg;

static void cr_quick(void *arg)
{
    (void)arg;
    gort_waitgroup_done(&cr_wg);
}

static void *cr_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 10; i++)
        CHECK(gort_go(cr_quick, NULL) > 0);
    return NULL;
}

static void created_main(void *arg)
{
    (void)arg;
    uint64_t c0 = metric_u64("/sched/goroutines-created:goroutines");
    CHECK_EQ(c0, 1); /* main */
    gort_waitgroup_add(&cr_wg, 100);
    for (int i = 0; i < 100; i++)
        CHECK(gort_go(cr_quick, NULL) > 0);
    gort_waitgroup_wait(&cr_wg);
    CHECK_EQ(metric_u64("/sched/goroutines-created:goroutines"), c0 + 100);
    /* From a thread gort did not make (joined first: until it calls
     * gort, nothing says it will, and a wait would be a deadlock). */
    gort_waitgroup_add(&cr_wg, 10);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, cr_thread, NULL), 0);
    GORT_BLOCKING(pthread_join(t, NULL));
    gort_waitgroup_wait(&cr_wg);
    CHECK_EQ(metric_u64("/sched/goroutines-created:goroutines"), c0 + 110);
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (metric_u64("/sched/goroutines:goroutines") != 1) {
        CHECK(gort_nanotime() < deadline);
        gort_sleep(1 * MS);
    }
}

/* goroutines-created grows by exactly what was started, from goroutines and
 * from a foreign thread. */
TEST(created)
{
    run_main(created_main, NULL);
}

/* ---------------------------------------------------------------------------
 * threads
 * ------------------------------------------------------------------------- */

#define TH_N 10
static int th_before; /* threads of the process before gort_main */
static int th_fds[TH_N][2];
static gort_waitgroup th_wg;

/* The metric and /proc/self/task agree once threads stop changing: read
 * metric, task list, metric until both metric reads match. */
static void threads_agree(const char *when)
{
    for (int tries = 0;; tries++) {
        uint64_t m1 = metric_u64("/sched/threads/total:threads");
        int proc = count_threads();
        uint64_t m2 = metric_u64("/sched/threads/total:threads");
        if (m1 == m2 && (int)m1 + th_before - 1 == proc) {
            say("%s: threads/total=%llu, /proc/self/task=%d\n", when,
                (unsigned long long)m1, proc);
            return;
        }
        if (tries == 200) {
            fprintf(stderr, "%s: threads/total %llu..%llu, /proc/self/task "
                            "%d (%d before gort_main)\n", when,
                    (unsigned long long)m1, (unsigned long long)m2, proc,
                    th_before);
            CHECK(0);
        }
        gort_sleep(10 * MS);
    }
}

static void th_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    CHECK_EQ(gort_read(th_fds[i][0], &c, 1), 1); /* pipe(2): the syscall path */
    gort_waitgroup_done(&th_wg);
}

static void threads_main(void *arg)
{
    (void)arg;
    gort_sleep(20 * MS);
    threads_agree("idle");
    uint64_t h0 = metric_u64("/gort/sched/syscall-handoffs:events");
    for (int i = 0; i < TH_N; i++)
        CHECK_EQ(pipe(th_fds[i]), 0);
    gort_waitgroup_add(&th_wg, TH_N);
    for (int i = 0; i < TH_N; i++)
        CHECK(gort_go(th_reader, (void *)(intptr_t)i) > 0);
    await_metric("/sched/goroutines/not-in-go:goroutines", TH_N);
    CHECK_EQ(metric_u64("/sched/goroutines/not-in-go:goroutines"), TH_N);
    CHECK_EQ(metric_u64("/sched/goroutines/waiting:goroutines"), 0);
    threads_agree("10 goroutines in read(2)");
    CHECK_GE(metric_u64("/sched/threads/total:threads"), TH_N + 2);
    uint64_t h1 = metric_u64("/gort/sched/syscall-handoffs:events");
    say("syscall hand-offs: %llu\n", (unsigned long long)(h1 - h0));
    CHECK_GT(h1, h0);
    for (int i = 0; i < TH_N; i++)
        CHECK_EQ(write(th_fds[i][1], "x", 1), 1);
    gort_waitgroup_wait(&th_wg);
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (metric_u64("/sched/goroutines/not-in-go:goroutines") != 0) {
        CHECK(gort_nanotime() < deadline);
        gort_sleep(1 * MS);
    }
    threads_agree("after the reads");
    for (int i = 0; i < TH_N; i++) {
        close(th_fds[i][0]);
        close(th_fds[i][1]);
    }
}

static void *th_nothing(void *arg)
{
    return arg;
}

/* /sched/threads/total:threads equals the entries of /proc/self/task (less the
 * threads that were there before gort_main), also with 10 goroutines blocked
 * in read(2), which show as not-in-go=10 and make syscall hand-offs. */
TEST(threads)
{
    /* Threads that are not the runtime's: ThreadSanitizer's own, which it
     * starts with the first pthread_create, for instance. */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, th_nothing, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    usleep(10 * 1000);
    th_before = count_threads();
    run_main(threads_main, NULL);
}

/* ---------------------------------------------------------------------------
 * latencies
 * ------------------------------------------------------------------------- */

#define LT_K 8
#define LT_ROUNDS 40
static gort_waitgroup lt_wg;

static void lt_worker(void *arg)
{
    (void)arg;
    for (int r = 0; r < LT_ROUNDS; r++) {
        burn_us(1000);
        gort_gosched();
    }
    gort_waitgroup_done(&lt_wg);
}

/* Samples in buckets that start at or above `sec` seconds. */
static uint64_t at_least(const double *b, const uint64_t *c, double sec)
{
    uint64_t n = 0;
    for (int i = 0; i < NB; i++)
        if (b[i] >= sec)
            n += c[i];
    return n;
}

static void latencies_main(void *arg)
{
    (void)arg;
    gort_metric_sample s;
    memset(&s, 0, sizeof s);
    CHECK_EQ(gort_metric_read("/sched/latencies:seconds", &s), 0);
    const double *b = s.hist.buckets;
    /* Go's timeHistogram boundaries. */
    CHECK(isinf(b[0]) && b[0] < 0);
    CHECK(isinf(b[NB]) && b[NB] > 0);
    CHECK(b[1] == 0);
    CHECK(b[2] == 64e-9);
    CHECK(b[5] == 256e-9);
    CHECK(b[9] == 512e-9);
    CHECK(b[10] == 640e-9);
    CHECK(b[NB - 1] == (double)(1ULL << 47) / 1e9);
    for (int i = 0; i < NB; i++)
        CHECK(b[i] < b[i + 1]);

    uint64_t before[NB], after[NB];
    int old = gort_gomaxprocs(1);
    uint64_t t0 = mhist("/sched/latencies:seconds", before);
    gort_waitgroup_add(&lt_wg, LT_K);
    for (int i = 0; i < LT_K; i++)
        CHECK(gort_go(lt_worker, NULL) > 0);
    gort_waitgroup_wait(&lt_wg);
    uint64_t t1 = mhist("/sched/latencies:seconds", after);
    uint64_t slow = at_least(b, after, 1e-3) - at_least(b, before, 1e-3);
    say("%d goroutines x %d rounds of 1 ms on 1 P: %llu samples, %llu of "
        "them >= 1 ms\n", LT_K, LT_ROUNDS, (unsigned long long)(t1 - t0),
        (unsigned long long)slow);
    /* 320 rounds, one in 8 timed: about 40 samples, each a wait behind
     * the 7 others' milliseconds. */
    CHECK_GE(t1 - t0, 25);
    CHECK_LE(t1 - t0, 120);
    CHECK_GE(slow, 20);
    /* Each wait is the others' 7 ms, give or take a loaded machine: none
     * near half a second (the samples' clock converts at the right rate). */
    CHECK_EQ(at_least(b, after, 0.5) - at_least(b, before, 0.5), 0);
    gort_gomaxprocs(old);
}

/* 8 goroutines taking turns on one P, 1 ms each: the latency histogram gains
 * about one sample in 8 rounds, most of them over 1 ms; Go's boundaries. */
TEST(latencies)
{
    run_main(latencies_main, NULL);
}

/* ---------------------------------------------------------------------------
 * pauses
 * ------------------------------------------------------------------------- */

/* The bucket where b has one more sample than a; -1 if none or several. */
static int new_bucket(const uint64_t *a, const uint64_t *b)
{
    int at = -1;
    for (int i = 0; i < NB; i++) {
        if (b[i] == a[i])
            continue;
        if (at >= 0 || b[i] != a[i] + 1)
            return -1;
        at = i;
    }
    return at;
}

static void pauses_main(void *arg)
{
    (void)arg;
    const char *stop = "/sched/pauses/stopping/other:seconds";
    const char *total = "/sched/pauses/total/other:seconds";
    uint64_t st0[NB], to0[NB], st1[NB], to1[NB], gc[NB];
    uint64_t nst = mhist(stop, st0), nto = mhist(total, to0);
    int old = gort_gomaxprocs(0);
    gort_gomaxprocs(old == 1 ? 2 : 1);
    CHECK_EQ(mhist(stop, st1), nst + 1);
    CHECK_EQ(mhist(total, to1), nto + 1);
    int bs = new_bucket(st0, st1), bt = new_bucket(to0, to1);
    CHECK_GE(bs, 1); /* not a negative duration */
    CHECK_GE(bt, bs); /* stopping is part of the total */
    gort_metric_sample b;
    memset(&b, 0, sizeof b);
    CHECK_EQ(gort_metric_read(stop, &b), 0);
    const double *bb = b.hist.buckets;
    say("GOMAXPROCS %d -> %d: stopping in [%g, %g) s, total in [%g, %g) s\n",
        old, old == 1 ? 2 : 1, bb[bs], bb[bs + 1], bb[bt], bb[bt + 1]);
    gort_gomaxprocs(old);
    CHECK_EQ(mhist(stop, st0), nst + 2);
    CHECK_EQ(mhist(total, to0), nto + 2);
    CHECK_EQ(mhist("/sched/pauses/stopping/gc:seconds", gc), 0);
    CHECK_EQ(mhist("/sched/pauses/total/gc:seconds", gc), 0);
}

/* A GOMAXPROCS change adds one sample to each "other" pause histogram; the gc
 * ones stay empty. */
TEST(pauses)
{
    run_main(pauses_main, NULL);
}

/* ---------------------------------------------------------------------------
 * counters
 * ------------------------------------------------------------------------- */

#define NP_N 20
static int np_fds[NP_N][2];
static gort_waitgroup ct_wg;
static int ct_stop;

static void np_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c;
    CHECK_EQ(gort_read(np_fds[i][0], &c, 1), 1); /* parks in IO wait */
    gort_waitgroup_done(&ct_wg);
}

static void short_burn(void *arg)
{
    (void)arg;
    burn_us(100);
    gort_waitgroup_done(&ct_wg);
}

/* Calls into gort without ever blocking, with the preemption signal
 * turned off for it: a preemption request can only be seen at the next
 * call (synchronous preemption). */
static void ct_caller(void *arg)
{
    gort_chan *ch = arg;
    gort_preempt_disable();
    while (!ATOMIC_LOAD(&ct_stop))
        gort_chan_tryrecv(ch, NULL, NULL);
    gort_preempt_enable();
    gort_waitgroup_done(&ct_wg);
}

static volatile uint64_t ct_sink;

/* Never calls gort: only the preemption signal can stop it. */
static void ct_spinner(void *arg)
{
    (void)arg;
    uint64_t s = 0;
    for (uint64_t i = 0; !__atomic_load_n(&ct_stop, __ATOMIC_RELAXED); i++)
        s += i ^ (i >> 3);
    ct_sink = s;
    gort_waitgroup_done(&ct_wg);
}

static void counters_main(void *arg)
{
    (void)arg;
    /* Network poller wake-ups: one per reader parked in IO wait. */
    for (int i = 0; i < NP_N; i++)
        CHECK_EQ(gort_pipe(np_fds[i]), 0);
    uint64_t w0 = metric_u64("/gort/sched/netpoll-wakeups:goroutines");
    gort_waitgroup_add(&ct_wg, NP_N);
    for (int i = 0; i < NP_N; i++)
        CHECK(gort_go(np_reader, (void *)(intptr_t)i) > 0);
    await_waiting("IO wait", 0, NP_N);
    for (int i = 0; i < NP_N; i++)
        CHECK_EQ(gort_write(np_fds[i][1], "x", 1), 1);
    gort_waitgroup_wait(&ct_wg);
    uint64_t w1 = metric_u64("/gort/sched/netpoll-wakeups:goroutines");
    say("netpoll wake-ups: %llu\n", (unsigned long long)(w1 - w0));
    CHECK_EQ(w1 - w0, NP_N);
    for (int i = 0; i < NP_N; i++) {
        gort_close(np_fds[i][0]);
        gort_close(np_fds[i][1]);
    }

    /* Steals: a burst of work on this P, another P idle. */
    int old = gort_gomaxprocs(2);
    uint64_t s0 = metric_u64("/gort/sched/steals:goroutines"), s1 = s0;
    for (int round = 0; round < 50 && s1 == s0; round++) {
        gort_waitgroup_add(&ct_wg, 200);
        for (int i = 0; i < 200; i++)
            CHECK(gort_go(short_burn, NULL) > 0);
        gort_waitgroup_wait(&ct_wg);
        s1 = metric_u64("/gort/sched/steals:goroutines");
    }
    say("steals: %llu\n", (unsigned long long)(s1 - s0));
    CHECK_GT(s1, s0);

    /* Synchronous preemption: two callers share one P; each time this
     * goroutine wakes from a sleep, one of them was made to yield. */
    gort_gomaxprocs(1);
    gort_chan *ch = make_chan(sizeof(int), 1);
    uint64_t p0 = metric_u64("/gort/sched/preemptions/sync:events");
    ATOMIC_STORE(&ct_stop, 0);
    gort_waitgroup_add(&ct_wg, 2);
    CHECK(gort_go(ct_caller, ch) > 0);
    CHECK(gort_go(ct_caller, ch) > 0);
    for (int i = 0; i < 5; i++)
        gort_sleep(1 * MS);
    ATOMIC_STORE(&ct_stop, 1);
    gort_waitgroup_wait(&ct_wg);
    uint64_t p1 = metric_u64("/gort/sched/preemptions/sync:events");
    say("synchronous preemptions: %llu\n", (unsigned long long)(p1 - p0));
    CHECK_GE(p1 - p0, 5);
    free_chan(ch);

    /* Asynchronous preemption: a loop without calls on the only P. */
    if (TSAN) {
        say("asynchronous preemption is off under ThreadSanitizer: not "
            "checked\n");
    } else {
        uint64_t a0 = metric_u64("/gort/sched/preemptions/async:events");
        ATOMIC_STORE(&ct_stop, 0);
        gort_waitgroup_add(&ct_wg, 1);
        CHECK(gort_go(ct_spinner, NULL) > 0);
        for (int i = 0; i < 5; i++)
            gort_sleep(1 * MS); /* each wake-up needs the spinner stopped */
        __atomic_store_n(&ct_stop, 1, __ATOMIC_RELAXED);
        gort_waitgroup_wait(&ct_wg);
        uint64_t a1 = metric_u64("/gort/sched/preemptions/async:events");
        say("asynchronous preemptions: %llu\n",
            (unsigned long long)(a1 - a0));
        CHECK_GE(a1 - a0, 5);
    }
    gort_gomaxprocs(old);
}

/* Netpoll wake-ups exact for 20 pipe readers; steals grow when a P idles
 * beside a busy one; 5 wake-ups of a sleeper on a P shared with goroutines
 * that never block take 5 preemptions: synchronous for callers of gort,
 * asynchronous (where signals are on) for a loop without calls. */
TEST(counters)
{
    run_main(counters_main, NULL);
}

/* ---------------------------------------------------------------------------
 * prometheus
 * ------------------------------------------------------------------------- */

static bool prom_name_ok(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == ':'))
            return false;
    }
    return true;
}

/* One parsed family of the text format. */
struct family {
    char name[160];
    char type[16];
    int samples;
    uint64_t value;     /* the value of a counter or gauge */
    double last_le;     /* histogram: the last bucket's bound */
    uint64_t last_cum;  /* histogram: its cumulative count */
    bool has_inf;
    uint64_t count;
    bool has_count;
};

/* Check the whole text; fills fams (up to max) and returns their number.
 * Fails the case at the first line that breaks the format. */
static int prom_parse(char *text, struct family *fams, int max)
{
    int nf = 0;
    struct family *f = NULL;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "# HELP ", 7)) {
            CHECK_LT(nf, max);
            f = &fams[nf++];
            memset(f, 0, sizeof *f);
            char *sp = strchr(line + 7, ' ');
            CHECK(sp != NULL);
            CHECK(prom_name_ok(line + 7, (size_t)(sp - line - 7)));
            CHECK_LT(sp - line - 7, (long)sizeof f->name);
            memcpy(f->name, line + 7, (size_t)(sp - line - 7));
            CHECK(strlen(sp + 1) > 10);
            f->last_le = -INFINITY;
            continue;
        }
        CHECK(f != NULL);
        if (!strncmp(line, "# TYPE ", 7)) {
            size_t nl = strlen(f->name);
            CHECK(!strncmp(line + 7, f->name, nl) && line[7 + nl] == ' ');
            snprintf(f->type, sizeof f->type, "%s", line + 8 + nl);
            CHECK(!strcmp(f->type, "counter") || !strcmp(f->type, "gauge") ||
                  !strcmp(f->type, "histogram"));
            if (!strcmp(f->type, "counter")) {
                CHECK_GT(nl, 6);
                CHECK(!strcmp(f->name + nl - 6, "_total"));
            }
            continue;
        }
        CHECK(line[0] != '#');
        CHECK(f->type[0] != 0); /* TYPE before samples */
        char *sp = strrchr(line, ' ');
        CHECK(sp != NULL);
        char *end;
        unsigned long long v = strtoull(sp + 1, &end, 10);
        CHECK(*end == 0 && end != sp + 1);
        size_t nl = strlen(f->name);
        CHECK(!strncmp(line, f->name, nl));
        const char *suffix = line + nl;
        f->samples++;
        if (strcmp(f->type, "histogram")) {
            CHECK(suffix == sp); /* no labels, no suffix */
            CHECK_EQ(f->samples, 1);
            f->value = v;
            continue;
        }
        if (!strncmp(suffix, "_bucket{le=\"", 12)) {
            CHECK(!f->has_inf && !f->has_count);
            const char *le = suffix + 12;
            char *q = strchr(le, '"');
            CHECK(q != NULL && q[1] == '}' && q + 2 == sp);
            double bound;
            if (!strncmp(le, "+Inf\"", 5)) {
                bound = INFINITY;
                f->has_inf = true;
            } else {
                bound = strtod(le, &end);
                CHECK(end == q);
            }
            CHECK(bound > f->last_le);
            CHECK_GE(v, f->last_cum);
            f->last_le = bound;
            f->last_cum = v;
        } else if (!strncmp(suffix, "_count ", 7)) {
            CHECK(f->has_inf && !f->has_count);
            f->count = v;
            f->has_count = true;
            CHECK_EQ(f->count, f->last_cum);
        } else {
            fprintf(stderr, "unexpected histogram line: %s\n", line);
            CHECK(0);
        }
    }
    for (int i = 0; i < nf; i++) {
        CHECK_GT(fams[i].samples, 0);
        if (!strcmp(fams[i].type, "histogram")) {
            CHECK(fams[i].has_count);
            CHECK_EQ(fams[i].samples, NB); /* 160 bounds, +Inf, _count */
        }
    }
    return nf;
}

static const struct family *family(const struct family *f, int n,
                                   const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(f[i].name, name))
            return &f[i];
    fprintf(stderr, "no family %s\n", name);
    CHECK(0);
    return NULL;
}

static void prom_main(void *arg)
{
    (void)arg;
    char *text = NULL;
    size_t len = 0;
    CHECK_EQ(gort_metrics_prometheus(&text, &len), 0);
    CHECK(text != NULL);
    CHECK_EQ(strlen(text), len);
    CHECK_STR_CONTAINS(text, "go_sched_latencies_seconds_bucket{le=\"6.399999999999999e-08\"} ");
    CHECK_STR_CONTAINS(text, "\ngo_sched_gomaxprocs_threads ");
    struct family fams[32];
    size_t ndesc;
    gort_metrics_all(&ndesc);
    int nf = prom_parse(text, fams, 32);
    CHECK_EQ(nf, (int)ndesc);
    const struct family *f;
    f = family(fams, nf, "go_sched_gomaxprocs_threads");
    CHECK(!strcmp(f->type, "gauge"));
    CHECK_EQ(f->value, (uint64_t)gort_gomaxprocs(0));
    f = family(fams, nf, "go_sched_goroutines_goroutines");
    CHECK_EQ(f->value, 1);
    f = family(fams, nf, "go_sched_goroutines_running_goroutines");
    CHECK_EQ(f->value, 1);
    f = family(fams, nf, "go_sched_goroutines_created_goroutines_total");
    CHECK(!strcmp(f->type, "counter"));
    CHECK_EQ(f->value, metric_u64("/sched/goroutines-created:goroutines"));
    family(fams, nf, "go_sched_goroutines_not_in_go_goroutines");
    family(fams, nf, "go_sched_goroutines_waiting_goroutines");
    family(fams, nf, "go_sched_goroutines_runnable_goroutines");
    family(fams, nf, "go_sched_threads_total_threads");
    family(fams, nf, "go_sched_pauses_stopping_gc_seconds");
    family(fams, nf, "go_sched_pauses_total_other_seconds");
    family(fams, nf, "gort_sched_steals_goroutines_total");
    family(fams, nf, "gort_sched_preemptions_async_events_total");
    family(fams, nf, "gort_sched_syscall_handoffs_events_total");
    family(fams, nf, "gort_sched_netpoll_wakeups_goroutines_total");
    f = family(fams, nf, "gort_sched_threads_spinning_threads");
    CHECK(!strcmp(f->type, "gauge"));
    f = family(fams, nf, "go_sched_latencies_seconds");
    CHECK(!strcmp(f->type, "histogram"));
    uint64_t counts[NB];
    uint64_t total = mhist("/sched/latencies:seconds", counts);
    CHECK_LE(f->count, total); /* it only grows */
    say("prometheus text: %zu bytes, %d families\n", len, nf);
    free(text);

    /* The fd writer: the same families, into a file. */
    int fd = memfd_create("metrics", MFD_CLOEXEC);
    CHECK_GE(fd, 0);
    long w = gort_metrics_write_prometheus(fd);
    CHECK_GT(w, 1000);
    char *buf = malloc((size_t)w + 1);
    CHECK(buf != NULL);
    CHECK_EQ(pread(fd, buf, (size_t)w, 0), w);
    buf[w] = 0;
    CHECK_EQ(prom_parse(buf, fams, 32), (int)ndesc);
    free(buf);
    close(fd);
}

/* The text format parsed line by line: HELP and TYPE before samples, names,
 * counters' _total, cumulative buckets ending in +Inf equal to _count, values
 * equal to the read API's; the fd writer writes the same. */
TEST(prometheus)
{
    run_main(prom_main, NULL);
}

/* ---------------------------------------------------------------------------
 * read_cost
 * ------------------------------------------------------------------------- */

#define RC_READS 200
static gort_chan *rc_stop;
static gort_waitgroup rc_wg;

static void rc_parker(void *arg)
{
    (void)arg;
    gort_chan_recv(rc_stop, NULL);
    gort_waitgroup_done(&rc_wg);
}

/* Nanoseconds per read of every metric (histograms included), best of 3
 * rounds of RC_READS. */
static int64_t read_all_ns(void)
{
    size_t n;
    const gort_metric_desc *d = gort_metrics_all(&n);
    gort_metric_sample s[32];
    static uint64_t counts[32][NB];
    CHECK_LE(n, 32);
    memset(s, 0, sizeof s);
    for (size_t i = 0; i < n; i++) {
        s[i].name = d[i].name;
        s[i].hist.counts = counts[i];
        s[i].hist.cap = NB;
    }
    int64_t best = INT64_MAX;
    for (int round = 0; round < 3; round++) {
        int64_t t0 = gort_nanotime();
        for (int r = 0; r < RC_READS; r++)
            CHECK_EQ(gort_metrics_read(s, n), 0);
        int64_t per = (gort_nanotime() - t0) / RC_READS;
        if (per < best)
            best = per;
    }
    return best;
}

static void rc_main(void *arg)
{
    int parked = (int)(intptr_t)arg;
    rc_stop = make_chan(0, 0);
    int64_t idle = read_all_ns();
    int64_t t_start = gort_nanotime();
    gort_waitgroup_add(&rc_wg, parked);
    for (int i = 0; i < parked; i++)
        CHECK(gort_go(rc_parker, NULL) > 0);
    await_metric("/sched/goroutines/waiting:goroutines", (uint64_t)parked);
    say("%d goroutines parked in %lld ms\n", parked,
        (long long)((gort_nanotime() - t_start) / MS));
    int64_t busy = read_all_ns();
    int64_t t0 = gort_nanotime();
    char *text;
    CHECK_EQ(gort_metrics_prometheus(&text, NULL), 0);
    int64_t prom = gort_nanotime() - t0;
    free(text);
    say("reading all %d metrics: %lld ns with 1 goroutine, %lld ns with "
        "%d parked; the Prometheus text: %lld ns\n", 19, (long long)idle,
        (long long)busy, parked, (long long)prom);
    /* A scan of the goroutines would cost 1-10 ns each: 0.1-1 ms here.
     * Sanitizers make every atomic load slow and noisy: a looser bound. */
    if (SANITIZED)
        CHECK_LE(busy, 10 * idle + 1000 * 1000);
    else
        CHECK_LE(busy, 3 * idle + 100 * 1000);
    gort_chan_close(rc_stop);
    gort_waitgroup_wait(&rc_wg);
    free_chan(rc_stop);
}

/* Reading every metric with 100,000 goroutines parked costs about what it
 * costs with none. */
TEST(read_cost)
{
    /* ThreadSanitizer allows a few thousand fibers. */
    run_main(rc_main, (void *)(intptr_t)(TSAN ? 1000 : SANITIZED ? 20000
                                                                 : 100000));
}
