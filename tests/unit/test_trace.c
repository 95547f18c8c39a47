/* SPDX-License-Identifier: MIT */
/*
 * test_trace.c - the execution tracer (gort_trace_start/gort_trace_stop,
 * GORTDEBUG=trace=path).
 *
 * Each case writes a trace of a real program and has tests/trace_check.py
 * validate it: the JSON parses, slices on a track nest, every goroutine
 * slice is named after its goroutine and function, a goroutine never runs
 * on two Ps at once nor before its creation, flow arrows join the
 * creation or wake-up of a goroutine to where it next ran, and the kinds
 * of events the program must have caused are there.
 *
 * The checker needs python3; without it a case says so and skips.
 */
#include "internal.h"
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Helpers.
 * ------------------------------------------------------------------------- */

static char tmpdir[64];

/* A fresh directory for this case's files; path names file in it. */
static void tmp_path(char *path, size_t n, const char *file)
{
    if (!tmpdir[0]) {
        CHECK(mkdtemp(tmp_template(tmpdir, sizeof tmpdir, "gort-trace-")) !=
              NULL);
    }
    snprintf(path, n, "%s/%s", tmpdir, file);
}

static void tmp_cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    CHECK_EQ(system(cmd), 0);
}

/* The Python to run the checker with: Debian's when it is there (a
 * version manager's shim in PATH can take seconds to start), else the
 * first in PATH; NULL (with a note) when there is none. */
static const char *python(void)
{
    static const char *py;
    static bool looked;
    if (!looked) {
        looked = true;
        if (access("/usr/bin/python3", X_OK) == 0)
            py = "/usr/bin/python3";
        else if (system("python3 -c 'import json' >/dev/null 2>&1") == 0)
            py = "python3";
    }
    if (!py)
        printf("SKIP: python3 not found; the trace is not validated\n");
    return py;
}

/* Run the checker on path with extra arguments; fail the case (showing
 * its report) unless it passes.  Call outside gort_main. */
static void check_trace(const char *path, const char *args)
{
    const char *py = python();
    if (!py)
        return;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s '%s' '%s' %s 2>&1", py, GORT_TRACE_CHECK,
             path, args);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    printf("%s", out);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "trace_check failed on %s:\n%s\n", path, out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The whole file (malloc'd, NUL-terminated). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK_EQ(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    CHECK_GE(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK_EQ(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Spin for ns without calling gort (user code: preemptible only by the
 * signal, and sysmon's request is recorded either way). */
static void spin_ns(int64_t ns)
{
    int64_t end = test_now_ns() + ns;
    while (test_now_ns() < end)
        ;
}

/* ---------------------------------------------------------------------------
 * The traced program.  Its goroutine functions are static and the binary
 * exports no symbols: the trace names them from the ELF symbol table, as
 * the goroutine dumps do.
 * ------------------------------------------------------------------------- */

static gort_waitgroup wg;

struct pingpong {
    gort_chan *ping, *pong;
    int n;
};

static void trace_pinger(void *arg)
{
    struct pingpong *pp = arg;
    for (int64_t i = 0; i < pp->n; i++) {
        send_i64(pp->ping, i);
        CHECK_EQ(recv_i64(pp->pong), i);
    }
    gort_chan_close(pp->ping);
    gort_waitgroup_done(&wg);
}

static void trace_ponger(void *arg)
{
    struct pingpong *pp = arg;
    int64_t v;
    while (gort_chan_recv(pp->ping, &v))
        send_i64(pp->pong, v);
    gort_waitgroup_done(&wg);
}

static void trace_sleeper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        gort_sleep(MS);
    gort_waitgroup_done(&wg);
}

static void trace_syscaller(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 2 * MS};
    CHECK_EQ(gort_nanosleep(&ts, NULL), 0); /* hands the P off at once */
    CHECK_EQ(GORT_BLOCKING(usleep(3000)), 0); /* keeps it, lazily */
    gort_waitgroup_done(&wg);
}

static void trace_spinner(void *arg)
{
    (void)arg;
    spin_ns(30 * MS); /* sysmon asks it to yield after 10 ms */
    gort_waitgroup_done(&wg);
}

static int pipefd[2];

static void trace_reader(void *arg)
{
    (void)arg;
    char c = 0;
    CHECK_EQ(gort_read(pipefd[0], &c, 1), 1); /* IO wait */
    CHECK_EQ(c, 'x');
    gort_waitgroup_done(&wg);
}

static void trace_waiter(void *arg)
{
    CHECK_EQ(recv_i64(arg), 42); /* chan receive */
    gort_waitgroup_done(&wg);
}

/* One of a burst made on one P, for the other P's M to steal. */
static int bursts_run;

static void trace_burst(void *arg)
{
    (void)arg;
    ATOMIC_ADD(&bursts_run, 1);
    spin_ns(20 * 1000);
    gort_waitgroup_done(&wg);
}

static char full_path[256];
static bool full_stole;

/* Goroutines taken by work stealing so far (the runtime's counter). */
static uint64_t steals(void)
{
    gort_metric_sample s = {.name = "/gort/sched/steals:goroutines"};
    CHECK_EQ(gort_metric_read(s.name, &s), 0);
    return s.u64;
}

static void full_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    CHECK_EQ(gort_trace_start(full_path), 0);
    uint64_t steals_at_start = steals();
    struct pingpong pp = {make_chan(sizeof(int64_t), 0),
                          make_chan(sizeof(int64_t), 0), 2000};
    gort_waitgroup_add(&wg, 6);
    gort_go(trace_pinger, &pp);
    gort_go(trace_ponger, &pp);
    gort_go(trace_sleeper, NULL);
    gort_go(trace_syscaller, NULL);
    gort_go(trace_spinner, NULL);
    CHECK_EQ(gort_pipe(pipefd), 0);
    gort_go(trace_reader, NULL);
    gort_chan *c = make_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&wg, 1);
    gort_go(trace_waiter, c);
    await_waiting("IO wait", 0, 1);
    await_waiting("chan receive", 0, 1);
    CHECK_EQ(gort_write(pipefd[1], "x", 1), 1);
    send_i64(c, 42);
    /* Bursts of goroutines on this P until another P's M steals some.  A
     * burst goroutine may also reach the other P through the global queue,
     * so the steal counter, which moves exactly when a steal is traced,
     * decides whether the trace must hold one. */
    uint64_t before = steals();
    for (int i = 0; i < 50; i++) {
        gort_waitgroup_add(&wg, 100);
        for (int k = 0; k < 100; k++)
            gort_go(trace_burst, NULL);
        gort_sleep(MS);
        if (steals() != before)
            break;
    }
    full_stole = steals() != steals_at_start;
    gort_gomaxprocs(1); /* stop-the-world, twice */
    gort_gomaxprocs(2);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(gort_trace_stop(), 0);
    free_chan(c);
    free_chan(pp.ping);
    free_chan(pp.pong);
    gort_close(pipefd[0]);
    gort_close(pipefd[1]);
}

/* A program with ping-pong, sleeps, syscalls, IO wait, a channel wait, a 30 ms
 * spin (preemption request), spawn bursts until a goroutine runs on another P
 * than its maker's (a steal, and spinning Ms, which the bursts wake), two
 * GOMAXPROCS changes (stop-the-world); every kind of event and end reason
 * expected. */
TEST(full)
{
    tmp_path(full_path, sizeof full_path, "full.json");
    run_main(full_main, NULL);
    if (!full_stole)
        printf("note: no steal happened, none expected in the trace\n");
    char args[1024];
    snprintf(args, sizeof args,
             "--expect goroutine,create,unblock,syscall,proc,stw,preempt,"
             "netpoll,timers,counter,spinning%s "
             "--expect-fn trace_pinger,trace_ponger,trace_sleeper,"
             "trace_syscaller,trace_spinner,trace_reader,trace_waiter,"
             "trace_burst "
             "--expect-end 'chan receive,sleep,IO wait,syscall,exit,"
             "running when tracing stopped' --max-dropped 0 "
             "--min-goroutines 10",
             full_stole ? ",steal" : "");
    check_trace(full_path, args);
    tmp_cleanup();
}

/* ---------------------------------------------------------------------------
 * Bad arguments.
 * ------------------------------------------------------------------------- */

static void *foreign_start(void *arg)
{
    (void)arg;
    /* A thread gort did not create: no P to stop the world from. */
    intptr_t r = gort_trace_start("/tmp/never-made-by-gort.json");
    return (void *)r;
}

static char bad_good[256], bad_other[256];

static void bad_main(void *arg)
{
    (void)arg;
    char path[256];
    CHECK_EQ(gort_trace_start(NULL), -EINVAL);
    CHECK_EQ(gort_trace_start(""), -EINVAL);
    tmp_path(path, sizeof path, "no/such/dir/t.json");
    CHECK_EQ(gort_trace_start(path), -ENOENT);
    tmp_path(path, sizeof path, "no");
    CHECK_EQ(access(path, F_OK), -1); /* nothing made */
    CHECK_EQ(gort_trace_start(tmpdir), -EISDIR);
    CHECK_EQ(gort_trace_stop(), -EINVAL); /* no trace running */
    CHECK_EQ(gort_trace_start(bad_good), 0);
    CHECK_EQ(gort_trace_start(bad_other), -EBUSY);
    CHECK_EQ(access(bad_other, F_OK), -1); /* left alone */
    CHECK_EQ(gort_trace_start(bad_good), -EBUSY); /* not truncated */
    pthread_t t;
    void *r;
    CHECK_EQ(pthread_create(&t, NULL, foreign_start, NULL), 0);
    CHECK_EQ(pthread_join(t, &r), 0);
    CHECK_EQ((intptr_t)r, -EPERM);
    CHECK_EQ(gort_trace_stop(), 0);
    CHECK_EQ(gort_trace_stop(), -EINVAL);
}

/* NULL and empty paths, a missing directory (nothing made), a directory,
 * -EBUSY leaving the second path alone, stop without a trace, calls outside
 * goroutines. */
TEST(bad_args)
{
    tmp_path(bad_good, sizeof bad_good, "good.json");
    tmp_path(bad_other, sizeof bad_other, "other.json");
    CHECK_EQ(gort_trace_start(bad_good), -EPERM); /* no runtime */
    CHECK_EQ(gort_trace_stop(), -EPERM);
    CHECK_EQ(access(bad_good, F_OK), -1);
    run_main(bad_main, NULL);
    CHECK_EQ(gort_trace_stop(), -EPERM);
    check_trace(bad_good, "--max-dropped 0");
    tmp_cleanup();
}

/* ---------------------------------------------------------------------------
 * Twice, and across gort_main calls.
 * ------------------------------------------------------------------------- */

static char twice_paths[3][256];

static void trace_short(void *arg)
{
    gort_sleep(MS);
    send_i64(arg, 1);
}

/* A few goroutines talking, traced into path. */
static void traced_round(const char *path)
{
    CHECK_EQ(gort_trace_start(path), 0);
    gort_chan *c = make_chan(sizeof(int64_t), 0);
    for (int i = 0; i < 10; i++)
        gort_go(trace_short, c);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(recv_i64(c), 1);
    CHECK_EQ(gort_trace_stop(), 0);
    free_chan(c);
}

static void twice_main(void *arg)
{
    int round = (int)(intptr_t)arg;
    traced_round(twice_paths[round]);
    if (round == 0)
        traced_round(twice_paths[1]);
}

/* Start and stop twice in one gort_main, then again in a second gort_main. */
TEST(twice)
{
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "twice%d.json", i);
        tmp_path(twice_paths[i], sizeof twice_paths[i], name);
    }
    run_main(twice_main, (void *)0);
    run_main(twice_main, (void *)2);
    for (int i = 0; i < 3; i++)
        check_trace(twice_paths[i], "--expect goroutine,create,unblock,timers "
                                    "--expect-fn trace_short --max-dropped 0 "
                                    "--min-goroutines 10");
    tmp_cleanup();
}

/* ---------------------------------------------------------------------------
 * A trace still running when gort_main returns.
 * ------------------------------------------------------------------------- */

static char exit_path[256];

/* Whether the spinning goroutine below has yielded once. */
static int32_t exit_yielded;

static void trace_forever_blocked(void *arg)
{
    gort_waitgroup_wait(arg); /* nobody ever calls done */
}

static void trace_forever_spinning(void *arg)
{
    int64_t *stop = arg;
    /* Yields with short sleeps between: a bare yield loop makes events
     * faster than the trace's writer drains them on a busy machine, and
     * the case allows no drop. */
    while (!__atomic_load_n(stop, __ATOMIC_RELAXED)) {
        gort_gosched();
        __atomic_store_n(&exit_yielded, 1, __ATOMIC_RELAXED);
        gort_sleep(10 * 1000);
    }
}

static int64_t exit_stop;

static void exit_main(void *arg)
{
    (void)arg;
    __atomic_store_n(&exit_yielded, 0, __ATOMIC_RELAXED);
    CHECK_EQ(gort_trace_start(exit_path), 0);
    static gort_waitgroup never;
    gort_waitgroup_add(&never, 1);
    gort_go(trace_forever_blocked, &never);
    gort_go(trace_forever_spinning, &exit_stop);
    /* The trace must show the yield and the wait, so wait for both to
     * have happened: the spinner's first yield, and the waiter counted in
     * the WaitGroup (from there to its park it runs in gort's code, which
     * signal preemption leaves alone).  Not a fixed sleep: a thread that
     * stole one of them can be held off the CPU for milliseconds, or be
     * preempted just after it started (under an emulator). */
    for (int i = 0; !__atomic_load_n(&exit_yielded, __ATOMIC_RELAXED) ||
                    (__atomic_load_n(&never.state, __ATOMIC_RELAXED) &
                     0xffffffffu) == 0;
         i++) {
        CHECK(i < 5000); /* 5 s */
        gort_sleep(MS);
    }
    /* Return with both alive: gort_main stops the trace. */
}

/* A trace never stopped is completed when gort_main returns, with goroutines
 * still yielding and blocked. */
TEST(stop_at_exit)
{
    tmp_path(exit_path, sizeof exit_path, "exit.json");
    run_main(exit_main, NULL);
    /* The world stopped for the exit before the trace did: nothing runs
     * at the stop, and everything that ran is in the file. */
    check_trace(exit_path, "--expect goroutine,create,timers "
                           "--expect-fn trace_forever_spinning,"
                           "trace_forever_blocked "
                           "--expect-end 'sync.WaitGroup.Wait,yield,exit,sleep' "
                           "--max-dropped 0");
    tmp_cleanup();
}

/* ---------------------------------------------------------------------------
 * GORTDEBUG=trace=path.
 * ------------------------------------------------------------------------- */

static void trace_child_main(void *arg)
{
    (void)arg;
    gort_chan *c = make_chan(sizeof(int64_t), 0);
    for (int i = 0; i < 20; i++)
        gort_go(trace_short, c);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(recv_i64(c), 1);
    free_chan(c);
    say("child done\n");
}

TEST_HIDDEN(gortdebug_child)
{
    run_main(trace_child_main, NULL);
}

/* GORTDEBUG=trace=path traces a whole child program. */
TEST(gortdebug)
{
    char path[256], env0[300];
    tmp_path(path, sizeof path, "env.json");
    snprintf(env0, sizeof env0, "GORTDEBUG=trace=%s", path);
    const char *env[] = {env0, NULL};
    struct test_child r;
    test_run_child("gortdebug_child", env, 60, &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "child done");
    CHECK_EQ(strlen(r.err), 0);
    test_child_free(&r);
    check_trace(path, "--expect goroutine,create,unblock,timers,proc "
                      "--expect-fn trace_short,trace_child_main --max-dropped 0 "
                      "--min-goroutines 21");
    tmp_cleanup();
}

/* An empty path and an unwritable one are reported, the program runs
 * untraced. */
TEST(gortdebug_bad)
{
    struct test_child r;
    const char *empty[] = {"GORTDEBUG=trace=", NULL};
    test_run_child("gortdebug_child", empty, 60, &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "child done");
    CHECK_STR_CONTAINS(r.err, "gort: GORTDEBUG: trace=\"\" is not valid "
                              "(want a file path");
    CHECK_EQ(count_lines(r.err), 1);
    test_child_free(&r);

    char path[256], env0[300];
    tmp_path(path, sizeof path, "missing/dir/t.json");
    snprintf(env0, sizeof env0, "GORTDEBUG=trace=%s", path);
    const char *missing[] = {env0, NULL};
    test_run_child("gortdebug_child", missing, 60, &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "child done");
    CHECK_STR_CONTAINS(r.err, "cannot write the trace (No such file or "
                              "directory); not tracing");
    CHECK_STR_CONTAINS(r.err, path);
    CHECK_EQ(count_lines(r.err), 1);
    test_child_free(&r);
    tmp_cleanup();
}

/* ---------------------------------------------------------------------------
 * Dropped records.
 * ------------------------------------------------------------------------- */

static char drops_path[256];

static void drops_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_trace_start(drops_path), 0);
    rt_set_trace_stall(true);
    /* Some 6 records a round trip: far more than the pool's 64+ buffers
     * of 1024 records. */
    struct pingpong pp = {make_chan(sizeof(int64_t), 0),
                          make_chan(sizeof(int64_t), 0), 40000};
    gort_waitgroup_add(&wg, 2);
    gort_go(trace_pinger, &pp);
    gort_go(trace_ponger, &pp);
    gort_waitgroup_wait(&wg);
    rt_set_trace_stall(false);
    CHECK_EQ(gort_trace_stop(), 0);
    free_chan(pp.ping);
    free_chan(pp.pong);
}

/* With the writer held back, records beyond the pool are dropped and counted;
 * the trace stays consistent. */
TEST(drops)
{
    tmp_path(drops_path, sizeof drops_path, "drops.json");
    run_main(drops_main, NULL);
    check_trace(drops_path, "--expect goroutine,lost --min-dropped 1 "
                            "--expect-fn trace_pinger,trace_ponger");
    tmp_cleanup();
}

/* ---------------------------------------------------------------------------
 * Threads gort did not create.
 * ------------------------------------------------------------------------- */

static char foreign_path[256];
static gort_chan *foreign_ch;

static void trace_foreign_child(void *arg)
{
    (void)arg;
    CHECK_EQ(recv_i64(foreign_ch), 7);
    gort_waitgroup_done(&wg);
}

static void *foreign_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        gort_waitgroup_add(&wg, 1);
        CHECK_GT(gort_go(trace_foreign_child, NULL), 0);
        send_i64(foreign_ch, 7);
    }
    return NULL;
}

static void foreign_main(void *arg)
{
    (void)arg;
    foreign_ch = make_chan(sizeof(int64_t), 0);
    CHECK_EQ(gort_trace_start(foreign_path), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, foreign_thread, NULL), 0);
    /* Join from a syscall: the thread needs the P to make progress. */
    gort_entersyscallblock();
    CHECK_EQ(pthread_join(t, NULL), 0);
    gort_exitsyscall();
    gort_waitgroup_wait(&wg);
    CHECK_EQ(gort_trace_stop(), 0);
    free_chan(foreign_ch);
}

/* A plain pthread starts goroutines and sends to them while tracing: its own
 * track, valid trace. */
TEST(foreign_threads)
{
    tmp_path(foreign_path, sizeof foreign_path, "foreign.json");
    run_main(foreign_main, NULL);
    check_trace(foreign_path, "--expect goroutine,create "
                              "--expect-fn trace_foreign_child "
                              "--max-dropped 0 --min-goroutines 20");
    char *text = slurp(foreign_path);
    CHECK_STR_CONTAINS(text, "(foreign thread)");
    free(text);
    tmp_cleanup();
}
