/* SPDX-License-Identifier: MIT */
/*
 * test_deadline.c - blocking calls with a deadline (gort.h, "Deadlines"):
 * channel send and receive, select, sleep and the descriptor deadline in
 * gort_deadline; timeouts, values that come first, passed, zero and huge
 * deadlines, bad arguments, no stale firing, no allocation per call, and
 * deadlines racing completion.
 */
#include "test_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SECOND (1000 * MS)

static int64_t now_ns(void)
{
    return gort_nanotime();
}

/* ---------------------------------------------------------------------------
 * The deadline type.
 * ------------------------------------------------------------------------- */

TEST(deadline_makers)
{
    CHECK_EQ(gort_no_deadline().at, 0);
    CHECK_EQ(gort_deadline_at(12345).at, 12345);
    /* An absolute time at or before the clock's start has passed. */
    CHECK_EQ(gort_deadline_at(0).at, 1);
    CHECK_EQ(gort_deadline_at(-5).at, 1);
    int64_t t0 = gort_nanotime();
    gort_deadline d = gort_deadline_in(MS);
    CHECK_GE(d.at, t0 + MS);
    CHECK_LE(d.at, gort_nanotime() + MS);
    /* Zero and negative: now (passed); too far: saturated (none). */
    CHECK_LE(gort_deadline_in(0).at, gort_nanotime());
    CHECK_LE(gort_deadline_in(-MS).at, gort_nanotime());
    CHECK_EQ(gort_deadline_in(INT64_MAX).at, INT64_MAX);
}

/* ---------------------------------------------------------------------------
 * Receive and send.
 * ------------------------------------------------------------------------- */

static void recv_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 0);
    int v = -1;
    /* Nothing comes: -ETIMEDOUT after the deadline, elem untouched. */
    int64_t t0 = now_ns();
    CHECK_EQ(gort_chan_recv_until(ch, &v, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    int64_t took = now_ns() - t0;
    CHECK_GE(took, 20 * MS);
    CHECK_LT(took, 2000 * MS);
    CHECK_EQ(v, -1);
    /* A buffered value is taken before a passed deadline. */
    gort_chan *b = make_chan(sizeof(int), 1);
    int seven = 7;
    gort_chan_send(b, &seven);
    CHECK_EQ(gort_chan_recv_until(b, &v, gort_deadline_in(-1)), 1);
    CHECK_EQ(v, 7);
    /* A passed deadline on an empty channel: at once, no park. */
    t0 = now_ns();
    CHECK_EQ(gort_chan_recv_until(b, &v, gort_deadline_at(1)), -ETIMEDOUT);
    CHECK_LT(now_ns() - t0, 1000 * MS);
    /* Closed and drained: 0, elem zeroed. */
    gort_chan_close(b);
    v = 9;
    CHECK_EQ(gort_chan_recv_until(b, &v, gort_deadline_in(SECOND)), 0);
    CHECK_EQ(v, 0);
    /* NULL channel: never ready, so the deadline. */
    CHECK_EQ(gort_chan_recv_until(NULL, &v, gort_deadline_in(MS)),
             -ETIMEDOUT);
    free_chan(ch);
    free_chan(b);
}

/* A receive with a deadline: -ETIMEDOUT no earlier than the deadline,
 * a buffered value before a passed deadline, a passed deadline on an empty
 * channel at once, a closed channel's 0 and zeroed element, and a NULL
 * channel waiting until the deadline. */
TEST(recv_until)
{
    run_main(recv_main, NULL);
}

static gort_chan *late_ch;

static void late_sender(void *arg)
{
    (void)arg;
    gort_sleep(10 * MS);
    int v = 42;
    gort_chan_send(late_ch, &v);
}

static void value_first_main(void *arg)
{
    (void)arg;
    late_ch = make_chan(sizeof(int), 0);
    CHECK_GT(gort_go(late_sender, NULL), 0);
    int v = 0;
    int64_t t0 = now_ns();
    CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_deadline_in(10 * SECOND)),
             1);
    CHECK_EQ(v, 42);
    CHECK_LT(now_ns() - t0, 5 * SECOND);
    /* The timer was stopped: a later wait is not cut short by it. */
    t0 = now_ns();
    CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_deadline_in(30 * MS)),
             -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 30 * MS);
    /* No deadline, and a huge one: both wait for the value. */
    CHECK_GT(gort_go(late_sender, NULL), 0);
    CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_no_deadline()), 1);
    CHECK_GT(gort_go(late_sender, NULL), 0);
    CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_deadline_in(INT64_MAX)),
             1);
    free_chan(late_ch);
}

/* A value that comes before the deadline is received; the deadline then
 * does not cut a later wait short; no deadline and a huge one wait. */
TEST(value_before_deadline)
{
    run_main(value_first_main, NULL);
}

static void earlier_main(void *arg)
{
    (void)arg;
    late_ch = make_chan(sizeof(int), 0);
    int v = 0;
    /* A value within a deadline 10 s away: the timer stays pending then,
     * 10 s away. */
    CHECK_GT(gort_go(late_sender, NULL), 0);
    CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_deadline_in(10 * SECOND)),
             1);
    /* An earlier deadline: timed out on time, not at the pending 10 s. */
    int64_t t0 = now_ns();
    CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    int64_t took = now_ns() - t0;
    CHECK_GE(took, 20 * MS);
    CHECK_LT(took, 5 * SECOND);
    /* Deadlines moving on: each wait's own passes, whatever the last. */
    for (int i = 1; i <= 5; i++) {
        t0 = now_ns();
        CHECK_EQ(gort_chan_recv_until(late_ch, &v, gort_deadline_in(i * MS)),
                 -ETIMEDOUT);
        CHECK_GE(now_ns() - t0, i * MS);
    }
    free_chan(late_ch);
}

/* A deadline earlier than the one the goroutine's timer is pending for
 * (a value came before a 10 s deadline) times out at its own time; and
 * deadlines moving later each time out at theirs. */
TEST(earlier_deadline_after_later)
{
    run_main(earlier_main, NULL);
}

static void send_main(void *arg)
{
    (void)arg;
    gort_chan *full = make_chan(sizeof(int), 1);
    int v = 1;
    CHECK_EQ(gort_chan_send_until(full, &v, gort_deadline_in(SECOND)), 0);
    int64_t t0 = now_ns();
    CHECK_EQ(gort_chan_send_until(full, &v, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 20 * MS);
    CHECK_EQ(gort_chan_len(full), 1);
    /* Room again: the send goes through. */
    CHECK(gort_chan_recv(full, &v));
    v = 2;
    CHECK_EQ(gort_chan_send_until(full, &v, gort_deadline_at(1)), 0);
    CHECK(gort_chan_recv(full, &v));
    CHECK_EQ(v, 2);
    free_chan(full);
}

/* A send on a full channel times out and leaves it as it was; a send that
 * has room goes through even with a passed deadline. */
TEST(send_until)
{
    run_main(send_main, NULL);
}

/* ---------------------------------------------------------------------------
 * select.
 * ------------------------------------------------------------------------- */

#define MANY 12

static void select_main(void *arg)
{
    (void)arg;
    gort_chan *a = make_chan(sizeof(int), 0), *b = make_chan(sizeof(int), 1);
    int va = 0, vb = 0;
    gort_case cs[2] = {{.ch = a, .dir = GORT_CASE_RECV, .elem = &va},
                       {.ch = b, .dir = GORT_CASE_RECV, .elem = &vb}};
    int64_t t0 = now_ns();
    CHECK_EQ(gort_select_until(cs, 2, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 20 * MS);
    int three = 3;
    gort_chan_send(b, &three);
    CHECK_EQ(gort_select_until(cs, 2, gort_deadline_in(SECOND)), 1);
    CHECK_EQ(vb, 3);
    CHECK(cs[1].ok);
    gort_chan_close(b);
    cs[1].ok = true;
    CHECK_EQ(gort_select_until(cs, 2, gort_deadline_in(SECOND)), 1);
    CHECK(!cs[1].ok);
    /* More cases than fit on the stack. */
    gort_chan *many[MANY];
    gort_case mc[MANY];
    int mv[MANY];
    for (int i = 0; i < MANY; i++) {
        many[i] = make_chan(sizeof(int), 1);
        mc[i] = (gort_case){.ch = many[i], .dir = GORT_CASE_RECV,
                            .elem = &mv[i]};
    }
    CHECK_EQ(gort_select_until(mc, MANY, gort_deadline_in(5 * MS)),
             -ETIMEDOUT);
    int eleven = 11;
    gort_chan_send(many[MANY - 1], &eleven);
    CHECK_EQ(gort_select_until(mc, MANY, gort_deadline_in(SECOND)),
             MANY - 1);
    CHECK_EQ(mv[MANY - 1], 11);
    CHECK(mc[MANY - 1].ok);
    for (int i = 0; i < MANY; i++)
        free_chan(many[i]);
    /* A default case: gort_select, whatever the deadline. */
    gort_case wd[2] = {{.ch = a, .dir = GORT_CASE_RECV, .elem = &va},
                       {.dir = GORT_CASE_DEFAULT}};
    CHECK_EQ(gort_select_until(wd, 2, gort_deadline_in(10 * SECOND)), 1);
    /* No cases: the deadline. */
    CHECK_EQ(gort_select_until(NULL, 0, gort_deadline_in(MS)), -ETIMEDOUT);
    free_chan(a);
    free_chan(b);
}

/* select with a deadline: -ETIMEDOUT when no case is ready in time, the
 * ready case and its ok otherwise (a closed channel's too), more cases
 * than fit on the stack, a default case making the deadline moot, no
 * cases waiting until the deadline. */
TEST(select_until)
{
    run_main(select_main, NULL);
}

static void bad_args_main(void *arg)
{
    (void)arg;
    gort_case c = {.dir = GORT_CASE_RECV};
    gort_deadline d = gort_deadline_in(SECOND);
    CHECK_EQ(gort_select_until(&c, -1, d), -EINVAL);
    CHECK_EQ(gort_select_until(&c, 65536, d), -EINVAL);
    CHECK_EQ(gort_select_until(NULL, 1, d), -EINVAL);
    c.dir = 99;
    CHECK_EQ(gort_select_until(&c, 1, d), -EINVAL);
    CHECK_EQ(gort_fd_deadline(0, 0, d), -EINVAL);
    CHECK_EQ(gort_fd_deadline(0, 4, d), -EINVAL);
    /* An unregistered descriptor. */
    CHECK_EQ(gort_fd_deadline(999, GORT_FD_READ, d), -EBADF);
}

/* Bad arguments return -EINVAL (a negative or too large count, NULL cases,
 * an unknown direction, no or unknown descriptor directions) and an
 * unregistered descriptor -EBADF. */
TEST(bad_args)
{
    run_main(bad_args_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Sleep and descriptors.
 * ------------------------------------------------------------------------- */

static void sleep_fd_main(void *arg)
{
    (void)arg;
    int64_t t0 = now_ns();
    gort_sleep_until(gort_deadline_in(20 * MS));
    CHECK_GE(now_ns() - t0, 20 * MS);
    t0 = now_ns();
    gort_sleep_until(gort_no_deadline());
    gort_sleep_until(gort_deadline_at(1));
    CHECK_LT(now_ns() - t0, 1000 * MS);

    int p[2];
    CHECK_EQ(gort_pipe(p), 0);
    char c;
    /* t0 before the deadline is made: the deadline is 20 ms after a
     * clock reading of its own, which a slow first call (an emulator's
     * translation of new code) can put well after t0. */
    t0 = now_ns();
    CHECK_EQ(gort_fd_deadline(p[0], GORT_FD_READ, gort_deadline_in(20 * MS)),
             0);
    CHECK_EQ(gort_read(p[0], &c, 1), -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 20 * MS);
    /* Cleared: the read waits for the byte. */
    CHECK_EQ(gort_fd_deadline(p[0], GORT_FD_READ | GORT_FD_WRITE,
                              gort_no_deadline()),
             0);
    CHECK_EQ(gort_write(p[1], "z", 1), 1);
    CHECK_EQ(gort_read(p[0], &c, 1), 1);
    CHECK_EQ(c, 'z');
    /* A passed deadline: at once. */
    CHECK_EQ(gort_fd_deadline(p[0], GORT_FD_READ, gort_deadline_at(1)), 0);
    CHECK_EQ(gort_read(p[0], &c, 1), -ETIMEDOUT);
    CHECK_EQ(gort_close(p[0]), 0);
    CHECK_EQ(gort_close(p[1]), 0);
}

/* gort_sleep_until sleeps until the deadline (none and a passed one:
 * not at all); gort_fd_deadline sets, clears and expires a descriptor's
 * read deadline as gort_fd_set_deadline. */
TEST(sleep_and_fd)
{
    run_main(sleep_fd_main, NULL);
}

/* ---------------------------------------------------------------------------
 * No allocation per call; deadlines racing completion.
 * ------------------------------------------------------------------------- */

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;
    CHECK(f != NULL);
    CHECK_EQ(fscanf(f, "%ld %ld", &pages, &rss), 2);
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void loop_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 1);
    int v = 0, n = SANITIZED ? 20000 : 200000;
    /* Warm up (the goroutine's timer, the channel). */
    for (int i = 0; i < 100; i++)
        CHECK_EQ(gort_chan_recv_until(ch, &v, gort_deadline_in(1)),
                 -ETIMEDOUT);
    long before = rss_kb();
    int timeouts = 0;
    for (int i = 0; i < n; i++) {
        /* A value in 99 rounds of 100 (the timer armed, then stopped);
         * none in the 100th (the timer fires after 50 us). */
        bool empty = i % 100 == 99;
        if (!empty)
            gort_chan_send(ch, &i);
        int r = gort_chan_recv_until(ch, &v, empty ? gort_deadline_in(50000)
                                                   : gort_deadline_in(SECOND));
        timeouts += r == -ETIMEDOUT;
        if (r == 1)
            CHECK_EQ(v, i);
        else
            CHECK(empty);
    }
    CHECK_EQ(timeouts, n / 100);
    /* gort_after would have kept a timer and a channel a call: 200,000
     * of them are tens of megabytes.  (An emulator's code cache takes a
     * few megabytes; ThreadSanitizer's records of the synchronisation
     * more.) */
    if (!TSAN)
        CHECK_LT(rss_kb() - before, 8192);
    free_chan(ch);
}

/* A receive with a deadline in a loop, as Go code writes a select with
 * time.After: every value received, every empty round timed out, and the
 * process's memory does not grow (no timer or channel per call). */
TEST(loop_no_growth)
{
    run_main(loop_main, NULL);
}

#define RACERS 8
#define RACE_ROUNDS 2000
static gort_chan *race_ch;
static gort_waitgroup race_wg;
static long race_sent, race_recvd; /* atomic */

static void race_sender(void *arg)
{
    (void)arg;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        int v = i;
        if (gort_chan_send_until(race_ch, &v,
                                 gort_deadline_in((i % 5) * 20000)) == 0)
            __atomic_add_fetch(&race_sent, 1, __ATOMIC_RELAXED);
    }
    gort_waitgroup_done(&race_wg);
}

static void race_receiver(void *arg)
{
    (void)arg;
    for (int i = 0; i < RACE_ROUNDS; i++) {
        int v;
        int r = gort_chan_recv_until(race_ch, &v,
                                     gort_deadline_in((i % 7) * 15000));
        CHECK(r == 1 || r == -ETIMEDOUT);
        if (r == 1)
            __atomic_add_fetch(&race_recvd, 1, __ATOMIC_RELAXED);
    }
    gort_waitgroup_done(&race_wg);
}

static void race_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    race_ch = make_chan(sizeof(int), 0);
    gort_waitgroup_add(&race_wg, 2 * RACERS);
    for (int i = 0; i < RACERS; i++) {
        CHECK_GT(gort_go(race_sender, NULL), 0);
        CHECK_GT(gort_go(race_receiver, NULL), 0);
    }
    gort_waitgroup_wait(&race_wg);
    /* Unbuffered: a send succeeded exactly when a receive did. */
    CHECK_EQ(ATOMIC_LOAD(&race_sent), ATOMIC_LOAD(&race_recvd));
    CHECK_GT(ATOMIC_LOAD(&race_sent), 0);
    free_chan(race_ch);
}

/* Senders and receivers with deadlines of 0-80 us on one unbuffered
 * channel, on 4 Ps: every value a send delivered was received once, and
 * a send that timed out was received by nobody (the counts agree). */
TEST(deadlines_race_completion)
{
    run_main(race_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Wait groups and condition variables with a deadline.
 * ------------------------------------------------------------------------- */

static gort_waitgroup wg_wg;

static void wg_done_later(void *arg)
{
    gort_sleep((int64_t)(intptr_t)arg);
    gort_waitgroup_done(&wg_wg);
}

static void wg_main(void *arg)
{
    (void)arg;
    /* Counter zero: 0 at once, even with a passed deadline. */
    CHECK_EQ(gort_waitgroup_wait_until(&wg_wg, gort_deadline_in(-1)), 0);
    gort_waitgroup_add(&wg_wg, 1);
    /* Passed: at once, nothing counted. */
    CHECK_EQ(gort_waitgroup_wait_until(&wg_wg, gort_deadline_in(0)),
             -ETIMEDOUT);
    CHECK_EQ(wg_wg.state, (uint64_t)1 << 32);
    /* A wait that times out leaves no waiter counted behind. */
    int64_t t0 = now_ns();
    CHECK_EQ(gort_waitgroup_wait_until(&wg_wg, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 20 * MS);
    CHECK_EQ(wg_wg.state, (uint64_t)1 << 32);
    /* Done before the deadline: 0, and the group is reusable. */
    CHECK_GT(gort_go(wg_done_later, (void *)(intptr_t)(5 * MS)), 0);
    CHECK_EQ(gort_waitgroup_wait_until(&wg_wg, gort_deadline_in(SECOND)),
             0);
    CHECK_EQ(wg_wg.state, 0);
    /* A huge deadline is none; no deadline waits as the plain call. */
    gort_waitgroup_add(&wg_wg, 1);
    CHECK_GT(gort_go(wg_done_later, (void *)(intptr_t)MS), 0);
    CHECK_EQ(gort_waitgroup_wait_until(&wg_wg, gort_deadline_in(INT64_MAX)),
             0);
    gort_waitgroup_add(&wg_wg, 1);
    CHECK_GT(gort_go(wg_done_later, (void *)(intptr_t)MS), 0);
    CHECK_EQ(gort_waitgroup_wait_until(&wg_wg, gort_no_deadline()), 0);
    CHECK_EQ(wg_wg.state, 0);
}

/* gort_waitgroup_wait_until: zero counter, passed deadline, timeout that
 * uncounts the waiter, Done before the deadline, huge and no deadline. */
TEST(waitgroup_wait_until)
{
    run_main(wg_main, NULL);
}

#define WGR_ROUNDS (SANITIZED ? 300 : 2000)
static gort_waitgroup wgr_wg, wgr_all;
static long wgr_ok, wgr_timedout; /* atomic */

static void wgr_waiter(void *arg)
{
    int64_t ns = (int64_t)(intptr_t)arg;
    int r = gort_waitgroup_wait_until(&wgr_wg, gort_deadline_in(ns));
    CHECK(r == 0 || r == -ETIMEDOUT);
    __atomic_add_fetch(r == 0 ? &wgr_ok : &wgr_timedout, 1,
                       __ATOMIC_RELAXED);
    gort_waitgroup_done(&wgr_all);
}

static void wgr_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    for (int i = 0; i < WGR_ROUNDS; i++) {
        gort_waitgroup_add(&wgr_wg, 1);
        gort_waitgroup_add(&wgr_all, 3);
        for (int k = 0; k < 3; k++)
            CHECK_GT(gort_go(wgr_waiter, (void *)(intptr_t)((i + k) % 4 *
                                                             10000)),
                     0);
        for (int s = 0; s < i % 5; s++)
            gort_gosched();
        gort_waitgroup_done(&wgr_wg);
        gort_waitgroup_wait(&wgr_all);
        /* Every waiter gone, every unit taken: the group is as new. */
        CHECK_EQ(wgr_wg.state, 0);
        CHECK_EQ(wgr_wg.sema, 0);
    }
    CHECK_EQ(ATOMIC_LOAD(&wgr_ok) + ATOMIC_LOAD(&wgr_timedout),
             3 * WGR_ROUNDS);
    CHECK_GT(ATOMIC_LOAD(&wgr_ok), 0);
}

/* Waiters with deadlines of 0-30 us racing the Done that ends the wait,
 * on 4 Ps: each returns 0 or -ETIMEDOUT, and after each round the group
 * has no waiter counted and no unit left in its semaphore (a leftover
 * would end a later wait early, or be fatal as a reuse). */
TEST(waitgroup_deadline_races_done)
{
    run_main(wgr_main, NULL);
}

static gort_mutex cv_mu;
static gort_cond cv = GORT_COND_INIT(&cv_mu);
static int cv_woken; /* atomic: main polls it */

static void cv_plain_waiter(void *arg)
{
    (void)arg;
    gort_mutex_lock(&cv_mu);
    gort_cond_wait(&cv);
    ATOMIC_INC(&cv_woken); /* main polls it without the lock */
    gort_mutex_unlock(&cv_mu);
}

static void cv_timed_waiter(void *arg)
{
    int *r = arg;
    gort_mutex_lock(&cv_mu);
    int got = gort_cond_wait_until(&cv, gort_deadline_in(10 * MS));
    CHECK(!gort_mutex_trylock(&cv_mu)); /* held again */
    gort_mutex_unlock(&cv_mu);
    ATOMIC_STORE(r, got); /* main polls it */
}

static void cv_main(void *arg)
{
    (void)arg;
    gort_mutex_lock(&cv_mu);
    /* Passed: -ETIMEDOUT at once, the lock still held. */
    CHECK_EQ(gort_cond_wait_until(&cv, gort_deadline_in(0)), -ETIMEDOUT);
    CHECK(!gort_mutex_trylock(&cv_mu));
    /* Nobody signals: -ETIMEDOUT after the deadline, the lock held. */
    int64_t t0 = now_ns();
    CHECK_EQ(gort_cond_wait_until(&cv, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 20 * MS);
    CHECK(!gort_mutex_trylock(&cv_mu));
    gort_mutex_unlock(&cv_mu);
    /* A lone waiter timing out leaves nothing behind. */
    CHECK(cv.head == NULL && cv.wait == cv.notify);

    /* Signalled before the deadline: 0. */
    static int r;
    ATOMIC_STORE(&r, 1);
    int64_t id = gort_go(cv_timed_waiter, &r);
    CHECK_GT(id, 0);
    await_waiting("sync.Cond.Wait", id, 1);
    gort_cond_signal(&cv);
    while (ATOMIC_LOAD(&r) == 1)
        gort_sleep(MS);
    CHECK_EQ(ATOMIC_LOAD(&r), 0);

    /* A timed-out waiter between two plain ones takes no signal: the
     * first signal wakes the first plain waiter, the second the last. */
    int64_t a = gort_go(cv_plain_waiter, NULL);
    await_waiting("sync.Cond.Wait", a, 1);
    ATOMIC_STORE(&r, 1);
    int64_t b = gort_go(cv_timed_waiter, &r);
    await_waiting("sync.Cond.Wait", b, 1);
    int64_t c = gort_go(cv_plain_waiter, NULL);
    await_waiting("sync.Cond.Wait", c, 1);
    while (ATOMIC_LOAD(&r) == 1)
        gort_sleep(MS);
    CHECK_EQ(ATOMIC_LOAD(&r), -ETIMEDOUT);
    CHECK(cv.head != NULL); /* b's ticket is not the next: a tombstone */
    gort_cond_signal(&cv);
    for (int i = 0; i < 1000 && ATOMIC_LOAD(&cv_woken) < 1; i++)
        gort_sleep(MS);
    gort_cond_signal(&cv);
    for (int i = 0; i < 1000 && ATOMIC_LOAD(&cv_woken) < 2; i++)
        gort_sleep(MS);
    gort_mutex_lock(&cv_mu);
    CHECK_EQ(ATOMIC_LOAD(&cv_woken), 2);
    gort_mutex_unlock(&cv_mu);
    /* Both woken: the tombstone was skipped and freed. */
    CHECK(cv.head == NULL && cv.wait == cv.notify);

    /* A tombstone left at the head is skipped by the next signal, which
     * wakes the waiter after it. */
    a = gort_go(cv_plain_waiter, NULL);
    await_waiting("sync.Cond.Wait", a, 1);
    ATOMIC_STORE(&r, 1);
    b = gort_go(cv_timed_waiter, &r);
    await_waiting("sync.Cond.Wait", b, 1);
    while (ATOMIC_LOAD(&r) == 1)
        gort_sleep(MS);
    gort_cond_signal(&cv); /* wakes a; b's tombstone is then the next */
    for (int i = 0; i < 1000 && ATOMIC_LOAD(&cv_woken) < 3; i++)
        gort_sleep(MS);
    CHECK(cv.head == NULL && cv.wait == cv.notify);
    c = gort_go(cv_plain_waiter, NULL);
    await_waiting("sync.Cond.Wait", c, 1);
    gort_cond_broadcast(&cv);
    for (int i = 0; i < 1000 && ATOMIC_LOAD(&cv_woken) < 4; i++)
        gort_sleep(MS);
    CHECK_EQ(ATOMIC_LOAD(&cv_woken), 4);
}

/* gort_cond_wait_until: passed and plain timeouts with the lock held
 * again, a signal before the deadline, and the tickets of timed-out
 * waiters: a signal meant for one goes to the next waiter, and nothing
 * is left on the list once the waiters are gone. */
TEST(cond_wait_until)
{
    run_main(cv_main, NULL);
}

#define CVS_ITEMS (SANITIZED ? 2000 : 20000)
#define CVS_CONSUMERS 6
static gort_mutex cvs_mu;
static gort_cond cvs = GORT_COND_INIT(&cvs_mu);
static int cvs_items, cvs_taken, cvs_produced; /* under cvs_mu */
static long cvs_timeouts;                      /* atomic */
static gort_waitgroup cvs_wg;

static void cvs_consumer(void *arg)
{
    int64_t ns = (int64_t)(intptr_t)arg;
    gort_mutex_lock(&cvs_mu);
    for (;;) {
        while (cvs_items == 0 && cvs_taken < CVS_ITEMS) {
            int r = gort_cond_wait_until(&cvs, gort_deadline_in(ns));
            CHECK(r == 0 || r == -ETIMEDOUT);
            if (r)
                __atomic_add_fetch(&cvs_timeouts, 1, __ATOMIC_RELAXED);
        }
        if (cvs_taken == CVS_ITEMS)
            break;
        cvs_items--;
        cvs_taken++;
    }
    gort_mutex_unlock(&cvs_mu);
    gort_cond_broadcast(&cvs); /* the others see the end too */
    gort_waitgroup_done(&cvs_wg);
}

static void cvs_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    gort_waitgroup_add(&cvs_wg, CVS_CONSUMERS);
    for (int i = 0; i < CVS_CONSUMERS; i++)
        CHECK_GT(gort_go(cvs_consumer, (void *)(intptr_t)((i % 3 + 1) *
                                                           20000)),
                 0);
    /* Nothing produced yet: the consumers' deadlines pass.  Waiting for
     * the first timeout makes one certain; the race below may add more. */
    for (int i = 0; i < 10000 && ATOMIC_LOAD(&cvs_timeouts) == 0; i++)
        gort_sleep(MS);
    CHECK_GT(ATOMIC_LOAD(&cvs_timeouts), 0);
    for (int i = 0; i < CVS_ITEMS; i++) {
        gort_mutex_lock(&cvs_mu);
        cvs_items++;
        cvs_produced++;
        gort_mutex_unlock(&cvs_mu);
        gort_cond_signal(&cvs);
        if (i % 64 == 0)
            gort_sleep(20000);
    }
    gort_waitgroup_wait(&cvs_wg);
    CHECK_EQ(cvs_taken, CVS_ITEMS);
    CHECK_EQ(cvs_items, 0);
    /* Every waiter gone: no tombstone left (ASan would also report one
     * as a leak). */
    CHECK(cvs.head == NULL && cvs.tail == NULL && cvs.wait == cvs.notify);
}

/* Consumers waiting with deadlines of 20-60 us for items a producer
 * signals one at a time, on 4 Ps: every item is taken once, timeouts
 * happen, and the list is empty at the end. */
TEST(cond_deadline_races_signal)
{
    run_main(cvs_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Mutexes with a deadline.
 * ------------------------------------------------------------------------- */

static gort_mutex mx;
static int mx_r = 1;       /* atomic: a timed waiter's result, 1 until */
static int mx_plain_in;    /* atomic: the plain waiter got the mutex */
static int mx_release;     /* atomic: mx_holder_told may unlock */
static int mx_held_done;   /* atomic: mx_holder_told's unlock returned */

/* Holds the mutex until main says so (a fixed time could pass before
 * the waiters queue on a loaded machine). */
static void mx_holder_told(void *arg)
{
    (void)arg;
    gort_mutex_lock(&mx);
    while (!ATOMIC_LOAD(&mx_release))
        gort_sleep(MS);
    gort_mutex_unlock(&mx);
    ATOMIC_STORE(&mx_held_done, 1);
}

/* Waits (up to 2 s) until mx_holder_told's unlock has returned. */
static void mx_await_holder(void)
{
    for (int i = 0; i < 20000 && !ATOMIC_LOAD(&mx_held_done); i++)
        gort_sleep(100 * 1000);
    CHECK(ATOMIC_LOAD(&mx_held_done));
    ATOMIC_STORE(&mx_held_done, 0);
}

static void mx_timed(void *arg)
{
    int r = gort_mutex_lock_until(&mx, gort_deadline_in((int64_t)(intptr_t)arg));
    if (r == 0)
        gort_mutex_unlock(&mx);
    ATOMIC_STORE(&mx_r, r);
}

static void mx_plain(void *arg)
{
    (void)arg;
    gort_mutex_lock(&mx);
    ATOMIC_STORE(&mx_plain_in, 1);
    gort_mutex_unlock(&mx);
}

static void mx_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_mutex_lock_until(NULL, gort_no_deadline()), -EINVAL);
    /* Free: 0 at once, also with a passed deadline (a try). */
    CHECK_EQ(gort_mutex_lock_until(&mx, gort_deadline_in(SECOND)), 0);
    CHECK_EQ(gort_mutex_lock_until(&mx, gort_deadline_in(0)), -ETIMEDOUT);
    gort_mutex_unlock(&mx);
    CHECK_EQ(gort_mutex_lock_until(&mx, gort_deadline_in(-1)), 0);
    gort_mutex_unlock(&mx);
    CHECK_EQ(gort_mutex_lock_until(&mx, gort_no_deadline()), 0);
    gort_mutex_unlock(&mx);

    /* Held: a 20 ms wait times out; once the holder is told to let go,
     * a 2 s one gets it. */
    int64_t h = gort_go(mx_holder_told, NULL);
    CHECK_GT(h, 0);
    await_waiting("sleep", h, 1);
    int64_t t0 = now_ns();
    CHECK_EQ(gort_mutex_lock_until(&mx, gort_deadline_in(20 * MS)),
             -ETIMEDOUT);
    CHECK_GE(now_ns() - t0, 20 * MS);
    CHECK_LT(now_ns() - t0, SECOND);
    ATOMIC_STORE(&mx_release, 1);
    CHECK_EQ(gort_mutex_lock_until(&mx, gort_deadline_in(2 * SECOND)), 0);
    gort_mutex_unlock(&mx);
    /* The holder's unlock may still be serving the proxy of the wait
     * that timed out, on another thread: the woken flag it set stays
     * until then, and we may have taken and dropped the mutex meanwhile.
     * Once every unlock has returned, the state is clear. */
    mx_await_holder();
    CHECK_EQ(ATOMIC_LOAD(&mx.state), 0); /* unlocks write it atomically */

    /* A waiter that gave up ahead of a plain one: its proxy takes the
     * unlock's wake-up and passes the mutex on, so the plain waiter gets
     * it as soon as the holder lets go. */
    ATOMIC_STORE(&mx_release, 0);
    h = gort_go(mx_holder_told, NULL);
    await_waiting("sleep", h, 1);
    ATOMIC_STORE(&mx_r, 1);
    int64_t a = gort_go(mx_timed, (void *)(intptr_t)(10 * MS));
    /* Queued: seen waiting, or already timed out (a slow look can miss
     * its 10 ms). */
    for (int i = 0; i < 30000 && ATOMIC_LOAD(&mx_r) == 1 &&
                    count_waiting("sync.Mutex.Lock", a) < 1;
         i++)
        gort_sleep(MS);
    int64_t b = gort_go(mx_plain, NULL);
    await_waiting("sync.Mutex.Lock", b, 1);
    while (ATOMIC_LOAD(&mx_r) == 1)
        gort_sleep(MS);
    CHECK_EQ(ATOMIC_LOAD(&mx_r), -ETIMEDOUT);
    CHECK(!ATOMIC_LOAD(&mx_plain_in));
    ATOMIC_STORE(&mx_release, 1);
    for (int i = 0; i < 5000 && !ATOMIC_LOAD(&mx_plain_in); i++)
        gort_sleep(MS);
    CHECK(ATOMIC_LOAD(&mx_plain_in));
    mx_await_holder();
    /* Nothing left behind: no waiter counted, no unit, no proxy. */
    gort_mutex_lock(&mx);
    gort_mutex_unlock(&mx);
    CHECK_EQ(ATOMIC_LOAD(&mx.state), 0); /* unlocks write it atomically */
    CHECK_EQ(mx.sema, 0);
}

/* gort_mutex_lock_until: free, passed, no and huge deadlines, a timeout
 * while held, the lock taken before the deadline, and a waiter giving up
 * ahead of another, who still gets the mutex. */
TEST(mutex_lock_until)
{
    run_main(mx_main, NULL);
}

#define MXS_G 8
#define MXS_ROUNDS (SANITIZED ? 300 : 2000)
static gort_mutex mxs;
static long mxs_count; /* under mxs */
static long mxs_got, mxs_timedout; /* atomic */
static gort_waitgroup mxs_wg;

static void mxs_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < MXS_ROUNDS; i++) {
        int r = 0;
        if ((i + id) % 3 == 0)
            gort_mutex_lock(&mxs);
        else
            r = gort_mutex_lock_until(&mxs, gort_deadline_in(
                                                (i * 7 + id) % 5 * 50000));
        CHECK(r == 0 || r == -ETIMEDOUT);
        if (r) {
            __atomic_add_fetch(&mxs_timedout, 1, __ATOMIC_RELAXED);
            continue;
        }
        long v = mxs_count;
        /* Now and then a long hold, which starves the waiters (over 1 ms
         * puts the mutex in starvation mode: hand-offs, to proxies too). */
        if (i % 97 == 0)
            gort_sleep(1500 * 1000);
        else if (i % 5 == 0)
            gort_gosched();
        mxs_count = v + 1;
        __atomic_add_fetch(&mxs_got, 1, __ATOMIC_RELAXED);
        gort_mutex_unlock(&mxs);
    }
    gort_waitgroup_done(&mxs_wg);
}

static void mxs_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    gort_waitgroup_add(&mxs_wg, MXS_G);
    for (int i = 0; i < MXS_G; i++)
        CHECK_GT(gort_go(mxs_worker, (void *)(intptr_t)i), 0);
    gort_waitgroup_wait(&mxs_wg);
    CHECK_EQ(mxs_count, ATOMIC_LOAD(&mxs_got));
    CHECK_EQ(ATOMIC_LOAD(&mxs_got) + ATOMIC_LOAD(&mxs_timedout),
             (long)MXS_G * MXS_ROUNDS);
    CHECK_GT(ATOMIC_LOAD(&mxs_timedout), 0);
    /* Proxies still queued are served by the next unlocks: lock and
     * unlock until none is left (each unlock serves one at least). */
    for (int i = 0; i < 1000 && (mxs.state != 0 || mxs.sema != 0); i++) {
        gort_mutex_lock(&mxs);
        gort_mutex_unlock(&mxs);
    }
    CHECK_EQ(mxs.state, 0);
    CHECK_EQ(mxs.sema, 0);
}

/* Plain and timed lockers (deadlines of 0-200 us) with short and long
 * holds on 4 Ps: mutual exclusion holds (an unlocked counter read and
 * written under the mutex counts every acquisition), every call returns
 * 0 or -ETIMEDOUT, nobody is stranded, and the mutex ends clean. */
TEST(mutex_deadline_stress)
{
    run_main(mxs_main, NULL);
}
