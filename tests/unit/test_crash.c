/* SPDX-License-Identifier: MIT */
/*
 * test_crash.c - a goroutine's own SIGSEGV, SIGBUS, SIGFPE and SIGILL, as
 * death tests: each case runs a program in a child process
 * (test_run_child) whose goroutine faults, and checks its stderr (the
 * report in Go's words with the signal's name, the faulting address and
 * pc, the faulting goroutine's frames from the faulting function down,
 * the other goroutines as GORTTRACEBACK says) and that it died by that
 * very signal.  Also: a handler the program installs, before gort_main
 * or during it, keeps its signal; a fault on a thread without an M goes
 * to the default action without a report.
 *
 * Each child parks one goroutine (parked_g, in a channel receive) before
 * the fault, so that "every other goroutine" has something to show, and
 * prints the address of the function that faults on stdout.
 *
 * Under AddressSanitizer and ThreadSanitizer the children run with the
 * sanitizer's handlers for these signals off (handle_segv=0 and the like
 * in ASAN_OPTIONS and TSAN_OPTIONS): the sanitizer installs them before
 * main, so gort would chain every fault to its report, as it does for any
 * handler installed before it.  The faulting functions are
 * not instrumented by UndefinedBehaviorSanitizer, which would otherwise
 * report the NULL store and the division itself and exit.
 */
#include "test_util.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * The children.
 * ------------------------------------------------------------------------- */

static gort_chan *never; /* parked_g waits on it for good */
static void *bus_map;    /* the truncated file's mapping */

static void parked_g(void *arg)
{
    (void)arg;
    int64_t v;
    gort_chan_recv(never, &v);
}

/* The faulting functions: kept out of interprocedural optimisation
 * (noipa), so that each is a frame of its own in the dump and its deed
 * stays (the compiler may drop a store it can prove goes to NULL). */
static volatile int *volatile null_ptr;
/* UndefinedBehaviorSanitizer would report the NULL store and the division
 * by zero itself and exit: the deeds are not instrumented. */
#if defined(__clang__)
#define DEED __attribute__((noinline, no_sanitize("undefined")))
#else
#define DEED __attribute__((noipa, no_sanitize("undefined")))
#endif

DEED static void store_null(void)
{
    *null_ptr = 1;
    __asm__ volatile("" ::: "memory");
}

DEED static void touch_past_eof(void)
{
    (void)*(volatile char *)((char *)bus_map + 4096);
    __asm__ volatile("" ::: "memory");
}

static volatile int zero;
DEED static void divide_by_zero(void)
{
    volatile int x = 7 / zero;
    (void)x;
    __asm__ volatile("" ::: "memory");
}

DEED static void illegal_instruction(void)
{
#if defined(__x86_64__)
    __asm__ volatile("ud2");
#elif defined(__aarch64__)
    __asm__ volatile("udf #0");
#else
#error "test_crash: an illegal instruction needs a port to this processor"
#endif
    __asm__ volatile("" ::: "memory");
}

/* The function the child's goroutine calls, by the case's name. */
static void (*deed)(void);

static void crasher(void *arg)
{
    (void)arg;
    say("crashing in goroutine %lld\n", (long long)gort_goid());
    deed();
    say("survived\n"); /* never */
}

static void crash_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_chan_make(&never, sizeof(int64_t), 0), 0);
    CHECK_GT(gort_go(parked_g, NULL), 1);
    /* parked_g parks before crasher runs (it may run on the other P). */
    await_waiting("chan receive", 0, 1);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 1);
    CHECK_GT(gort_go(crasher, NULL), 1);
    gort_waitgroup_wait(&wg);
}

static void run_crash_child(void (*fn)(void))
{
    deed = fn;
    say("deed %p\n", (void *)fn);
    gort_main(crash_main, NULL);
    say("returned\n"); /* never */
}

TEST_HIDDEN(segv_child)
{
    run_crash_child(store_null);
}

TEST_HIDDEN(bus_child)
{
    /* Two pages mapped over a one-page file: the second is past its end. */
    char path[64];
    int fd = mkstemp(tmp_template(path, sizeof path, "gort_test_crash_"));
    CHECK_GE(fd, 0);
    unlink(path);
    CHECK_EQ(ftruncate(fd, 4096), 0);
    bus_map = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(bus_map != MAP_FAILED);
    say("past eof %p\n", (void *)((char *)bus_map + 4096));
    run_crash_child(touch_past_eof);
}

TEST_HIDDEN(fpe_child)
{
    run_crash_child(divide_by_zero);
}

TEST_HIDDEN(ill_child)
{
    run_crash_child(illegal_instruction);
}

/* ---------------------------------------------------------------------------
 * Checking a report.
 * ------------------------------------------------------------------------- */

/* The child's environment: GORTTRACEBACK (NULL: unset, the default all),
 * and the sanitizers' handlers for these signals off (see the top of the
 * file). */
struct child_env {
    const char *env[5];
    char asan[512], tsan[512];
};

/* opts (ASAN_OPTIONS or TSAN_OPTIONS) as the environment has it, with
 * the four handlers off. */
static void handlers_off(char *buf, size_t size, const char *opts)
{
    const char *cur = getenv(opts);
    snprintf(buf, size,
             "%s=%s%shandle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
             "handle_sigill=0",
             opts, cur ? cur : "", cur && *cur ? ":" : "");
}

static void child_env(struct child_env *ce, const char *traceback)
{
    int n = 0;
    if (traceback)
        ce->env[n++] = traceback;
    handlers_off(ce->asan, sizeof ce->asan, "ASAN_OPTIONS");
    handlers_off(ce->tsan, sizeof ce->tsan, "TSAN_OPTIONS");
    ce->env[n++] = ce->asan;
    ce->env[n++] = ce->tsan;
    ce->env[n++] = "GORTDEBUG=";
    ce->env[n] = NULL;
}

/* qemu-user reports a guest's death by a signal on the guest's stderr
 * ("qemu: uncaught target signal 11 ..."), after gort's report: cut it
 * off, so that the report is checked as a native run prints it. */
static void drop_emulator_note(char *err)
{
    char *note = strstr(err, "qemu: uncaught target signal");
    if (note)
        *note = '\0';
}

/* The hexadecimal number after `key` in s (which must be there). */
static uintptr_t hex_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    CHECK(p != NULL);
    return (uintptr_t)strtoull(p + strlen(key), NULL, 16);
}

/* The decimal number after `key` in s (which must be there). */
static long long dec_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    CHECK(p != NULL);
    return atoll(p + strlen(key));
}

static void show(const char *child, const struct test_child *r)
{
    fprintf(stderr, "child %s: exit %d signal %d\n--- stdout ---\n%s\n"
                    "--- stderr ---\n%s\n",
            child, r->exit_code, r->signal, r->out, r->err);
}

/* Where the report's addr= must point. */
enum want_addr { ADDR_NULL, ADDR_PAST_EOF, ADDR_PC };

/* The faulting function of each child. */
static const char *deed_name(const char *child)
{
    return strstr(child, "segv")  ? "store_null"
           : strstr(child, "bus") ? "touch_past_eof"
           : strstr(child, "fpe") ? "divide_by_zero"
                                  : "illegal_instruction";
}

/*
 * Run `child` at GORTTRACEBACK `traceback` (NULL: the default) and check
 * its report: the first lines exactly ("unexpected fault address" and
 * "fatal error: fault" for SIGSEGV and SIGBUS, "fatal error: unexpected
 * signal" for the others, then "[signal <name> code=0x"), the address
 * (`want`) and the pc (in the faulting function, whose address the child
 * printed), the faulting goroutine from that function down to crasher,
 * parked_g listed at "all" and not at "single", no goroutine at "none",
 * and death by sig.
 */
static void check_crash(const char *child, int sig, const char *name,
                        const char *traceback, enum want_addr want)
{
    struct child_env ce;
    child_env(&ce, traceback);
    struct test_child r;
    test_run_child(child, ce.env, 60, &r);
    drop_emulator_note(r.err);
    if (r.signal != sig)
        show(child, &r);
    CHECK_EQ(r.signal, sig);
    CHECK(strstr(r.out, "survived") == NULL);
    uintptr_t pc = hex_after(r.err, " pc=0x");
    uintptr_t fn = hex_after(r.out, "deed 0x");
    CHECK_GE(pc, fn);
    CHECK_LT(pc, fn + 256);
    uintptr_t addr = want == ADDR_NULL       ? 0
                     : want == ADDR_PAST_EOF ? hex_after(r.out, "past eof 0x")
                                             : pc;
    /* The report comes first on stderr. */
    char want_text[256];
    if (sig == SIGSEGV || sig == SIGBUS)
        snprintf(want_text, sizeof want_text,
                 "unexpected fault address 0x%lx\ngort: fatal error: fault\n"
                 "[signal %s code=0x",
                 (unsigned long)addr, name);
    else
        snprintf(want_text, sizeof want_text,
                 "gort: fatal error: unexpected signal\n[signal %s code=0x",
                 name);
    if (strncmp(r.err, want_text, strlen(want_text)) != 0)
        show(child, &r);
    CHECK_EQ(strncmp(r.err, want_text, strlen(want_text)), 0);
    CHECK_EQ(hex_after(r.err, " addr=0x"), addr);
    /* The signal line ends the report's head; the dump follows it. */
    const char *end = strstr(r.err, "]\n");
    CHECK(end != NULL);
    end += 2;
    long long goid = dec_after(r.out, "crashing in goroutine ");
    bool none = traceback && strcmp(traceback, "GORTTRACEBACK=none") == 0;
    bool single = traceback && strcmp(traceback, "GORTTRACEBACK=single") == 0;
    if (none) {
        if (strcmp(end, "\n") != 0)
            show(child, &r);
        CHECK_EQ(strcmp(end, "\n"), 0);
    } else {
        /* The faulting goroutine first, from the faulting function. */
        snprintf(want_text, sizeof want_text,
                 "\ngoroutine %lld [running]:\n%s(...)\n", goid,
                 deed_name(child));
        if (strncmp(end, want_text, strlen(want_text)) != 0)
            show(child, &r);
        CHECK_EQ(strncmp(end, want_text, strlen(want_text)), 0);
        CHECK_STR_CONTAINS(end, "\ncrasher(...)\n");
        bool others = strstr(end, "\nparked_g(...)\n") != NULL;
        if (others != !single)
            show(child, &r);
        CHECK_EQ(others, !single);
        CHECK_EQ(strstr(end, "[chan receive") != NULL, !single);
    }
    test_child_free(&r);
}

static const char *const SEGV = "SIGSEGV: segmentation violation";

/* A NULL store: "unexpected fault address 0x0", "fatal error: fault",
 * [signal SIGSEGV ... addr=0x0 pc=...], the faulting goroutine from
 * store_null, every goroutine, death by SIGSEGV. */
TEST(segv)
{
    check_crash("segv_child", SIGSEGV, SEGV, NULL, ADDR_NULL);
}

/* GORTTRACEBACK=single: the faulting goroutine only. */
TEST(segv_single)
{
    check_crash("segv_child", SIGSEGV, SEGV, "GORTTRACEBACK=single",
                ADDR_NULL);
}

/* GORTTRACEBACK=none: the report's lines, no goroutine. */
TEST(segv_none)
{
    check_crash("segv_child", SIGSEGV, SEGV, "GORTTRACEBACK=none",
                ADDR_NULL);
}

/* GORTTRACEBACK=all, as the default: every goroutine. */
TEST(segv_all)
{
    check_crash("segv_child", SIGSEGV, SEGV, "GORTTRACEBACK=all", ADDR_NULL);
}

static const char *const LEVELS[] = {NULL, "GORTTRACEBACK=single",
                                     "GORTTRACEBACK=none"};

/* A read of a file mapping past the file's end: SIGBUS at that address,
 * at each GORTTRACEBACK level. */
TEST(bus)
{
    for (int i = 0; i < 3; i++)
        check_crash("bus_child", SIGBUS, "SIGBUS: bus error", LEVELS[i],
                    ADDR_PAST_EOF);
}

/* An integer division by zero: "fatal error: unexpected signal",
 * [signal SIGFPE: floating-point exception code=0x1 (FPE_INTDIV) addr=pc]
 * (si_addr is the faulting instruction's), death by SIGFPE.  aarch64's
 * integer division does not trap (it gives 0): skipped there. */
TEST(fpe)
{
#if defined(__x86_64__)
    for (int i = 0; i < 3; i++)
        check_crash("fpe_child", SIGFPE, "SIGFPE: floating-point exception",
                    LEVELS[i], ADDR_PC);
#else
    fprintf(stderr, "fpe: skipped (this processor's integer division by "
                    "zero does not trap)\n");
    exit(77);
#endif
}

/* ud2 (x86-64) or udf (aarch64): "fatal error: unexpected signal",
 * [signal SIGILL: illegal instruction ... addr=pc], death by SIGILL. */
TEST(ill)
{
    for (int i = 0; i < 3; i++)
        check_crash("ill_child", SIGILL, "SIGILL: illegal instruction",
                    LEVELS[i], ADDR_PC);
}

/* ---------------------------------------------------------------------------
 * The program's own handlers, and threads gort does not own.
 * ------------------------------------------------------------------------- */

static void own_handler(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)info;
    (void)uc;
    static const char msg[] = "own handler\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    _exit(42);
}

static void install_own(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
}

TEST_HIDDEN(own_before_child)
{
    install_own();
    run_crash_child(store_null);
}

static void own_during_main(void *arg)
{
    install_own();
    crash_main(arg);
}

TEST_HIDDEN(own_during_child)
{
    deed = store_null;
    say("deed %p\n", (void *)store_null);
    gort_main(own_during_main, NULL);
}

static void install_and_return(void *arg)
{
    (void)arg;
    install_own();
}

TEST_HIDDEN(own_kept_child)
{
    gort_main(install_and_return, NULL);
    struct sigaction cur;
    CHECK_EQ(sigaction(SIGSEGV, NULL, &cur), 0);
    say("%s\n", (cur.sa_flags & SA_SIGINFO) &&
                        cur.sa_sigaction == own_handler
                    ? "kept"
                    : "replaced");
}

static void check_own(const char *child)
{
    struct child_env ce;
    child_env(&ce, NULL);
    struct test_child r;
    test_run_child(child, ce.env, 60, &r);
    if (r.exit_code != 42)
        show(child, &r);
    CHECK_EQ(r.exit_code, 42);
    CHECK_STR_CONTAINS(r.out, "own handler\n");
    CHECK(strstr(r.err, "gort:") == NULL);
    CHECK(strstr(r.err, "goroutine ") == NULL);
    test_child_free(&r);
}

/* A SIGSEGV handler installed before gort_main gets the goroutine's fault
 * (gort chains to it) and gort reports nothing. */
TEST(own_handler_before)
{
    check_own("own_before_child");
}

/* One installed while gort_main runs replaces gort's: it gets the fault. */
TEST(own_handler_during)
{
    check_own("own_during_child");
}

/* One installed while gort_main runs stays installed after it returns. */
TEST(own_handler_kept)
{
    struct child_env ce;
    child_env(&ce, NULL);
    struct test_child r;
    test_run_child("own_kept_child", ce.env, 60, &r);
    if (r.exit_code != 0)
        show("own_kept_child", &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "kept\n");
    test_child_free(&r);
}

static void *foreign_fault(void *arg)
{
    (void)arg;
    store_null();
    return NULL;
}

static void foreign_main(void *arg)
{
    (void)arg;
    say("deed %p\n", (void *)store_null);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, foreign_fault, NULL), 0);
    pthread_join(t, NULL);
    say("survived\n"); /* never */
}

TEST_HIDDEN(foreign_child)
{
    gort_main(foreign_main, NULL);
}

/* A fault on a plain thread (no M): the default action, no report. */
TEST(foreign_thread)
{
    struct child_env ce;
    child_env(&ce, NULL);
    struct test_child r;
    test_run_child("foreign_child", ce.env, 60, &r);
    if (r.signal != SIGSEGV)
        show("foreign_child", &r);
    CHECK_EQ(r.signal, SIGSEGV);
    CHECK(strstr(r.out, "survived") == NULL);
    CHECK(strstr(r.err, "gort:") == NULL);
    CHECK(strstr(r.err, "unexpected fault") == NULL);
    test_child_free(&r);
}
