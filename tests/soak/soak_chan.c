/* SPDX-License-Identifier: MIT */
/*
 * soak_chan.c - channels and select under the soak.
 *
 *   chan     rounds of several producers and consumers on one channel
 *            (unbuffered or buffered, elements of 8 to 64 bytes), each
 *            side sending or receiving in its own way: a blocking call,
 *            the non-blocking forms with a few yields before blocking, or
 *            a select with a timeout or a default case.  Every value
 *            carries its producer and sequence number and a pattern over
 *            the rest of the element; each must arrive exactly once and
 *            intact.
 *   select   rounds of sources feeding one selector goroutine, which
 *            selects over every source (a closed one becomes a NULL
 *            channel), a send to a sink when it holds tokens, a timeout
 *            from gort_after and sometimes a default case (after which it
 *            blocks once); the sink must see each token exactly once.
 *
 * A side goroutine gets its own random state, seeded from its worker's:
 * the worker's state belongs to the worker goroutine alone.
 */
#include "soak.h"

#include <stdlib.h>
#include <string.h>

/* A non-blocking attempt that fails is retried after a yield this many
 * times, then the blocking form is used: a yield may wait behind thousands
 * of goroutines in the global queue (a spawn storm), so unbounded retries
 * can take seconds for a value. */
#define TRY_YIELDS 3

/* Values per producer or source: fewer where goroutines are dear. */
#define CHAN_MAX_PER (SOAK_SANITIZED ? 400 : 2000)
#define CHAN_MAX_SIDE 4

/* A channel element; the first elemsize bytes travel. */
struct msg {
    uint64_t v;      /* producer << 32 | sequence number */
    uint64_t pad[7]; /* msg_word(v, i) each */
};

static uint64_t msg_word(uint64_t v, int i)
{
    return (v + 1) * (uint64_t)(2 * i + 1) ^ 0x5bd1e9955bd1e995ULL;
}

static void msg_fill(struct msg *m, uint64_t v, size_t elemsize)
{
    m->v = v;
    for (size_t i = 1; i < elemsize / 8; i++)
        m->pad[i - 1] = msg_word(v, (int)i);
}

/* Whether the words after v hold their pattern. */
static bool msg_intact(const struct msg *m, size_t elemsize)
{
    for (size_t i = 1; i < elemsize / 8; i++)
        if (m->pad[i - 1] != msg_word(m->v, (int)i))
            return false;
    return true;
}

/*
 * A select over cases[0..n) plus a timeout case on a gort_after channel of
 * d ns.  Returns the index of the case taken; n for the timeout, whose
 * value must not come before its time (its lateness is recorded).
 */
static int select_timeout(struct soak_worker *w, gort_case *cases, int n,
                          int64_t d)
{
    int64_t t0 = gort_nanotime();
    gort_chan *after = gort_after(d);
    if (after == NULL)
        soak_fail(w, "gort_after returned NULL");
    int64_t fired = 0;
    cases[n] = (gort_case){.ch = after, .dir = GORT_CASE_RECV, .elem = &fired};
    int idx = gort_select(cases, n + 1);
    if (idx < 0 || idx > n)
        soak_fail(w, "gort_select returned %d for %d cases", idx, n + 1);
    if (idx == n) {
        int64_t now = gort_nanotime();
        if (!cases[n].ok || fired < t0 + d || fired > now)
            soak_fail(w, "select timeout of %lld ns: ok %d, fired at +%lld "
                         "ns, received at +%lld ns",
                      (long long)d, cases[n].ok, (long long)(fired - t0),
                      (long long)(now - t0));
        soak_lat_add(&soak_stats.select, now - (t0 + d));
    }
    soak_chan_free(w, after);
    return idx;
}

/* ---------------------------------------------------------------------------
 * chan
 * ------------------------------------------------------------------------- */

enum { SIDE_BLOCKING, SIDE_TRY, SIDE_SELECT_TIMEOUT, SIDE_SELECT_DEFAULT,
       SIDE_MODES };

struct chan_round;

struct chan_side {
    struct chan_round *r;
    int id;
    int mode;     /* SIDE_* */
    uint64_t rng; /* the side's own xorshift state */
};

struct chan_round {
    struct soak_worker *w;
    gort_chan *ch;
    size_t elemsize, cap;
    int nprod, ncons;
    int64_t per;           /* values each producer sends */
    uint8_t *seen;         /* nprod * per flags, exchanged to 1 (acq_rel) */
    int64_t received;      /* values the consumers took (relaxed adds) */
    gort_waitgroup prod_wg, cons_wg;
    struct chan_side side[2 * CHAN_MAX_SIDE];
};

static uint64_t side_rand(struct chan_side *s)
{
    uint64_t x = s->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return s->rng = x;
}

static void chan_send_one(struct chan_side *s, const struct msg *m)
{
    struct chan_round *r = s->r;
    switch (s->mode) {
    case SIDE_BLOCKING:
        gort_chan_send(r->ch, m);
        return;
    case SIDE_TRY:
        for (int i = 0; !gort_chan_trysend(r->ch, m); i++) {
            if (i == TRY_YIELDS) {
                gort_chan_send(r->ch, m);
                return;
            }
            gort_gosched();
        }
        return;
    case SIDE_SELECT_TIMEOUT: {
        gort_case c[2] = {{.ch = r->ch, .dir = GORT_CASE_SEND,
                           .elem = (void *)m}};
        int64_t d = (int64_t)(side_rand(s) % (2 * SOAK_MS)) + 50 * SOAK_US;
        while (select_timeout(r->w, c, 1, d) != 0)
            ;
        return;
    }
    default: {
        gort_case c[2] = {{.ch = r->ch, .dir = GORT_CASE_SEND,
                           .elem = (void *)m},
                          {.dir = GORT_CASE_DEFAULT}};
        for (int i = 0; gort_select(c, i < TRY_YIELDS ? 2 : 1) != 0; i++)
            gort_gosched();
        return;
    }
    }
}

static void chan_producer(void *arg)
{
    struct chan_side *s = arg;
    struct chan_round *r = s->r;
    struct msg m;
    for (int64_t i = 0; i < r->per; i++) {
        msg_fill(&m, (uint64_t)s->id << 32 | (uint64_t)i, r->elemsize);
        chan_send_one(s, &m);
    }
    gort_waitgroup_done(&r->prod_wg);
}

/* Receive one element the side's way: true for a value, false once the
 * channel is closed and drained. */
static bool chan_recv_one(struct chan_side *s, struct msg *m)
{
    struct chan_round *r = s->r;
    switch (s->mode) {
    case SIDE_BLOCKING:
        return gort_chan_recv(r->ch, m);
    case SIDE_TRY:
        for (int i = 0; i < TRY_YIELDS; i++) {
            bool ok = false;
            if (gort_chan_tryrecv(r->ch, m, &ok))
                return ok;
            gort_gosched();
        }
        return gort_chan_recv(r->ch, m);
    case SIDE_SELECT_TIMEOUT: {
        gort_case c[2] = {{.ch = r->ch, .dir = GORT_CASE_RECV, .elem = m}};
        int64_t d = (int64_t)(side_rand(s) % (2 * SOAK_MS)) + 50 * SOAK_US;
        while (select_timeout(r->w, c, 1, d) != 0)
            ;
        return c[0].ok;
    }
    default: {
        gort_case c[2] = {{.ch = r->ch, .dir = GORT_CASE_RECV, .elem = m},
                          {.dir = GORT_CASE_DEFAULT}};
        for (int i = 0; gort_select(c, i < TRY_YIELDS ? 2 : 1) != 0; i++)
            gort_gosched();
        return c[0].ok;
    }
    }
}

/* Check one received element and mark it seen. */
static void chan_take(struct chan_side *s, const struct msg *m)
{
    struct chan_round *r = s->r;
    int64_t prod = (int64_t)(m->v >> 32), seq = (int64_t)(m->v & 0xffffffff);
    if (prod >= r->nprod || seq >= r->per || !msg_intact(m, r->elemsize))
        soak_fail(r->w, "consumer %d received %#llx (elemsize %zu, cap %zu): "
                        "no such value or pattern broken",
                  s->id, (unsigned long long)m->v, r->elemsize, r->cap);
    if (__atomic_exchange_n(&r->seen[prod * r->per + seq], 1,
                            __ATOMIC_ACQ_REL))
        soak_fail(r->w, "value %lld of producer %lld received twice (cap %zu)",
                  (long long)seq, (long long)prod, r->cap);
    __atomic_add_fetch(&r->received, 1, __ATOMIC_RELAXED);
    soak_step(r->w);
    size_t len = gort_chan_len(r->ch);
    if (len > r->cap)
        soak_fail(r->w, "gort_chan_len %zu above the capacity %zu", len,
                  r->cap);
}

static void chan_consumer(void *arg)
{
    struct chan_side *s = arg;
    struct msg m;
    memset(&m, 0xee, sizeof m);
    while (chan_recv_one(s, &m)) {
        chan_take(s, &m);
        memset(&m, 0xee, sizeof m);
    }
    /* A receive on a closed, drained channel yields zero bytes. */
    for (size_t i = 0; i < s->r->elemsize; i++)
        if (((unsigned char *)&m)[i] != 0)
            soak_fail(s->r->w, "receive from a closed channel left byte %zu "
                               "= %#x",
                      i, ((unsigned char *)&m)[i]);
    gort_waitgroup_done(&s->r->cons_wg);
}

static void chan_setup(struct soak_worker *w, struct chan_round *r)
{
    static const size_t sizes[] = {8, 16, 24, 64};
    memset(r, 0, sizeof *r);
    r->w = w;
    r->elemsize = sizes[soak_rand(w) % 4];
    r->cap = soak_one_in(w, 3) ? 0 : (size_t)soak_between(w, 1, 64);
    r->nprod = (int)soak_between(w, 1, CHAN_MAX_SIDE);
    r->ncons = (int)soak_between(w, 1, CHAN_MAX_SIDE);
    r->per = soak_between(w, 1, CHAN_MAX_PER);
    r->ch = soak_chan_make(w, r->elemsize, r->cap);
    if (gort_chan_cap(r->ch) != r->cap)
        soak_fail(w, "gort_chan_cap %zu, made with %zu", gort_chan_cap(r->ch),
                  r->cap);
    r->seen = soak_alloc(w, (size_t)(r->nprod * r->per));
    for (int i = 0; i < r->nprod + r->ncons; i++) {
        struct chan_side *s = &r->side[i];
        s->r = r;
        s->id = i < r->nprod ? i : i - r->nprod;
        s->mode = (int)(soak_rand(w) % SIDE_MODES);
        s->rng = soak_rand(w) | 1;
    }
    /* On an unbuffered channel the non-blocking forms only meet a partner
     * parked on the other side: one consumer that parks keeps the round
     * from spinning for good. */
    struct chan_side *first = &r->side[r->nprod];
    if (r->cap == 0 && (first->mode == SIDE_TRY ||
                        first->mode == SIDE_SELECT_DEFAULT))
        first->mode = SIDE_BLOCKING;
}

/* Every value arrived once (duplicates failed on arrival). */
static void chan_verify(struct chan_round *r)
{
    int64_t want = r->nprod * r->per;
    if (r->received != want)
        soak_fail(r->w, "%lld values received, %lld sent (cap %zu, %d "
                        "producers, %d consumers)",
                  (long long)r->received, (long long)want, r->cap, r->nprod,
                  r->ncons);
    for (int64_t i = 0; i < want; i++)
        if (!r->seen[i])
            soak_fail(r->w, "value %lld of producer %lld lost",
                      (long long)(i % r->per), (long long)(i / r->per));
}

void soak_chan(struct soak_worker *w)
{
    struct chan_round *r = soak_alloc(w, sizeof *r);
    while (soak_running()) {
        chan_setup(w, r);
        gort_waitgroup_add(&r->prod_wg, r->nprod);
        gort_waitgroup_add(&r->cons_wg, r->ncons);
        for (int i = 0; i < r->ncons; i++)
            soak_go(w, chan_consumer, &r->side[r->nprod + i]);
        for (int i = 0; i < r->nprod; i++)
            soak_go(w, chan_producer, &r->side[i]);
        gort_waitgroup_wait(&r->prod_wg);
        gort_chan_close(r->ch);
        gort_waitgroup_wait(&r->cons_wg);
        chan_verify(r);
        soak_chan_free(w, r->ch);
        free(r->seen);
        soak_progress(w);
    }
    free(r);
}

/* ---------------------------------------------------------------------------
 * select
 * ------------------------------------------------------------------------- */

#define SEL_RING 16

struct sel_round {
    struct soak_worker *w;
    int nsrc;
    int64_t per;              /* tokens per source */
    gort_chan *in[CHAN_MAX_SIDE], *out;
    uint8_t *seen;            /* nsrc * per flags, sink only */
    int64_t sunk;             /* tokens the sink took; read after its wg */
    gort_waitgroup src_wg, sink_wg;
    struct sel_src {
        struct sel_round *r;
        int id;
    } src[CHAN_MAX_SIDE];
};

/* What a source sends: its id and sequence number. */
static void sel_source(void *arg)
{
    struct sel_src *src = arg;
    struct sel_round *r = src->r;
    for (int64_t i = 0; i < r->per; i++) {
        uint64_t v = (uint64_t)src->id << 32 | (uint64_t)i;
        gort_chan_send(r->in[src->id], &v);
    }
    gort_chan_close(r->in[src->id]);
    gort_waitgroup_done(&r->src_wg);
}

static void sel_sink(void *arg)
{
    struct sel_round *r = arg;
    uint64_t v;
    while (gort_chan_recv(r->out, &v)) {
        int64_t src = (int64_t)(v >> 32), seq = (int64_t)(v & 0xffffffff);
        if (src >= r->nsrc || seq >= r->per)
            soak_fail(r->w, "sink received %#llx: no such token",
                      (unsigned long long)v);
        if (r->seen[src * r->per + seq]++)
            soak_fail(r->w, "token %lld of source %lld received twice",
                      (long long)seq, (long long)src);
        r->sunk++;
        soak_step(r->w);
    }
    gort_waitgroup_done(&r->sink_wg);
}

/* The selector's state between selects. */
struct sel_state {
    uint64_t ring[SEL_RING];  /* tokens taken, not yet sent on */
    int head, count;
    int open;                 /* sources not yet closed */
    gort_chan *after;         /* the pending timeout, or NULL */
    int64_t after_at;         /* when it is due */
    uint64_t got;             /* the receive cases' element */
    bool defaulted;           /* the last select took its default case */
};

/* One select; returns false once every source is closed and every token
 * passed on. */
static bool sel_step(struct sel_round *r, struct sel_state *st, bool dflt)
{
    struct soak_worker *w = r->w;
    gort_case c[CHAN_MAX_SIDE + 3];
    int n = 0;
    for (int i = 0; i < r->nsrc; i++)
        c[n++] = (gort_case){.ch = st->count < SEL_RING ? r->in[i] : NULL,
                             .dir = GORT_CASE_RECV, .elem = &st->got};
    int send = n++;
    c[send] = (gort_case){.ch = st->count ? r->out : NULL,
                          .dir = GORT_CASE_SEND,
                          .elem = &st->ring[st->head]};
    int timeout = n++;
    if (st->after == NULL) {
        int64_t d = soak_between(w, 20 * SOAK_US, 3 * SOAK_MS);
        st->after_at = gort_nanotime() + d; /* the timer's due time or before */
        st->after = gort_after(d);
        if (st->after == NULL)
            soak_fail(w, "gort_after returned NULL");
    }
    int64_t fired = 0;
    c[timeout] = (gort_case){.ch = st->after, .dir = GORT_CASE_RECV,
                             .elem = &fired};
    if (dflt)
        c[n++] = (gort_case){.dir = GORT_CASE_DEFAULT};
    int idx = gort_select(c, n);
    if (idx < 0 || idx >= n)
        soak_fail(w, "gort_select returned %d for %d cases", idx, n);
    if (idx < r->nsrc) {
        if (!c[idx].ok) {
            r->in[idx] = NULL; /* closed: never ready again */
            st->open--;
        } else {
            st->ring[(st->head + st->count++) % SEL_RING] = st->got;
        }
    } else if (idx == send) {
        st->head = (st->head + 1) % SEL_RING;
        st->count--;
    } else if (idx == timeout) {
        int64_t now = gort_nanotime();
        if (!c[idx].ok || fired > now || fired < st->after_at)
            soak_fail(w, "select timeout due at %lld fired at %lld (ok %d), "
                         "received at %lld",
                      (long long)st->after_at, (long long)fired, c[idx].ok,
                      (long long)now);
        soak_lat_add(&soak_stats.select, now - st->after_at);
        soak_chan_free(w, st->after);
        st->after = NULL;
    } else {
        st->defaulted = true; /* the next select blocks */
        return true;
    }
    st->defaulted = false;
    return st->open > 0 || st->count > 0;
}

static void sel_setup(struct soak_worker *w, struct sel_round *r)
{
    memset(r, 0, sizeof *r);
    r->w = w;
    r->nsrc = (int)soak_between(w, 1, CHAN_MAX_SIDE);
    r->per = soak_between(w, 1, CHAN_MAX_PER / 2);
    for (int i = 0; i < r->nsrc; i++) {
        r->in[i] = soak_chan_make(w, sizeof(uint64_t),
                                  (size_t)soak_between(w, 0, 8));
        r->src[i] = (struct sel_src){r, i};
    }
    r->out = soak_chan_make(w, sizeof(uint64_t), (size_t)soak_between(w, 0, 8));
    r->seen = soak_alloc(w, (size_t)(r->nsrc * r->per));
}

void soak_select(struct soak_worker *w)
{
    struct sel_round *r = soak_alloc(w, sizeof *r);
    gort_chan *in_made[CHAN_MAX_SIDE];
    while (soak_running()) {
        sel_setup(w, r);
        memcpy(in_made, r->in, sizeof in_made);
        gort_waitgroup_add(&r->src_wg, r->nsrc);
        gort_waitgroup_add(&r->sink_wg, 1);
        soak_go(w, sel_sink, r);
        for (int i = 0; i < r->nsrc; i++)
            soak_go(w, sel_source, &r->src[i]);
        struct sel_state st = {.open = r->nsrc};
        int dflt_in = (int)soak_between(w, 0, 4); /* 0: never a default */
        while (sel_step(r, &st, dflt_in && !st.defaulted &&
                                    soak_one_in(w, dflt_in)))
            ;
        gort_chan_close(r->out);
        gort_waitgroup_wait(&r->sink_wg);
        gort_waitgroup_wait(&r->src_wg);
        if (r->sunk != r->nsrc * r->per)
            soak_fail(w, "sink took %lld tokens, sources sent %lld",
                      (long long)r->sunk, (long long)(r->nsrc * r->per));
        if (st.after != NULL)
            soak_chan_free(w, st.after); /* stops the pending timer */
        for (int i = 0; i < r->nsrc; i++)
            soak_chan_free(w, in_made[i]);
        soak_chan_free(w, r->out);
        free(r->seen);
        soak_progress(w);
    }
    free(r);
}
