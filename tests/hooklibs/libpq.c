/* SPDX-License-Identifier: MIT */
/*
 * libpq.c - libpq (PQconnectdb, PQexec) on goroutines under gort-hook,
 * against a real PostgreSQL server.
 *
 *   hooklibs_libpq CONNINFO      (hooklibs.py makes and starts the cluster)
 *
 * The main goroutine takes an advisory lock on its own connection; then
 * 100 goroutines each connect and run
 *     SELECT i * 7 FROM pg_advisory_xact_lock_shared(4242)
 * which waits in the server until the lock is free.  libpq's sockets are
 * non-blocking and it waits in poll(2), so every goroutine is parked in
 * the hooked poll.  Once pg_locks shows the 100 waiting requests and the
 * dump shows 100 goroutines parked in the poller, the main goroutine
 * samples the thread count and releases the lock.  (A pg_sleep in every
 * query would also block them, but for a fixed time that a slow start of
 * the last goroutines could outlast; the lock holds them until released.)
 *
 * Checks: while all are blocked the process has at most GOMAXPROCS + 4
 * threads and no query has returned; afterwards every goroutine got its
 * own i * 7.
 */
#include "hooklibs.h"

#include <libpq-fe.h>

#define N 100

static const char *conninfo;
static gort_waitgroup wg;
static int returned; /* atomic: queries that returned */
static int correct;  /* atomic: of those, with this goroutine's answer */

static PGconn *connect_db(const char *who)
{
    PGconn *c = PQconnectdb(conninfo);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "%s: PQconnectdb: %s\n", who,
                c ? PQerrorMessage(c) : "out of memory");
        abort();
    }
    return c;
}

/* PQexec that must succeed with status want; the result, to PQclear. */
static PGresult *exec_ok(PGconn *c, const char *sql, ExecStatusType want)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != want) {
        fprintf(stderr, "%s: %s%s\n", sql, PQresStatus(PQresultStatus(r)),
                PQerrorMessage(c));
        abort();
    }
    return r;
}

static void client(void *arg)
{
    int i = (int)(intptr_t)arg;
    char who[32], sql[128], want[32];
    snprintf(who, sizeof who, "client %d", i);
    snprintf(sql, sizeof sql,
             "SELECT %d * 7 FROM pg_advisory_xact_lock_shared(4242)", i);
    snprintf(want, sizeof want, "%d", i * 7);
    PGconn *c = connect_db(who);
    PGresult *r = PQexec(c, sql);
    HL_ATOMIC_INC(&returned);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
        PQnfields(r) == 1 && strcmp(PQgetvalue(r, 0, 0), want) == 0)
        HL_ATOMIC_INC(&correct);
    else
        fprintf(stderr, "%s: %s: %s %s\n", who, sql,
                PQresStatus(PQresultStatus(r)), PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    gort_waitgroup_done(&wg);
}

/* The single integer that sql answers on c. */
static long long query_int(PGconn *c, const char *sql)
{
    PGresult *r = exec_ok(c, sql, PGRES_TUPLES_OK);
    CHECK_EQ(PQntuples(r), 1);
    long long v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(HL_PROCS);
    int64_t t0 = gort_nanotime();
    PGconn *ctl = connect_db("control connection");
    PQclear(exec_ok(ctl, "SELECT pg_advisory_lock(4242)", PGRES_TUPLES_OK));

    for (int i = 0; i < N; i++) {
        gort_waitgroup_add(&wg, 1);
        CHECK_GT(gort_go(client, (void *)(intptr_t)i), 0);
    }

    /* Every query has reached the server and waits for the lock ... */
    int64_t deadline = gort_nanotime() + 30000 * HL_MS;
    long long waiting;
    while ((waiting = query_int(ctl, "SELECT count(*) FROM pg_locks WHERE "
                                     "locktype = 'advisory' AND NOT granted")) <
           N) {
        CHECK(gort_nanotime() < deadline);
        gort_sleep(10 * HL_MS);
    }
    CHECK_EQ(waiting, N);
    /* ... and every client goroutine is parked in libpq's poll. */
    int io_wait = hl_await_io_wait(N);
    double t_blocked = hl_since(t0);
    int threads = hl_sample_threads();
    CHECK_EQ(HL_ATOMIC_LOAD(&returned), 0);

    CHECK_EQ(query_int(ctl, "SELECT pg_advisory_unlock(4242)::int"), 1);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(HL_ATOMIC_LOAD(&returned), N);
    CHECK_EQ(HL_ATOMIC_LOAD(&correct), N);
    PQfinish(ctl);
    hl_report("libpq, PQexec", N, io_wait, t_blocked, threads, hl_since(t0));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CONNINFO\n", argv[0]);
        return 2;
    }
    conninfo = argv[1];
    hl_raise_nofile(N + 64);
    CHECK_EQ(gort_main(main_g, NULL), 0);
    return 0;
}
