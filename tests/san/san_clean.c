/* SPDX-License-Identifier: MIT */
/*
 * san_clean.c - a correct program, built by the tests with
 * -fsanitize=address, -fsanitize=thread or plain for Valgrind, linked
 * with the ordinary libgort.  It must finish with exit status 0 and not
 * one sanitizer or Valgrind report: every report would be a false one,
 * caused by the stack switching of the runtime.
 *
 * It hands data between goroutines in every way gort offers (channels
 * with and without buffers, select, close, Mutex, RWMutex, WaitGroup,
 * Once, Cond, timers, sleeps, pipes and sockets through the network
 * poller, gort_go's start of a goroutine), writes the data with plain
 * (non-atomic) accesses on one side and reads them on the other, parks
 * goroutines deep in recursion with large frames, ends goroutines with
 * gort_goexit from deep frames (their stacks are reused by others), and
 * switches goroutines hundreds of thousands of times on 2 Ps.
 *
 * `san_clean exit` instead parks goroutines that hold the only pointers
 * to heap blocks and calls exit(0) from a goroutine: LeakSanitizer must
 * not report those blocks (the goroutines still use them).
 *
 * Usage: san_clean [part|exit]   (no argument: every part)
 */
#include <gort.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MS (1000LL * 1000)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "san_clean: %s:%d: check failed: %s\n", __FILE__, \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static gort_chan *mkchan(size_t elemsize, size_t cap)
{
    gort_chan *c = NULL;
    CHECK(gort_chan_make(&c, elemsize, cap) == 0);
    return c;
}

/* ---------------------------------------------------------------------------
 * Channels: heap blocks made by one goroutine, changed by a second, checked
 * and freed by a third (buffered, then unbuffered hand-off).
 * ------------------------------------------------------------------------- */

#define BLOCK_WORDS 64
#define PIPE_ITEMS 3000

struct block {
    long seq;
    long words[BLOCK_WORDS];
};

struct pipeline {
    gort_chan *raw, *cooked;
    gort_waitgroup wg;
    long checked;
};

static void produce(void *arg)
{
    struct pipeline *pl = arg;
    for (long i = 0; i < PIPE_ITEMS; i++) {
        struct block *b = malloc(sizeof *b);
        CHECK(b);
        b->seq = i;
        for (int w = 0; w < BLOCK_WORDS; w++)
            b->words[w] = i * w;
        gort_chan_send(pl->raw, &b);
    }
    gort_chan_close(pl->raw);
    gort_waitgroup_done(&pl->wg);
}

static void cook(void *arg)
{
    struct pipeline *pl = arg;
    struct block *b;
    while (gort_chan_recv(pl->raw, &b)) {
        for (int w = 0; w < BLOCK_WORDS; w++)
            b->words[w] += 1;
        gort_chan_send(pl->cooked, &b);
    }
    gort_chan_close(pl->cooked);
    gort_waitgroup_done(&pl->wg);
}

static void consume(void *arg)
{
    struct pipeline *pl = arg;
    struct block *b;
    long want = 0;
    while (gort_chan_recv(pl->cooked, &b)) {
        CHECK(b->seq == want);
        for (int w = 0; w < BLOCK_WORDS; w++)
            CHECK(b->words[w] == want * w + 1);
        free(b);
        want++;
    }
    pl->checked = want;
    gort_waitgroup_done(&pl->wg);
}

static void part_pipeline(void)
{
    struct pipeline pl = {mkchan(sizeof(struct block *), 16),
                          mkchan(sizeof(struct block *), 0),
                          GORT_WAITGROUP_INIT, 0};
    gort_waitgroup_add(&pl.wg, 3);
    gort_go(consume, &pl);
    gort_go(cook, &pl);
    gort_go(produce, &pl);
    gort_waitgroup_wait(&pl.wg);
    CHECK(pl.checked == PIPE_ITEMS);
    CHECK(gort_chan_free(pl.raw) == 0);
    CHECK(gort_chan_free(pl.cooked) == 0);
}

/* ---------------------------------------------------------------------------
 * A goroutine lends an array on its own stack to another, which fills it;
 * the owner reads it after the reply.  Deep recursion with big frames
 * around the park, so that frames of many goroutines cover the same stack
 * addresses over time.
 * ------------------------------------------------------------------------- */

struct loan {
    int *cells;
    int n;
    int depth;
};

static void filler(void *arg)
{
    gort_chan *req = arg;
    struct loan *l;
    while (gort_chan_recv(req, &l)) {
        for (int i = 0; i < l->n; i++)
            l->cells[i] = l->depth * 1000 + i;
        gort_chan_send(req, &l); /* reply on the same (unbuffered) channel */
    }
}

static int deep(gort_chan *req, int depth)
{
    volatile int cells[96];
    if (depth > 0) {
        cells[depth % 96] = depth;
        int below = deep(req, depth - 1);
        return below + 1 + cells[depth % 96] - depth;
    }
    struct loan l = {(int *)cells, 96, depth}, *lp = &l;
    gort_chan_send(req, &lp);
    CHECK(gort_chan_recv(req, &lp) && lp == &l);
    int sum = 0;
    for (int i = 0; i < 96; i++) {
        CHECK(cells[i] == i);
        sum += cells[i] & 1;
    }
    return sum;
}

struct deep_arg {
    gort_chan *req;
    int depth;
    gort_waitgroup *wg;
};

static void deep_g(void *arg)
{
    struct deep_arg *a = arg;
    CHECK(deep(a->req, a->depth) == 48 + a->depth);
    gort_waitgroup_done(a->wg);
    free(a);
}

static void part_stack_loan(void)
{
    gort_chan *req = mkchan(sizeof(struct loan *), 0);
    gort_go(filler, req);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    for (int round = 0; round < 40; round++) {
        /* One borrower at a time: requests and replies share a channel. */
        struct deep_arg *a = malloc(sizeof *a);
        CHECK(a);
        a->req = req;
        a->depth = 5 + round % 30;
        a->wg = &wg;
        gort_waitgroup_add(&wg, 1);
        gort_go(deep_g, a);
        gort_waitgroup_wait(&wg);
    }
    gort_chan_close(req);
    while (gort_numgoroutine() > 1) /* the filler sees the close and ends */
        gort_sleep(100 * 1000);
    CHECK(gort_chan_free(req) == 0);
}

/* ---------------------------------------------------------------------------
 * Mutex, RWMutex, Once, Cond and WaitGroup guarding plain variables.
 * ------------------------------------------------------------------------- */

#define SYNC_G 8
#define SYNC_ITERS 3000

static struct {
    gort_mutex mu;
    long counter;
    gort_rwmutex rw;
    long table[16];
    gort_once once;
    long *lazy;
    gort_mutex qmu;
    gort_cond qcond;
    long queue[64];
    int qlen;
    long results[SYNC_G];
} sy;

static void lazy_init(void *arg)
{
    (void)arg;
    sy.lazy = calloc(16, sizeof(long));
    CHECK(sy.lazy);
    for (int i = 0; i < 16; i++)
        sy.lazy[i] = i * i;
}

struct sync_arg {
    int id;
    gort_waitgroup *wg;
};

static void sync_worker(void *arg)
{
    struct sync_arg *a = arg;
    long local = 0;
    for (int i = 0; i < SYNC_ITERS; i++) {
        gort_mutex_lock(&sy.mu);
        sy.counter++;
        gort_mutex_unlock(&sy.mu);
        if (i % 16 == 0) {
            gort_rwmutex_lock(&sy.rw);
            for (int k = 0; k < 16; k++)
                sy.table[k]++;
            gort_rwmutex_unlock(&sy.rw);
        } else {
            gort_rwmutex_rlock(&sy.rw);
            local += sy.table[i % 16];
            gort_rwmutex_runlock(&sy.rw);
        }
        if (i % 100 == 0) {
            gort_once_do(&sy.once, lazy_init, NULL);
            local += sy.lazy[i % 16];
        }
        if (i % 64 == 0)
            gort_gosched();
    }
    sy.results[a->id] = local + 1; /* read by main after the WaitGroup */
    gort_waitgroup_done(a->wg);
}

static void cond_producer(void *arg)
{
    gort_waitgroup *wg = arg;
    for (long v = 1; v <= 2000; v++) {
        gort_mutex_lock(&sy.qmu);
        while (sy.qlen == 64)
            gort_cond_wait(&sy.qcond);
        sy.queue[sy.qlen++] = v;
        gort_cond_broadcast(&sy.qcond);
        gort_mutex_unlock(&sy.qmu);
    }
    gort_waitgroup_done(wg);
}

static void cond_consumer(void *arg)
{
    long *sum = arg;
    long got = 0;
    while (got < 2000) {
        gort_mutex_lock(&sy.qmu);
        while (sy.qlen == 0)
            gort_cond_wait(&sy.qcond);
        *sum += sy.queue[--sy.qlen];
        got++;
        gort_cond_signal(&sy.qcond);
        gort_mutex_unlock(&sy.qmu);
    }
}

static void part_sync(void)
{
    memset(&sy, 0, sizeof sy);
    sy.qcond.l = &sy.qmu;
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    struct sync_arg args[SYNC_G];
    for (int i = 0; i < SYNC_G; i++) {
        args[i].id = i;
        args[i].wg = &wg;
        gort_waitgroup_add(&wg, 1);
        gort_go(sync_worker, &args[i]);
    }
    gort_waitgroup_wait(&wg);
    CHECK(sy.counter == SYNC_G * SYNC_ITERS);
    for (int i = 0; i < SYNC_G; i++)
        CHECK(sy.results[i] > 0);
    for (int k = 0; k < 16; k++)
        CHECK(sy.table[k] == SYNC_G * ((SYNC_ITERS + 15) / 16));
    free(sy.lazy);

    long sum = 0;
    gort_waitgroup pw = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&pw, 1);
    gort_go(cond_producer, &pw);
    cond_consumer(&sum);
    gort_waitgroup_wait(&pw);
    CHECK(sum == 2000L * 2001 / 2);
}

/* ---------------------------------------------------------------------------
 * select over several channels with timeouts; a closed done channel.
 * ------------------------------------------------------------------------- */

struct sel {
    gort_chan *a, *b, *done;
    long payload[32];
};

static void sel_sender(void *arg)
{
    struct sel *s = arg;
    for (long i = 0; i < 2000; i++) {
        long v = i;
        gort_chan_send(i % 2 ? s->a : s->b, &v);
    }
    for (int k = 0; k < 32; k++)
        s->payload[k] = k + 7; /* published by the close below */
    gort_chan_close(s->done);
}

static void part_select(void)
{
    struct sel s = {mkchan(sizeof(long), 0), mkchan(sizeof(long), 3),
                    mkchan(0, 0), {0}};
    gort_go(sel_sender, &s);
    long got = 0, v = 0;
    int timeouts = 0;
    bool done = false;
    while (!done) {
        gort_chan *after = gort_after(50 * MS);
        CHECK(after);
        int64_t t;
        gort_case cases[4] = {
            {s.a, GORT_CASE_RECV, &v, false},
            {s.b, GORT_CASE_RECV, &v, false},
            {got == 2000 ? s.done : NULL, GORT_CASE_RECV, NULL, false},
            {after, GORT_CASE_RECV, &t, false},
        };
        switch (gort_select(cases, 4)) {
        case 0:
        case 1: got++; break;
        case 2: done = true; break;
        case 3: timeouts++; break;
        default: CHECK(0);
        }
        CHECK(gort_chan_free(after) == 0);
    }
    CHECK(got == 2000);
    for (int k = 0; k < 32; k++)
        CHECK(s.payload[k] == k + 7);
    CHECK(timeouts < 100);
    CHECK(gort_chan_free(s.a) == 0);
    CHECK(gort_chan_free(s.b) == 0);
    CHECK(gort_chan_free(s.done) == 0);
}

/* ---------------------------------------------------------------------------
 * Timers: AfterFunc publishing data through a channel, NewTimer with stop
 * and reset, many sleepers.
 * ------------------------------------------------------------------------- */

static struct {
    long data[8];
    gort_chan *ready;
} tm;

static void timer_fn(void *arg)
{
    for (int i = 0; i < 8; i++)
        tm.data[i] = (long)(intptr_t)arg + i;
    int one = 1;
    gort_chan_send(tm.ready, &one);
}

static void sleeper(void *arg)
{
    gort_waitgroup *wg = arg;
    for (int i = 0; i < 10; i++)
        gort_sleep((1 + i % 3) * 100 * 1000);
    gort_waitgroup_done(wg);
}

static void part_timers(void)
{
    tm.ready = mkchan(sizeof(int), 0);
    gort_timer *t;
    CHECK(gort_timer_make(&t, 2 * MS, timer_fn, (void *)(intptr_t)40) == 0);
    int one;
    CHECK(gort_chan_recv(tm.ready, &one));
    for (int i = 0; i < 8; i++)
        CHECK(tm.data[i] == 40 + i);
    CHECK(gort_timer_free(t) == 0);

    gort_timer *ct;
    CHECK(gort_timer_make(&ct, 1000 * MS, NULL, NULL) == 0);
    CHECK(gort_timer_stop(ct));
    gort_timer_reset(ct, MS);
    int64_t when;
    CHECK(gort_chan_recv(gort_timer_chan(ct), &when));
    CHECK(gort_timer_free(ct) == 0);

    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    for (int i = 0; i < 50; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(sleeper, &wg);
    }
    gort_waitgroup_wait(&wg);
    CHECK(gort_chan_free(tm.ready) == 0);
}

/* ---------------------------------------------------------------------------
 * The network poller: a pipe and a socket pair, writers and readers in
 * different goroutines; the reader checks data the writer put in a shared
 * table before writing (ordered by the descriptor, as in Go).
 * ------------------------------------------------------------------------- */

#define NET_MSGS 500

struct netio {
    int rfd, wfd;
    long table[NET_MSGS];
    gort_waitgroup *wg;
};

static void net_writer(void *arg)
{
    struct netio *n = arg;
    for (int i = 0; i < NET_MSGS; i++) {
        n->table[i] = i * 3;
        uint32_t msg = (uint32_t)i;
        CHECK(gort_write(n->wfd, &msg, sizeof msg) == sizeof msg);
        if (i % 50 == 0)
            gort_sleep(100 * 1000);
    }
    gort_waitgroup_done(n->wg);
}

static void net_reader(void *arg)
{
    struct netio *n = arg;
    for (int i = 0; i < NET_MSGS; i++) {
        uint32_t msg;
        size_t got = 0;
        while (got < sizeof msg) {
            long r = gort_read(n->rfd, (char *)&msg + got, sizeof msg - got);
            CHECK(r > 0);
            got += (size_t)r;
        }
        CHECK(msg == (uint32_t)i);
        CHECK(n->table[i] == i * 3);
    }
    gort_waitgroup_done(n->wg);
}

struct closer {
    int fd;
    gort_waitgroup *wg;
    int parked;
    long result;
};

static void parked_reader(void *arg)
{
    struct closer *cl = arg;
    char buf[16];
    __atomic_store_n(&cl->parked, 1, __ATOMIC_RELEASE);
    cl->result = gort_read(cl->fd, buf, sizeof buf);
    gort_waitgroup_done(cl->wg);
}

static void part_net(void)
{
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    int p[2];
    CHECK(gort_pipe(p) == 0);
    struct netio *pn = calloc(1, sizeof *pn);
    CHECK(pn);
    pn->rfd = p[0];
    pn->wfd = p[1];
    pn->wg = &wg;

    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    CHECK(gort_fd_register(sv[0]) == 0 && gort_fd_register(sv[1]) == 0);
    struct netio *sn = calloc(1, sizeof *sn);
    CHECK(sn);
    sn->rfd = sv[0];
    sn->wfd = sv[1];
    sn->wg = &wg;

    gort_waitgroup_add(&wg, 4);
    gort_go(net_reader, pn);
    gort_go(net_reader, sn);
    gort_go(net_writer, pn);
    gort_go(net_writer, sn);
    gort_waitgroup_wait(&wg);

    /* A read deadline; then a reader parked on a descriptor that another
     * goroutine closes. */
    int q[2];
    CHECK(gort_pipe(q) == 0);
    CHECK(gort_fd_set_deadline(q[0], 'r', gort_nanotime() + 2 * MS) == 0);
    char c;
    CHECK(gort_read(q[0], &c, 1) == -ETIMEDOUT);
    CHECK(gort_fd_set_deadline(q[0], 'r', 0) == 0);
    struct closer cl = {q[0], NULL, 0, 0};
    gort_waitgroup_add(&wg, 1);
    cl.wg = &wg;
    gort_go(parked_reader, &cl);
    while (!__atomic_load_n(&cl.parked, __ATOMIC_ACQUIRE))
        gort_gosched();
    gort_sleep(MS); /* it is in the poller now, or soon */
    CHECK(gort_close(q[0]) == 0);
    gort_waitgroup_wait(&wg);
    CHECK(cl.result == -EBADF);
    CHECK(gort_close(q[1]) == 0);

    CHECK(gort_close(p[0]) == 0 && gort_close(p[1]) == 0);
    CHECK(gort_close(sv[0]) == 0 && gort_close(sv[1]) == 0);
    free(pn);
    free(sn);
}

/* ---------------------------------------------------------------------------
 * Many switches; many short goroutines; gort_goexit from deep frames with
 * deferred handlers; goroutines handing a token around a ring.
 * ------------------------------------------------------------------------- */

struct ring {
    gort_chan **links;
    int n, hops;
    gort_waitgroup wg;
};

struct ring_arg {
    struct ring *r;
    int i;
};

static void ring_node(void *arg)
{
    struct ring_arg *a = arg;
    struct ring *r = a->r;
    long tok;
    for (;;) {
        CHECK(gort_chan_recv(r->links[a->i], &tok));
        if (tok >= r->hops) {
            /* Pass the end on, then leave. */
            gort_chan_send(r->links[(a->i + 1) % r->n], &tok);
            break;
        }
        tok++;
        gort_chan_send(r->links[(a->i + 1) % r->n], &tok);
    }
    gort_waitgroup_done(&r->wg);
}

static void part_ring(void)
{
    struct ring r;
    r.n = 50;
    r.hops = 50000;
    r.links = calloc((size_t)r.n, sizeof *r.links);
    struct ring_arg *args = calloc((size_t)r.n, sizeof *args);
    CHECK(r.links && args);
    memset(&r.wg, 0, sizeof r.wg);
    for (int i = 0; i < r.n; i++)
        r.links[i] = mkchan(sizeof(long), 1);
    gort_waitgroup_add(&r.wg, r.n);
    for (int i = 0; i < r.n; i++) {
        args[i].r = &r;
        args[i].i = i;
        gort_go(ring_node, &args[i]);
    }
    long tok = 0;
    gort_chan_send(r.links[0], &tok);
    gort_waitgroup_wait(&r.wg);
    /* The last node's pass leaves the token in one link. */
    long left = 0;
    for (int i = 0; i < r.n; i++) {
        bool ok;
        if (gort_chan_tryrecv(r.links[i], &tok, &ok))
            left++;
        CHECK(gort_chan_free(r.links[i]) == 0);
    }
    CHECK(left == 1);
    free(r.links);
    free(args);
}

struct exit_arg {
    long *slot;
    gort_waitgroup *wg;
    int depth;
};

static void exit_defer(void *arg)
{
    struct exit_arg *a = arg;
    *a->slot = 1000 + a->depth;
    gort_waitgroup_done(a->wg);
    free(a);
}

/* Recurse with a 512-byte frame per level, then end the goroutine from
 * the deepest frame: none of the frames returns. */
static int exit_deep(struct exit_arg *a, int depth)
{
    char frame[512];
    memset(frame, depth, sizeof frame);
    if (depth < a->depth)
        return exit_deep(a, depth + 1) + frame[depth % 512];
    if (frame[depth % 512] == (char)depth)
        gort_goexit();
    return -1;
}

static void exiter(void *arg)
{
    struct exit_arg *a = arg;
    CHECK(gort_defer(exit_defer, a) == 0);
    gort_gosched();
    exit_deep(a, 0);
    CHECK(0); /* gort_goexit does not return */
}

struct short_arg {
    long *slot;
    gort_waitgroup *wg;
};

static void short_g(void *arg)
{
    struct short_arg *a = arg;
    char scratch[2048];
    memset(scratch, 0x5a, sizeof scratch);
    *a->slot = scratch[100] + scratch[2000];
    gort_waitgroup_done(a->wg);
}

static void part_spawn(void)
{
    enum { N = 2000 };
    long *slots = calloc(N, sizeof *slots);
    CHECK(slots);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    for (int i = 0; i < N; i++) {
        struct exit_arg *a = malloc(sizeof *a);
        CHECK(a);
        a->slot = &slots[i];
        a->wg = &wg;
        a->depth = i % 20;
        gort_waitgroup_add(&wg, 1);
        gort_go(exiter, a);
        if (i % 100 == 99)
            gort_waitgroup_wait(&wg);
    }
    gort_waitgroup_wait(&wg);
    for (int i = 0; i < N; i++)
        CHECK(slots[i] == 1000 + i % 20);
    /* Short goroutines on the stacks the exiters left. */
    struct short_arg *sa = calloc(N, sizeof *sa);
    CHECK(sa);
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++) {
            sa[i].slot = &slots[i];
            sa[i].wg = &wg;
            gort_waitgroup_add(&wg, 1);
            gort_go(short_g, &sa[i]);
        }
        gort_waitgroup_wait(&wg);
    }
    for (int i = 0; i < N; i++)
        CHECK(slots[i] == 2 * 0x5a);
    free(sa);
    free(slots);
}

/* ---------------------------------------------------------------------------
 * Main.
 * ------------------------------------------------------------------------- */

static const struct {
    const char *name;
    void (*fn)(void);
} parts[] = {
    {"pipeline", part_pipeline}, {"stack_loan", part_stack_loan},
    {"sync", part_sync},         {"select", part_select},
    {"timers", part_timers},     {"net", part_net},
    {"ring", part_ring},         {"spawn", part_spawn},
};

/* ---------------------------------------------------------------------------
 * exit() with goroutines parked on the only pointers to heap blocks.
 * ------------------------------------------------------------------------- */

struct holder {
    gort_chan *never;
    gort_waitgroup *parked;
};

static void holder(void *arg)
{
    struct holder *h = arg;
    char *block = malloc(100);
    CHECK(block);
    snprintf(block, 100, "held by goroutine %lld", (long long)gort_goid());
    gort_waitgroup_done(h->parked);
    gort_chan_recv(h->never, NULL); /* never returns */
    printf("%s\n", block);
    free(block);
}

static void exit_in_goroutine(void)
{
    static gort_waitgroup parked;
    static struct holder h;
    h.never = mkchan(0, 0);
    h.parked = &parked;
    for (int i = 0; i < 20; i++) {
        gort_waitgroup_add(&parked, 1);
        gort_go(holder, &h);
    }
    gort_waitgroup_wait(&parked);
    gort_sleep(MS);
    printf("exit ok\n");
    fflush(stdout);
    exit(0);
}

static const char *only;
static long after_main[4]; /* written by goroutines, read after gort_main */

static void main_g(void *arg)
{
    (void)arg;
    if (only && strcmp(only, "exit") == 0)
        exit_in_goroutine();
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (only && strcmp(only, parts[i].name) != 0)
            continue;
        parts[i].fn();
        printf("%s ok\n", parts[i].name);
        fflush(stdout);
    }
    for (int i = 0; i < 4; i++)
        after_main[i] = i + 1;
}

int main(int argc, char **argv)
{
    only = argc > 1 ? argv[1] : NULL;
    bool known = !only || strcmp(only, "exit") == 0;
    for (size_t i = 0; only && i < sizeof parts / sizeof parts[0]; i++)
        known |= strcmp(only, parts[i].name) == 0;
    if (!known) {
        fprintf(stderr, "san_clean: no part named '%s'\n", only);
        return 2;
    }
    int err = gort_main(main_g, NULL);
    CHECK(err == 0);
    for (int i = 0; i < 4; i++)
        CHECK(after_main[i] == i + 1);
    printf("san_clean: all parts passed\n");
    return 0;
}
