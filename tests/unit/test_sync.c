/* SPDX-License-Identifier: MIT */
/*
 * test_sync.c - the sync package (Mutex, RWMutex, Once, Cond) and the
 * semaphores under it.
 *
 * Time bounds are for a loaded 2-core machine and are four times larger
 * under the sanitizers; loop counts shrink there.
 */
#include "internal.h"
#include "test_util.h"

/* Time bounds: generous for a loaded 2-core machine, more so under the
 * sanitizers. */
#define BOUND(ms) ((SANITIZED ? 4 : 1) * (ms) * MS)

#define A_LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define A_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define A_ADD(p, d) __atomic_add_fetch((p), (d), __ATOMIC_SEQ_CST)
#define A_XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)

/* Mutex state bits (sync/mutex.go). */
enum { ST_LOCKED = 1, ST_WOKEN = 2, ST_STARVING = 4, ST_WAITER_SHIFT = 3 };

/* Yield until cond holds or ms milliseconds have passed; its value. */
#define YIELD_UNTIL(cond, ms)                                                  \
    __extension__({                                                            \
        int64_t yu_deadline_ = gort_nanotime() + (int64_t)(ms) * MS;           \
        bool yu_ok_;                                                           \
        while (!(yu_ok_ = (cond)) && gort_nanotime() < yu_deadline_)           \
            gort_gosched();                                                    \
        yu_ok_;                                                                \
    })

/* Spin for ns of wall time without calling into gort. */
static void burn_ns(int64_t ns)
{
    int64_t end = test_now_ns() + ns;
    while (test_now_ns() < end)
        __asm__ __volatile__("" ::: "memory");
}

/* Yield for ns of wall time. */
static void yield_ns(int64_t ns)
{
    int64_t end = gort_nanotime() + ns;
    while (gort_nanotime() < end)
        gort_gosched();
}

static bool parked(struct g *gp)
{
    return gp && gort__readgstatus(gp) == G_WAITING;
}

/* The running G, published for white-box status checks. */
static void publish_self(struct g **slot)
{
    __atomic_store_n(slot, gort__getg(), __ATOMIC_RELEASE);
}
static struct g *published(struct g **slot)
{
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

static int32_t mstate(gort_mutex *m)
{
    return __atomic_load_n(&m->state, __ATOMIC_RELAXED);
}

/* xorshift for reproducible shuffles. */
static uint32_t rng_state = 2463534242u;
static uint32_t rng(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return rng_state = x;
}
static void shuffle(int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng() % (uint32_t)(i + 1));
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---------------------------------------------------------------------------
 * mutex_exclusion
 * ------------------------------------------------------------------------- */

enum { EXCL_G = 8 };
static gort_mutex excl_mu = GORT_MUTEX_INIT;
static int64_t excl_counter; /* plain: only the mutex protects it */
static int excl_inside, excl_overlaps;
static int excl_iters;
static gort_waitgroup excl_wg;

static void excl_worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < excl_iters; i++) {
        gort_mutex_lock(&excl_mu);
        if (A_XCHG(&excl_inside, 1) != 0)
            A_ADD(&excl_overlaps, 1);
        excl_counter++;
        A_STORE(&excl_inside, 0);
        gort_mutex_unlock(&excl_mu);
    }
    gort_waitgroup_done(&excl_wg);
}

static void excl_round(int procs)
{
    if (procs > 0)
        gort_gomaxprocs(procs);
    excl_counter = 0;
    gort_waitgroup_add(&excl_wg, EXCL_G);
    for (int i = 0; i < EXCL_G; i++)
        CHECK_GT(gort_go(excl_worker, NULL), 0);
    gort_waitgroup_wait(&excl_wg);
    fprintf(stderr, "GOMAXPROCS=%d: counter %lld, state %d\n",
            gort_gomaxprocs(0), (long long)excl_counter, mstate(&excl_mu));
    CHECK_EQ(excl_counter, (int64_t)EXCL_G * excl_iters);
    CHECK_EQ(A_LOAD(&excl_overlaps), 0);
    CHECK_EQ(mstate(&excl_mu), 0);
}

static void mutex_exclusion_main(void *arg)
{
    (void)arg;
    excl_iters = SANITIZED ? 20000 : 100000;
    excl_round(0); /* the default: all CPUs */
    excl_round(4);
}

/* 8 goroutines x 100,000 lock / increment a plain counter / unlock, at the
 * default GOMAXPROCS and at 4: exact total, never two inside at once. */
TEST(mutex_exclusion)
{
    run_main(mutex_exclusion_main, NULL);
}

/* ---------------------------------------------------------------------------
 * mutex_trylock
 * ------------------------------------------------------------------------- */

static gort_mutex try_mu = GORT_MUTEX_INIT;
static int try_result = -1;
static int64_t try_counter;
static int try_successes;
static gort_waitgroup try_wg;

static void try_other(void *arg)
{
    (void)arg;
    A_STORE(&try_result, gort_mutex_trylock(&try_mu) ? 1 : 0);
    gort_waitgroup_done(&try_wg);
}

static void try_worker(void *arg)
{
    int n = (int)(intptr_t)arg;
    for (int got = 0; got < n;) {
        if (!gort_mutex_trylock(&try_mu)) {
            gort_gosched();
            continue;
        }
        try_counter++;
        got++;
        gort_mutex_unlock(&try_mu);
    }
    A_ADD(&try_successes, n);
    gort_waitgroup_done(&try_wg);
}

static void mutex_trylock_main(void *arg)
{
    (void)arg;
    gort_mutex m = GORT_MUTEX_INIT;
    CHECK(gort_mutex_trylock(&m));
    CHECK(!gort_mutex_trylock(&m));
    gort_mutex_unlock(&m);
    CHECK(gort_mutex_trylock(&m));
    gort_mutex_unlock(&m);
    gort_mutex_lock(&m);
    CHECK(!gort_mutex_trylock(&m));
    gort_mutex_unlock(&m);
    CHECK_EQ(mstate(&m), 0);

    /* Another goroutine fails while we hold it, succeeds after. */
    gort_mutex_lock(&try_mu);
    gort_waitgroup_add(&try_wg, 1);
    gort_go(try_other, NULL);
    gort_waitgroup_wait(&try_wg);
    CHECK_EQ(A_LOAD(&try_result), 0);
    gort_mutex_unlock(&try_mu);
    gort_waitgroup_add(&try_wg, 1);
    gort_go(try_other, NULL);
    gort_waitgroup_wait(&try_wg);
    CHECK_EQ(A_LOAD(&try_result), 1);
    gort_mutex_unlock(&try_mu);

    /* Trylock alone still excludes: counts are exact. */
    int n = SANITIZED ? 2000 : 20000;
    gort_gomaxprocs(4);
    gort_waitgroup_add(&try_wg, 6);
    for (int i = 0; i < 6; i++)
        gort_go(try_worker, (void *)(intptr_t)n);
    gort_waitgroup_wait(&try_wg);
    CHECK_EQ(try_counter, 6LL * n);
    CHECK_EQ(A_LOAD(&try_successes), 6 * n);
    CHECK_EQ(mstate(&try_mu), 0);
}

/* Trylock on free, held and released mutexes; goroutines counting only through
 * trylock. */
TEST(mutex_trylock)
{
    run_main(mutex_trylock_main, NULL);
}

/* ---------------------------------------------------------------------------
 * mutex_starvation
 *
 * (a) Four hogs lock, work 10 us inside and unlock, in tight loops, on
 * two Ps, so the mutex is nearly always held and a woken waiter nearly
 * always loses to a running hog.  A victim arrives 30 times (with 2 ms
 * away each time) and measures how long each Lock takes.  It waits over
 * 1 ms, wakes to find the mutex held, and turns it starving; the next
 * Unlock hands it the mutex.  Everyone samples the starving bit inside.
 *
 * (b) Scripted, on one P at first.  Main holds the mutex while W0..W7
 * queue on it, one after another, and then waits 2 ms.  Main unlocks (W0 is woken) and
 * at once locks again: W0 wakes to a held mutex after 2 ms and sets the
 * starving bit, queueing again at the front.  With a second P, a barger
 * then polls trylock without pause.  Main unlocks once more: the mutex
 * goes W0, W1, ..., W7 by hand-off (each waited over 1 ms, so starvation
 * mode lasts until the last), and the barger gets it only after W7.
 * ------------------------------------------------------------------------- */

enum { HOGS = 4, VICTIM_ROUNDS = 30, FIFO_W = 8 };
static gort_mutex starve_mu = GORT_MUTEX_INIT;
static int starve_stop, starve_seen;
static int64_t hog_rounds;
static gort_waitgroup starve_wg;

static void note_starving(void)
{
    if (mstate(&starve_mu) & ST_STARVING)
        A_ADD(&starve_seen, 1);
}

static void hog(void *arg)
{
    (void)arg;
    while (!A_LOAD(&starve_stop)) {
        gort_mutex_lock(&starve_mu);
        hog_rounds++;
        burn_ns(10 * 1000);
        note_starving();
        gort_mutex_unlock(&starve_mu);
    }
    gort_waitgroup_done(&starve_wg);
}

static void starvation_dynamic(void)
{
    gort_gomaxprocs(2);
    gort_waitgroup_add(&starve_wg, HOGS);
    for (int i = 0; i < HOGS; i++)
        gort_go(hog, NULL);
    yield_ns(20 * MS); /* let the hogs settle in */
    int64_t worst = 0, total = 0;
    for (int r = 0; r < VICTIM_ROUNDS; r++) {
        int64_t t0 = gort_nanotime();
        gort_mutex_lock(&starve_mu);
        int64_t waited = gort_nanotime() - t0;
        note_starving();
        gort_mutex_unlock(&starve_mu);
        total += waited;
        if (waited > worst)
            worst = waited;
        yield_ns(2 * MS);
    }
    A_STORE(&starve_stop, 1);
    gort_waitgroup_wait(&starve_wg);
    fprintf(stderr, "victim: worst %.3f ms, mean %.3f ms over %d locks; "
                    "hogs %lld rounds; starving seen %d times\n",
            (double)worst / 1e6, (double)total / VICTIM_ROUNDS / 1e6,
            VICTIM_ROUNDS, (long long)hog_rounds, A_LOAD(&starve_seen));
    CHECK_LT(worst, BOUND(500));
    CHECK_GT(A_LOAD(&starve_seen), 0);
    CHECK_EQ(mstate(&starve_mu), 0);
}

static gort_mutex fifo_mu = GORT_MUTEX_INIT;
static struct g *fifo_g[FIFO_W];
static int fifo_order[FIFO_W + 1];
static int fifo_n;
static int fifo_starving_inside;
static int fifo_barge_stop, fifo_barger_polls;
static int fifo_polls_at_w0, fifo_polls_at_last;
static gort_waitgroup fifo_wg;

/* Under fifo_mu; main polls fifo_n. */
static void fifo_record(int who)
{
    int n = fifo_n;
    fifo_order[n] = who;
    A_STORE(&fifo_n, n + 1);
}

static void fifo_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    publish_self(&fifo_g[i]);
    gort_mutex_lock(&fifo_mu);
    fifo_record(i);
    if (mstate(&fifo_mu) & ST_STARVING)
        A_ADD(&fifo_starving_inside, 1);
    if (i == 0)
        A_STORE(&fifo_polls_at_w0, A_LOAD(&fifo_barger_polls));
    burn_ns(200 * 1000); /* the barger polls meanwhile */
    if (i == FIFO_W - 1)
        A_STORE(&fifo_polls_at_last, A_LOAD(&fifo_barger_polls));
    gort_mutex_unlock(&fifo_mu);
    gort_waitgroup_done(&fifo_wg);
}

static void fifo_barger(void *arg)
{
    (void)arg;
    for (int n = 0; !A_LOAD(&fifo_barge_stop); n++) {
        A_ADD(&fifo_barger_polls, 1);
        if (gort_mutex_trylock(&fifo_mu)) {
            fifo_record(FIFO_W); /* the barger's mark */
            gort_mutex_unlock(&fifo_mu);
            break;
        }
        if (n % 4096 == 4095)
            gort_gosched();
    }
    gort_waitgroup_done(&fifo_wg);
}

static void starvation_fifo(void)
{
    /* One P while the scene is set: W0, woken into runnext, cannot be
     * stolen by another P and take the mutex before main locks again. */
    gort_gomaxprocs(1);
    gort_mutex_lock(&fifo_mu);
    gort_waitgroup_add(&fifo_wg, FIFO_W);
    for (int i = 0; i < FIFO_W; i++) {
        gort_go(fifo_waiter, (void *)(intptr_t)i);
        /* Queued (counted) and parked, before the next one comes. */
        CHECK(YIELD_UNTIL((mstate(&fifo_mu) >> ST_WAITER_SHIFT) == i + 1 &&
                              parked(published(&fifo_g[i])),
                          10000));
    }
    yield_ns(2 * MS);
    /* W0 is woken and finds the mutex held again. */
    gort_mutex_unlock(&fifo_mu);
    gort_mutex_lock(&fifo_mu);
    CHECK(YIELD_UNTIL((mstate(&fifo_mu) & ST_STARVING) &&
                          (mstate(&fifo_mu) >> ST_WAITER_SHIFT) == FIFO_W &&
                          parked(published(&fifo_g[0])),
                      10000));
    CHECK_EQ(mstate(&fifo_mu), ST_LOCKED | ST_STARVING |
                                   (FIFO_W << ST_WAITER_SHIFT));
    /* A running goroutine polls trylock on a second P; it must not get
     * in before the queue has drained. */
    gort_gomaxprocs(2);
    gort_waitgroup_add(&fifo_wg, 1);
    gort_go(fifo_barger, NULL);
    CHECK(YIELD_UNTIL(A_LOAD(&fifo_barger_polls) > 100, 10000));
    gort_mutex_unlock(&fifo_mu);
    CHECK(YIELD_UNTIL(A_LOAD(&fifo_n) >= FIFO_W, 10000));
    /* The barger may still be polling: stop it if it has not got in. */
    yield_ns(1 * MS);
    A_STORE(&fifo_barge_stop, 1);
    gort_waitgroup_wait(&fifo_wg);
    fprintf(stderr, "order:");
    for (int i = 0; i < fifo_n; i++)
        fprintf(stderr, " %d", fifo_order[i]);
    fprintf(stderr, " (%d = barger); starving inside %d times; %d polls, "
                    "%d while W0..W%d held it\n",
            FIFO_W, A_LOAD(&fifo_starving_inside),
            A_LOAD(&fifo_barger_polls),
            A_LOAD(&fifo_polls_at_last) - A_LOAD(&fifo_polls_at_w0),
            FIFO_W - 1);
    for (int i = 0; i < FIFO_W; i++)
        CHECK_EQ(fifo_order[i], i);
    /* All but the last held it in starvation mode. */
    CHECK_GE(A_LOAD(&fifo_starving_inside), FIFO_W - 1);
    CHECK_EQ(mstate(&fifo_mu), 0);
}

static void mutex_starvation_main(void *arg)
{
    (void)arg;
    starvation_dynamic();
    starvation_fifo();
}

/* In two parts: (a) hogs re-lock in tight loops while a victim keeps
 * arriving: the mutex turns starving and the victim always gets in within
 * the bound; (b) scripted: once starving, the mutex goes to the queued
 * waiters in FIFO order and a goroutine polling trylock cannot barge in
 * until the queue has drained. */
TEST(mutex_starvation)
{
    run_main(mutex_starvation_main, NULL);
}

/* ---------------------------------------------------------------------------
 * mutex_unlock_unlocked_fatal
 * ------------------------------------------------------------------------- */

static void unlock_unlocked_main(void *arg)
{
    (void)arg;
    gort_mutex m = GORT_MUTEX_INIT;
    gort_mutex_lock(&m);
    gort_mutex_unlock(&m);
    say("balanced\n");
    gort_mutex_unlock(&m);
    say("unlocked twice\n"); /* never */
}

TEST_HIDDEN(mutex_unlock_unlocked_fatal_child)
{
    gort_main(unlock_unlocked_main, NULL);
}

/* "sync: unlock of unlocked mutex". */
TEST(mutex_unlock_unlocked_fatal)
{
    struct test_child r;
    run_death("mutex_unlock_unlocked_fatal_child", NULL, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.out, "balanced\n");
    CHECK(strstr(r.out, "unlocked twice") == NULL);
    CHECK_STR_CONTAINS(r.err,
                       "gort: fatal error: sync: unlock of unlocked mutex\n");
    CHECK_STR_CONTAINS(r.err, "\ngoroutine 1 [running]:\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * rwmutex_readers_parallel
 * ------------------------------------------------------------------------- */

enum { PAR_READERS = 8 };
static gort_rwmutex par_rw = GORT_RWMUTEX_INIT;
static int par_inside, par_all_in, par_max;
static gort_waitgroup par_wg;

static void par_reader(void *arg)
{
    (void)arg;
    gort_rwmutex_rlock(&par_rw);
    int n = A_ADD(&par_inside, 1);
    for (int m = A_LOAD(&par_max); n > m; m = A_LOAD(&par_max))
        __atomic_compare_exchange_n(&par_max, &m, n, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    /* Stay until every reader is inside at the same time. */
    if (YIELD_UNTIL(A_LOAD(&par_inside) == PAR_READERS ||
                        A_LOAD(&par_all_in),
                    10000))
        A_STORE(&par_all_in, 1);
    A_ADD(&par_inside, -1);
    gort_rwmutex_runlock(&par_rw);
    gort_waitgroup_done(&par_wg);
}

static void rwmutex_readers_parallel_main(void *arg)
{
    (void)arg;
    int procs[4], np = test_procs_list(procs);
    for (int k = 0; k < np; k++) {
        gort_gomaxprocs(procs[k]);
        A_STORE(&par_all_in, 0);
        A_STORE(&par_max, 0);
        gort_waitgroup_add(&par_wg, PAR_READERS);
        for (int i = 0; i < PAR_READERS; i++)
            gort_go(par_reader, NULL);
        gort_waitgroup_wait(&par_wg);
        fprintf(stderr, "GOMAXPROCS=%d: %d readers inside at once\n",
                procs[k], A_LOAD(&par_max));
        CHECK_EQ(A_LOAD(&par_max), PAR_READERS);
        CHECK(A_LOAD(&par_all_in));
        CHECK_EQ(par_rw.reader_count, 0);
    }

    /* The try forms against readers and a writer. */
    gort_rwmutex rw = GORT_RWMUTEX_INIT;
    gort_rwmutex_rlock(&rw);
    CHECK(gort_rwmutex_tryrlock(&rw));
    CHECK(!gort_rwmutex_trylock(&rw));
    gort_rwmutex_runlock(&rw);
    gort_rwmutex_runlock(&rw);
    CHECK(gort_rwmutex_trylock(&rw));
    CHECK(!gort_rwmutex_tryrlock(&rw));
    CHECK(!gort_rwmutex_trylock(&rw));
    gort_rwmutex_unlock(&rw);
    gort_rwmutex_lock(&rw);
    CHECK(!gort_rwmutex_tryrlock(&rw));
    gort_rwmutex_unlock(&rw);
    CHECK(gort_rwmutex_tryrlock(&rw));
    gort_rwmutex_runlock(&rw);
    CHECK_EQ(rw.reader_count, 0);
    CHECK_EQ(rw.w.state, 0);
}

/* Readers all hold the read lock at once; try forms against readers and a
 * writer. */
TEST(rwmutex_readers_parallel)
{
    run_main(rwmutex_readers_parallel_main, NULL);
}

/* ---------------------------------------------------------------------------
 * rwmutex_writer_not_starved
 *
 * Main is the only writer.  Before its k-th Lock it sets wround = k, and
 * inside it sets wentered = k.  A reader reads wround (k0), then
 * reader_count: negative means a writer holds or waits and has not yet
 * unlocked, and that writer's round is >= k0.  So once RLock returns,
 * wentered must be >= k0, or the reader overtook it.
 * ------------------------------------------------------------------------- */

static gort_rwmutex ws_rw = GORT_RWMUTEX_INIT;
static uint32_t ws_wround, ws_wentered, ws_winside;
static int ws_stop, ws_pending_seen, ws_overtakes, ws_overlaps;
static int64_t ws_reads;
static gort_waitgroup ws_wg;

static void ws_reader(void *arg)
{
    (void)arg;
    while (!A_LOAD(&ws_stop)) {
        uint32_t k0 = A_LOAD(&ws_wround);
        bool pending = A_LOAD(&ws_rw.reader_count) < 0;
        gort_rwmutex_rlock(&ws_rw);
        if (A_LOAD(&ws_winside))
            A_ADD(&ws_overlaps, 1);
        if (pending) {
            A_ADD(&ws_pending_seen, 1);
            if (A_LOAD(&ws_wentered) < k0)
                A_ADD(&ws_overtakes, 1);
        }
        __atomic_add_fetch(&ws_reads, 1, __ATOMIC_RELAXED);
        burn_ns(1000);
        gort_rwmutex_runlock(&ws_rw);
    }
    gort_waitgroup_done(&ws_wg);
}

static void ws_round(int procs)
{
    gort_gomaxprocs(procs);
    A_STORE(&ws_stop, 0);
    int nreaders = 2 * procs;
    gort_waitgroup_add(&ws_wg, nreaders);
    for (int i = 0; i < nreaders; i++)
        gort_go(ws_reader, NULL);
    yield_ns(10 * MS);
    int64_t worst = 0;
    for (int r = 0; r < 50; r++) {
        uint32_t k = A_ADD(&ws_wround, 1);
        int64_t t0 = gort_nanotime();
        gort_rwmutex_lock(&ws_rw);
        int64_t waited = gort_nanotime() - t0;
        A_STORE(&ws_winside, 1);
        A_STORE(&ws_wentered, k);
        burn_ns(20 * 1000);
        A_STORE(&ws_winside, 0);
        gort_rwmutex_unlock(&ws_rw);
        if (waited > worst)
            worst = waited;
        yield_ns(1 * MS);
    }
    A_STORE(&ws_stop, 1);
    gort_waitgroup_wait(&ws_wg);
    fprintf(stderr, "GOMAXPROCS=%d, %d readers: writer worst %.3f ms; "
                    "%lld reads, %d saw a pending writer, %d overtook it\n",
            procs, nreaders, (double)worst / 1e6,
            (long long)__atomic_load_n(&ws_reads, __ATOMIC_RELAXED),
            A_LOAD(&ws_pending_seen), A_LOAD(&ws_overtakes));
    CHECK_LT(worst, BOUND(500));
    CHECK_EQ(A_LOAD(&ws_overtakes), 0);
    CHECK_EQ(A_LOAD(&ws_overlaps), 0);
}

static void rwmutex_writer_not_starved_main(void *arg)
{
    (void)arg;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    ws_round(ncpu > 1 ? ncpu : 2);
    ws_round(4);
    /* The ordering check above was exercised. */
    CHECK_GE(A_LOAD(&ws_pending_seen), 20);
    CHECK_EQ(ws_rw.reader_count, 0);
    CHECK_EQ(ws_rw.w.state, 0);
}

/* Readers arrive without pause on every P; a writer gets in within the bound
 * each time, and a reader that arrived while a writer was pending enters only
 * after that writer has left. */
TEST(rwmutex_writer_not_starved)
{
    run_main(rwmutex_writer_not_starved_main, NULL);
}

/* ---------------------------------------------------------------------------
 * rwmutex_runlock_fatal
 * ------------------------------------------------------------------------- */

static void runlock_unlocked_main(void *arg)
{
    (void)arg;
    gort_rwmutex rw = GORT_RWMUTEX_INIT;
    gort_rwmutex_rlock(&rw);
    gort_rwmutex_runlock(&rw);
    say("balanced\n");
    gort_rwmutex_runlock(&rw);
    say("runlocked twice\n"); /* never */
}

static void wunlock_unlocked_main(void *arg)
{
    (void)arg;
    gort_rwmutex rw = GORT_RWMUTEX_INIT;
    gort_rwmutex_lock(&rw);
    gort_rwmutex_unlock(&rw);
    say("balanced\n");
    gort_rwmutex_unlock(&rw);
    say("unlocked twice\n"); /* never */
}

TEST_HIDDEN(rwmutex_runlock_fatal_child)
{
    gort_main(runlock_unlocked_main, NULL);
}

TEST_HIDDEN(rwmutex_unlock_fatal_child)
{
    gort_main(wunlock_unlocked_main, NULL);
}

/* "sync: RUnlock of unlocked RWMutex" and "sync: Unlock of unlocked
 * RWMutex". */
TEST(rwmutex_runlock_fatal)
{
    struct test_child r;
    run_death("rwmutex_runlock_fatal_child", NULL, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.out, "balanced\n");
    CHECK(strstr(r.out, "twice") == NULL);
    CHECK_STR_CONTAINS(
        r.err, "gort: fatal error: sync: RUnlock of unlocked RWMutex\n");
    test_child_free(&r);

    run_death("rwmutex_unlock_fatal_child", NULL, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.out, "balanced\n");
    CHECK(strstr(r.out, "twice") == NULL);
    CHECK_STR_CONTAINS(
        r.err, "gort: fatal error: sync: Unlock of unlocked RWMutex\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * once_exactly_once
 * ------------------------------------------------------------------------- */

enum { ONCE_G = 100 };
static gort_once once_o;
static int once_runs, once_early;
static int once_payload; /* plain: fn writes it, callers read it after */
static gort_waitgroup once_wg, once_start;

static void once_fn(void *arg)
{
    A_ADD(&once_runs, 1);
    yield_ns(2 * MS); /* the other callers arrive meanwhile */
    once_payload = (int)(intptr_t)arg;
}

static void once_caller(void *arg)
{
    (void)arg;
    gort_waitgroup_done(&once_start);
    gort_waitgroup_wait(&once_start); /* all start together */
    gort_once_do(&once_o, once_fn, (void *)(intptr_t)42);
    if (once_payload != 42)
        A_ADD(&once_early, 1);
    gort_waitgroup_done(&once_wg);
}

static void once_exactly_once_main(void *arg)
{
    (void)arg;
    int procs[4], np = test_procs_list(procs);
    for (int k = 0; k < np; k++) {
        gort_gomaxprocs(procs[k]);
        memset(&once_o, 0, sizeof once_o);
        A_STORE(&once_runs, 0);
        once_payload = 0;
        gort_waitgroup_add(&once_wg, ONCE_G);
        gort_waitgroup_add(&once_start, ONCE_G);
        for (int i = 0; i < ONCE_G; i++)
            gort_go(once_caller, NULL);
        gort_waitgroup_wait(&once_wg);
        CHECK_EQ(A_LOAD(&once_runs), 1);
        CHECK_EQ(A_LOAD(&once_early), 0);
        CHECK_EQ(once_payload, 42);
        /* Later calls do nothing. */
        gort_once_do(&once_o, once_fn, (void *)(intptr_t)7);
        CHECK_EQ(A_LOAD(&once_runs), 1);
        CHECK_EQ(once_payload, 42);
        CHECK_EQ(once_o.m.state, 0);
    }
}

/* 100 goroutines call once_do at once: fn runs once and every caller returns
 * after it ended. */
TEST(once_exactly_once)
{
    run_main(once_exactly_once_main, NULL);
}

/* ---------------------------------------------------------------------------
 * cond_signal_fifo, cond_broadcast
 * ------------------------------------------------------------------------- */

enum { FIFO_WAITERS = 10, BCAST_WAITERS = 50 };
static gort_mutex cond_mu = GORT_MUTEX_INIT;
static gort_cond cond_c = GORT_COND_INIT(&cond_mu);
static struct g *cond_g[BCAST_WAITERS + 1];
static int cond_order[BCAST_WAITERS + 1];
static int cond_woken;
static gort_waitgroup cond_wg;

static void cond_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    gort_mutex_lock(&cond_mu);
    publish_self(&cond_g[i]);
    gort_cond_wait(&cond_c);
    /* c->l is held again here. */
    CHECK(mstate(&cond_mu) & ST_LOCKED);
    cond_order[cond_woken] = i;
    A_STORE(&cond_woken, cond_woken + 1);
    gort_mutex_unlock(&cond_mu);
    gort_waitgroup_done(&cond_wg);
}

/* Start waiter i and return once it waits on the condition: its ticket
 * is taken and it is parked (on the condition: the mutex is free). */
static void cond_start(int i, uint32_t tickets)
{
    __atomic_store_n(&cond_g[i], NULL, __ATOMIC_RELAXED);
    gort_waitgroup_add(&cond_wg, 1);
    gort_go(cond_waiter, (void *)(intptr_t)i);
    CHECK(YIELD_UNTIL(A_LOAD(&cond_c.wait) == tickets &&
                          parked(published(&cond_g[i])),
                      10000));
}

static void cond_reset(void)
{
    A_STORE(&cond_woken, 0);
    memset(cond_order, -1, sizeof cond_order);
}

static void cond_signal_fifo_main(void *arg)
{
    (void)arg;
    int procs[4], np = test_procs_list(procs);
    for (int k = 0; k < np; k++) {
        gort_gomaxprocs(procs[k]);
        cond_reset();
        /* A signal nobody waits for is not kept for a later waiter. */
        gort_cond_signal(&cond_c);
        uint32_t base = A_LOAD(&cond_c.wait);
        cond_start(0, base + 1);
        yield_ns(20 * MS);
        CHECK_EQ(A_LOAD(&cond_woken), 0);
        for (int i = 1; i < FIFO_WAITERS; i++)
            cond_start(i, base + 1 + (uint32_t)i);
        for (int i = 0; i < FIFO_WAITERS; i++) {
            gort_cond_signal(&cond_c);
            CHECK(YIELD_UNTIL(A_LOAD(&cond_woken) == i + 1, 10000));
            yield_ns(1 * MS); /* a second wake-up would show here */
            CHECK_EQ(A_LOAD(&cond_woken), i + 1);
            CHECK_EQ(cond_order[i], i);
        }
        gort_waitgroup_wait(&cond_wg);
        CHECK_EQ(A_LOAD(&cond_c.notify), A_LOAD(&cond_c.wait));
        CHECK(cond_c.head == NULL && cond_c.tail == NULL);
    }
}

/* Waiters wake one per signal, in wait order; a signal with no waiter is not
 * kept. */
TEST(cond_signal_fifo)
{
    run_main(cond_signal_fifo_main, NULL);
}

static void cond_broadcast_main(void *arg)
{
    (void)arg;
    int procs[4], np = test_procs_list(procs);
    for (int k = 0; k < np; k++) {
        gort_gomaxprocs(procs[k]);
        cond_reset();
        gort_cond_broadcast(&cond_c); /* nobody waits: no effect */
        uint32_t base = A_LOAD(&cond_c.wait);
        for (int i = 0; i < BCAST_WAITERS; i++)
            cond_start(i, base + 1 + (uint32_t)i);
        CHECK_EQ(A_LOAD(&cond_woken), 0);
        gort_cond_broadcast(&cond_c);
        CHECK(YIELD_UNTIL(A_LOAD(&cond_woken) == BCAST_WAITERS, 10000));
        gort_waitgroup_wait(&cond_wg);
        /* Each woke once. */
        int seen[BCAST_WAITERS] = {0};
        for (int i = 0; i < BCAST_WAITERS; i++) {
            CHECK(cond_order[i] >= 0 && cond_order[i] < BCAST_WAITERS);
            CHECK_EQ(seen[cond_order[i]]++, 0);
        }
        /* A waiter that comes after the broadcast waits for the next. */
        cond_reset();
        cond_start(BCAST_WAITERS, base + BCAST_WAITERS + 1);
        yield_ns(20 * MS);
        CHECK_EQ(A_LOAD(&cond_woken), 0);
        gort_cond_broadcast(&cond_c);
        gort_waitgroup_wait(&cond_wg);
        CHECK_EQ(A_LOAD(&cond_woken), 1);
        CHECK_EQ(cond_order[0], BCAST_WAITERS);
        CHECK(cond_c.head == NULL && cond_c.tail == NULL);
    }
}

/* Every waiter wakes; a later waiter does not. */
TEST(cond_broadcast)
{
    run_main(cond_broadcast_main, NULL);
}

/* ---------------------------------------------------------------------------
 * sema_many_addresses
 * ------------------------------------------------------------------------- */

/* 251 * 8 bytes apart: (addr >> 3) % 251 is the same for all. */
#define SEM_STRIDE (251 * 8 / sizeof(uint32_t))
enum { MANY_MAX = 5000, LIST_ADDRS = 500, LIST_PER = 3 };
static _Alignas(64) uint32_t many_sems[MANY_MAX * SEM_STRIDE];
static struct g *many_g[MANY_MAX * LIST_PER];
static int many_woke[MANY_MAX];
static int many_nwoke;
static gort_waitgroup many_wg;

static uint32_t *many_addr(int i)
{
    return &many_sems[(size_t)i * SEM_STRIDE];
}

static void many_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    publish_self(&many_g[i]);
    gort__semacquire(many_addr(i), WAIT_SEMACQUIRE);
    A_ADD(&many_woke[i], 1);
    A_ADD(&many_nwoke, 1);
    gort_waitgroup_done(&many_wg);
}

/* Three waiters per address: roles 0 and 1 queue FIFO, role 2 LIFO. */
static int list_rank[LIST_ADDRS][LIST_PER];
static int list_n[LIST_ADDRS];

static void list_waiter(void *arg)
{
    int id = (int)(intptr_t)arg, a = id / LIST_PER, role = id % LIST_PER;
    publish_self(&many_g[id]);
    gort__semacquire1(many_addr(a), role == 2, WAIT_SEMACQUIRE);
    list_rank[a][list_n[a]] = role;
    A_STORE(&list_n[a], list_n[a] + 1);
    gort_waitgroup_done(&many_wg);
}

static bool all_parked(int from, int to)
{
    for (int i = from; i < to; i++)
        if (!parked(published(&many_g[i])))
            return false;
    return true;
}

static void many_distinct(int n)
{
    gort_waitgroup_add(&many_wg, n);
    for (int i = 0; i < n; i++)
        CHECK_GT(gort_go(many_waiter, (void *)(intptr_t)i), 0);
    CHECK(YIELD_UNTIL(all_parked(0, n), 60000));
    static int perm[MANY_MAX];
    for (int i = 0; i < n; i++)
        perm[i] = i;
    shuffle(perm, n);
    /* Release half, and check that exactly those woke. */
    int half = n / 2;
    static bool released[MANY_MAX];
    for (int k = 0; k < half; k++) {
        released[perm[k]] = true;
        gort__semrelease(many_addr(perm[k]), k & 1);
    }
    CHECK(YIELD_UNTIL(A_LOAD(&many_nwoke) == half, 60000));
    yield_ns(5 * MS);
    CHECK_EQ(A_LOAD(&many_nwoke), half);
    for (int i = 0; i < n; i++)
        CHECK_EQ(A_LOAD(&many_woke[i]), released[i] ? 1 : 0);
    for (int k = half; k < n; k++)
        gort__semrelease(many_addr(perm[k]), k & 1);
    gort_waitgroup_wait(&many_wg);
    CHECK_EQ(A_LOAD(&many_nwoke), n);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(A_LOAD(&many_woke[i]), 1);
        CHECK_EQ(*many_addr(i), 0);
    }
}

static void many_lists(void)
{
    int n = LIST_ADDRS * LIST_PER;
    memset(many_g, 0, sizeof many_g);
    /* Queue by role, so that each address's list is built in order:
     * [0], [0 1], then 2 pushed in front: [2 0 1]. */
    gort_waitgroup_add(&many_wg, n);
    for (int role = 0; role < LIST_PER; role++) {
        for (int a = 0; a < LIST_ADDRS; a++)
            gort_go(list_waiter, (void *)(intptr_t)(a * LIST_PER + role));
        for (int a = 0; a < LIST_ADDRS; a++)
            CHECK(YIELD_UNTIL(parked(published(&many_g[a * LIST_PER + role])),
                              60000));
    }
    /* Release one waiter at a time, addresses in random order. */
    static int perm[LIST_ADDRS * LIST_PER];
    for (int i = 0; i < n; i++)
        perm[i] = i / LIST_PER;
    shuffle(perm, n);
    for (int k = 0; k < n; k++) {
        int a = perm[k], before = A_LOAD(&list_n[a]);
        gort__semrelease(many_addr(a), k & 1);
        CHECK(YIELD_UNTIL(A_LOAD(&list_n[a]) == before + 1, 10000));
    }
    gort_waitgroup_wait(&many_wg);
    for (int a = 0; a < LIST_ADDRS; a++) {
        CHECK_EQ(list_n[a], LIST_PER);
        CHECK_EQ(list_rank[a][0], 2);
        CHECK_EQ(list_rank[a][1], 0);
        CHECK_EQ(list_rank[a][2], 1);
        CHECK_EQ(*many_addr(a), 0);
    }
}

static void sema_many_addresses_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    int n = TSAN ? 1000 : MANY_MAX;
    int64_t t0 = gort_nanotime();
    many_distinct(n);
    int64_t t1 = gort_nanotime();
    many_lists();
    fprintf(stderr, "%d distinct addresses in one root: %.1f ms; "
                    "%d x %d lists: %.1f ms\n",
            n, (double)(t1 - t0) / 1e6, LIST_ADDRS, LIST_PER,
            (double)(gort_nanotime() - t1) / 1e6);
}

/* Thousands of goroutines parked on distinct addresses of one semaphore root
 * (251 * 8 bytes apart), released in random order: each wakes exactly once,
 * when its own address is released; then three waiters per address (two FIFO,
 * one LIFO) wake in queue order. */
TEST(sema_many_addresses)
{
    run_main(sema_many_addresses_main, NULL);
}

/* ---------------------------------------------------------------------------
 * sema_stress
 * ------------------------------------------------------------------------- */

enum { STRESS_SEMS = 4, STRESS_G = 16 };
static const uint32_t stress_cap[STRESS_SEMS] = {1, 2, 3, 1};
static uint32_t stress_sem[STRESS_SEMS];
static int stress_inside[STRESS_SEMS], stress_over[STRESS_SEMS];
static int64_t stress_count[STRESS_SEMS];
static int64_t stress_plain[STRESS_SEMS]; /* plain: for capacity 1 only */
static int stress_iters;
static gort_waitgroup stress_wg;

static void stress_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int it = 0; it < stress_iters; it++) {
        int j = (id + it) % STRESS_SEMS;
        gort__semacquire1(&stress_sem[j], it % 3 == 0, WAIT_SEMACQUIRE);
        if ((uint32_t)A_ADD(&stress_inside[j], 1) > stress_cap[j])
            A_ADD(&stress_over[j], 1);
        __atomic_add_fetch(&stress_count[j], 1, __ATOMIC_RELAXED);
        if (stress_cap[j] == 1)
            stress_plain[j]++;
        A_ADD(&stress_inside[j], -1);
        gort__semrelease(&stress_sem[j], it & 1);
    }
    gort_waitgroup_done(&stress_wg);
}

static void sema_stress_main(void *arg)
{
    (void)arg;
    stress_iters = SANITIZED ? 5000 : 50000;
    int procs[4], np = test_procs_list(procs);
    for (int k = 0; k < np; k++) {
        gort_gomaxprocs(procs[k]);
        for (int j = 0; j < STRESS_SEMS; j++) {
            stress_sem[j] = stress_cap[j];
            stress_count[j] = stress_plain[j] = 0;
        }
        gort_waitgroup_add(&stress_wg, STRESS_G);
        for (int i = 0; i < STRESS_G; i++)
            gort_go(stress_worker, (void *)(intptr_t)i);
        gort_waitgroup_wait(&stress_wg);
        int64_t per = (int64_t)STRESS_G * stress_iters / STRESS_SEMS;
        for (int j = 0; j < STRESS_SEMS; j++) {
            CHECK_EQ(stress_sem[j], stress_cap[j]);
            CHECK_EQ(stress_count[j], per);
            CHECK_EQ(A_LOAD(&stress_over[j]), 0);
            if (stress_cap[j] == 1)
                CHECK_EQ(stress_plain[j], per);
        }
    }
}

/* Heavy acquire/release traffic (with and without hand-off and LIFO) on four
 * semaphores: counts exact, capacity respected. */
TEST(sema_stress)
{
    run_main(sema_stress_main, NULL);
}

/* ---------------------------------------------------------------------------
 * WaitGroup.Go.
 * ------------------------------------------------------------------------- */

static int wgo_ran; /* atomic */

static void wgo_work(void *arg)
{
    ATOMIC_INC(&wgo_ran);
    if (arg) /* ends by gort_goexit: Done all the same */
        gort_goexit();
}

static void wgo_main(void *arg)
{
    (void)arg;
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    for (int i = 0; i < 100; i++)
        CHECK_GT(gort_waitgroup_go(&wg, wgo_work, (void *)(intptr_t)(i % 2)),
                 0);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(ATOMIC_LOAD(&wgo_ran), 100);
    CHECK_EQ(gort_waitgroup_go(NULL, wgo_work, NULL), -EINVAL);
    CHECK_EQ(gort_waitgroup_go(&wg, NULL, NULL), -EINVAL);
    /* Nothing was added by the failed calls: the wait returns. */
    gort_waitgroup_wait(&wg);
}

/* gort_waitgroup_go starts 100 goroutines the wait group waits for, half
 * of them ending with gort_goexit; NULL arguments return -EINVAL and
 * leave the counter alone. */
TEST(waitgroup_go)
{
    run_main(wgo_main, NULL);
}

static void wgo_outside(void *arg)
{
    (void)arg;
}

/* Outside gort_main: gort_go's -EPERM, the counter unchanged. */
TEST(waitgroup_go_outside)
{
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    CHECK_EQ(gort_waitgroup_go(&wg, wgo_outside, NULL), -EPERM);
    CHECK_EQ(wg.state, 0);
}
