/* SPDX-License-Identifier: MIT */
/*
 * redisfan - many goroutines, each with its own connection, talking to
 * Redis through hiredis's synchronous API, unmodified: hiredis calls
 * connect, write and read itself, and gort-hook (linked in) parks the
 * goroutine in each instead of its thread (docs/hooks.md).
 *
 *     redisfan [-addr HOST:PORT] [-procs N] [-clients N] [-requests N]
 *
 * Each of -clients goroutines (default 100) connects to -addr (default
 * 127.0.0.1:6379) and makes -requests (default 1000) SET then GET pairs on
 * keys of its own, checking every reply.  It prints the requests a second
 * and the process's threads at the peak (/proc/self/status), and exits 1
 * if any reply was wrong or a connection failed, 2 on bad flags.
 */
#include <gort.h>
#include <hiredis/hiredis.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "threads.h"

static const char *host = "127.0.0.1";
static int port = 6379, procs, clients = 100, requests = 1000;
static gort_waitgroup wg;
static int64_t done_requests, failures; /* atomic */
static int max_threads;                  /* atomic */

static void fail(void)
{
    __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

static void client(void *arg)
{
    int id = (int)(intptr_t)arg;
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) {
        fprintf(stderr, "redisfan: client %d: connect: %s\n", id,
                c ? c->errstr : "out of memory");
        fail();
        redisFree(c);
        gort_waitgroup_done(&wg);
        return;
    }
    for (int i = 0; i < requests; i++) {
        char key[64], val[64];
        snprintf(key, sizeof key, "redisfan:%d:%d", id, i % 16);
        snprintf(val, sizeof val, "%d-%d", id, i);
        redisReply *r = redisCommand(c, "SET %s %s", key, val);
        bool ok = r && r->type == REDIS_REPLY_STATUS && !strcmp(r->str, "OK");
        freeReplyObject(r);
        r = ok ? redisCommand(c, "GET %s", key) : NULL;
        ok = r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, val);
        freeReplyObject(r);
        if (!ok) {
            fprintf(stderr, "redisfan: client %d: request %d: %s\n", id, i,
                    c->err ? c->errstr : "wrong reply");
            fail();
            break;
        }
        __atomic_add_fetch(&done_requests, 2, __ATOMIC_RELAXED);
        if (i == requests / 2)
            note_threads(&max_threads);
    }
    redisFree(c);
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    (void)arg;
    if (procs > 0)
        gort_gomaxprocs(procs);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < clients; i++) {
        gort_waitgroup_add(&wg, 1);
        if (gort_go(client, (void *)(intptr_t)i) < 0) {
            fprintf(stderr, "redisfan: cannot start client %d\n", i);
            fail();
            gort_waitgroup_done(&wg);
        }
    }
    gort_waitgroup_wait(&wg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) +
               (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("redisfan: %d clients on GOMAXPROCS %d: %lld requests in %.3fs "
           "(%.0f/s), at most %d threads, %lld failures\n",
           clients, gort_gomaxprocs(0), (long long)done_requests, s,
           (double)done_requests / s, max_threads, (long long)failures);
}

static int intflag(const char *name, const char *v, int min)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < min || x > 1000000) {
        fprintf(stderr, "redisfan: %s wants an integer >= %d, got %s\n",
                name, min, v);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    static char h[256];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-addr") && i + 1 < argc) {
            /* HOST:PORT as Go reads it ([::1]:6379 for IPv6; an empty
             * host is this machine); hiredis resolves the host. */
            const char *a = argv[++i];
            char p[16];
            if (gort_split_host_port(a, h, sizeof h, p, sizeof p) != 0) {
                fprintf(stderr, "redisfan: bad -addr '%s': expected "
                                "HOST:PORT, e.g. 127.0.0.1:6379 or "
                                "[::1]:6379\n",
                        a);
                return 2;
            }
            host = h[0] ? h : "127.0.0.1";
            port = intflag("-addr's port", p, 1);
        } else if (!strcmp(argv[i], "-procs") && i + 1 < argc) {
            procs = intflag("-procs", argv[++i], 1);
        } else if (!strcmp(argv[i], "-clients") && i + 1 < argc) {
            clients = intflag("-clients", argv[++i], 1);
        } else if (!strcmp(argv[i], "-requests") && i + 1 < argc) {
            requests = intflag("-requests", argv[++i], 1);
        } else {
            fprintf(stderr, "usage: redisfan [-addr HOST:PORT] [-procs N] "
                            "[-clients N] [-requests N]\n");
            return 2;
        }
    }
    int r = gort_main(main_g, NULL);
    if (r < 0) {
        fprintf(stderr, "redisfan: gort_main: %s\n", strerror(-r));
        return 1;
    }
    return failures ? 1 : 0;
}
