/* SPDX-License-Identifier: MIT */
/*
 * idle - the memory and creation cost of goroutines parked on a channel.
 *
 * The main goroutine reads its resident set size (VmRSS in
 * /proc/self/status), then starts SIZE goroutines (default 1,000,000), each
 * of which signals a WaitGroup, ready, and then parks receiving from one
 * shared channel with no buffer and no value (element size 0) that nothing
 * sends on.  When the wait on ready returns, every goroutine has signalled
 * and is at, or a few instructions from, its receive; the main goroutine
 * then reads VmRSS again.  Finally it closes the channel, which wakes them
 * all, and waits on a second WaitGroup for all of them to end.
 *
 * Figures (both on the one row):
 *   rss_per_goroutine        (RSS after - RSS before) / SIZE, in bytes
 *   create_ns_per_goroutine  wall time from the first start to the return
 *                            of the wait on ready, / SIZE, in ns
 *
 * The row is procs=2, so -procs defaults to 2 here, not to all CPUs.
 *
 * Go peer: bench/go/idle (go idler(...); <-ch on a chan struct{}).
 */
#include "bench.h"

static struct bench_opts opt;

struct shared {
    gort_chan *ch;           /* never sent on; closed at the end */
    gort_waitgroup ready;    /* done by each goroutine before it parks */
    gort_waitgroup exited;   /* done by each goroutine as it ends */
};

static struct shared s = {NULL, GORT_WAITGROUP_INIT, GORT_WAITGROUP_INIT};

static void idler(void *arg)
{
    struct shared *s = arg;

    gort_waitgroup_done(&s->ready);
    gort_chan_recv(s->ch, NULL);
    gort_waitgroup_done(&s->exited);
}

/* VmRSS of this process in bytes. */
static int64_t vmrss(void)
{
    char line[256];
    long long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (f == NULL) {
        perror("idle: /proc/self/status");
        exit(1);
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
            break;
    }
    fclose(f);
    if (kb < 0) {
        fprintf(stderr, "idle: no VmRSS line in /proc/self/status\n");
        exit(1);
    }
    return (int64_t)kb * 1024;
}

static void main_g(void *arg)
{
    int64_t rss0, rss1, t0, elapsed;
    int err;

    (void)arg;
    bench_set_procs(&opt);
    if ((err = gort_chan_make(&s.ch, 0, 0)) < 0) {
        fprintf(stderr, "idle: gort_chan_make: %s\n", strerror(-err));
        exit(1);
    }
    gort_waitgroup_add(&s.ready, (int)opt.n);
    gort_waitgroup_add(&s.exited, (int)opt.n);
    rss0 = vmrss();
    t0 = bench_now_ns();
    for (int64_t i = 0; i < opt.n; i++) {
        if (gort_go(idler, &s) < 0) {
            fprintf(stderr, "idle: gort_go failed at goroutine %" PRId64 "\n",
                    i);
            exit(1);
        }
    }
    gort_waitgroup_wait(&s.ready);
    elapsed = bench_now_ns() - t0;
    rss1 = vmrss();
    gort_chan_close(s.ch);
    gort_waitgroup_wait(&s.exited);
    gort_chan_free(s.ch);
    bench_result(&opt, "rss_per_goroutine",
                 (double)(rss1 - rss0) / (double)opt.n, "B");
    bench_result(&opt, "create_ns_per_goroutine",
                 (double)elapsed / (double)opt.n, "ns");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "idle", 2, 1000000);
    if (opt.n > INT32_MAX) {
        fprintf(stderr, "idle: -n must be at most %d\n", INT32_MAX);
        bench_usage(stderr, &opt);
        return 2;
    }
    return bench_run(&opt, main_g, NULL);
}
