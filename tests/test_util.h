/* SPDX-License-Identifier: MIT */
/*
 * test_util.h - helpers that several test files share, on top of test.h.
 *
 * Sanitizer switches, a time unit and atomics for counters; running a
 * function under gort_main; int64_t channels; a reproducible PRNG; the
 * goroutine dump and waiting for goroutines to show up in it; printing
 * from child programs and running death tests.  Everything is static
 * inline, so a file pays only for what it uses.
 */
#ifndef GORT_TEST_UTIL_H
#define GORT_TEST_UTIL_H

#include "test.h"

#include <gort.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 1 under AddressSanitizer or ThreadSanitizer (sizes shrink, bounds grow). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif
/* 1 under ThreadSanitizer, which gives every G a fiber; fibers count
 * against its limit of 8128 threads: no more than a few thousand Gs may
 * exist. */
#if defined(__SANITIZE_THREAD__)
#define TSAN 1
#else
#define TSAN 0
#endif

/* One millisecond in nanoseconds. */
#define MS (1000LL * 1000)

/* Counters shared between goroutines and threads. */
#define ATOMIC_INC(p) __atomic_add_fetch((p), 1, __ATOMIC_ACQ_REL)
#define ATOMIC_ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_ACQ_REL)
#define ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* A mkstemp/mkdtemp template in buf: "/tmp/<prefix>" and the six
 * placeholder characters those calls replace. */
static inline char *tmp_template(char *buf, size_t size, const char *prefix)
{
    int n = snprintf(buf, size, "/tmp/%s", prefix);
    CHECK(n > 0 && (size_t)n + 7 <= size);
    memset(buf + n, 'X', 6);
    buf[n + 6] = '\0';
    return buf;
}

/* Run fn(arg) under a fresh gort_main and check that it started. */
static inline void run_main(void (*fn)(void *), void *arg)
{
    int err = gort_main(fn, arg);
    CHECK_EQ(err, 0);
}

/* ---------------------------------------------------------------------------
 * Channels.
 * ------------------------------------------------------------------------- */

/* A new channel; fails the case if gort_chan_make does. */
static inline gort_chan *make_chan(size_t elemsize, size_t cap)
{
    gort_chan *ch = NULL;
    CHECK_EQ(gort_chan_make(&ch, elemsize, cap), 0);
    CHECK(ch != NULL);
    return ch;
}

/* Free ch, which must have no waiter. */
static inline void free_chan(gort_chan *ch)
{
    CHECK_EQ(gort_chan_free(ch), 0);
}

/* Receive an int64_t from ch, which must not be closed. */
static inline int64_t recv_i64(gort_chan *ch)
{
    int64_t v = -12345;
    CHECK(gort_chan_recv(ch, &v));
    return v;
}

static inline void send_i64(gort_chan *ch, int64_t v)
{
    gort_chan_send(ch, &v);
}

/* xorshift64: the next value of the sequence seeded by *s (never 0). */
static inline uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* The entries of directory path, "." and ".." left out. */
static inline int count_entries(const char *path)
{
    DIR *d = opendir(path);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The value of a uint64 metric (gort_metric_read), checked to be one. */
static inline uint64_t metric_u64(const char *name)
{
    gort_metric_sample s;
    memset(&s, 0, sizeof s);
    CHECK_EQ(gort_metric_read(name, &s), 0);
    CHECK_EQ(s.kind, GORT_METRIC_UINT64);
    return s.u64;
}

/* Threads of this process: the entries of /proc/self/task. */
static inline int count_threads(void)
{
    return count_entries("/proc/self/task");
}

/* Descriptors this process has open: the entries of /proc/self/fd, less
 * those open on a file of /proc.  gort's sysmon reads /proc files of its
 * own threads now and then (its crowd meter, the raw-syscall check) and
 * closes them at once: one open at the moment of a count is not the
 * test's.  The count's own directory is one of them. */
static inline int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        /* A descriptor closed since readdir listed it is not open
         * (readlink fails).  sysmon's reads come and go: /proc, and the
         * cgroup CPU limit it reads again once a second. */
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len < 0 || (len >= 6 && memcmp(target, "/proc/", 6) == 0) ||
            (len >= 15 && memcmp(target, "/sys/fs/cgroup/", 15) == 0))
            continue;
        n++;
    }
    closedir(d);
    return n;
}

/* ---------------------------------------------------------------------------
 * Waiting goroutines, as the goroutine dump shows them.
 * ------------------------------------------------------------------------- */

/* The goroutine dump, as a malloc'd string. */
static inline char *dump_text(void)
{
    int fd = memfd_create("gort-dump", MFD_CLOEXEC);
    CHECK_GE(fd, 0);
    gort_dump_goroutines(fd);
    off_t n = lseek(fd, 0, SEEK_END);
    CHECK_GE(n, 0);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK_EQ(pread(fd, buf, (size_t)n, 0), n);
    buf[n] = 0;
    close(fd);
    return buf;
}

/* Goroutines whose dump header is "goroutine N [reason]:" (or "[reason,
 * M minutes]:"): all of them when goid is 0, else goroutine goid only. */
static inline int count_waiting(const char *reason, int64_t goid)
{
    char *text = dump_text();
    size_t rl = strlen(reason);
    int n = 0;
    for (const char *p = text; p && *p;) {
        if (strncmp(p, "goroutine ", 10) == 0) {
            char *end;
            long long id = strtoll(p + 10, &end, 10);
            if (end[0] == ' ' && end[1] == '[' &&
                strncmp(end + 2, reason, rl) == 0 &&
                (end[2 + rl] == ']' || end[2 + rl] == ',') &&
                (goid == 0 || id == goid))
                n++;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    free(text);
    return n;
}

/* Yield until at least n goroutines (or goroutine goid) wait for reason;
 * fails after 30 s, printing the dump.  Returns how many do. */
static inline int await_waiting(const char *reason, int64_t goid, int n)
{
    int64_t deadline = gort_nanotime() + 30000 * MS;
    for (;;) {
        int got = count_waiting(reason, goid);
        if (got >= n)
            return got;
        if (gort_nanotime() > deadline) {
            fprintf(stderr, "%d goroutines [%s] (goid %lld) after 30 s, "
                            "want %d\n",
                    got, reason, (long long)goid, n);
            char *t = dump_text();
            fprintf(stderr, "%.20000s\n", t);
            free(t);
            CHECK(0);
        }
        gort_gosched();
    }
}

/* ---------------------------------------------------------------------------
 * Child programs and death tests.
 * ------------------------------------------------------------------------- */

/* printf to stdout, flushed at once (abort() does not flush stdio). */
static inline void say(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static inline void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

/* Run `child` with env (may be NULL); print its output if it did not die
 * by SIGABRT, before a check on r fails. */
static inline void run_death(const char *child, const char *const *env,
                             struct test_child *r)
{
    test_run_child(child, env, 60, r);
    if (r->signal != SIGABRT)
        fprintf(stderr, "child %s: exit %d signal %d\n--- stdout ---\n%s\n"
                        "--- stderr ---\n%s\n",
                child, r->exit_code, r->signal, r->out, r->err);
}

/* Number of newlines in s. */
static inline int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---------------------------------------------------------------------------
 * Watchdog: a plain thread that aborts with a message unless disarmed in
 * time (for tests whose failure mode is a hang).
 * ------------------------------------------------------------------------- */

struct watchdog {
    int seconds;
    const char *what;
    int disarmed;
    pthread_t thread;
};

static inline void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    for (int i = 0; i < w->seconds * 100; i++) {
        if (__atomic_load_n(&w->disarmed, __ATOMIC_ACQUIRE))
            return NULL;
        usleep(10 * 1000);
    }
    fprintf(stderr, "watchdog: %s: no progress in %d s\n", w->what,
            w->seconds);
    fflush(stderr);
    abort();
}

static inline void watchdog_arm(struct watchdog *w, int seconds,
                                const char *what)
{
    w->seconds = seconds;
    w->what = what;
    w->disarmed = 0;
    CHECK_EQ(pthread_create(&w->thread, NULL, watchdog_main, w), 0);
}

/* Call outside a goroutine (or on a thread that may block). */
static inline void watchdog_disarm(struct watchdog *w)
{
    __atomic_store_n(&w->disarmed, 1, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_join(w->thread, NULL), 0);
}

#endif /* GORT_TEST_UTIL_H */
