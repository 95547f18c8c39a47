/* SPDX-License-Identifier: MIT */
/*
 * test_gdbtarget.c - the program that tests/gdb_test.sh debugs with
 * tools/gort-gdb.py.  It is not a ctest case by itself: gdb_test.sh runs
 * `test_gdbtarget target` under gdb, attaches to it, and reads its cores.
 *
 * The case puts goroutines in every state the script must show:
 *
 *   gdbtarget_main     the main goroutine, running (it stops the process)
 *   block_on_chan      waiting [chan receive]
 *   block_on_mutex     waiting [sync.Mutex.Lock]
 *   block_in_sleep     waiting [sleep]
 *   block_on_pipe      waiting [IO wait] (the network poller)
 *   block_in_syscall   syscall, on its own thread, in read(2)
 *   spin_pinned        running a loop with preemption disabled: it holds
 *                      one of the two Ps for good
 *   spin_preemptible   runnable: a loop without calls, taken off its P by
 *                      the preemption signal (not under ThreadSanitizer,
 *                      where signal preemption is off and the loop would
 *                      keep the main goroutine from running)
 *   spin_deep          the same 95% deep in its stack (GORTSTACKSIZE is
 *                      set to 128 KiB), preempted on its own preemption
 *                      stack; its backtrace starts in the loop and goes
 *                      down through the recursion that got it there
 *   never_started      runnable, never run, no stack yet
 *   exit_at_once       dead, and so not listed
 *
 * Before it stops, it writes what gdb must show to the file named by
 * GORT_GDB_EXPECT, one line per goroutine:
 *
 *   G|goid|mark|status|wait reason|start function|function in its backtrace
 *
 * (mark "*" when the goroutine is on a thread, "-" when not; "-" for no
 * wait reason), "D|goid" for the dead one, then "END".  Then it stops:
 * by default the whole process with SIGSTOP, for gdb to attach to; with
 * GORT_GDB_STOP=trap with SIGTRAP, which gdb running it catches (gdb takes
 * a SIGSTOP a process sends itself for its own); with GORT_GDB_STOP=abort
 * by abort(), for a core dump (qemu-user writes the core of an emulated
 * program itself).
 *
 * With GOMAXPROCS 2, spin_pinned on one P and the main goroutine on the
 * other, nothing else can run: the states above hold until the stop.  The
 * main goroutine disables preemption and makes no gort call that could
 * yield in its last steps, so that the never-started goroutine stays that
 * way.  (A plain thread starts that one, and exits: its own G, dead, is
 * not listed either.)
 */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static gort_chan *never_sent;
static gort_mutex held;
static int io_pipe[2], sys_pipe[2];
static uint64_t pinned_loops, preemptible_loops, deep_loops; /* atomic */
static int64_t goids[16];

enum { CHAN, MUTEX, SLEEP, PIPE, SYSCALL, PINNED, PREEMPTIBLE, DEEP };

static void record_goid(int which)
{
    ATOMIC_STORE(&goids[which], gort_goid());
}

__attribute__((noinline)) static void block_on_chan(void *arg)
{
    record_goid(CHAN);
    int64_t v;
    gort_chan_recv(never_sent, &v);
}

__attribute__((noinline)) static void block_on_mutex(void *arg)
{
    record_goid(MUTEX);
    gort_mutex_lock(&held);
    gort_mutex_unlock(&held);
}

__attribute__((noinline)) static void block_in_sleep(void *arg)
{
    record_goid(SLEEP);
    gort_sleep(3600 * 1000 * MS);
    __asm__ volatile("" ::: "memory"); /* no tail call: keep this frame */
}

__attribute__((noinline)) static void block_on_pipe(void *arg)
{
    record_goid(PIPE);
    char c;
    gort_read(io_pipe[0], &c, 1);
}

__attribute__((noinline)) static void block_in_syscall(void *arg)
{
    record_goid(SYSCALL);
    char c;
    long n = GORT_BLOCKING(read(sys_pipe[0], &c, 1));
    (void)n;
}

__attribute__((noinline)) static void spin_pinned(void *arg)
{
    record_goid(PINNED);
    gort_preempt_disable();
    /* It never leaves this thread now, and the preemption signal sysmon
     * keeps sending would only find preemption off: block it, so that
     * the stop never catches the thread inside the handler (gdb cannot
     * unwind through qemu-user's signal frames). */
    sigset_t urg;
    sigemptyset(&urg);
    sigaddset(&urg, SIGURG);
    CHECK_EQ(pthread_sigmask(SIG_BLOCK, &urg, NULL), 0);
    for (;;)
        ATOMIC_INC(&pinned_loops);
}

__attribute__((noinline, unused)) static void spin_preemptible(void *arg)
{
    record_goid(PREEMPTIBLE);
    for (;;)
        ATOMIC_INC(&preemptible_loops);
}

#define DEEP_STACK (128 * 1024)

static int deep_stop; /* never set: the process stops first */

__attribute__((noinline, unused)) static void spin_deep(void)
{
    while (!ATOMIC_LOAD(&deep_stop))
        ATOMIC_INC(&deep_loops);
}

/* Recurse in frames of about 512 bytes until 5% of the stack is left. */
__attribute__((noinline, unused)) static void go_deep(uintptr_t lo,
                                                      volatile char *prev)
{
    volatile char pad[512];
    pad[0] = prev ? prev[0] : 1;
    if ((uintptr_t)pad - lo > DEEP_STACK / 20 + sizeof pad)
        go_deep(lo, pad);
    else
        spin_deep();
    __asm__ __volatile__("" ::"r"(pad) : "memory");
}

__attribute__((noinline, unused)) static void spin_deep_start(void *arg)
{
    record_goid(DEEP);
    /* The stack's top is the page above this first frame. */
    volatile char here;
    uintptr_t top = ((uintptr_t)&here + 4095) & ~(uintptr_t)4095;
    go_deep(top - DEEP_STACK, NULL);
}

__attribute__((noinline)) static void never_started(void *arg)
{
    abort(); /* never reached: the process stops before it can run */
}

static void *start_never_started(void *fresh)
{
    *(int64_t *)fresh = gort_go(never_started, (void *)0x1234);
    return NULL;
}

static void exit_at_once(void *arg)
{
    gort_chan_send(arg, &(int64_t){1});
}

/* The goroutine dump lists goroutine goid (dead ones are left out). */
static bool in_dump(int64_t goid)
{
    char *text = dump_text();
    char want[64];
    snprintf(want, sizeof want, "goroutine %lld [", (long long)goid);
    bool found = false;
    for (const char *p = text; p && *p && !found;) {
        found = strncmp(p, want, strlen(want)) == 0;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    free(text);
    return found;
}

static int64_t await_goid(int which)
{
    while (ATOMIC_LOAD(&goids[which]) == 0)
        gort_gosched();
    return ATOMIC_LOAD(&goids[which]);
}

static void expect(FILE *f, int64_t goid, bool onthread, const char *status,
                   const char *reason, const char *fn, const char *btfn)
{
    fprintf(f, "G|%lld|%s|%s|%s|%s|%s\n", (long long)goid,
            onthread ? "*" : "-", status, reason, fn, btfn);
}

__attribute__((noinline)) static void gdbtarget_main(void *arg)
{
    gort_gomaxprocs(2); /* a stop-the-world: before any spinner */
    CHECK_EQ(gort_gomaxprocs(0), 2);
    CHECK_EQ(gort_chan_make(&never_sent, sizeof(int64_t), 0), 0);
    CHECK_EQ(gort_pipe(io_pipe), 0);
    CHECK_EQ(pipe(sys_pipe), 0);
    gort_mutex_lock(&held);

    gort_chan *done = make_chan(sizeof(int64_t), 1);
    int64_t dead = gort_go(exit_at_once, done);
    CHECK_GT(dead, 0);
    CHECK_EQ(recv_i64(done), 1);
    while (in_dump(dead))
        gort_gosched();

    CHECK_GT(gort_go(block_on_chan, NULL), 0);
    CHECK_GT(gort_go(block_on_mutex, NULL), 0);
    CHECK_GT(gort_go(block_in_sleep, NULL), 0);
    CHECK_GT(gort_go(block_on_pipe, NULL), 0);
    CHECK_GT(gort_go(block_in_syscall, NULL), 0);
    await_waiting("chan receive", await_goid(CHAN), 1);
    await_waiting("sync.Mutex.Lock", await_goid(MUTEX), 1);
    await_waiting("sleep", await_goid(SLEEP), 1);
    await_waiting("IO wait", await_goid(PIPE), 1);
    await_waiting("syscall", await_goid(SYSCALL), 1);

    CHECK_GT(gort_go(spin_pinned, NULL), 0);
    while (ATOMIC_LOAD(&pinned_loops) == 0)
        gort_gosched();
#if !TSAN
    CHECK_GT(gort_go(spin_preemptible, NULL), 0);
    while (ATOMIC_LOAD(&preemptible_loops) == 0)
        gort_gosched();
    CHECK_GT(gort_go(spin_deep_start, NULL), 0);
    while (ATOMIC_LOAD(&deep_loops) == 0)
        gort_gosched();
#endif

    /* From here on this goroutine keeps its P (no preemption signal, no
     * gort call that may yield: gort_goid only reads), so nothing else
     * runs.  The goroutine that must never start comes from a plain
     * thread, whose gort_go queues it globally, where no P looks: a
     * gort_go here would put it in runnext and yield to it if sysmon had
     * just asked this goroutine to yield. */
    gort_preempt_disable();
    int64_t fresh = 0;
    pthread_t starter;
    CHECK_EQ(pthread_create(&starter, NULL, start_never_started, &fresh), 0);
    CHECK_EQ(pthread_join(starter, NULL), 0);
    CHECK_GT(fresh, 0);

    const char *path = getenv("GORT_GDB_EXPECT");
    FILE *f = path ? fopen(path, "w") : stdout;
    CHECK(f != NULL);
    expect(f, gort_goid(), true, "running", "-", "gdbtarget_main",
           "gdbtarget_main");
    expect(f, goids[CHAN], false, "waiting", "chan receive", "block_on_chan",
           "block_on_chan");
    expect(f, goids[MUTEX], false, "waiting", "sync.Mutex.Lock",
           "block_on_mutex", "block_on_mutex");
    expect(f, goids[SLEEP], false, "waiting", "sleep", "block_in_sleep",
           "block_in_sleep");
    expect(f, goids[PIPE], false, "waiting", "IO wait", "block_on_pipe",
           "block_on_pipe");
    expect(f, goids[SYSCALL], true, "syscall", "-", "block_in_syscall",
           "block_in_syscall");
    expect(f, goids[PINNED], true, "running", "-", "spin_pinned",
           "spin_pinned");
#if !TSAN
    expect(f, goids[PREEMPTIBLE], false, "runnable", "-", "spin_preemptible",
           "spin_preemptible");
    expect(f, goids[DEEP], false, "runnable", "-", "spin_deep_start",
           "spin_deep");
#endif
    expect(f, fresh, false, "runnable", "-", "never_started",
           "never_started");
    fprintf(f, "D|%lld\nEND\n", (long long)dead);
    CHECK_EQ(f == stdout ? fflush(f) : fclose(f), 0);

    const char *stop = getenv("GORT_GDB_STOP");
    if (stop && strcmp(stop, "abort") == 0) {
        signal(SIGABRT, SIG_DFL);
        abort();
    }
    /* raise, not kill(getpid()): a signal sent to this thread stops it
     * before raise returns, where one sent to the process may be taken by
     * another thread while this one goes on. */
    raise(stop && strcmp(stop, "trap") == 0 ? SIGTRAP : SIGSTOP);
    /* Resumed (gdb continued, or SIGCONT): end here, leaving the
     * goroutines as they are. */
    _exit(0);
}

/* The program gdb_test.sh debugs (see the top of this file); hidden, so no
 * ctest entry of its own. */
TEST_HIDDEN(target)
{
    char size[32];
    snprintf(size, sizeof size, "%d", DEEP_STACK);
    setenv("GORTSTACKSIZE", size, 1);
    run_main(gdbtarget_main, NULL);
}
