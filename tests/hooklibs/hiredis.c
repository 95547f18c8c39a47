/* SPDX-License-Identifier: MIT */
/*
 * hiredis.c - hiredis's synchronous API (redisConnect, redisCommand) on
 * goroutines under gort-hook, against a real redis-server.
 *
 *   hooklibs_hiredis HOST PORT      (hooklibs.py starts the server)
 *
 * 1000 goroutines each connect and send BLPOP on a key of their own with
 * a 30 s timeout.  Redis answers a BLPOP only when its list gets an
 * element, so every goroutine waits in hiredis's read until the main
 * goroutine, once INFO says all 1000 clients are blocked and the dump
 * shows 1000 goroutines parked in the poller, pushes a distinct value to
 * every key.  (DEBUG SLEEP would not do: it stops the whole server, which
 * then does not even read the commands.)
 *
 * Checks: while all are blocked the process has at most GOMAXPROCS + 4
 * threads and no reply has come; afterwards every goroutine got exactly
 * its key and its value.
 */
#include "hooklibs.h"

#include <hiredis/hiredis.h>

#define N 1000

static const char *host;
static int port;
static gort_waitgroup wg;
static int replies; /* atomic: BLPOPs that returned */
static int correct; /* atomic: of those, with this goroutine's key and value */

/* "OK" or why reply r is not the array [hooklibs:i, value-i]. */
static const char *blpop_reply_ok(const redisReply *r, int i)
{
    char key[32], val[32];
    snprintf(key, sizeof key, "hooklibs:%d", i);
    snprintf(val, sizeof val, "value-%d", i);
    if (!r)
        return "no reply";
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return "not a two-element array";
    if (r->element[0]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[0]->str, key) != 0)
        return "wrong key";
    if (r->element[1]->type != REDIS_REPLY_STRING ||
        strcmp(r->element[1]->str, val) != 0)
        return "wrong value";
    return "OK";
}

static void client(void *arg)
{
    int i = (int)(intptr_t)arg;
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) {
        fprintf(stderr, "client %d: redisConnect: %s\n", i,
                c ? c->errstr : "out of memory");
        abort();
    }
    redisReply *r = redisCommand(c, "BLPOP hooklibs:%d 30", i);
    HL_ATOMIC_INC(&replies);
    const char *why = blpop_reply_ok(r, i);
    if (strcmp(why, "OK") == 0)
        HL_ATOMIC_INC(&correct);
    else
        fprintf(stderr, "client %d: BLPOP: %s (%s)\n", i, why,
                c->err ? c->errstr : "no error");
    if (r)
        freeReplyObject(r);
    redisFree(c);
    gort_waitgroup_done(&wg);
}

/* The integer after "name:" in an INFO reply, or -1. */
static long long info_field(const char *info, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = info; (p = strstr(p, name)) != NULL; p += len)
        if ((p == info || p[-1] == '\n') && p[len] == ':')
            return strtoll(p + len + 1, NULL, 10);
    return -1;
}

static redisReply *command(redisContext *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (!r) {
        fprintf(stderr, "control connection: %s\n", c->errstr);
        abort();
    }
    return r;
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(HL_PROCS);
    int64_t t0 = gort_nanotime();
    redisContext *ctl = redisConnect(host, port);
    CHECK(ctl != NULL && ctl->err == 0);

    for (int i = 0; i < N; i++) {
        gort_waitgroup_add(&wg, 1);
        CHECK_GT(gort_go(client, (void *)(intptr_t)i), 0);
    }

    /* Every BLPOP has reached redis and waits there ... */
    long long blocked = 0;
    int64_t deadline = gort_nanotime() + 30000 * HL_MS;
    while (blocked < N) {
        redisReply *r = command(ctl, "INFO clients");
        CHECK_EQ(r->type, REDIS_REPLY_STRING);
        blocked = info_field(r->str, "blocked_clients");
        freeReplyObject(r);
        CHECK(gort_nanotime() < deadline);
        if (blocked < N)
            gort_sleep(10 * HL_MS);
    }
    CHECK_EQ(blocked, N);
    /* ... and every client goroutine is parked in its read. */
    int io_wait = hl_await_io_wait(N);
    double t_blocked = hl_since(t0);
    int threads = hl_sample_threads();
    CHECK_EQ(HL_ATOMIC_LOAD(&replies), 0);

    /* One distinct value per key, pipelined on the control connection. */
    for (int i = 0; i < N; i++)
        CHECK_EQ(redisAppendCommand(ctl, "RPUSH hooklibs:%d value-%d", i, i),
                 REDIS_OK);
    for (int i = 0; i < N; i++) {
        void *reply = NULL;
        CHECK_EQ(redisGetReply(ctl, &reply), REDIS_OK);
        redisReply *r = reply;
        CHECK_EQ(r->type, REDIS_REPLY_INTEGER);
        freeReplyObject(r);
    }
    gort_waitgroup_wait(&wg);
    CHECK_EQ(HL_ATOMIC_LOAD(&replies), N);
    CHECK_EQ(HL_ATOMIC_LOAD(&correct), N);
    redisFree(ctl);
    hl_report("hiredis, BLPOP in redisCommand", N, io_wait, t_blocked, threads,
              hl_since(t0));
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
        return 2;
    }
    host = argv[1];
    port = atoi(argv[2]);
    hl_raise_nofile(N + 64);
    CHECK_EQ(gort_main(main_g, NULL), 0);
    return 0;
}
