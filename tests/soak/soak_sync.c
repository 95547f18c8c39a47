/* SPDX-License-Identifier: MIT */
/*
 * soak_sync.c - gort's sync package under the soak.
 *
 *   mutex      rounds of goroutines incrementing a plain counter under one
 *              gort_mutex (lock or trylock with a yield), holding it for
 *              nothing, a yield or a short sleep (which pushes the mutex
 *              into starvation mode): never two inside, the exact total
 *   rwmutex    readers check that three fields written together by the
 *              writers are equal and that no writer is inside; writers
 *              check that nobody else is; rlock, tryrlock, lock, trylock
 *   cond       a bounded queue between producers and consumers with a
 *              mutex and two conds, woken by signal or broadcast: every
 *              value exactly once, the sum exact
 *   once       goroutines race into gort_once_do: the function runs once
 *              and every caller returns after it, seeing what it wrote
 *   waitgroup  goroutines finishing while several waiters wait: every
 *              waiter returns after the last done, the counter reused
 *
 * The data the primitives protect are plain variables: a lost exclusion or
 * a missing ordering shows up as a wrong value (and under ThreadSanitizer
 * as a race report).
 */
#include "soak.h"

#include <stdlib.h>
#include <string.h>

#define SYNC_MAX_G 8
/* Failed trylocks retried after a yield before blocking (soak_chan.c says
 * why the retries are bounded). */
#define TRY_YIELDS 3
#define SYNC_MAX_OPS (SOAK_SANITIZED ? 300 : 2000)

/* A goroutine of a round: the round, its own random state, its number. */
struct sync_g {
    void *round;
    uint64_t rng;
    int id;
};

static uint64_t g_rand(struct sync_g *g)
{
    uint64_t x = g->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return g->rng = x;
}

/* Start n goroutines running fn on gs[0..n), each with a seed from w. */
static void start_group(struct soak_worker *w, struct sync_g *gs, int n,
                        void *round, void (*fn)(void *))
{
    for (int i = 0; i < n; i++) {
        gs[i] = (struct sync_g){round, soak_rand(w) | 1, i};
        soak_go(w, fn, &gs[i]);
    }
}

/* ---------------------------------------------------------------------------
 * mutex
 * ------------------------------------------------------------------------- */

struct mutex_round {
    struct soak_worker *w;
    gort_mutex mu;
    int64_t counter;     /* under mu */
    int inside;          /* goroutines inside, relaxed atomics */
    int64_t ops;         /* increments per goroutine */
    gort_waitgroup wg;
};

static void mutex_acquire(struct mutex_round *r, struct sync_g *g)
{
    int tries = g_rand(g) % 4 == 0 ? TRY_YIELDS : 0;
    for (; tries > 0 && !gort_mutex_trylock(&r->mu); tries--)
        gort_gosched();
    if (tries == 0)
        gort_mutex_lock(&r->mu);
    /* Relaxed: the mutex orders everything; the flag only detects two
     * holders at once. */
    if (__atomic_add_fetch(&r->inside, 1, __ATOMIC_RELAXED) != 1)
        soak_fail(r->w, "two goroutines inside one gort_mutex");
}

static void mutex_g(void *arg)
{
    struct sync_g *g = arg;
    struct mutex_round *r = g->round;
    for (int64_t i = 0; i < r->ops; i++) {
        mutex_acquire(r, g);
        int64_t c = r->counter;
        uint64_t hold = g_rand(g) % 64;
        if (hold == 0)
            gort_sleep((int64_t)(g_rand(g) % (2 * SOAK_MS)));
        else if (hold < 8)
            gort_gosched();
        r->counter = c + 1;
        __atomic_sub_fetch(&r->inside, 1, __ATOMIC_RELAXED);
        gort_mutex_unlock(&r->mu);
        soak_step(r->w);
    }
    gort_waitgroup_done(&r->wg);
}

void soak_mutex(struct soak_worker *w)
{
    struct mutex_round r;
    struct sync_g gs[SYNC_MAX_G];
    while (soak_running()) {
        memset(&r, 0, sizeof r);
        r.w = w;
        int n = (int)soak_between(w, 2, SYNC_MAX_G);
        r.ops = soak_between(w, 1, SYNC_MAX_OPS / 4);
        gort_waitgroup_add(&r.wg, n);
        start_group(w, gs, n, &r, mutex_g);
        gort_waitgroup_wait(&r.wg);
        gort_mutex_lock(&r.mu);
        if (r.counter != n * r.ops)
            soak_fail(w, "counter %lld under the mutex, want %lld",
                      (long long)r.counter, (long long)(n * r.ops));
        gort_mutex_unlock(&r.mu);
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * rwmutex
 * ------------------------------------------------------------------------- */

struct rw_round {
    struct soak_worker *w;
    gort_rwmutex rw;
    int64_t a, b, c;   /* written together under the write lock */
    int readers;       /* inside with the read lock (relaxed atomics) */
    int writers;       /* inside with the write lock (relaxed atomics) */
    int nw;            /* writer goroutines: ids below nw write */
    int64_t ops;
    int64_t writes;    /* write sections done, under the write lock */
    gort_waitgroup wg;
};

static void rw_read(struct rw_round *r, struct sync_g *g)
{
    int tries = g_rand(g) % 4 == 0 ? TRY_YIELDS : 0;
    for (; tries > 0 && !gort_rwmutex_tryrlock(&r->rw); tries--)
        gort_gosched();
    if (tries == 0)
        gort_rwmutex_rlock(&r->rw);
    __atomic_add_fetch(&r->readers, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&r->writers, __ATOMIC_RELAXED) != 0)
        soak_fail(r->w, "a reader inside with a writer");
    int64_t a = r->a;
    if (g_rand(g) % 8 == 0)
        gort_gosched();
    if (r->b != a || r->c != a)
        soak_fail(r->w, "a reader saw a %lld b %lld c %lld", (long long)a,
                  (long long)r->b, (long long)r->c);
    __atomic_sub_fetch(&r->readers, 1, __ATOMIC_RELAXED);
    gort_rwmutex_runlock(&r->rw);
}

static void rw_write(struct rw_round *r, struct sync_g *g)
{
    int tries = g_rand(g) % 4 == 0 ? TRY_YIELDS : 0;
    for (; tries > 0 && !gort_rwmutex_trylock(&r->rw); tries--)
        gort_gosched();
    if (tries == 0)
        gort_rwmutex_lock(&r->rw);
    int writers = __atomic_add_fetch(&r->writers, 1, __ATOMIC_RELAXED);
    int readers = __atomic_load_n(&r->readers, __ATOMIC_RELAXED);
    if (writers != 1 || readers != 0)
        soak_fail(r->w, "a writer inside with %d writers and %d readers",
                  writers, readers);
    r->a++;
    if (g_rand(g) % 4 == 0)
        gort_gosched();
    r->b++;
    r->c++;
    r->writes++;
    __atomic_sub_fetch(&r->writers, 1, __ATOMIC_RELAXED);
    gort_rwmutex_unlock(&r->rw);
}

static void rw_g(void *arg)
{
    struct sync_g *g = arg;
    struct rw_round *r = g->round;
    for (int64_t i = 0; i < r->ops; i++) {
        if (g->id < r->nw)
            rw_write(r, g);
        else
            rw_read(r, g);
        soak_step(r->w);
    }
    gort_waitgroup_done(&r->wg);
}

void soak_rwmutex(struct soak_worker *w)
{
    struct rw_round r;
    struct sync_g gs[SYNC_MAX_G];
    while (soak_running()) {
        memset(&r, 0, sizeof r);
        r.w = w;
        int n = (int)soak_between(w, 2, SYNC_MAX_G);
        r.nw = (int)soak_between(w, 1, 2);
        r.ops = soak_between(w, 1, SYNC_MAX_OPS / 2);
        gort_waitgroup_add(&r.wg, n);
        start_group(w, gs, n, &r, rw_g);
        gort_waitgroup_wait(&r.wg);
        if (r.writes != r.nw * r.ops || r.a != r.writes || r.c != r.writes)
            soak_fail(w, "%lld write sections, a %lld c %lld, want %lld",
                      (long long)r.writes, (long long)r.a, (long long)r.c,
                      (long long)(r.nw * r.ops));
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * cond
 * ------------------------------------------------------------------------- */

#define COND_QUEUE 8

struct cond_round {
    struct soak_worker *w;
    gort_mutex mu;
    gort_cond notempty, notfull;
    int64_t q[COND_QUEUE];  /* under mu, like everything below */
    int head, len, cap;
    int producing;          /* producers not yet done */
    int64_t per;            /* values per producer */
    int64_t sum, count;     /* what the consumers took */
    bool broadcast;         /* wake with broadcast instead of signal */
    int np;                 /* producers: ids below np produce */
    gort_waitgroup wg;
};

static void cond_wake(struct cond_round *r, gort_cond *c)
{
    if (r->broadcast)
        gort_cond_broadcast(c);
    else
        gort_cond_signal(c);
}

static void cond_produce(struct cond_round *r, struct sync_g *g)
{
    for (int64_t i = 1; i <= r->per; i++) {
        gort_mutex_lock(&r->mu);
        while (r->len == r->cap)
            gort_cond_wait(&r->notfull);
        r->q[(r->head + r->len++) % COND_QUEUE] = g->id * r->per + i;
        cond_wake(r, &r->notempty);
        gort_mutex_unlock(&r->mu);
        soak_step(r->w);
    }
    gort_mutex_lock(&r->mu);
    if (--r->producing == 0)
        gort_cond_broadcast(&r->notempty); /* consumers may end */
    gort_mutex_unlock(&r->mu);
}

static void cond_consume(struct cond_round *r)
{
    gort_mutex_lock(&r->mu);
    for (;;) {
        while (r->len == 0 && r->producing > 0)
            gort_cond_wait(&r->notempty);
        if (r->len == 0)
            break;
        r->sum += r->q[r->head];
        r->count++;
        r->head = (r->head + 1) % COND_QUEUE;
        r->len--;
        cond_wake(r, &r->notfull);
    }
    gort_mutex_unlock(&r->mu);
}

static void cond_g(void *arg)
{
    struct sync_g *g = arg;
    struct cond_round *r = g->round;
    if (g->id < r->np)
        cond_produce(r, g);
    else
        cond_consume(r);
    gort_waitgroup_done(&r->wg);
}

void soak_cond(struct soak_worker *w)
{
    struct cond_round r;
    struct sync_g gs[SYNC_MAX_G];
    while (soak_running()) {
        memset(&r, 0, sizeof r);
        r.w = w;
        r.notempty = (gort_cond)GORT_COND_INIT(&r.mu);
        r.notfull = (gort_cond)GORT_COND_INIT(&r.mu);
        r.cap = (int)soak_between(w, 1, COND_QUEUE);
        r.np = (int)soak_between(w, 1, SYNC_MAX_G / 2);
        int nc = (int)soak_between(w, 1, SYNC_MAX_G / 2);
        r.producing = r.np;
        r.per = soak_between(w, 1, SYNC_MAX_OPS);
        r.broadcast = soak_one_in(w, 2);
        gort_waitgroup_add(&r.wg, r.np + nc);
        start_group(w, gs, r.np + nc, &r, cond_g);
        gort_waitgroup_wait(&r.wg);
        /* Producer p sends p*per+1 .. p*per+per. */
        int64_t n = r.np * r.per;
        int64_t want = n * (n + 1) / 2;
        if (r.count != n || r.sum != want || r.len != 0)
            soak_fail(w, "consumers took %lld values summing to %lld, want "
                         "%lld summing to %lld (%d left queued)",
                      (long long)r.count, (long long)r.sum, (long long)n,
                      (long long)want, r.len);
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * once
 * ------------------------------------------------------------------------- */

struct once_round {
    struct soak_worker *w;
    gort_once once;
    int calls;          /* runs of the function (relaxed atomics) */
    int64_t value;      /* written by the function, plain */
    int64_t want;
    int64_t sleep_ns;   /* how long the function takes */
    gort_waitgroup wg;
};

static void once_fn(void *arg)
{
    struct once_round *r = arg;
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED);
    if (r->sleep_ns > 0)
        gort_sleep(r->sleep_ns);
    else
        gort_gosched();
    r->value = r->want;
}

static void once_g(void *arg)
{
    struct sync_g *g = arg;
    struct once_round *r = g->round;
    if (g_rand(g) % 2)
        gort_gosched();
    gort_once_do(&r->once, once_fn, r);
    /* gort_once_do returns after the function completed. */
    if (r->value != r->want)
        soak_fail(r->w, "gort_once_do returned before its function ended "
                        "(value %lld, want %lld)",
                  (long long)r->value, (long long)r->want);
    gort_waitgroup_done(&r->wg);
}

void soak_once(struct soak_worker *w)
{
    struct once_round r;
    struct sync_g gs[2 * SYNC_MAX_G];
    while (soak_running()) {
        memset(&r, 0, sizeof r);
        r.w = w;
        r.want = (int64_t)(soak_rand(w) >> 1) | 1;
        r.sleep_ns = soak_one_in(w, 2) ? soak_between(w, 0, SOAK_MS) : 0;
        int n = (int)soak_between(w, 2, 2 * SYNC_MAX_G);
        gort_waitgroup_add(&r.wg, n);
        start_group(w, gs, n, &r, once_g);
        gort_waitgroup_wait(&r.wg);
        gort_once_do(&r.once, once_fn, &r); /* done: must not run again */
        if (r.calls != 1)
            soak_fail(w, "the once function ran %d times", r.calls);
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * waitgroup
 * ------------------------------------------------------------------------- */

struct wg_round {
    struct soak_worker *w;
    gort_waitgroup *wg;     /* the one reused across rounds */
    int n;                  /* goroutines that call done */
    int finished;           /* of those, done (relaxed atomics) */
    gort_waitgroup waiters; /* the waiter goroutines' own ends */
};

static void wg_worker(void *arg)
{
    struct sync_g *g = arg;
    struct wg_round *r = g->round;
    uint64_t how = g_rand(g) % 4;
    if (how == 0)
        gort_sleep((int64_t)(g_rand(g) % SOAK_MS));
    else if (how == 1)
        gort_gosched();
    __atomic_add_fetch(&r->finished, 1, __ATOMIC_RELAXED);
    gort_waitgroup_done(r->wg);
}

static void wg_waiter(void *arg)
{
    struct sync_g *g = arg;
    struct wg_round *r = g->round;
    gort_waitgroup_wait(r->wg);
    int f = __atomic_load_n(&r->finished, __ATOMIC_RELAXED);
    if (f != r->n)
        soak_fail(r->w, "gort_waitgroup_wait returned after %d of %d done",
                  f, r->n);
    gort_waitgroup_done(&r->waiters);
}

void soak_waitgroup(struct soak_worker *w)
{
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    struct wg_round r;
    struct sync_g *gs = soak_alloc(w, sizeof *gs * 64);
    while (soak_running()) {
        memset(&r, 0, sizeof r);
        r.w = w;
        r.wg = &wg;
        r.n = (int)soak_between(w, 1, 60);
        int nwait = (int)soak_between(w, 0, 3);
        bool at_once = soak_one_in(w, 2);
        /* One count of our own keeps the waiters waiting until every
         * worker has been added. */
        gort_waitgroup_add(&wg, 1);
        gort_waitgroup_add(&r.waiters, nwait);
        start_group(w, gs, nwait, &r, wg_waiter);
        if (at_once)
            gort_waitgroup_add(&wg, r.n);
        for (int i = 0; i < r.n; i++) {
            if (!at_once)
                gort_waitgroup_add(&wg, 1);
            gs[nwait + i] = (struct sync_g){&r, soak_rand(w) | 1, i};
            soak_go(w, wg_worker, &gs[nwait + i]);
        }
        gort_waitgroup_done(&wg);
        gort_waitgroup_wait(&wg);
        if (__atomic_load_n(&r.finished, __ATOMIC_RELAXED) != r.n)
            soak_fail(w, "gort_waitgroup_wait returned after %d of %d done",
                      r.finished, r.n);
        /* Every waiter must be out before the next round's add. */
        gort_waitgroup_wait(&r.waiters);
        soak_progress(w);
    }
    free(gs);
}
