/* SPDX-License-Identifier: MIT */
/*
 * test_dump.c - goroutine dumps: headers, backtraces, the grouped form,
 * SIGQUIT, fatal errors, GORTTRACEBACK, and the stack walker itself.
 *
 * The same file is also built against the shared library (test_dump_shared,
 * GORT_TEST_SHARED): there the cases declared with TEST, which need no
 * internal header, are its ctest entries, and internal_frames then names
 * static functions of libgort.so.
 *
 * The functions that block are static and not inlined, and do work after
 * their blocking call, so that no tail call removes their frame: the dump
 * must name them from the executable's .symtab (dladdr would not).
 */
#ifndef GORT_TEST_SHARED
#include "internal.h"
#endif
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
#define SEC (1000 * MS)

/* The object gort's code is in, as dumps name it. */
#ifdef GORT_TEST_SHARED
#define GORT_OBJ "libgort.so"
#else
#define GORT_OBJ "test_dump"
#endif

/* A case of test_dump only: test_dump_shared keeps it hidden (no ctest
 * entry there) and gives entries to the cases declared with TEST. */
#ifdef GORT_TEST_SHARED
#define TEST_STATIC_ONLY(name) TEST_HIDDEN(name)
#else
#define TEST_STATIC_ONLY(name) TEST(name)
#endif

/* True when asynchronous preemption works in this build; otherwise says
 * why what needs it is skipped. */
static bool async_preempt_expected(const char *what)
{
    if (!TSAN)
        return true;
    fprintf(stderr, "%s: skipped (ThreadSanitizer defers asynchronous "
                    "signals: gort turns asynchronous preemption off)\n",
            what);
    return false;
}

/* ---------------------------------------------------------------------------
 * Reading dumps.
 * ------------------------------------------------------------------------- */

static char *fd_text(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    CHECK_GE(n, 0);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK_EQ(pread(fd, buf, (size_t)n, 0), n);
    buf[n] = 0;
    close(fd);
    return buf;
}

static char *grouped_text(void)
{
    int fd = memfd_create("gort-grouped", MFD_CLOEXEC);
    CHECK_GE(fd, 0);
    CHECK_EQ(gort_dump_goroutines_grouped(fd), 0);
    return fd_text(fd);
}

/* Goroutine goid's entry in a dump (its header to the blank line after
 * it), malloc'd; fails the case, printing the dump, when it is absent. */
static char *entry_of(const char *dump, int64_t goid)
{
    char head[48];
    snprintf(head, sizeof head, "goroutine %lld [", (long long)goid);
    for (const char *p = dump; (p = strstr(p, head)) != NULL; p++) {
        if (p != dump && p[-1] != '\n')
            continue;
        const char *end = strstr(p, "\n\n");
        size_t n = end ? (size_t)(end - p) + 1 : strlen(p);
        char *e = malloc(n + 1);
        CHECK(e != NULL);
        memcpy(e, p, n);
        e[n] = 0;
        return e;
    }
    fprintf(stderr, "no goroutine %lld in the dump:\n%s\n", (long long)goid,
            dump);
    CHECK(0);
    return NULL;
}

/* The entry has frame fn: "fn(...)" on a line of its own, followed by a
 * tab, the path of the object it is in (this test program, or gort's for
 * a gort_ function), ":0x" and its address, and (unless entry_frame) " +0x"
 * and the offset.  Returns where the frame starts. */
static const char *check_frame(const char *entry, const char *fn,
                               bool entry_frame)
{
    const char *obj = strncmp(fn, "gort_", 5) == 0 ? GORT_OBJ : "test_dump";
    char want[128];
    snprintf(want, sizeof want, "\n%s(...)\n\t", fn);
    const char *f = strstr(entry, want);
    if (!f) {
        fprintf(stderr, "no frame %s in:\n%s\n", fn, entry);
        CHECK(0);
    }
    const char *loc = f + strlen(want);
    size_t len = strcspn(loc, "\n");
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)len, loc);
    CHECK_STR_CONTAINS(line, obj);
    CHECK_STR_CONTAINS(line, ":0x");
    if (entry_frame)
        CHECK(strstr(line, " +0x") == NULL);
    else
        CHECK_STR_CONTAINS(line, " +0x");
    return f;
}

/* The entry starts with the header "goroutine goid [what]:". */
static void check_header(const char *entry, int64_t goid, const char *what)
{
    char want[128];
    snprintf(want, sizeof want, "goroutine %lld [%s]:\n", (long long)goid,
             what);
    if (strncmp(entry, want, strlen(want)) != 0) {
        fprintf(stderr, "want header \"%s\" in:\n%s\n", want, entry);
        CHECK(0);
    }
}

/* ---------------------------------------------------------------------------
 * Goroutines that block, shared by several cases.
 * ------------------------------------------------------------------------- */

static gort_chan *bs_ch;
static gort_mutex bs_mu = GORT_MUTEX_INIT;
static int bs_pipe[2];
static int bs_sink;

static NOINLINE void block_on_chan(void *arg)
{
    (void)arg;
    int64_t v = 0;
    gort_chan_recv(bs_ch, &v);
    ATOMIC_ADD(&bs_sink, (int)v);
}

static NOINLINE void block_on_mutex(void *arg)
{
    (void)arg;
    gort_mutex_lock(&bs_mu);
    ATOMIC_INC(&bs_sink);
    gort_mutex_unlock(&bs_mu);
}

static NOINLINE void block_in_sleep(void *arg)
{
    (void)arg;
    gort_sleep(3600 * SEC);
    ATOMIC_INC(&bs_sink);
}

static NOINLINE void block_in_read(void *arg)
{
    (void)arg;
    char c;
    long r = gort_read(bs_pipe[0], &c, 1);
    ATOMIC_ADD(&bs_sink, (int)r);
}

struct blocked {
    int64_t chan, mutex, sleep, read;
};

/* Start the four and wait until each is where it blocks.  main keeps the
 * mutex; the read needs blocked_release. */
static NOINLINE void blocked_start(struct blocked *b)
{
    bs_ch = make_chan(sizeof(int64_t), 0);
    gort_mutex_lock(&bs_mu);
    CHECK_EQ(pipe(bs_pipe), 0); /* not registered: the syscall path */
    b->chan = gort_go(block_on_chan, NULL);
    b->mutex = gort_go(block_on_mutex, NULL);
    b->sleep = gort_go(block_in_sleep, NULL);
    b->read = gort_go(block_in_read, NULL);
    CHECK_GT(b->read, 0);
    await_waiting("chan receive", b->chan, 1);
    await_waiting("sync.Mutex.Lock", b->mutex, 1);
    await_waiting("sleep", b->sleep, 1);
    await_waiting("syscall", b->read, 1);
}

/* Let the reader finish (a thread blocked in read(2) would keep gort_main
 * from returning); the others are discarded with the runtime. */
static void blocked_release(void)
{
    CHECK_EQ(write(bs_pipe[1], "x", 1), 1);
    while (ATOMIC_LOAD(&bs_sink) < 1)
        gort_sleep(MS);
}

/* ---------------------------------------------------------------------------
 * blocked_states
 * ------------------------------------------------------------------------- */

/* The entry of goroutine goid: header, "waiting on" when parked on an
 * object, the public gort call above the function that blocked (the
 * internal ones hidden), created by blocked_start in goroutine 1. */
static void check_blocked(const char *dump, int64_t goid, const char *what,
                          const char *call, const char *fn, bool obj)
{
    char *e = entry_of(dump, goid);
    check_header(e, goid, what);
    if (obj)
        CHECK(strncmp(strchr(e, '\n') + 1, "waiting on 0x", 13) == 0);
    const char *f = check_frame(e, fn, false);
    if (call) {
        const char *c = check_frame(e, call, false);
        CHECK(c < f);
    }
    CHECK(strstr(e, "gort__park(") == NULL && strstr(e, "gostart(") == NULL);
    CHECK_STR_CONTAINS(e, "\ncreated by blocked_start in goroutine 1\n\t");
    free(e);
}

static void blocked_main(void *arg)
{
    (void)arg;
    struct blocked b;
    blocked_start(&b);
    char *d = dump_text();
    /* The caller first, from its own frames. */
    check_header(d, 1, "running");
    char *me = entry_of(d, 1);
    check_frame(me, "blocked_main", false);
    CHECK(strstr(me, "created by") == NULL); /* not for the main goroutine */
    free(me);
    check_blocked(d, b.chan, "chan receive", "gort_chan_recv",
                  "block_on_chan", true);
    check_blocked(d, b.mutex, "sync.Mutex.Lock", NULL, "block_on_mutex",
                  true);
    check_blocked(d, b.sleep, "sleep", "gort_sleep", "block_in_sleep",
                  false);
    check_blocked(d, b.read, "syscall", "gort_read", "block_in_read", false);
    free(d);
    blocked_release();
}

/* Goroutines blocked on a channel, a gort mutex, a sleep and a read(2) in the
 * syscall path each show their wait reason or status, the public gort call and
 * the (static) function that blocked, with "created by ... in goroutine 1";
 * the dumping goroutine comes first, [running], from its own frames; gort's
 * internal frames are hidden. */
TEST(blocked_states)
{
    run_main(blocked_main, NULL);
}

/* ---------------------------------------------------------------------------
 * wait_minutes (white-box)
 * ------------------------------------------------------------------------- */

#ifndef GORT_TEST_SHARED
static struct g *find_g(int64_t goid)
{
    uint32_t n = load_acq(&gort__allglen);
    struct g **all = load_acq(&gort__allgs);
    for (uint32_t i = 0; i < n; i++)
        if (all[i]->goid == goid)
            return all[i];
    CHECK(0);
    return NULL;
}

/* goroutine goid's header, with its waitsince set to `ago` before now (0:
 * unknown), is "goroutine goid [what]:". */
static void check_minutes(int64_t goid, int64_t ago, const char *what)
{
    struct g *gp = find_g(goid);
    rt_set_waitsince(gp, ago ? gort_nanotime() - ago : 0);
    char *d = dump_text();
    char *e = entry_of(d, goid);
    check_header(e, goid, what);
    free(e);
    free(d);
}

static void minutes_main(void *arg)
{
    (void)arg;
    struct blocked b;
    blocked_start(&b);
    /* Acquire loads of the statuses: the parks' and entersyscall's writes
     * of waitsince happen before the fakes below. */
    CHECK_EQ(gort__readgstatus(find_g(b.chan)), G_WAITING);
    CHECK_EQ(gort__readgstatus(find_g(b.read)), G_SYSCALL);
    int64_t min = 60 * SEC;
    check_minutes(b.chan, 3 * min + 5 * SEC, "chan receive, 3 minutes");
    check_minutes(b.chan, 55 * SEC, "chan receive");
    check_minutes(b.chan, min + SEC, "chan receive, 1 minutes");
    check_minutes(b.chan, 125 * min, "chan receive, 125 minutes");
    check_minutes(b.chan, 0, "chan receive");
    check_minutes(b.sleep, 10 * min + SEC, "sleep, 10 minutes");
    check_minutes(b.read, 2 * min + SEC, "syscall, 2 minutes");
    /* Not for running goroutines, however old their waitsince. */
    check_minutes(1, 10 * min, "running");
    blocked_release();
}

/* ", N minutes" exactly as Go: only for waiting and syscall goroutines that
 * waited a minute or more (white-box: waitsince faked). */
TEST(wait_minutes)
{
    run_main(minutes_main, NULL);
}
#endif

/* ---------------------------------------------------------------------------
 * locked_to_thread
 * ------------------------------------------------------------------------- */

static NOINLINE void locked_waiter(void *arg)
{
    gort_lock_os_thread();
    int64_t v = 0;
    gort_chan_recv(arg, &v);
    gort_unlock_os_thread();
    ATOMIC_ADD(&bs_sink, (int)v);
}

static void locked_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int64_t), 0);
    int64_t id = gort_go(locked_waiter, ch);
    await_waiting("chan receive", id, 1);
    char *d = dump_text();
    char *e = entry_of(d, id);
    check_header(e, id, "chan receive, locked to thread");
    check_frame(e, "locked_waiter", false);
    free(e);
    free(d);
    send_i64(ch, 1);
    while (ATOMIC_LOAD(&bs_sink) < 1)
        gort_gosched();
    free_chan(ch);
}

/* ", locked to thread" under gort_lock_os_thread. */
TEST_STATIC_ONLY(locked_to_thread)
{
    run_main(locked_main, NULL);
}

/* ---------------------------------------------------------------------------
 * not_started
 * ------------------------------------------------------------------------- */

static gort_chan *ns_ch;

static NOINLINE void never_ran(void *arg)
{
    (void)arg;
    int64_t v = 0;
    gort_chan_recv(ns_ch, &v);
    ATOMIC_ADD(&bs_sink, (int)v);
}

static void not_started_main(void *arg)
{
    (void)arg;
    ns_ch = make_chan(sizeof(int64_t), 0);
    CHECK_EQ(gort_gomaxprocs(1) > 0, 1);
    /* One P, which this goroutine holds and does not yield: the new one
     * waits in runnext.  (Should sysmon make us yield between the two
     * calls, the new one runs and blocks, or is runnable again with
     * frames of its own: try again.) */
    for (int attempt = 0;; attempt++) {
        CHECK_LT(attempt, 20);
        gort_gosched(); /* a fresh time slice: no preemption pending */
        int64_t id = gort_go(never_ran, NULL);
        char *d = dump_text();
        char *e = entry_of(d, id);
        bool runnable = strncmp(strchr(e, '['), "[runnable]", 10) == 0 &&
                        strstr(e, "gort_") == NULL;
        if (runnable) {
            check_frame(e, "never_ran", true);
            CHECK_STR_CONTAINS(e, "created by not_started_main in goroutine "
                                  "1\n");
        }
        free(e);
        free(d);
        if (runnable)
            break;
    }
}

/* A goroutine that has not run shows its start function, without an offset. */
TEST(not_started)
{
    run_main(not_started_main, NULL);
}

/* ---------------------------------------------------------------------------
 * running_and_preempted
 * ------------------------------------------------------------------------- */

static int spin_stop, spin_started;

/* The count before the loop keeps the loop off the function's first
 * instruction: the signal lands anywhere in the loop, and a frame at
 * the very entry would print no offset (as Go's tracebacks do). */
static NOINLINE void spin_until_stop(void *arg)
{
    (void)arg;
    ATOMIC_INC(&spin_started);
    while (!ATOMIC_LOAD(&spin_stop))
        ;
    ATOMIC_INC(&bs_sink);
}

static void running_main(void *arg)
{
    (void)arg;
    /* On another P: [running], no frames (Go prints the same). */
    gort_gomaxprocs(2);
    ATOMIC_STORE(&spin_stop, 0);
    int64_t id = gort_go(spin_until_stop, NULL);
    int64_t deadline = gort_nanotime() + 30 * SEC;
    for (bool seen = false; !seen;) {
        CHECK_LT(gort_nanotime(), deadline);
        char *d = dump_text();
        char *e = entry_of(d, id);
        seen = strncmp(strchr(e, '['), "[running]", 9) == 0;
        if (seen) {
            CHECK_STR_CONTAINS(e, "]:\n\tgoroutine running on other thread; "
                                  "stack unavailable\ncreated by "
                                  "running_main in goroutine 1\n");
        }
        free(e);
        free(d);
        gort_sleep(MS);
    }
    ATOMIC_STORE(&spin_stop, 1);
    while (ATOMIC_LOAD(&bs_sink) < 1)
        gort_sleep(MS);
    if (!async_preempt_expected("running_and_preempted: the preempted "
                                "goroutine"))
        return;
    /* On the only P: main's sleep ends once sysmon's signal preempted the
     * spinner, which is then runnable with its context saved by the
     * preemption trampoline; its frames start where the signal landed. */
    gort_gomaxprocs(1);
    ATOMIC_STORE(&spin_stop, 0);
    id = gort_go(spin_until_stop, NULL);
    gort_sleep(MS);
    char *d = dump_text();
    char *e = entry_of(d, id);
    check_header(e, id, "runnable");
    check_frame(e, "spin_until_stop", false);
    CHECK_STR_CONTAINS(e, "created by running_main in goroutine 1\n");
    free(e);
    free(d);
    ATOMIC_STORE(&spin_stop, 1);
    while (ATOMIC_LOAD(&bs_sink) < 2)
        gort_sleep(MS);
}

/* A goroutine spinning on another P is [running] with "stack unavailable" (as
 * Go); one preempted by the signal shows the function it was interrupted in
 * (the walk crosses the preemption trampoline into the copied signal
 * context). */
TEST_STATIC_ONLY(running_and_preempted)
{
    run_main(running_main, NULL);
}

/* ---------------------------------------------------------------------------
 * internal_frames
 * ------------------------------------------------------------------------- */

static char *internal_dump;

static void internal_main(void *arg)
{
    (void)arg;
    bs_ch = make_chan(sizeof(int64_t), 0);
    int64_t id = gort_go(block_on_chan, NULL);
    await_waiting("chan receive", id, 1);
    char *d = dump_text();
    internal_dump = entry_of(d, id);
    free(d);
    send_i64(bs_ch, 1);
    while (ATOMIC_LOAD(&bs_sink) < 1)
        gort_gosched();
    free_chan(bs_ch);
}

/* GORTTRACEBACK=system shows gort's static functions (gort__park, gostart),
 * named from the ELF symbol table; the default hides them. */
TEST(internal_frames)
{
    /* GORTTRACEBACK is read by gort_main. */
    CHECK_EQ(setenv("GORTTRACEBACK", "system", 1), 0);
    run_main(internal_main, NULL);
    char *e = internal_dump;
    /* Static (and hidden) functions of gort, in order, from .symtab. */
    const char *park = strstr(e, "\ngort__park(...)\n\t");
    const char *recv = strstr(e, "\ngort_chan_recv(...)\n\t");
    const char *user = strstr(e, "\nblock_on_chan(...)\n\t");
    const char *start = strstr(e, "\ngostart(...)\n\t");
    if (!park || !recv || !user || !start)
        fprintf(stderr, "%s\n", e);
    CHECK(park && recv && user && start);
    CHECK(park < recv && recv < user && user < start);
#ifdef GORT_TEST_SHARED
    CHECK(strncmp(park + strlen("\ngort__park(...)\n\t"), "/", 1) == 0);
    CHECK_STR_CONTAINS(park, "libgort.so");
#endif
    free(e);
    /* The default hides them. */
    CHECK_EQ(unsetenv("GORTTRACEBACK"), 0);
    ATOMIC_STORE(&bs_sink, 0);
    run_main(internal_main, NULL);
    e = internal_dump;
    CHECK(strstr(e, "gort__park") == NULL && strstr(e, "gostart") == NULL);
    check_frame(e, "block_on_chan", false);
    free(e);
}

/* ---------------------------------------------------------------------------
 * grouped_leak
 * ------------------------------------------------------------------------- */

#define NLEAK 100
#define NSLEEP 3
static gort_chan *leak_ch;

static NOINLINE void leaky_worker(void *arg)
{
    (void)arg;
    int64_t v = 0;
    gort_chan_recv(leak_ch, &v);
    ATOMIC_ADD(&bs_sink, (int)v);
}

static NOINLINE void sleepy_worker(void *arg)
{
    (void)arg;
    gort_sleep(3600 * SEC);
    ATOMIC_INC(&bs_sink);
}

/* The group's count if its "#" lines name fn, else -1; *end is set to the
 * start of the next group. */
static long group_with(const char *g, const char *fn, const char **end)
{
    long count = strtol(g, NULL, 10);
    const char *next = strstr(g, "\n\n");
    CHECK(next != NULL);
    *end = next + 2;
    char want[64];
    snprintf(want, sizeof want, "\t%s+0x", fn);
    const char *hit = strstr(g, want);
    return hit && hit < next ? count : -1;
}

static void leak_main(void *arg)
{
    (void)arg;
    leak_ch = make_chan(sizeof(int64_t), 0);
    for (int i = 0; i < NLEAK; i++)
        CHECK_GT(gort_go(leaky_worker, NULL), 0);
    for (int i = 0; i < NSLEEP; i++)
        CHECK_GT(gort_go(sleepy_worker, NULL), 0);
    await_waiting("chan receive", 0, NLEAK);
    await_waiting("sleep", 0, NSLEEP);
    char *t = grouped_text();
    char want[64];
    snprintf(want, sizeof want, "goroutine profile: total %d\n",
             NLEAK + NSLEEP + 1);
    CHECK(strncmp(t, want, strlen(want)) == 0);
    /* The largest group first: the leak, one entry of 100, its frames
     * from the gort call down to the function that leaked. */
    const char *g = t + strlen(want);
    CHECK(strncmp(g, "100 @ 0x", 8) == 0);
    const char *recv = strstr(g, "\tgort_chan_recv+0x");
    const char *fn = strstr(g, "\tleaky_worker+0x");
    CHECK(recv && fn && recv < fn && fn < strstr(g, "\n\n"));
    CHECK_STR_CONTAINS(fn, "test_dump");
    /* Each "#" pc is its "@" pc less one (the call instruction). */
    unsigned long at0 = strtoul(g + 6, NULL, 16);
    const char *hash = strstr(g, "\n#\t0x");
    CHECK(hash != NULL);
    CHECK_EQ(strtoul(hash + 3, NULL, 16), at0 - 1);
    /* Every group: sorted by count, adding up to the total. */
    long total = 0, prev = NLEAK, leak = -1, sleepy = -1, main_n = -1;
    int groups = 0;
    for (const char *end; *g; g = end, groups++) {
        long n = strtol(g, NULL, 10);
        CHECK_GT(n, 0);
        CHECK_LE(n, prev);
        prev = n;
        total += n;
        long c;
        if ((c = group_with(g, "leaky_worker", &end)) >= 0)
            leak = c;
        if ((c = group_with(g, "sleepy_worker", &end)) >= 0)
            sleepy = c;
        if ((c = group_with(g, "leak_main", &end)) >= 0)
            main_n = c;
    }
    if (leak != NLEAK || sleepy != NSLEEP || main_n != 1 || groups != 3)
        fprintf(stderr, "%s\n", t);
    CHECK_EQ(total, NLEAK + NSLEEP + 1);
    CHECK_EQ(leak, NLEAK);
    CHECK_EQ(sleepy, NSLEEP);
    CHECK_EQ(main_n, 1);
    CHECK_EQ(groups, 3);
    free(t);
}

/* 100 identical leaked goroutines are one entry of 100 in the grouped dump,
 * groups sorted by count, counts adding up to the total. */
TEST(grouped_leak)
{
    run_main(leak_main, NULL);
}

/* ---------------------------------------------------------------------------
 * sigquit
 * ------------------------------------------------------------------------- */

/* SIGQUIT to this process, as a terminal's Ctrl-\ sends it.  Under
 * ThreadSanitizer to this thread: it runs a handler only when the thread
 * that received the signal next enters an intercepted call, and the kernel
 * may pick an idle thread asleep in a futex, which would never run it. */
static void quit_self(void)
{
    if (TSAN)
        CHECK_EQ(pthread_kill(pthread_self(), SIGQUIT), 0);
    else
        CHECK_EQ(kill(getpid(), SIGQUIT), 0);
}

static void sigquit_main(void *arg)
{
    (void)arg;
    struct blocked b;
    blocked_start(&b);
    say("blocked %lld %lld %lld %lld\n", (long long)b.chan,
        (long long)b.mutex, (long long)b.sleep, (long long)b.read);
    quit_self();
    gort_sleep(60 * SEC);
    say("survived\n");
}

TEST_HIDDEN(sigquit_child)
{
    gort_main(sigquit_main, NULL);
    say("returned\n");
}

/* SIGQUIT in a child: "SIGQUIT: quit", the PC line, every goroutine with its
 * backtrace, exit status 2. */
TEST(sigquit)
{
    struct test_child r;
    test_run_child("sigquit_child", NULL, 60, &r);
    long long c = 0, m = 0, s = 0, rd = 0;
    const char *line = strstr(r.out, "blocked ");
    if (r.exit_code != 2 || !line)
        fprintf(stderr, "exit %d signal %d\n%s\n%s\n", r.exit_code, r.signal,
                r.out, r.err);
    CHECK(line != NULL);
    CHECK_EQ(sscanf(line, "blocked %lld %lld %lld %lld", &c, &m, &s, &rd), 4);
    CHECK_EQ(r.exit_code, 2);
    CHECK_EQ(r.signal, 0);
    CHECK(strstr(r.out, "survived") == NULL && strstr(r.out, "returned") == NULL);
    CHECK(strncmp(r.err, "SIGQUIT: quit\nPC=0x", 19) == 0);
    const char *pcline = strchr(r.err, '\n') + 1;
    CHECK_STR_CONTAINS(pcline, " m=");
    /* SI_USER from kill, SI_TKILL (-6) from pthread_kill (quit_self). */
    CHECK_STR_CONTAINS(pcline, TSAN ? " sigcode=-6\n\ngoroutine "
                                    : " sigcode=0\n\ngoroutine ");
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [");
    check_blocked(r.err, c, "chan receive", "gort_chan_recv", "block_on_chan",
                  true);
    check_blocked(r.err, m, "sync.Mutex.Lock", NULL, "block_on_mutex", true);
    check_blocked(r.err, s, "sleep", "gort_sleep", "block_in_sleep", false);
    check_blocked(r.err, rd, "syscall", "gort_read", "block_in_read", false);
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * sigquit_program_handler
 * ------------------------------------------------------------------------- */

static void program_quit(int sig)
{
    (void)sig;
    static const char msg[] = "program handler\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    _exit(7);
}

static void raise_quit_main(void *arg)
{
    if (arg)
        signal(SIGQUIT, program_quit); /* after gort_main started */
    say("raising\n");
    quit_self();
    gort_sleep(200 * MS);
    say("went on\n");
}

TEST_HIDDEN(quit_before_child)
{
    signal(SIGQUIT, program_quit);
    gort_main(raise_quit_main, NULL);
}

TEST_HIDDEN(quit_during_child)
{
    gort_main(raise_quit_main, (void *)1);
}

TEST_HIDDEN(quit_ignored_child)
{
    signal(SIGQUIT, SIG_IGN);
    gort_main(raise_quit_main, NULL);
}

static void quit_state_main(void *arg)
{
    struct sigaction sa;
    CHECK_EQ(sigaction(SIGQUIT, NULL, &sa), 0);
    CHECK(sa.sa_flags & SA_SIGINFO); /* gort's */
    if (arg)
        signal(SIGQUIT, program_quit);
}

/* A handler the program installs before or during gort_main wins, SIG_IGN is
 * kept, ours is removed when gort_main returns. */
TEST_STATIC_ONLY(sigquit_program_handler)
{
    static const char *const kids[] = {"quit_before_child",
                                       "quit_during_child"};
    for (int i = 0; i < 2; i++) {
        struct test_child r;
        test_run_child(kids[i], NULL, 60, &r);
        if (r.exit_code != 7)
            fprintf(stderr, "%s: exit %d signal %d\n%s\n%s\n", kids[i],
                    r.exit_code, r.signal, r.out, r.err);
        CHECK_EQ(r.exit_code, 7);
        CHECK_STR_CONTAINS(r.out, "raising\nprogram handler\n");
        CHECK(strstr(r.err, "SIGQUIT") == NULL);
        test_child_free(&r);
    }
    struct test_child r;
    test_run_child("quit_ignored_child", NULL, 60, &r);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "raising\nwent on\n");
    CHECK(strstr(r.err, "SIGQUIT") == NULL);
    test_child_free(&r);
    /* Ours while gort_main runs, the default again after it returns. */
    struct sigaction sa;
    run_main(quit_state_main, NULL);
    CHECK_EQ(sigaction(SIGQUIT, NULL, &sa), 0);
    CHECK(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL);
    /* A handler installed meanwhile stays. */
    run_main(quit_state_main, (void *)1);
    CHECK_EQ(sigaction(SIGQUIT, NULL, &sa), 0);
    CHECK(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == program_quit);
    signal(SIGQUIT, SIG_DFL);
}

/* ---------------------------------------------------------------------------
 * fatal_backtrace, traceback_levels
 * ------------------------------------------------------------------------- */

static gort_chan *closed_ch;

static NOINLINE void send_on_closed(void *arg)
{
    (void)arg;
    say("bad %lld\n", (long long)gort_goid());
    int64_t v = 1;
    gort_chan_send(closed_ch, &v);
    ATOMIC_INC(&bs_sink);
}

static void fatal_main(void *arg)
{
    (void)arg;
    bs_ch = make_chan(sizeof(int64_t), 0);
    int64_t parked = gort_go(block_on_chan, NULL);
    await_waiting("chan receive", parked, 1);
    closed_ch = make_chan(sizeof(int64_t), 1);
    gort_chan_close(closed_ch);
    say("parked %lld\n", (long long)parked);
    gort_go(send_on_closed, NULL);
    gort_sleep(60 * SEC);
    say("survived\n");
}

TEST_HIDDEN(fatal_child)
{
    gort_main(fatal_main, NULL);
}

struct fatal_run {
    struct test_child r;
    long long parked, bad;
    char *bad_entry;    /* the failing goroutine's entry, or NULL */
};

static void run_fatal(const char *traceback, struct fatal_run *f)
{
    char env[64];
    snprintf(env, sizeof env, "GORTTRACEBACK=%s", traceback);
    const char *const envs[] = {env, NULL};
    run_death("fatal_child", traceback ? envs : NULL, &f->r);
    CHECK_EQ(f->r.signal, SIGABRT);
    const char *p = strstr(f->r.out, "parked "), *b = strstr(f->r.out, "bad ");
    CHECK(p != NULL && b != NULL);
    CHECK_EQ(sscanf(p, "parked %lld", &f->parked), 1);
    CHECK_EQ(sscanf(b, "bad %lld", &f->bad), 1);
    CHECK_STR_CONTAINS(f->r.err,
                       "gort: fatal error: send on closed channel\n\n");
    char head[48];
    snprintf(head, sizeof head, "\n\ngoroutine %lld [running]:\n", f->bad);
    f->bad_entry = strstr(f->r.err, head) ? entry_of(f->r.err, f->bad) : NULL;
}

static void free_fatal(struct fatal_run *f)
{
    free(f->bad_entry);
    test_child_free(&f->r);
}

/* A fatal error's dump shows the failing goroutine's frames and the
 * others'. */
TEST(fatal_backtrace)
{
    struct fatal_run f;
    run_fatal(NULL, &f);
    /* The failing goroutine first, right after the message. */
    CHECK(f.bad_entry != NULL);
    const char *call = check_frame(f.bad_entry, "gort_chan_send", false);
    const char *fn = check_frame(f.bad_entry, "send_on_closed", false);
    CHECK(call < fn);
    CHECK_STR_CONTAINS(f.bad_entry, "created by fatal_main in goroutine 1\n");
    char *e = entry_of(f.r.err, f.parked);
    check_header(e, f.parked, "chan receive");
    check_frame(e, "block_on_chan", false);
    free(e);
    free_fatal(&f);
}

static void sigquit_none_main(void *arg)
{
    (void)arg;
    bs_ch = make_chan(sizeof(int64_t), 0);
    await_waiting("chan receive", gort_go(block_on_chan, NULL), 1);
    quit_self();
    gort_sleep(60 * SEC);
}

TEST_HIDDEN(sigquit_none_child)
{
    gort_main(sigquit_none_main, NULL);
}

/* GORTTRACEBACK=none|single|all|system for a fatal error and for SIGQUIT; a
 * bad value is reported. */
TEST_STATIC_ONLY(traceback_levels)
{
    struct fatal_run f;
    /* none: the message only. */
    run_fatal("none", &f);
    CHECK(strstr(f.r.err, "goroutine ") == NULL);
    free_fatal(&f);
    /* single: only the goroutine that failed. */
    run_fatal("single", &f);
    CHECK(f.bad_entry != NULL);
    check_frame(f.bad_entry, "send_on_closed", false);
    CHECK(strstr(f.r.err, "[chan receive]") == NULL);
    CHECK(strstr(f.r.err, "gort__park") == NULL);
    free_fatal(&f);
    /* all: every goroutine, gort's frames hidden. */
    run_fatal("all", &f);
    CHECK(f.bad_entry != NULL);
    CHECK_STR_CONTAINS(f.r.err, "[chan receive]");
    CHECK(strstr(f.r.err, "gort__park") == NULL);
    free_fatal(&f);
    /* system: with gort's frames. */
    run_fatal("system", &f);
    CHECK(f.bad_entry != NULL);
    CHECK_STR_CONTAINS(f.r.err, "[chan receive]");
    CHECK_STR_CONTAINS(f.r.err, "\ngort__park(...)\n\t");
    CHECK_STR_CONTAINS(f.r.err, "\ngostart(...)\n\t");
    free_fatal(&f);
    /* A bad value is reported; the default (all) holds. */
    run_fatal("crash", &f);
    CHECK_STR_CONTAINS(f.r.err, "gort: GORTTRACEBACK=\"crash\" is not a valid "
                                "traceback level (want none, single, all "
                                "or system); using all\n");
    CHECK(f.bad_entry != NULL);
    CHECK_STR_CONTAINS(f.r.err, "[chan receive]");
    free_fatal(&f);
    /* SIGQUIT with none: the signal's lines, no goroutine, exit 2. */
    struct test_child r;
    const char *const env[] = {"GORTTRACEBACK=none", NULL};
    test_run_child("sigquit_none_child", env, 60, &r);
    CHECK_EQ(r.exit_code, 2);
    CHECK(strncmp(r.err, "SIGQUIT: quit\nPC=0x", 19) == 0);
    CHECK(strstr(r.err, "goroutine ") == NULL);
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * unwind_corrupt (white-box)
 * ------------------------------------------------------------------------- */

#ifndef GORT_TEST_SHARED
#define STK 2048
static uintptr_t stk[STK] __attribute__((aligned(16)));

static int walk(uintptr_t pc, size_t fpidx, int max, bool *more,
                uintptr_t *pcs, uint8_t *traps)
{
    struct tbstart s = {.lo = (uintptr_t)&stk[0],
                        .hi = (uintptr_t)&stk[STK],
                        .pc = pc,
                        .fp = (uintptr_t)&stk[fpidx]};
    return gort__unwind(&s, pcs, traps, max, more);
}

/* Frame records at idx[0..n) linking upward, the last ending the chain;
 * record k returns to pc 0x1000 + k. */
static void chain(const size_t *idx, int n)
{
    memset(stk, 0, sizeof stk);
    for (int k = 0; k < n; k++) {
        stk[idx[k]] = k + 1 < n ? (uintptr_t)&stk[idx[k + 1]] : 0;
        stk[idx[k] + 1] = 0x1000 + (uintptr_t)k;
    }
}

/* The walker on fake stacks: exact frames of a good chain, and loops, backward
 * links, pointers out of the stack, misalignment, the frame limit, the
 * preemption trampoline and random words never fault. */
TEST(unwind_corrupt)
{
    uintptr_t pcs[GORT_TB_MAXFRAMES];
    uint8_t traps[GORT_TB_MAXFRAMES];
    bool more;
    size_t good[] = {10, 20, 30, 40, 50};
    /* A good chain: the first pc, then each record's return address. */
    chain(good, 5);
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 6);
    CHECK(!more);
    CHECK_EQ(pcs[0], 0x777);
    for (int k = 0; k < 5; k++)
        CHECK_EQ(pcs[k + 1], 0x1000 + k);
    /* Starting from a record: its return address comes first. */
    CHECK_EQ(walk(0, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 5);
    CHECK_EQ(pcs[0], 0x1000);
    /* A record linking to itself, or back down the stack. */
    chain(good, 5);
    stk[30] = (uintptr_t)&stk[30];
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 4);
    stk[30] = (uintptr_t)&stk[20];
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 4);
    /* Out of the stack, misaligned, straddling its top. */
    static uintptr_t elsewhere[4];
    stk[30] = (uintptr_t)elsewhere;
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 4);
    stk[30] = (uintptr_t)&stk[40] + 3;
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 4);
    stk[30] = (uintptr_t)&stk[STK - 1];
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 4);
    stk[30] = (uintptr_t)&stk[STK];
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 4);
    /* A zero return address ends the walk. */
    chain(good, 5);
    stk[31] = 0;
    CHECK_EQ(walk(0x777, 10, GORT_TB_MAXFRAMES, &more, pcs, traps), 3);
    /* A bad first record: nothing. */
    CHECK_EQ(walk(0, STK - 1, GORT_TB_MAXFRAMES, &more, pcs, traps), 0);
    CHECK_EQ(walk(0x777, STK, GORT_TB_MAXFRAMES, &more, pcs, traps), 1);
    /* More records than the limit: the limit, and more. */
    size_t many[300];
    for (int k = 0; k < 300; k++)
        many[k] = 4 + 4 * (size_t)k;
    chain(many, 300);
    CHECK_EQ(walk(0x777, 4, GORT_TB_MAXFRAMES, &more, pcs, traps),
             GORT_TB_MAXFRAMES);
    CHECK(more);
    CHECK_EQ(walk(0x777, 4, 5, &more, pcs, traps), 5);
    CHECK(more);
    /* An empty or inverted stack. */
    struct tbstart s = {.lo = 100, .hi = 100, .pc = 1, .fp = 100};
    CHECK_EQ(gort__unwind(&s, pcs, traps, 10, &more), 0);
    s.hi = 50;
    CHECK_EQ(gort__unwind(&s, pcs, traps, 10, &more), 0);
    /* The preemption trampoline continues in the copied signal context, when
     * it lies inside the stack; else the walk stops. */
    chain(good, 5);
    ucontext_t *uc = (ucontext_t *)&stk[200];
    memset(uc, 0, sizeof *uc);
#if defined(__x86_64__)
    uc->uc_mcontext.gregs[REG_RIP] = 0x4242;
    uc->uc_mcontext.gregs[REG_RBP] = (greg_t)(uintptr_t)&stk[20];
#else
    uc->uc_mcontext.pc = 0x4242;
    uc->uc_mcontext.regs[29] = (uintptr_t)&stk[20];
#endif
    stk[11] = (uintptr_t)gort__async_preempt_ret;
    s = (struct tbstart){.lo = (uintptr_t)&stk[0], .hi = (uintptr_t)&stk[STK],
                         .pc = 0x777, .fp = (uintptr_t)&stk[10],
                         .preemptctx = (uintptr_t)uc};
    CHECK_EQ(gort__unwind(&s, pcs, traps, GORT_TB_MAXFRAMES, &more), 6);
    CHECK_EQ(pcs[1], 0x4242);
    CHECK(traps[1] && !traps[0] && !traps[2]);
    CHECK_EQ(pcs[2], 0x1001);
    s.preemptctx = (uintptr_t)&stk[STK - 2];
    CHECK_EQ(gort__unwind(&s, pcs, traps, GORT_TB_MAXFRAMES, &more), 1);
    /* Random words, many pointing into the stack (some misaligned), from
     * random starts: the walk always ends inside the stack. */
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    int longest = 0;
    for (int iter = 0; iter < 20000; iter++) {
        /* All words anew every 64 walks, one word in between. */
        for (int k = 0; k < (iter % 64 ? 1 : STK); k++) {
            uint64_t r = xorshift(&seed);
            size_t i = iter % 64 ? (size_t)(r >> 32) % STK : (size_t)k;
            if (r % 3 == 0)
                stk[i] = (uintptr_t)xorshift(&seed);
            else
                stk[i] = (uintptr_t)&stk[r % STK] + (r % 17 == 0 ? 4 : 0);
        }
        size_t start = (size_t)(xorshift(&seed) % STK);
        int n = walk(xorshift(&seed) | 1, start, GORT_TB_MAXFRAMES, &more,
                     pcs, traps);
        CHECK_GE(n, 1);
        CHECK_LE(n, GORT_TB_MAXFRAMES);
        if (n > longest)
            longest = n;
    }
    CHECK_GT(longest, 3); /* the fuzz did walk chains */
}
#endif

/* ---------------------------------------------------------------------------
 * bad_fd
 * ------------------------------------------------------------------------- */

static void bad_fd_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_dump_goroutines(-1), -EBADF);
    CHECK_EQ(gort_dump_goroutines_grouped(-1), -EBADF);
    int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK_GE(ro, 0);
    CHECK_EQ(gort_dump_goroutines(ro), -EBADF);
    CHECK_EQ(gort_dump_goroutines_grouped(ro), -EBADF);
    close(ro);
    CHECK_EQ(gort_dump_goroutines(ro), -EBADF); /* closed */
}

/* -EBADF for negative and unwritable descriptors; dumps outside gort_main
 * print no goroutine. */
TEST_STATIC_ONLY(bad_fd)
{
    run_main(bad_fd_main, NULL);
    /* Outside gort_main: no goroutine to show, no error. */
    CHECK_EQ(gort_dump_goroutines(-1), -EBADF);
    int fd = memfd_create("gort-dump", MFD_CLOEXEC);
    CHECK_GE(fd, 0);
    CHECK_EQ(gort_dump_goroutines(fd), 0);
    CHECK_EQ(lseek(fd, 0, SEEK_END), 0);
    CHECK_EQ(gort_dump_goroutines_grouped(fd), 0);
    char *t = fd_text(fd);
    CHECK(strcmp(t, "goroutine profile: total 0\n") == 0);
    free(t);
}
