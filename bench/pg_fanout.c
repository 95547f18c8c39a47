/* SPDX-License-Identifier: MIT */
/*
 * pg_fanout - simple queries a second from many clients of PostgreSQL,
 * each with its own connection and one query in flight, through libpq,
 * made two ways (-mode):
 *
 *   gort     goroutines, through gort-hook (linked in): libpq's connect,
 *            poll, send and recv park each client;
 *   threads  the same client code, one pthread a client.
 *
 *     pg_fanout -mode MODE -conn CONNINFO [-clients N] [-n QUERIES]
 *               [-procs N]
 *
 * Every client runs `SELECT $i` queries (PQexecParams, text result), -n in
 * all (default 100,000), checking every answer.  Figures:
 * queries_per_s, cpu_us_per_query (the process's user and system time
 * over the run, getrusage) and threads (the most /proc/self/status
 * showed).  bench/fanout.sh starts a PostgreSQL server in a temporary
 * directory and runs both modes in turn.
 */
#include <gort.h>
#include <libpq-fe.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"

static const char *mode = "gort", *conninfo;
static int clients = 100, procs = 2;
static long total = 100000, per_client;
static long failures;   /* atomic */
static int max_threads; /* atomic */

static void fail(const char *what)
{
    bench_fail("pg_fanout", &failures, what);
}

static void client(void)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fail(PQerrorMessage(c));
        PQfinish(c);
        return;
    }
    for (long i = 0; i < per_client; i++) {
        char v[32];
        snprintf(v, sizeof v, "%ld", i);
        const char *params[1] = {v};
        PGresult *r = PQexecParams(c, "SELECT $1::bigint", 1, NULL, params,
                                   NULL, NULL, 0);
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                  atol(PQgetvalue(r, 0, 0)) == i;
        PQclear(r);
        if (!ok) {
            fail(PQerrorMessage(c));
            break;
        }
        if (i == per_client / 2)
            note_threads(&max_threads);
    }
    PQfinish(c);
}

static gort_waitgroup wg;

static void gort_client(void *arg)
{
    (void)arg;
    client();
    gort_waitgroup_done(&wg);
}

static void gort_main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    for (int i = 0; i < clients; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(gort_client, NULL);
    }
    gort_waitgroup_wait(&wg);
}

static void *thread_client(void *arg)
{
    (void)arg;
    client();
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-mode"))
            mode = v;
        else if (!strcmp(a, "-conn"))
            conninfo = v;
        else if (!strcmp(a, "-clients"))
            clients = (int)bench_intflag("pg_fanout", "-clients", v, 1);
        else if (!strcmp(a, "-n"))
            total = bench_intflag("pg_fanout", "-n", v, 1);
        else if (!strcmp(a, "-procs"))
            procs = (int)bench_intflag("pg_fanout", "-procs", v, 1);
        else
            goto usage;
    }
    if (argc % 2 == 0 || !conninfo)
        goto usage;
    per_client = total / clients > 0 ? total / clients : 1;
    double t0 = bench_now_s(), c0 = bench_cpu_s();
    if (!strcmp(mode, "gort")) {
        int r = gort_main(gort_main_g, NULL);
        if (r < 0) {
            fprintf(stderr, "pg_fanout: gort_main: %s\n", strerror(-r));
            return 1;
        }
    } else if (!strcmp(mode, "threads")) {
        if (fanout_threads(clients, thread_client) < clients)
            fail("pthread_create failed");
    } else {
        goto usage;
    }
    double secs = bench_now_s() - t0, cpu = bench_cpu_s() - c0;
    return fanout_report("pg_fanout", "query", "queries", "q/s", procs, mode,
                         per_client * clients, secs, cpu, max_threads,
                         failures);
usage:
    fprintf(stderr, "usage: pg_fanout -mode gort|threads -conn CONNINFO "
                    "[-clients N] [-n QUERIES] [-procs N]\n");
    return 2;
}
