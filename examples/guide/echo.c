/* SPDX-License-Identifier: MIT */
/*
 * echo - docs/guide.md's TCP echo server and its clients in one program,
 * the Go idioms of package net in C.
 *
 * The server listens on 127.0.0.1, port 0 (the kernel picks a free one),
 * accepts in a goroutine of its own and serves each connection on a
 * goroutine, with a read deadline (an idle connection is closed after
 * IDLE_MS) and a write deadline.  NCLIENTS client goroutines dial it,
 * send NLINES lines each and check every echo; one more client dials and
 * sends nothing, and sees the server close it at its read deadline.
 * Then main shuts the server down: closing the listener wakes the
 * acceptor's gort_accept with -EBADF, and a wait group waits for the
 * connections.
 *
 * Prints (always the same; tests/guide_test.sh compares it with
 * echo.expected):
 *
 *     echo: 3 clients, 30 lines echoed (480 bytes), every echo matched
 *     echo: the idle client was closed at the server's read deadline
 *     echo: 4 connections served, 1 closed idle (Connection timed out)
 *     echo: the acceptor stopped: Bad file descriptor
 *
 * and exits 0; on a failure it says what failed on stderr and exits 1.
 */
#include <gort.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Go's time.Millisecond: gort.h's, 64 bits wide. */
#define MS GORT_MILLISECOND
#define NCLIENTS 3
#define NLINES 10
#define IDLE_MS 2000          /* the server's read and write deadlines */
#define CLIENT_MS (10 * 1000) /* the clients' */

/* Say what failed on stderr; returns err. */
static int fail(const char *what, int err)
{
    fprintf(stderr, "echo: %s: %s\n", what, gort_strerror(err));
    return err;
}

/* ---------------------------------------------------------------------------
 * Whole writes and reads.
 * ------------------------------------------------------------------------- */

/* Write all n bytes: 0, or the error that stopped it.  gort_write writes
 * all of them, or returns what it wrote before an error or the deadline
 * stopped it, and the next call returns that error (Go's Write returns
 * both at once). */
static int write_all(int fd, const char *buf, size_t n)
{
    for (size_t done = 0; done < n;) {
        long w = gort_write(fd, buf + done, n - done);
        if (w < 0)
            return (int)w;
        done += (size_t)w;
    }
    return 0;
}

/* Read exactly n bytes by the deadline set on fd: 0, or -ECONNRESET for an
 * end of stream first, or gort_read's error (Go's io.ReadFull). */
static int read_full(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        long r = gort_read(fd, buf + got, n - got);
        if (r <= 0)
            return r == 0 ? -ECONNRESET : (int)r;
        got += (size_t)r;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The server.
 * ------------------------------------------------------------------------- */

struct server {
    int lfd;
    gort_waitgroup conns; /* the connections' goroutines */
    int accept_err;       /* why the acceptor stopped */
    atomic_int served;    /* connections accepted */
    atomic_int idle;      /* connections closed at their read deadline */
    atomic_long bytes;    /* bytes echoed */
};

/* A connection's goroutine argument, malloc'd by the acceptor and owned
 * by the goroutine, which frees it. */
struct conn {
    int fd;
    struct server *s;
};

static void serve_conn(void *arg)
{
    struct conn c = *(struct conn *)arg;
    free(arg);
    char buf[4096]; /* on the goroutine's stack: 64 KiB unless set */
    for (;;) {
        /* conn.SetReadDeadline(time.Now().Add(idle)) */
        int err = gort_fd_deadline(c.fd, GORT_FD_READ,
                                   gort_deadline_in(IDLE_MS * MS));
        if (err < 0) {
            fail("read deadline", err);
            break;
        }
        long n = gort_read(c.fd, buf, sizeof buf);
        if (n == 0)
            break; /* io.EOF: the client closed */
        if (n == -ETIMEDOUT) {
            atomic_fetch_add(&c.s->idle, 1);
            break;
        }
        if (n < 0) {
            fail("read", (int)n);
            break;
        }
        err = gort_fd_deadline(c.fd, GORT_FD_WRITE,
                               gort_deadline_in(IDLE_MS * MS));
        if (err == 0)
            err = write_all(c.fd, buf, (size_t)n);
        if (err < 0) {
            fail("write", err);
            break;
        }
        atomic_fetch_add(&c.s->bytes, n);
    }
    int err = gort_close(c.fd);
    if (err < 0)
        fail("close", err);
}

static void acceptor(void *arg)
{
    struct server *s = arg;
    for (;;) {
        int fd = gort_accept(s->lfd, NULL, NULL);
        if (fd < 0) {
            s->accept_err = fd; /* -EBADF: the listener was closed */
            return;
        }
        struct conn *c = malloc(sizeof *c);
        int64_t id = -ENOMEM;
        if (c) {
            *c = (struct conn){fd, s};
            id = gort_waitgroup_go(&s->conns, serve_conn, c);
        }
        if (id < 0) { /* the goroutine never got c: it is ours to free */
            fail("serve", (int)id);
            free(c);
            gort_close(fd);
            continue;
        }
        atomic_fetch_add(&s->served, 1);
    }
}

/* ---------------------------------------------------------------------------
 * The clients.
 * ------------------------------------------------------------------------- */

struct client {
    const char *addr;
    int id;
    int lines; /* lines echoed back intact */
    int err;   /* 0, or why it stopped */
};

static void client(void *arg)
{
    struct client *cl = arg;
    int fd = gort_dial("tcp", cl->addr, gort_deadline_in(CLIENT_MS * MS));
    if (fd < 0) {
        cl->err = fd;
        return;
    }
    int err = gort_fd_deadline(fd, GORT_FD_READ | GORT_FD_WRITE,
                               gort_deadline_in(CLIENT_MS * MS));
    for (int i = 0; i < NLINES && err == 0; i++) {
        char line[64], back[64];
        int n = snprintf(line, sizeof line, "client %d line %d\n", cl->id, i);
        err = write_all(fd, line, (size_t)n);
        if (err == 0)
            err = read_full(fd, back, (size_t)n);
        if (err == 0 && memcmp(line, back, (size_t)n) != 0)
            err = -EPROTO;
        if (err == 0)
            cl->lines++;
    }
    int cerr = gort_close(fd);
    cl->err = err ? err : cerr;
}

/* Dials and sends nothing: the server's read deadline closes the
 * connection, which this client sees as the end of the stream. */
static void idle_client(void *arg)
{
    struct client *cl = arg;
    int fd = gort_dial("tcp", cl->addr, gort_deadline_in(CLIENT_MS * MS));
    if (fd < 0) {
        cl->err = fd;
        return;
    }
    char c;
    int err =
        gort_fd_deadline(fd, GORT_FD_READ, gort_deadline_in(CLIENT_MS * MS));
    long r = err < 0 ? err : gort_read(fd, &c, 1);
    if (r != 0) /* not the end of the stream: data, or an error */
        err = r < 0 ? (int)r : -EPROTO;
    int cerr = gort_close(fd);
    cl->err = err ? err : cerr;
}

/* ---------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------- */

static int app(void *arg)
{
    (void)arg;
    struct server s = {.conns = GORT_WAITGROUP_INIT};
    s.lfd = gort_listen("tcp", "127.0.0.1:0");
    if (s.lfd < 0) {
        fail("listen", s.lfd);
        return 1;
    }
    /* The port the kernel picked, for the clients. */
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    if (getsockname(s.lfd, (struct sockaddr *)&sa, &len) < 0) {
        fail("getsockname", -errno);
        gort_close(s.lfd);
        return 1;
    }
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));

    gort_waitgroup accepting = GORT_WAITGROUP_INIT;
    int64_t id = gort_waitgroup_go(&accepting, acceptor, &s);
    if (id < 0) {
        fail("start acceptor", (int)id);
        gort_close(s.lfd);
        return 1;
    }

    /* Each client gets its own element of clients: never the address of
     * the loop's variable, which the next round changes. */
    struct client clients[NCLIENTS + 1];
    gort_waitgroup done = GORT_WAITGROUP_INIT;
    int failed = 0;
    for (int i = 0; i <= NCLIENTS; i++) {
        clients[i] = (struct client){.addr = addr, .id = i};
        id = gort_waitgroup_go(&done, i < NCLIENTS ? client : idle_client,
                               &clients[i]);
        if (id < 0)
            clients[i].err = (int)id; /* reported below */
    }
    gort_waitgroup_wait(&done);

    /* Shut down: closing the listener wakes the acceptor, whose
     * gort_accept returns -EBADF; then wait for the connections. */
    int err = gort_close(s.lfd);
    if (err < 0) {
        fail("close listener", err);
        failed = 1;
    }
    gort_waitgroup_wait(&accepting);
    gort_waitgroup_wait(&s.conns);

    int lines = 0;
    for (int i = 0; i <= NCLIENTS; i++) {
        if (clients[i].err != 0) {
            fprintf(stderr, "echo: client %d: %s\n", i,
                    gort_strerror(clients[i].err));
            failed = 1;
        }
        if (i < NCLIENTS)
            lines += clients[i].lines;
    }
    if (s.accept_err != -EBADF) {
        fail("accept", s.accept_err);
        failed = 1;
    }
    if (failed || lines != NCLIENTS * NLINES || s.served != NCLIENTS + 1 ||
        s.idle != 1) {
        fprintf(stderr, "echo: %d lines, %d served, %d idle\n", lines,
                (int)s.served, (int)s.idle);
        return 1;
    }
    printf("echo: %d clients, %d lines echoed (%ld bytes), every echo "
           "matched\n",
           NCLIENTS, lines, (long)s.bytes);
    printf("echo: the idle client was closed at the server's read "
           "deadline\n");
    printf("echo: %d connections served, %d closed idle (%s)\n", (int)s.served,
           (int)s.idle, gort_strerror(-ETIMEDOUT));
    printf("echo: the acceptor stopped: %s\n", gort_strerror(s.accept_err));
    return 0;
}

int main(void)
{
    int status = gort_run(app, NULL);
    if (status < 0) {
        fprintf(stderr, "echo: gort_run: %s\n", gort_strerror(status));
        return 1;
    }
    return status;
}
