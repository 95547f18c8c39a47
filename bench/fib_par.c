/* SPDX-License-Identifier: MIT */
/*
 * fib_par - fork-join fib(SIZE) (default 32): a goroutine per call above
 * the cutoff, 20, joined by channel; plain recursion below it.
 *
 * pfib(n), for n > 20, makes a channel of int64_t with 2 buffered slots;
 * for each of n-1 and n-2 it starts a goroutine par(m) computing pfib(m)
 * and sending it on the channel when m > 20, and otherwise computes fib(m)
 * by plain recursion itself; then it receives what the goroutines sent and
 * returns the sum.  The main goroutine starts par(SIZE) the same way and
 * receives the result, which is checked against an iterative fib.  For
 * SIZE 32 that is 376 goroutines, whose plain-recursion leaves, fib(20) and
 * fib(19), are 21,891 and 13,529 calls.
 *
 * The program covers its procs itself: after one untimed warm-up run at
 * -procs, it computes fib(SIZE) with GOMAXPROCS 1, then with GOMAXPROCS set to -procs (default 2) by
 * gort_gomaxprocs between the runs, and prints the wall time of each, in
 * milliseconds (wall, procs=1 and procs=N), then the first divided by the
 * second (speedup_vs_par_procs1, procs=N).
 *
 * fib is compiled as two real calls per node, as Go's compiler does it:
 * without the attribute below gcc inlines it into itself and turns one of
 * the calls into a loop, which would make the leaves 2-3 times cheaper than
 * Go's and measure the compilers rather than the schedulers.
 *
 * Go peer: bench/go/fib_par.  Row: "-" (both procs in one run;
 * BENCHMARKS.md).
 */
#include "bench.h"

#define CUTOFF 20

#if defined(__clang__)
#define PLAIN_RECURSION __attribute__((noinline, disable_tail_calls))
#elif defined(__GNUC__)
#define PLAIN_RECURSION \
    __attribute__((noipa, optimize("no-optimize-sibling-calls")))
#else
#define PLAIN_RECURSION
#endif

static struct bench_opts opt;

PLAIN_RECURSION static int64_t fib(int64_t n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

struct job {
    int64_t n;
    gort_chan *out;  /* where par sends pfib(n) */
};

static int64_t pfib(int64_t n);

static void par(void *arg)
{
    /* The caller keeps *arg alive until it has received the result. */
    const struct job *j = arg;
    int64_t r = pfib(j->n);

    gort_chan_send(j->out, &r);
}

static void start(struct job *j)
{
    if (gort_go(par, j) < 0) {
        fprintf(stderr, "fib_par: gort_go failed\n");
        exit(1);
    }
}

static gort_chan *make_chan(size_t cap)
{
    gort_chan *ch;
    int err = gort_chan_make(&ch, sizeof(int64_t), cap);

    if (err < 0) {
        fprintf(stderr, "fib_par: gort_chan_make: %s\n", strerror(-err));
        exit(1);
    }
    return ch;
}

/* fib(n) for n > CUTOFF. */
static int64_t pfib(int64_t n)
{
    gort_chan *ch = make_chan(2);
    struct job kids[2];
    int64_t sum = 0, v;
    int started = 0;

    for (int i = 0; i < 2; i++) {
        int64_t m = n - 1 - i;

        if (m > CUTOFF) {
            kids[started].n = m;
            kids[started].out = ch;
            start(&kids[started]);
            started++;
        } else {
            sum += fib(m);
        }
    }
    for (int i = 0; i < started; i++) {
        gort_chan_recv(ch, &v);
        sum += v;
    }
    gort_chan_free(ch);
    return sum;
}

/* One computation of fib(opt.n) the parallel way; returns the result. */
static int64_t run(void)
{
    struct job root;
    int64_t r = -1;

    if (opt.n <= CUTOFF)
        return fib(opt.n);
    root.n = opt.n;
    root.out = make_chan(1);
    start(&root);
    gort_chan_recv(root.out, &r);
    gort_chan_free(root.out);
    return r;
}

static void check(int64_t got)
{
    uint64_t a = 0, b = 1;  /* wraps for n > 92, as the recursion does */

    for (int64_t i = 0; i < opt.n; i++) {
        uint64_t t = a + b;

        a = b;
        b = t;
    }
    if ((uint64_t)got != a) {
        fprintf(stderr, "fib_par: fib(%" PRId64 ") came out as %" PRId64
                ", not %" PRIu64 "\n", opt.n, got, a);
        exit(1);
    }
}

static void main_g(void *arg)
{
    int procs = opt.procs;
    int64_t t0, r, wall1, wallp;

    (void)arg;
    /* One untimed run at -procs first, so that neither timed run pays for
     * starting threads or growing the stack pool. */
    bench_set_procs(&opt);
    check(run());

    opt.procs = 1;
    bench_set_procs(&opt);
    t0 = bench_now_ns();
    r = run();
    wall1 = bench_now_ns() - t0;
    check(r);
    bench_result(&opt, "wall", (double)wall1 / 1e6, "ms");

    opt.procs = procs;
    bench_set_procs(&opt);
    t0 = bench_now_ns();
    r = run();
    wallp = bench_now_ns() - t0;
    check(r);
    bench_result(&opt, "wall", (double)wallp / 1e6, "ms");
    bench_result(&opt, "speedup_vs_par_procs1", (double)wall1 / (double)wallp,
                 "x");
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "fib_par", 2, 32);
    return bench_run(&opt, main_g, NULL);
}
