/* SPDX-License-Identifier: MIT */
/*
 * test_sim.c - the deterministic simulation mode (GORTDEBUG=sim=SEED,
 * docs/sim.md): the same seed gives the same interleaving and output,
 * other seeds other interleavings; sleeps cost virtual time only; a
 * deadlock names the seed and strategy; the settings' bad values are
 * reported.  Each case runs a child program of this binary with its own
 * GORTDEBUG.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECOND (1000 * MS)

/* ---------------------------------------------------------------------------
 * The children.
 * ------------------------------------------------------------------------- */

/* The interleaving-sensitive workload: 8 goroutines each append their id
 * to a shared log at every gort_gosched, channel operation, select and
 * sleep (the sleeps of equal length make timers fire together, so their
 * wake-up order shows too).  One OS thread runs them all in the
 * simulation, so the log needs no lock there. */
#define WORKERS 8
#define ROUNDS 6
static char wlog[WORKERS * ROUNDS * 8 + 1];
static int wlen;
static gort_chan *wch, *wch2;
static gort_waitgroup wwg;

static void note(int id, char what)
{
    wlog[wlen++] = (char)('0' + id);
    wlog[wlen++] = what;
}

static void worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < ROUNDS; i++) {
        note(id, 'g');
        gort_gosched();
        gort_chan_send(wch, &id);
        note(id, 's');
        int v = 0;
        gort_case cases[2] = {{wch, GORT_CASE_RECV, &v, false},
                              {wch2, GORT_CASE_RECV, &v, false}};
        CHECK_GE(gort_select(cases, 2), 0);
        note(id, 'r');
        gort_sleep((id % 3 + 1) * MS);
        note(id, 't');
    }
    gort_waitgroup_done(&wwg);
}

static void workload_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_chan_make(&wch, sizeof(int), 2), 0);
    CHECK_EQ(gort_chan_make(&wch2, sizeof(int), 0), 0);
    gort_waitgroup_add(&wwg, WORKERS);
    for (int i = 0; i < WORKERS; i++)
        gort_go(worker, (void *)(intptr_t)i);
    gort_waitgroup_wait(&wwg);
    CHECK_EQ(gort_chan_free(wch), 0);
    CHECK_EQ(gort_chan_free(wch2), 0);
    printf("log=%.*s\n", wlen, wlog);
}

TEST_HIDDEN(workload_child)
{
    CHECK_EQ(gort_main(workload_main, NULL), 0);
}

/* A 10 s sleep, and the clock's reading around it. */
static void sleep_main(void *arg)
{
    (void)arg;
    int64_t t0 = gort_nanotime();
    gort_sleep(10 * SECOND);
    int64_t t1 = gort_nanotime();
    /* A deadline on a channel that never receives: it passes in virtual
     * time too. */
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 0), 0);
    int v;
    CHECK_EQ(gort_chan_recv_until(ch, &v, gort_deadline_in(5 * SECOND)),
             -ETIMEDOUT);
    int64_t t2 = gort_nanotime();
    CHECK_EQ(gort_chan_free(ch), 0);
    printf("start=%lld slept=%lld waited=%lld\n", (long long)t0,
           (long long)(t1 - t0), (long long)(t2 - t1));
}

TEST_HIDDEN(sleep_child)
{
    CHECK_EQ(gort_main(sleep_main, NULL), 0);
}

/* Descriptors in the simulation: four goroutines write their ids into
 * one pipe after sleeps of equal length; a reader reads them (their
 * order is the seed's); a read with a 30 s deadline on an empty pipe
 * times out on the virtual clock. */
static int pfds[2];
static gort_waitgroup pwg;

static void pipe_writer(void *arg)
{
    char c = (char)('a' + (int)(intptr_t)arg);
    gort_sleep(2 * MS);
    CHECK_EQ(gort_write(pfds[1], &c, 1), 1);
    gort_waitgroup_done(&pwg);
}

static void pipe_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_pipe(pfds), 0);
    gort_waitgroup_add(&pwg, 4);
    for (int i = 0; i < 4; i++)
        gort_go(pipe_writer, (void *)(intptr_t)i);
    char got[5] = {0};
    for (int n = 0; n < 4;) {
        long r = gort_read(pfds[0], got + n, (size_t)(4 - n));
        CHECK_GT(r, 0);
        n += (int)r;
    }
    gort_waitgroup_wait(&pwg);
    int64_t t0 = gort_nanotime();
    CHECK_EQ(gort_fd_deadline(pfds[0], GORT_FD_READ,
                              gort_deadline_in(30 * SECOND)),
             0);
    char c;
    CHECK_EQ(gort_read(pfds[0], &c, 1), -ETIMEDOUT);
    printf("got=%s waited=%lld\n", got,
           (long long)(gort_nanotime() - t0));
    CHECK_EQ(gort_close(pfds[0]), 0);
    CHECK_EQ(gort_close(pfds[1]), 0);
}

TEST_HIDDEN(pipe_child)
{
    CHECK_EQ(gort_main(pipe_main, NULL), 0);
}

/* The workload with half the workers wired to threads of their own
 * (gort_lock_os_thread): the one P passes between Ms, still one at a
 * time and in the seed's order. */
static void wired_worker(void *arg)
{
    if ((intptr_t)arg % 2)
        gort_lock_os_thread();
    worker(arg);
}

static void wired_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_chan_make(&wch, sizeof(int), 2), 0);
    CHECK_EQ(gort_chan_make(&wch2, sizeof(int), 0), 0);
    gort_waitgroup_add(&wwg, WORKERS);
    for (int i = 0; i < WORKERS; i++)
        gort_go(wired_worker, (void *)(intptr_t)i);
    gort_waitgroup_wait(&wwg);
    CHECK_EQ(gort_chan_free(wch), 0);
    CHECK_EQ(gort_chan_free(wch2), 0);
    printf("log=%.*s\n", wlen, wlog);
}

TEST_HIDDEN(wired_child)
{
    CHECK_EQ(gort_main(wired_main, NULL), 0);
}

static void clock_main(void *arg)
{
    (void)arg;
    int was = gort_gomaxprocs(4);
    printf("now=%lld procs=%d,%d\n", (long long)gort_nanotime(), was,
           gort_gomaxprocs(0));
}

TEST_HIDDEN(clock_child)
{
    CHECK_EQ(gort_main(clock_main, NULL), 0);
}

static void deadlock_main(void *arg)
{
    (void)arg;
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 0), 0);
    int v;
    gort_chan_recv(ch, &v);
}

TEST_HIDDEN(deadlock_child)
{
    gort_main(deadlock_main, NULL);
}

static void abort_main(void *arg)
{
    (void)arg;
    gort_sleep(MS);
    abort(); /* as a failed assertion does */
}

TEST_HIDDEN(abort_child)
{
    gort_main(abort_main, NULL);
}

/* Faults on demand (gort_sim_fault): FAULT_CALLS calls from the main
 * goroutine, counted, the first FAULT_BITS of them shown as 0s and 1s;
 * calls from a thread gort did not create, which never fault; and calls
 * before and after gort_main, which never do either. */
#define FAULT_CALLS 200000
#define FAULT_BITS 128
static int foreign_faults;

static void *foreign_fault_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        foreign_faults += gort_sim_fault();
    return NULL;
}

static void fault_main(void *arg)
{
    (void)arg;
    char bits[FAULT_BITS + 1] = {0};
    int faults = 0;
    for (int i = 0; i < FAULT_CALLS; i++) {
        bool f = gort_sim_fault();
        if (i < FAULT_BITS)
            bits[i] = f ? '1' : '0';
        faults += f;
    }
    /* The join blocks this thread, and with it the simulation, until the
     * other thread is done: as a system call would. */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, foreign_fault_thread, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    printf("active=%d faults=%d bits=%s foreign=%d\n", gort_sim_active(),
           faults, bits, foreign_faults);
}

TEST_HIDDEN(fault_child)
{
    int outside = gort_sim_fault() + gort_sim_active();
    CHECK_EQ(gort_main(fault_main, NULL), 0);
    outside += gort_sim_fault() + gort_sim_active();
    printf("outside=%d\n", outside);
}

/* The workload, with every worker asking for a fault at each round and
 * only counting them: the faults' draws are not the scheduler's, so the
 * log is the same whatever the rate. */
static int wfaults;

static void fault_worker(void *arg)
{
    for (int i = 0; i < ROUNDS; i++)
        wfaults += gort_sim_fault();
    worker(arg);
}

static void fault_workload_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_chan_make(&wch, sizeof(int), 2), 0);
    CHECK_EQ(gort_chan_make(&wch2, sizeof(int), 0), 0);
    gort_waitgroup_add(&wwg, WORKERS);
    for (int i = 0; i < WORKERS; i++)
        gort_go(fault_worker, (void *)(intptr_t)i);
    gort_waitgroup_wait(&wwg);
    CHECK_EQ(gort_chan_free(wch), 0);
    CHECK_EQ(gort_chan_free(wch2), 0);
    printf("log=%.*s\nfaults=%d\n", wlen, wlog, wfaults);
}

TEST_HIDDEN(fault_workload_child)
{
    CHECK_EQ(gort_main(fault_workload_main, NULL), 0);
}

/* ---------------------------------------------------------------------------
 * The cases.
 * ------------------------------------------------------------------------- */

/* Run `child` with GORTDEBUG=debug; returns its stdout (malloc'd), after
 * checking it exited 0. */
static char *run_ok(const char *child, const char *debug)
{
    char env0[128];
    snprintf(env0, sizeof env0, "GORTDEBUG=%s", debug);
    const char *env[] = {env0, NULL};
    struct test_child r;
    test_run_child(child, env, 60, &r);
    if (r.exit_code != 0 || r.signal != 0)
        fprintf(stderr, "child %s (%s): exit %d signal %d\n%s\n", child,
                debug, r.exit_code, r.signal, r.err);
    CHECK_EQ(r.exit_code, 0);
    CHECK_EQ(r.signal, 0);
    free(r.err);
    return r.out;
}

/* The same seed twice gives byte-identical output of the workload, for
 * both strategies; the log holds every event (none lost or doubled). */
TEST(same_seed_same_output)
{
    const char *const settings[] = {"sim=1", "sim=12345",
                                    "sim=7,simstrategy=pct",
                                    "sim=18446744073709551615"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        char *a = run_ok("workload_child", settings[i]);
        char *b = run_ok("workload_child", settings[i]);
        CHECK_STR_CONTAINS(a, "log=");
        CHECK_EQ(strlen(a), strlen("log=\n") + WORKERS * ROUNDS * 8);
        CHECK_EQ(strcmp(a, b), 0);
        free(a);
        free(b);
    }
}

/* With half the workers wired to threads of their own, the one P passes
 * between threads and the same seed still gives the same log (20 runs,
 * both strategies). */
TEST(same_seed_wired)
{
    const char *const settings[] = {"sim=5", "sim=5,simstrategy=pct"};
    for (size_t i = 0; i < 2; i++) {
        char *first = run_ok("wired_child", settings[i]);
        CHECK_EQ(strlen(first), strlen("log=\n") + WORKERS * ROUNDS * 8);
        for (int k = 0; k < 9; k++) {
            char *again = run_ok("wired_child", settings[i]);
            CHECK_EQ(strcmp(first, again), 0);
            free(again);
        }
        free(first);
    }
}

/* Ten seeds give at least two different interleavings (with eight
 * goroutines yielding at every step, two seeds that agree on the whole
 * log of 384 events are already unlikely). */
TEST(seeds_differ)
{
    char *outs[10];
    int distinct = 0;
    for (int i = 0; i < 10; i++) {
        char debug[32];
        snprintf(debug, sizeof debug, "sim=%d", 100 + i);
        outs[i] = run_ok("workload_child", debug);
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen = seen || strcmp(outs[i], outs[j]) == 0;
        distinct += !seen;
    }
    CHECK_GE(distinct, 2);
    for (int i = 0; i < 10; i++)
        free(outs[i]);
}

/* A 10 s sleep and a 5 s deadline in the simulation take the virtual
 * clock exactly that far, from its fixed start, and well under a second
 * of wall time. */
TEST(sleep_is_virtual)
{
    int64_t t0 = test_now_ns();
    char *out = run_ok("sleep_child", "sim=3");
    int64_t wall = test_now_ns() - t0;
    char want[128];
    snprintf(want, sizeof want, "start=%lld slept=%lld waited=%lld\n",
             1000000000000LL, 10 * SECOND, 5 * SECOND);
    CHECK_STR_CONTAINS(out, want);
    CHECK_LT(wall, 1 * SECOND);
    free(out);
}

/* Descriptors keep working in the simulation: the pipe's bytes arrive in
 * a seeded order (the same for the same seed), and a 30 s read deadline
 * passes on the virtual clock, in well under a second of wall time. */
TEST(pipe_io)
{
    int64_t t0 = test_now_ns();
    char *a = run_ok("pipe_child", "sim=11");
    int64_t wall = test_now_ns() - t0;
    char *b = run_ok("pipe_child", "sim=11");
    CHECK_STR_CONTAINS(a, "waited=30000000000\n");
    CHECK_EQ(strcmp(a, b), 0);
    CHECK_LT(wall, 1 * SECOND);
    free(a);
    free(b);
}

/* A deadlock in the simulation says how to replay it before the usual
 * report; outside the simulation it does not. */
TEST(deadlock_names_seed)
{
    const char *env[] = {"GORTDEBUG=sim=99,simstrategy=pct", NULL};
    struct test_child r;
    test_run_child("deadlock_child", env, 60, &r);
    CHECK_NE(r.exit_code == 0 && r.signal == 0, true);
    const char *seed = strstr(r.err, "gort: sim seed=99 strategy=pct simpct=3\n");
    const char *dead = strstr(r.err, "all goroutines are asleep - deadlock!");
    CHECK(seed != NULL);
    CHECK(dead != NULL);
    CHECK(seed < dead);
    test_child_free(&r);

    const char *env2[] = {"GORTDEBUG=", NULL};
    test_run_child("deadlock_child", env2, 60, &r);
    CHECK(strstr(r.err, "deadlock!") != NULL);
    CHECK(strstr(r.err, "gort: sim") == NULL);
    test_child_free(&r);
}

/* The program's own abort() (a failed assertion) in the simulation
 * prints the replay line once and still dies by SIGABRT. */
TEST(abort_names_seed)
{
    const char *env[] = {"GORTDEBUG=sim=5", NULL};
    struct test_child r;
    test_run_child("abort_child", env, 60, &r);
    CHECK_EQ(r.signal, SIGABRT);
    const char *line = "gort: sim seed=5 strategy=random\n";
    const char *at = strstr(r.err, line);
    CHECK(at != NULL);
    CHECK(strstr(at + 1, line) == NULL);
    test_child_free(&r);

    /* With faults the line names their rate, which replays them too. */
    const char *env2[] = {"GORTDEBUG=sim=5,simfault=1000", NULL};
    test_run_child("abort_child", env2, 60, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.err, "gort: sim seed=5 strategy=random "
                              "simfault=1000\n");
    test_child_free(&r);
}

/* Bad values of sim, simstrategy and simpct are reported and ignored:
 * the program runs in the normal mode (its clock is the real one, not
 * the virtual clock's start; gort_gomaxprocs sets GOMAXPROCS).  With a
 * valid seed the clock starts there and GOMAXPROCS stays 1. */
TEST(bad_settings_reported)
{
    const char *env[] = {"GORTDEBUG=sim=x,simstrategy=fair,simpct=0", NULL};
    struct test_child r;
    test_run_child("clock_child", env, 60, &r);
    if (r.exit_code != 0)
        fprintf(stderr, "%s\n", r.err);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.err, "sim=\"x\" is not valid");
    CHECK_STR_CONTAINS(r.err, "simstrategy=\"fair\" is not valid");
    CHECK_STR_CONTAINS(r.err, "simpct=\"0\" is not valid");
    CHECK_STR_CONTAINS(r.out, "now=");
    CHECK(strstr(r.out, "now=1000000000000 ") == NULL);
    CHECK_STR_CONTAINS(r.out, ",4\n"); /* the normal mode's GOMAXPROCS */
    test_child_free(&r);

    const char *env2[] = {"GORTDEBUG=sim=0", NULL};
    test_run_child("clock_child", env2, 60, &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "now=1000000000000 procs=1,1\n");
    CHECK_EQ(strlen(r.err), 0);
    test_child_free(&r);
}

/* The numbers a fault_child printed. */
struct faults {
    int active, faults, foreign, outside;
    char bits[FAULT_BITS + 1];
};

static struct faults run_faults(const char *debug)
{
    char *out = run_ok("fault_child", debug);
    struct faults f = {0};
    CHECK_EQ(sscanf(out, "active=%d faults=%d bits=%128s foreign=%d\n"
                         "outside=%d",
                    &f.active, &f.faults, f.bits, &f.foreign, &f.outside),
             5);
    CHECK_EQ(strlen(f.bits), FAULT_BITS);
    free(out);
    return f;
}

/* Outside the simulation mode gort_sim_fault never injects a fault and
 * gort_sim_active is false, whatever simfault says; in the mode, before
 * and after gort_main neither is true, and a thread gort did not create
 * gets no fault even at a rate of one in one. */
TEST(fault_only_in_sim)
{
    struct faults f = run_faults("simfault=1000000");
    CHECK_EQ(f.active, 0);
    CHECK_EQ(f.faults, 0);
    CHECK_EQ(f.foreign, 0);
    CHECK_EQ(f.outside, 0);
    f = run_faults("sim=4,simfault=1000000");
    CHECK_EQ(f.active, 1);
    CHECK_EQ(f.faults, FAULT_CALLS);
    CHECK_EQ(f.foreign, 0);
    CHECK_EQ(f.outside, 0);
    /* The default rate is 0: never. */
    f = run_faults("sim=4");
    CHECK_EQ(f.active, 1);
    CHECK_EQ(f.faults, 0);
}

/* The same seed injects the same faults at the same calls (both
 * strategies); another seed other ones. */
TEST(fault_same_seed)
{
    const char *const settings[] = {"sim=9,simfault=100000",
                                    "sim=9,simfault=100000,simstrategy=pct"};
    for (size_t i = 0; i < 2; i++) {
        struct faults a = run_faults(settings[i]);
        struct faults b = run_faults(settings[i]);
        CHECK_EQ(a.faults, b.faults);
        CHECK_EQ(strcmp(a.bits, b.bits), 0);
    }
    struct faults a = run_faults("sim=9,simfault=100000");
    struct faults c = run_faults("sim=10,simfault=100000");
    /* 128 calls at 10% agreeing by chance: about 1 in 10^13. */
    CHECK_NE(strcmp(a.bits, c.bits), 0);
}

/* Over FAULT_CALLS calls the share of faults is the rate.  The counts
 * are fixed by the seeds; the bounds (binomial, 200,000 calls) are ten
 * standard deviations or more on each side, so that a change of the
 * generator that keeps it uniform cannot fail them either. */
TEST(fault_rate)
{
    static const struct {
        int ppm, lo, hi;
    } rates[] = {
        {1000, 100, 300},          /* expect 200, sd 14 */
        {250000, 48000, 52000},    /* expect 50,000, sd 194 */
        {900000, 178500, 181500},  /* expect 180,000, sd 134 */
    };
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
        for (int seed = 1; seed <= 3; seed++) {
            char debug[64];
            snprintf(debug, sizeof debug, "sim=%d,simfault=%d", seed,
                     rates[i].ppm);
            struct faults f = run_faults(debug);
            CHECK_GE(f.faults, rates[i].lo);
            CHECK_LE(f.faults, rates[i].hi);
        }
}

/* The faults' draws leave the schedule alone: the workload's log with
 * every worker asking for faults is the same at rates 0 and one in two,
 * and only the count of faults differs. */
TEST(fault_keeps_schedule)
{
    const char *const settings[][2] = {
        {"sim=21", "sim=21,simfault=500000"},
        {"sim=21,simstrategy=pct", "sim=21,simstrategy=pct,simfault=500000"},
    };
    for (size_t i = 0; i < 2; i++) {
        char *a = run_ok("fault_workload_child", settings[i][0]);
        char *b = run_ok("fault_workload_child", settings[i][1]);
        CHECK_STR_CONTAINS(a, "faults=0\n");
        CHECK(strstr(b, "faults=0\n") == NULL);
        size_t loglen = strlen("log=\n") + WORKERS * ROUNDS * 8;
        CHECK_EQ(strncmp(a, b, loglen), 0);
        free(a);
        free(b);
    }
}

/* Bad values of simfault are reported and ignored (the rate stays 0). */
TEST(fault_bad_settings_reported)
{
    const char *env[] = {"GORTDEBUG=sim=4,simfault=x,simfault=1000001,"
                         "simfault=-1,simfault=0.5",
                         NULL};
    struct test_child r;
    test_run_child("fault_child", env, 60, &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.err, "simfault=\"x\" is not valid (want a number "
                              "of faults per million calls from 0 to "
                              "1000000)");
    CHECK_STR_CONTAINS(r.err, "simfault=\"1000001\" is not valid");
    CHECK_STR_CONTAINS(r.err, "simfault=\"-1\" is not valid");
    CHECK_STR_CONTAINS(r.err, "simfault=\"0.5\" is not valid");
    CHECK_STR_CONTAINS(r.out, "active=1 faults=0 ");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * Same seed, same trace.
 *
 * A trace (GORTDEBUG=trace=path) of a run in the simulation mode, hashed
 * over what the seed decides: every event's kind, goroutine, track,
 * virtual time, arguments and order, and the trace's start and stop
 * times.  Left out, because the kernel decides them: the Ms' identities
 * (the Threads tracks' numbers and names, whose names carry the kernel's
 * thread ids, and which M took the P after a hand-off between threads,
 * which depends on which thread went idle first), and the count of
 * records written (it counts those thread names).  The Threads tracks'
 * events are still hashed, each without its track, in the order of their
 * virtual times (equal times by their text), since the order in which
 * the writer meets different Ms' buffers is the kernel's.  The Procs and
 * Scheduler tracks are hashed each in the order the file gives, which is
 * the order they were recorded in (docs/sim.md, "The trace").
 * ------------------------------------------------------------------------- */

/* One line of the trace that counts, with where it sorts. */
struct tline {
    int pid, tid;
    double ts;
    size_t seq;
    char *text;
};

static int tline_cmp(const void *a, const void *b)
{
    const struct tline *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->pid == 2) {
        if (x->ts != y->ts)
            return x->ts < y->ts ? -1 : 1;
        return strcmp(x->text, y->text);
    }
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3u;
    return h;
}

/* The number after `key` in line, or -1 when it has none. */
static long long field(const char *line, const char *key)
{
    const char *at = strstr(line, key);
    return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

/* The trace file's hash (above); *nevents gets the events hashed. */
static uint64_t trace_hash(const char *path, int *nevents)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    struct tline *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t h = 0xcbf29ce484222325u;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    bool meta = false;
    while ((len = getline(&line, &lcap, f)) > 0) {
        if (strncmp(line, "\"metadata\":", 11) == 0) {
            const char *keys[] = {"\"clock\":", "\"start_ns\":",
                                  "\"stop_ns\":", "\"dropped_events\":"};
            CHECK_STR_CONTAINS(line, "\"clock\":\"virtual\"");
            CHECK_EQ(field(line, "\"dropped_events\":"), 0);
            for (size_t k = 1; k < 4; k++) {
                long long x = field(line, keys[k]);
                h = fnv(h, (const char *)&x, sizeof x);
            }
            meta = true;
            continue;
        }
        if (strncmp(line, "{\"ph\":\"", 7) != 0)
            continue;
        struct tline t = {(int)field(line, "\"pid\":"),
                          (int)field(line, "\"tid\":"), 0, n, NULL};
        if (t.pid == 2 && line[7] == 'M')
            continue; /* a thread's name: the kernel's thread id */
        if (t.pid == 2) {
            /* The M's track number out: {"ph":"X","pid":2,"tid":N,... */
            char *tid = strstr(line, "\"tid\":");
            char *comma = tid ? strchr(tid, ',') : NULL;
            CHECK(comma != NULL);
            memmove(tid, comma + 1, strlen(comma + 1) + 1);
        }
        const char *ts = strstr(line, "\"ts\":");
        t.ts = ts ? strtod(ts + 5, NULL) : -1;
        t.text = strdup(line);
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            v = realloc(v, cap * sizeof *v);
            CHECK(v != NULL);
        }
        v[n++] = t;
    }
    free(line);
    fclose(f);
    CHECK(meta); /* the trace is whole */
    qsort(v, n, sizeof *v, tline_cmp);
    for (size_t i = 0; i < n; i++) {
        h = fnv(h, v[i].text, strlen(v[i].text));
        free(v[i].text);
    }
    free(v);
    *nevents = (int)n;
    return h;
}

/* Run `child` under GORTDEBUG=<debug>,trace=<a file>; the trace's hash. */
static uint64_t traced_run(const char *child, const char *debug,
                           int *nevents)
{
    char path[64];
    int fd = mkstemp(tmp_template(path, sizeof path, "gort_sim_trace"));
    CHECK(fd >= 0);
    close(fd);
    char settings[256];
    snprintf(settings, sizeof settings, "%s,trace=%s", debug, path);
    free(run_ok(child, settings));
    uint64_t h = trace_hash(path, nevents);
    unlink(path);
    return h;
}

/* The same seed gives the same trace, for three workloads: the channel
 * and sleep one (50 runs), the one with wired goroutines passing the P
 * between threads (10 runs with each strategy), and the pipe one (10
 * runs).  Another seed gives another trace.  GORT_SIM_TRACE_RUNS=N runs
 * each N times instead: N=1000 is the check of docs/sim.md. */
TEST(same_seed_same_trace)
{
    const char *env = getenv("GORT_SIM_TRACE_RUNS");
    int runs = env && atoi(env) > 0 ? atoi(env) : 0;
    static const struct {
        const char *child, *debug;
        int runs; /* without GORT_SIM_TRACE_RUNS */
    } cases[] = {
        {"workload_child", "sim=42", 50},
        {"wired_child", "sim=42", 10},
        {"wired_child", "sim=42,simstrategy=pct", 10},
        {"pipe_child", "sim=42", 10},
    };
    uint64_t first[4];
    for (size_t c = 0; c < 4; c++) {
        int k = runs ? runs : cases[c].runs, nev0 = 0;
        first[c] = traced_run(cases[c].child, cases[c].debug, &nev0);
        CHECK_GT(nev0, 50);
        for (int i = 1; i < k; i++) {
            int nev;
            uint64_t h = traced_run(cases[c].child, cases[c].debug, &nev);
            if (h != first[c])
                fprintf(stderr, "%s %s: run %d hash %016llx, run 1 %016llx\n",
                        cases[c].child, cases[c].debug, i + 1,
                        (unsigned long long)h,
                        (unsigned long long)first[c]);
            CHECK_EQ(nev, nev0);
            CHECK(h == first[c]);
        }
        printf("%s %s: %d runs, %d events, trace hash %016llx\n",
               cases[c].child, cases[c].debug, k, nev0,
               (unsigned long long)first[c]);
    }
    int nev;
    uint64_t other = traced_run("workload_child", "sim=43", &nev);
    CHECK(other != first[0]);
    uint64_t wother = traced_run("wired_child", "sim=43", &nev);
    CHECK(wother != first[1]);
}
