/* SPDX-License-Identifier: MIT */
/*
 * bench.h - shared helpers for the gort benchmarks (header only).
 *
 * Every benchmark is one program that follows the contract in
 * BENCHMARKS.md:
 *
 *   - flags `-procs N` (GOMAXPROCS for the run; default all CPUs, or what
 *     the benchmark's row fixes) and `-n SIZE` (work size);
 *   - its figures are the last lines of output, one per figure:
 *       RESULT name=<name> procs=<N> metric=<metric> value=<number> unit=<unit>
 *
 * The flag syntax mirrors Go's flag package, so that the C program and its
 * Go peer in bench/go/<name> accept the same command lines: `-procs 2`,
 * `-procs=2`, `--procs 2` and `--procs=2` are the same; `-h` / `-help`
 * prints the usage and exits 0; anything else malformed prints an error and
 * the usage on stderr and exits 2.
 *
 * Typical use:
 *
 *   static struct bench_opts opt;
 *   static void main_g(void *arg) {
 *       bench_set_procs(&opt);            // first thing in the main goroutine
 *       int64_t t0 = bench_now_ns();
 *       ... the work ...
 *       double ns = (double)(bench_now_ns() - t0);
 *       bench_result(&opt, "ns_per_x", ns / (double)opt.n, "ns");
 *   }
 *   int main(int argc, char **argv) {
 *       bench_parse(&opt, argc, argv, "x", 0, 1000000);
 *       return bench_run(&opt, main_g, NULL);
 *   }
 */
#ifndef GORT_BENCH_H
#define GORT_BENCH_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gort.h"

/* The parsed command line of one benchmark. */
struct bench_opts {
    const char *name;  /* the benchmark's name, as in RESULT name=... */
    int procs;         /* -procs: > 0 sets GOMAXPROCS; 0 keeps the default */
    int64_t n;         /* -n: the work size, > 0 */
    int def_procs;     /* the defaults, for the usage message */
    int64_t def_n;
};

static inline void bench_usage(FILE *f, const struct bench_opts *o)
{
    fprintf(f, "usage: %s [-procs N] [-n SIZE]\n", o->name);
    if (o->def_procs > 0)
        fprintf(f, "  -procs N   GOMAXPROCS for the run (default %d)\n",
                o->def_procs);
    else
        fprintf(f, "  -procs N   GOMAXPROCS for the run (default all CPUs)\n");
    fprintf(f, "  -n SIZE    work size (default %" PRId64 ")\n", o->def_n);
}

static inline _Noreturn void bench_bad_flag(const struct bench_opts *o,
                                            const char *fmt, const char *a,
                                            const char *b)
{
    fprintf(stderr, "%s: ", o->name);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    bench_usage(stderr, o);
    exit(2);
}

/* Parse a positive decimal integer no larger than max; -1 when malformed. */
static inline int64_t bench_parse_pos(const char *s, int64_t max)
{
    char *end;
    long long v;

    if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0 || v > max)
        return -1;
    return (int64_t)v;
}

/*
 * Parse argv into *o.  default_procs is 0 for "all CPUs" (the runtime's
 * default, which GORTMAXPROCS may change, as GOMAXPROCS does for Go) or the
 * procs this benchmark's row fixes; default_n is the default work size.
 * Exits 2 with a message on a bad flag, 0 after -h.
 */
static inline void bench_parse(struct bench_opts *o, int argc, char **argv,
                               const char *name, int default_procs,
                               int64_t default_n)
{
    o->name = name;
    o->procs = o->def_procs = default_procs;
    o->n = o->def_n = default_n;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *flag, *val;
        size_t flen;
        int is_procs, is_n;

        if (arg[0] != '-' || arg[1] == '\0')
            bench_bad_flag(o, "unexpected argument %s%s", arg, "");
        flag = arg + 1;
        if (flag[0] == '-')
            flag++;
        if (strcmp(flag, "h") == 0 || strcmp(flag, "help") == 0) {
            bench_usage(stdout, o);
            exit(0);
        }
        val = strchr(flag, '=');
        flen = val != NULL ? (size_t)(val - flag) : strlen(flag);
        is_procs = flen == 5 && strncmp(flag, "procs", 5) == 0;
        is_n = flen == 1 && flag[0] == 'n';
        if (!is_procs && !is_n)
            bench_bad_flag(o, "flag provided but not defined: %s%s", arg, "");
        if (val != NULL) {
            val++;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            bench_bad_flag(o, "flag needs an argument: %s%s", arg, "");
        }
        if (is_procs) {
            int64_t v = bench_parse_pos(val, GORT_MAX_PROCS);
            if (v < 0)
                bench_bad_flag(o, "invalid value \"%s\" for flag -procs "
                               "(want an integer in 1..%s)", val, "1024");
            o->procs = (int)v;
        } else {
            int64_t v = bench_parse_pos(val, INT64_MAX);
            if (v < 0)
                bench_bad_flag(o, "invalid value \"%s\" for flag -n "
                               "(want a positive integer)%s", val, "");
            o->n = v;
        }
    }
}

/* Apply -procs: call first thing in the main goroutine.  Afterwards
 * o->procs is the GOMAXPROCS the run uses. */
static inline void bench_set_procs(struct bench_opts *o)
{
    if (o->procs > 0)
        gort_gomaxprocs(o->procs);
    o->procs = gort_gomaxprocs(0);
}

/* Monotonic wall clock in nanoseconds (clock_gettime, independent of the
 * runtime's own clock). */
static inline int64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Print one RESULT line (the Go peers print the same format: %.2f). */
static inline void bench_result(const struct bench_opts *o,
                                const char *metric, double value,
                                const char *unit)
{
    printf("RESULT name=%s procs=%d metric=%s value=%.2f unit=%s\n",
           o->name, o->procs, metric, value, unit);
    fflush(stdout);
}

/* Run fn under gort_main and turn a failure to boot into exit status 1. */
static inline int bench_run(struct bench_opts *o, void (*fn)(void *),
                            void *arg)
{
    int rc = gort_main(fn, arg);

    if (rc < 0) {
        fprintf(stderr, "%s: gort_main: %s\n", o->name, strerror(-rc));
        return 1;
    }
    return 0;
}

/*
 * For the benchmarks of many clients against a real server (redis_fanout,
 * pg_fanout), which take flags of their own (-mode, -clients, ...) rather
 * than bench_parse's and run the same clients on plain pthreads too:
 * integer flags, failures counted across threads, the process's threads at
 * the peak, and its wall and CPU clocks in seconds.
 */

/* The value v of flag `name` as an integer >= min; exit 2 with a message
 * naming prog, the flag and what was wrong otherwise. */
static inline long bench_intflag(const char *prog, const char *name,
                                 const char *v, long min)
{
    char *end;
    long x = strtol(v, &end, 10);

    if (*end || x < min) {
        fprintf(stderr, "%s: %s wants an integer >= %ld, got %s\n", prog,
                name, min, v);
        exit(2);
    }
    return x;
}

/* Count a client's failure in *failures, from any thread, and print what
 * went wrong for the first five only: a server gone away fails every
 * client at once. */
static inline void bench_fail(const char *prog, long *failures,
                              const char *what)
{
    if (__atomic_fetch_add(failures, 1, __ATOMIC_RELAXED) < 5)
        fprintf(stderr, "%s: %s\n", prog, what);
}

/* Monotonic wall clock in seconds. */
static inline double bench_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The CPU time the process has used so far, user and system, in seconds
 * (getrusage): every thread's, the runtime's own included. */
static inline double bench_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

#endif /* GORT_BENCH_H */
