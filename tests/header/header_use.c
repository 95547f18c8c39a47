/* SPDX-License-Identifier: MIT */
/*
 * header_use.c - a translation unit that uses everything gort.h defines
 * beyond plain declarations: each initializer macro, GORT_BLOCKING,
 * GORT_SIGNAL_NOTIFY (a compound literal in C, a lambda in C++), the
 * errno override, the version macros (also in #if), the constants and
 * enums, and a call of every kind of function (the noreturn one
 * included).  tests/header/header_check.sh compiles it as C99, C11 and
 * every C++ standard from C++11 with gcc, clang, g++ and clang++ under
 * -Wall -Wextra -Wpedantic -Werror: a warning in any of them is a
 * failure.  It is compiled, not linked.
 */
#include <gort.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

static gort_waitgroup wg = GORT_WAITGROUP_INIT;
static gort_mutex mu = GORT_MUTEX_INIT;
static gort_rwmutex rw = GORT_RWMUTEX_INIT;
static gort_once once = GORT_ONCE_INIT;
static gort_cond cond = GORT_COND_INIT(&mu);
static uint32_t ticks[GORT_MAX_PROCS];
static uint64_t counts[GORT_METRIC_HIST_BUCKETS];

struct pair {
    int a;
    double b;
};
GORT_CHAN_OF(pair_chan, struct pair);

/* Every function GORT_CHAN_OF declares, compiled under each standard. */
static int typed(void)
{
    pair_chan c;
    struct pair p = {1, 2.0}, q;
    bool ok = false;
    int v = pair_chan_make(&c, 4);
    pair_chan_send(c, p);
    v += pair_chan_trysend(c, p);
    v += pair_chan_send_until(c, p, gort_deadline_in(1000));
    v += pair_chan_send_ctx(c, p, NULL);
    v += pair_chan_recv(c, &q) + pair_chan_tryrecv(c, &q, &ok);
    v += pair_chan_recv_until(c, &q, gort_no_deadline());
    v += pair_chan_recv_ctx(c, NULL, NULL);
    gort_case cs[2] = {pair_chan_recv_case(c, &q), pair_chan_send_case(c, &p)};
    v += gort_select(cs, 2);
    v += (int)(pair_chan_len(c) + pair_chan_cap(c));
    v += GORT_CHAN_SEND(pair_chan_raw(c), &p) + GORT_CHAN_RECV(c.ch, &q);
    v += (int)gort_chan_elemsize(c.ch);
    pair_chan_close(c);
    return v + pair_chan_free(c);
}

static void noop(void *arg)
{
    (void)arg;
}

static void quit(void *arg)
{
    (void)arg;
    gort_goexit(); /* noreturn: no warning about falling off the end */
}

#if GORT_VERSION_HEX < 0 || GORT_VERSION_MAJOR < 0
#error "GORT_VERSION_HEX is usable in #if"
#endif

static int major_minor(void)
{
    const char *built = GORT_VERSION_STRING;
    const char *running = gort_version();
    return GORT_VERSION_MAJOR * 100 + GORT_VERSION_MINOR +
           GORT_VERSION_PATCH + (built[0] == running[0]) +
           (GORT_VERSION_HEX > 0);
}

static void body(void *arg)
{
    gort_chan *ch = NULL;
    gort_case cases[2];
    gort_metric_sample s;
    long n;
    int v = 1;
    bool ok = false;

    (void)arg;
    gort_go(noop, NULL);
    gort_defer(noop, NULL);
    gort_waitgroup_add(&wg, 1);
    gort_waitgroup_done(&wg);
    gort_waitgroup_wait(&wg);
    gort_mutex_lock(&mu);
    gort_cond_signal(&cond);
    gort_mutex_unlock(&mu);
    gort_rwmutex_rlock(&rw);
    gort_rwmutex_runlock(&rw);
    gort_once_do(&once, noop, NULL);

    if (gort_chan_make(&ch, sizeof v, GORT_CHAN_MAX_ELEM > 0 ? 1 : 0) == 0) {
        gort_chan_send(ch, &v);
        cases[0].ch = ch;
        cases[0].dir = GORT_CASE_RECV;
        cases[0].elem = &v;
        cases[0].ok = false;
        cases[1].ch = NULL;
        cases[1].dir = GORT_CASE_DEFAULT;
        cases[1].elem = NULL;
        cases[1].ok = false;
        (void)gort_select(cases, 2);
        (void)gort_chan_tryrecv(ch, &v, &ok);
        /* 2 and 15: SIGINT and SIGTERM, without <signal.h>. */
        if (GORT_SIGNAL_NOTIFY(ch, 2, 15) == 0)
            (void)gort_signal_stop(ch);
        gort_chan_close(ch);
        (void)gort_chan_free(ch);
    }

    s.name = "/sched/latencies:seconds";
    s.hist.counts = counts;
    s.hist.cap = GORT_METRIC_HIST_BUCKETS;
    if (gort_metric_read(s.name, &s) == 0 && s.kind == GORT_METRIC_HISTOGRAM)
        v += (int)s.hist.n;
    v += gort_sched_ticks(ticks, GORT_MAX_PROCS);
    v += major_minor();
    if (gort_set_stack_size(GORT_DEFAULT_STACK_SIZE) < 0)
        (void)gort_set_stack_size(GORT_MIN_STACK_SIZE);

#if defined(__GNUC__)
    n = GORT_BLOCKING(read(0, NULL, 0));
#else
    n = gort_read(0, NULL, 0);
#endif
    if (n < 0 && errno == EINTR)
        errno = 0;
    v += typed();
    gort_sleep(v);
    gort_go(quit, NULL);
}

int header_use_main(void);
int header_use_main(void)
{
    return gort_main(body, NULL);
}
