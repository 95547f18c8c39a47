/* SPDX-License-Identifier: MIT */
/*
 * metrics.c - the scheduler's metrics under Go's names (runtime/metrics),
 * gort's own, and the Prometheus text format.  Mirrors metrics.go and
 * histogram.go.
 *
 * Where each figure comes from (docs/design.md, "Metrics"):
 *
 *   - Counters are kept where the event happens, by the party that owns
 *     the memory: per P (goroutines created and ended, steals,
 *     preemptions, the latency histogram) or per M (syscall hand-offs,
 *     network poller wake-ups), each bumped with gort__stat_add (a relaxed
 *     load and store, no locked instruction).  A read sums them over every
 *     P ever made and every M on allm; neither is freed while the runtime
 *     runs, so the walk is safe without stopping anyone.
 *   - Goroutine states are counted as Go 1.26 does, from the Ps and not
 *     from the goroutines: running = Ps whose thread runs a goroutine,
 *     runnable = local queues + runnext + the global queue, not-in-go = Ms
 *     in a system call, waiting = live - the three.  A read costs
 *     O(GOMAXPROCS + threads) whatever the number of goroutines.
 *   - /sched/latencies samples one scheduling round in
 *     GORT_TRACKING_PERIOD per goroutine (Go's trackingSeq): casgstatus
 *     marks the round, gort__gtrack (schedstats.c) stamps the G when it
 *     becomes runnable
 *     and records the wait in the running P's histogram when it runs.
 *   - Stop-the-world pauses are recorded by the stopper (one at a time).
 *
 * Every scalar metric is a uint64 (GORT_METRIC_FLOAT64 is Go's kind for
 * metrics gort does not have, such as mutex wait time).
 *
 * Invariants:
 *   - A counter or histogram bucket has one writer at a time (the P's
 *     owner, the M's thread, the stopper); every access is atomic (relaxed)
 *     so that readers on other threads are well defined.
 *   - Reading takes sched.lock (goroutine states) and allplock (sums over
 *     Ps), never both at once, and allocates nothing; the Prometheus writer
 *     allocates only its output text.
 */
#include "atomic.h"
#include "env.h"
#include "hook.h"
#include "lock_futex.h"
#include "san.h"
#include "sched.h"

#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Time histograms.  Mirrors timeHistogram (histogram.go).
 * ------------------------------------------------------------------------- */

#define TH_NSUB (1 << GORT_TIMEHIST_SUBBITS)
_Static_assert(GORT_TIMEHIST_N == GORT_METRIC_HIST_BUCKETS,
               "gort.h's bucket count must match the histogram layout");

/* The boundaries in seconds (Go's timeHistogramMetricsBuckets), and the
 * Prometheus "le" label of each bucket, made once. */
static double th_bounds[GORT_TIMEHIST_N + 1];
static char th_le[GORT_TIMEHIST_N][32];
static locale_t c_locale; /* "C": numbers with '.', whatever the program's */
static pthread_once_t th_once = PTHREAD_ONCE_INIT;

/* The double just below x > 0 (C's nextafter(x, 0), without libm). */
static double below(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits--;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* v in the shortest form that reads back exactly (Go's
 * strconv.FormatFloat(v, 'g', -1, 64), which the Prometheus client uses),
 * in the C locale. */
static void fmt_double(char *buf, size_t cap, double v)
{
    if (isinf(v)) {
        snprintf(buf, cap, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        snprintf(buf, cap, "NaN");
        return;
    }
    locale_t old = c_locale ? uselocale(c_locale) : (locale_t)0;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (old)
        uselocale(old);
}

static void th_init(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    th_bounds[0] = -INFINITY;
    /* Below 2^MINBIT ns: sub-buckets of 2^(MINBIT-1-SUBBITS) ns. */
    for (int j = 0; j < TH_NSUB; j++)
        th_bounds[1 + j] =
            (double)((uint64_t)j << (GORT_TIMEHIST_MINBIT - 1 -
                                     GORT_TIMEHIST_SUBBITS)) / 1e9;
    for (int i = GORT_TIMEHIST_MINBIT; i < GORT_TIMEHIST_MAXBIT; i++)
        for (int j = 0; j < TH_NSUB; j++) {
            uint64_t ns = (1ULL << (i - 1)) |
                          ((uint64_t)j << (i - 1 - GORT_TIMEHIST_SUBBITS));
            th_bounds[1 + (i - GORT_TIMEHIST_MINBIT + 1) * TH_NSUB + j] =
                (double)ns / 1e9;
        }
    th_bounds[GORT_TIMEHIST_N - 1] =
        (double)(1ULL << (GORT_TIMEHIST_MAXBIT - 1)) / 1e9;
    th_bounds[GORT_TIMEHIST_N] = INFINITY;
    /* Bucket i is [b[i], b[i+1]); Prometheus' le is inclusive, so the
     * label is the double just below b[i+1] (as the Prometheus Go client
     * writes Go's histograms).  Bucket 0 (negative durations) is folded
     * into bucket 1, whose label is the first one written. */
    for (int i = 1; i < GORT_TIMEHIST_N - 1; i++)
        fmt_double(th_le[i], sizeof th_le[i], below(th_bounds[i + 1]));
    snprintf(th_le[GORT_TIMEHIST_N - 1], sizeof th_le[0], "+Inf");
}

/* ---------------------------------------------------------------------------
 * The table.  Sorted by name (byte order), as Go's metrics.All().
 * ------------------------------------------------------------------------- */

enum metric_id {
    M_HOOK_HANDOFFS,
    M_HOOK_PARKED,
    M_MAXPROCS_UPDATES,
    M_NETPOLL_NAPS,
    M_NETPOLL_WAKEUPS,
    M_PREEMPT_ASYNC,
    M_PREEMPT_SYNC,
    M_STEALS,
    M_SYSCALL_HANDOFFS,
    M_THREADS_SPINNING,
    M_GOMAXPROCS,
    M_GOROUTINES_CREATED,
    M_G_NOT_IN_GO,
    M_G_RUNNABLE,
    M_G_RUNNING,
    M_G_WAITING,
    M_GOROUTINES,
    M_LATENCIES,
    M_PAUSES_STOPPING_GC,
    M_PAUSES_STOPPING_OTHER,
    M_PAUSES_TOTAL_GC,
    M_PAUSES_TOTAL_OTHER,
    M_THREADS_TOTAL,
    M_COUNT
};

#define NOT_A_SUM                                                              \
    " Not guaranteed to add up to /sched/goroutines:goroutines with the "     \
    "other goroutine metrics."
#define GROWS " Bucket counts only grow."

static const gort_metric_desc descs[M_COUNT] = {
    [M_HOOK_HANDOFFS] = {
        "/gort/hook/handoffs:calls",
        "Count of calls replaced by gort-hook that a goroutine made in the "
        "syscall hand-off, holding its thread but not its processor, "
        "because the poller cannot wait for their descriptor (a regular "
        "file, a terminal) or for their clock (a CPU-time clock).",
        GORT_METRIC_UINT64, true},
    [M_HOOK_PARKED] = {
        "/gort/hook/parked:calls",
        "Count of times a goroutine in a call replaced by gort-hook (read, "
        "write, connect, poll, sleep and the rest) parked in the network "
        "poller or on a timer instead of blocking its thread.",
        GORT_METRIC_UINT64, true},
    [M_MAXPROCS_UPDATES] = {
        "/gort/sched/gomaxprocs-updates:events",
        "Count of GOMAXPROCS changes gort made by itself because the CPUs "
        "available (affinity mask, cgroup CPU limit) changed; none once "
        "GORTMAXPROCS or gort_gomaxprocs set it.",
        GORT_METRIC_UINT64, true},
    [M_NETPOLL_NAPS] = {
        "/gort/sched/netpoll-naps:events",
        "Count of naps the idle network poller took on a timer instead of "
        "waiting in epoll_wait, where they were measured to answer more "
        "requests a second (GORTDEBUG=netpollnap).",
        GORT_METRIC_UINT64, true},
    [M_NETPOLL_WAKEUPS] = {
        "/gort/sched/netpoll-wakeups:goroutines",
        "Count of goroutines the network poller made runnable because a "
        "descriptor they waited on became ready (deadlines and closes not "
        "included).",
        GORT_METRIC_UINT64, true},
    [M_PREEMPT_ASYNC] = {
        "/gort/sched/preemptions/async:events",
        "Count of goroutines stopped by the preemption signal at a safe "
        "point of their own code, after running 10 ms without calling gort "
        "(asynchronous preemption).",
        GORT_METRIC_UINT64, true},
    [M_PREEMPT_SYNC] = {
        "/gort/sched/preemptions/sync:events",
        "Count of goroutines that yielded at a call into gort because a "
        "preemption was asked of them (their 10 ms time slice was over, the "
        "world was stopping, or a wired thread wanted its goroutine).",
        GORT_METRIC_UINT64, true},
    [M_STEALS] = {
        "/gort/sched/steals:goroutines",
        "Count of goroutines taken from other processors' local run queues "
        "by work stealing.",
        GORT_METRIC_UINT64, true},
    [M_SYSCALL_HANDOFFS] = {
        "/gort/sched/syscall-handoffs:events",
        "Count of processors taken from goroutines in system calls so that "
        "others could run: by sysmon, by a thread woken to watch the call, "
        "or at once for calls known to block.",
        GORT_METRIC_UINT64, true},
    [M_THREADS_SPINNING] = {
        "/gort/sched/threads/spinning:threads",
        "Number of threads spinning: looking for goroutines to run instead "
        "of sleeping.",
        GORT_METRIC_UINT64, false},
    [M_GOMAXPROCS] = {
        "/sched/gomaxprocs:threads",
        "The current GOMAXPROCS setting: how many threads may run "
        "goroutines at the same time.",
        GORT_METRIC_UINT64, false},
    [M_GOROUTINES_CREATED] = {
        "/sched/goroutines-created:goroutines",
        "Count of goroutines created since gort_main started, the main "
        "goroutine included.",
        GORT_METRIC_UINT64, true},
    [M_G_NOT_IN_GO] = {
        "/sched/goroutines/not-in-go:goroutines",
        "Approximate count of goroutines in a system call: between "
        "gort_entersyscall and gort_exitsyscall, in a blocking wrapper, or "
        "in an unwrapped blocking call found by the preemption signal."
        NOT_A_SUM,
        GORT_METRIC_UINT64, false},
    [M_G_RUNNABLE] = {
        "/sched/goroutines/runnable:goroutines",
        "Approximate count of goroutines ready to run but not running: in "
        "the local run queues, the runnext slots and the global run queue."
        NOT_A_SUM,
        GORT_METRIC_UINT64, false},
    [M_G_RUNNING] = {
        "/sched/goroutines/running:goroutines",
        "Approximate count of goroutines running. Never more than "
        "/sched/gomaxprocs:threads." NOT_A_SUM,
        GORT_METRIC_UINT64, false},
    [M_G_WAITING] = {
        "/sched/goroutines/waiting:goroutines",
        "Approximate count of goroutines waiting for something (a channel, "
        "a lock, a timer, I/O): the live ones neither running, runnable nor "
        "in a system call." NOT_A_SUM,
        GORT_METRIC_UINT64, false},
    [M_GOROUTINES] = {
        "/sched/goroutines:goroutines",
        "Count of live goroutines (not counting the stand-ins of foreign "
        "threads).",
        GORT_METRIC_UINT64, false},
    [M_LATENCIES] = {
        "/sched/latencies:seconds",
        "Distribution of the time goroutines spend runnable before they "
        "run, sampled on one scheduling round in 8." GROWS,
        GORT_METRIC_HISTOGRAM, true},
    [M_PAUSES_STOPPING_GC] = {
        "/sched/pauses/stopping/gc:seconds",
        "Distribution of the time from deciding to stop the world for a "
        "garbage collection until every processor stopped. gort has no "
        "garbage collector: always empty." GROWS,
        GORT_METRIC_HISTOGRAM, true},
    [M_PAUSES_STOPPING_OTHER] = {
        "/sched/pauses/stopping/other:seconds",
        "Distribution of the time from deciding to stop the world (to "
        "change GOMAXPROCS, or at exit) until every processor stopped; "
        "other threads may run meanwhile. Part of "
        "/sched/pauses/total/other:seconds." GROWS,
        GORT_METRIC_HISTOGRAM, true},
    [M_PAUSES_TOTAL_GC] = {
        "/sched/pauses/total/gc:seconds",
        "Distribution of the time from deciding to stop the world for a "
        "garbage collection until it ran again. gort has no garbage "
        "collector: always empty." GROWS,
        GORT_METRIC_HISTOGRAM, true},
    [M_PAUSES_TOTAL_OTHER] = {
        "/sched/pauses/total/other:seconds",
        "Distribution of the time from deciding to stop the world (to "
        "change GOMAXPROCS) until it ran again, stopping included." GROWS,
        GORT_METRIC_HISTOGRAM, true},
    [M_THREADS_TOTAL] = {
        "/sched/threads/total:threads",
        "Number of live threads the runtime owns: the one that called "
        "gort_main, sysmon, and every thread made to run goroutines, idle "
        "ones included.",
        GORT_METRIC_UINT64, false},
};

const gort_metric_desc *gort_metrics_all(size_t *n)
{
    if (n)
        *n = M_COUNT;
    return descs;
}

static int metric_id(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < M_COUNT; i++)
        if (!strcmp(name, descs[i].name))
            return i;
    return -1;
}

/* ---------------------------------------------------------------------------
 * Aggregates, computed at most once per read (Go's statAggregate).
 * ------------------------------------------------------------------------- */

/* Goroutine states and thread counts.  Mirrors schedStatsAggregate. */
struct schedstats {
    uint64_t total, running, runnable, notingo, waiting;
    uint64_t threads, spinning;
};

/* Counters summed over every P and M. */
struct counters {
    uint64_t created, exited, steals, preemptsync, preemptasync;
    uint64_t handoffs, netpollwake, netpollnap;
};

struct readstate {
    bool have_counters, have_sched;
    struct counters c;
    struct schedstats s;
};

static void counters_compute(struct counters *c)
{
    memset(c, 0, sizeof *c);
    c->created = load_relaxed(&gort__sched.ngcreatednop);
    /* allplock: the Ps ever made (growallp changes the array under it). */
    gort__lock(&gort__allplock);
    struct p **allp = gort__allp_load();
    for (int32_t i = 0; i < gort__allp_len; i++) {
        struct p *pp = allp[i];
        c->created += load_relaxed(&pp->ngcreated);
        c->exited += load_relaxed(&pp->ngexited);
        c->steals += load_relaxed(&pp->nsteals);
        c->preemptsync += load_relaxed(&pp->npreemptsync);
        c->preemptasync += load_relaxed(&pp->npreemptasync);
    }
    gort__unlock(&gort__allplock);
    /* Ms are never freed while the runtime runs (allm is push-only);
     * acquire pairs with the release that published each. */
    for (struct m *mp = load_acq(&gort__allm); mp; mp = mp->alllink) {
        c->handoffs += load_relaxed(&mp->nhandoffs);
        c->netpollwake += load_relaxed(&mp->nnetpollwake);
        c->netpollnap += load_relaxed(&mp->nnetpollnap);
    }
}

/* Running and runnable goroutines of one P.  sched.lock held. */
static void p_goroutines(struct p *pp, struct schedstats *s)
{
    if (load_relaxed(&pp->status) == P_RUNNING) {
        /* Acquire both: pair with acquirep and execute_prep.  An M in
         * schedule() holds its P with no goroutine: not running one. */
        struct m *mp = load_acq(&pp->m);
        if (mp && load_acq(&mp->curg))
            s->running++;
    }
    for (;;) {
        /* Thieves and the owner move head meanwhile: retry until head
         * did not move between the loads (Go's loop). */
        uint32_t h = load_acq(&pp->runqhead);
        uint32_t t = load_acq(&pp->runqtail);
        struct g *next = load_acq(&pp->runnext);
        if (load_acq(&pp->runqhead) != h || (int32_t)(t - h) < 0)
            continue;
        s->runnable += (t - h) + (next != NULL);
        return;
    }
}

static void sched_compute(struct readstate *rs)
{
    struct schedstats *s = &rs->s;
    memset(s, 0, sizeof *s);
    /* sched.lock: the global queue and the set of Ps hold still (the
     * local queues do not: approximate, as in Go). */
    gort__lock(&gort__sched.lock);
    struct p **allp = gort__allp_load();
    int32_t procs = load_relaxed(&gort__gomaxprocs);
    for (int32_t i = 0; i < procs; i++)
        p_goroutines(allp[i], s);
    s->runnable += (uint64_t)gort__sched.runqsize;
    s->threads = (uint64_t)(gort__sched.mnext - gort__sched.nmfreed);
    gort__unlock(&gort__sched.lock);
    int32_t spin = load_relaxed(&gort__sched.nmspinning);
    s->spinning = spin > 0 ? (uint64_t)spin : 0;
    /* A goroutine in a system call is its M's: count those Ms. */
    for (struct m *mp = load_acq(&gort__allm); mp; mp = mp->alllink)
        if (load_relaxed(&mp->insyscall))
            s->notingo++;
    if (!rs->have_counters) {
        counters_compute(&rs->c);
        rs->have_counters = true;
    }
    /* Live = created - ended.  Each P's counts are read at slightly
     * different times, so a burst can make this briefly off, never
     * negative. */
    s->total = rs->c.created > rs->c.exited ? rs->c.created - rs->c.exited
                                            : 0;
    uint64_t busy = s->running + s->runnable + s->notingo;
    s->waiting = s->total > busy ? s->total - busy : 0;
}

static void latencies_sum(uint64_t *out)
{
    memset(out, 0, GORT_TIMEHIST_N * sizeof *out);
    gort__lock(&gort__allplock);
    struct p **allp = gort__allp_load();
    for (int32_t i = 0; i < gort__allp_len; i++)
        for (int j = 0; j < GORT_TIMEHIST_N; j++)
            out[j] += load_relaxed(&allp[i]->latencies.counts[j]);
    gort__unlock(&gort__allplock);
}

static void hist_copy(const struct gort_timehist *h, uint64_t *out)
{
    for (int j = 0; j < GORT_TIMEHIST_N; j++)
        out[j] = load_relaxed(&h->counts[j]);
}

/* The counts of histogram metric id into out[GORT_TIMEHIST_N]. */
static void hist_read(int id, uint64_t *out)
{
    switch (id) {
    case M_LATENCIES:
        latencies_sum(out);
        break;
    case M_PAUSES_STOPPING_OTHER:
        hist_copy(&gort__stw_pauses_stopping, out);
        break;
    case M_PAUSES_TOTAL_OTHER:
        hist_copy(&gort__stw_pauses_total, out);
        break;
    default: /* the gc pauses: none */
        memset(out, 0, GORT_TIMEHIST_N * sizeof *out);
        break;
    }
}

static uint64_t scalar_read(struct readstate *rs, int id)
{
    bool sched = id >= M_G_NOT_IN_GO && id <= M_GOROUTINES;
    sched = sched || id == M_THREADS_TOTAL || id == M_THREADS_SPINNING;
    if (sched && !rs->have_sched) {
        sched_compute(rs);
        rs->have_sched = true;
    }
    if (!sched && id != M_GOMAXPROCS && id != M_MAXPROCS_UPDATES &&
        id != M_HOOK_HANDOFFS && id != M_HOOK_PARKED && !rs->have_counters) {
        counters_compute(&rs->c);
        rs->have_counters = true;
    }
    switch (id) {
    case M_HOOK_HANDOFFS: return gort__hook_handoffs();
    case M_HOOK_PARKED: return gort__hook_parked();
    case M_MAXPROCS_UPDATES: return load_relaxed(&gort__maxprocs_updates);
    case M_NETPOLL_NAPS: return rs->c.netpollnap;
    case M_NETPOLL_WAKEUPS: return rs->c.netpollwake;
    case M_PREEMPT_ASYNC: return rs->c.preemptasync;
    case M_PREEMPT_SYNC: return rs->c.preemptsync;
    case M_STEALS: return rs->c.steals;
    case M_SYSCALL_HANDOFFS: return rs->c.handoffs;
    case M_THREADS_SPINNING: return rs->s.spinning;
    case M_GOMAXPROCS: return (uint64_t)load_relaxed(&gort__gomaxprocs);
    case M_GOROUTINES_CREATED: return rs->c.created;
    case M_G_NOT_IN_GO: return rs->s.notingo;
    case M_G_RUNNABLE: return rs->s.runnable;
    case M_G_RUNNING: return rs->s.running;
    case M_G_WAITING: return rs->s.waiting;
    case M_GOROUTINES: return rs->s.total;
    case M_THREADS_TOTAL: return rs->s.threads;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------------
 * Reading.  Mirrors readMetrics.
 * ------------------------------------------------------------------------- */

static void sample_clear(gort_metric_sample *s, int kind)
{
    s->kind = kind;
    s->u64 = 0;
    s->f64 = 0;
    s->hist.n = 0;
    s->hist.buckets = NULL;
    s->hist.total = 0;
}

static void sample_fill(struct readstate *rs, int id, gort_metric_sample *s)
{
    sample_clear(s, descs[id].kind);
    if (descs[id].kind != GORT_METRIC_HISTOGRAM) {
        s->u64 = scalar_read(rs, id); /* every scalar metric is a uint64 */
        return;
    }
    uint64_t counts[GORT_TIMEHIST_N];
    hist_read(id, counts);
    s->hist.n = GORT_TIMEHIST_N;
    s->hist.buckets = th_bounds;
    for (int j = 0; j < GORT_TIMEHIST_N; j++)
        s->hist.total += counts[j];
    if (s->hist.counts) {
        size_t k = s->hist.cap < GORT_TIMEHIST_N ? s->hist.cap
                                                 : GORT_TIMEHIST_N;
        memcpy(s->hist.counts, counts, k * sizeof *counts);
    }
}

int gort_metrics_read(gort_metric_sample *samples, size_t n)
{
    GORT_SAN_SCOPE();
    if (n > 0 && !samples)
        return -EINVAL;
    pthread_once(&th_once, th_init);
    bool running = load_acq(&gort__main_started);
    struct readstate rs;
    rs.have_counters = rs.have_sched = false;
    for (size_t i = 0; i < n; i++) {
        int id = running ? metric_id(samples[i].name) : -1;
        if (id < 0)
            sample_clear(&samples[i], GORT_METRIC_BAD);
        else
            sample_fill(&rs, id, &samples[i]);
    }
    return running ? 0 : -EPERM;
}

int gort_metric_read(const char *name, gort_metric_sample *s)
{
    GORT_SAN_SCOPE();
    if (!s)
        return -EINVAL;
    s->name = name;
    int err = gort_metrics_read(s, 1);
    if (err)
        return err;
    return s->kind == GORT_METRIC_BAD ? -ENOENT : 0;
}

/* ---------------------------------------------------------------------------
 * Prometheus text exposition format (0.0.4).
 * ------------------------------------------------------------------------- */

/* A growing text buffer; after a failed allocation it only counts. */
struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *np = gort__realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_u64(struct sbuf *b, uint64_t v)
{
    char num[24];
    int k = snprintf(num, sizeof num, "%" PRIu64, v);
    sb_put(b, num, (size_t)k);
}

/* The Prometheus name of a metric, as the Prometheus Go client derives it
 * from a runtime/metrics name (RuntimeMetricsToProm): the path and the
 * unit joined by "_", "/" and "-" as "_", "*" in the unit as "_" and "/"
 * as "_per_", "_total" after cumulative scalars; "go_" in front, or
 * "gort_" for gort's own /gort/... names. */
static void prom_name(const gort_metric_desc *d, char *out, size_t cap)
{
    const char *name = d->name + 1;
    const char *prefix = "go_";
    if (!strncmp(name, "gort/", 5)) {
        prefix = "gort_";
        name += 5;
    }
    size_t k = (size_t)snprintf(out, cap, "%s", prefix);
    const char *colon = strchr(name, ':');
    if (!colon)
        colon = name + strlen(name);
    for (const char *c = name; *c && k + 8 < cap; c++) {
        if (c == colon) {
            out[k++] = '_';
        } else if (c > colon && *c == '/') {
            memcpy(out + k, "_per_", 5);
            k += 5;
        } else if (*c == '/' || *c == '-' || *c == '*') {
            out[k++] = '_';
        } else {
            out[k++] = *c;
        }
    }
    out[k] = 0;
    if (d->cumulative && d->kind != GORT_METRIC_HISTOGRAM &&
        k + 7 < cap)
        memcpy(out + k, "_total", 7);
}

/* HELP text: backslash and newline escaped. */
static void sb_help(struct sbuf *b, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '\\')
            sb_str(b, "\\\\");
        else if (*c == '\n')
            sb_str(b, "\\n");
        else
            sb_put(b, c, 1);
    }
}

static void prom_metric(struct sbuf *b, struct readstate *rs, int id)
{
    const gort_metric_desc *d = &descs[id];
    char name[160];
    prom_name(d, name, sizeof name);
    sb_str(b, "# HELP ");
    sb_str(b, name);
    sb_str(b, " ");
    sb_help(b, d->description);
    if (d->kind == GORT_METRIC_HISTOGRAM)
        sb_str(b, " (No _sum: Go's time histograms keep no sum.)");
    sb_str(b, "\n# TYPE ");
    sb_str(b, name);
    if (d->kind == GORT_METRIC_HISTOGRAM) {
        sb_str(b, " histogram\n");
        uint64_t counts[GORT_TIMEHIST_N];
        hist_read(id, counts);
        /* Cumulative, from bucket 1 (negative durations folded in) to
         * the overflow bucket, whose label is +Inf. */
        uint64_t cum = counts[0];
        for (int i = 1; i < GORT_TIMEHIST_N; i++) {
            cum += counts[i];
            sb_str(b, name);
            sb_str(b, "_bucket{le=\"");
            sb_str(b, th_le[i]);
            sb_str(b, "\"} ");
            sb_u64(b, cum);
            sb_str(b, "\n");
        }
        sb_str(b, name);
        sb_str(b, "_count ");
        sb_u64(b, cum);
        sb_str(b, "\n");
        return;
    }
    sb_str(b, d->cumulative ? " counter\n" : " gauge\n");
    sb_str(b, name);
    sb_str(b, " ");
    sb_u64(b, scalar_read(rs, id)); /* every scalar metric is a uint64 */
    sb_str(b, "\n");
}

int gort_metrics_prometheus(char **text, size_t *len)
{
    GORT_SAN_SCOPE();
    if (!text)
        return -EINVAL;
    *text = NULL;
    if (len)
        *len = 0;
    pthread_once(&th_once, th_init);
    if (!load_acq(&gort__main_started))
        return -EPERM;
    struct readstate rs;
    rs.have_counters = rs.have_sched = false;
    struct sbuf b = {NULL, 0, 0, false};
    for (int id = 0; id < M_COUNT; id++)
        prom_metric(&b, &rs, id);
    if (b.oom) {
        gort__free(b.p);
        return -ENOMEM;
    }
    *text = b.p;
    if (len)
        *len = b.len;
    return 0;
}

long gort_metrics_write_prometheus(int fd)
{
    GORT_SAN_SCOPE();
    char *text;
    size_t len;
    int err = gort_metrics_prometheus(&text, &len);
    if (err)
        return err;
    size_t off = 0;
    while (off < len) {
        long w = gort_write(fd, text + off, len - off);
        if (w <= 0) {
            gort__free(text);
            return w < 0 ? w : -EIO;
        }
        off += (size_t)w;
    }
    gort__free(text);
    return (long)off;
}
