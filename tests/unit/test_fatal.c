/*
 * test_fatal.c - fatal errors, as death tests: each case runs a program
 * in a child process (test_run_child) and checks the exact message on its
 * stderr and that it died by SIGABRT.
 *
 *   deadlock                 main waits on a WaitGroup nobody will Done:
 *                            "all goroutines are asleep - deadlock!" and a
 *                            dump naming goroutine 1 [sync.WaitGroup.Wait]
 *   negative_waitgroup       "sync: negative WaitGroup counter"
 *   stack_overflow           unbounded recursion in a goroutine, default
 *                            guard: "stack overflow in goroutine N"
 *   stack_overflow_canary    GORTDEBUG=stackguard=canary: a small overflow
 *                            into the guard region is caught at the next
 *                            switch
 *   stack_overflow_mprotect  GORTDEBUG=stackguard=mprotect: the fault in
 *                            the guard is reported
 *   thread_limit             gort_set_max_threads(3) with four busy Ps:
 *                            "thread exhaustion"
 *
 * Child programs print progress on stdout (flushed at once: abort() does
 * not flush stdio buffers), so that the parent can tell how far they got.
 */
#include "runtime.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* Run `child` with env; print its output if a check is about to fail. */
static void run_death(const char *child, const char *const *env,
                      struct test_child *r)
{
    test_run_child(child, env, 60, r);
    if (r->signal != SIGABRT)
        fprintf(stderr, "child %s: exit %d signal %d\n--- stdout ---\n%s\n"
                        "--- stderr ---\n%s\n",
                child, r->exit_code, r->signal, r->out, r->err);
}

/* ---------------------------------------------------------------------------
 * deadlock
 * ------------------------------------------------------------------------- */

static gort_waitgroup dead_wg;

static void deadlock_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&dead_wg, 1);
    say("waiting\n");
    gort_waitgroup_wait(&dead_wg);
    say("woke\n"); /* never */
}

TEST(deadlock_child)
{
    gort_main(deadlock_main, NULL);
    say("returned\n");
}

TEST(deadlock)
{
    struct test_child r;
    run_death("deadlock_child", NULL, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.out, "waiting\n");
    CHECK(strstr(r.out, "woke") == NULL && strstr(r.out, "returned") == NULL);
    CHECK_STR_CONTAINS(r.err, "gort: fatal error: all goroutines are asleep "
                              "- deadlock!\n");
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [sync.WaitGroup.Wait]:\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * negative_waitgroup
 * ------------------------------------------------------------------------- */

static void negative_main(void *arg)
{
    (void)arg;
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 2);
    gort_waitgroup_done(&wg);
    gort_waitgroup_done(&wg);
    say("balanced\n");
    gort_waitgroup_done(&wg);
    say("negative\n"); /* never */
}

TEST(negative_waitgroup_child)
{
    gort_main(negative_main, NULL);
}

TEST(negative_waitgroup)
{
    struct test_child r;
    run_death("negative_waitgroup_child", NULL, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.out, "balanced\n");
    CHECK(strstr(r.out, "negative") == NULL);
    CHECK_STR_CONTAINS(r.err, "gort: fatal error: sync: negative WaitGroup "
                              "counter\n");
    /* The dump names the goroutine that made the mistake. */
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * Stack overflows
 * ------------------------------------------------------------------------- */

/* One frame of about 1 KiB that the compiler can neither drop nor turn
 * into a loop: the buffer is volatile and used after the call. */
static GORT_NOINLINE int recurse(int depth, int limit)
{
    volatile char buf[1024];
    buf[0] = (char)depth;
    buf[sizeof buf - 1] = (char)depth;
    if (depth >= limit)
        return buf[0];
    return recurse(depth + 1, limit) + buf[sizeof buf - 1];
}

static volatile int recurse_limit = 1 << 24; /* 16 GiB of frames: never */

static gort_waitgroup overflow_wg;

static void overflow_g(void *arg)
{
    (void)arg;
    say("goid %lld\n", (long long)gort_goid());
    recurse(0, recurse_limit);
    say("survived\n"); /* never */
    gort_waitgroup_done(&overflow_wg);
}

static void overflow_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&overflow_wg, 1);
    CHECK_GT(gort_go(overflow_g, NULL), 1);
    gort_waitgroup_wait(&overflow_wg);
}

TEST(stack_overflow_child)
{
    gort_main(overflow_main, NULL);
}

/* The goid the child printed on its "goid N" line. */
static long long child_goid(const char *out)
{
    const char *s = strstr(out, "goid ");
    CHECK(s != NULL);
    long long id = atoll(s + 5);
    CHECK_GT(id, 1);
    return id;
}

static void check_overflow(const char *const *env, const char *detail)
{
    struct test_child r;
    run_death("stack_overflow_child", env, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK(strstr(r.out, "survived") == NULL);
    char want[128];
    snprintf(want, sizeof want,
             "gort: fatal error: stack overflow in goroutine %lld (",
             child_goid(r.out));
    CHECK_STR_CONTAINS(r.err, want);
    CHECK_STR_CONTAINS(r.err, detail);
    test_child_free(&r);
}

/*
 * AddressSanitizer: gort installs its SIGSEGV handler after ASan's, so the
 * guard fault still reaches gort's report (and ASan's own handler would
 * only be chained for faults outside a guard).  Should a future ASan keep
 * the signal for itself, these cases fail rather than pass silently.
 */
TEST(stack_overflow)
{
    static const char *const env[] = {"GORTDEBUG=", NULL};
    check_overflow(env, "fault at ");
}

TEST(stack_overflow_mprotect)
{
    static const char *const env[] = {"GORTDEBUG=stackguard=mprotect", NULL};
    check_overflow(env, "fault at ");
}

/*
 * Canary: the guard region is ordinary memory, so the overflow itself
 * does not fault.  Recurse until a frame lies a little (4 KiB, well inside
 * the 16 KiB guard region) below the usable stack, filling each frame, then
 * yield: the canary check at that switch must report the overflow.  The
 * final overshoot is one alloca'd block that spans the low end, so the
 * canary word is overwritten whatever the frame layout.
 */
static GORT_NOINLINE void overshoot(uintptr_t lo)
{
    volatile char probe;
    uintptr_t here = (uintptr_t)&probe;
    CHECK_GT(here, lo);
    size_t n = here - lo + 4096; /* to 4 KiB below lo */
    volatile char *p = __builtin_alloca(n);
    CHECK_LE((uintptr_t)p, lo - 2048);
    CHECK_GT((uintptr_t)p, lo - 16 * 1024);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)0x5a;
}

static GORT_NOINLINE int recurse_to(uintptr_t stop, uintptr_t lo)
{
    volatile char buf[1024];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)i;
    if ((uintptr_t)buf > stop)
        return recurse_to(stop, lo) + buf[7];
    overshoot(lo);
    return buf[7];
}

static void canary_g(void *arg)
{
    (void)arg;
    struct g *gp = gort__getg();
    CHECK_EQ(gp->stack.guard, STACK_GUARD_CANARY);
    uintptr_t lo = gp->stack.lo;
    uint64_t canary = *(volatile uint64_t *)lo;
    say("goid %lld\n", (long long)gort_goid());
    /* Recurse to within 8 KiB of the low end, then overshoot by 4 KiB. */
    recurse_to(lo + 8 * 1024, lo);
    CHECK(*(volatile uint64_t *)lo != canary);
    say("overflowed\n");
    gort_gosched();
    say("survived\n"); /* never */
    gort_waitgroup_done(&overflow_wg);
}

static void canary_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&overflow_wg, 1);
    CHECK_GT(gort_go(canary_g, NULL), 1);
    gort_waitgroup_wait(&overflow_wg);
}

TEST(stack_overflow_canary_child)
{
    gort_main(canary_main, NULL);
}

TEST(stack_overflow_canary)
{
    static const char *const env[] = {"GORTDEBUG=stackguard=canary", NULL};
    struct test_child r;
    run_death("stack_overflow_canary_child", env, &r);
    CHECK_EQ(r.signal, SIGABRT);
    /* Detected at the switch, not by a fault during the overflow. */
    CHECK_STR_CONTAINS(r.out, "overflowed\n");
    CHECK(strstr(r.out, "survived") == NULL);
    char want[128];
    snprintf(want, sizeof want,
             "gort: fatal error: stack overflow in goroutine %lld (canary at ",
             child_goid(r.out));
    CHECK_STR_CONTAINS(r.err, want);
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * thread_limit
 *
 * Threads counted: M0 and sysmon make 2; with a limit of 3 the first new M
 * fits and the second breaches.  Eight goroutines burning 200 ms each on
 * four Ps need three more Ms, so the breach is certain.
 * ------------------------------------------------------------------------- */

static gort_waitgroup limit_wg;

static void limit_burn(void *arg)
{
    (void)arg;
    int64_t end = gort_nanotime() + 200 * 1000 * 1000;
    while (gort_nanotime() < end)
        ;
    gort_waitgroup_done(&limit_wg);
}

static void limit_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_gomaxprocs(0), 4);
    gort_waitgroup_add(&limit_wg, 8);
    for (int i = 0; i < 8; i++)
        gort_go(limit_burn, NULL);
    gort_waitgroup_wait(&limit_wg);
    say("all done\n"); /* never: the fourth thread is fatal */
}

TEST(thread_limit_child)
{
    CHECK_EQ(gort_set_max_threads(0), -EINVAL);
    CHECK_EQ(gort_set_max_threads(3), GORT_DEFAULT_MAX_THREADS);
    gort_main(limit_main, NULL);
    say("returned\n");
}

TEST(thread_limit)
{
    static const char *const env[] = {"GORTMAXPROCS=4", NULL};
    struct test_child r;
    run_death("thread_limit_child", env, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK(strstr(r.out, "all done") == NULL);
    CHECK_STR_CONTAINS(r.err, "gort: program exceeds 3-thread limit\n");
    CHECK_STR_CONTAINS(r.err, "gort: fatal error: thread exhaustion\n");
    test_child_free(&r);
}
