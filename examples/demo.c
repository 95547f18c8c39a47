/* SPDX-License-Identifier: MIT */
/*
 * demo - gort's scheduler under real load, narrated by schedtrace.
 *
 * Counts the primes below N with a tree of goroutines: the root splits the
 * range into 10 parts, each part into 10 more, down to leaves of about
 * 2,000 numbers (about 100,000 goroutines in all).  Every split goroutine
 * spawns its children (each lands in runnext, pushing the previous one to
 * the local ring), so one P starts with all the work and the others must
 * steal it; the schedtrace lines (every 100 ms on stderr) show the run
 * queues fill and drain and the per-P schedticks even out.
 *
 * Usage: demo [-procs N] [-n LIMIT]   (defaults: all CPUs, 20,000,000)
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEAF 2000

struct task {
    uint64_t lo, hi;            /* count primes in [lo, hi) */
    uint64_t *result;           /* where to add the count */
    gort_waitgroup *parent;     /* Done when finished */
};

static uint64_t limit = 20000000;
static int procs;
static int64_t ngoroutines;

static int isprime(uint64_t n)
{
    if (n < 2)
        return 0;
    if (n % 2 == 0)
        return n == 2;
    for (uint64_t d = 3; d * d <= n; d += 2)
        if (n % d == 0)
            return 0;
    return 1;
}

/* Goroutine dumps and execution traces name goroutines by their start
 * function, from the program's symbol table. */
static void count(void *arg)
{
    struct task *t = arg;
    uint64_t c = 0;
    if (t->hi - t->lo <= LEAF) {
        for (uint64_t n = t->lo; n < t->hi; n++)
            c += (uint64_t)isprime(n);
    } else {
        struct task kids[10];
        uint64_t counts[10] = {0};
        gort_waitgroup wg = GORT_WAITGROUP_INIT;
        uint64_t step = (t->hi - t->lo + 9) / 10;
        for (int i = 0; i < 10; i++) {
            uint64_t lo = t->lo + (uint64_t)i * step;
            uint64_t hi = lo + step < t->hi ? lo + step : t->hi;
            kids[i] = (struct task){lo, hi > lo ? hi : lo, &counts[i], &wg};
            gort_waitgroup_add(&wg, 1);
            if (gort_go(count, &kids[i]) < 0) {
                fprintf(stderr, "demo: cannot start a goroutine\n");
                exit(1);
            }
            __atomic_add_fetch(&ngoroutines, 1, __ATOMIC_RELAXED);
        }
        gort_waitgroup_wait(&wg);
        for (int i = 0; i < 10; i++)
            c += counts[i];
    }
    *t->result = c;
    gort_waitgroup_done(t->parent);
}

static void main_g(void *arg)
{
    (void)arg;
    if (procs > 0)
        gort_gomaxprocs(procs);
    int p = gort_gomaxprocs(0);
    printf("demo: counting primes below %llu with GOMAXPROCS=%d\n",
           (unsigned long long)limit, p);
    int64_t start = gort_nanotime();
    uint64_t primes = 0;
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    struct task root = {0, limit, &primes, &wg};
    gort_waitgroup_add(&wg, 1);
    gort_go(count, &root);
    ngoroutines = 1;
    gort_waitgroup_wait(&wg);
    double ms = (double)(gort_nanotime() - start) / 1e6;
    uint32_t ticks[GORT_MAX_PROCS];
    int n = gort_sched_ticks(ticks, GORT_MAX_PROCS);
    uint64_t total = 0;
    printf("demo: %llu primes below %llu\n", (unsigned long long)primes,
           (unsigned long long)limit);
    printf("demo: %lld goroutines in %.1f ms on %d Ps\n",
           (long long)ngoroutines, ms, n);
    printf("demo: schedticks per P: [");
    for (int i = 0; i < n; i++) {
        printf(i ? " %u" : "%u", ticks[i]);
        total += ticks[i];
    }
    printf("] total %llu\n", (unsigned long long)total);
    printf("demo: final scheduler state:\n");
    fflush(stdout);
    gort_schedtrace(0);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        long long x = v ? strtoll(v, &end, 10) : 0;
        if (!v || *end || x < 1 || (!strcmp(argv[i], "-procs") && x > GORT_MAX_PROCS)) {
            fprintf(stderr, "usage: demo [-procs N (1..%d)] [-n LIMIT (>= 1)]\n",
                    GORT_MAX_PROCS);
            return 2;
        }
        if (!strcmp(argv[i], "-procs"))
            procs = (int)x;
        else if (!strcmp(argv[i], "-n"))
            limit = (uint64_t)x;
        else {
            fprintf(stderr, "usage: demo [-procs N] [-n LIMIT]\n");
            return 2;
        }
    }
    if (!getenv("GORTDEBUG"))
        setenv("GORTDEBUG", "schedtrace=100", 1);
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "demo: gort_main failed: %d\n", err);
        return 1;
    }
    return 0;
}
