/* SPDX-License-Identifier: MIT */
/*
 * soak_sys.c - system calls under the soak, raw and wrapped.
 *
 *   pipe       a read of 8 bytes from a pipe that a writer thread fills
 *              0-20 ms later: raw read(2) with no wrapper (gort finds it
 *              with the preemption signal), GORT_BLOCKING, gort_read on a
 *              blocking descriptor (the syscall path),
 *              gort_entersyscallblock or gort_entersyscall around read(2),
 *              and gort_read / gort_readv on a gort_pipe (the network
 *              poller); the value must be the one asked for
 *   nanosleep  sleeps of 0.1-30 ms: raw nanosleep(2), gort_nanosleep and
 *              GORT_BLOCKING(nanosleep(...)); each must last its full time
 *              (an EINTR is counted and the rest slept)
 *   poll       poll(2) raw, through gort_poll and GORT_BLOCKING: a timeout
 *              with no data (0, not before its time) or data the writer
 *              thread sends later (1, POLLIN, the right value)
 *   files      gort_open, gort_pwrite, gort_fsync, gort_pread, gort_write,
 *              gort_read and gort_close on a temporary file (contents
 *              checked), gort_getaddrinfo, and gort_waitpid on a shell
 *              started with posix_spawn that exits with a random status
 *
 * EINTR from a raw call is counted (soak_stats) and reported in the
 * summary; the call is then finished, so that its result is still checked.
 * The gort_ wrappers retry interrupted calls (gort.h): -EINTR from one
 * fails the run.
 *
 * The writer thread is a plain pthread: it writes when asked whatever the
 * scheduler does, so a raw read that holds the only P cannot starve it.
 */
#include "soak.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SOAK_S + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns)
{
    return (struct timespec){(time_t)(ns / SOAK_S), (long)(ns % SOAK_S)};
}

/* ---------------------------------------------------------------------------
 * The writer thread: writes an 8-byte value to a descriptor after a delay.
 * ------------------------------------------------------------------------- */

struct writer_req {
    int32_t fd;       /* where to write; -1 ends the thread */
    int32_t unused;
    int64_t delay_ns;
    uint64_t value;
};

struct writer {
    struct soak_worker *w;
    int req[2];       /* requests, a blocking pipe */
    pthread_t thread;
};

/* Read exactly n bytes from a blocking descriptor, outside gort. */
static bool read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static void *writer_main(void *arg)
{
    struct writer *wr = arg;
    struct writer_req r;
    while (read_full(wr->req[0], &r, sizeof r) && r.fd >= 0) {
        struct timespec ts = to_timespec(r.delay_ns);
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        /* The pipe has room (one request at a time), so this is whole. */
        if (write(r.fd, &r.value, sizeof r.value) != sizeof r.value)
            soak_fail(wr->w, "writer thread: write(2) to %d: %s", r.fd,
                      strerror(errno));
    }
    return NULL;
}

static void writer_start(struct soak_worker *w, struct writer *wr)
{
    wr->w = w;
    if (pipe2(wr->req, O_CLOEXEC) != 0)
        soak_fail(w, "pipe2: %s", strerror(errno));
    int err = pthread_create(&wr->thread, NULL, writer_main, wr);
    if (err != 0)
        soak_fail(w, "pthread_create: %s", strerror(err));
}

/* Ask for value to be written to fd after delay_ns. */
static void writer_post(struct writer *wr, int fd, int64_t delay_ns,
                        uint64_t value)
{
    struct writer_req r = {fd, 0, delay_ns, value};
    /* Smaller than PIPE_BUF, into an empty pipe: one whole write. */
    if (write(wr->req[1], &r, sizeof r) != sizeof r)
        soak_fail(wr->w, "write(2) to the writer thread: %s", strerror(errno));
}

static void writer_stop(struct writer *wr)
{
    writer_post(wr, -1, 0, 0);
    int err = GORT_BLOCKING(pthread_join(wr->thread, NULL));
    if (err != 0)
        soak_fail(wr->w, "pthread_join: %s", strerror(err));
    close(wr->req[0]);
    close(wr->req[1]);
}

/* ---------------------------------------------------------------------------
 * pipe
 * ------------------------------------------------------------------------- */

enum { RD_RAW, RD_MACRO, RD_GORT_READ, RD_BLOCK, RD_ENTER, RD_POLLER,
       RD_POLLER_V, RD_MODES };
static const char *const rd_names[] = {
    "raw read(2)", "GORT_BLOCKING(read)", "gort_read (syscall path)",
    "gort_entersyscallblock + read(2)", "gort_entersyscall + read(2)",
    "gort_read on a gort_pipe", "gort_readv on a gort_pipe"};

/* read(2) of 8 bytes outside gort's wrappers, finishing after EINTR. */
static long raw_read8(int fd, uint64_t *v, uint64_t *eintr)
{
    ssize_t r;
    while ((r = read(fd, v, sizeof *v)) < 0 && errno == EINTR)
        soak_count(eintr, 1);
    return r < 0 ? -errno : r;
}

static long read_by(int mode, int fd, uint64_t *v)
{
    long r;
    switch (mode) {
    case RD_RAW:
        return raw_read8(fd, v, &soak_stats.eintr_read);
    case RD_MACRO:
        while ((r = GORT_BLOCKING(read(fd, v, sizeof *v))) < 0 &&
               errno == EINTR)
            soak_count(&soak_stats.eintr_wrapped, 1);
        return r < 0 ? -errno : r;
    case RD_BLOCK:
        gort_entersyscallblock();
        r = raw_read8(fd, v, &soak_stats.eintr_wrapped);
        gort_exitsyscall();
        return r;
    case RD_ENTER:
        gort_entersyscall();
        r = raw_read8(fd, v, &soak_stats.eintr_wrapped);
        gort_exitsyscall();
        return r;
    case RD_POLLER_V: {
        struct iovec iov[2] = {{v, 3}, {(char *)v + 3, sizeof *v - 3}};
        return gort_readv(fd, iov, 2);
    }
    default:
        return gort_read(fd, v, sizeof *v);
    }
}

void soak_pipe(struct soak_worker *w)
{
    struct writer wr;
    int plain[2], polled[2];
    writer_start(w, &wr);
    if (pipe2(plain, O_CLOEXEC) != 0)
        soak_fail(w, "pipe2: %s", strerror(errno));
    SOAK_OK(w, gort_pipe(polled));
    for (uint64_t seq = 1; soak_running(); seq++) {
        int mode = (int)(soak_rand(w) % RD_MODES);
        bool poller = mode == RD_POLLER || mode == RD_POLLER_V;
        int rfd = poller ? polled[0] : plain[0];
        writer_post(&wr, poller ? polled[1] : plain[1],
                    soak_between(w, 0, 20 * SOAK_MS), seq);
        uint64_t v = 0;
        long r = read_by(mode, rfd, &v);
        if (r != sizeof v || v != seq)
            soak_fail(w, "%s returned %ld with value %llu, want 8 and %llu",
                      rd_names[mode], r, (unsigned long long)v,
                      (unsigned long long)seq);
        soak_progress(w);
    }
    writer_stop(&wr);
    close(plain[0]);
    close(plain[1]);
    SOAK_OK(w, gort_close(polled[0]));
    SOAK_OK(w, gort_close(polled[1]));
}

/* ---------------------------------------------------------------------------
 * nanosleep
 * ------------------------------------------------------------------------- */

enum { NS_RAW, NS_GORT, NS_MACRO, NS_MODES };
static const char *const ns_names[] = {"raw nanosleep(2)", "gort_nanosleep",
                                       "GORT_BLOCKING(nanosleep)"};

static void sleep_by(struct soak_worker *w, int mode, int64_t d)
{
    struct timespec ts = to_timespec(d);
    int r;
    switch (mode) {
    case NS_RAW:
        while ((r = nanosleep(&ts, &ts)) < 0 && errno == EINTR)
            soak_count(&soak_stats.eintr_nanosleep, 1);
        break;
    case NS_GORT:
        r = gort_nanosleep(&ts, NULL);
        if (r == -EINTR)
            soak_fail(w, "gort_nanosleep(%lld ns) returned -EINTR (gort.h: "
                         "interrupted calls are retried)",
                      (long long)d);
        break;
    default:
        while ((r = GORT_BLOCKING(nanosleep(&ts, &ts))) < 0 && errno == EINTR)
            soak_count(&soak_stats.eintr_wrapped, 1);
        break;
    }
    if (r != 0)
        soak_fail(w, "%s(%lld ns) returned %d (errno %d)", ns_names[mode],
                  (long long)d, r, errno);
}

void soak_nanosleep(struct soak_worker *w)
{
    while (soak_running()) {
        int mode = (int)(soak_rand(w) % NS_MODES);
        int64_t d = soak_between(w, 100 * SOAK_US, 30 * SOAK_MS);
        int64_t t0 = mono();
        sleep_by(w, mode, d);
        int64_t slept = mono() - t0;
        if (slept < d)
            soak_fail(w, "%s(%lld ns) returned after %lld ns", ns_names[mode],
                      (long long)d, (long long)slept);
        if (mode == NS_RAW)
            soak_lat_add(&soak_stats.rawsleep, slept - d);
        soak_progress(w);
    }
}

/* ---------------------------------------------------------------------------
 * poll
 * ------------------------------------------------------------------------- */

enum { PL_RAW, PL_GORT, PL_MACRO, PL_MODES };
static const char *const pl_names[] = {"raw poll(2)", "gort_poll",
                                       "GORT_BLOCKING(poll)"};

/* One poll the mode's way; EINTR is counted and -EINTR returned. */
static int poll_once(struct soak_worker *w, int mode, struct pollfd *p,
                     int ms)
{
    int r;
    switch (mode) {
    case PL_RAW:
        r = poll(p, 1, ms);
        if (r < 0 && errno == EINTR)
            soak_count(&soak_stats.eintr_poll, 1);
        return r < 0 ? -errno : r;
    case PL_GORT:
        r = gort_poll(p, 1, ms);
        if (r == -EINTR)
            soak_fail(w, "gort_poll(%d ms) returned -EINTR (gort.h: "
                         "interrupted calls are retried)",
                      ms);
        return r;
    default:
        r = GORT_BLOCKING(poll(p, 1, ms));
        if (r < 0 && errno == EINTR)
            soak_count(&soak_stats.eintr_wrapped, 1);
        return r < 0 ? -errno : r;
    }
}

/* Poll fd for input for at most ms, finishing the wait after EINTR. */
static int poll_by(struct soak_worker *w, int mode, int fd, int ms,
                   short *revents)
{
    int64_t end = mono() + ms * SOAK_MS;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    while ((r = poll_once(w, mode, &p, ms)) == -EINTR) {
        int64_t left = end - mono();
        ms = left > 0 ? (int)((left + SOAK_MS - 1) / SOAK_MS) : 0;
    }
    *revents = p.revents;
    return r;
}

void soak_poll(struct soak_worker *w)
{
    struct writer wr;
    int fds[2];
    writer_start(w, &wr);
    if (pipe2(fds, O_CLOEXEC) != 0)
        soak_fail(w, "pipe2: %s", strerror(errno));
    for (uint64_t seq = 1; soak_running(); seq++) {
        int mode = (int)(soak_rand(w) % PL_MODES);
        bool data = soak_one_in(w, 2);
        int ms = data ? (int)(soak_patience() / SOAK_MS)
                      : (int)soak_between(w, 1, 20);
        if (data)
            writer_post(&wr, fds[1], soak_between(w, 0, 10 * SOAK_MS), seq);
        short rev = 0;
        int64_t t0 = mono();
        int r = poll_by(w, mode, fds[0], ms, &rev);
        int64_t waited = mono() - t0;
        if (data && (r != 1 || !(rev & POLLIN)))
            soak_fail(w, "%s for data returned %d, revents %#x", pl_names[mode],
                      r, rev);
        if (!data && (r != 0 || waited < ms * SOAK_MS))
            soak_fail(w, "%s with a %d ms timeout returned %d after %lld ns",
                      pl_names[mode], ms, r, (long long)waited);
        uint64_t v = 0;
        if (data && (raw_read8(fds[0], &v, &soak_stats.eintr_read) != 8 ||
                     v != seq))
            soak_fail(w, "read after poll: %llu, want %llu",
                      (unsigned long long)v, (unsigned long long)seq);
        soak_progress(w);
    }
    writer_stop(&wr);
    close(fds[0]);
    close(fds[1]);
}

/* ---------------------------------------------------------------------------
 * files
 * ------------------------------------------------------------------------- */

#define FILE_MAX (16 * 1024)

static void fill_random(struct soak_worker *w, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)soak_rand(w);
}

/* Write a random block at a random offset, read it back, compare. */
static void file_round(struct soak_worker *w, const char *path,
                       unsigned char *out, unsigned char *in)
{
    int fd = gort_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        soak_fail(w, "gort_open(%s) returned %d", path, fd);
    size_t n = (size_t)soak_between(w, 1, FILE_MAX);
    int64_t off = soak_between(w, 0, 4 * FILE_MAX);
    fill_random(w, out, n);
    long r = gort_pwrite(fd, out, n, off);
    if (r != (long)n)
        soak_fail(w, "gort_pwrite of %zu bytes returned %ld", n, r);
    if (soak_one_in(w, 8))
        SOAK_OK(w, gort_fsync(fd));
    memset(in, 0, n);
    r = gort_pread(fd, in, n, off);
    if (r != (long)n || memcmp(in, out, n) != 0)
        soak_fail(w, "gort_pread of %zu bytes at %lld returned %ld, or other "
                     "bytes than written",
                  n, (long long)off, r);
    /* Sequential: write at the start, read from the start. */
    if (lseek(fd, 0, SEEK_SET) != 0 || gort_write(fd, out, n) != (long)n ||
        lseek(fd, 0, SEEK_SET) != 0 || gort_read(fd, in, n) != (long)n ||
        memcmp(in, out, n) != 0)
        soak_fail(w, "gort_write / gort_read of %zu bytes did not round-trip",
                  n);
    SOAK_OK(w, gort_close(fd));
}

static void resolve_numeric(struct soak_worker *w)
{
    struct addrinfo hints = {.ai_family = AF_INET,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int r = gort_getaddrinfo("127.0.0.1", "4242", &hints, &res);
    if (r != 0 || res == NULL || res->ai_family != AF_INET)
        soak_fail(w, "gort_getaddrinfo(127.0.0.1) returned %d", r);
    freeaddrinfo(res);
}

/* A child shell exits with a random status; gort_waitpid collects it. */
static void spawn_and_wait(struct soak_worker *w)
{
    int want = (int)soak_between(w, 0, 100);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "exit %d", want);
    char *argv[] = {"sh", "-c", cmd, NULL};
    pid_t pid;
    int err = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
    if (err != 0)
        soak_fail(w, "posix_spawn(/bin/sh): %s", strerror(err));
    int status = 0;
    int r = gort_waitpid(pid, &status, 0);
    if (r != pid || !WIFEXITED(status) || WEXITSTATUS(status) != want)
        soak_fail(w, "gort_waitpid(%d) returned %d, status %#x, want exit %d",
                  (int)pid, r, status, want);
}

void soak_files(struct soak_worker *w)
{
    char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gort-soak-%d-%d", dir ? dir : "/tmp",
             (int)getpid(), w->index);
    unsigned char *out = soak_alloc(w, FILE_MAX), *in = soak_alloc(w, FILE_MAX);
    while (soak_running()) {
        file_round(w, path, out, in);
        if (soak_one_in(w, 4))
            resolve_numeric(w);
        if (soak_one_in(w, 16))
            spawn_and_wait(w);
        soak_progress(w);
    }
    unlink(path);
    free(out);
    free(in);
}
