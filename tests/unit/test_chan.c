/* SPDX-License-Identifier: MIT */
/*
 * test_chan.c - channels against Go's semantics (the language spec and
 * chan.go): gort_chan_make/free/send/recv/trysend/tryrecv/close/len/cap.
 *
 * Goroutines that must be parked before the next step are found in the
 * goroutine dump ("goroutine N [chan receive]:"), never guessed by
 * sleeping.  Under ThreadSanitizer, whose fibers count against its thread
 * limit, many_waiters parks 2,000 goroutines; under both sanitizers the
 * stress runs are shorter.
 */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>

/* A new channel, checked to be empty with the capacity asked for. */
static gort_chan *new_chan(size_t elemsize, size_t cap)
{
    gort_chan *ch = make_chan(elemsize, cap);
    CHECK_EQ(gort_chan_cap(ch), cap);
    CHECK_EQ(gort_chan_len(ch), 0);
    return ch;
}

/* Yield until *p >= want; fails after 30 s. */
static void await_count(int64_t *p, int64_t want)
{
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (ATOMIC_LOAD(p) < want) {
        if (gort_nanotime() > deadline) {
            fprintf(stderr, "count %lld after 30 s, want %lld\n",
                    (long long)ATOMIC_LOAD(p), (long long)want);
            CHECK(0);
        }
        gort_gosched();
    }
}

static const int procs_list[] = {1, 2, 4};
#define NPROCS_LIST 3

/* ---------------------------------------------------------------------------
 * fifo_buffered
 * ------------------------------------------------------------------------- */

struct fifo_sender {
    gort_chan *ch;
    int id;
    int64_t n;
    gort_waitgroup *wg;
};

/* Sends (id << 32) | seq for seq = 0 .. n-1. */
static void fifo_sender_g(void *arg)
{
    struct fifo_sender *s = arg;
    for (int64_t i = 0; i < s->n; i++)
        send_i64(s->ch, ((int64_t)s->id << 32) | i);
    gort_waitgroup_done(s->wg);
}

static void fifo_buffered_main(void *arg)
{
    (void)arg;
    /* Fill and drain. */
    gort_chan *ch = new_chan(sizeof(int64_t), 100);
    for (int64_t i = 0; i < 100; i++) {
        send_i64(ch, i * 3 + 1);
        CHECK_EQ(gort_chan_len(ch), i + 1);
    }
    int64_t extra = -1;
    CHECK(!gort_chan_trysend(ch, &extra));
    for (int64_t i = 0; i < 100; i++) {
        CHECK_EQ(recv_i64(ch), i * 3 + 1);
        CHECK_EQ(gort_chan_len(ch), 99 - i);
    }
    free_chan(ch);

    /* Every fill level at every ring position: cap 7, random runs of
     * sends and receives. */
    ch = new_chan(sizeof(int64_t), 7);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 20000; round++) {
        int64_t level = next_in - next_out;
        int k = (int)(xorshift(&rng) % 8);
        if (xorshift(&rng) & 1) {
            for (int j = 0; j < k && level < 7; j++, level++)
                send_i64(ch, next_in++);
        } else {
            for (int j = 0; j < k && level > 0; j++, level--)
                CHECK_EQ(recv_i64(ch), next_out++);
        }
        CHECK_EQ(gort_chan_len(ch), next_in - next_out);
    }
    while (next_out < next_in)
        CHECK_EQ(recv_i64(ch), next_out++);
    free_chan(ch);

    for (int pi = 0; pi < NPROCS_LIST; pi++) {
        gort_gomaxprocs(procs_list[pi]);
        /* One producer, one consumer, both blocking in turn. */
        gort_waitgroup wg = GORT_WAITGROUP_INIT;
        int64_t n = SANITIZED ? 20000 : 100000;
        ch = new_chan(sizeof(int64_t), 4);
        struct fifo_sender one = {ch, 0, n, &wg};
        gort_waitgroup_add(&wg, 1);
        CHECK_GT(gort_go(fifo_sender_g, &one), 0);
        for (int64_t i = 0; i < n; i++)
            CHECK_EQ(recv_i64(ch), i);
        gort_waitgroup_wait(&wg);
        CHECK_EQ(gort_chan_len(ch), 0);
        free_chan(ch);

        /* Four senders against a buffer of 2 that is nearly always full:
         * a receive that frees a slot moves the first blocked sender's
         * value to the tail of the buffer (chan.go recv), so each
         * sender's values still arrive in its own order. */
        ch = new_chan(sizeof(int64_t), 2);
        struct fifo_sender four[4];
        int64_t nextseq[4] = {0, 0, 0, 0};
        n = SANITIZED ? 5000 : 20000;
        gort_waitgroup_add(&wg, 4);
        for (int s = 0; s < 4; s++) {
            four[s] = (struct fifo_sender){ch, s, n, &wg};
            CHECK_GT(gort_go(fifo_sender_g, &four[s]), 0);
        }
        for (int64_t i = 0; i < 4 * n; i++) {
            int64_t v = recv_i64(ch);
            int s = (int)(v >> 32);
            CHECK_GE(s, 0);
            CHECK_LT(s, 4);
            if ((v & 0xffffffff) != nextseq[s])
                fprintf(stderr, "sender %d: got seq %lld, want %lld\n", s,
                        (long long)(v & 0xffffffff), (long long)nextseq[s]);
            CHECK_EQ(v & 0xffffffff, nextseq[s]);
            nextseq[s]++;
        }
        gort_waitgroup_wait(&wg);
        CHECK_EQ(gort_chan_len(ch), 0);
        free_chan(ch);
    }
}

/* Values come out of a buffer in the order they went in: filled and drained,
 * across the ring's wrap-around at every fill level, one producer against one
 * consumer, and several senders blocked on a full buffer (each sender's own
 * order survives the hand-over into the buffer). */
TEST(fifo_buffered)
{
    run_main(fifo_buffered_main, NULL);
}

/* ---------------------------------------------------------------------------
 * fifo_unbuffered_single_sender
 * ------------------------------------------------------------------------- */

#define UNBUF_N (SANITIZED ? 10000 : 50000)
static uint8_t unbuf_seen[50000];
static int64_t unbuf_got;

struct unbuf_recv {
    gort_chan *ch;
    int64_t count;
    gort_waitgroup *wg;
};

/* Receives until the sender's end marker -1; values must increase. */
static void unbuf_receiver_g(void *arg)
{
    struct unbuf_recv *r = arg;
    int64_t last = -1;
    for (;;) {
        int64_t v = recv_i64(r->ch);
        if (v == -1)
            break;
        CHECK_GT(v, last);
        CHECK_LT(v, UNBUF_N);
        last = v;
        __atomic_add_fetch(&unbuf_seen[v], 1, __ATOMIC_RELAXED);
        ATOMIC_INC(&unbuf_got);
        r->count++;
    }
    gort_waitgroup_done(r->wg);
}

struct unbuf_send {
    gort_chan *ch;
    int nend; /* end markers to send */
    gort_waitgroup *wg;
};

static void unbuf_sender_g(void *arg)
{
    struct unbuf_send *s = arg;
    for (int64_t i = 0; i < UNBUF_N; i++)
        send_i64(s->ch, i);
    for (int i = 0; i < s->nend; i++)
        send_i64(s->ch, -1);
    gort_waitgroup_done(s->wg);
}

static void fifo_unbuffered_main(void *arg)
{
    (void)arg;
    for (int pi = 0; pi < NPROCS_LIST; pi++) {
        gort_gomaxprocs(procs_list[pi]);
        gort_waitgroup wg = GORT_WAITGROUP_INIT;
        gort_chan *ch = new_chan(sizeof(int64_t), 0);

        /* One receiver: exactly 0, 1, 2, ... */
        struct unbuf_send s1 = {ch, 0, &wg};
        gort_waitgroup_add(&wg, 1);
        CHECK_GT(gort_go(unbuf_sender_g, &s1), 0);
        for (int64_t i = 0; i < UNBUF_N; i++)
            CHECK_EQ(recv_i64(ch), i);
        gort_waitgroup_wait(&wg);

        /* Four receivers: each sees an increasing subsequence, and
         * together every value exactly once. */
        memset(unbuf_seen, 0, sizeof unbuf_seen);
        unbuf_got = 0;
        struct unbuf_recv r[4];
        gort_waitgroup_add(&wg, 5);
        for (int i = 0; i < 4; i++) {
            r[i] = (struct unbuf_recv){ch, 0, &wg};
            CHECK_GT(gort_go(unbuf_receiver_g, &r[i]), 0);
        }
        struct unbuf_send s4 = {ch, 4, &wg};
        CHECK_GT(gort_go(unbuf_sender_g, &s4), 0);
        gort_waitgroup_wait(&wg);
        CHECK_EQ(unbuf_got, UNBUF_N);
        for (int64_t i = 0; i < UNBUF_N; i++)
            CHECK_EQ(unbuf_seen[i], 1);
        fprintf(stderr, "procs %d: receivers got %lld %lld %lld %lld\n",
                procs_list[pi], (long long)r[0].count, (long long)r[1].count,
                (long long)r[2].count, (long long)r[3].count);
        CHECK_EQ(gort_chan_len(ch), 0);
        free_chan(ch);
    }
}

/* One sender, one or four receivers: each receiver sees increasing values,
 * every value arrives exactly once. */
TEST(fifo_unbuffered_single_sender)
{
    run_main(fifo_unbuffered_main, NULL);
}

/* ---------------------------------------------------------------------------
 * handoff_unbuffered
 * ------------------------------------------------------------------------- */

static gort_chan *ho_ch;
static int ho_ready;   /* the partner is about to call send/recv */
static int64_t ho_done; /* the partner's call returned */
static int64_t ho_value;
static gort_waitgroup ho_wg;

/* Sleeps 50 ms, announces itself, then receives. */
static void ho_late_receiver(void *arg)
{
    (void)arg;
    gort_sleep(50 * MS);
    ATOMIC_STORE(&ho_ready, 1);
    ATOMIC_STORE(&ho_value, recv_i64(ho_ch));
    ATOMIC_STORE(&ho_done, 1);
    gort_waitgroup_done(&ho_wg);
}

static void ho_late_sender(void *arg)
{
    (void)arg;
    gort_sleep(50 * MS);
    ATOMIC_STORE(&ho_ready, 1);
    send_i64(ho_ch, 77);
    ATOMIC_STORE(&ho_done, 1);
    gort_waitgroup_done(&ho_wg);
}

static void ho_sender(void *arg)
{
    (void)arg;
    send_i64(ho_ch, 99);
    ATOMIC_STORE(&ho_done, 1);
    gort_waitgroup_done(&ho_wg);
}

static void handoff_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    ho_ch = new_chan(sizeof(int64_t), 0);
    for (int round = 0; round < 3; round++) {
        /* The send waits for the receiver. */
        ATOMIC_STORE(&ho_ready, 0);
        ATOMIC_STORE(&ho_done, 0);
        gort_waitgroup_add(&ho_wg, 1);
        int64_t t0 = gort_nanotime();
        CHECK_GT(gort_go(ho_late_receiver, NULL), 0);
        send_i64(ho_ch, 42 + round);
        int64_t el = gort_nanotime() - t0;
        CHECK_EQ(ATOMIC_LOAD(&ho_ready), 1);
        CHECK_GE(el, 50 * MS);
        CHECK_EQ(gort_chan_len(ho_ch), 0);
        gort_waitgroup_wait(&ho_wg);
        CHECK_EQ(ATOMIC_LOAD(&ho_value), 42 + round);

        /* The receive waits for the sender. */
        ATOMIC_STORE(&ho_ready, 0);
        ATOMIC_STORE(&ho_done, 0);
        gort_waitgroup_add(&ho_wg, 1);
        t0 = gort_nanotime();
        CHECK_GT(gort_go(ho_late_sender, NULL), 0);
        CHECK_EQ(recv_i64(ho_ch), 77);
        CHECK_EQ(ATOMIC_LOAD(&ho_ready), 1);
        CHECK_GE(gort_nanotime() - t0, 50 * MS);
        gort_waitgroup_wait(&ho_wg);
    }

    /* A parked sender stays parked, with nothing buffered, until a
     * receiver comes. */
    ATOMIC_STORE(&ho_done, 0);
    gort_waitgroup_add(&ho_wg, 1);
    int64_t id = gort_go(ho_sender, NULL);
    CHECK_GT(id, 0);
    await_waiting("chan send", id, 1);
    CHECK_EQ(ATOMIC_LOAD(&ho_done), 0);
    CHECK_EQ(gort_chan_len(ho_ch), 0);
    gort_sleep(20 * MS);
    CHECK_EQ(ATOMIC_LOAD(&ho_done), 0);
    CHECK_EQ(count_waiting("chan send", id), 1);
    CHECK_EQ(recv_i64(ho_ch), 99);
    gort_waitgroup_wait(&ho_wg);
    CHECK_EQ(ATOMIC_LOAD(&ho_done), 1);
    free_chan(ho_ch);
}

/* A send on an unbuffered channel completes only once a receiver has taken the
 * value (and a receive only once a sender has come); a parked sender stays
 * parked until then. */
TEST(handoff_unbuffered)
{
    run_main(handoff_main, NULL);
}

/* ---------------------------------------------------------------------------
 * close_wakes_receivers
 * ------------------------------------------------------------------------- */

#define CW_RECV 100
#define CW_SELECT 10

struct elem24 {
    int64_t a, b, c;
};

static gort_chan *cw_ch, *cw_other;
static int64_t cw_returned, cw_bad;
static gort_waitgroup cw_wg;

static bool elem24_zero(const struct elem24 *e)
{
    return e->a == 0 && e->b == 0 && e->c == 0;
}

static void cw_receiver(void *arg)
{
    (void)arg;
    struct elem24 e = {-1, -2, -3};
    bool ok = gort_chan_recv(cw_ch, &e);
    if (ok || !elem24_zero(&e))
        ATOMIC_INC(&cw_bad);
    ATOMIC_INC(&cw_returned);
    gort_waitgroup_done(&cw_wg);
}

static void cw_selector(void *arg)
{
    (void)arg;
    struct elem24 e = {-1, -2, -3}, o = {-1, -2, -3};
    gort_case c[2] = {{cw_other, GORT_CASE_RECV, &o, true},
                      {cw_ch, GORT_CASE_RECV, &e, true}};
    int idx = gort_select(c, 2);
    if (idx != 1 || c[1].ok || !elem24_zero(&e))
        ATOMIC_INC(&cw_bad);
    ATOMIC_INC(&cw_returned);
    gort_waitgroup_done(&cw_wg);
}

static void close_wakes_main(void *arg)
{
    (void)arg;
    static const size_t caps[] = {0, 4};
    /* Selectors also wait on a channel that stays open. */
    cw_other = new_chan(sizeof(struct elem24), 0);
    for (int k = 0; k < 2; k++) {
        cw_ch = new_chan(sizeof(struct elem24), caps[k]);
        cw_returned = cw_bad = 0;
        gort_waitgroup_add(&cw_wg, CW_RECV + CW_SELECT);
        for (int i = 0; i < CW_RECV; i++)
            CHECK_GT(gort_go(cw_receiver, NULL), 0);
        for (int i = 0; i < CW_SELECT; i++)
            CHECK_GT(gort_go(cw_selector, NULL), 0);
        CHECK_EQ(await_waiting("chan receive", 0, CW_RECV), CW_RECV);
        CHECK_EQ(await_waiting("select", 0, CW_SELECT), CW_SELECT);
        CHECK_EQ(ATOMIC_LOAD(&cw_returned), 0);
        gort_chan_close(cw_ch);
        gort_waitgroup_wait(&cw_wg);
        CHECK_EQ(cw_returned, CW_RECV + CW_SELECT);
        CHECK_EQ(cw_bad, 0);
        CHECK_EQ(count_waiting("chan receive", 0), 0);

        /* Later receives return at once, zeroed. */
        for (int i = 0; i < 3; i++) {
            struct elem24 e = {7, 8, 9};
            CHECK(!gort_chan_recv(cw_ch, &e));
            CHECK(elem24_zero(&e));
            e = (struct elem24){7, 8, 9};
            bool ok = true;
            CHECK(gort_chan_tryrecv(cw_ch, &e, &ok));
            CHECK(!ok);
            CHECK(elem24_zero(&e));
            CHECK(!gort_chan_recv(cw_ch, NULL));
        }
        CHECK_EQ(gort_chan_len(cw_ch), 0);
        free_chan(cw_ch);
    }
    /* The woken selects left nothing behind on the open channel. */
    free_chan(cw_other);
}

/* Receivers parked in recv and in select are all woken by close with
 * ok == false and a zeroed element; later receives do the same at once. */
TEST(close_wakes_receivers)
{
    run_main(close_wakes_main, NULL);
}

/* ---------------------------------------------------------------------------
 * close_drains_buffer
 * ------------------------------------------------------------------------- */

struct elem16 {
    int64_t a, b;
};

static gort_chan *cd_ch;
static int64_t cd_values[4];
static int cd_n;
static gort_waitgroup cd_wg;

/* Receives until closed, recording the values. */
static void cd_receiver(void *arg)
{
    (void)arg;
    struct elem16 e;
    while (gort_chan_recv(cd_ch, &e)) {
        CHECK_EQ(e.b, -e.a);
        CHECK_LT(cd_n, 4);
        cd_values[cd_n++] = e.a;
    }
    CHECK(e.a == 0 && e.b == 0);
    gort_waitgroup_done(&cd_wg);
}

static void close_drains_main(void *arg)
{
    (void)arg;
    gort_chan *ch = new_chan(sizeof(struct elem16), 5);
    for (int64_t i = 1; i <= 3; i++) {
        struct elem16 e = {i, -i};
        gort_chan_send(ch, &e);
    }
    gort_chan_close(ch);
    CHECK_EQ(gort_chan_len(ch), 3);
    CHECK_EQ(gort_chan_cap(ch), 5);
    struct elem16 e = {0, 0};
    CHECK(gort_chan_recv(ch, &e));
    CHECK(e.a == 1 && e.b == -1);
    bool ok = false;
    CHECK(gort_chan_tryrecv(ch, &e, &ok));
    CHECK(ok);
    CHECK(e.a == 2 && e.b == -2);
    CHECK_EQ(gort_chan_len(ch), 1);
    CHECK(gort_chan_recv(ch, &e));
    CHECK(e.a == 3 && e.b == -3);
    CHECK_EQ(gort_chan_len(ch), 0);
    e = (struct elem16){5, 5};
    CHECK(!gort_chan_recv(ch, &e));
    CHECK(e.a == 0 && e.b == 0);
    e = (struct elem16){5, 5};
    ok = true;
    CHECK(gort_chan_tryrecv(ch, &e, &ok));
    CHECK(!ok);
    CHECK(e.a == 0 && e.b == 0);
    free_chan(ch);

    /* A goroutine ranging over the channel (Go's `for v := range ch`)
     * gets every buffered value even when the close came first. */
    cd_ch = new_chan(sizeof(struct elem16), 4);
    for (int64_t i = 10; i < 14; i++) {
        struct elem16 v = {i, -i};
        gort_chan_send(cd_ch, &v);
    }
    gort_chan_close(cd_ch);
    gort_waitgroup_add(&cd_wg, 1);
    CHECK_GT(gort_go(cd_receiver, NULL), 0);
    gort_waitgroup_wait(&cd_wg);
    CHECK_EQ(cd_n, 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(cd_values[i], 10 + i);
    free_chan(cd_ch);
}

/* A closed channel still yields its buffered values, in order, then
 * ok == false. */
TEST(close_drains_buffer)
{
    run_main(close_drains_main, NULL);
}

/* ---------------------------------------------------------------------------
 * len_cap
 * ------------------------------------------------------------------------- */

static gort_chan *lc_ch;
static gort_waitgroup lc_wg;

static void lc_sender(void *arg)
{
    (void)arg;
    send_i64(lc_ch, 5);
    gort_waitgroup_done(&lc_wg);
}

static void len_cap_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_chan_len(NULL), 0);
    CHECK_EQ(gort_chan_cap(NULL), 0);

    /* Unbuffered: a parked sender is not in the buffer. */
    lc_ch = new_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&lc_wg, 1);
    int64_t id = gort_go(lc_sender, NULL);
    await_waiting("chan send", id, 1);
    CHECK_EQ(gort_chan_len(lc_ch), 0);
    CHECK_EQ(gort_chan_cap(lc_ch), 0);
    CHECK_EQ(recv_i64(lc_ch), 5);
    gort_waitgroup_wait(&lc_wg);
    free_chan(lc_ch);

    /* Buffered, with a sender parked on the full buffer. */
    lc_ch = new_chan(sizeof(int64_t), 3);
    for (int i = 0; i < 3; i++) {
        send_i64(lc_ch, i);
        CHECK_EQ(gort_chan_len(lc_ch), i + 1);
        CHECK_EQ(gort_chan_cap(lc_ch), 3);
    }
    gort_waitgroup_add(&lc_wg, 1);
    id = gort_go(lc_sender, NULL);
    await_waiting("chan send", id, 1);
    CHECK_EQ(gort_chan_len(lc_ch), 3);
    CHECK_EQ(recv_i64(lc_ch), 0);
    gort_waitgroup_wait(&lc_wg);
    /* The parked sender's value moved into the freed slot. */
    CHECK_EQ(gort_chan_len(lc_ch), 3);
    CHECK_EQ(recv_i64(lc_ch), 1);
    CHECK_EQ(gort_chan_len(lc_ch), 2);
    gort_chan_close(lc_ch);
    CHECK_EQ(gort_chan_len(lc_ch), 2);
    CHECK_EQ(gort_chan_cap(lc_ch), 3);
    CHECK_EQ(recv_i64(lc_ch), 2);
    CHECK_EQ(recv_i64(lc_ch), 5);
    CHECK_EQ(gort_chan_len(lc_ch), 0);
    free_chan(lc_ch);

    /* Zero-size elements still count. */
    lc_ch = new_chan(0, 5);
    char dummy = 0;
    for (int i = 0; i < 5; i++)
        gort_chan_send(lc_ch, &dummy);
    CHECK_EQ(gort_chan_len(lc_ch), 5);
    CHECK(!gort_chan_trysend(lc_ch, &dummy));
    CHECK(gort_chan_recv(lc_ch, NULL));
    CHECK_EQ(gort_chan_len(lc_ch), 4);
    free_chan(lc_ch);
}

/* len and cap through sends, receives and close; 0 and 0 for NULL; a parked
 * sender is not counted in len. */
TEST(len_cap)
{
    run_main(len_cap_main, NULL);
}

/* ---------------------------------------------------------------------------
 * large_elem
 * ------------------------------------------------------------------------- */

#define GUARD 64

struct le_arg {
    gort_chan *ch;
    size_t size;
    int n;
    gort_waitgroup *wg;
};

static void fill_pattern(uint8_t *p, size_t size, int k)
{
    for (size_t j = 0; j < size; j++)
        p[j] = (uint8_t)(j * 7 + (size_t)k * 13 + (j >> 8));
}

static void le_sender(void *arg)
{
    struct le_arg *a = arg;
    uint8_t *buf = malloc(a->size ? a->size : 1);
    CHECK(buf != NULL);
    for (int k = 0; k < a->n; k++) {
        fill_pattern(buf, a->size, k);
        gort_chan_send(a->ch, buf);
        /* The channel copied the value: changing the buffer now must not
         * change what the receiver gets. */
        memset(buf, 0xcc, a->size);
    }
    free(buf);
    gort_waitgroup_done(a->wg);
}

/* n elements of size bytes through ch, from a goroutine to main. */
static void le_transfer(gort_chan *ch, size_t size, int n)
{
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    struct le_arg a = {ch, size, n, &wg};
    uint8_t *want = malloc(size ? size : 1);
    uint8_t *got = malloc(size + GUARD);
    CHECK(want != NULL && got != NULL);
    gort_waitgroup_add(&wg, 1);
    CHECK_GT(gort_go(le_sender, &a), 0);
    for (int k = 0; k < n; k++) {
        fill_pattern(want, size, k);
        memset(got, 0xee, size + GUARD);
        if (k % 5 == 4) {
            CHECK(gort_chan_recv(ch, NULL)); /* discarded */
            continue;
        }
        CHECK(gort_chan_recv(ch, got));
        CHECK(memcmp(got, want, size) == 0);
        for (size_t j = size; j < size + GUARD; j++)
            CHECK_EQ(got[j], 0xee);
    }
    gort_waitgroup_wait(&wg);
    free(want);
    free(got);
}

static void large_elem_main(void *arg)
{
    (void)arg;
    static const size_t sizes[] = {4096, GORT_CHAN_MAX_ELEM, 3, 1};
    static const size_t caps[] = {0, 1, 3};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t ci = 0; ci < 3; ci++) {
            gort_chan *ch = new_chan(sizes[si], caps[ci]);
            le_transfer(ch, sizes[si], 20);
            CHECK_EQ(gort_chan_len(ch), 0);
            free_chan(ch);
        }

    /* A full buffer of 4 KiB elements, then close: each comes out
     * whole, then a zeroed element. */
    gort_chan *ch = new_chan(4096, 3);
    uint8_t *buf = malloc(4096 + GUARD), *want = malloc(4096);
    for (int k = 0; k < 3; k++) {
        fill_pattern(buf, 4096, k);
        CHECK(gort_chan_trysend(ch, buf));
    }
    CHECK(!gort_chan_trysend(ch, buf));
    gort_chan_close(ch);
    for (int k = 0; k < 3; k++) {
        fill_pattern(want, 4096, k);
        memset(buf, 0xee, 4096 + GUARD);
        CHECK(gort_chan_recv(ch, buf));
        CHECK(memcmp(buf, want, 4096) == 0);
        CHECK_EQ(buf[4096], 0xee);
    }
    memset(buf, 0xee, 4096 + GUARD);
    CHECK(!gort_chan_recv(ch, buf));
    for (size_t j = 0; j < 4096; j++)
        CHECK_EQ(buf[j], 0);
    for (size_t j = 4096; j < 4096 + GUARD; j++)
        CHECK_EQ(buf[j], 0xee);
    free(buf);
    free(want);
    free_chan(ch);

    /* Zero-size elements: a signal channel, unbuffered and buffered. */
    static const size_t zcaps[] = {0, 1000};
    for (int k = 0; k < 2; k++) {
        ch = new_chan(0, zcaps[k]);
        le_transfer(ch, 0, 1000);
        CHECK_EQ(gort_chan_len(ch), 0);
        char dummy = 1;
        for (size_t i = 0; i < zcaps[k]; i++)
            CHECK(gort_chan_trysend(ch, &dummy));
        CHECK_EQ(gort_chan_len(ch), zcaps[k]);
        CHECK(!gort_chan_trysend(ch, &dummy));
        gort_chan_close(ch);
        for (size_t i = 0; i < zcaps[k]; i++)
            CHECK(gort_chan_recv(ch, NULL));
        CHECK(!gort_chan_recv(ch, NULL));
        free_chan(ch);
    }
}

/* 4 KiB, 65535-byte, 3-byte and 0-byte elements, buffered and unbuffered:
 * copied whole, nothing written past the element. */
TEST(large_elem)
{
    run_main(large_elem_main, NULL);
}

/* ---------------------------------------------------------------------------
 * buffered_sizes: every element size through the buffered paths
 * ------------------------------------------------------------------------- */

struct sized_sender {
    gort_chan *ch;
    size_t size;
    int n;
    gort_waitgroup *wg;
};

static void fill_elem(unsigned char *e, size_t size, int i)
{
    for (size_t b = 0; b < size; b++)
        e[b] = (unsigned char)(i * 31 + (int)b * 7 + 1);
}

static void sized_sender_g(void *arg)
{
    struct sized_sender *s = arg;
    unsigned char e[128];
    for (int i = 0; i < s->n; i++) {
        fill_elem(e, s->size, i);
        gort_chan_send(s->ch, e);
    }
    gort_chan_close(s->ch);
    gort_waitgroup_done(s->wg);
}

static void buffered_sizes_main(void *arg)
{
    (void)arg;
    static const size_t sizes[] = {0, 1, 3, 4, 8, 12, 16, 24, 100};
    static const size_t caps[] = {1, 3, 7};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (size_t ci = 0; ci < sizeof caps / sizeof caps[0]; ci++) {
            size_t size = sizes[si], cap = caps[ci];
            gort_chan *ch = new_chan(size, cap);
            gort_waitgroup wg = GORT_WAITGROUP_INIT;
            int n = (int)(5 * cap + 2) * 20;
            struct sized_sender s = {ch, size, n, &wg};
            gort_waitgroup_add(&wg, 1);
            CHECK_GT(gort_go(sized_sender_g, &s), 0);
            unsigned char got[128], want[128];
            for (int i = 0; i < n; i++) {
                if (i % 3 == 2) {
                    CHECK(gort_chan_recv(ch, NULL));
                    continue;
                }
                memset(got, 0xee, sizeof got);
                CHECK(gort_chan_recv(ch, got));
                fill_elem(want, size, i);
                CHECK(memcmp(got, want, size) == 0);
                CHECK_EQ(got[size], 0xee); /* nothing past the element */
                if (i % 5 == 0)
                    gort_gosched(); /* let the sender fill the buffer */
            }
            memset(got, 0xee, sizeof got);
            CHECK(!gort_chan_recv(ch, got));
            for (size_t b = 0; b < size; b++)
                CHECK_EQ(got[b], 0);
            gort_waitgroup_wait(&wg);
            free_chan(ch);
        }
    }
}

/* Sizes the buffered fast paths take (0, 4, 8, 16) and sizes they leave to the
 * general body, over several laps of small buffers: every value arrives whole
 * and in order, a receive into NULL drops exactly one, and after the close the
 * rest drains before ok turns false with a zeroed element. */
TEST(buffered_sizes)
{
    run_main(buffered_sizes_main, NULL);
}

/* ---------------------------------------------------------------------------
 * nil_chan_blocks
 * ------------------------------------------------------------------------- */

static int64_t nil_returned;

static void nil_receiver(void *arg)
{
    (void)arg;
    int64_t v;
    gort_chan_recv(NULL, &v);
    ATOMIC_INC(&nil_returned);
}

static void nil_sender(void *arg)
{
    (void)arg;
    int64_t v = 1;
    gort_chan_send(NULL, &v);
    ATOMIC_INC(&nil_returned);
}

static void nil_selector(void *arg)
{
    (void)arg;
    int64_t v = 1, w;
    gort_case c[2] = {{NULL, GORT_CASE_SEND, &v, false},
                      {NULL, GORT_CASE_RECV, &w, false}};
    gort_select(c, 2);
    ATOMIC_INC(&nil_returned);
}

static void nil_chan_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int64_t r = gort_go(nil_receiver, NULL);
    int64_t s = gort_go(nil_sender, NULL);
    int64_t x = gort_go(nil_selector, NULL);
    CHECK(r > 0 && s > 0 && x > 0);
    await_waiting("chan receive (nil chan)", r, 1);
    await_waiting("chan send (nil chan)", s, 1);
    /* Go parks an all-nil select as "select" (selectgo) or, with no cases
     * left, "select (no cases)" (block). */
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (count_waiting("select", x) + count_waiting("select (no cases)", x) !=
           1) {
        CHECK_LT(gort_nanotime(), deadline);
        gort_gosched();
    }
    gort_sleep(50 * MS);
    CHECK_EQ(ATOMIC_LOAD(&nil_returned), 0);
    CHECK_EQ(count_waiting("chan receive (nil chan)", r), 1);
    CHECK_EQ(count_waiting("chan send (nil chan)", s), 1);

    int64_t v = 3;
    bool ok = true;
    CHECK(!gort_chan_trysend(NULL, &v));
    CHECK(!gort_chan_tryrecv(NULL, &v, &ok));
    CHECK(!gort_chan_tryrecv(NULL, NULL, NULL));
    CHECK_EQ(v, 3);
    CHECK_EQ(gort_chan_len(NULL), 0);
    CHECK_EQ(gort_chan_cap(NULL), 0);
    CHECK_EQ(gort_chan_free(NULL), 0);
    CHECK_EQ(ATOMIC_LOAD(&nil_returned), 0);
    /* Returning leaves the three blocked for good, as in Go. */
}

/* A receive, a send and a select on NULL channels block forever (the dump
 * names them "chan receive (nil chan)" and so on); the non-blocking forms
 * return false. */
TEST(nil_chan_blocks)
{
    run_main(nil_chan_main, NULL);
}

/* ---------------------------------------------------------------------------
 * trysend_tryrecv
 * ------------------------------------------------------------------------- */

static gort_chan *tt_ch;
static int64_t tt_got;
static gort_waitgroup tt_wg;

static void tt_receiver(void *arg)
{
    (void)arg;
    ATOMIC_STORE(&tt_got, recv_i64(tt_ch));
    gort_waitgroup_done(&tt_wg);
}

static void tt_sender(void *arg)
{
    send_i64(tt_ch, (int64_t)(intptr_t)arg);
    gort_waitgroup_done(&tt_wg);
}

static void trysend_tryrecv_main(void *arg)
{
    (void)arg;
    int64_t v = 11;
    bool ok;

    /* Unbuffered, nobody waiting: neither can proceed. */
    tt_ch = new_chan(sizeof(int64_t), 0);
    CHECK(!gort_chan_trysend(tt_ch, &v));
    ok = false;
    v = 11;
    CHECK(!gort_chan_tryrecv(tt_ch, &v, &ok));
    CHECK_EQ(v, 11);

    /* A parked receiver makes trysend succeed. */
    gort_waitgroup_add(&tt_wg, 1);
    int64_t id = gort_go(tt_receiver, NULL);
    await_waiting("chan receive", id, 1);
    v = 31;
    CHECK(gort_chan_trysend(tt_ch, &v));
    gort_waitgroup_wait(&tt_wg);
    CHECK_EQ(tt_got, 31);
    CHECK(!gort_chan_trysend(tt_ch, &v));

    /* A parked sender makes tryrecv succeed. */
    gort_waitgroup_add(&tt_wg, 1);
    id = gort_go(tt_sender, (void *)(intptr_t)47);
    await_waiting("chan send", id, 1);
    v = 0;
    ok = false;
    CHECK(gort_chan_tryrecv(tt_ch, &v, &ok));
    CHECK(ok);
    CHECK_EQ(v, 47);
    gort_waitgroup_wait(&tt_wg);
    CHECK(!gort_chan_tryrecv(tt_ch, &v, NULL));
    free_chan(tt_ch);

    /* Buffered: room, full, values in order, empty. */
    tt_ch = new_chan(sizeof(int64_t), 2);
    v = 1;
    CHECK(gort_chan_trysend(tt_ch, &v));
    v = 2;
    CHECK(gort_chan_trysend(tt_ch, &v));
    v = 3;
    CHECK(!gort_chan_trysend(tt_ch, &v));
    CHECK_EQ(gort_chan_len(tt_ch), 2);
    ok = false;
    CHECK(gort_chan_tryrecv(tt_ch, &v, &ok));
    CHECK(ok);
    CHECK_EQ(v, 1);
    CHECK(gort_chan_tryrecv(tt_ch, &v, NULL));
    CHECK_EQ(v, 2);
    v = 9;
    CHECK(!gort_chan_tryrecv(tt_ch, &v, &ok));
    CHECK_EQ(v, 9);

    /* A sender parked on a full buffer: tryrecv takes the head and the
     * sender's value moves into the buffer. */
    send_i64(tt_ch, 100);
    send_i64(tt_ch, 101);
    gort_waitgroup_add(&tt_wg, 1);
    id = gort_go(tt_sender, (void *)(intptr_t)102);
    await_waiting("chan send", id, 1);
    CHECK(gort_chan_tryrecv(tt_ch, &v, NULL));
    CHECK_EQ(v, 100);
    gort_waitgroup_wait(&tt_wg);
    CHECK_EQ(gort_chan_len(tt_ch), 2);
    CHECK(gort_chan_tryrecv(tt_ch, &v, NULL));
    CHECK_EQ(v, 101);
    CHECK(gort_chan_tryrecv(tt_ch, &v, NULL));
    CHECK_EQ(v, 102);

    /* Closed and drained: tryrecv proceeds, with ok false and zero. */
    gort_chan_close(tt_ch);
    v = 5;
    ok = true;
    CHECK(gort_chan_tryrecv(tt_ch, &v, &ok));
    CHECK(!ok);
    CHECK_EQ(v, 0);
    CHECK(gort_chan_tryrecv(tt_ch, NULL, NULL));
    free_chan(tt_ch);
}

/* The non-blocking forms against empty, full, parked-partner and closed
 * channels. */
TEST(trysend_tryrecv)
{
    run_main(trysend_tryrecv_main, NULL);
}

/* ---------------------------------------------------------------------------
 * chan_free_busy
 * ------------------------------------------------------------------------- */

static gort_chan *fb_a, *fb_b;
static gort_waitgroup fb_wg;
static int fb_sel_idx;

static void fb_receiver(void *arg)
{
    (void)arg;
    CHECK_EQ(recv_i64(fb_a), 1);
    gort_waitgroup_done(&fb_wg);
}

static void fb_sender(void *arg)
{
    (void)arg;
    send_i64(fb_a, 2);
    gort_waitgroup_done(&fb_wg);
}

static void fb_selector(void *arg)
{
    (void)arg;
    int64_t va = 0, vb = 0;
    gort_case c[2] = {{fb_a, GORT_CASE_RECV, &va, false},
                      {fb_b, GORT_CASE_RECV, &vb, false}};
    fb_sel_idx = gort_select(c, 2);
    CHECK_EQ(fb_sel_idx, 1);
    CHECK(c[1].ok);
    CHECK_EQ(vb, 3);
    gort_waitgroup_done(&fb_wg);
}

static void chan_free_busy_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_chan_free(NULL), 0);

    /* A parked receiver. */
    fb_a = new_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&fb_wg, 1);
    int64_t id = gort_go(fb_receiver, NULL);
    await_waiting("chan receive", id, 1);
    CHECK_EQ(gort_chan_free(fb_a), -EBUSY);
    CHECK_EQ(gort_chan_free(fb_a), -EBUSY);
    send_i64(fb_a, 1); /* the channel still works */
    gort_waitgroup_wait(&fb_wg);
    free_chan(fb_a);

    /* A sender parked on a full buffer. */
    fb_a = new_chan(sizeof(int64_t), 1);
    send_i64(fb_a, 1);
    gort_waitgroup_add(&fb_wg, 1);
    id = gort_go(fb_sender, NULL);
    await_waiting("chan send", id, 1);
    CHECK_EQ(gort_chan_free(fb_a), -EBUSY);
    CHECK_EQ(recv_i64(fb_a), 1);
    gort_waitgroup_wait(&fb_wg);
    CHECK_EQ(gort_chan_len(fb_a), 1);
    /* Buffered values are no obstacle. */
    free_chan(fb_a);

    /* A select parked on two channels: both are busy; once the select
     * has returned through one, the other holds nothing of it. */
    fb_a = new_chan(sizeof(int64_t), 0);
    fb_b = new_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&fb_wg, 1);
    id = gort_go(fb_selector, NULL);
    await_waiting("select", id, 1);
    CHECK_EQ(gort_chan_free(fb_a), -EBUSY);
    CHECK_EQ(gort_chan_free(fb_b), -EBUSY);
    send_i64(fb_b, 3);
    gort_waitgroup_wait(&fb_wg);
    free_chan(fb_a);
    free_chan(fb_b);

    /* A closed channel whose receivers have left. */
    fb_a = new_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&fb_wg, 1);
    id = gort_go(fb_sender, NULL);
    await_waiting("chan send", id, 1);
    CHECK_EQ(gort_chan_free(fb_a), -EBUSY);
    CHECK_EQ(recv_i64(fb_a), 2);
    gort_waitgroup_wait(&fb_wg);
    gort_chan_close(fb_a);
    free_chan(fb_a);
}

/* gort_chan_free is -EBUSY while a goroutine is blocked on the channel (recv,
 * send, select), 0 after; a select that returned leaves no trace on its other
 * channels. */
TEST(chan_free_busy)
{
    run_main(chan_free_busy_main, NULL);
}

/* ---------------------------------------------------------------------------
 * make_bad_args
 * ------------------------------------------------------------------------- */

static void check_make_args(void)
{
    gort_chan *ch = NULL;
    CHECK_EQ(gort_chan_make(NULL, 8, 1), -EINVAL);
    CHECK_EQ(gort_chan_make(&ch, GORT_CHAN_MAX_ELEM + 1, 0), -EINVAL);
    CHECK_EQ(gort_chan_make(&ch, 65536, 1), -EINVAL);
    CHECK_EQ(gort_chan_make(&ch, SIZE_MAX, 0), -EINVAL);
    /* elemsize * cap overflows size_t. */
    CHECK_EQ(gort_chan_make(&ch, 8, SIZE_MAX), -EINVAL);
    CHECK_EQ(gort_chan_make(&ch, 16, SIZE_MAX / 8), -EINVAL);
    CHECK_EQ(gort_chan_make(&ch, GORT_CHAN_MAX_ELEM, SIZE_MAX / 1024), -EINVAL);
    /* Fits in size_t, not in memory (Go: "makechan: size out of range"). */
    CHECK_EQ(gort_chan_make(&ch, 1, SIZE_MAX), -EINVAL);
    CHECK_EQ(gort_chan_make(&ch, 1, SIZE_MAX - 64), -EINVAL);

    /* The limits themselves are fine. */
    ch = NULL;
    CHECK_EQ(gort_chan_make(&ch, GORT_CHAN_MAX_ELEM, 0), 0);
    CHECK(ch != NULL);
    CHECK_EQ(gort_chan_cap(ch), 0);
    CHECK_EQ(gort_chan_free(ch), 0);
    ch = NULL;
    CHECK_EQ(gort_chan_make(&ch, GORT_CHAN_MAX_ELEM, 2), 0);
    CHECK(ch != NULL);
    CHECK_EQ(gort_chan_cap(ch), 2);
    CHECK_EQ(gort_chan_free(ch), 0);
    ch = NULL;
    CHECK_EQ(gort_chan_make(&ch, 0, 0), 0);
    CHECK(ch != NULL);
    CHECK_EQ(gort_chan_free(ch), 0);
}

static gort_chan *mb_thread_ch;

static void *mb_thread(void *arg)
{
    (void)arg;
    check_make_args();
    CHECK_EQ(gort_chan_make(&mb_thread_ch, sizeof(int64_t), 2), 0);
    return NULL;
}

static void make_bad_args_main(void *arg)
{
    (void)arg;
    check_make_args();
    /* The channel made on the plain thread works here. */
    send_i64(mb_thread_ch, 8);
    CHECK_EQ(gort_chan_len(mb_thread_ch), 1);
    CHECK_EQ(recv_i64(mb_thread_ch), 8);
}

/* -EINVAL for a NULL chp, elemsize 65536 and sizes that overflow; make and
 * free outside gort_main and on a plain thread. */
TEST(make_bad_args)
{
    /* Outside gort_main and on a thread of its own: "May be called from
     * any thread". */
    check_make_args();
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, mb_thread, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK(mb_thread_ch != NULL);
    run_main(make_bad_args_main, NULL);
    CHECK_EQ(gort_chan_free(mb_thread_ch), 0);
}

/* ---------------------------------------------------------------------------
 * typed and checked
 *
 * A typed channel (GORT_CHAN_OF) carries its T through every call; the
 * checked untyped calls refuse an element of another size and move
 * nothing.  What a typed channel refuses at compile time is
 * tests/header/typed_misuse.c's (header.check).
 * ------------------------------------------------------------------------- */

struct point {
    int32_t x, y;
    char tag[24];
};
GORT_CHAN_OF(point_chan, struct point);
GORT_CHAN_OF(time_chan, int64_t);

static void typed_sender(void *arg)
{
    point_chan *c = arg;
    for (int i = 0; i < 100; i++)
        point_chan_send(*c, (struct point){i, -i, "p"});
    point_chan_close(*c);
}

static void typed_main(void *arg)
{
    (void)arg;
    point_chan c = {NULL};
    CHECK_EQ(point_chan_cap(c), 0); /* zeroed: the nil channel */
    CHECK_EQ(point_chan_make(&c, 2), 0);
    CHECK_EQ(gort_chan_elemsize(point_chan_raw(c)), sizeof(struct point));
    CHECK_EQ(point_chan_cap(c), 2);
    CHECK(gort_go(typed_sender, &c) > 0);
    struct point p;
    int n = 0;
    while (point_chan_recv(c, &p)) {
        CHECK_EQ(p.x, n);
        CHECK_EQ(p.y, -n);
        CHECK(strcmp(p.tag, "p") == 0);
        n++;
    }
    CHECK_EQ(n, 100);
    CHECK_EQ(point_chan_free(c), 0);

    /* try, deadline, context and select forms on a buffered channel. */
    CHECK_EQ(point_chan_make(&c, 1), 0);
    CHECK(point_chan_trysend(c, (struct point){1, 2, "a"}));
    CHECK(!point_chan_trysend(c, (struct point){3, 4, "b"}));
    CHECK_EQ(point_chan_len(c), 1);
    CHECK_EQ(point_chan_send_until(c, (struct point){5, 6, "c"},
                                   gort_deadline_in(1000 * 1000)),
             -ETIMEDOUT);
    bool ok = false;
    CHECK(point_chan_tryrecv(c, &p, &ok));
    CHECK(ok && p.x == 1 && p.y == 2);
    CHECK_EQ(point_chan_recv_until(c, &p, gort_deadline_in(1000 * 1000)),
             -ETIMEDOUT);
    CHECK_EQ(point_chan_send_ctx(c, (struct point){7, 8, "d"}, NULL), 0);
    struct point out = {9, 10, "e"};
    gort_case cases[2] = {point_chan_recv_case(c, &p),
                          point_chan_send_case(c, &out)};
    CHECK_EQ(gort_select(cases, 2), 0); /* full: only the receive is ready */
    CHECK(cases[0].ok && p.x == 7 && p.y == 8);
    CHECK_EQ(gort_select(cases, 2), 1); /* empty: only the send is */
    CHECK_EQ(point_chan_recv_ctx(c, &p, NULL), 1);
    CHECK(p.x == 9 && strcmp(p.tag, "e") == 0);
    CHECK_EQ(point_chan_free(c), 0);

    /* A channel made elsewhere, wrapped: its element size must be T's. */
    gort_chan *after = gort_after(GORT_MILLISECOND);
    CHECK(after != NULL);
    time_chan tc;
    CHECK_EQ(point_chan_wrap(&c, after), -EINVAL);
    CHECK_EQ(time_chan_wrap(&tc, after), 0);
    int64_t when = 0;
    CHECK(time_chan_recv(tc, &when));
    CHECK_GT(when, 0);
    CHECK_EQ(time_chan_wrap(&tc, NULL), 0); /* the nil channel */
    CHECK(time_chan_raw(tc) == NULL);
    CHECK_EQ(gort_chan_free(after), 0);
    /* The duration constants are 64 bits wide. */
    CHECK_EQ(10 * GORT_SECOND, (int64_t)10000000000);
    CHECK_EQ(GORT_HOUR, 3600 * GORT_SECOND);
    CHECK_EQ(GORT_MILLISECOND, 1000 * GORT_MICROSECOND);
}

TEST(typed)
{
    run_main(typed_main, NULL);
}

static void checked_main(void *arg)
{
    (void)arg;
    gort_chan *ch = new_chan(sizeof(int64_t), 2);
    CHECK_EQ(gort_chan_elemsize(ch), sizeof(int64_t));
    CHECK_EQ(gort_chan_elemsize(NULL), 0);
    int32_t small = 7;
    int64_t v = 42, got = 0;
    struct point big = {1, 2, "x"};
    /* Wrong sizes: -EINVAL, nothing sent. */
    CHECK_EQ(GORT_CHAN_SEND(ch, &small), -EINVAL);
    CHECK_EQ(GORT_CHAN_SEND(ch, &big), -EINVAL);
    CHECK_EQ(gort_chan_len(ch), 0);
    CHECK_EQ(GORT_CHAN_SEND(ch, &v), 0);
    CHECK_EQ(gort_chan_len(ch), 1);
    /* Wrong sizes: -EINVAL, nothing taken. */
    CHECK_EQ(GORT_CHAN_RECV(ch, &small), -EINVAL);
    CHECK_EQ(small, 7);
    CHECK_EQ(GORT_CHAN_RECV(ch, &big), -EINVAL);
    CHECK_EQ(gort_chan_len(ch), 1);
    CHECK_EQ(GORT_CHAN_RECV(ch, &got), 1);
    CHECK_EQ(got, 42);
    /* NULL discards, whatever the size. */
    CHECK_EQ(GORT_CHAN_SEND(ch, &v), 0);
    CHECK_EQ(gort_chan_recv_checked(ch, NULL, 1), 1);
    CHECK_EQ(gort_chan_len(ch), 0);
    /* Closed and drained: 0, the element zeroed. */
    gort_chan_close(ch);
    got = 5;
    CHECK_EQ(GORT_CHAN_RECV(ch, &got), 0);
    CHECK_EQ(got, 0);
    CHECK_EQ(GORT_CHAN_RECV(ch, &small), -EINVAL); /* checked first */
    free_chan(ch);
    /* A signal channel (size 0) takes a size-0 element only. */
    gort_chan *sig = new_chan(0, 1);
    CHECK_EQ(gort_chan_send_checked(sig, &v, sizeof v), -EINVAL);
    CHECK_EQ(gort_chan_send_checked(sig, NULL, 0), 0);
    CHECK_EQ(gort_chan_recv_checked(sig, &v, 0), 1);
    free_chan(sig);
}

TEST(checked_sizes)
{
    run_main(checked_main, NULL);
}

/* ---------------------------------------------------------------------------
 * stress_mpmc
 *
 * Producers send each of their values once, by a blocking send, a
 * select over several send cases, a trysend, or a select with a default
 * (retried).  Forwarders take values off any channel and put them back on
 * any channel with selects that mix receive and send cases, and stop when
 * a stop channel is closed.  Consumers only ever block in a select over
 * every channel still open, so a blocked sender is always matched:
 * progress never depends on luck.  Once producers and forwarders are
 * done, every channel is closed; consumers drain them and stop after
 * seeing all sixteen closed.  Values are 1..total, each received exactly
 * once.
 * ------------------------------------------------------------------------- */

#define MP_NCH 16
#define MP_NPROD 8
#define MP_NCONS 8
#define MP_NFWD 2
#define MP_PER_PROD (SANITIZED ? 3000 : 20000)
#define MP_TOTAL ((int64_t)MP_NPROD * MP_PER_PROD)

static gort_chan *mp_ch[MP_NCH];
static gort_chan *mp_stop;
static uint8_t mp_seen[MP_NPROD * 20000 + 1];
static int64_t mp_count, mp_sum, mp_forwarded, mp_bad;
static gort_waitgroup mp_prod_wg, mp_fwd_wg, mp_cons_wg;

static void mp_record(int64_t v)
{
    if (v < 1 || v > MP_TOTAL) {
        ATOMIC_INC(&mp_bad);
        return;
    }
    __atomic_add_fetch(&mp_seen[v], 1, __ATOMIC_RELAXED);
    ATOMIC_INC(&mp_count);
    ATOMIC_ADD(&mp_sum, v);
}

static void mp_producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t rng = 0x1234567ull * (uint64_t)(id + 1) + 99;
    gort_case c[4];
    for (int64_t seq = 0; seq < MP_PER_PROD; seq++) {
        int64_t v = (int64_t)id * MP_PER_PROD + seq + 1;
        switch (xorshift(&rng) % 4) {
        case 0:
            gort_chan_send(mp_ch[xorshift(&rng) % MP_NCH], &v);
            break;
        case 1: {
            int n = 1 + (int)(xorshift(&rng) % 4);
            for (int k = 0; k < n; k++)
                c[k] = (gort_case){mp_ch[xorshift(&rng) % MP_NCH],
                                   GORT_CASE_SEND, &v, false};
            int idx = gort_select(c, n);
            CHECK(idx >= 0 && idx < n);
            break;
        }
        case 2:
            if (!gort_chan_trysend(mp_ch[xorshift(&rng) % MP_NCH], &v))
                gort_chan_send(mp_ch[xorshift(&rng) % MP_NCH], &v);
            break;
        default:
            for (;;) {
                int64_t sink;
                c[0] = (gort_case){mp_ch[xorshift(&rng) % MP_NCH],
                                   GORT_CASE_SEND, &v, false};
                c[1] = (gort_case){NULL, GORT_CASE_RECV, &sink, false};
                c[2] = (gort_case){NULL, GORT_CASE_DEFAULT, NULL, false};
                c[3] = (gort_case){mp_ch[xorshift(&rng) % MP_NCH],
                                   GORT_CASE_SEND, &v, false};
                int idx = gort_select(c, 4);
                CHECK(idx == 0 || idx == 2 || idx == 3);
                if (idx != 2)
                    break;
                gort_gosched();
            }
            break;
        }
    }
    gort_waitgroup_done(&mp_prod_wg);
}

static void mp_forwarder(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t rng = 0xabcdefull * (uint64_t)(id + 7);
    int64_t held[4], in[MP_NCH], stopv;
    int nheld = 0;
    gort_case c[2 * MP_NCH + 1];
    for (;;) {
        int n = 0;
        int start = (int)(xorshift(&rng) % MP_NCH);
        for (int k = 0; k < MP_NCH; k++) {
            int j = (start + k) % MP_NCH;
            if (nheld < 4)
                c[n++] = (gort_case){mp_ch[j], GORT_CASE_RECV, &in[j], false};
            if (nheld == 4 || (nheld > 0 && (xorshift(&rng) & 1)))
                c[n++] = (gort_case){mp_ch[j], GORT_CASE_SEND,
                                     &held[nheld - 1], false};
        }
        c[n++] = (gort_case){mp_stop, GORT_CASE_RECV, &stopv, false};
        int idx = gort_select(c, n);
        CHECK(idx >= 0 && idx < n);
        if (c[idx].ch == mp_stop) {
            CHECK(!c[idx].ok);
            break;
        }
        if (c[idx].dir == GORT_CASE_RECV) {
            CHECK(c[idx].ok);
            held[nheld++] = *(int64_t *)c[idx].elem;
        } else {
            nheld--;
            ATOMIC_INC(&mp_forwarded);
        }
    }
    while (nheld > 0)
        gort_chan_send(mp_ch[xorshift(&rng) % MP_NCH], &held[--nheld]);
    gort_waitgroup_done(&mp_fwd_wg);
}

static void mp_consumer(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t rng = 0x5555ull * (uint64_t)(id + 3) + 1;
    bool open[MP_NCH];
    int nclosed = 0;
    int64_t in[MP_NCH];
    gort_case c[MP_NCH + 1];
    for (int j = 0; j < MP_NCH; j++)
        open[j] = true;
    while (nclosed < MP_NCH) {
        int r = (int)(xorshift(&rng) % 3);
        if (r == 0) {
            int j = (int)(xorshift(&rng) % MP_NCH);
            if (open[j]) {
                int64_t v = 0;
                bool ok = true;
                if (gort_chan_tryrecv(mp_ch[j], &v, &ok)) {
                    if (ok) {
                        mp_record(v);
                    } else {
                        CHECK_EQ(v, 0);
                        open[j] = false;
                        nclosed++;
                    }
                    continue;
                }
            }
        }
        /* Every channel still open (closed ones as NULL: never ready),
         * from a random first case; sometimes with a default. */
        int start = (int)(xorshift(&rng) % MP_NCH);
        for (int k = 0; k < MP_NCH; k++) {
            int j = (start + k) % MP_NCH;
            c[k] = (gort_case){open[j] ? mp_ch[j] : NULL, GORT_CASE_RECV,
                               &in[j], false};
        }
        int n = MP_NCH;
        if (r == 2)
            c[n++] = (gort_case){NULL, GORT_CASE_DEFAULT, NULL, false};
        int idx = gort_select(c, n);
        CHECK(idx >= 0 && idx < n);
        if (idx == MP_NCH) {
            gort_gosched();
            continue;
        }
        int j = (start + idx) % MP_NCH;
        CHECK(c[idx].ch == mp_ch[j]);
        if (c[idx].ok) {
            mp_record(in[j]);
        } else {
            CHECK_EQ(in[j], 0);
            CHECK(open[j]);
            open[j] = false;
            nclosed++;
        }
    }
    gort_waitgroup_done(&mp_cons_wg);
}

static void stress_mpmc_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    static const size_t caps[] = {0, 1, 4, 64};
    for (int j = 0; j < MP_NCH; j++)
        mp_ch[j] = new_chan(sizeof(int64_t), caps[j % 4]);
    mp_stop = new_chan(0, 0);
    int64_t t0 = gort_nanotime();
    gort_waitgroup_add(&mp_cons_wg, MP_NCONS);
    for (int i = 0; i < MP_NCONS; i++)
        CHECK_GT(gort_go(mp_consumer, (void *)(intptr_t)i), 0);
    gort_waitgroup_add(&mp_fwd_wg, MP_NFWD);
    for (int i = 0; i < MP_NFWD; i++)
        CHECK_GT(gort_go(mp_forwarder, (void *)(intptr_t)i), 0);
    gort_waitgroup_add(&mp_prod_wg, MP_NPROD);
    for (int i = 0; i < MP_NPROD; i++)
        CHECK_GT(gort_go(mp_producer, (void *)(intptr_t)i), 0);
    gort_waitgroup_wait(&mp_prod_wg);
    gort_chan_close(mp_stop);
    gort_waitgroup_wait(&mp_fwd_wg);
    for (int j = 0; j < MP_NCH; j++)
        gort_chan_close(mp_ch[j]);
    gort_waitgroup_wait(&mp_cons_wg);
    fprintf(stderr, "%lld values, %lld forwarded, %.0f ms\n",
            (long long)mp_count, (long long)mp_forwarded,
            (gort_nanotime() - t0) / 1e6);
    CHECK_EQ(mp_bad, 0);
    CHECK_EQ(mp_count, MP_TOTAL);
    CHECK_EQ(mp_sum, MP_TOTAL * (MP_TOTAL + 1) / 2);
    for (int64_t v = 1; v <= MP_TOTAL; v++) {
        if (mp_seen[v] != 1)
            fprintf(stderr, "value %lld received %d times\n", (long long)v,
                    mp_seen[v]);
        CHECK_EQ(mp_seen[v], 1);
    }
    for (int j = 0; j < MP_NCH; j++) {
        CHECK_EQ(gort_chan_len(mp_ch[j]), 0);
        free_chan(mp_ch[j]);
    }
    free_chan(mp_stop);
}

/* 8 producers, 8 consumers and 2 forwarders over 16 channels of capacities 0,
 * 1, 4 and 64, mixing send, trysend and select at random at GOMAXPROCS 4:
 * every value received exactly once, exact count and sum. */
TEST(stress_mpmc)
{
    run_main(stress_mpmc_main, NULL);
}

/* ---------------------------------------------------------------------------
 * many_waiters
 * ------------------------------------------------------------------------- */

#define MW_N (TSAN ? 2000 : 10000)

static gort_chan *mw_ch, *mw_other;
static uint8_t mw_seen[10000];
static int64_t mw_started, mw_done, mw_bad;
static gort_waitgroup mw_wg;

static void mw_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    int64_t v = -1;
    ATOMIC_INC(&mw_started);
    if (i % 2 == 0) {
        if (!gort_chan_recv(mw_ch, &v))
            ATOMIC_INC(&mw_bad);
    } else {
        gort_case c[2] = {{mw_other, GORT_CASE_RECV, NULL, false},
                          {mw_ch, GORT_CASE_RECV, &v, false}};
        if (gort_select(c, 2) != 1 || !c[1].ok)
            ATOMIC_INC(&mw_bad);
    }
    if (v < 0 || v >= MW_N)
        ATOMIC_INC(&mw_bad);
    else
        __atomic_add_fetch(&mw_seen[v], 1, __ATOMIC_RELAXED);
    ATOMIC_INC(&mw_done);
    gort_waitgroup_done(&mw_wg);
}

static void many_waiters_main(void *arg)
{
    (void)arg;
    mw_ch = new_chan(sizeof(int64_t), 0);
    mw_other = new_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&mw_wg, MW_N);
    for (int i = 0; i < MW_N; i++)
        CHECK_GT(gort_go(mw_waiter, (void *)(intptr_t)i), 0);
    await_count(&mw_started, MW_N);
    int64_t deadline = gort_nanotime() + 60000 * MS;
    for (;;) {
        int n = count_waiting("chan receive", 0) + count_waiting("select", 0);
        if (n == MW_N)
            break;
        CHECK_LT(n, MW_N + 1);
        CHECK_LT(gort_nanotime(), deadline);
        gort_sleep(5 * MS);
    }
    CHECK_EQ(ATOMIC_LOAD(&mw_done), 0);
    CHECK_EQ(gort_chan_free(mw_ch), -EBUSY);
    CHECK_EQ(gort_chan_free(mw_other), -EBUSY);

    /* Half the values release exactly half the waiters. */
    for (int64_t v = 0; v < MW_N / 2; v++)
        send_i64(mw_ch, v);
    await_count(&mw_done, MW_N / 2);
    gort_sleep(20 * MS);
    CHECK_EQ(ATOMIC_LOAD(&mw_done), MW_N / 2);
    CHECK_EQ(count_waiting("chan receive", 0) + count_waiting("select", 0),
             MW_N / 2);
    for (int64_t v = MW_N / 2; v < MW_N; v++)
        send_i64(mw_ch, v);
    gort_waitgroup_wait(&mw_wg);
    CHECK_EQ(mw_done, MW_N);
    CHECK_EQ(mw_bad, 0);
    for (int v = 0; v < MW_N; v++)
        CHECK_EQ(mw_seen[v], 1);
    int64_t extra = 1;
    CHECK(!gort_chan_trysend(mw_ch, &extra));
    CHECK(!gort_chan_trysend(mw_other, &extra));
    free_chan(mw_ch);
    free_chan(mw_other);
}

/* 10,000 goroutines parked on one channel (half in recv, half in a select that
 * also waits on a second channel), released one value at a time: half the
 * values release exactly half; the second channel is left with no waiter. */
TEST(many_waiters)
{
    run_main(many_waiters_main, NULL);
}
