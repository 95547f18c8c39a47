/* SPDX-License-Identifier: MIT */
/*
 * hooklibs.h - what the real-library tests of gort-hook share
 * (tests/hooklibs, driven by hooklibs.py, which starts the servers).
 *
 * Each test runs many goroutines, each with its own connection, until
 * every one of them is inside a blocking library call at the same
 * moment; then it samples the process's thread count, lets the replies
 * come and checks each one.  "Inside a blocking call" is shown twice:
 * every request is known to be held where no answer can come yet (each
 * test says how), and the goroutine dump shows every one of them parked
 * in the network poller ("IO wait"), which is where the hooks put a
 * goroutine whose read, write, connect or poll would block.  The
 * goroutines keep gort's default stack size, as a program would.
 */
#ifndef GORT_HOOKLIBS_H
#define GORT_HOOKLIBS_H

#include "test_util.h"

#include <gort.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* GOMAXPROCS of every test, and how many threads beyond it the process
 * may have while every goroutine is blocked (the runtime's own: sysmon,
 * idle Ms), plus ThreadSanitizer's background thread in its builds. */
#define HL_PROCS 2
#if defined(__SANITIZE_THREAD__)
#define HL_THREAD_SLACK 5
#else
#define HL_THREAD_SLACK 4
#endif
#define HL_MS (1000LL * 1000)

/* Every connection is a descriptor (the TLS test holds both ends): the
 * soft limit goes up to the hard one. */
static inline void hl_raise_nofile(int need)
{
    struct rlimit rl;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    rl.rlim_cur = rl.rlim_max;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)need) {
        say("SKIP: RLIMIT_NOFILE's hard limit is %llu, the test needs %d "
               "descriptors\n",
               (unsigned long long)rl.rlim_cur, need);
        exit(77);
    }
}

/* How many goroutines the dump shows in each state, to stderr. */
static inline void hl_print_states(void)
{
    char *text = dump_text();
    enum { MAXSTATES = 32 };
    char states[MAXSTATES][64];
    int counts[MAXSTATES], nstates = 0;
    for (const char *p = text; (p = strstr(p, "goroutine ")) != NULL; p++) {
        if (p != text && p[-1] != '\n')
            continue;
        /* "goroutine N [state]:" */
        const char *lb = strchr(p, '['), *nl = strchr(p, '\n');
        const char *rb = lb ? strchr(lb, ']') : NULL;
        if (!lb || !rb || (nl && rb > nl))
            continue;
        int len = (int)(rb - lb - 1);
        if (len >= 64)
            len = 63;
        int k = 0;
        while (k < nstates &&
               (strncmp(states[k], lb + 1, (size_t)len) || states[k][len] != 0))
            k++;
        if (k == nstates) {
            if (nstates == MAXSTATES)
                continue;
            memcpy(states[k], lb + 1, (size_t)len);
            states[k][len] = 0;
            counts[k] = 0;
            nstates++;
        }
        counts[k]++;
    }
    for (int k = 0; k < nstates; k++)
        fprintf(stderr, "  %5d [%s]\n", counts[k], states[k]);
    free(text);
}

/* Wait until at least n goroutines are in IO wait, and return how many
 * are: fails after 30 s.  Called once the server holds every request, so
 * each goroutine is on its way into (or already in) its blocking call. */
static inline int hl_await_io_wait(int n)
{
    int64_t start = gort_nanotime(), deadline = start + 30000 * HL_MS;
    bool told = false;
    int got;
    while ((got = count_waiting("IO wait", 0)) < n) {
        if (!told && gort_nanotime() > start + 5000 * HL_MS) {
            /* Slow: say where they are while it lasts. */
            fprintf(stderr,
                    "%d goroutines in IO wait after 5 s, want %d; "
                    "threads %d; states:\n",
                    got, n, count_threads());
            hl_print_states();
            told = true;
        }
        if (gort_nanotime() > deadline) {
            fprintf(stderr,
                    "only %d goroutines in IO wait after 30 s, want "
                    "%d; their states and stacks:\n",
                    got, n);
            hl_print_states();
            gort_dump_goroutines_grouped(2);
            CHECK(0);
        }
        gort_sleep(5 * HL_MS);
    }
    /* HOOKLIBS_DUMP=1: where they wait, grouped by backtrace, on stderr. */
    if (getenv("HOOKLIBS_DUMP"))
        gort_dump_goroutines_grouped(2);
    return got;
}

/* The largest thread count over ten samples 10 ms apart, checked against
 * GOMAXPROCS + HL_THREAD_SLACK. */
static inline int hl_sample_threads(void)
{
    int most = 0;
    for (int i = 0; i < 10; i++) {
        int t = count_threads();
        if (t > most)
            most = t;
        gort_sleep(10 * HL_MS);
    }
    CHECK_LE(most, HL_PROCS + HL_THREAD_SLACK);
    return most;
}

/* Seconds since t0 (gort_nanotime). */
static inline double hl_since(int64_t t0)
{
    return (double)(gort_nanotime() - t0) / 1e9;
}

/* The line each test prints once every reply has been checked. */
static inline void hl_report(const char *what, int n, int io_wait,
                             double t_blocked, int threads, double t_all)
{
    say("%s: %d goroutines blocked at once after %.2f s (%d goroutines "
           "in IO wait); threads at most %d (limit %d); %d replies correct; "
           "%.2f s in all\n",
           what, n, t_blocked, io_wait, threads, HL_PROCS + HL_THREAD_SLACK, n,
           t_all);
}

#define HL_ATOMIC_INC(p) __atomic_add_fetch((p), 1, __ATOMIC_ACQ_REL)
#define HL_ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

#endif /* GORT_HOOKLIBS_H */
