/* SPDX-License-Identifier: MIT */
/*
 * test_returns.c - the return values and fatal errors gort.h documents
 * that no other test asserts: NULL and bad arguments, calls made before
 * gort_main, after it and on a thread gort did not make while it runs,
 * objects freed or reconfigured while busy, failed writes, and -ENOMEM.
 *
 * -ENOMEM: the binary is linked with malloc, calloc, realloc and
 * aligned_alloc wrapped (tests/tests.cmake), gort's calls to them too;
 * oom_on(k) makes the allocations of the calling thread fail from its
 * k-th on, so a goroutine locked to its thread sees exactly the failure
 * it asks for, and the runtime's other threads none.
 *
 * Misuse that gort.h calls fatal runs as death tests (test_fatal.c's
 * way): a child program makes the call and must die by SIGABRT with
 * "gort: fatal error: <call>: not called from a goroutine", its stdout
 * (a pipe, so fully buffered) written out first.
 */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>

#define SECOND (1000 * MS)

/* ---------------------------------------------------------------------------
 * Failing allocations.
 * ------------------------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

static struct {
    int armed;        /* atomic: failing */
    pthread_t thread; /* atomic: whose allocations fail */
    int skip;         /* that thread's: allocations still let through */
    int failed;       /* that thread's: allocations failed */
} oom;

static bool oom_hit(void)
{
    /* Acquire: pairs with oom_on's release, which published thread. */
    if (!__atomic_load_n(&oom.armed, __ATOMIC_ACQUIRE) ||
        !pthread_equal(__atomic_load_n(&oom.thread, __ATOMIC_RELAXED),
                       pthread_self()))
        return false;
    if (oom.skip > 0) {
        oom.skip--;
        return false;
    }
    oom.failed++;
    return true;
}

void *__wrap_malloc(size_t n)
{
    return oom_hit() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return oom_hit() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return oom_hit() ? NULL : __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    return oom_hit() ? NULL : __real_aligned_alloc(align, n);
}

/* Fail the calling thread's allocations from the skip-th on (0: all of
 * them) until oom_off.  A goroutine calling it is locked to its thread
 * (oom_prepare). */
static void oom_on(int skip)
{
    /* A fresh time slice: no preemption request (whose yield may queue
     * the goroutine, and allocate) comes in the microseconds the
     * failures last. */
    gort_gosched();
    oom.skip = skip;
    oom.failed = 0;
    __atomic_store_n(&oom.thread, pthread_self(), __ATOMIC_RELAXED);
    /* Release: thread, skip and failed before the flag. */
    __atomic_store_n(&oom.armed, 1, __ATOMIC_RELEASE);
}

/* Stop failing; how many allocations failed. */
static int oom_off(void)
{
    __atomic_store_n(&oom.armed, 0, __ATOMIC_RELEASE);
    return oom.failed;
}

/* Make the calling goroutine ready for oom_on: locked to its thread, at
 * GOMAXPROCS 1 (a goroutine started or a timer added then wakes no P,
 * which could need a new M, allocated on this thread), with the global
 * run queue's first segment made (a yield through it: a goroutine coming
 * back from a system call may be queued there, and a segment is kept
 * once made). */
static void oom_prepare(void)
{
    gort_gomaxprocs(2);
    gort_gosched();
    gort_gomaxprocs(1);
    gort_lock_os_thread();
}

/* ---------------------------------------------------------------------------
 * Helpers.
 * ------------------------------------------------------------------------- */

static void noop(void *arg)
{
    (void)arg;
}

/* Run fn(arg) on a plain thread and wait for it (from a goroutine: the
 * wait is a blocking call). */
static void on_plain_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, fn, arg), 0);
    CHECK_EQ(GORT_BLOCKING(pthread_join(t, NULL)), 0);
}

/* ---------------------------------------------------------------------------
 * Outside gort_main: before it and after it.
 * ------------------------------------------------------------------------- */

/* gort_go and gort_main with a NULL function: -EINVAL, before gort_main
 * (gort_go's -EPERM comes after the argument check) and after it. */
TEST(null_function_outside)
{
    CHECK_EQ(gort_go(NULL, NULL), -EINVAL);
    CHECK_EQ(gort_main(NULL, NULL), -EINVAL);
    run_main(noop, NULL);
    CHECK_EQ(gort_go(NULL, NULL), -EINVAL);
    CHECK_EQ(gort_main(NULL, NULL), -EINVAL);
    /* The -EINVAL left nothing behind: gort_main still runs. */
    run_main(noop, NULL);
}

/* What needs a timer returns -EPERM (or NULL) before gort_main and after
 * it; registering a descriptor -EPERM, leaving no descriptor open. */
static void check_timers_outside(void)
{
    gort_timer *t = (gort_timer *)&t;
    CHECK_EQ(gort_timer_make(&t, MS, NULL, NULL), -EPERM);
    CHECK_EQ(gort_timer_make(&t, MS, noop, NULL), -EPERM);
    CHECK_EQ(gort_ticker_make(&t, MS), -EPERM);
    CHECK(t == (gort_timer *)&t); /* untouched */
    CHECK(gort_after(MS) == NULL);
    int fds[2] = {-1, -1}, before = count_fds();
    CHECK_EQ(gort_pipe(fds), -EPERM);
    CHECK_EQ(gort_socket(AF_UNIX, SOCK_STREAM, 0), -EPERM);
    CHECK_EQ(count_fds(), before);
    CHECK_EQ(pipe(fds), 0);
    CHECK_EQ(gort_fd_register(fds[0]), -EPERM);
    /* Not registered: the deadline has no descriptor to go to. */
    CHECK_EQ(gort_fd_set_deadline(fds[0], 'r', 0), -EBADF);
    close(fds[0]);
    close(fds[1]);
}

TEST(timers_and_fds_outside)
{
    check_timers_outside();
    run_main(noop, NULL);
    check_timers_outside();
}

/* The calls gort.h says do nothing outside a goroutine return, and
 * change nothing: no fatal error, nothing counted. */
TEST(nothing_outside)
{
    gort_sleep(0);
    gort_sleep(-SECOND);
    gort_sleep_until(gort_no_deadline());
    gort_lock_os_thread();
    gort_unlock_os_thread();
    gort_preempt_disable();
    gort_preempt_enable();
    gort_preempt_enable(); /* without a disable */
    gort_entersyscall();
    gort_exitsyscall();
    gort_entersyscallblock();
    gort_exitsyscall();
    gort_schedtrace(1);
    CHECK_EQ(gort_sched_ticks(NULL, 4), 0);
    /* A free mutex and an uncontended semaphore from a plain thread. */
    gort_mutex m = GORT_MUTEX_INIT;
    gort_mutex_lock(&m);
    CHECK(!gort_mutex_trylock(&m));
    gort_mutex_unlock(&m);
    gort_semaphore *s;
    CHECK_EQ(gort_semaphore_make(&s, 2), 0);
    CHECK(gort_semaphore_try_acquire(s, 2));
    gort_semaphore_release(s, 2);
    CHECK_EQ(gort_semaphore_free(s), 0);
    CHECK_EQ(gort_numgoroutine(), 0);
    CHECK_EQ(gort_goid(), 0);
}

/* gort_set_max_threads: -EINVAL leaves the limit as it was (the next call
 * returns it). */
TEST(max_threads_unchanged)
{
    int first = gort_set_max_threads(500);
    CHECK_GE(first, 1);
    CHECK_EQ(gort_set_max_threads(0), -EINVAL);
    CHECK_EQ(gort_set_max_threads(-3), -EINVAL);
    CHECK_EQ(gort_set_max_threads(first), 500);
}

/* ---------------------------------------------------------------------------
 * Fatal outside a goroutine: before gort_main, after it, and on a thread
 * gort did not make while it runs.
 * ------------------------------------------------------------------------- */

static gort_deadline in_a_second(void)
{
    return gort_deadline_in(SECOND);
}

static void m_goexit(void)
{
    gort_goexit();
}

static void m_recv(void)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 1), 0);
    int v;
    gort_chan_recv(ch, &v);
}

static void m_trysend(void)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 1), 0);
    gort_chan_trysend(ch, &(int){1});
}

static void m_tryrecv(void)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 1), 0);
    gort_chan_tryrecv(ch, NULL, NULL);
}

static void m_send_until(void)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 0), 0);
    gort_chan_send_until(ch, &(int){1}, in_a_second());
}

static void m_recv_until(void)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 0), 0);
    gort_chan_recv_until(ch, NULL, in_a_second());
}

/* A NULL channel never becomes ready: its wait is a sleep to d. */
static void m_recv_until_nil(void)
{
    gort_chan_recv_until(NULL, NULL, in_a_second());
}

static void m_send_ctx(void)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 0), 0);
    gort_chan_send_ctx(ch, &(int){1}, NULL);
}

static gort_case two_cases[2];

static void m_select(void)
{
    gort_chan *a;
    CHECK_EQ(gort_chan_make(&a, 0, 0), 0);
    gort_case c = {a, GORT_CASE_RECV, NULL, false};
    gort_select(&c, 1);
}

static void m_select_until(void)
{
    gort_chan *a, *b;
    CHECK_EQ(gort_chan_make(&a, 0, 0), 0);
    CHECK_EQ(gort_chan_make(&b, 0, 0), 0);
    two_cases[0] = (gort_case){a, GORT_CASE_RECV, NULL, false};
    two_cases[1] = (gort_case){b, GORT_CASE_RECV, NULL, false};
    gort_select_until(two_cases, 2, in_a_second());
}

static void m_sleep(void)
{
    gort_sleep(MS);
}

static void m_sleep_until(void)
{
    gort_sleep_until(gort_deadline_in(MS));
}

static void m_ctx_with_cancel(void)
{
    gort_ctx *c;
    gort_ctx_with_cancel(gort_ctx_background(), &c);
}

static void m_ctx_with_deadline(void)
{
    gort_ctx *c;
    gort_ctx_with_deadline(gort_ctx_background(), in_a_second(), &c);
}

static void m_errgroup_make(void)
{
    gort_errgroup *g;
    gort_errgroup_make(&g, NULL, NULL);
}

static void m_mutex_held(void)
{
    static gort_mutex m = GORT_MUTEX_INIT;
    gort_mutex_lock(&m);
    gort_mutex_lock(&m);
}

static void m_waitgroup_wait(void)
{
    static gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 1);
    gort_waitgroup_wait(&wg);
}

static void m_waitgroup_wait_until(void)
{
    static gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 1);
    gort_waitgroup_wait_until(&wg, in_a_second());
}

static gort_mutex cond_mu = GORT_MUTEX_INIT;
static gort_cond cond = GORT_COND_INIT(&cond_mu);

static void m_cond_wait(void)
{
    gort_mutex_lock(&cond_mu);
    gort_cond_wait(&cond);
}

static void m_cond_wait_until(void)
{
    gort_mutex_lock(&cond_mu);
    gort_cond_wait_until(&cond, in_a_second());
}

/* A timer and a ticker made by a goroutine, kept past gort_main or handed
 * to a thread gort did not make. */
static gort_timer *kept_timer, *kept_ticker;

static void make_kept_timers(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_timer_make(&kept_timer, SECOND, NULL, NULL), 0);
    CHECK_EQ(gort_ticker_make(&kept_ticker, SECOND), 0);
}

static void m_timer_reset(void)
{
    if (!kept_timer)
        run_main(make_kept_timers, NULL);
    gort_timer_reset(kept_timer, MS);
}

static void m_ticker_reset(void)
{
    if (!kept_ticker)
        run_main(make_kept_timers, NULL);
    gort_ticker_reset(kept_ticker, MS);
}

/* A misuse: the call made where it may not be, and the name its fatal
 * error gives. */
struct misuse {
    const char *what;
    void (*call)(void);
    const char *name;
};

/* Made before gort_main (the timers: after a gort_main that made them). */
static const struct misuse outside[] = {
    {"goexit", m_goexit, "gort_goexit"},
    {"recv", m_recv, "gort_chan_recv"},
    {"trysend", m_trysend, "gort_chan_trysend"},
    {"tryrecv", m_tryrecv, "gort_chan_tryrecv"},
    {"send_until", m_send_until, "gort_chan_send_until"},
    {"recv_until", m_recv_until, "gort_chan_recv_until"},
    {"send_ctx", m_send_ctx, "gort_select"},
    {"select", m_select, "gort_select"},
    {"select_until", m_select_until, "gort_select_until"},
    {"sleep_until", m_sleep_until, "gort_sleep"},
    {"ctx_with_cancel", m_ctx_with_cancel, "gort_ctx_with_cancel"},
    {"ctx_with_deadline", m_ctx_with_deadline, "gort_ctx_with_deadline"},
    {"errgroup_make", m_errgroup_make, "gort_errgroup_make"},
    {"mutex_held", m_mutex_held,
     "gort_mutex_lock, gort_rwmutex_*lock or gort_waitgroup_wait"},
    {"waitgroup_wait", m_waitgroup_wait,
     "gort_mutex_lock, gort_rwmutex_*lock or gort_waitgroup_wait"},
    {"waitgroup_wait_until", m_waitgroup_wait_until,
     "gort_waitgroup_wait_until"},
    {"cond_wait", m_cond_wait, "gort_cond_wait"},
    {"cond_wait_until", m_cond_wait_until, "gort_cond_wait_until"},
    {"timer_reset", m_timer_reset, "gort_timer_reset"},
    {"ticker_reset", m_ticker_reset, "gort_ticker_reset"},
};

/* Made on a thread gort did not make, while gort_main runs: the calls
 * that need the processor such a thread never holds. */
static const struct misuse foreign[] = {
    {"sleep", m_sleep, "gort_sleep"},
    {"sleep_until", m_sleep_until, "gort_sleep"},
    {"goexit", m_goexit, "gort_goexit"},
    {"send_until", m_send_until, "gort_chan_send_until"},
    {"recv_until", m_recv_until, "gort_chan_recv_until"},
    {"recv_until_nil", m_recv_until_nil, "gort_chan_recv_until"},
    {"select_until", m_select_until, "gort_select_until"},
    {"waitgroup_wait_until", m_waitgroup_wait_until,
     "gort_waitgroup_wait_until"},
    {"cond_wait_until", m_cond_wait_until, "gort_cond_wait_until"},
    {"timer_reset", m_timer_reset, "gort_timer_reset"},
    {"ticker_reset", m_ticker_reset, "gort_ticker_reset"},
};

static const struct misuse *find_misuse(const struct misuse *t, size_t n,
                                        const char *what)
{
    CHECK(what != NULL);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].what, what) == 0)
            return &t[i];
    CHECK(0);
    return NULL;
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* The child's part: "stage", a line left in stdio's buffer, the call. */
static void misuse_run(const struct misuse *m)
{
    say("stage\n");
    printf("in stdio's buffer\n"); /* a pipe: fully buffered */
    m->call();
    say("after\n"); /* never */
}

TEST_HIDDEN(outside_child)
{
    misuse_run(find_misuse(outside, NELEM(outside), getenv("RET_CALL")));
}

static void *foreign_call(void *arg)
{
    misuse_run(arg);
    return NULL;
}

static void foreign_child_main(void *arg)
{
    const struct misuse *m = arg;
    /* The timers go to the thread already made. */
    if (m->call == m_timer_reset || m->call == m_ticker_reset)
        make_kept_timers(NULL);
    on_plain_thread(foreign_call, arg);
    say("returned\n"); /* never */
}

TEST_HIDDEN(foreign_child)
{
    const struct misuse *m =
        find_misuse(foreign, NELEM(foreign), getenv("RET_CALL"));
    gort_main(foreign_child_main, (void *)m);
}

/* Run child on each misuse of t: SIGABRT, the message naming the call,
 * and the buffered line written out before the abort. */
static void expect_misuses(const char *child, const struct misuse *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char env0[64], want[256];
        snprintf(env0, sizeof env0, "RET_CALL=%s", t[i].what);
        const char *env[] = {env0, NULL};
        struct test_child r;
        fprintf(stderr, "%s %s\n", child, t[i].what);
        run_death(child, env, &r);
        CHECK_EQ(r.signal, SIGABRT);
        CHECK_STR_CONTAINS(r.out, "stage\nin stdio's buffer\n");
        CHECK(strstr(r.out, "after") == NULL);
        CHECK(strstr(r.out, "returned") == NULL);
        snprintf(want, sizeof want,
                 "gort: fatal error: %s: not called from a goroutine (",
                 t[i].name);
        CHECK_STR_CONTAINS(r.err, want);
        test_child_free(&r);
    }
}

/* Before gort_main (and after it, for the timers a gort_main made): a
 * receive, the try forms, the waits with a deadline, a select, a sleep,
 * gort_goexit, contexts and error groups, a held mutex, a wait group
 * and a cond to wait for, resetting a timer or a ticker. */
TEST(fatal_outside)
{
    expect_misuses("outside_child", outside, NELEM(outside));
}

/* On a thread gort did not make while gort_main runs: gort_sleep and
 * gort_sleep_until, gort_goexit, every wait with a deadline (one on a
 * NULL channel too), resetting a timer or a ticker. */
TEST(fatal_foreign)
{
    expect_misuses("foreign_child", foreign, NELEM(foreign));
}

/* ---------------------------------------------------------------------------
 * On a thread gort did not make, the calls that return instead.
 * ------------------------------------------------------------------------- */

static int fr_fd;
static int64_t fr_goid;

static void *foreign_returns_thread(void *arg)
{
    (void)arg;
    /* A goroutine stands for the thread; it has an id of its own. */
    fr_goid = gort_goid();
    /* Handlers that would never run. */
    CHECK_EQ(gort_defer(noop, NULL), -EPERM);
    CHECK_EQ(gort_defer(NULL, NULL), -EINVAL);
    /* It sets nothing and answers with the current value. */
    CHECK_EQ(gort_gomaxprocs(3), 2);
    /* No timers. */
    gort_timer *t = NULL;
    CHECK_EQ(gort_timer_make(&t, MS, NULL, NULL), -EPERM);
    CHECK_EQ(gort_timer_make(&t, MS, noop, NULL), -EPERM);
    CHECK_EQ(gort_ticker_make(&t, MS), -EPERM);
    CHECK(t == NULL);
    CHECK(gort_after(MS) == NULL);
    CHECK_EQ(gort_fd_set_deadline(fr_fd, 'r', gort_nanotime() + SECOND),
             -EPERM);
    CHECK_EQ(gort_fd_deadline(fr_fd, GORT_FD_WRITE, in_a_second()), -EPERM);
    /* A context whose timer cannot be made: made, cancelled, -EPERM. */
    gort_ctx *c = NULL;
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(), in_a_second(), &c),
             -EPERM);
    CHECK(c != NULL);
    CHECK_EQ(gort_ctx_err(c), -ECANCELED);
    CHECK(!gort_chan_recv(gort_ctx_done(c), NULL)); /* closed */
    gort_ctx_cancel_release(c);
    /* One gort_main at a time, whoever asks. */
    CHECK_EQ(gort_main(noop, NULL), -EBUSY);
    /* Its own thread already: locking does nothing, nor do the others
     * that need a goroutine of gort's (a yield yields the thread). */
    gort_lock_os_thread();
    gort_unlock_os_thread();
    gort_preempt_disable();
    gort_preempt_enable();
    gort_entersyscall();
    gort_exitsyscall();
    gort_gosched();
    CHECK_EQ(gort_goid(), fr_goid);
    return NULL;
}

static void foreign_returns_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int fds[2];
    CHECK_EQ(gort_pipe(fds), 0);
    fr_fd = fds[0];
    on_plain_thread(foreign_returns_thread, NULL);
    CHECK_GT(fr_goid, 1);
    CHECK_NE(fr_goid, gort_goid());
    CHECK_EQ(gort_gomaxprocs(0), 2);
    CHECK_EQ(gort_close(fds[0]), 0);
    CHECK_EQ(gort_close(fds[1]), 0);
}

/* A thread gort did not make: its own goroutine id; gort_defer -EPERM;
 * gort_gomaxprocs a query; timers, tickers, gort_after, descriptor
 * deadlines -EPERM (NULL); a context with a deadline made but cancelled,
 * -EPERM; gort_main -EBUSY. */
TEST(foreign_returns)
{
    run_main(foreign_returns_main, NULL);
}

/* ---------------------------------------------------------------------------
 * NULL and bad arguments, in a goroutine.
 * ------------------------------------------------------------------------- */

static void null_args_main(void *arg)
{
    (void)arg;
    /* Wait groups and conds with a deadline: -EINVAL, also without one. */
    CHECK_EQ(gort_waitgroup_wait_until(NULL, in_a_second()), -EINVAL);
    CHECK_EQ(gort_waitgroup_wait_until(NULL, gort_no_deadline()), -EINVAL);
    CHECK_EQ(gort_cond_wait_until(NULL, in_a_second()), -EINVAL);
    gort_cond nomutex = GORT_COND_INIT(NULL);
    CHECK_EQ(gort_cond_wait_until(&nomutex, gort_no_deadline()), -EINVAL);
    CHECK_EQ(gort_cond_wait_until(&nomutex, in_a_second()), -EINVAL);
    /* Contexts: NULL has no done channel and no deadline; cancels,
     * retains and releases of NULL (and of the background) do nothing. */
    CHECK(gort_ctx_done(NULL) == NULL);
    CHECK_EQ(gort_ctx_deadline(NULL).at, 0);
    gort_ctx_cancel(NULL);
    gort_ctx_cancel_release(NULL);
    gort_ctx_retain(NULL);
    gort_ctx_release(NULL);
    gort_ctx_retain(gort_ctx_background());
    gort_ctx_release(gort_ctx_background());
    gort_ctx_cancel(gort_ctx_background());
    CHECK_EQ(gort_ctx_err(gort_ctx_background()), 0);
    gort_ctx *c = (gort_ctx *)&c;
    CHECK_EQ(gort_ctx_with_deadline(NULL, in_a_second(), &c), -EINVAL);
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(), in_a_second(), NULL),
             -EINVAL);
    CHECK(c == (gort_ctx *)&c);
    /* Timers: NULL is nothing to stop, reset or free, and has no channel;
     * a function timer has none either. */
    CHECK(gort_timer_chan(NULL) == NULL);
    CHECK(!gort_timer_stop(NULL));
    CHECK(!gort_timer_reset(NULL, MS));
    CHECK_EQ(gort_timer_free(NULL), 0);
    gort_timer *ft;
    CHECK_EQ(gort_timer_make(&ft, SECOND, noop, NULL), 0);
    CHECK(gort_timer_chan(ft) == NULL);
    CHECK_EQ(gort_timer_free(ft), 0);
    /* Semaphores: no units taken or given for NULL or n <= 0. */
    gort_semaphore *s;
    CHECK_EQ(gort_semaphore_make(&s, 3), 0);
    CHECK_EQ(gort_semaphore_make(&s, -1), -EINVAL);
    CHECK(!gort_semaphore_try_acquire(NULL, 1));
    CHECK(!gort_semaphore_try_acquire(s, 0));
    CHECK(!gort_semaphore_try_acquire(s, -2));
    gort_semaphore_release(NULL, 1);
    gort_semaphore_release(s, 0);
    gort_semaphore_release(s, -3); /* would be an over-release if counted */
    CHECK(gort_semaphore_try_acquire(s, 3)); /* all three still there */
    CHECK(!gort_semaphore_try_acquire(s, 1));
    gort_semaphore_release(s, 3);
    CHECK_EQ(gort_semaphore_acquire(s, -1, NULL), -EINVAL);
    CHECK_EQ(gort_semaphore_free(s), 0);
    /* gort_sched_ticks with no array: the count alone. */
    CHECK_EQ(gort_sched_ticks(NULL, 4), gort_gomaxprocs(0));
    uint32_t one = 12345;
    CHECK_EQ(gort_sched_ticks(&one, 0), gort_gomaxprocs(0));
    CHECK_EQ(one, 12345);
}

/* NULL wait groups, conds (or a cond without its mutex), contexts,
 * timers and semaphores; gort_sched_ticks without an array. */
TEST(null_args)
{
    run_main(null_args_main, NULL);
}

static void limits_main(void *arg)
{
    (void)arg;
    /* Capacity beyond 32 bits, also for a signal channel whose buffer
     * would take no memory: -EINVAL, *chp untouched. */
    gort_chan *ch = (gort_chan *)&ch;
    if (SIZE_MAX > UINT32_MAX) {
        CHECK_EQ(gort_chan_make(&ch, 0, (size_t)UINT32_MAX + 1), -EINVAL);
        CHECK_EQ(gort_chan_make(&ch, 1, (size_t)UINT32_MAX + 1), -EINVAL);
        CHECK(ch == (gort_chan *)&ch);
    }
    /* gort_select_ctx: 65535 cases at most, whatever the context.  The
     * cases are valid (never-ready receives and a default), so that only
     * the count can be refused. */
    gort_case *cs = calloc(65536, sizeof *cs);
    CHECK(cs != NULL);
    for (int i = 0; i < 65536; i++)
        cs[i].dir = GORT_CASE_RECV;
    cs[65535].dir = GORT_CASE_DEFAULT;
    CHECK_EQ(gort_select_ctx(cs, 65536, NULL), -EINVAL);
    CHECK_EQ(gort_select_ctx(cs, 65536, gort_ctx_background()), -EINVAL);
    CHECK_EQ(gort_select(cs, 65536), 65535); /* gort_select's limit */
    cs[65534].dir = GORT_CASE_DEFAULT;
    CHECK_EQ(gort_select_ctx(cs, 65535, NULL), 65534);
    free(cs);
    CHECK_EQ(gort_select_ctx(NULL, 1, NULL), -EINVAL);
    /* gort_ctx_with_deadline with a passed deadline: made, cancelled with
     * -ETIMEDOUT, and 0. */
    gort_ctx *x;
    CHECK_EQ(
        gort_ctx_with_deadline(gort_ctx_background(), gort_deadline_in(-1), &x),
        0);
    CHECK_EQ(gort_ctx_err(x), -ETIMEDOUT);
    gort_ctx_cancel_release(x);
}

/* Channel capacities beyond 32 bits; gort_select_ctx's limit of 65535
 * with a NULL or background context too; a passed deadline. */
TEST(limits)
{
    run_main(limits_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Objects in use.
 * ------------------------------------------------------------------------- */

static gort_chan *busy_after, *busy_gate;

/* Receives the gort_after channel's one value. */
static void after_receiver(void *arg)
{
    int64_t v = 0;
    CHECK(gort_chan_recv(busy_after, &v));
    *(int64_t *)arg = v;
}

static int eg_blocked(void *arg)
{
    (void)arg;
    gort_chan_recv(busy_gate, NULL);
    return 0;
}

static void busy_main(void *arg)
{
    (void)arg;
    /* A timer's channel belongs to the timer: -EPERM, and it still works. */
    gort_timer *t;
    CHECK_EQ(gort_timer_make(&t, MS, NULL, NULL), 0);
    CHECK_EQ(gort_chan_free(gort_timer_chan(t)), -EPERM);
    int64_t v = 0;
    CHECK(gort_chan_recv(gort_timer_chan(t), &v));
    CHECK_GT(v, 0);
    CHECK_EQ(gort_timer_free(t), 0);

    /* A gort_after channel with a receiver: -EBUSY, nothing freed; a
     * value sent to the receiver, then freed with its timer. */
    busy_after = gort_after(3600 * SECOND);
    CHECK(busy_after != NULL);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    int64_t got = 0;
    CHECK_GT(gort_waitgroup_go(&wg, after_receiver, &got), 1);
    await_waiting("chan receive", 0, 1);
    CHECK_EQ(gort_chan_free(busy_after), -EBUSY);
    CHECK_EQ(gort_chan_free(busy_after), -EBUSY);
    send_i64(busy_after, 77);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(got, 77);
    CHECK_EQ(gort_chan_free(busy_after), 0);

    /* An error group with a goroutine running: neither a new limit nor
     * a free (-EBUSY, nothing changed); both once it has been waited
     * for. */
    busy_gate = make_chan(0, 0);
    gort_errgroup *g;
    gort_ctx *gctx;
    CHECK_EQ(gort_errgroup_make(&g, NULL, &gctx), 0);
    CHECK_GT(gort_errgroup_go(g, eg_blocked, NULL), 1);
    CHECK_EQ(gort_errgroup_set_limit(g, 1), -EBUSY);
    CHECK_EQ(gort_errgroup_free(g), -EBUSY);
    CHECK_EQ(gort_ctx_err(gctx), 0); /* the group's context lives on */
    gort_chan_close(busy_gate);
    CHECK_EQ(gort_errgroup_wait(g), 0);
    CHECK_EQ(gort_errgroup_set_limit(g, 1), 0);
    CHECK_EQ(gort_errgroup_set_limit(g, 0), 0);
    CHECK_EQ(gort_errgroup_free(g), 0);
    free_chan(busy_gate);
}

/* gort_chan_free on a timer's channel (-EPERM) and on a gort_after
 * channel with a receiver (-EBUSY); gort_errgroup_set_limit and
 * gort_errgroup_free while a goroutine of the group runs (-EBUSY). */
TEST(busy)
{
    run_main(busy_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Descriptors and writes that fail.
 * ------------------------------------------------------------------------- */

static void fds_main(void *arg)
{
    (void)arg;
    /* Calls on descriptors the poller does not know: -EBADF. */
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    char c = 'x';
    CHECK_EQ(gort_accept(sv[0], NULL, NULL), -EBADF);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, "/nonexistent");
    CHECK_EQ(gort_connect(sv[0], (struct sockaddr *)&addr, sizeof addr, 0),
             -EBADF);
    CHECK_EQ(gort_sendto(sv[0], &c, 1, 0, NULL, 0), -EBADF);
    CHECK_EQ(gort_recvfrom(sv[0], &c, 1, 0, NULL, NULL), -EBADF);
    close(sv[0]);
    close(sv[1]);

    /* The syscall path: the call's own errors. */
    struct iovec iov = {&c, 1};
    CHECK_EQ(gort_readv(-1, &iov, 1), -EBADF);
    CHECK_EQ(gort_writev(-1, &iov, 1), -EBADF);
    CHECK_EQ(gort_shutdown(-1, SHUT_RDWR), -EBADF);
    CHECK_EQ(gort_poll(NULL, 1, 0), -EFAULT);
    int before = count_fds();
    CHECK_EQ(gort_socket(-1, SOCK_STREAM, 0), -EAFNOSUPPORT);
    CHECK_EQ(gort_pipe(NULL), -EFAULT);
    CHECK_EQ(count_fds(), before);

    /* A regular file: epoll cannot watch it (-EPERM), nothing kept. */
    char path[64];
    int fd = mkstemp(tmp_template(path, sizeof path, "gort-returns-"));
    CHECK_GE(fd, 0);
    CHECK_EQ(unlink(path), 0);
    CHECK_EQ(gort_fd_register(fd), -EPERM);
    CHECK_EQ(gort_fd_set_deadline(fd, 'r', 0), -EBADF); /* not registered */
    CHECK_EQ(close(fd), 0);

    /* gort_nanosleep: *rem zeroed after the whole sleep. */
    struct timespec req = {0, 1000 * 1000}, rem = {7, 7};
    CHECK_EQ(gort_nanosleep(&req, &rem), 0);
    CHECK_EQ(rem.tv_sec, 0);
    CHECK_EQ(rem.tv_nsec, 0);
    struct timespec neg = {-1, 0};
    CHECK_EQ(gort_nanosleep(&neg, &rem), -EINVAL);

    /* A write that fails: its errno. */
    int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
    CHECK_GE(full, 0);
    CHECK_EQ(gort_metrics_write_prometheus(full), -ENOSPC);
    CHECK_EQ(close(full), 0);
}

/* gort_accept, gort_connect, gort_sendto and gort_recvfrom on an
 * unregistered descriptor (-EBADF); the syscall path's own errors
 * (gort_readv, gort_writev, gort_shutdown, gort_poll, gort_socket,
 * gort_pipe); gort_fd_register on a regular file (-EPERM);
 * gort_nanosleep's rem and a negative time; Prometheus text to /dev/full
 * (-ENOSPC). */
TEST(fds)
{
    run_main(fds_main, NULL);
}

/* ---------------------------------------------------------------------------
 * The execution trace: busy while starting, a write that fails.
 * ------------------------------------------------------------------------- */

static char tb_fifo[128];
static int tb_start_result = 1;
static long tb_read;

static void tb_starter(void *arg)
{
    (void)arg;
    /* Opening a FIFO for writing waits for its reader. */
    __atomic_store_n(&tb_start_result, gort_trace_start(tb_fifo),
                     __ATOMIC_RELEASE);
}

static void *tb_reader(void *arg)
{
    (void)arg;
    int fd = open(tb_fifo, O_RDONLY | O_CLOEXEC);
    CHECK_GE(fd, 0);
    char buf[4096];
    ssize_t r;
    long n = 0;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        n += r;
    CHECK_EQ(r, 0);
    close(fd);
    tb_read = n;
    return NULL;
}

static void trace_busy_main(void *arg)
{
    (void)arg;
    char dir[64];
    CHECK(mkdtemp(tmp_template(dir, sizeof dir, "gort-returns-")) != NULL);
    snprintf(tb_fifo, sizeof tb_fifo, "%s/fifo", dir);
    CHECK_EQ(mkfifo(tb_fifo, 0600), 0);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    CHECK_GT(gort_waitgroup_go(&wg, tb_starter, NULL), 1);
    /* -EINVAL until the start has begun, then -EBUSY while it waits in
     * open(2); a second start is -EBUSY too. */
    int64_t until = gort_nanotime() + 30 * SECOND;
    int r;
    while ((r = gort_trace_stop()) == -EINVAL) {
        CHECK_LT(gort_nanotime(), until);
        gort_sleep(MS);
    }
    CHECK_EQ(r, -EBUSY);
    CHECK_EQ(gort_trace_start("/nonexistent/trace.json"), -EBUSY);
    CHECK_EQ(__atomic_load_n(&tb_start_result, __ATOMIC_ACQUIRE), 1);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, tb_reader, NULL), 0);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(__atomic_load_n(&tb_start_result, __ATOMIC_ACQUIRE), 0);
    CHECK_EQ(gort_trace_stop(), 0);
    CHECK_EQ(GORT_BLOCKING(pthread_join(t, NULL)), 0);
    CHECK_GT(tb_read, 0);
    CHECK_EQ(gort_trace_stop(), -EINVAL);
    CHECK_EQ(unlink(tb_fifo), 0);
    CHECK_EQ(rmdir(dir), 0);

    /* Every write fails: the stop says why, and the trace is over. */
    CHECK_EQ(gort_trace_start("/dev/full"), 0);
    gort_sleep(MS);
    CHECK_EQ(gort_trace_stop(), -ENOSPC);
    CHECK_EQ(gort_trace_stop(), -EINVAL);
}

/* While one goroutine's gort_trace_start waits to open a FIFO, another's
 * gort_trace_stop and gort_trace_start are -EBUSY; a trace to /dev/full
 * stops with -ENOSPC. */
TEST(trace_busy)
{
    run_main(trace_busy_main, NULL);
}

/* ---------------------------------------------------------------------------
 * -ENOMEM.  Each case's goroutine is locked to its thread, whose
 * allocations fail while oom_on holds; a wait with a deadline allocates
 * its goroutine's timer only the first time, so those run in a fresh
 * gort_main's main goroutine.
 * ------------------------------------------------------------------------- */

/* Call attempt(arg) with the calling thread's k-th allocation failing,
 * for k = 0, 1, ... until a call meets no failure: every call that met
 * one returns -ENOMEM (and leaves nothing behind: attempt checks and
 * frees, and after(arg), if not NULL, waits once allocations work
 * again), the last returns ok.  Returns the number of allocations the
 * call made.  The runtime allocates on its own too (an M to start when
 * a P is woken): the caller runs with GOMAXPROCS 1, where nothing is
 * woken. */
static int oom_each(int (*attempt)(void *), void (*after)(void *), void *arg,
                    int ok)
{
    for (int k = 0;; k++) {
        CHECK_LT(k, 64);
        oom_on(k);
        int r = attempt(arg);
        int failed = oom_off();
        if (after)
            after(arg);
        if (failed == 0) {
            CHECK_EQ(r, ok);
            return k;
        }
        CHECK_EQ(r, -ENOMEM);
    }
}

static int try_chan_make(void *arg)
{
    gort_chan *ch = NULL;
    int r = gort_chan_make(&ch, 8, 4);
    CHECK_EQ(ch != NULL, r == 0);
    gort_chan_free(ch);
    return r;
}

static int try_defer(void *arg)
{
    return gort_defer(noop, arg);
}

static int try_timer(void *fn)
{
    gort_timer *t = NULL;
    int r = gort_timer_make(&t, SECOND, (void (*)(void *))fn, NULL);
    CHECK_EQ(t != NULL, r == 0);
    gort_timer_free(t);
    return r;
}

static int try_ticker(void *arg)
{
    gort_timer *t = NULL;
    int r = gort_ticker_make(&t, SECOND);
    CHECK_EQ(t != NULL, r == 0);
    gort_timer_free(t);
    return r;
}

static int try_after(void *arg)
{
    gort_chan *ch = gort_after(SECOND);
    gort_chan_free(ch);
    return ch ? 0 : -ENOMEM;
}

static int try_ctx_cancel(void *arg)
{
    gort_ctx *c = NULL;
    int r = gort_ctx_with_cancel(gort_ctx_background(), &c);
    CHECK_EQ(c != NULL, r == 0);
    gort_ctx_cancel_release(c);
    return r;
}

/* A context whose deadline's timer could not be made is made all the
 * same, cancelled (-ECANCELED), for the caller to release. */
static int try_ctx_deadline(void *arg)
{
    gort_ctx *c = NULL;
    int r = gort_ctx_with_deadline(gort_ctx_background(), in_a_second(), &c);
    if (c)
        CHECK_EQ(gort_ctx_err(c), r == 0 ? 0 : -ECANCELED);
    gort_ctx_cancel_release(c);
    return r;
}

static int try_errgroup(void *arg)
{
    gort_errgroup *g = NULL;
    int r = gort_errgroup_make(&g, NULL, NULL);
    CHECK_EQ(g != NULL, r == 0);
    CHECK_EQ(gort_errgroup_free(g), 0);
    return r;
}

static int eg_zero(void *arg)
{
    (void)arg;
    return 0;
}

/* A group's limit and goroutine. */
static int try_errgroup_go(void *g)
{
    int r = gort_errgroup_set_limit(g, 2);
    if (r == 0) {
        int64_t id = gort_errgroup_go(g, eg_zero, NULL);
        r = id < 0 ? (int)id : 0;
    }
    return r;
}

/* Waited for: its goroutine, if one was started, and no other. */
static void errgroup_waited(void *g)
{
    CHECK_EQ(gort_errgroup_wait(g), 0);
}

static gort_waitgroup oom_wg;

static int try_waitgroup_go(void *arg)
{
    int64_t id = gort_waitgroup_go(&oom_wg, noop, NULL);
    return id < 0 ? (int)id : 0;
}

/* The counter as the goroutine, if one was started, leaves it: 0. */
static void waitgroup_waited(void *arg)
{
    gort_waitgroup_wait(&oom_wg);
    CHECK_EQ(oom_wg.state, 0);
}

static int try_semaphore(void *arg)
{
    gort_semaphore *s = NULL;
    int r = gort_semaphore_make(&s, 1);
    CHECK_EQ(s != NULL, r == 0);
    CHECK_EQ(gort_semaphore_free(s), 0);
    return r;
}

struct sem_wait {
    gort_semaphore *s;
    gort_ctx *ctx;
};

/* A waiter on a semaphore whose unit is taken: nothing taken or queued
 * after a failure; with none, it waits for the context, whose deadline
 * has passed. */
static int try_semaphore_wait(void *arg)
{
    struct sem_wait *w = arg;
    return gort_semaphore_acquire(w->s, 1, w->ctx);
}

static int try_prometheus(void *arg)
{
    char *text = (char *)&text;
    size_t len = 99;
    int r = gort_metrics_prometheus(&text, &len);
    CHECK_EQ(text != NULL, r == 0);
    CHECK_EQ(len != 0, r == 0);
    free(text);
    return r;
}

static void oom_objects_main(void *arg)
{
    (void)arg;
    oom_prepare();
    CHECK_EQ(oom_each(try_chan_make, NULL, NULL, 0), 1);
    CHECK_EQ(oom_each(try_defer, NULL, NULL, 0), 1);
    /* The timer, a channel timer's channel, and room on the P's heap of
     * timers (for the first timer). */
    CHECK_EQ(oom_each(try_timer, NULL, NULL, 0), 3);
    CHECK_EQ(oom_each(try_timer, NULL, (void *)noop, 0), 1);
    CHECK_EQ(oom_each(try_ticker, NULL, NULL, 0), 2);
    CHECK_EQ(oom_each(try_after, NULL, NULL, 0), 2);
    /* The context and its channel, then a deadline's timer. */
    CHECK_EQ(oom_each(try_ctx_cancel, NULL, NULL, 0), 2);
    CHECK_EQ(oom_each(try_ctx_deadline, NULL, NULL, 0), 3);
    gort_ctx *c = NULL;
    oom_on(2);
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(), in_a_second(), &c),
             -ENOMEM);
    CHECK_EQ(oom_off(), 1);
    CHECK(c != NULL);
    CHECK_EQ(gort_ctx_err(c), -ECANCELED);
    gort_ctx_release(c);
    /* The group and its context; a limit's channel and a goroutine's
     * record. */
    CHECK_EQ(oom_each(try_errgroup, NULL, NULL, 0), 3);
    gort_errgroup *g;
    CHECK_EQ(gort_errgroup_make(&g, NULL, NULL), 0);
    CHECK_GE(oom_each(try_errgroup_go, errgroup_waited, g, 0), 2);
    CHECK_EQ(gort_errgroup_free(g), 0);
    CHECK_GE(oom_each(try_waitgroup_go, waitgroup_waited, NULL, 0), 1);
    /* The semaphore; a waiter's channel. */
    CHECK_EQ(oom_each(try_semaphore, NULL, NULL, 0), 1);
    struct sem_wait w;
    gort_semaphore *s;
    CHECK_EQ(gort_semaphore_make(&s, 1), 0);
    CHECK(gort_semaphore_try_acquire(s, 1));
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(), gort_deadline_in(-1),
                                    &w.ctx),
             0);
    w.s = s;
    CHECK_EQ(oom_each(try_semaphore_wait, NULL, &w, -ETIMEDOUT), 1);
    gort_ctx_cancel_release(w.ctx);
    gort_semaphore_release(s, 1);
    CHECK(gort_semaphore_try_acquire(s, 1)); /* nobody queued */
    gort_semaphore_release(s, 1);
    CHECK_EQ(gort_semaphore_free(s), 0);
    /* Prometheus text: its buffer as it grows. */
    CHECK_GE(oom_each(try_prometheus, NULL, NULL, 0), 1);
    /* Written out: the same text, made first (the write itself, a
     * system call, is left out of the failures). */
    oom_on(0);
    CHECK_EQ(gort_metrics_write_prometheus(1), -ENOMEM);
    CHECK_EQ(oom_off(), 1);
    gort_unlock_os_thread();
}

/* -ENOMEM from every call that allocates, each of its allocations
 * failed in turn, and the call working once none fails: channels,
 * deferred handlers, timers, tickers and gort_after (NULL), contexts
 * (one whose deadline's timer failed: made, cancelled), error groups,
 * their limits and goroutines, gort_waitgroup_go, semaphores and their
 * waiters, Prometheus text; nothing left half made. */
TEST(oom_objects)
{
    run_main(oom_objects_main, NULL);
}

/* 8 receive cases on empty channels and a default: a select of more than
 * 8 cases allocates its tables. */
static gort_case *nine_cases(void)
{
    static gort_case cs[9];
    for (int i = 0; i < 8; i++)
        cs[i] = (gort_case){make_chan(0, 0), GORT_CASE_RECV, NULL, false};
    cs[8] = (gort_case){NULL, GORT_CASE_DEFAULT, NULL, false};
    return cs;
}

static void free_nine(gort_case *cs)
{
    for (int i = 0; i < 8; i++)
        free_chan(cs[i].ch);
}

static void oom_select_main(void *arg)
{
    (void)arg;
    oom_prepare();
    gort_case *cs = nine_cases();
    CHECK_EQ(gort_select(cs, 9), 8); /* the default */
    oom_on(0);
    CHECK_EQ(gort_select(cs, 9), -ENOMEM);
    CHECK_EQ(oom_off(), 1);
    gort_ctx *c;
    CHECK_EQ(gort_ctx_with_cancel(gort_ctx_background(), &c), 0);
    oom_on(0);
    CHECK_EQ(gort_select_ctx(cs, 9, c), -ENOMEM);
    CHECK_EQ(oom_off(), 1);
    gort_ctx_cancel_release(c);
    /* Without the default: with a passed deadline, the tables; with
     * one to wait for, first the goroutine's timer and its channel (its
     * first wait with a deadline). */
    cs[8] = (gort_case){make_chan(0, 0), GORT_CASE_RECV, NULL, false};
    oom_on(0);
    CHECK_EQ(gort_select_until(cs, 9, gort_deadline_in(-1)), -ENOMEM);
    CHECK_EQ(oom_off(), 1);
    CHECK_EQ(gort_select_until(cs, 9, gort_deadline_in(-1)), -ETIMEDOUT);
    for (int k = 0; k < 2; k++) {
        oom_on(k);
        CHECK_EQ(gort_select_until(cs, 2, in_a_second()), -ENOMEM);
        CHECK_EQ(oom_off(), 1);
    }
    free_chan(cs[8].ch);
    free_nine(cs);
    gort_unlock_os_thread();
}

/* gort_select, gort_select_ctx and gort_select_until of 9 cases:
 * -ENOMEM for the tables; gort_select_until's for the goroutine's timer
 * and its channel too. */
TEST(oom_select)
{
    run_main(oom_select_main, NULL);
}

/* The first wait with a deadline of a goroutine makes its timer: in a
 * fresh gort_main, main's first such wait. */
enum { W_SEND, W_RECV, W_WAITGROUP, W_COND };

static void oom_first_wait_main(void *arg)
{
    int which = (int)(intptr_t)arg;
    oom_prepare();
    gort_chan *ch = make_chan(sizeof(int), 0);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_mutex mu = GORT_MUTEX_INIT;
    gort_cond cond = GORT_COND_INIT(&mu);
    int v = 5, failed = -1;
    switch (which) {
    case W_SEND:
        oom_on(0);
        CHECK_EQ(gort_chan_send_until(ch, &v, in_a_second()), -ENOMEM);
        failed = oom_off();
        break;
    case W_RECV:
        oom_on(0);
        CHECK_EQ(gort_chan_recv_until(ch, &v, in_a_second()), -ENOMEM);
        failed = oom_off();
        CHECK_EQ(v, 5);
        break;
    case W_WAITGROUP:
        gort_waitgroup_add(&wg, 1);
        oom_on(0);
        CHECK_EQ(gort_waitgroup_wait_until(&wg, in_a_second()), -ENOMEM);
        failed = oom_off();
        /* Not counted as a waiter: the counter's Done wakes nobody. */
        gort_waitgroup_done(&wg);
        CHECK_EQ(wg.state, 0);
        break;
    case W_COND:
        /* The record a timed-out waiter may leave, then the timer. */
        gort_mutex_lock(&mu);
        for (int k = 0; k < 2; k++) {
            oom_on(k);
            CHECK_EQ(gort_cond_wait_until(&cond, in_a_second()), -ENOMEM);
            CHECK_EQ(oom_off(), 1);
            CHECK(!gort_mutex_trylock(&mu)); /* still held */
        }
        CHECK(cond.head == NULL); /* nobody waits, no ticket taken */
        CHECK_EQ(cond.wait, 0);
        failed = 1;
        gort_mutex_unlock(&mu);
        break;
    }
    CHECK_EQ(failed, 1);
    free_chan(ch);
    gort_unlock_os_thread();
}

/* -ENOMEM when a goroutine's deadline timer cannot be made, nothing
 * waited: gort_chan_send_until, gort_chan_recv_until,
 * gort_waitgroup_wait_until, gort_cond_wait_until (and its record of a
 * timed-out waiter; the mutex still held). */
TEST(oom_first_wait)
{
    for (int w = W_SEND; w <= W_COND; w++)
        run_main(oom_first_wait_main, (void *)(intptr_t)w);
}

static void oom_fd_main(void *arg)
{
    (void)arg;
    oom_prepare();
    int fds[2];
    CHECK_EQ(pipe2(fds, O_CLOEXEC), 0);
    /* The process's first registration makes the poller's tables. */
    oom_on(0);
    CHECK_EQ(gort_fd_register(fds[0]), -ENOMEM);
    CHECK_GE(oom_off(), 1);
    CHECK_EQ(gort_fd_register(fds[0]), 0);
    CHECK_EQ(gort_close(fds[0]), 0);
    CHECK_EQ(close(fds[1]), 0);
    /* A trace's buffers; no trace runs after. */
    char path[64];
    snprintf(path, sizeof path, "/tmp/gort-returns-%d.json", (int)getpid());
    oom_on(0);
    CHECK_EQ(gort_trace_start(path), -ENOMEM);
    CHECK_GE(oom_off(), 1);
    CHECK_EQ(gort_trace_stop(), -EINVAL);
    CHECK_EQ(access(path, F_OK), -1); /* the file it made is gone */
    CHECK_EQ(errno, ENOENT);
    gort_unlock_os_thread();
}

/* gort_fd_register when the poller's table cannot grow, and
 * gort_trace_start when its buffers cannot be had: -ENOMEM, and both work
 * afterwards. */
TEST(oom_fd_trace)
{
    run_main(oom_fd_main, NULL);
}

/* gort_main when its first M cannot be made: -ENOMEM, and it runs
 * afterwards. */
TEST(oom_main)
{
    oom_on(0);
    CHECK_EQ(gort_main(noop, NULL), -ENOMEM);
    CHECK_GE(oom_off(), 1);
    run_main(noop, NULL);
}
