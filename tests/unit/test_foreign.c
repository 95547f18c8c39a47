/* SPDX-License-Identifier: MIT */
/*
 * test_foreign.c - threads gort did not create (plain pthreads) calling
 * into it while gort_main runs: channels, select, gort_go and sync.
 *
 * A foreign thread outside gort does not count for deadlock detection, so
 * main never waits in a way that only such a thread can end without
 * holding a system call (GORT_BLOCKING(pthread_join(...))) or a timer.
 */
#include "internal.h" /* foreign_no_deadlock peeks at a waitq */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#define NTHREADS 4

static void join_all(pthread_t *t, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_EQ(GORT_BLOCKING(pthread_join(t[i], NULL)), 0);
}

/* ---------------------------------------------------------------------------
 * foreign_send
 * ------------------------------------------------------------------------- */

#if SANITIZED
#define FS_N 20000
#else
#define FS_N 100000
#endif

static gort_chan *fs_ch;
static int64_t fs_count, fs_sum;
static gort_waitgroup fs_wg;

static void *fs_sender(void *arg)
{
    int64_t t = (int64_t)(intptr_t)arg;
    for (int64_t i = 0; i < FS_N; i++) {
        int64_t v = t * FS_N + i + 1;
        gort_chan_send(fs_ch, &v);
    }
    return NULL;
}

static void fs_drain(void *arg)
{
    (void)arg;
    int64_t v, n = 0, sum = 0;
    while (gort_chan_recv(fs_ch, &v)) {
        n++;
        sum += v;
    }
    ATOMIC_ADD(&fs_count, n);
    ATOMIC_ADD(&fs_sum, sum);
    gort_waitgroup_done(&fs_wg);
}

static void fs_main(void *arg)
{
    size_t cap = (size_t)(intptr_t)arg;
    fs_ch = make_chan(sizeof(int64_t), cap);
    fs_count = fs_sum = 0;
    gort_waitgroup_add(&fs_wg, 2);
    CHECK_GT(gort_go(fs_drain, NULL), 1);
    CHECK_GT(gort_go(fs_drain, NULL), 1);
    pthread_t t[NTHREADS];
    int64_t t0 = gort_nanotime();
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, fs_sender, (void *)(intptr_t)i),
                 0);
    join_all(t, NTHREADS);
    gort_chan_close(fs_ch);
    gort_waitgroup_wait(&fs_wg);
    int64_t total = (int64_t)NTHREADS * FS_N;
    fprintf(stderr, "cap %zu: %lld values from %d pthreads in %.2f s\n", cap,
            (long long)total, NTHREADS,
            (double)(gort_nanotime() - t0) / 1e9);
    CHECK_EQ(fs_count, total);
    CHECK_EQ(fs_sum, total * (total + 1) / 2);
    free_chan(fs_ch);
}

/* 4 pthreads each send 100,000 int64 values into a channel drained by
 * 2 goroutines, buffered and then unbuffered: count and sum exact. */
TEST(foreign_send)
{
    run_main(fs_main, (void *)(intptr_t)64);
    run_main(fs_main, (void *)(intptr_t)0);
}

/* ---------------------------------------------------------------------------
 * foreign_go
 * ------------------------------------------------------------------------- */

#define FG_N 1000

static int64_t fg_count, fg_sum, fg_bad_goid;
static gort_waitgroup fg_wg;

static void fg_one(void *arg)
{
    ATOMIC_INC(&fg_count);
    ATOMIC_ADD(&fg_sum, (int64_t)(intptr_t)arg);
    gort_waitgroup_done(&fg_wg);
}

static void *fg_thread(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < FG_N; i++) {
        int64_t id = gort_go(fg_one, (void *)(intptr_t)(t * FG_N + i + 1));
        if (id <= 1)
            ATOMIC_INC(&fg_bad_goid);
        /* ThreadSanitizer: every G has a fiber; keep few unfinished. */
        while (TSAN && (int64_t)NTHREADS * i - ATOMIC_LOAD(&fg_count) > 2000)
            sched_yield();
    }
    return NULL;
}

static void fg_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&fg_wg, NTHREADS * FG_N);
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, fg_thread, (void *)(intptr_t)i),
                 0);
    join_all(t, NTHREADS);
    gort_waitgroup_wait(&fg_wg);
    int64_t total = (int64_t)NTHREADS * FG_N;
    CHECK_EQ(fg_bad_goid, 0);
    CHECK_EQ(fg_count, total);
    CHECK_EQ(fg_sum, total * (total + 1) / 2);
}

/* 4 pthreads each start 1000 goroutines that count and call
 * gort_waitgroup_done: counts exact. */
TEST(foreign_go)
{
    run_main(fg_main, NULL);
}

/* ---------------------------------------------------------------------------
 * foreign_mutex_select
 * ------------------------------------------------------------------------- */

#if SANITIZED
#define FM_N 5000
#else
#define FM_N 20000
#endif
#define FM_THREADS 2
#define FM_GS 4
#define FSEL_N 10000

static gort_mutex fm_mu = GORT_MUTEX_INIT;
static int64_t fm_counter;
static int fm_inside, fm_overlap;
static gort_waitgroup fm_wg;

static void fm_critical(void)
{
    gort_mutex_lock(&fm_mu);
    if (__atomic_add_fetch(&fm_inside, 1, __ATOMIC_ACQ_REL) != 1)
        ATOMIC_INC(&fm_overlap);
    fm_counter++; /* plain: the mutex orders it */
    __atomic_sub_fetch(&fm_inside, 1, __ATOMIC_ACQ_REL);
    gort_mutex_unlock(&fm_mu);
}

static void *fm_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < FM_N; i++)
        fm_critical();
    return NULL;
}

static void fm_g(void *arg)
{
    (void)arg;
    for (int i = 0; i < FM_N; i++) {
        fm_critical();
        if (i % 128 == 0)
            gort_gosched();
    }
    gort_waitgroup_done(&fm_wg);
}

/* The select side: two goroutines feed a and b, then close them; a
 * pthread selects until both are closed. */
static gort_chan *fsel_a, *fsel_b;
static int64_t fsel_sum_a, fsel_sum_b, fsel_n_a, fsel_n_b;

static void fsel_feed(void *arg)
{
    gort_chan *ch = arg;
    for (int64_t i = 1; i <= FSEL_N; i++) {
        gort_chan_send(ch, &i);
        if (i % 100 == 0)
            gort_sleep(10 * 1000); /* the pthread parks in select too */
    }
    gort_chan_close(ch);
    gort_waitgroup_done(&fm_wg);
}

static void *fsel_thread(void *arg)
{
    (void)arg;
    gort_chan *a = fsel_a, *b = fsel_b;
    int64_t va = 0, vb = 0;
    while (a || b) {
        gort_case cs[2] = {{a, GORT_CASE_RECV, &va, false},
                           {b, GORT_CASE_RECV, &vb, false}};
        int i = gort_select(cs, 2);
        CHECK(i == 0 || i == 1);
        if (!cs[i].ok) {
            if (i == 0)
                a = NULL; /* closed: a nil channel is never ready */
            else
                b = NULL;
            continue;
        }
        if (i == 0) {
            fsel_sum_a += va;
            fsel_n_a++;
        } else {
            fsel_sum_b += vb;
            fsel_n_b++;
        }
    }
    return NULL;
}

static void fm_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    fsel_a = make_chan(sizeof(int64_t), 0);
    fsel_b = make_chan(sizeof(int64_t), 4);
    gort_waitgroup_add(&fm_wg, FM_GS + 2);
    pthread_t t[FM_THREADS + 1];
    for (int i = 0; i < FM_THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, fm_thread, NULL), 0);
    CHECK_EQ(pthread_create(&t[FM_THREADS], NULL, fsel_thread, NULL), 0);
    for (int i = 0; i < FM_GS; i++)
        CHECK_GT(gort_go(fm_g, NULL), 1);
    CHECK_GT(gort_go(fsel_feed, fsel_a), 1);
    CHECK_GT(gort_go(fsel_feed, fsel_b), 1);
    join_all(t, FM_THREADS + 1);
    gort_waitgroup_wait(&fm_wg);
    CHECK_EQ(fm_overlap, 0);
    gort_mutex_lock(&fm_mu);
    CHECK_EQ(fm_counter, (int64_t)(FM_THREADS + FM_GS) * FM_N);
    gort_mutex_unlock(&fm_mu);
    int64_t want = (int64_t)FSEL_N * (FSEL_N + 1) / 2;
    CHECK_EQ(fsel_n_a, FSEL_N);
    CHECK_EQ(fsel_n_b, FSEL_N);
    CHECK_EQ(fsel_sum_a, want);
    CHECK_EQ(fsel_sum_b, want);
    free_chan(fsel_a);
    free_chan(fsel_b);
}

/* 2 pthreads and 4 goroutines increment a counter under one gort_mutex (never
 * two inside, exact total); a pthread selects over two channels fed by
 * goroutines until both close: exact sums. */
TEST(foreign_mutex_select)
{
    run_main(fm_main, NULL);
}

/* ---------------------------------------------------------------------------
 * foreign_no_deadlock
 *
 * Stage 1: pthread P parks inside gort receiving on X (nobody will send
 * until main does, at the end).  Main makes sure P is parked and counted:
 * it waits (sleeping, so a timer is pending meanwhile) until P's sudog is
 * on X's receive queue, then takes X's lock through gort_chan_free, which
 * must say -EBUSY: P enqueued itself and registered as a foreign thread
 * inside gort under that lock.  Then pthread Q starts: it sleeps 50 ms
 * outside gort and sends on Y, and main blocks receiving on Y.  For those
 * 50 ms every goroutine is parked, no timer is pending and Q is outside
 * gort: only P, parked inside gort, keeps this from being a deadlock.
 * Q's send wakes main directly, so there is no gap in which nothing
 * counts.
 *
 * Stage 2: a goroutine wakes a parked pthread: main sends on X; P gets the
 * value and answers on Z (buffered), which main reads after joining P.
 * ------------------------------------------------------------------------- */

static gort_chan *nd_x, *nd_y, *nd_z;

static void *nd_parked(void *arg)
{
    (void)arg;
    int64_t v = 0;
    CHECK(gort_chan_recv(nd_x, &v)); /* stage 1: parked inside gort */
    int64_t w = v + 1;
    gort_chan_send(nd_z, &w); /* stage 2 */
    return NULL;
}

static void *nd_late(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 50 * 1000 * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    int64_t v = 77;
    gort_chan_send(nd_y, &v);
    return NULL;
}

static void nd_main(void *arg)
{
    (void)arg;
    nd_x = make_chan(sizeof(int64_t), 0);
    nd_y = make_chan(sizeof(int64_t), 0);
    nd_z = make_chan(sizeof(int64_t), 1);
    pthread_t p, q;
    CHECK_EQ(pthread_create(&p, NULL, nd_parked, NULL), 0);
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (!__atomic_load_n(&nd_x->recvq.first, __ATOMIC_RELAXED)) {
        CHECK_LT(gort_nanotime(), deadline);
        gort_sleep(MS);
    }
    CHECK_EQ(gort_chan_free(nd_x), -EBUSY);
    CHECK_EQ(pthread_create(&q, NULL, nd_late, NULL), 0);
    int64_t t0 = gort_nanotime();
    CHECK_EQ(recv_i64(nd_y), 77); /* 50 ms with only P inside gort */
    int64_t waited = gort_nanotime() - t0;
    fprintf(stderr, "main waited %.1f ms for the pthread outside gort\n",
            (double)waited / 1e6);
    CHECK_GE(waited, 40 * MS);
    CHECK_EQ(GORT_BLOCKING(pthread_join(q, NULL)), 0);
    /* Stage 2: a goroutine wakes the parked pthread (a direct hand-off:
     * main does not block).  Main then waits for P in a system call, not
     * parked: between its receive and its send P is outside gort. */
    send_i64(nd_x, 41);
    CHECK_EQ(GORT_BLOCKING(pthread_join(p, NULL)), 0);
    int64_t w = 0;
    bool ok = false;
    CHECK(gort_chan_tryrecv(nd_z, &w, &ok));
    CHECK(ok);
    CHECK_EQ(w, 42);
    free_chan(nd_x);
    free_chan(nd_y);
    free_chan(nd_z);
}

/* main blocks in a receive that only a pthread sleeping outside gort will
 * satisfy, while another pthread is parked inside gort on a channel: a foreign
 * thread parked inside gort counts as running, so this is no deadlock; then a
 * goroutine wakes a parked pthread in turn. */
TEST(foreign_no_deadlock)
{
    run_main(nd_main, NULL);
}

/* ---------------------------------------------------------------------------
 * foreign_read_only
 * ------------------------------------------------------------------------- */

static int ro_done, ro_quit;
static int64_t ro_seen;

static void *ro_reader(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        gort_metric_sample s = {.name = "/sched/goroutines:goroutines"};
        CHECK_EQ(gort_metrics_read(&s, 1), 0);
        __atomic_store_n(&ro_seen, gort_numgoroutine(), __ATOMIC_RELAXED);
        usleep(2000);
    }
    __atomic_store_n(&ro_done, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&ro_quit, __ATOMIC_ACQUIRE))
        usleep(1000);
    return NULL;
}

static void ro_yielder(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&ro_quit, __ATOMIC_ACQUIRE))
        gort_gosched();
}

static void ro_main(void *arg)
{
    (void)arg;
    CHECK_GT(gort_go(ro_yielder, NULL), 0); /* keeps the runtime busy */
    gort_gosched();
    int64_t before = gort_numgoroutine();
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, ro_reader, NULL), 0);
    while (!__atomic_load_n(&ro_done, __ATOMIC_ACQUIRE))
        gort_sleep(1000 * 1000);
    int64_t after = gort_numgoroutine();
    char *dump = dump_text();
    say("goroutines before %lld, after %lld\n", (long long)before,
        (long long)after);
    CHECK_EQ(after, before);
    CHECK(strstr(dump, "locked to thread") == NULL);
    free(dump);
    __atomic_store_n(&ro_quit, 1, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_join(th, NULL), 0);
}

/* A thread gort did not create that only reads (gort_metrics_read,
 * gort_numgoroutine) gets no M of its own, so it is not counted or shown as a
 * goroutine afterwards. */
TEST(foreign_read_only)
{
    run_main(ro_main, NULL);
}
