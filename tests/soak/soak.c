/* SPDX-License-Identifier: MIT */
/*
 * soak.c - the soak program: every primitive of gort's public API at
 * once, with randomized parameters, for a given time; it fails when a
 * check fails or anything stops making progress.
 *
 *   soak [-t SECONDS] [-procs N] [-seed S] [-v] [-fixedprocs]
 *        [-stall SECONDS] [-stack BYTES] [-only KIND,...] [-skip KIND,...]
 *   soak -h        the usage and the kinds of worker
 *
 *   -t SECONDS     how long the workers run (default 60)
 *   -procs N       GOMAXPROCS at the start (default: gort's)
 *   -seed S        the randomization seed (default: from the clock); the
 *                  run prints it so that a failure can be run again with
 *                  the same parameters (the interleaving differs)
 *   -v             a status line every 5 seconds
 *   -fixedprocs    no gomaxprocs worker: GOMAXPROCS stays at -procs
 *   -stall SECONDS how long a worker may go without progress (default 10)
 *   -stack BYTES   goroutine stack size (gort_set_stack_size; default
 *                  64 KiB); the recurse worker uses most of it, so the
 *                  program refuses GORTSTACKSIZE, which would override it
 *   -only KINDS    run only these kinds of worker (names as in kinds[])
 *   -skip KINDS    leave these kinds out
 *
 * Exit status: 0 when every check held, 1 for a failed check (the message
 * names the worker and what differed), 2 for a bad command line, 3 when a
 * worker made no progress for -stall seconds or the stop did not finish
 * (the message names the workers, followed by a goroutine dump).
 *
 * The program runs in phases: main() computes the reference results of
 * the CPU workers and starts the watchdog thread, then gort_main runs
 * main_g, which starts every worker, sleeps for the run's time, announces
 * the stop, joins every worker, and checks that nothing leaked: the
 * goroutine count is back to its value before the workers started, and so
 * is the number of open descriptors.
 *
 * The watchdog is a plain thread, so that it works when the scheduler is
 * stuck: once a second it looks at every running worker's counter and at
 * how long the current phase has lasted.  It calls into gort only to read
 * GOMAXPROCS (a plain load) and to report a stall.
 *
 * Invariants:
 *   - main() and then main_g write `phase`, one at a time; the watchdog
 *     reads it.
 *   - Workers reach gort only from goroutines, except the SOAK_THREAD
 *     ones, which use only what gort allows foreign threads.
 */
#include "soak.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct soak_opts soak_opts = {
    .seconds = 60, .stall_s = 10, .stack = GORT_DEFAULT_STACK_SIZE};
struct soak_stats soak_stats = {
    .sleep = {.name = "sleep"},
    .after = {.name = "after"},
    .timer = {.name = "timer"},
    .afterfunc = {.name = "afterfunc"},
    .select = {.name = "select timeout"},
    .deadline = {.name = "read deadline"},
    .rawsleep = {.name = "raw nanosleep"},
    .yield = {.name = "gosched"},
};
int soak_locked_tids[SOAK_LOCKED_SLOTS];

/* Every kind of worker, in the order they start. */
static const struct soak_kind kinds[] = {
    {"chan", 2, SOAK_GOROUTINE, soak_chan, NULL, NULL, NULL},
    {"select", 2, SOAK_GOROUTINE, soak_select, NULL, NULL, NULL},
    {"mutex", 1, SOAK_GOROUTINE, soak_mutex, NULL, NULL, NULL},
    {"rwmutex", 1, SOAK_GOROUTINE, soak_rwmutex, NULL, NULL, NULL},
    {"cond", 1, SOAK_GOROUTINE, soak_cond, NULL, NULL, NULL},
    {"once", 1, SOAK_GOROUTINE, soak_once, NULL, NULL, NULL},
    {"waitgroup", 1, SOAK_GOROUTINE, soak_waitgroup, NULL, NULL, NULL},
    {"sleep", 3, SOAK_GOROUTINE, soak_sleep, NULL, NULL, NULL},
    {"yield", 1, SOAK_GOROUTINE, soak_yield, NULL, NULL, NULL},
    {"after", 1, SOAK_GOROUTINE, soak_after, NULL, NULL, NULL},
    {"timer", 1, SOAK_GOROUTINE, soak_timer, NULL, NULL, NULL},
    {"afterfunc", 1, SOAK_GOROUTINE, soak_afterfunc, NULL, NULL, NULL},
    {"spawn", 1, SOAK_GOROUTINE, soak_spawn, NULL, NULL, NULL},
    {"spin", 1, SOAK_GOROUTINE, soak_spin, NULL, NULL, NULL},
    {"vector", 1, SOAK_GOROUTINE, soak_vector, NULL, NULL, NULL},
    {"recurse", 1, SOAK_GOROUTINE, soak_recurse, NULL, NULL, NULL},
    {"pipe", 1, SOAK_GOROUTINE, soak_pipe, NULL, NULL, NULL},
    {"nanosleep", 1, SOAK_GOROUTINE, soak_nanosleep, NULL, NULL, NULL},
    {"poll", 1, SOAK_GOROUTINE, soak_poll, NULL, NULL, NULL},
    {"files", 1, SOAK_GOROUTINE, soak_files, NULL, NULL, NULL},
    {"server", 1, SOAK_GOROUTINE, soak_server, soak_net_init, NULL, NULL},
    {"client", 3, SOAK_GOROUTINE, soak_client, NULL, NULL, "server"},
    {"deadline", 1, SOAK_GOROUTINE, soak_deadline, NULL, NULL, "server"},
    {"udp", 1, SOAK_GOROUTINE, soak_udp, NULL, NULL, NULL},
    {"lockthread", 2, SOAK_GOROUTINE, soak_lockthread, NULL, NULL, NULL},
    {"foreign", 2, SOAK_THREAD, soak_foreign, NULL, soak_foreign_fini, NULL},
    {"observe", 1, SOAK_GOROUTINE, soak_observe, NULL, NULL, NULL},
    {"gomaxprocs", 1, SOAK_GOROUTINE, soak_gomaxprocs, NULL, NULL, NULL},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define MAX_WORKERS 64

static struct soak_worker workers[MAX_WORKERS];
static int nworkers;
static pthread_t threads[MAX_WORKERS];   /* SOAK_THREAD workers, by index */
static gort_waitgroup workers_wg;        /* the goroutine workers */

/* The run's phases.  set_phase stores with release; the watchdog loads
 * with acquire, and then reads phase_since, stored before. */
enum { PH_BOOT, PH_RUN, PH_STOP, PH_CHECK, PH_EXIT, PH_END };
static const char *const phase_names[] = {"boot", "run", "stop", "check",
                                          "exit", "end"};
static int phase;
static int64_t phase_since;

static int stopping;    /* 1 once the run's time is up: soak_running() */
static int final_procs; /* GOMAXPROCS when the workers were joined */

/* ---------------------------------------------------------------------------
 * Shared functions for the workers (soak.h).
 * ------------------------------------------------------------------------- */

/* The monotonic clock, independent of gort (the watchdog's clock). */
static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SOAK_S + ts.tv_nsec;
}

bool soak_running(void)
{
    /* Pairs with the release store in main_g. */
    return __atomic_load_n(&stopping, __ATOMIC_ACQUIRE) == 0;
}

uint64_t soak_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void soak_lat_add(struct soak_lat *l, int64_t ns)
{
    int b = 0;
    for (int64_t us = ns / SOAK_US; us > 0 && b < SOAK_LAT_BUCKETS - 1;
         us >>= 1)
        b++;
    __atomic_add_fetch(&l->n, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&l->sum, ns, __ATOMIC_RELAXED);
    __atomic_add_fetch(&l->bucket[b], 1, __ATOMIC_RELAXED);
    soak_max(&l->max, ns);
}

static int fail_once;    /* the first failure's exchange wins */
static int end_failures; /* failed checks at the end; main_g only */

void soak_fail(const struct soak_worker *w, const char *fmt, ...)
{
    if (__atomic_exchange_n(&fail_once, 1, __ATOMIC_ACQ_REL))
        for (;;)
            pause(); /* another failure is being reported; exit comes */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "soak: FAIL %s: %s\n", w ? w->name : "main", msg);
    fprintf(stderr, "soak: seed %llu; goroutines follow\n",
            (unsigned long long)soak_opts.seed);
    fflush(stderr);
    gort_dump_goroutines(2);
    _exit(1);
}

void soak_check_failed(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "soak: FAIL main: %s\n", msg);
    fflush(stderr);
    end_failures++;
}

gort_chan *soak_chan_make(struct soak_worker *w, size_t elemsize, size_t cap)
{
    gort_chan *ch = NULL;
    int err = gort_chan_make(&ch, elemsize, cap);
    if (err != 0 || ch == NULL)
        soak_fail(w, "gort_chan_make(%zu, %zu) returned %d", elemsize, cap,
                  err);
    return ch;
}

void soak_chan_free(struct soak_worker *w, gort_chan *ch)
{
    int err = gort_chan_free(ch);
    if (err != 0)
        soak_fail(w, "gort_chan_free returned %d (len %zu, cap %zu)", err,
                  gort_chan_len(ch), gort_chan_cap(ch));
}

void soak_go(struct soak_worker *w, void (*fn)(void *), void *arg)
{
    int64_t id = gort_go(fn, arg);
    if (id <= 0)
        soak_fail(w, "gort_go returned %lld", (long long)id);
    soak_count(&soak_stats.spawned, 1);
}

void *soak_alloc(struct soak_worker *w, size_t n)
{
    void *p = calloc(1, n);
    if (p == NULL)
        soak_fail(w, "out of memory for %zu bytes", n);
    return p;
}

void soak_nap(int64_t ns)
{
    int64_t end = gort_nanotime() + ns;
    for (int64_t left = ns; left > 0 && soak_running();
         left = end - gort_nanotime())
        gort_sleep(left < 100 * SOAK_MS ? left : 100 * SOAK_MS);
}

/* ---------------------------------------------------------------------------
 * Process figures for the status line and the leak checks.
 * ------------------------------------------------------------------------- */

/* Entries of a /proc directory, "." and ".." not counted. */
static int count_entries(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Open descriptors, less those on a file of /proc: sysmon reads /proc
 * files of its own threads now and then and closes them at once. */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[300], target[64];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        /* A descriptor closed since readdir listed it is not open
         * (readlink fails): sysmon's /proc reads come and go so. */
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len < 0 || (len >= 6 && memcmp(target, "/proc/", 6) == 0))
            continue;
        n++;
    }
    closedir(d);
    return n;
}

/* Resident memory in MiB, from /proc/self/statm. */
static long rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

/* ---------------------------------------------------------------------------
 * Reports: the status line and the summary.
 * ------------------------------------------------------------------------- */

/* The n-th percentile of l, as the upper bound of its bucket, in us. */
static int64_t lat_percentile_us(const struct soak_lat *l, int pct)
{
    uint64_t n = __atomic_load_n(&l->n, __ATOMIC_RELAXED), seen = 0;
    for (int b = 0; b < SOAK_LAT_BUCKETS && n > 0; b++) {
        seen += __atomic_load_n(&l->bucket[b], __ATOMIC_RELAXED);
        if (seen * 100 >= n * (uint64_t)pct)
            return (int64_t)1 << b;
    }
    return 0;
}

static void print_lat(FILE *f, const struct soak_lat *l)
{
    uint64_t n = __atomic_load_n(&l->n, __ATOMIC_RELAXED);
    if (n == 0)
        return;
    int64_t sum = __atomic_load_n(&l->sum, __ATOMIC_RELAXED);
    int64_t max = __atomic_load_n(&l->max, __ATOMIC_RELAXED);
    fprintf(f,
            "  %-15s %9llu wake-ups, late by mean %8.3f ms, p50 < %6.3f ms, "
            "p99 < %7.3f ms, max %8.3f ms\n",
            l->name, (unsigned long long)n, (double)sum / (double)n / 1e6,
            (double)lat_percentile_us(l, 50) / 1e3,
            (double)lat_percentile_us(l, 99) / 1e3, (double)max / 1e6);
}

static uint64_t eintr_raw(void)
{
    return __atomic_load_n(&soak_stats.eintr_read, __ATOMIC_RELAXED) +
           __atomic_load_n(&soak_stats.eintr_nanosleep, __ATOMIC_RELAXED) +
           __atomic_load_n(&soak_stats.eintr_poll, __ATOMIC_RELAXED);
}

static void status_line(int64_t t0)
{
    FILE *f = stderr;
    fprintf(f,
            "soak: %3llds procs %d goroutines %lld (runnable %lld, max %lld) "
            "threads %d rss %ld MiB eintr %llu late max sleep %.1f timer "
            "%.1f gosched %.1f ms\n",
            (long long)((mono_ns() - t0) / SOAK_S), gort_gomaxprocs(0),
            (long long)__atomic_load_n(&soak_stats.goroutines,
                                       __ATOMIC_RELAXED),
            (long long)__atomic_load_n(&soak_stats.runnable,
                                       __ATOMIC_RELAXED),
            (long long)__atomic_load_n(&soak_stats.goroutines_max,
                                       __ATOMIC_RELAXED),
            count_entries("/proc/self/task"), rss_mib(),
            (unsigned long long)eintr_raw(),
            (double)__atomic_load_n(&soak_stats.sleep.max, __ATOMIC_RELAXED) /
                1e6,
            (double)__atomic_load_n(&soak_stats.timer.max, __ATOMIC_RELAXED) /
                1e6,
            (double)__atomic_load_n(&soak_stats.yield.max, __ATOMIC_RELAXED) /
                1e6);
    fprintf(f, "soak:      iterations:");
    const struct soak_kind *k = NULL;
    for (int i = 0; i < nworkers; i++) {
        struct soak_worker *w = &workers[i];
        unsigned long long it =
            __atomic_load_n(&w->iters, __ATOMIC_RELAXED);
        if (w->kind != k)
            fprintf(f, " %s %llu", w->kind->name, it);
        else
            fprintf(f, "+%llu", it);
        k = w->kind;
    }
    fprintf(f, "\n");
}

/* A statistic, read while its writers may still run. */
static uint64_t ld(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void summary(int64_t elapsed)
{
    FILE *f = stdout;
    struct soak_stats *s = &soak_stats;
    fprintf(f, "soak: %.1f s, seed %llu, GOMAXPROCS %d at the end, %d "
               "workers\n",
            (double)elapsed / 1e9, (unsigned long long)soak_opts.seed,
            final_procs, nworkers);
    fprintf(f, "  iterations:\n");
    for (int i = 0; i < nworkers; i++)
        fprintf(f, "    %-14s %10llu\n", workers[i].name,
                (unsigned long long)ld(&workers[i].iters));
    fprintf(f, "  raw EINTR: read %llu, nanosleep %llu, poll %llu; inside "
               "GORT_BLOCKING or gort_entersyscall %llu\n",
            (unsigned long long)ld(&s->eintr_read),
            (unsigned long long)ld(&s->eintr_nanosleep),
            (unsigned long long)ld(&s->eintr_poll),
            (unsigned long long)ld(&s->eintr_wrapped));
    fprintf(f, "  lateness:\n");
    const struct soak_lat *lats[] = {&s->sleep,  &s->after,    &s->timer,
                                     &s->afterfunc, &s->select,
                                     &s->deadline, &s->rawsleep, &s->yield};
    for (size_t i = 0; i < sizeof lats / sizeof lats[0]; i++)
        print_lat(f, lats[i]);
    fprintf(f, "  goroutines started %llu (at most %lld at once), GOMAXPROCS "
               "changes %llu, CPU chunks %llu, threads ended locked %llu, "
               "traces %llu\n",
            (unsigned long long)ld(&s->spawned),
            (long long)__atomic_load_n(&s->goroutines_max, __ATOMIC_RELAXED),
            (unsigned long long)ld(&s->procs_changes),
            (unsigned long long)ld(&s->preempt_chunks),
            (unsigned long long)ld(&s->threads_ended),
            (unsigned long long)ld(&s->traces));
    fprintf(f, "  the longest stop-the-world pause: at least %.3f ms; the "
               "slowest gort_trace_start/stop %.3f ms\n",
            (double)__atomic_load_n(&s->stw_max, __ATOMIC_RELAXED) / 1e6,
            (double)__atomic_load_n(&s->trace_call_max, __ATOMIC_RELAXED) /
                1e6);
    fprintf(f, "  preemptions: %llu asynchronous, %llu synchronous; "
               "syscall hand-offs %llu; threads %llu (the last samples)\n",
            (unsigned long long)ld(&s->preempt_async),
            (unsigned long long)ld(&s->preempt_sync),
            (unsigned long long)ld(&s->handoffs),
            (unsigned long long)ld(&s->threads));
    fprintf(f, "  network: %llu payload bytes verified, %llu deadlines "
               "expired as intended, %llu reads got data after their "
               "deadline (latest %.3f ms after it)\n",
            (unsigned long long)ld(&s->net_bytes),
            (unsigned long long)ld(&s->net_timeouts),
            (unsigned long long)ld(&s->deadline_missed),
            (double)__atomic_load_n(&s->deadline_missed_max,
                                    __ATOMIC_RELAXED) /
                1e6);
    fprintf(f, "  threads %d, rss %ld MiB\n", count_entries("/proc/self/task"),
            rss_mib());
}

/* ---------------------------------------------------------------------------
 * The watchdog thread.
 * ------------------------------------------------------------------------- */

static pthread_t watchdog_thread;
static int watchdog_quit; /* main() stores with release at the end */

/* Report the workers that have not moved for the stall time; true when
 * there was one. */
static bool check_stalls(int64_t now)
{
    bool stalled = false;
    for (int i = 0; i < nworkers; i++) {
        struct soak_worker *w = &workers[i];
        /* Acquire pairs with the worker's release store of its state. */
        if (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) != W_RUNNING) {
            w->seen_at = now;
            continue;
        }
        uint64_t it = __atomic_load_n(&w->iters, __ATOMIC_RELAXED);
        uint64_t moved = it + __atomic_load_n(&w->steps, __ATOMIC_RELAXED);
        if (moved != w->seen || w->seen_at == 0) {
            w->seen = moved;
            w->seen_at = now;
            continue;
        }
        if (now - w->seen_at >= soak_opts.stall_s * SOAK_S) {
            fprintf(stderr, "soak: STALL %s: no progress for %lld s (at "
                            "iteration %llu)\n",
                    w->name, (long long)((now - w->seen_at) / SOAK_S),
                    (unsigned long long)it);
            stalled = true;
        }
    }
    return stalled;
}

/* How long a phase may last before the run counts as hung: the run's time
 * for PH_RUN, the stall time for the others (boot, stop, checks and the
 * runtime's own exit each take well under a second). */
static int64_t phase_limit(int ph)
{
    int64_t stall = soak_opts.stall_s * SOAK_S;
    return ph == PH_RUN ? soak_opts.seconds * SOAK_S + stall : stall;
}

/* Report a phase that has lasted too long, with the workers not done. */
static bool check_phase(int64_t now)
{
    int ph = __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
    int64_t since = __atomic_load_n(&phase_since, __ATOMIC_RELAXED);
    if (ph == PH_END || now - since < phase_limit(ph))
        return false;
    fprintf(stderr, "soak: STALL: phase %s has lasted %lld s\n",
            phase_names[ph], (long long)((now - since) / SOAK_S));
    for (int i = 0; i < nworkers; i++)
        if (__atomic_load_n(&workers[i].state, __ATOMIC_ACQUIRE) != W_DONE)
            fprintf(stderr, "soak:   %s has not returned\n",
                    workers[i].name);
    return true;
}

static void *watchdog(void *arg)
{
    (void)arg;
    int64_t t0 = mono_ns(), next_status = t0 + 5 * SOAK_S;
    /* Acquire pairs with main()'s release store. */
    while (!__atomic_load_n(&watchdog_quit, __ATOMIC_ACQUIRE)) {
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
        int64_t now = mono_ns();
        int ph = __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
        bool stalled = ph == PH_RUN && check_stalls(now);
        stalled |= check_phase(now);
        if (stalled && !__atomic_exchange_n(&fail_once, 1, __ATOMIC_ACQ_REL)) {
            fprintf(stderr, "soak: seed %llu; the scheduler and the "
                            "goroutines follow\n",
                    (unsigned long long)soak_opts.seed);
            if (ph < PH_EXIT) {
                gort_schedtrace(0);
                gort_dump_goroutines(2);
            }
            summary(mono_ns() - t0);
            fflush(stdout);
            _exit(3);
        }
        if (soak_opts.verbose && ph == PH_RUN && now >= next_status) {
            status_line(t0);
            next_status = now + 5 * SOAK_S;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Starting and joining the workers.
 * ------------------------------------------------------------------------- */

static void set_phase(int ph)
{
    __atomic_store_n(&phase_since, mono_ns(), __ATOMIC_RELAXED);
    /* Release: the watchdog reads phase_since after it loads phase. */
    __atomic_store_n(&phase, ph, __ATOMIC_RELEASE);
}

/* True when the comma-separated list holds name. */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

/* True when -only and -skip leave kind k in. */
static bool kind_selected(const struct soak_kind *k)
{
    if (soak_opts.skip != NULL && listed(soak_opts.skip, k->name))
        return false;
    return soak_opts.only == NULL || listed(soak_opts.only, k->name);
}

/* True when k runs: selected, or needed by a selected kind. */
static bool kind_runs(const struct soak_kind *k)
{
    if (soak_opts.fixedprocs && k->body == soak_gomaxprocs)
        return false;
    if (kind_selected(k))
        return true;
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i].needs && strcmp(kinds[i].needs, k->name) == 0 &&
            kind_selected(&kinds[i]))
            return true;
    return false;
}

/* Fill the worker table from kinds[]. */
static void make_workers(void)
{
    for (size_t k = 0; k < NKINDS; k++) {
        if (!kind_runs(&kinds[k]))
            continue;
        for (int i = 0; i < kinds[k].count && nworkers < MAX_WORKERS; i++) {
            struct soak_worker *w = &workers[nworkers++];
            w->kind = &kinds[k];
            w->index = i;
            snprintf(w->name, sizeof w->name, "%s/%d", kinds[k].name, i);
            uint64_t id = (uint64_t)k << 32 | (uint64_t)i;
            w->rng = soak_mix(soak_opts.seed ^ id) | 1;
        }
    }
}

/* What every worker runs: its body between the state changes. */
static void worker_run(struct soak_worker *w)
{
    /* Release: the watchdog sees the state after what came before. */
    __atomic_store_n(&w->state, W_RUNNING, __ATOMIC_RELEASE);
    w->kind->body(w);
    __atomic_store_n(&w->state, W_DONE, __ATOMIC_RELEASE);
}

static void worker_g(void *arg)
{
    worker_run(arg);
    gort_waitgroup_done(&workers_wg);
}

static void *worker_thread(void *arg)
{
    worker_run(arg);
    return NULL;
}

static void start_workers(void)
{
    for (int i = 0; i < nworkers; i++) {
        struct soak_worker *w = &workers[i];
        if (w->kind->how == SOAK_THREAD) {
            int err = pthread_create(&threads[i], NULL, worker_thread, w);
            if (err != 0)
                soak_fail(w, "pthread_create returned %d", err);
            continue;
        }
        gort_waitgroup_add(&workers_wg, 1);
        soak_go(w, worker_g, w);
    }
}

static void join_workers(void)
{
    gort_waitgroup_wait(&workers_wg);
    for (int i = 0; i < nworkers; i++) {
        if (workers[i].kind->how != SOAK_THREAD)
            continue;
        /* A thread blocking in pthread_join: the P goes to another M. */
        int err = GORT_BLOCKING(pthread_join(threads[i], NULL));
        if (err != 0)
            soak_fail(&workers[i], "pthread_join returned %d", err);
    }
}

/* Run every selected kind's init hook. */
static void init_kinds(void)
{
    for (size_t k = 0; k < NKINDS; k++)
        if (kinds[k].init != NULL && kind_runs(&kinds[k]))
            kinds[k].init();
}

/* Run every selected kind's fini hook. */
static void fini_kinds(void)
{
    for (size_t k = 0; k < NKINDS; k++)
        if (kinds[k].fini != NULL && kind_runs(&kinds[k]))
            kinds[k].fini();
}

int soak_workers_of(soak_body *body)
{
    int n = 0;
    for (int i = 0; i < nworkers; i++)
        n += workers[i].kind->body == body;
    return n;
}

/* ---------------------------------------------------------------------------
 * The leak checks.
 * ------------------------------------------------------------------------- */

/* Wait until the goroutine count is back to base: goroutines that have
 * signalled their end may still be on their way out. */
static void check_goroutines(int64_t base)
{
    int64_t n = gort_numgoroutine();
    for (int i = 0; i < 500 && n != base; i++) {
        gort_sleep(10 * SOAK_MS);
        n = gort_numgoroutine();
    }
    if (n != base) {
        fprintf(stderr, "soak: goroutines by backtrace:\n");
        gort_dump_goroutines_grouped(2);
        soak_check_failed("%lld goroutines at the end, %lld before the "
                        "workers started",
                  (long long)n, (long long)base);
    }
}

/* The CPU workers loop without calls for 20 ms at a time: sysmon must
 * have preempted them with the signal (observe's last sample of the
 * metric, a second or less before the stop). */
static void check_preemption(void)
{
    bool cpu = false, observed = false;
    for (int i = 0; i < nworkers; i++) {
        cpu |= workers[i].kind->body == soak_spin && workers[i].iters > 0;
        observed |= workers[i].kind->body == soak_observe &&
                    workers[i].iters > 1;
    }
    if (cpu && observed && soak_opts.async_preempt &&
        soak_opts.seconds >= 5 && soak_stats.preempt_async == 0)
        soak_check_failed("no asynchronous preemption was counted while the "
                        "spin worker ran");
}

/* Print what every open descriptor refers to. */
static void list_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[300], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (e->d_name[0] != '.' && n > 0)
            fprintf(stderr, "soak:   fd %s -> %.*s\n", e->d_name, (int)n,
                    target);
    }
    closedir(d);
}

/* The network poller makes its own descriptors with the first one it is
 * given, and keeps them until gort_main returns: have them made before
 * the count starts. */
static void start_poller(void)
{
    int p[2];
    SOAK_OK(NULL, gort_pipe(p));
    SOAK_OK(NULL, gort_close(p[0]));
    SOAK_OK(NULL, gort_close(p[1]));
}

static void check_fds(int base)
{
    int n = count_fds();
    if (n != base) {
        list_fds();
        soak_check_failed("%d open descriptors at the end (listed above), %d "
                        "before the workers started",
                  n, base);
    }
}

/* ---------------------------------------------------------------------------
 * The main goroutine.
 * ------------------------------------------------------------------------- */

static int64_t run_elapsed;

static void main_g(void *arg)
{
    (void)arg;
    if (soak_opts.procs > 0)
        gort_gomaxprocs(soak_opts.procs);
    const char *dbg = getenv("GORTDEBUG");
    printf("soak: %lld s, seed %llu, GOMAXPROCS %d%s, %d workers%s%s\n",
           (long long)soak_opts.seconds, (unsigned long long)soak_opts.seed,
           gort_gomaxprocs(0), soak_opts.fixedprocs ? " (fixed)" : "",
           nworkers, dbg ? ", GORTDEBUG=" : "", dbg ? dbg : "");
    fflush(stdout);
    int64_t base_g = gort_numgoroutine();
    start_poller();
    int base_fds = count_fds();
    init_kinds();
    int64_t t0 = gort_nanotime();
    set_phase(PH_RUN);
    start_workers();
    soak_nap(soak_opts.seconds * SOAK_S);
    while (gort_nanotime() - t0 < soak_opts.seconds * SOAK_S)
        gort_sleep(10 * SOAK_MS); /* soak_nap ends early only at the stop */
    set_phase(PH_STOP);
    /* Pairs with the acquire load in soak_running. */
    __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
    join_workers();
    run_elapsed = gort_nanotime() - t0;
    final_procs = gort_gomaxprocs(0);
    set_phase(PH_CHECK);
    check_goroutines(base_g);
    check_fds(base_fds);
    check_preemption();
    fini_kinds();
    set_phase(PH_EXIT);
}

/* ---------------------------------------------------------------------------
 * The command line.
 * ------------------------------------------------------------------------- */

/* The usage and the kinds; why NULL: asked for with -h (exit 0). */
static _Noreturn void usage(const char *why)
{
    if (why != NULL)
        fprintf(stderr, "soak: %s\n", why);
    fprintf(stderr,
            "usage: soak [-t SECONDS] [-procs N] [-seed S] [-v] "
            "[-fixedprocs] [-stall SECONDS] [-stack BYTES] "
            "[-only KIND,...] [-skip KIND,...]\nkinds:");
    for (size_t k = 0; k < NKINDS; k++)
        fprintf(stderr, " %s", kinds[k].name);
    fprintf(stderr, "\n");
    exit(why != NULL ? 2 : 0);
}

/* The number in s, which must be all digits and at least lo. */
static long long number(const char *flag, const char *s, long long lo)
{
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (s == NULL || *s == '\0' || *end != '\0' || errno != 0 || v < lo) {
        char why[96];
        snprintf(why, sizeof why, "%s wants a number of at least %lld", flag,
                 lo);
        usage(why);
    }
    return v;
}

static void parse_args(int argc, char **argv)
{
    soak_opts.seed = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0)
            usage(NULL);
        if (strcmp(a, "-v") == 0) {
            soak_opts.verbose = true;
            continue;
        }
        if (strcmp(a, "-fixedprocs") == 0) {
            soak_opts.fixedprocs = true;
            continue;
        }
        i++;
        if (strcmp(a, "-t") == 0)
            soak_opts.seconds = number(a, v, 1);
        else if (strcmp(a, "-procs") == 0)
            soak_opts.procs = (int)number(a, v, 1);
        else if (strcmp(a, "-seed") == 0)
            soak_opts.seed = (uint64_t)number(a, v, 0);
        else if (strcmp(a, "-stall") == 0)
            soak_opts.stall_s = number(a, v, 1);
        else if (strcmp(a, "-stack") == 0)
            soak_opts.stack = (size_t)number(a, v, GORT_MIN_STACK_SIZE);
        else if (strcmp(a, "-only") == 0 && v != NULL)
            soak_opts.only = v;
        else if (strcmp(a, "-skip") == 0 && v != NULL)
            soak_opts.skip = v;
        else
            usage("unknown or incomplete option");
    }
    if (soak_opts.procs > GORT_MAX_PROCS)
        usage("-procs is above GORT_MAX_PROCS");
    if (soak_opts.stack < 64 * 1024)
        usage("-stack below 64 KiB leaves the recursion no room");
    if (getenv("GORTSTACKSIZE") != NULL)
        usage("GORTSTACKSIZE is set: use -stack (the recursion must know "
              "the size)");
    if (gort_set_stack_size(soak_opts.stack) != 0)
        usage("-stack is out of gort_set_stack_size's range");
}

/* Asynchronous preemption works unless ThreadSanitizer or GORTDEBUG turns
 * it off; CPU workers without it yield between their chunks. */
static bool async_preempt_on(void)
{
    const char *d = getenv("GORTDEBUG");
    return !SOAK_TSAN && !(d && strstr(d, "asyncpreemptoff=1"));
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    soak_opts.async_preempt = async_preempt_on();
    make_workers();
    if (nworkers == 0)
        usage("-only and -skip select no worker");
    /* A thread leak should end in gort's fatal error, not exhaust the
     * machine: the workers need a few dozen threads at most. */
    gort_set_max_threads(2000);
    soak_cpu_init();
    set_phase(PH_BOOT);
    int err = pthread_create(&watchdog_thread, NULL, watchdog, NULL);
    if (err != 0) {
        fprintf(stderr, "soak: pthread_create: %s\n", strerror(err));
        return 1;
    }
    err = gort_main(main_g, NULL);
    if (err != 0) {
        fprintf(stderr, "soak: gort_main returned %d\n", err);
        return 1;
    }
    set_phase(PH_END);
    __atomic_store_n(&watchdog_quit, 1, __ATOMIC_RELEASE);
    pthread_join(watchdog_thread, NULL);
    summary(run_elapsed);
    if (eintr_raw() > 0)
        printf("soak: note: %llu raw system calls failed with EINTR (should "
               "be 0): the preemption signal interrupted them, and the "
               "kernel restarts neither nanosleep(2) nor poll(2) after a "
               "handler\n",
               (unsigned long long)eintr_raw());
    if (end_failures > 0) {
        printf("soak: FAIL: %d checks at the end of the run failed (above)\n",
               end_failures);
        return 1;
    }
    printf("soak: PASS\n");
    return 0;
}
