/* SPDX-License-Identifier: MIT */
/*
 * skynet - the skynet benchmark: a tree of goroutines, fan-out 10, whose
 * leaves return their numbers, summed back up the tree by channel.
 *
 * skynet(c, num, size) with size 1 is a leaf: it sends num on c.  Otherwise
 * it makes an unbuffered channel rc, starts ten goroutines
 * skynet(rc, num + i * size/10, size/10) for i = 0..9, receives ten values
 * from rc, and sends their sum on c.  The main goroutine starts
 * skynet(c, 0, SIZE) and receives the total, which must be
 * SIZE * (SIZE-1) / 2 (499,999,500,000 for the default SIZE, 1,000,000
 * leaves; 1,111,111 goroutines in all).  SIZE must be a power of 10.  The
 * figure is the wall time from starting the root to receiving the total,
 * in milliseconds: wall.
 *
 * Go peer: bench/go/skynet (the original skynet program's Go version).
 * Rows: procs 1 and 2 (BENCHMARKS.md).
 */
#include "bench.h"

#define FANOUT 10

static struct bench_opts opt;

struct node {
    gort_chan *c;  /* where this node sends its sum */
    int64_t num;   /* the first leaf number under this node */
    int64_t size;  /* how many leaves are under it */
};

static void skynet(void *arg)
{
    /* The parent keeps *arg alive until it has received this node's sum. */
    const struct node *self = arg;
    struct node kids[FANOUT];
    gort_chan *rc;
    int64_t sum = 0, v, sub;
    int err;

    if (self->size == 1) {
        gort_chan_send(self->c, &self->num);
        return;
    }
    if ((err = gort_chan_make(&rc, sizeof(int64_t), 0)) < 0) {
        fprintf(stderr, "skynet: gort_chan_make: %s\n", strerror(-err));
        exit(1);
    }
    sub = self->size / FANOUT;
    for (int i = 0; i < FANOUT; i++) {
        kids[i].c = rc;
        kids[i].num = self->num + i * sub;
        kids[i].size = sub;
        if (gort_go(skynet, &kids[i]) < 0) {
            fprintf(stderr, "skynet: gort_go failed\n");
            exit(1);
        }
    }
    for (int i = 0; i < FANOUT; i++) {
        gort_chan_recv(rc, &v);
        sum += v;
    }
    gort_chan_free(rc);
    gort_chan_send(self->c, &sum);
}

static void main_g(void *arg)
{
    struct node root;
    int64_t t0, elapsed, total = -1;
    int err;

    (void)arg;
    bench_set_procs(&opt);
    root.num = 0;
    root.size = opt.n;
    if ((err = gort_chan_make(&root.c, sizeof(int64_t), 0)) < 0) {
        fprintf(stderr, "skynet: gort_chan_make: %s\n", strerror(-err));
        exit(1);
    }
    t0 = bench_now_ns();
    if (gort_go(skynet, &root) < 0) {
        fprintf(stderr, "skynet: gort_go failed\n");
        exit(1);
    }
    gort_chan_recv(root.c, &total);
    elapsed = bench_now_ns() - t0;
    gort_chan_free(root.c);
    if (total != opt.n / 2 * (opt.n - 1)) {
        fprintf(stderr, "skynet: the sum is %" PRId64 ", not %" PRId64 "\n",
                total, opt.n / 2 * (opt.n - 1));
        exit(1);
    }
    bench_result(&opt, "wall", (double)elapsed / 1e6, "ms");
}

int main(int argc, char **argv)
{
    int64_t s;

    bench_parse(&opt, argc, argv, "skynet", 0, 1000000);
    for (s = opt.n; s % FANOUT == 0; s /= FANOUT)
        ;
    if (s != 1) {
        fprintf(stderr, "skynet: -n must be a power of %d, not %" PRId64 "\n",
                FANOUT, opt.n);
        bench_usage(stderr, &opt);
        return 2;
    }
    return bench_run(&opt, main_g, NULL);
}
