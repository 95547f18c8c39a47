/* SPDX-License-Identifier: MIT */
/*
 * test_lockthread.c - gort_lock_os_thread / gort_unlock_os_thread (Go's
 * LockOSThread): a locked goroutine runs only on its thread, and nothing
 * else runs there.
 */
#include "test_util.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/stat.h>

static int tid(void)
{
    return (int)syscall(SYS_gettid);
}

/* True while thread id t exists in this process. */
static bool thread_alive(int t)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", t);
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---------------------------------------------------------------------------
 * Busy goroutines that note every thread id they run on.
 * ------------------------------------------------------------------------- */

#define NBUSY 8

static int busy_stop;
static int locked_flag, locked_tid;
static int64_t busy_seen_while_locked, busy_violations, busy_rounds;
static int busy_violation_tid;
static gort_waitgroup busy_wg;

static void busy(void *arg)
{
    (void)arg;
    int64_t rounds = 0, seen = 0;
    while (!ATOMIC_LOAD(&busy_stop)) {
        for (int k = 0; k < 32; k++) {
            int f1 = __atomic_load_n(&locked_flag, __ATOMIC_SEQ_CST);
            int t = tid();
            int f2 = __atomic_load_n(&locked_flag, __ATOMIC_SEQ_CST);
            if (f1 && f2) {
                seen++;
                if (t == ATOMIC_LOAD(&locked_tid)) {
                    ATOMIC_INC(&busy_violations);
                    ATOMIC_STORE(&busy_violation_tid, t);
                }
            }
            gort_gosched();
        }
        rounds++;
        gort_sleep(20 * 1000); /* 20 us: park now and then too */
    }
    ATOMIC_ADD(&busy_seen_while_locked, seen);
    ATOMIC_ADD(&busy_rounds, rounds);
    gort_waitgroup_done(&busy_wg);
}

static void busy_start(int n)
{
    busy_stop = 0;
    busy_seen_while_locked = busy_violations = busy_rounds = 0;
    gort_waitgroup_add(&busy_wg, n);
    for (int i = 0; i < n; i++)
        CHECK_GT(gort_go(busy, NULL), 1);
}

static void busy_finish(void)
{
    ATOMIC_STORE(&busy_stop, 1);
    gort_waitgroup_wait(&busy_wg);
}

/* A partner answering v with v + 1 on unbuffered channels, n times. */
static gort_chan *ping, *pong;

static void partner(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int i = 0; i < n; i++)
        send_i64(pong, recv_i64(ping) + 1);
    gort_waitgroup_done(&busy_wg);
}

/* One round trip through gosched, a sleep and the partner, checking the
 * thread id after each. */
static void stay_round(int want, int i)
{
    gort_gosched();
    CHECK_EQ(tid(), want);
    gort_sleep(50 * 1000);
    CHECK_EQ(tid(), want);
    send_i64(ping, i);
    CHECK_EQ(tid(), want);
    CHECK_EQ(recv_i64(pong), i + 1);
    CHECK_EQ(tid(), want);
}

/* ---------------------------------------------------------------------------
 * tid_stable
 * ------------------------------------------------------------------------- */

#define ROUNDS 200

static gort_waitgroup locked_wg;

static void locked_g(void *arg)
{
    (void)arg;
    gort_lock_os_thread();
    int me = tid();
    ATOMIC_STORE(&locked_tid, me);
    ATOMIC_STORE(&locked_flag, 1);
    for (int i = 0; i < ROUNDS; i++)
        stay_round(me, i);
    ATOMIC_STORE(&locked_flag, 0);
    gort_unlock_os_thread();
    gort_waitgroup_done(&locked_wg);
}

static void tid_stable_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    ping = make_chan(sizeof(int64_t), 0);
    pong = make_chan(sizeof(int64_t), 0);
    busy_start(NBUSY);
    gort_waitgroup_add(&busy_wg, 1);
    CHECK_GT(gort_go(partner, (void *)(intptr_t)ROUNDS), 1);
    gort_waitgroup_add(&locked_wg, 1);
    CHECK_GT(gort_go(locked_g, NULL), 1);
    gort_waitgroup_wait(&locked_wg);
    busy_finish();
    fprintf(stderr, "locked goroutine on thread %d for %d rounds; the %d "
                    "others made %lld rounds, %lld observations while it "
                    "was locked\n",
            locked_tid, ROUNDS, NBUSY, (long long)busy_rounds,
            (long long)busy_seen_while_locked);
    if (busy_violations)
        fprintf(stderr, "%lld times another goroutine ran on the locked "
                        "thread %d\n",
                (long long)busy_violations, busy_violation_tid);
    CHECK_EQ(busy_violations, 0);
    /* The others did run meanwhile (otherwise nothing was tested). */
    CHECK_GT(busy_seen_while_locked, 100);
    free_chan(ping);
    free_chan(pong);
}

/* A locked goroutine keeps its thread id over 200 rounds of gosched, sleep and
 * channel send/receive with a partner, while 8 other goroutines yielding on
 * 2 Ps record the thread ids they run on: none of them ever runs on the locked
 * thread while it is locked. */
TEST(tid_stable)
{
    run_main(tid_stable_main, NULL);
}

/* ---------------------------------------------------------------------------
 * nesting
 * ------------------------------------------------------------------------- */

static int nest_last_tid;

static void nest_g(void *arg)
{
    (void)arg;
    gort_lock_os_thread();
    gort_lock_os_thread();
    gort_unlock_os_thread(); /* depth 1: still locked */
    int me = tid();
    ATOMIC_STORE(&locked_tid, me);
    ATOMIC_STORE(&locked_flag, 1);
    for (int i = 0; i < 50; i++)
        stay_round(me, i);
    ATOMIC_STORE(&locked_flag, 0);
    gort_unlock_os_thread(); /* depth 0 */
    /* Past zero: no-ops. */
    gort_unlock_os_thread();
    gort_unlock_os_thread();
    for (int i = 50; i < 60; i++) {
        gort_gosched();
        send_i64(ping, i);
        CHECK_EQ(recv_i64(pong), i + 1);
        gort_sleep(50 * 1000);
    }
    /* One lock is one level again, not a climb back from below zero. */
    gort_lock_os_thread();
    me = tid();
    ATOMIC_STORE(&locked_tid, me);
    ATOMIC_STORE(&locked_flag, 1);
    for (int i = 60; i < 110; i++)
        stay_round(me, i);
    ATOMIC_STORE(&locked_flag, 0);
    gort_unlock_os_thread();
    ATOMIC_STORE(&nest_last_tid, tid());
    gort_waitgroup_done(&locked_wg);
    /* Returns unlocked: the thread must not go with it. */
}

static void nesting_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    ping = make_chan(sizeof(int64_t), 0);
    pong = make_chan(sizeof(int64_t), 0);
    busy_start(4);
    gort_waitgroup_add(&busy_wg, 1);
    CHECK_GT(gort_go(partner, (void *)(intptr_t)110), 1);
    gort_waitgroup_add(&locked_wg, 1);
    CHECK_GT(gort_go(nest_g, NULL), 1);
    gort_waitgroup_wait(&locked_wg);
    busy_finish();
    CHECK_EQ(busy_violations, 0);
    /* The goroutine ended unlocked, so its last thread lives on (an exit
     * while locked would have ended it: exit_locked_ends_thread). */
    int t = ATOMIC_LOAD(&nest_last_tid);
    gort_sleep(200 * MS);
    if (!thread_alive(t))
        fprintf(stderr, "thread %d of a goroutine that ended unlocked is "
                        "gone: unlocks past zero left it locked?\n", t);
    CHECK(thread_alive(t));
    free_chan(ping);
    free_chan(pong);
}

/* Lock twice, unlock once: still locked (the thread id holds with busy
 * goroutines around); unlocks past zero are harmless: a later lock/unlock pair
 * works as one level and the goroutine ends unlocked (its thread lives on). */
TEST(nesting)
{
    /* Outside the runtime: harmless no-ops. */
    gort_unlock_os_thread();
    run_main(nesting_main, NULL);
}

/* ---------------------------------------------------------------------------
 * exit_locked_ends_thread
 * ------------------------------------------------------------------------- */

static gort_chan *exit_ch;

static void exit_locked_g(void *arg)
{
    (void)arg;
    gort_lock_os_thread();
    gort_sleep(MS); /* parked while locked, woken on its thread */
    int64_t me = tid();
    if (me == getpid()) {
        /* On the thread that called gort_main, which must survive to
         * return from it: not this case's subject; try again. */
        gort_unlock_os_thread();
        send_i64(exit_ch, 0);
        return;
    }
    send_i64(exit_ch, me);
    /* Returns locked. */
}

static int64_t exit_count;
static gort_waitgroup exit_wg;

static void exit_after(void *arg)
{
    (void)arg;
    ATOMIC_INC(&exit_count);
    gort_waitgroup_done(&exit_wg);
}

static void exit_locked_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    /* Main keeps the main thread to itself, so that the goroutines below
     * run on other threads (main_locked_on_main_thread checks this). */
    gort_lock_os_thread();
    exit_ch = make_chan(sizeof(int64_t), 0);
    int done = 0, on_main_thread = 0;
    for (int attempt = 0; attempt < 30 && done < 3; attempt++) {
        CHECK_GT(gort_go(exit_locked_g, NULL), 1);
        int t = (int)recv_i64(exit_ch);
        if (t == 0) {
            on_main_thread++;
            continue;
        }
        int64_t t0 = gort_nanotime();
        while (thread_alive(t) && gort_nanotime() - t0 < 1000 * MS)
            gort_sleep(2 * MS);
        int64_t waited = gort_nanotime() - t0;
        fprintf(stderr, "thread %d of the goroutine that exited locked: %s "
                        "after %.1f ms\n",
                t, thread_alive(t) ? "still there" : "gone",
                (double)waited / 1e6);
        CHECK(!thread_alive(t));
        done++;
    }
    if (on_main_thread)
        fprintf(stderr, "%d goroutines ran on the main thread, which main "
                        "had locked\n",
                on_main_thread);
    CHECK_EQ(on_main_thread, 0);
    CHECK_EQ(done, 3);
    /* The runtime goes on. */
    exit_count = 0;
    gort_waitgroup_add(&exit_wg, 200);
    for (int i = 0; i < 200; i++)
        CHECK_GT(gort_go(exit_after, NULL), 1);
    gort_waitgroup_wait(&exit_wg);
    CHECK_EQ(exit_count, 200);
    free_chan(exit_ch);
    gort_unlock_os_thread();
}

/* A goroutine that returns while locked takes its thread with it: the
 * thread id leaves /proc/self/task within 1 s (three times), and the
 * runtime keeps working (main is locked to the main thread meanwhile, which
 * must survive). */
TEST(exit_locked_ends_thread)
{
    run_main(exit_locked_main, NULL);
}

/* ---------------------------------------------------------------------------
 * main_locked_on_main_thread
 * ------------------------------------------------------------------------- */

static void main_locked_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    ping = make_chan(sizeof(int64_t), 0);
    pong = make_chan(sizeof(int64_t), 0);
    busy_start(4);
    /* Sleeps and yields first: main may move off the first thread. */
    int moved = 0;
    for (int i = 0; i < 100; i++) {
        if (i % 2)
            gort_sleep(100 * 1000);
        else
            gort_gosched();
        moved += tid() != getpid();
    }
    fprintf(stderr, "main ran off the main thread after %d of 100 yields "
                    "before locking\n",
            moved);
    gort_waitgroup_add(&busy_wg, 1);
    CHECK_GT(gort_go(partner, (void *)(intptr_t)100), 1);
    gort_lock_os_thread();
    ATOMIC_STORE(&locked_tid, (int)getpid());
    ATOMIC_STORE(&locked_flag, 1);
    if (tid() != getpid())
        fprintf(stderr, "locked main goroutine on thread %d, not the main "
                        "thread %d\n",
                tid(), (int)getpid());
    CHECK_EQ(tid(), getpid());
    for (int i = 0; i < 100; i++)
        stay_round(getpid(), i);
    ATOMIC_STORE(&locked_flag, 0);
    gort_unlock_os_thread();
    busy_finish();
    CHECK_EQ(busy_violations, 0);
    free_chan(ping);
    free_chan(pong);
}

/* The main goroutine, after sleeps and yields that may move it, locks: it is
 * then on the thread that called gort_main (tid == pid) and stays there over
 * sleeps and channel operations. */
TEST(main_locked_on_main_thread)
{
    CHECK_EQ(tid(), getpid()); /* the test's main thread calls gort_main */
    run_main(main_locked_main, NULL);
}
