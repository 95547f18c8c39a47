/* SPDX-License-Identifier: MIT */
/*
 * syscallhandoff - how soon a new goroutine runs while another blocks in
 * read(2) holding the only P.
 *
 * SIZE trials of each of two variants (default 21 each), alternating
 * (lazy, explicit, lazy, explicit, ...), each followed by a 1 ms sleep so
 * that every trial starts from a quiet scheduler.  A trial makes a pipe
 * (blocking descriptors) and starts a reader goroutine that sends the time
 * on an unbuffered channel and then reads one byte from the empty pipe.
 * The send makes main runnable on the reader's P, but the reader's thread
 * holds that P as it enters read(2), so main's receive returns only once
 * the P has been handed to another thread.  Main then starts a goroutine
 * that sends the time it first runs; the trial's figure is that time minus
 * the reader's, in µs.  Main writes a byte to release the reader, waits
 * for it and closes the pipe.
 *
 *   lazy      gort_read: the P stays with the thread and sysmon hands it
 *             off when the call lasts (Go's entersyscall and retake).
 *   explicit  gort_entersyscallblock, read(2), gort_exitsyscall: the P is
 *             handed off before the call (Go's entersyscallblock).
 *
 * Figures (one row): median_trial (the lazy trials' median, in µs) and
 * median_trial_block (the explicit trials' median, in µs).
 *
 * Go peer: bench/go/syscallhandoff (syscall.Pipe, syscall.Read).  Go has
 * no explicit form: its programs always block through the lazy path, so
 * its one median is the peer of both figures and it prints it under both
 * names.  The row is procs=1, so -procs defaults to 1 here.
 */
#include <unistd.h>

#include "bench.h"

#define PAUSE_NS 1000000

static struct bench_opts opt;
static gort_chan *entered, *ran;
static gort_waitgroup reader_done = GORT_WAITGROUP_INIT;

struct trial {
    int fd;      /* the read end */
    bool block;  /* the explicit variant */
};

static void reader(void *arg)
{
    struct trial *t = arg;
    char buf[1];
    int64_t now = bench_now_ns();
    long r;

    gort_chan_send(entered, &now);
    if (t->block) {
        gort_entersyscallblock();
        do
            r = read(t->fd, buf, 1);
        while (r < 0 && errno == EINTR);
        gort_exitsyscall();
    } else {
        r = gort_read(t->fd, buf, 1);
    }
    if (r != 1) {
        fprintf(stderr, "syscallhandoff: read returned %ld\n", r);
        exit(1);
    }
    gort_waitgroup_done(&reader_done);
}

static void runner(void *arg)
{
    int64_t now = bench_now_ns();

    (void)arg;
    gort_chan_send(ran, &now);
}

/* One trial: ns from the reader's send to the new goroutine's first run. */
static int64_t trial(bool block)
{
    struct trial t;
    int p[2];
    int64_t t0, t1;

    if (pipe(p) < 0) {
        perror("syscallhandoff: pipe");
        exit(1);
    }
    t.fd = p[0];
    t.block = block;
    gort_waitgroup_add(&reader_done, 1);
    if (gort_go(reader, &t) < 0) {
        fprintf(stderr, "syscallhandoff: gort_go failed\n");
        exit(1);
    }
    gort_chan_recv(entered, &t0);
    if (gort_go(runner, NULL) < 0) {
        fprintf(stderr, "syscallhandoff: gort_go failed\n");
        exit(1);
    }
    gort_chan_recv(ran, &t1);
    if (write(p[1], "x", 1) != 1) {
        perror("syscallhandoff: write");
        exit(1);
    }
    gort_waitgroup_wait(&reader_done);
    close(p[0]);
    close(p[1]);
    return t1 - t0;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static double median_us(int64_t *v, int64_t m)
{
    qsort(v, (size_t)m, sizeof *v, cmp_int64);
    return (double)(m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2) / 1e3;
}

static void main_g(void *arg)
{
    int64_t m = opt.n, *lazy, *block;

    (void)arg;
    bench_set_procs(&opt);
    lazy = calloc((size_t)m, sizeof *lazy);
    block = calloc((size_t)m, sizeof *block);
    if (lazy == NULL || block == NULL ||
        gort_chan_make(&entered, sizeof(int64_t), 0) < 0 ||
        gort_chan_make(&ran, sizeof(int64_t), 0) < 0) {
        fprintf(stderr, "syscallhandoff: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < m; i++) {
        lazy[i] = trial(false);
        gort_sleep(PAUSE_NS);
        block[i] = trial(true);
        gort_sleep(PAUSE_NS);
    }
    bench_result(&opt, "median_trial", median_us(lazy, m), "us");
    bench_result(&opt, "median_trial_block", median_us(block, m), "us");
    gort_chan_free(entered);
    gort_chan_free(ran);
    free(lazy);
    free(block);
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "syscallhandoff", 1, 21);
    if (opt.n > 100000) {
        fprintf(stderr, "syscallhandoff: -n must be at most 100000\n");
        bench_usage(stderr, &opt);
        return 2;
    }
    return bench_run(&opt, main_g, NULL);
}
