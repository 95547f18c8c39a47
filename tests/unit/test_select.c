/* SPDX-License-Identifier: MIT */
/*
 * test_select.c - gort_select against Go's select statement (the language
 * spec and select.go).
 *
 * Goroutines that must be parked before the next step are found in the
 * goroutine dump ("goroutine N [select]:"), never guessed by sleeping.
 */
#include "test_util.h"

#include <errno.h>

static gort_case rcase(gort_chan *ch, void *elem)
{
    return (gort_case){ch, GORT_CASE_RECV, elem, false};
}

static gort_case scase(gort_chan *ch, void *elem)
{
    return (gort_case){ch, GORT_CASE_SEND, elem, false};
}

static gort_case dcase(void)
{
    return (gort_case){NULL, GORT_CASE_DEFAULT, NULL, false};
}

/* ---------------------------------------------------------------------------
 * fairness
 * ------------------------------------------------------------------------- */

static void fairness_main(void *arg)
{
    (void)arg;
    gort_chan *a = make_chan(sizeof(int64_t), 1);
    gort_chan *b = make_chan(sizeof(int64_t), 1);
    gort_chan *c = make_chan(sizeof(int64_t), 1);
    send_i64(a, 1);
    send_i64(b, 2);

    /* Two ready receive cases, always in the same positions. */
    const int n2 = 100000;
    int wins[3] = {0, 0, 0};
    for (int i = 0; i < n2; i++) {
        int64_t va = 0, vb = 0;
        gort_case cs[2] = {rcase(a, &va), rcase(b, &vb)};
        int idx = gort_select(cs, 2);
        CHECK(idx == 0 || idx == 1);
        CHECK(cs[idx].ok);
        wins[idx]++;
        if (idx == 0) {
            CHECK_EQ(va, 1);
            CHECK(gort_chan_trysend(a, &va));
        } else {
            CHECK_EQ(vb, 2);
            CHECK(gort_chan_trysend(b, &vb));
        }
    }
    fprintf(stderr, "2 cases: %d %d\n", wins[0], wins[1]);
    CHECK_GE(wins[0], n2 * 45 / 100);
    CHECK_LE(wins[0], n2 * 55 / 100);
    CHECK_GE(wins[1], n2 * 45 / 100);
    CHECK_LE(wins[1], n2 * 55 / 100);

    /* Three ready cases, one of them a send into a buffer with room. */
    const int n3 = 90000;
    wins[0] = wins[1] = wins[2] = 0;
    for (int i = 0; i < n3; i++) {
        int64_t va = 0, vb = 0, vc = 3;
        gort_case cs[3] = {rcase(a, &va), scase(c, &vc), rcase(b, &vb)};
        int idx = gort_select(cs, 3);
        CHECK(idx >= 0 && idx < 3);
        wins[idx]++;
        if (idx == 0) {
            CHECK(gort_chan_trysend(a, &va));
        } else if (idx == 2) {
            CHECK(gort_chan_trysend(b, &vb));
        } else {
            int64_t got = 0;
            CHECK(gort_chan_tryrecv(c, &got, NULL));
            CHECK_EQ(got, 3);
        }
    }
    fprintf(stderr, "3 cases: %d %d %d\n", wins[0], wins[1], wins[2]);
    for (int k = 0; k < 3; k++) {
        CHECK_GE(wins[k], n3 * 30 / 100);
        CHECK_LE(wins[k], n3 * 367 / 1000);
    }

    /* A default beside ready cases is never taken. */
    for (int i = 0; i < 10000; i++) {
        int64_t va = 0, vb = 0;
        gort_case cs[3] = {dcase(), rcase(a, &va), rcase(b, &vb)};
        int idx = gort_select(cs, 3);
        CHECK(idx == 1 || idx == 2);
        CHECK(gort_chan_trysend(idx == 1 ? a : b, idx == 1 ? &va : &vb));
    }
    CHECK_EQ(gort_chan_len(a), 1);
    CHECK_EQ(gort_chan_len(b), 1);
    CHECK_EQ(gort_chan_len(c), 0);
    free_chan(a);
    free_chan(b);
    free_chan(c);
}

/* Two always-ready receive cases: each wins 45-55% of 100,000 selects,
 * whatever its position; three ready cases (one a send): each wins 30-36.7%; a
 * default beside ready cases is never taken. */
TEST(fairness)
{
    run_main(fairness_main, NULL);
}

/* ---------------------------------------------------------------------------
 * default_only_when_nothing_ready
 * ------------------------------------------------------------------------- */

static gort_chan *dn_ch;
static int64_t dn_got;
static gort_waitgroup dn_wg;

static void dn_sender(void *arg)
{
    send_i64(dn_ch, (int64_t)(intptr_t)arg);
    gort_waitgroup_done(&dn_wg);
}

static void dn_receiver(void *arg)
{
    (void)arg;
    ATOMIC_STORE(&dn_got, recv_i64(dn_ch));
    gort_waitgroup_done(&dn_wg);
}

static void default_main(void *arg)
{
    (void)arg;
    int64_t v = 0, w = 5;

    /* Unbuffered, nobody there: default, for either direction and with
     * the default in any position. */
    dn_ch = make_chan(sizeof(int64_t), 0);
    for (int pos = 0; pos < 3; pos++) {
        gort_case cs[3];
        int k = 0;
        for (int i = 0; i < 3; i++) {
            if (i == pos)
                cs[i] = dcase();
            else
                cs[i] = k++ == 0 ? rcase(dn_ch, &v) : scase(dn_ch, &w);
        }
        for (int rep = 0; rep < 100; rep++)
            CHECK_EQ(gort_select(cs, 3), pos);
    }

    /* A parked sender makes the receive case ready. */
    gort_waitgroup_add(&dn_wg, 1);
    int64_t id = gort_go(dn_sender, (void *)(intptr_t)61);
    await_waiting("chan send", id, 1);
    {
        gort_case cs[2] = {dcase(), rcase(dn_ch, &v)};
        CHECK_EQ(gort_select(cs, 2), 1);
        CHECK(cs[1].ok);
        CHECK_EQ(v, 61);
    }
    gort_waitgroup_wait(&dn_wg);

    /* A parked receiver makes the send case ready. */
    gort_waitgroup_add(&dn_wg, 1);
    id = gort_go(dn_receiver, NULL);
    await_waiting("chan receive", id, 1);
    {
        int64_t x = 62;
        gort_case cs[2] = {scase(dn_ch, &x), dcase()};
        CHECK_EQ(gort_select(cs, 2), 0);
    }
    gort_waitgroup_wait(&dn_wg);
    CHECK_EQ(dn_got, 62);
    free_chan(dn_ch);

    /* Buffered: empty -> default for a receive, send proceeds; full ->
     * default for a send, receive proceeds. */
    dn_ch = make_chan(sizeof(int64_t), 2);
    {
        gort_case cs[2] = {rcase(dn_ch, &v), dcase()};
        CHECK_EQ(gort_select(cs, 2), 1);
    }
    for (int i = 0; i < 2; i++) {
        int64_t x = 70 + i;
        gort_case cs[2] = {dcase(), scase(dn_ch, &x)};
        CHECK_EQ(gort_select(cs, 2), 1);
    }
    {
        int64_t x = 72;
        gort_case cs[2] = {dcase(), scase(dn_ch, &x)};
        CHECK_EQ(gort_select(cs, 2), 0);
        CHECK_EQ(gort_chan_len(dn_ch), 2);
    }
    for (int i = 0; i < 2; i++) {
        gort_case cs[2] = {dcase(), rcase(dn_ch, &v)};
        CHECK_EQ(gort_select(cs, 2), 1);
        CHECK(cs[1].ok);
        CHECK_EQ(v, 70 + i);
    }
    {
        gort_case cs[2] = {dcase(), rcase(dn_ch, &v)};
        CHECK_EQ(gort_select(cs, 2), 0);
    }

    /* Closed: the receive case is ready (ok false), not the default. */
    gort_chan_close(dn_ch);
    {
        v = 9;
        gort_case cs[2] = {dcase(), rcase(dn_ch, &v)};
        cs[1].ok = true;
        CHECK_EQ(gort_select(cs, 2), 1);
        CHECK(!cs[1].ok);
        CHECK_EQ(v, 0);
    }
    free_chan(dn_ch);

    /* Only a default: taken at once. */
    gort_case only = dcase();
    CHECK_EQ(gort_select(&only, 1), 0);
}

/* The default is taken exactly when no case can proceed: empty or full
 * buffers, unbuffered channels without a partner; not when a buffered value, a
 * parked sender or receiver, or a closed channel is there. */
TEST(default_only_when_nothing_ready)
{
    run_main(default_main, NULL);
}

/* ---------------------------------------------------------------------------
 * nil_channels
 * ------------------------------------------------------------------------- */

static int64_t nc_returned;

static void nc_blocker(void *arg)
{
    (void)arg;
    int64_t v = 1, w;
    gort_case cs[3] = {rcase(NULL, &w), scase(NULL, &v), rcase(NULL, NULL)};
    gort_select(cs, 3);
    ATOMIC_INC(&nc_returned);
}

static void nil_channels_main(void *arg)
{
    (void)arg;
    int64_t v = 7, w = 0;

    /* Only NULL channels and a default: the default. */
    {
        gort_case cs[3] = {rcase(NULL, &w), scase(NULL, &v), dcase()};
        for (int i = 0; i < 1000; i++)
            CHECK_EQ(gort_select(cs, 3), 2);
        CHECK_EQ(w, 0);
    }

    /* NULL channels beside one ready channel: that one, every time. */
    gort_chan *ch = make_chan(sizeof(int64_t), 1);
    for (int i = 0; i < 1000; i++) {
        send_i64(ch, i);
        w = -1;
        gort_case cs[4] = {rcase(NULL, &v), scase(NULL, &v), rcase(ch, &w),
                           rcase(NULL, &v)};
        CHECK_EQ(gort_select(cs, 4), 2);
        CHECK(cs[2].ok);
        CHECK_EQ(w, i);
    }
    for (int i = 0; i < 1000; i++) {
        int64_t x = i;
        gort_case cs[3] = {scase(NULL, &v), scase(ch, &x), rcase(NULL, &v)};
        CHECK_EQ(gort_select(cs, 3), 1);
        CHECK_EQ(recv_i64(ch), i);
    }
    /* With a default as well, the ready case still wins. */
    for (int i = 0; i < 1000; i++) {
        send_i64(ch, i);
        gort_case cs[3] = {dcase(), rcase(NULL, &v), rcase(ch, &w)};
        CHECK_EQ(gort_select(cs, 3), 2);
        CHECK_EQ(w, i);
    }
    CHECK_EQ(v, 7);
    free_chan(ch);

    /* Only NULL channels, no default: blocked for good. */
    int64_t id = gort_go(nc_blocker, NULL);
    CHECK_GT(id, 0);
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (count_waiting("select", id) + count_waiting("select (no cases)", id) !=
           1) {
        CHECK_LT(gort_nanotime(), deadline);
        gort_gosched();
    }
    gort_sleep(30 * MS);
    CHECK_EQ(ATOMIC_LOAD(&nc_returned), 0);
}

/* NULL channels are never ready: with a default the default is taken; beside
 * one ready case that case always wins; alone they block. */
TEST(nil_channels)
{
    run_main(nil_channels_main, NULL);
}

/* ---------------------------------------------------------------------------
 * woken_exactly_once
 * ------------------------------------------------------------------------- */

#define WE_N 4
#define WE_ROUNDS (SANITIZED ? 100 : 400)

static gort_chan *we_ch[WE_N];
static int we_go, we_ready;
static int we_idx;
static int64_t we_val;
static int64_t we_partner_got[WE_N];
static gort_waitgroup we_sel_wg, we_partner_wg;

/* Parked in a select receiving from all four channels. */
static void we_recv_selector(void *arg)
{
    (void)arg;
    int64_t in[WE_N];
    gort_case cs[WE_N];
    for (int k = 0; k < WE_N; k++) {
        in[k] = -1;
        cs[k] = rcase(we_ch[k], &in[k]);
    }
    int idx = gort_select(cs, WE_N);
    CHECK(idx >= 0 && idx < WE_N);
    CHECK(cs[idx].ok);
    for (int k = 0; k < WE_N; k++)
        if (k != idx)
            CHECK_EQ(in[k], -1);
    ATOMIC_STORE(&we_val, in[idx]);
    ATOMIC_STORE(&we_idx, idx);
    gort_waitgroup_done(&we_sel_wg);
}

/* Parked in a select offering (round * 10 + 9) on all four channels. */
static void we_send_selector(void *arg)
{
    int64_t v = (int64_t)(intptr_t)arg;
    gort_case cs[WE_N];
    for (int k = 0; k < WE_N; k++)
        cs[k] = scase(we_ch[k], &v);
    int idx = gort_select(cs, WE_N);
    CHECK(idx >= 0 && idx < WE_N);
    ATOMIC_STORE(&we_idx, idx);
    gort_waitgroup_done(&we_sel_wg);
}

/* Spin for the start signal, yielding now and then so that main (and
 * the other partners) can run: partners already on a P start within
 * microseconds of each other. */
static void we_spin_until_go(void)
{
    __atomic_add_fetch(&we_ready, 1, __ATOMIC_ACQ_REL);
    for (;;) {
        for (int i = 0; i < 2000; i++)
            if (ATOMIC_LOAD(&we_go))
                return;
        gort_gosched();
    }
}

static void we_sender(void *arg)
{
    int k = (int)((intptr_t)arg & 0xff);
    int64_t v = (intptr_t)arg >> 8;
    we_spin_until_go();
    send_i64(we_ch[k], v);
    gort_waitgroup_done(&we_partner_wg);
}

static void we_receiver(void *arg)
{
    int k = (int)(intptr_t)arg;
    we_spin_until_go();
    ATOMIC_STORE(&we_partner_got[k], recv_i64(we_ch[k]));
    gort_waitgroup_done(&we_partner_wg);
}

/* Receive on ch, failing if nothing comes within 10 s. */
static int64_t recv_or_fail(gort_chan *ch, const char *what, int k)
{
    gort_chan *t = gort_after(10000 * MS);
    CHECK(t != NULL);
    int64_t v = -1, tv;
    gort_case cs[2] = {rcase(ch, &v), rcase(t, &tv)};
    int idx = gort_select(cs, 2);
    if (idx != 0)
        fprintf(stderr, "%s %d: nothing after 10 s\n", what, k);
    CHECK_EQ(idx, 0);
    CHECK(cs[0].ok);
    free_chan(t);
    return v;
}

/* Send on ch, failing if nobody takes it within 10 s. */
static void send_or_fail(gort_chan *ch, int64_t v, const char *what, int k)
{
    gort_chan *t = gort_after(10000 * MS);
    CHECK(t != NULL);
    int64_t tv;
    gort_case cs[2] = {scase(ch, &v), rcase(t, &tv)};
    int idx = gort_select(cs, 2);
    if (idx != 0)
        fprintf(stderr, "%s %d: nobody took it after 10 s\n", what, k);
    CHECK_EQ(idx, 0);
    free_chan(t);
}

static void woken_once_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    int wins[WE_N] = {0};
    for (int round = 0; round < WE_ROUNDS; round++) {
        bool recv_side = round % 2 == 0;
        for (int k = 0; k < WE_N; k++) {
            we_ch[k] = make_chan(sizeof(int64_t), 0);
            we_partner_got[k] = -1;
        }
        ATOMIC_STORE(&we_go, 0);
        ATOMIC_STORE(&we_ready, 0);
        gort_waitgroup_add(&we_sel_wg, 1);
        int64_t sel = recv_side
                          ? gort_go(we_recv_selector, NULL)
                          : gort_go(we_send_selector,
                                    (void *)(intptr_t)(round * 10 + 9));
        CHECK_GT(sel, 0);
        await_waiting("select", sel, 1);

        /* Four partners, released together. */
        gort_waitgroup_add(&we_partner_wg, WE_N);
        for (int k = 0; k < WE_N; k++) {
            if (recv_side)
                CHECK_GT(gort_go(we_sender,
                                 (void *)(intptr_t)(
                                     ((int64_t)(round * 10 + k) << 8) | k)),
                         0);
            else
                CHECK_GT(gort_go(we_receiver, (void *)(intptr_t)k), 0);
        }
        while (ATOMIC_LOAD(&we_ready) < WE_N)
            gort_gosched();
        ATOMIC_STORE(&we_go, 1);
        gort_waitgroup_wait(&we_sel_wg);
        int won = ATOMIC_LOAD(&we_idx);
        CHECK(won >= 0 && won < WE_N);
        wins[won]++;

        /* The select took exactly one partner; the other three are still
         * there, each with its own value or waiting for one. */
        if (recv_side) {
            CHECK_EQ(ATOMIC_LOAD(&we_val), round * 10 + won);
            for (int k = 0; k < WE_N; k++)
                if (k != won)
                    CHECK_EQ(recv_or_fail(we_ch[k], "sender", k),
                             round * 10 + k);
        } else {
            for (int k = 0; k < WE_N; k++)
                if (k != won)
                    send_or_fail(we_ch[k], round * 10 + k, "receiver", k);
        }
        gort_waitgroup_wait(&we_partner_wg);
        if (!recv_side) {
            for (int k = 0; k < WE_N; k++)
                CHECK_EQ(we_partner_got[k],
                         k == won ? round * 10 + 9 : round * 10 + k);
        }
        for (int k = 0; k < WE_N; k++) {
            int64_t x;
            CHECK(!gort_chan_tryrecv(we_ch[k], &x, NULL));
            free_chan(we_ch[k]);
        }
    }
    fprintf(stderr, "wins by channel: %d %d %d %d\n", wins[0], wins[1],
            wins[2], wins[3]);
}

/* A goroutine parked in a select over four channels, four partners racing to
 * complete it at GOMAXPROCS 4: the select takes exactly one, the other three
 * stay blocked until main completes them, and every value arrives once; with
 * receive cases and with send cases. */
TEST(woken_exactly_once)
{
    run_main(woken_once_main, NULL);
}

/* ---------------------------------------------------------------------------
 * timeout_loop
 * ------------------------------------------------------------------------- */

static gort_chan *tl_ch;
static gort_waitgroup tl_wg;

/* Five values, 30 ms apart. */
static void tl_sender(void *arg)
{
    (void)arg;
    for (int64_t i = 1; i <= 5; i++) {
        gort_sleep(30 * MS);
        send_i64(tl_ch, i * 100);
    }
    gort_waitgroup_done(&tl_wg);
}

static void timeout_loop_main(void *arg)
{
    (void)arg;
    tl_ch = make_chan(sizeof(int64_t), 0);

    /* Nothing sent: every iteration times out, no earlier than asked. */
    for (int i = 0; i < 10; i++) {
        int64_t t0 = gort_nanotime();
        gort_chan *t = gort_after(10 * MS);
        CHECK(t != NULL);
        int64_t v = -1, tv = 0;
        gort_case cs[2] = {rcase(tl_ch, &v), rcase(t, &tv)};
        int idx = gort_select(cs, 2);
        int64_t now = gort_nanotime();
        CHECK_EQ(idx, 1);
        CHECK(cs[1].ok);
        CHECK_EQ(v, -1);
        CHECK_GE(now - t0, 10 * MS);
        /* The timer's value is the time it fired. */
        CHECK_GE(tv, t0 + 10 * MS);
        CHECK_LE(tv, now);
        CHECK_LT(now - t0, (SANITIZED ? 2000 : 1000) * MS);
        free_chan(t);
    }

    /* Values 30 ms apart, 5 ms timeouts: both kinds of wake-up, the values
     * all received in order. */
    gort_waitgroup_add(&tl_wg, 1);
    CHECK_GT(gort_go(tl_sender, NULL), 0);
    int got = 0, timeouts = 0;
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (got < 5) {
        CHECK_LT(gort_nanotime(), deadline);
        gort_chan *t = gort_after(5 * MS);
        CHECK(t != NULL);
        int64_t v = -1, tv;
        gort_case cs[2] = {rcase(t, &tv), rcase(tl_ch, &v)};
        int idx = gort_select(cs, 2);
        if (idx == 1) {
            CHECK(cs[1].ok);
            got++;
            CHECK_EQ(v, got * 100);
        } else {
            CHECK_EQ(idx, 0);
            timeouts++;
        }
        /* Freeing a timer channel that has not fired stops its timer. */
        free_chan(t);
    }
    gort_waitgroup_wait(&tl_wg);
    fprintf(stderr, "5 values, %d timeouts\n", timeouts);
    CHECK_GE(timeouts, 1);
    free_chan(tl_ch);
}

/* A select loop with a gort_after timeout case times out on schedule when
 * nothing is sent and receives every value, in order, when values come between
 * timeouts. */
TEST(timeout_loop)
{
    run_main(timeout_loop_main, NULL);
}

/* ---------------------------------------------------------------------------
 * send_and_recv_cases
 * ------------------------------------------------------------------------- */

static gort_chan *sr_ch;
static int64_t sr_got;
static int sr_idx[2];
static int64_t sr_in[2];
static gort_waitgroup sr_wg;

static void sr_receiver(void *arg)
{
    (void)arg;
    ATOMIC_STORE(&sr_got, recv_i64(sr_ch));
    gort_waitgroup_done(&sr_wg);
}

/* Offers to send 1000 + id and to receive, on the same channel. */
static void sr_both(void *arg)
{
    int id = (int)(intptr_t)arg;
    int64_t out = 1000 + id, in = -1;
    gort_case cs[2];
    if (id == 0) {
        cs[0] = scase(sr_ch, &out);
        cs[1] = rcase(sr_ch, &in);
    } else {
        cs[0] = rcase(sr_ch, &in);
        cs[1] = scase(sr_ch, &out);
    }
    int idx = gort_select(cs, 2);
    sr_idx[id] = cs[idx].dir;
    sr_in[id] = in;
    gort_waitgroup_done(&sr_wg);
}

static void send_recv_main(void *arg)
{
    (void)arg;
    gort_chan *full = make_chan(sizeof(int64_t), 1);
    gort_chan *room = make_chan(sizeof(int64_t), 1);
    send_i64(full, 5);

    /* Only the send (room) or only the receive (full) can proceed. */
    for (int i = 0; i < 200; i++) {
        int64_t out = 10 + i, in = -1;
        gort_case cs[3] = {rcase(room, &in), scase(full, &out),
                           scase(room, &out)};
        CHECK_EQ(gort_select(cs, 3), 2);
        CHECK_EQ(in, -1);
        CHECK_EQ(gort_chan_len(room), 1);
        /* Now both buffers are full: only a receive can proceed. */
        gort_case cs2[2] = {scase(full, &out), rcase(room, &in)};
        CHECK_EQ(gort_select(cs2, 2), 1);
        CHECK(cs2[1].ok);
        CHECK_EQ(in, 10 + i);
        CHECK_EQ(gort_chan_len(room), 0);
    }
    CHECK_EQ(recv_i64(full), 5);
    free_chan(full);
    free_chan(room);

    /* A parked select with a send case, completed by a receiver. */
    sr_ch = make_chan(sizeof(int64_t), 0);
    gort_chan *never = make_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&sr_wg, 1);
    CHECK_GT(gort_go(sr_receiver, NULL), 0);
    {
        int64_t out = 321, in = -1;
        gort_case cs[2] = {rcase(never, &in), scase(sr_ch, &out)};
        CHECK_EQ(gort_select(cs, 2), 1);
        CHECK_EQ(in, -1);
    }
    gort_waitgroup_wait(&sr_wg);
    CHECK_EQ(sr_got, 321);

    /* Two goroutines, each offering a send and a receive on the same
     * unbuffered channel: one sends, the other receives its value. */
    for (int round = 0; round < 200; round++) {
        sr_idx[0] = sr_idx[1] = 0;
        gort_waitgroup_add(&sr_wg, 2);
        CHECK_GT(gort_go(sr_both, (void *)0), 0);
        CHECK_GT(gort_go(sr_both, (void *)1), 0);
        gort_waitgroup_wait(&sr_wg);
        CHECK_NE(sr_idx[0], sr_idx[1]);
        int sender = sr_idx[0] == GORT_CASE_SEND ? 0 : 1;
        CHECK_EQ(sr_idx[sender], GORT_CASE_SEND);
        CHECK_EQ(sr_in[1 - sender], 1000 + sender);
        CHECK_EQ(sr_in[sender], -1);
    }
    free_chan(sr_ch);
    free_chan(never);
}

/* Send cases and receive cases in one select: the one that can proceed is
 * taken and its value moved; a parked select completed by a receiver; two
 * goroutines each offering both directions on one unbuffered channel pair up
 * (a select never matches itself). */
TEST(send_and_recv_cases)
{
    run_main(send_recv_main, NULL);
}

/* ---------------------------------------------------------------------------
 * closed_channel_case
 * ------------------------------------------------------------------------- */

struct elem24 {
    int64_t a, b, c;
};

static gort_chan *cc_a, *cc_b;
static int cc_idx;
static bool cc_ok;
static struct elem24 cc_elem;
static gort_waitgroup cc_wg;

static void cc_selector(void *arg)
{
    (void)arg;
    struct elem24 ea = {1, 1, 1}, eb = {2, 2, 2};
    gort_case cs[2] = {rcase(cc_a, &ea), rcase(cc_b, &eb)};
    cs[1].ok = true;
    cc_idx = gort_select(cs, 2);
    cc_ok = cs[cc_idx].ok;
    cc_elem = eb;
    CHECK(ea.a == 1 && ea.b == 1 && ea.c == 1);
    gort_waitgroup_done(&cc_wg);
}

static void closed_case_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(struct elem24), 0);
    gort_chan *open_ch = make_chan(sizeof(struct elem24), 0);
    gort_chan_close(ch);
    for (int i = 0; i < 100; i++) {
        struct elem24 e = {7, 8, 9}, o = {4, 4, 4};
        gort_case cs[3] = {rcase(open_ch, &o), dcase(), rcase(ch, &e)};
        cs[2].ok = true;
        CHECK_EQ(gort_select(cs, 3), 2);
        CHECK(!cs[2].ok);
        CHECK(e.a == 0 && e.b == 0 && e.c == 0);
        CHECK(o.a == 4 && o.b == 4 && o.c == 4);
        /* Discarding the element is fine too. */
        gort_case one = rcase(ch, NULL);
        one.ok = true;
        CHECK_EQ(gort_select(&one, 1), 0);
        CHECK(!one.ok);
    }
    free_chan(ch);

    /* A buffered channel closed with values: the values first. */
    ch = make_chan(sizeof(int64_t), 2);
    send_i64(ch, 1);
    send_i64(ch, 2);
    gort_chan_close(ch);
    for (int64_t want = 1; want <= 3; want++) {
        int64_t v = -1;
        gort_case cs[2] = {dcase(), rcase(ch, &v)};
        CHECK_EQ(gort_select(cs, 2), 1);
        CHECK_EQ(cs[1].ok, want <= 2);
        CHECK_EQ(v, want <= 2 ? want : 0);
    }
    free_chan(ch);
    free_chan(open_ch);

    /* A select parked on two channels is woken by closing one. */
    cc_a = make_chan(sizeof(struct elem24), 0);
    cc_b = make_chan(sizeof(struct elem24), 0);
    gort_waitgroup_add(&cc_wg, 1);
    int64_t id = gort_go(cc_selector, NULL);
    await_waiting("select", id, 1);
    gort_chan_close(cc_b);
    gort_waitgroup_wait(&cc_wg);
    CHECK_EQ(cc_idx, 1);
    CHECK(!cc_ok);
    CHECK(cc_elem.a == 0 && cc_elem.b == 0 && cc_elem.c == 0);
    free_chan(cc_a);
    free_chan(cc_b);
}

/* A receive case on a closed channel proceeds at once with ok == false and a
 * zeroed element, ahead of the default; a parked select is woken by close. */
TEST(closed_channel_case)
{
    run_main(closed_case_main, NULL);
}

/* ---------------------------------------------------------------------------
 * bad_args
 * ------------------------------------------------------------------------- */

static void bad_args_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int64_t), 1);
    send_i64(ch, 44);
    int64_t v = -1;

    CHECK_EQ(gort_select(NULL, -1), -EINVAL);
    CHECK_EQ(gort_select(NULL, 1), -EINVAL);
    CHECK_EQ(gort_select(NULL, 65537), -EINVAL);
    {
        gort_case cs[1] = {rcase(ch, &v)};
        CHECK_EQ(gort_select(cs, -1), -EINVAL);
        CHECK_EQ(gort_select(cs, -65536), -EINVAL);
        CHECK_EQ(gort_select(cs, 65537), -EINVAL);
        CHECK_EQ(gort_select(cs, 1 << 30), -EINVAL);
    }
    /* Every bad form sits beside a ready case that must not be touched. */
    static const int bad_dirs[] = {0, 4, -1, 100};
    for (size_t i = 0; i < sizeof bad_dirs / sizeof bad_dirs[0]; i++) {
        gort_case cs[3] = {rcase(ch, &v), dcase(), rcase(ch, &v)};
        cs[2].dir = bad_dirs[i];
        cs[0].ok = true;
        CHECK_EQ(gort_select(cs, 3), -EINVAL);
        CHECK_EQ(v, -1);
        CHECK(cs[0].ok);
        CHECK_EQ(gort_chan_len(ch), 1);
    }
    {
        gort_case cs[3] = {dcase(), rcase(ch, &v), dcase()};
        CHECK_EQ(gort_select(cs, 3), -EINVAL);
        CHECK_EQ(v, -1);
        CHECK_EQ(gort_chan_len(ch), 1);
    }
    {
        int64_t out = 5;
        gort_chan *room = make_chan(sizeof(int64_t), 1);
        gort_case cs[3] = {scase(room, &out), dcase(), dcase()};
        CHECK_EQ(gort_select(cs, 3), -EINVAL);
        CHECK_EQ(gort_chan_len(room), 0);
        free_chan(room);
    }
    /* An unknown dir on a NULL channel is still an unknown dir. */
    {
        gort_case cs[2] = {{NULL, 7, NULL, false}, dcase()};
        CHECK_EQ(gort_select(cs, 2), -EINVAL);
    }
    CHECK_EQ(recv_i64(ch), 44);

    /* 65536 cases is the limit, not beyond it. */
    int n = 65536;
    gort_case *many = calloc((size_t)n, sizeof *many);
    CHECK(many != NULL);
    for (int i = 0; i < n - 1; i++)
        many[i] = rcase(NULL, &v);
    many[n - 1] = dcase();
    CHECK_EQ(gort_select(many, n), n - 1);
    send_i64(ch, 45);
    many[1234] = rcase(ch, &v);
    CHECK_EQ(gort_select(many, n), 1234);
    CHECK_EQ(v, 45);
    free(many);

    /* Only a default: index 0. */
    gort_case d = dcase();
    CHECK_EQ(gort_select(&d, 1), 0);
    free_chan(ch);
}

/* -EINVAL for ncases < 0 or > 65536, NULL cases, an unknown dir, two defaults,
 * touching nothing; 65536 cases are accepted. */
TEST(bad_args)
{
    run_main(bad_args_main, NULL);
}

/* ---------------------------------------------------------------------------
 * select_stress
 *
 * Tokens 1..64 start two to a goroutine.  Each goroutine loops on a
 * select with, for every channel in a random order, a receive case when
 * it holds fewer than four tokens and a send case (of its last token)
 * when it holds any, plus a receive case on the stop channel and
 * sometimes a default.  Some goroutine can always proceed: with all
 * channels empty some goroutine holds a token and can send it into a
 * buffer or to another goroutine's receive case (64 tokens, room for
 * 128).  When stop is closed each goroutine leaves with its tokens.
 * ------------------------------------------------------------------------- */

#define SS_NCH 8
#define SS_NG 32
#define SS_NTOK 64
#define SS_HOLD 4

static gort_chan *ss_ch[SS_NCH];
static gort_chan *ss_stop;
static int64_t ss_sends, ss_recvs, ss_defaults;
static uint8_t ss_seen[SS_NTOK + 1];
static gort_waitgroup ss_wg;

static void ss_seen_token(int64_t t)
{
    CHECK(t >= 1 && t <= SS_NTOK);
    __atomic_add_fetch(&ss_seen[t], 1, __ATOMIC_RELAXED);
}

static void ss_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t rng = 0x243f6a8885a308d3ull ^ ((uint64_t)id * 0x9e3779b97f4a7c15ull);
    int64_t held[SS_HOLD], in[SS_NCH], stopv;
    int nheld = 0;
    held[nheld++] = 2 * id + 1;
    held[nheld++] = 2 * id + 2;
    int64_t sends = 0, recvs = 0, defaults = 0;
    gort_case cs[2 * SS_NCH + 2];
    int chan_of[2 * SS_NCH + 2];
    for (;;) {
        int n = 0;
        int order[SS_NCH];
        for (int j = 0; j < SS_NCH; j++)
            order[j] = j;
        for (int j = SS_NCH - 1; j > 0; j--) {
            int r = (int)(xorshift(&rng) % (uint64_t)(j + 1));
            int t = order[j];
            order[j] = order[r];
            order[r] = t;
        }
        for (int k = 0; k < SS_NCH; k++) {
            int j = order[k];
            if (nheld < SS_HOLD) {
                chan_of[n] = j;
                cs[n++] = rcase(ss_ch[j], &in[j]);
            }
            if (nheld > 0) {
                chan_of[n] = j;
                cs[n++] = scase(ss_ch[j], &held[nheld - 1]);
            }
        }
        int stop_at = (int)(xorshift(&rng) % (uint64_t)(n + 1));
        if (stop_at < n) {
            cs[n] = cs[stop_at];
            chan_of[n] = chan_of[stop_at];
        }
        cs[stop_at] = rcase(ss_stop, &stopv);
        chan_of[stop_at] = -1;
        n++;
        if (xorshift(&rng) % 8 == 0) {
            chan_of[n] = -2;
            cs[n++] = dcase();
        }
        int idx = gort_select(cs, n);
        CHECK(idx >= 0 && idx < n);
        if (chan_of[idx] == -1) {
            CHECK(!cs[idx].ok);
            break;
        }
        if (chan_of[idx] == -2) {
            defaults++;
            gort_gosched();
            continue;
        }
        CHECK(cs[idx].ch == ss_ch[chan_of[idx]]);
        if (cs[idx].dir == GORT_CASE_RECV) {
            CHECK(cs[idx].ok);
            int64_t t = in[chan_of[idx]];
            CHECK(t >= 1 && t <= SS_NTOK);
            CHECK_LT(nheld, SS_HOLD);
            held[nheld++] = t;
            recvs++;
        } else {
            CHECK_GT(nheld, 0);
            nheld--;
            sends++;
        }
    }
    for (int i = 0; i < nheld; i++)
        ss_seen_token(held[i]);
    ATOMIC_ADD(&ss_sends, sends);
    ATOMIC_ADD(&ss_recvs, recvs);
    ATOMIC_ADD(&ss_defaults, defaults);
    gort_waitgroup_done(&ss_wg);
}

static void select_stress_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    static const size_t caps[SS_NCH] = {0, 0, 1, 1, 2, 4, 8, 16};
    for (int j = 0; j < SS_NCH; j++)
        ss_ch[j] = make_chan(sizeof(int64_t), caps[j]);
    ss_stop = make_chan(0, 0);
    gort_waitgroup_add(&ss_wg, SS_NG);
    for (int i = 0; i < SS_NG; i++)
        CHECK_GT(gort_go(ss_worker, (void *)(intptr_t)i), 0);
    gort_sleep((SANITIZED ? 500 : 1000) * MS);
    gort_chan_close(ss_stop);
    gort_waitgroup_wait(&ss_wg);

    /* The tokens left in buffers, and each token exactly once. */
    int64_t buffered = 0;
    for (int j = 0; j < SS_NCH; j++) {
        int64_t t;
        bool ok;
        while (gort_chan_tryrecv(ss_ch[j], &t, &ok)) {
            CHECK(ok);
            ss_seen_token(t);
            buffered++;
        }
        CHECK_EQ(gort_chan_len(ss_ch[j]), 0);
    }
    fprintf(stderr, "%lld sends, %lld receives, %lld defaults, %lld left "
                    "buffered\n",
            (long long)ss_sends, (long long)ss_recvs, (long long)ss_defaults,
            (long long)buffered);
    for (int t = 1; t <= SS_NTOK; t++) {
        if (ss_seen[t] != 1)
            fprintf(stderr, "token %d seen %d times\n", t, ss_seen[t]);
        CHECK_EQ(ss_seen[t], 1);
    }
    CHECK_EQ(ss_sends - ss_recvs, buffered);
    CHECK_GT(ss_recvs, 1000);
    /* No select left a waiter on any channel. */
    for (int j = 0; j < SS_NCH; j++)
        free_chan(ss_ch[j]);
    free_chan(ss_stop);
}

/* 32 goroutines move 64 tokens among 8 channels with selects mixing send and
 * receive cases on every channel (and sometimes a default), at GOMAXPROCS 4,
 * until a stop channel is closed: every token is found exactly once
 * afterwards, sends minus receives equals what is buffered, and every channel
 * can be freed (no select left a waiter behind). */
TEST(select_stress)
{
    run_main(select_stress_main, NULL);
}
