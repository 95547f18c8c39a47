/* SPDX-License-Identifier: MIT */
/*
 * redis_fanout - GET and SET requests a second from many clients, each
 * with its own connection and one request in flight, against a running
 * redis-server, made three ways (-mode):
 *
 *   gort      goroutines on hiredis's synchronous API, through gort-hook
 *             (linked in): each client's connect, write and read park it;
 *   threads   the same client code, one pthread a client;
 *   libevent  hiredis's asynchronous API on one libevent loop (the
 *             adapter that ships with hiredis), one callback chain a
 *             client;
 *   epoll     hiredis's request writer and reply reader driven by a
 *             hand-written epoll loop on one thread: one write and one
 *             read a request and a shared epoll_wait, the fewest system
 *             calls any client can make (the floor, not a way anyone
 *             would write a client).
 *
 *     redis_fanout -mode MODE [-addr HOST:PORT] [-clients N] [-n REQUESTS]
 *                  [-procs N]
 *
 * Every client alternates SET and GET on a key of its own, -n requests in
 * all (default 200,000), checking every reply.  Figures: requests_per_s,
 * cpu_us_per_request (the process's user and system time over the run,
 * getrusage) and threads (the most /proc/self/status showed).  bench/
 * fanout.sh starts redis-server and runs the three modes in turn.
 */
#include <gort.h>
#include <event2/event.h>
#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fanout.h"

static const char *mode = "gort", *host = "127.0.0.1";
static int port = 6379, clients = 100, procs = 2;
static long total = 200000;
static long per_client;
static long failures;    /* atomic */
static int max_threads;  /* atomic */

static void fail(const char *what)
{
    bench_fail("redis_fanout", &failures, what);
}

/* One synchronous client: per_client requests. */
static void sync_client(int id)
{
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) {
        fail(c ? c->errstr : "connect: out of memory");
        redisFree(c);
        return;
    }
    char key[32];
    snprintf(key, sizeof key, "fanout:%d", id);
    for (long i = 0; i < per_client; i++) {
        redisReply *r = (i & 1) ? redisCommand(c, "GET %s", key)
                                : redisCommand(c, "SET %s %ld", key, i);
        bool ok = r && ((i & 1) ? r->type == REDIS_REPLY_STRING &&
                                      atol(r->str) == i - 1
                                : r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        if (!ok) {
            fail(c->err ? c->errstr : "wrong reply");
            break;
        }
        if (i == per_client / 2)
            note_threads(&max_threads);
    }
    redisFree(c);
}

static gort_waitgroup wg;

static void gort_client(void *arg)
{
    sync_client((int)(intptr_t)arg);
    gort_waitgroup_done(&wg);
}

static void gort_main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    for (int i = 0; i < clients; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(gort_client, (void *)(intptr_t)i);
    }
    gort_waitgroup_wait(&wg);
}

static void *thread_client(void *arg)
{
    sync_client((int)(intptr_t)arg);
    return NULL;
}

/* The asynchronous clients: each reply callback sends the client's next
 * request. */
struct aclient {
    redisAsyncContext *c;
    int id;
    long i;
    char key[32];
};
static int aclients_left;

static void next_request(struct aclient *a);

static void on_reply(redisAsyncContext *c, void *reply, void *priv)
{
    struct aclient *a = priv;
    redisReply *r = reply;
    bool ok = r && ((a->i & 1) ? r->type == REDIS_REPLY_STRING &&
                                     atol(r->str) == a->i - 1
                               : r->type == REDIS_REPLY_STATUS);
    if (!ok) {
        fail(c->err ? c->errstr : "wrong reply");
        redisAsyncDisconnect(c);
        return;
    }
    if (a->i == per_client / 2)
        note_threads(&max_threads);
    if (++a->i == per_client) {
        redisAsyncDisconnect(c);
        return;
    }
    next_request(a);
}

static void next_request(struct aclient *a)
{
    if (a->i & 1)
        redisAsyncCommand(a->c, on_reply, a, "GET %s", a->key);
    else
        redisAsyncCommand(a->c, on_reply, a, "SET %s %ld", a->key, a->i);
}

static void run_libevent(void)
{
    struct event_base *base = event_base_new();
    struct aclient *as = calloc((size_t)clients, sizeof *as);
    if (!base || !as) {
        fail("out of memory");
        return;
    }
    aclients_left = clients;
    for (int k = 0; k < clients; k++) {
        struct aclient *a = &as[k];
        a->id = k;
        snprintf(a->key, sizeof a->key, "fanout:%d", k);
        a->c = redisAsyncConnect(host, port);
        if (!a->c || a->c->err) {
            fail(a->c ? a->c->errstr : "connect: out of memory");
            continue;
        }
        redisLibeventAttach(a->c, base);
        next_request(a);
    }
    event_base_dispatch(base);
    event_base_free(base);
    free(as);
}

/* The floor: every context non-blocking, registered once (level-
 * triggered) for input; a reply read is followed by the next request's
 * write.  The sockets' buffers never fill with one request in flight, so
 * a write is one call and output needs no registration. */
struct eclient {
    redisContext *c;
    long i;
    char key[32];
};

static bool eclient_send(struct eclient *e)
{
    int done = 0;
    if (e->i & 1)
        redisAppendCommand(e->c, "GET %s", e->key);
    else
        redisAppendCommand(e->c, "SET %s %ld", e->key, e->i);
    while (!done)
        if (redisBufferWrite(e->c, &done) != REDIS_OK)
            return false;
    return true;
}

static void run_epoll(void)
{
    int ep = epoll_create1(EPOLL_CLOEXEC), left = 0;
    struct eclient *es = calloc((size_t)clients, sizeof *es);
    if (ep < 0 || !es) {
        fail("epoll_create1 or out of memory");
        free(es);
        return;
    }
    for (int k = 0; k < clients; k++) {
        struct eclient *e = &es[k];
        snprintf(e->key, sizeof e->key, "fanout:%d", k);
        e->c = redisConnect(host, port);
        if (!e->c || e->c->err) {
            fail(e->c ? e->c->errstr : "connect: out of memory");
            continue;
        }
        /* hiredis takes EAGAIN from a read as "nothing yet" only for a
         * context it does not think blocking. */
        e->c->flags &= ~REDIS_BLOCK;
        fcntl(e->c->fd, F_SETFL, fcntl(e->c->fd, F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = e};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, e->c->fd, &ev) < 0 ||
            !eclient_send(e)) {
            fail("epoll_ctl or the first write failed");
            continue;
        }
        left++;
    }
    note_threads(&max_threads);
    struct epoll_event evs[128];
    while (left > 0) {
        int n = epoll_wait(ep, evs, 128, -1);
        for (int k = 0; k < n; k++) {
            struct eclient *e = evs[k].data.ptr;
            void *reply = NULL;
            if (redisBufferRead(e->c) != REDIS_OK ||
                redisGetReplyFromReader(e->c, &reply) != REDIS_OK) {
                fail(e->c->errstr);
                return;
            }
            if (!reply)
                continue; /* part of a reply */
            redisReply *r = reply;
            bool ok = (e->i & 1) ? r->type == REDIS_REPLY_STRING &&
                                       atol(r->str) == e->i - 1
                                 : r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
            if (!ok) {
                fail("wrong reply");
                return;
            }
            if (++e->i == per_client) {
                epoll_ctl(ep, EPOLL_CTL_DEL, e->c->fd, NULL);
                left--;
            } else if (!eclient_send(e)) {
                fail(e->c->errstr);
                return;
            }
        }
    }
    for (int k = 0; k < clients; k++)
        redisFree(es[k].c);
    close(ep);
    free(es);
}

int main(int argc, char **argv)
{
    static char h[256];
    /* Every flag takes a value: they come in pairs. */
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            goto usage;
        if (!strcmp(a, "-mode"))
            mode = v;
        else if (!strcmp(a, "-addr")) {
            const char *colon = strrchr(v, ':');
            if (!colon || colon == v || (size_t)(colon - v) >= sizeof h)
                goto usage;
            memcpy(h, v, (size_t)(colon - v));
            h[colon - v] = '\0';
            host = h;
            port = (int)bench_intflag("redis_fanout", "-addr's port",
                                      colon + 1, 1);
        } else if (!strcmp(a, "-clients"))
            clients = (int)bench_intflag("redis_fanout", "-clients", v, 1);
        else if (!strcmp(a, "-n"))
            total = bench_intflag("redis_fanout", "-n", v, 1);
        else if (!strcmp(a, "-procs"))
            procs = (int)bench_intflag("redis_fanout", "-procs", v, 1);
        else
            goto usage;
    }
    per_client = total / clients > 0 ? total / clients : 1;
    double t0 = bench_now_s(), c0 = bench_cpu_s();
    if (!strcmp(mode, "gort")) {
        int r = gort_main(gort_main_g, NULL);
        if (r < 0) {
            fprintf(stderr, "redis_fanout: gort_main: %s\n", strerror(-r));
            return 1;
        }
    } else if (!strcmp(mode, "threads")) {
        if (fanout_threads(clients, thread_client) < clients)
            fail("pthread_create failed");
    } else if (!strcmp(mode, "libevent")) {
        run_libevent();
    } else if (!strcmp(mode, "epoll")) {
        run_epoll();
    } else {
        goto usage;
    }
    double secs = bench_now_s() - t0, cpu = bench_cpu_s() - c0;
    return fanout_report("redis_fanout", "request", "requests", "req/s", procs,
                         mode, per_client * clients, secs, cpu, max_threads,
                         failures);
usage:
    fprintf(stderr, "usage: redis_fanout -mode gort|threads|libevent|epoll "
                    "[-addr HOST:PORT] [-clients N] [-n REQUESTS] "
                    "[-procs N]\n");
    return 2;
}
