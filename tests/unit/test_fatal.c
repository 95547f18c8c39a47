/* SPDX-License-Identifier: MIT */
/*
 * test_fatal.c - fatal errors, as death tests: each case runs a program
 * in a child process (test_run_child) and checks the exact message on its
 * stderr and that it died by SIGABRT.
 *
 * Child programs print progress on stdout (flushed at once: abort() does
 * not flush stdio buffers), so that the parent can tell how far they got.
 */
#include "internal.h"
#include "test_util.h"

#include <errno.h>

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

TEST_HIDDEN(deadlock_child)
{
    gort_main(deadlock_main, NULL);
    say("returned\n");
}

/* main waits on a WaitGroup nobody will Done: "all goroutines are asleep -
 * deadlock!" and a dump naming goroutine 1 [sync.WaitGroup.Wait]. */
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

TEST_HIDDEN(negative_waitgroup_child)
{
    gort_main(negative_main, NULL);
}

/* "sync: negative WaitGroup counter". */
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
 * into a loop: the buffer is volatile and used after the call, and its
 * address goes to an empty asm statement, so that it is laid out whole (a
 * volatile local whose address stays in the function may be made smaller:
 * clang keeps only the bytes it writes). */
static GORT_NOINLINE int recurse(int depth, int limit)
{
    volatile char buf[1024];
    __asm__ __volatile__("" ::"r"(buf) : "memory");
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

TEST_HIDDEN(stack_overflow_child)
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

static void check_overflow_report(struct test_child *rp, const char *detail)
{
    struct test_child r = *rp;
    CHECK_EQ(r.signal, SIGABRT);
    CHECK(strstr(r.out, "survived") == NULL);
    char want[128];
    snprintf(want, sizeof want,
             "gort: fatal error: stack overflow in goroutine %lld (",
             child_goid(r.out));
    CHECK_STR_CONTAINS(r.err, want);
    CHECK_STR_CONTAINS(r.err, detail);
    if (strcmp(detail, "fault at ") == 0) {
        /* The backtrace starts where the goroutine faulted: the recursion,
         * down to its start (unless that is past the 100-frame limit, as
         * with the sanitizers' larger frames and stacks). */
        snprintf(want, sizeof want, "\n\ngoroutine %lld [running]:\n",
                 child_goid(r.out));
        CHECK_STR_CONTAINS(r.err, want);
        /* Under a sanitizer the faulting write may be its check's
         * (__tsan_write1, __asan_store8): one such frame comes first. */
        const char *first = strstr(r.err, want) + strlen(want);
        if (strncmp(first, "__tsan_", 7) == 0 ||
            strncmp(first, "__asan_", 7) == 0) {
            for (int line = 0; line < 2 && strchr(first, '\n'); line++)
                first = strchr(first, '\n') + 1;
        }
        if (strncmp(first, "recurse", 7) != 0)
            fprintf(stderr, "--- output ---\n%s\n", r.err);
        CHECK_EQ(strncmp(first, "recurse", 7), 0);
        CHECK(strstr(r.err, "\noverflow_g(...)\n") ||
              strstr(r.err, "\n...additional frames elided...\n"));
    }
    test_child_free(rp);
}

static void check_overflow(const char *const *env, const char *detail)
{
    struct test_child r;
    run_death("stack_overflow_child", env, &r);
    check_overflow_report(&r, detail);
}

/*
 * AddressSanitizer: gort installs its SIGSEGV handler after ASan's, so the
 * guard fault still reaches gort's report (and ASan's own handler would
 * only be chained for faults outside a guard).  Should a future ASan keep
 * the signal for itself, these cases fail rather than pass silently.
 */

/* Unbounded recursion in a goroutine, default guard: "stack overflow in
 * goroutine N" and a backtrace from the faulting frame. */
TEST(stack_overflow)
{
    static const char *const env[] = {"GORTDEBUG=", NULL};
    check_overflow(env, "fault at ");
}

/* GORTDEBUG=stackguard=mprotect: the fault in the guard is reported. */
TEST(stack_overflow_mprotect)
{
    static const char *const env[] = {"GORTDEBUG=stackguard=mprotect", NULL};
    check_overflow(env, "fault at ");
}

/* GORTDEBUG=stackguard=madvise: the fault in the guard is reported. */
TEST(stack_overflow_madvise)
{
    /* Where the kernel has no MADV_GUARD_INSTALL, gort falls back to
     * mprotect guards; the report is the same. */
    static const char *const env[] = {"GORTDEBUG=stackguard=madvise", NULL};
    check_overflow(env, "fault at ");
}

/* What reports the unbounded recursion on a canary-guarded stack: most
 * often the fault in the arena's lowest guard, but sysmon checks the
 * canary of a goroutine that runs long and may find it overwritten first.
 * Either report is right. */
static const char *unbounded_detail(const struct test_child *r)
{
    return strstr(r->err, "found while it runs") ? "found while it runs"
                                                  : "fault at ";
}

/* GORTDEBUG=stackguard=canary and unbounded recursion: nothing faults at the
 * stack's end, so the recursion runs down through the stacks below it in its
 * arena to the arena's own guard; the fault there is reported as this
 * goroutine's overflow (its stack pointer is far below its stack). */
TEST(stack_overflow_canary_unbounded)
{
    static const char *const env[] = {"GORTDEBUG=stackguard=canary", NULL};
#if defined(GORT_ASAN)
    /* AddressSanitizer may see the recursion first: a frame that lands on
     * a redzone of a live goroutine's stack below is a stack-buffer-overflow
     * to it, and it exits (status 1) before the arena's guard is reached.
     * Either report is right; silence or survival is not. */
    struct test_child r;
    run_death("stack_overflow_child", env, &r);
    CHECK(strstr(r.out, "survived") == NULL);
    if (r.signal == 0) {
        CHECK_NE(r.exit_code, 0);
        CHECK_STR_CONTAINS(r.err, "AddressSanitizer: stack-buffer-overflow");
        CHECK_STR_CONTAINS(r.err, "recurse");
        test_child_free(&r);
        return;
    }
    check_overflow_report(&r, unbounded_detail(&r));
#else
    struct test_child r;
    run_death("stack_overflow_child", env, &r);
    check_overflow_report(&r, unbounded_detail(&r));
#endif
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

TEST_HIDDEN(stack_overflow_canary_child)
{
    gort_main(canary_main, NULL);
}

/* A bounded overflow on a canary-guarded stack by a goroutine that then
 * spins without calling gort (so without switching, unless preempted):
 * sysmon finds the overwritten canary of the running goroutine within a
 * round or two, or the preemption's switch does. */
static void canary_spin_g(void *arg)
{
    (void)arg;
    struct g *gp = gort__getg();
    CHECK_EQ(gp->stack.guard, STACK_GUARD_CANARY);
    uintptr_t lo = gp->stack.lo;
    say("goid %lld\n", (long long)gort_goid());
    recurse_to(lo + 8 * 1024, lo);
    say("overflowed\n");
    int64_t end = gort_nanotime() + 5000LL * 1000 * 1000;
    while (gort_nanotime() < end)
        ;
    say("survived\n"); /* never */
    gort_waitgroup_done(&overflow_wg);
}

static void canary_spin_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&overflow_wg, 1);
    CHECK_GT(gort_go(canary_spin_g, NULL), 1);
    gort_waitgroup_wait(&overflow_wg);
}

TEST_HIDDEN(stack_overflow_canary_running_child)
{
    gort_main(canary_spin_main, NULL);
}

/* GORTDEBUG=stackguard=canary, a small overflow and then a loop without gort
 * calls: reported while the goroutine runs (sysmon checks the canaries of
 * running goroutines). */
TEST(stack_overflow_canary_running)
{
    static const char *const env[] = {"GORTDEBUG=stackguard=canary",
                                      "GORTMAXPROCS=2", NULL};
    struct test_child r;
    run_death("stack_overflow_canary_running_child", env, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK(strstr(r.out, "survived") == NULL);
    char want[128];
    snprintf(want, sizeof want,
             "gort: fatal error: stack overflow in goroutine %lld (canary at ",
             child_goid(r.out));
    CHECK_STR_CONTAINS(r.err, want);
    test_child_free(&r);
}

/* GORTDEBUG=stackguard=canary: a small overflow into the guard region is
 * caught at the next switch. */
TEST(stack_overflow_canary)
{
    static const char *const env[] = {"GORTDEBUG=stackguard=canary", NULL};
    struct test_child r;
    run_death("stack_overflow_canary_child", env, &r);
    /* Detected at the switch, or (on a loaded machine, sysmon's round can
     * fall between the overflow and the print) by sysmon's look at the
     * running goroutine: never by a fault during the overflow. */
    CHECK_EQ(r.signal, SIGABRT);
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

TEST_HIDDEN(thread_limit_child)
{
    CHECK_EQ(gort_set_max_threads(0), -EINVAL);
    CHECK_EQ(gort_set_max_threads(3), GORT_DEFAULT_MAX_THREADS);
    gort_main(limit_main, NULL);
    say("returned\n");
}

/* gort_set_max_threads(3) with four busy Ps: "thread exhaustion". */
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

/* ---------------------------------------------------------------------------
 * Channels, select and timers
 * ------------------------------------------------------------------------- */

static gort_chan *chan_or_die(size_t elemsize, size_t cap)
{
    gort_chan *ch = NULL;
    CHECK_EQ(gort_chan_make(&ch, elemsize, cap), 0);
    return ch;
}

/* True when the goroutine dump has "goroutine <goid> [<reason>]". */
static bool dump_has(int64_t goid, const char *reason)
{
    int fd = memfd_create("gort-dump", MFD_CLOEXEC);
    CHECK_GE(fd, 0);
    gort_dump_goroutines(fd);
    off_t n = lseek(fd, 0, SEEK_END);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK_EQ(pread(fd, buf, (size_t)n, 0), n);
    buf[n] = 0;
    close(fd);
    char want[128];
    snprintf(want, sizeof want, "goroutine %lld [%s]", (long long)goid,
             reason);
    bool has = strstr(buf, want) != NULL;
    free(buf);
    return has;
}

/* Run child, expect SIGABRT with "gort: fatal error: <msg>\n" on stderr
 * and "stage\n" but not "after\n" on stdout. */
static void expect_fatal(const char *child, const char *msg,
                         struct test_child *r)
{
    run_death(child, NULL, r);
    CHECK_EQ(r->signal, SIGABRT);
    CHECK_STR_CONTAINS(r->out, "stage\n");
    CHECK(strstr(r->out, "after") == NULL);
    char want[256];
    snprintf(want, sizeof want, "gort: fatal error: %s\n", msg);
    CHECK_STR_CONTAINS(r->err, want);
}

/* ---- send_closed, trysend_closed, select_send_closed ---- */

static void send_closed_main(void *arg)
{
    int how = (int)(intptr_t)arg;
    gort_chan *ch = chan_or_die(sizeof(int64_t), 1);
    gort_chan_close(ch);
    int64_t v = 1;
    say("stage\n");
    if (how == 0) {
        gort_chan_send(ch, &v);
    } else if (how == 1) {
        gort_chan_trysend(ch, &v);
    } else {
        gort_case cs[2] = {{ch, GORT_CASE_SEND, &v, false},
                           {NULL, GORT_CASE_DEFAULT, NULL, false}};
        gort_select(cs, 2);
    }
    say("after\n"); /* never */
}

TEST_HIDDEN(send_closed_child)
{
    gort_main(send_closed_main, (void *)0);
}

TEST_HIDDEN(trysend_closed_child)
{
    gort_main(send_closed_main, (void *)1);
}

TEST_HIDDEN(select_send_closed_child)
{
    gort_main(send_closed_main, (void *)2);
}

/* "send on closed channel", the sender named [running] in the dump. */
TEST(send_closed)
{
    struct test_child r;
    expect_fatal("send_closed_child", "send on closed channel", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

/* "send on closed channel" through gort_chan_trysend (a select with a default
 * still panics in Go). */
TEST(trysend_closed)
{
    struct test_child r;
    expect_fatal("trysend_closed_child", "send on closed channel", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

/* "send on closed channel" through a select send case. */
TEST(select_send_closed)
{
    struct test_child r;
    expect_fatal("select_send_closed_child", "send on closed channel", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

/* ---- close_closed, close_nil ---- */

static void close_closed_main(void *arg)
{
    (void)arg;
    gort_chan *ch = chan_or_die(0, 0);
    gort_chan_close(ch);
    say("stage\n");
    gort_chan_close(ch);
    say("after\n"); /* never */
}

TEST_HIDDEN(close_closed_child)
{
    gort_main(close_closed_main, NULL);
}

/* "close of closed channel". */
TEST(close_closed)
{
    struct test_child r;
    expect_fatal("close_closed_child", "close of closed channel", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

static void close_nil_main(void *arg)
{
    (void)arg;
    say("stage\n");
    gort_chan_close(NULL);
    say("after\n"); /* never */
}

TEST_HIDDEN(close_nil_child)
{
    gort_main(close_nil_main, NULL);
}

/* "close of nil channel". */
TEST(close_nil)
{
    struct test_child r;
    expect_fatal("close_nil_child", "close of nil channel", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

/* ---- sender_woken_by_close ---- */

static gort_chan *woken_ch;

static void woken_sender(void *arg)
{
    (void)arg;
    int64_t v = 3;
    say("sender %lld\n", (long long)gort_goid());
    gort_chan_send(woken_ch, &v);
    say("after send\n"); /* never */
}

static void woken_main(void *arg)
{
    (void)arg;
    woken_ch = chan_or_die(sizeof(int64_t), 0);
    int64_t id = gort_go(woken_sender, NULL);
    CHECK_GT(id, 1);
    /* Wait until it is parked in the send, then close under it. */
    int64_t deadline = gort_nanotime() + 30LL * 1000 * 1000 * 1000;
    while (!dump_has(id, "chan send")) {
        CHECK_LT(gort_nanotime(), deadline);
        gort_gosched();
    }
    say("stage\n");
    gort_chan_close(woken_ch);
    /* The sender dies as soon as it runs; keep main alive meanwhile. */
    gort_sleep(5LL * 1000 * 1000 * 1000);
    say("after close\n"); /* never */
}

TEST_HIDDEN(sender_woken_by_close_child)
{
    gort_main(woken_main, NULL);
}

/* A sender parked on a channel that is then closed dies with "send on closed
 * channel". */
TEST(sender_woken_by_close)
{
    struct test_child r;
    expect_fatal("sender_woken_by_close_child", "send on closed channel", &r);
    const char *s = strstr(r.out, "sender ");
    CHECK(s != NULL);
    long long id = atoll(s + 7);
    CHECK_GT(id, 1);
    char want[64];
    snprintf(want, sizeof want, "\ngoroutine %lld [running]:\n", id);
    CHECK_STR_CONTAINS(r.err, want);
    test_child_free(&r);
}

/* ---- deadlock_chan_recv, deadlock_nil_chan, deadlock_select_no_cases ---- */

static gort_chan *dl_ch, *dl_other;

static void dl_sender(void *arg)
{
    (void)arg;
    int64_t v = 1;
    gort_chan_send(dl_other, &v);
}

static void dl_chan_main(void *arg)
{
    (void)arg;
    dl_ch = chan_or_die(sizeof(int64_t), 0);
    dl_other = chan_or_die(sizeof(int64_t), 0);
    CHECK_GT(gort_go(dl_sender, NULL), 1);
    int64_t v;
    say("stage\n");
    gort_chan_recv(dl_ch, &v);
    say("after\n"); /* never */
}

TEST_HIDDEN(deadlock_chan_recv_child)
{
    gort_main(dl_chan_main, NULL);
}

/* main receives on a channel nobody sends on: deadlock, goroutine 1 [chan
 * receive] (and a parked sender [chan send]). */
TEST(deadlock_chan_recv)
{
    struct test_child r;
    expect_fatal("deadlock_chan_recv_child",
                 "all goroutines are asleep - deadlock!", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [chan receive]:\n");
    CHECK_STR_CONTAINS(r.err, " [chan send]:\n");
    test_child_free(&r);
}

static void dl_nil_main(void *arg)
{
    (void)arg;
    say("stage\n");
    gort_chan_recv(NULL, NULL);
    say("after\n"); /* never */
}

TEST_HIDDEN(deadlock_nil_chan_child)
{
    gort_main(dl_nil_main, NULL);
}

/* main receives from a NULL channel: deadlock, goroutine 1 [chan receive (nil
 * chan)]. */
TEST(deadlock_nil_chan)
{
    struct test_child r;
    expect_fatal("deadlock_nil_chan_child",
                 "all goroutines are asleep - deadlock!", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [chan receive (nil chan)]:\n");
    test_child_free(&r);
}

static void dl_select_main(void *arg)
{
    (void)arg;
    say("stage\n");
    gort_select(NULL, 0);
    say("after\n"); /* never */
}

TEST_HIDDEN(deadlock_select_no_cases_child)
{
    gort_main(dl_select_main, NULL);
}

/* gort_select(NULL, 0) in main: deadlock, goroutine 1 [select (no cases)]. */
TEST(deadlock_select_no_cases)
{
    struct test_child r;
    expect_fatal("deadlock_select_no_cases_child",
                 "all goroutines are asleep - deadlock!", &r);
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [select (no cases)]:\n");
    test_child_free(&r);
}

/* ---- no_deadlock_timer ---- */

static gort_chan *nd_never;
static gort_waitgroup nd_wg;

static void nd_recv(void *arg)
{
    (void)arg;
    gort_chan_recv(nd_never, NULL);
}

static void nd_select(void *arg)
{
    (void)arg;
    gort_case cs[2] = {{nd_never, GORT_CASE_RECV, NULL, false},
                       {NULL, GORT_CASE_SEND, NULL, false}};
    gort_select(cs, 2);
}

static void nd_wait(void *arg)
{
    (void)arg;
    gort_waitgroup_wait(&nd_wg);
}

static void nd_main(void *arg)
{
    (void)arg;
    nd_never = chan_or_die(0, 0);
    gort_waitgroup_add(&nd_wg, 1);
    CHECK_GT(gort_go(nd_recv, NULL), 1);
    CHECK_GT(gort_go(nd_select, NULL), 1);
    CHECK_GT(gort_go(nd_wait, NULL), 1);
    say("sleeping\n");
    int64_t t0 = gort_nanotime();
    gort_sleep(200LL * 1000 * 1000);
    say("slept %lld ms\n", (long long)((gort_nanotime() - t0) / 1000000));
    gort_chan *after = gort_after(100LL * 1000 * 1000);
    CHECK(after != NULL);
    int64_t v = 0;
    CHECK(gort_chan_recv(after, &v));
    CHECK_EQ(gort_chan_free(after), 0);
    say("received\n");
}

TEST_HIDDEN(no_deadlock_timer_child)
{
    CHECK_EQ(gort_main(nd_main, NULL), 0);
    say("returned\n");
}

/* main sleeps 200 ms, then waits on a gort_after channel, with every other
 * goroutine parked for good: a pending timer is no deadlock; the program ends
 * normally. */
TEST(no_deadlock_timer)
{
    struct test_child r;
    test_run_child("no_deadlock_timer_child", NULL, 60, &r);
    if (r.signal != 0 || r.exit_code != 0)
        fprintf(stderr, "child: exit %d signal %d\n--- stdout ---\n%s\n"
                        "--- stderr ---\n%s\n",
                r.exit_code, r.signal, r.out, r.err);
    CHECK_EQ(r.signal, 0);
    CHECK_EQ(r.exit_code, 0);
    CHECK(strstr(r.err, "deadlock") == NULL);
    CHECK(strstr(r.err, "fatal error") == NULL);
    CHECK_STR_CONTAINS(r.out, "sleeping\n");
    const char *s = strstr(r.out, "slept ");
    CHECK(s != NULL);
    CHECK_GE(atoll(s + 6), 200);
    CHECK_STR_CONTAINS(r.out, "received\n");
    CHECK_STR_CONTAINS(r.out, "returned\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * Misuse and broken invariants: a goroutine-only call made where no
 * goroutine runs is the program's error (its message names the call); a
 * runtime invariant that fails (gort__throw) shows gort's own frames in
 * the dump, which a misuse (gort__fatal) leaves out.
 * ------------------------------------------------------------------------- */

TEST_HIDDEN(no_goroutine_sleep_child)
{
    say("stage\n");
    /* Buffered (stdout is a pipe): flushed before the abort. */
    printf("in stdio's buffer\n");
    gort_sleep(1000 * 1000);
    say("after\n"); /* never */
}

/* gort_sleep before gort_main: "gort_sleep: not called from a goroutine",
 * and what the program left in stdio's buffers is written out first. */
TEST(no_goroutine_sleep)
{
    struct test_child r;
    expect_fatal("no_goroutine_sleep_child",
                 "gort_sleep: not called from a goroutine (only a "
                 "goroutine, run by gort_main or gort_go, may wait in gort)",
                 &r);
    CHECK_STR_CONTAINS(r.out, "in stdio's buffer\n");
    test_child_free(&r);
}

TEST_HIDDEN(no_goroutine_send_child)
{
    gort_chan *ch;
    CHECK_EQ(gort_chan_make(&ch, sizeof(int), 1), 0);
    say("stage\n");
    gort_chan_send(ch, &(int){1});
    say("after\n"); /* never */
}

/* gort_chan_send before gort_main: "gort_chan_send: not called from a
 * goroutine". */
TEST(no_goroutine_send)
{
    struct test_child r;
    expect_fatal("no_goroutine_send_child",
                 "gort_chan_send: not called from a goroutine (only a "
                 "goroutine, run by gort_main or gort_go, may wait in gort)",
                 &r);
    test_child_free(&r);
}

static GORT_NOINLINE void tr_fail(void *arg)
{
    say("stage\n");
    if (arg)
        gort__throw("an invariant, broken on purpose");
    gort__fatal("a misuse, on purpose");
}

TEST_HIDDEN(throw_runtime_frames_child)
{
    gort_main(tr_fail, (void *)1);
}

TEST_HIDDEN(fatal_program_frames_child)
{
    gort_main(tr_fail, NULL);
}

/* gort__throw in a goroutine: its own frame in the dump; gort__fatal: not. */
TEST(throw_runtime_frames)
{
    struct test_child r;
    expect_fatal("throw_runtime_frames_child",
                 "an invariant, broken on purpose", &r);
    CHECK_STR_CONTAINS(r.err, "\ngort__throw(");
    CHECK_STR_CONTAINS(r.err, "\ntr_fail(");
    test_child_free(&r);
    expect_fatal("fatal_program_frames_child", "a misuse, on purpose", &r);
    CHECK(strstr(r.err, "\ngort__fatal(") == NULL);
    CHECK_STR_CONTAINS(r.err, "\ntr_fail(");
    test_child_free(&r);
}

/* ---- semaphore_over_release ---- */

static void over_release_main(void *arg)
{
    (void)arg;
    gort_semaphore *s;
    CHECK_EQ(gort_semaphore_make(&s, 2), 0);
    CHECK_EQ(gort_semaphore_acquire(s, 1, NULL), 0);
    say("stage\n");
    gort_semaphore_release(s, 2);
    say("after\n"); /* never */
}

TEST_HIDDEN(semaphore_over_release_child)
{
    gort_main(over_release_main, NULL);
}

/* Giving back more units than were taken: "semaphore: released more
 * than held". */
TEST(semaphore_over_release)
{
    struct test_child r;
    expect_fatal("semaphore_over_release_child",
                 "semaphore: released more than held", &r);
    test_child_free(&r);
}
