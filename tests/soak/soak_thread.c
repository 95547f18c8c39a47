/* SPDX-License-Identifier: MIT */
/*
 * soak_thread.c - threads under the soak: goroutines locked to their
 * thread, threads gort did not create, and the observability calls.
 *
 *   lockthread  gort_lock_os_thread (nested), then yields, sleeps, channel
 *               round trips with another goroutine and wrapped sleeps: the
 *               thread id and a __thread value must stay, and no other
 *               goroutine may run on the thread meanwhile (the spawn
 *               storms' goroutines look: soak_check_thread).  One
 *               iteration in eight starts a goroutine that exits while
 *               locked, whose thread must then end.
 *   foreign     a plain pthread that starts goroutines with gort_go and
 *               talks to them: request/reply over channels it made,
 *               select over two channels fed by goroutines until both
 *               close, a gort_mutex shared with a goroutine, trysend and
 *               tryrecv, waiting on WaitGroups, reading metrics: every
 *               value checked.  At the end of the run (the program
 *               quiet), a thread that has read metrics and returned must
 *               not count as a goroutine.
 *   observe     every 0.2-1 s: metrics (the goroutine counts for the
 *               status line), goroutine dumps plain and grouped into
 *               /dev/null, per-P schedule counts, the Prometheus text;
 *               every 20 s or so an execution trace of 100 ms; with -v a
 *               schedtrace line every 5 s (from this goroutine: the
 *               watchdog thread stays out of gort)
 */
#include "soak.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int thread_id(void)
{
    return (int)syscall(SYS_gettid);
}

void soak_check_thread(struct soak_worker *w)
{
    /* No migration between reading the thread id and the slots. */
    gort_preempt_disable();
    int tid = thread_id();
    for (int i = 0; i < SOAK_LOCKED_SLOTS; i++)
        /* Acquire pairs with the release stores in lockthread: a slot
         * cleared before its goroutine unlocked reads as cleared here. */
        if (__atomic_load_n(&soak_locked_tids[i], __ATOMIC_ACQUIRE) == tid)
            soak_fail(w, "goroutine %lld runs on thread %d, locked to a "
                         "lockthread worker",
                      (long long)gort_goid(), tid);
    gort_preempt_enable();
}

/* ---------------------------------------------------------------------------
 * lockthread
 * ------------------------------------------------------------------------- */

static __thread uint64_t tls_token;

struct lock_ctx {
    struct soak_worker *w;
    int tid;
    uint64_t token;
    gort_chan *ping, *pong;   /* round trips with the echo goroutine */
    gort_waitgroup echo_wg;   /* the echo goroutine's end */
};

static void lock_echo(void *arg)
{
    struct lock_ctx *c = arg;
    uint64_t v;
    while (gort_chan_recv(c->ping, &v)) {
        v++;
        gort_chan_send(c->pong, &v);
    }
    gort_waitgroup_done(&c->echo_wg);
}

/* The goroutine is still on its thread with its __thread value. */
static void lock_check(struct lock_ctx *c, const char *after)
{
    int tid = thread_id();
    if (tid != c->tid || tls_token != c->token)
        soak_fail(c->w, "locked goroutine after %s: thread %d (locked to "
                        "%d), __thread value %#llx (was %#llx)",
                  after, tid, c->tid, (unsigned long long)tls_token,
                  (unsigned long long)c->token);
}

static void lock_op(struct lock_ctx *c)
{
    struct soak_worker *w = c->w;
    switch (soak_rand(w) % 5) {
    case 0:
        gort_gosched();
        lock_check(c, "gort_gosched");
        break;
    case 1:
        gort_sleep(soak_between(w, 0, 2 * SOAK_MS));
        lock_check(c, "gort_sleep");
        break;
    case 2: {
        uint64_t v = soak_rand(w), got = 0;
        gort_chan_send(c->ping, &v);
        if (!gort_chan_recv(c->pong, &got) || got != v + 1)
            soak_fail(w, "locked round trip: sent %llu, got %llu",
                      (unsigned long long)v, (unsigned long long)got);
        lock_check(c, "a channel round trip");
        break;
    }
    case 3: {
        struct timespec ts = {0, (long)soak_between(w, 0, SOAK_MS)};
        SOAK_OK(w, gort_nanosleep(&ts, NULL));
        lock_check(c, "gort_nanosleep");
        break;
    }
    default:
        gort_lock_os_thread(); /* nested */
        gort_gosched();
        gort_unlock_os_thread();
        gort_gosched();
        lock_check(c, "a nested lock and unlock");
        break;
    }
}

static void lock_round(struct lock_ctx *c, int *slot)
{
    gort_lock_os_thread();
    c->tid = thread_id();
    c->token = soak_rand(c->w);
    tls_token = c->token;
    /* Release: a goroutine that later runs on this thread reads the slot
     * cleared (below), never this value. */
    __atomic_store_n(slot, c->tid, __ATOMIC_RELEASE);
    for (int i = (int)soak_between(c->w, 1, 8); i > 0; i--)
        lock_op(c);
    __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
    gort_unlock_os_thread();
}

struct exit_ctx {
    gort_chan *tid;
    gort_waitgroup sent;  /* the goroutine is done with the channel */
};

static void exit_locked(void *arg)
{
    struct exit_ctx *e = arg;
    gort_lock_os_thread();
    int tid = thread_id();
    gort_chan_send(e->tid, &tid);
    gort_waitgroup_done(&e->sent);
    /* Returning while locked ends this thread. */
}

/* A goroutine exits locked; its thread must go away, unless it is the
 * main thread. */
static void lock_exit_round(struct soak_worker *w)
{
    struct exit_ctx e = {soak_chan_make(w, sizeof(int), 0),
                         GORT_WAITGROUP_INIT};
    int tid = 0;
    gort_waitgroup_add(&e.sent, 1);
    soak_go(w, exit_locked, &e);
    gort_chan_recv(e.tid, &tid);
    gort_waitgroup_wait(&e.sent);
    soak_chan_free(w, e.tid);
    /* The thread that called gort_main stays: gort_main returns on it
     * (src/mthread.c, gort__mexit). */
    if (tid == getpid())
        return;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", tid);
    struct stat st;
    int64_t end = gort_nanotime() + soak_patience();
    while (stat(path, &st) == 0 && gort_nanotime() < end)
        gort_sleep(SOAK_MS);
    if (stat(path, &st) == 0)
        soak_fail(w, "thread %d lives %lld s after its goroutine exited "
                     "locked",
                  tid, (long long)(soak_patience() / SOAK_S));
    soak_count(&soak_stats.threads_ended, 1);
}

void soak_lockthread(struct soak_worker *w)
{
    struct lock_ctx c = {.w = w};
    c.ping = soak_chan_make(w, sizeof(uint64_t), 0);
    c.pong = soak_chan_make(w, sizeof(uint64_t), 0);
    gort_waitgroup_add(&c.echo_wg, 1);
    soak_go(w, lock_echo, &c);
    int *slot = &soak_locked_tids[w->index % SOAK_LOCKED_SLOTS];
    while (soak_running()) {
        if (soak_one_in(w, 8))
            lock_exit_round(w);
        else
            lock_round(&c, slot);
        soak_progress(w);
    }
    gort_chan_close(c.ping);
    gort_waitgroup_wait(&c.echo_wg);
    soak_chan_free(w, c.ping);
    soak_chan_free(w, c.pong);
}

/* ---------------------------------------------------------------------------
 * foreign
 * ------------------------------------------------------------------------- */

#define FOREIGN_MAX 200

struct foreign_ctx {
    struct soak_worker *w;
    gort_chan *a, *b;         /* requests / replies, or two feeds */
    int64_t n;                /* values per exchange */
    gort_mutex mu;
    int64_t counter;          /* under mu */
    gort_waitgroup wg;        /* the goroutines started */
};

/* Replies v + 1 to every request until the request channel closes. */
static void foreign_echo(void *arg)
{
    struct foreign_ctx *f = arg;
    int64_t v;
    while (gort_chan_recv(f->a, &v)) {
        v++;
        gort_chan_send(f->b, &v);
    }
    gort_waitgroup_done(&f->wg);
}

static void foreign_request_reply(struct foreign_ctx *f)
{
    struct soak_worker *w = f->w;
    f->a = soak_chan_make(w, sizeof(int64_t), (size_t)soak_between(w, 0, 4));
    f->b = soak_chan_make(w, sizeof(int64_t), 0);
    gort_waitgroup_add(&f->wg, 1);
    soak_go(w, foreign_echo, f);
    for (int64_t i = 0; i < f->n; i++) {
        int64_t v = (int64_t)(soak_rand(w) >> 2), got = 0;
        gort_chan_send(f->a, &v);
        if (!gort_chan_recv(f->b, &got) || got != v + 1)
            soak_fail(w, "request %lld answered %lld", (long long)v,
                      (long long)got);
        soak_step(w);
    }
    gort_chan_close(f->a);
    gort_waitgroup_wait(&f->wg);
    soak_chan_free(w, f->a);
    soak_chan_free(w, f->b);
}

/* Sends 1..n on a, then closes it. */
static void foreign_feed_a(void *arg)
{
    struct foreign_ctx *f = arg;
    for (int64_t i = 1; i <= f->n; i++)
        gort_chan_send(f->a, &i);
    gort_chan_close(f->a);
    gort_waitgroup_done(&f->wg);
}

/* Sends -1..-n on b, then closes it. */
static void foreign_feed_b(void *arg)
{
    struct foreign_ctx *f = arg;
    for (int64_t i = 1; i <= f->n; i++) {
        int64_t v = -i;
        gort_chan_send(f->b, &v);
    }
    gort_chan_close(f->b);
    gort_waitgroup_done(&f->wg);
}

static void foreign_select(struct foreign_ctx *f)
{
    struct soak_worker *w = f->w;
    f->a = soak_chan_make(w, sizeof(int64_t), (size_t)soak_between(w, 0, 4));
    f->b = soak_chan_make(w, sizeof(int64_t), (size_t)soak_between(w, 0, 4));
    gort_waitgroup_add(&f->wg, 2);
    soak_go(w, foreign_feed_a, f);
    soak_go(w, foreign_feed_b, f);
    int64_t sum_a = 0, sum_b = 0, v = 0;
    gort_case c[2] = {{.ch = f->a, .dir = GORT_CASE_RECV, .elem = &v},
                      {.ch = f->b, .dir = GORT_CASE_RECV, .elem = &v}};
    while (c[0].ch != NULL || c[1].ch != NULL) {
        int idx = gort_select(c, 2);
        if (idx != 0 && idx != 1)
            soak_fail(w, "gort_select on a foreign thread returned %d", idx);
        if (!c[idx].ok)
            c[idx].ch = NULL;
        else if (idx == 0)
            sum_a += v;
        else
            sum_b += v;
        soak_step(w);
    }
    int64_t want = f->n * (f->n + 1) / 2;
    if (sum_a != want || sum_b != -want)
        soak_fail(w, "select on a foreign thread: sums %lld and %lld, want "
                     "%lld and %lld",
                  (long long)sum_a, (long long)sum_b, (long long)want,
                  (long long)-want);
    gort_waitgroup_wait(&f->wg);
    soak_chan_free(w, f->a);
    soak_chan_free(w, f->b);
}

static void foreign_add(struct foreign_ctx *f)
{
    for (int64_t i = 0; i < f->n; i++) {
        gort_mutex_lock(&f->mu);
        int64_t c = f->counter;
        f->counter = c + 1;
        gort_mutex_unlock(&f->mu);
        soak_step(f->w);
    }
}

static void foreign_adder(void *arg)
{
    struct foreign_ctx *f = arg;
    foreign_add(f);
    gort_waitgroup_done(&f->wg);
}

static void foreign_mutex(struct foreign_ctx *f)
{
    f->counter = 0;
    gort_waitgroup_add(&f->wg, 1);
    soak_go(f->w, foreign_adder, f);
    foreign_add(f);
    gort_waitgroup_wait(&f->wg);
    gort_mutex_lock(&f->mu);
    if (f->counter != 2 * f->n)
        soak_fail(f->w, "counter %lld under a mutex shared with a goroutine, "
                        "want %lld",
                  (long long)f->counter, (long long)(2 * f->n));
    gort_mutex_unlock(&f->mu);
}

/* The metrics read from the thread (gort.h: callable from any thread). */
static void foreign_metrics(struct foreign_ctx *f)
{
    gort_metric_sample s = {.name = "/sched/goroutines:goroutines"};
    int r = gort_metrics_read(&s, 1);
    if (r != 0 || s.kind != GORT_METRIC_UINT64 || s.u64 == 0)
        soak_fail(f->w, "gort_metrics_read on a foreign thread: %d, kind %d, "
                        "%llu goroutines",
                  r, s.kind, (unsigned long long)s.u64);
}

/* trysend and tryrecv from the thread against a goroutine echoing. */
static void foreign_try(struct foreign_ctx *f)
{
    struct soak_worker *w = f->w;
    f->a = soak_chan_make(w, sizeof(int64_t), (size_t)soak_between(w, 1, 4));
    f->b = soak_chan_make(w, sizeof(int64_t), (size_t)soak_between(w, 1, 4));
    gort_waitgroup_add(&f->wg, 1);
    soak_go(w, foreign_echo, f);
    int64_t sent = 0, got = 0, sum = 0;
    while (got < f->n) {
        int64_t v = sent;
        if (sent < f->n && gort_chan_trysend(f->a, &v))
            sent++;
        bool ok = false;
        if (gort_chan_tryrecv(f->b, &v, &ok)) {
            if (!ok)
                soak_fail(w, "tryrecv on a foreign thread: closed channel");
            sum += v;
            got++;
            soak_step(w);
        } else {
            sched_yield();
        }
    }
    if (sum != f->n * (f->n + 1) / 2)
        soak_fail(w, "trysend/tryrecv on a foreign thread: sum %lld, want "
                     "%lld",
                  (long long)sum, (long long)(f->n * (f->n + 1) / 2));
    gort_chan_close(f->a);
    gort_waitgroup_wait(&f->wg);
    soak_chan_free(w, f->a);
    soak_chan_free(w, f->b);
}

void soak_foreign(struct soak_worker *w)
{
    struct foreign_ctx f;
    memset(&f, 0, sizeof f);
    f.w = w;
    while (soak_running()) {
        f.n = soak_between(w, 1, FOREIGN_MAX);
        switch (soak_rand(w) % 5) {
        case 0:
            foreign_request_reply(&f);
            break;
        case 4:
            foreign_metrics(&f);
            break;
        case 1:
            foreign_select(&f);
            break;
        case 2:
            foreign_mutex(&f);
            break;
        default:
            foreign_try(&f);
            break;
        }
        soak_progress(w);
    }
}

/* The thread of the fini check: reads metrics, then waits to be let go. */
static int fini_read, fini_go; /* acquire/release flags */

static void *fini_thread(void *arg)
{
    gort_metric_sample s = {.name = "/sched/goroutines:goroutines"};
    *(int *)arg = gort_metrics_read(&s, 1);
    __atomic_store_n(&fini_read, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&fini_go, __ATOMIC_ACQUIRE))
        usleep(1000);
    return NULL;
}

/*
 * With every worker gone and the goroutine count back to its start, a
 * thread reads a metric (gort_metrics_read: callable from any thread) and
 * stays alive: the goroutine count must not change, since the thread is
 * not a goroutine and is no longer inside gort.
 */
void soak_foreign_fini(void)
{
    int64_t before = gort_numgoroutine();
    int r = -1;
    pthread_t t;
    int err = pthread_create(&t, NULL, fini_thread, &r);
    if (err != 0)
        soak_fail(NULL, "pthread_create: %s", strerror(err));
    while (!__atomic_load_n(&fini_read, __ATOMIC_ACQUIRE))
        gort_sleep(SOAK_MS);
    int64_t after = gort_numgoroutine();
    if (after != before)
        gort_dump_goroutines(2);
    __atomic_store_n(&fini_go, 1, __ATOMIC_RELEASE);
    err = GORT_BLOCKING(pthread_join(t, NULL));
    if (r != 0 || err != 0)
        soak_fail(NULL, "the fini thread: gort_metrics_read %d, join %d", r,
                  err);
    if (after != before)
        soak_check_failed("a thread that read a metric and returned counts "
                          "as a goroutine: gort_numgoroutine() %lld, %lld "
                          "before (the dump above shows it [running, locked "
                          "to thread])",
                          (long long)after, (long long)before);
}

/* ---------------------------------------------------------------------------
 * observe
 * ------------------------------------------------------------------------- */

enum { OB_GOROUTINES, OB_RUNNABLE, OB_ASYNC, OB_SYNC, OB_HANDOFFS,
       OB_THREADS, OB_N };
static const char *const ob_names[OB_N] = {
    "/sched/goroutines:goroutines", "/sched/goroutines/runnable:goroutines",
    "/gort/sched/preemptions/async:events",
    "/gort/sched/preemptions/sync:events",
    "/gort/sched/syscall-handoffs:events", "/sched/threads/total:threads"};

static void observe_metrics(struct soak_worker *w)
{
    gort_metric_sample s[OB_N];
    memset(s, 0, sizeof s);
    for (int i = 0; i < OB_N; i++)
        s[i].name = ob_names[i];
    SOAK_OK(w, gort_metrics_read(s, OB_N));
    for (int i = 0; i < OB_N; i++)
        if (s[i].kind != GORT_METRIC_UINT64)
            soak_fail(w, "metric %s has kind %d", s[i].name, s[i].kind);
    int64_t g = (int64_t)s[OB_GOROUTINES].u64;
    __atomic_store_n(&soak_stats.goroutines, g, __ATOMIC_RELAXED);
    soak_max(&soak_stats.goroutines_max, g);
    __atomic_store_n(&soak_stats.runnable, (int64_t)s[OB_RUNNABLE].u64,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&soak_stats.preempt_async, s[OB_ASYNC].u64,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&soak_stats.preempt_sync, s[OB_SYNC].u64,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&soak_stats.handoffs, s[OB_HANDOFFS].u64,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&soak_stats.threads, s[OB_THREADS].u64,
                     __ATOMIC_RELAXED);
}

/* The longest stop-the-world pause so far: the lower bound of the highest
 * non-empty bucket of /sched/pauses/total/other. */
static void observe_pauses(struct soak_worker *w)
{
    uint64_t counts[GORT_METRIC_HIST_BUCKETS];
    gort_metric_sample s = {.name = "/sched/pauses/total/other:seconds"};
    s.hist.counts = counts;
    s.hist.cap = GORT_METRIC_HIST_BUCKETS;
    if (gort_metric_read(s.name, &s) != 0 || s.kind != GORT_METRIC_HISTOGRAM)
        soak_fail(w, "reading %s: kind %d", s.name, s.kind);
    size_t n = s.hist.n < s.hist.cap ? s.hist.n : s.hist.cap;
    for (size_t i = n; i-- > 1;)
        if (counts[i] != 0) {
            soak_max(&soak_stats.stw_max,
                     (int64_t)(s.hist.buckets[i] * (double)SOAK_S));
            return;
        }
}

static void observe_prometheus(struct soak_worker *w)
{
    char *text = NULL;
    size_t len = 0;
    SOAK_OK(w, gort_metrics_prometheus(&text, &len));
    if (text == NULL || strlen(text) != len ||
        strstr(text, "go_sched_goroutines_goroutines") == NULL)
        soak_fail(w, "the Prometheus text (%zu bytes) lacks the goroutine "
                     "count",
                  len);
    free(text);
}

/* A trace of about 100 ms into a temporary file, which must not be empty. */
static void observe_trace(struct soak_worker *w)
{
    char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gort-soak-%d.trace.json",
             dir ? dir : "/tmp", (int)getpid());
    int64_t t0 = gort_nanotime();
    SOAK_OK(w, gort_trace_start(path));
    int64_t t1 = gort_nanotime();
    gort_sleep(100 * SOAK_MS);
    int64_t t2 = gort_nanotime();
    SOAK_OK(w, gort_trace_stop());
    int64_t t3 = gort_nanotime();
    soak_max(&soak_stats.trace_call_max, t1 - t0 > t3 - t2 ? t1 - t0 : t3 - t2);
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size == 0)
        soak_fail(w, "the trace file %s is missing or empty", path);
    unlink(path);
    soak_count(&soak_stats.traces, 1);
}

void soak_observe(struct soak_worker *w)
{
    int null = gort_open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0)
        soak_fail(w, "gort_open(/dev/null) returned %d", null);
    uint32_t ticks[64];
    int64_t next_trace = gort_nanotime() + soak_between(w, 5, 20) * SOAK_S;
    int64_t next_sched = gort_nanotime() + 5 * SOAK_S;
    while (soak_running()) {
        if (soak_opts.verbose && gort_nanotime() >= next_sched) {
            gort_schedtrace(0);
            next_sched += 5 * SOAK_S;
        }
        observe_metrics(w);
        observe_pauses(w);
        SOAK_OK(w, gort_dump_goroutines(null));
        if (soak_one_in(w, 4))
            SOAK_OK(w, gort_dump_goroutines_grouped(null));
        int np = gort_sched_ticks(ticks, 64);
        if (np < 1 || np > GORT_MAX_PROCS)
            soak_fail(w, "gort_sched_ticks returned %d", np);
        if (soak_one_in(w, 8))
            observe_prometheus(w);
        if (gort_nanotime() >= next_trace) {
            observe_trace(w);
            next_trace = gort_nanotime() + 20 * SOAK_S;
        }
        soak_progress(w);
        soak_nap(soak_between(w, 200 * SOAK_MS, SOAK_S));
    }
    SOAK_OK(w, gort_close(null));
}
