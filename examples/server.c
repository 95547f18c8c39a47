/* SPDX-License-Identifier: MIT */
/*
 * server.c - the example servers' shared scaffolding (server.h).
 *
 * Shutdown: the main goroutine waits for SIGINT/SIGTERM on a channel
 * (gort_signal_notify, Go's signal.Notify), closes the
 * listener, which ends the acceptor, and shuts every open connection down
 * (shutdown(2)), which wakes its goroutine: a read returns end of file, a
 * write fails.  Each connection's goroutine closes its own descriptor when
 * serve returns, so a descriptor number is never closed, and perhaps
 * reused, under a goroutine that still uses it (a server may call the
 * socket directly, as kv's send(2) does).  main returns once every
 * connection is done.  A write to a connection the client closed fails with -EPIPE
 * (gort's write calls do not raise SIGPIPE, as in Go) and ends that
 * connection only.
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct server *srv;
static const char *addr;
static int procs;
static int64_t idle_ns = 60LL * 1000 * 1000 * 1000;

static int lfd = -1;
static gort_mutex conns_mu;
static int *conns;          /* open connection fds; under conns_mu */
static int nconns, capconns;
static int stopping;        /* under conns_mu */
static gort_waitgroup conns_wg;

long server_read(int fd, void *buf, size_t n)
{
    gort_fd_set_deadline(fd, 'r', gort_nanotime() + idle_ns);
    return gort_read(fd, buf, n);
}

long server_write(int fd, const void *buf, size_t n)
{
    gort_fd_set_deadline(fd, 'w', gort_nanotime() + idle_ns);
    return gort_write(fd, buf, n);
}

const char *server_peer(int fd, char *buf, size_t n)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    char host[INET_ADDRSTRLEN];
    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0 ||
        sa.sin_family != AF_INET ||
        !inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host))
        return "?";
    snprintf(buf, n, "%s:%d", host, ntohs(sa.sin_port));
    return buf;
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
    const char *colon = strrchr(s, ':');
    if (!colon)
        return -1;
    char host[256];
    size_t hl = (size_t)(colon - s);
    if (hl >= sizeof host)
        return -1;
    memcpy(host, s, hl);
    host[hl] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == 0 || *end || port < 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (hl == 0 || !strcmp(host, "0.0.0.0"))
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (!strcmp(host, "localhost"))
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return -1;
    return 0;
}

/* Add fd to the open set (false when stopping or out of memory), or
 * remove it. */
static bool track(int fd, bool add)
{
    gort_mutex_lock(&conns_mu);
    bool ok = true;
    if (add && stopping) {
        ok = false;
    } else if (add) {
        if (nconns == capconns) {
            int cap = capconns ? capconns * 2 : 256;
            int *n = realloc(conns, (size_t)cap * sizeof *n);
            if (n) {
                conns = n;
                capconns = cap;
            }
        }
        if (nconns < capconns)
            conns[nconns++] = fd;
        else
            ok = false;
    } else {
        for (int i = 0; i < nconns; i++)
            if (conns[i] == fd) {
                conns[i] = conns[--nconns];
                break;
            }
    }
    gort_mutex_unlock(&conns_mu);
    return ok;
}

static void conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    srv->serve(fd);
    /* Out of the open set first: the stopper shuts down only what is in
     * it, so it never touches a closed (or reused) descriptor number. */
    track(fd, false);
    gort_close(fd);
    gort_waitgroup_done(&conns_wg);
}

static void acceptor(void *arg)
{
    (void)arg;
    int64_t backoff_ns = 0;
    for (;;) {
        int fd = gort_accept(lfd, NULL, NULL);
        if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS ||
            fd == -ENOMEM) {
            /* Out of descriptors or memory: wait for connections to
             * close instead of spinning on accept. */
            backoff_ns = backoff_ns ? backoff_ns * 2 : 5 * 1000 * 1000;
            if (backoff_ns > 1000 * 1000 * 1000)
                backoff_ns = 1000 * 1000 * 1000;
            fprintf(stderr, "%s: accept: %s; retrying in %lld ms\n",
                    srv->name, strerror(-fd),
                    (long long)(backoff_ns / 1000000));
            gort_sleep(backoff_ns);
            continue;
        }
        if (fd < 0)
            return; /* the listener was closed: shutting down */
        backoff_ns = 0;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        gort_waitgroup_add(&conns_wg, 1);
        if (!track(fd, true) || gort_go(conn, (void *)(intptr_t)fd) < 0) {
            track(fd, false);
            gort_close(fd);
            gort_waitgroup_done(&conns_wg);
        }
    }
}

static gort_chan *sigch;

/* From now on SIGINT and SIGTERM go to sigch, which has room for one, so
 * that a signal is kept until wait_signal takes it (Go's
 * make(chan os.Signal, 1) and signal.Notify).  Before the server listens:
 * a client that sees it listening may stop it at once.  sigch stays NULL
 * when this fails. */
static void notify_signals(void)
{
    gort_chan *ch;
    if (gort_chan_make(&ch, sizeof(int), 1) != 0)
        return;
    if (GORT_SIGNAL_NOTIFY(ch, SIGINT, SIGTERM) != 0) {
        gort_chan_free(ch);
        return;
    }
    sigch = ch;
}

/* Wait for SIGINT or SIGTERM: the signal, or -1 when none can come. */
static int wait_signal(void)
{
    if (!sigch)
        return -1;
    int sig = -1;
    gort_chan_recv(sigch, &sig);
    /* A second SIGINT or SIGTERM ends the process while it shuts down. */
    gort_signal_stop(sigch);
    gort_chan_free(sigch);
    sigch = NULL;
    return sig;
}

static int run_status;

static void server_goroutine(void *arg)
{
    (void)arg;
    notify_signals();
    if (procs > 0)
        gort_gomaxprocs(procs);
    struct sockaddr_in sa;
    if (parse_addr(addr, &sa) != 0) {
        fprintf(stderr, "%s: bad -addr '%s': expected HOST:PORT, e.g. %s\n",
                srv->name, addr, srv->default_addr);
        run_status = 2;
        return;
    }
    lfd = gort_socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    if (lfd < 0 ||
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(lfd, 4096) < 0) {
        fprintf(stderr, "%s: cannot listen on %s: %s\n", srv->name, addr,
                strerror(lfd < 0 ? -lfd : errno));
        run_status = 1;
        return;
    }
    socklen_t len = sizeof sa;
    getsockname(lfd, (struct sockaddr *)&sa, &len);
    char host[64];
    inet_ntop(AF_INET, &sa.sin_addr, host, sizeof host);
    printf("%s: listening on %s:%d (GOMAXPROCS %d)\n", srv->name, host,
           ntohs(sa.sin_port), gort_gomaxprocs(0));
    fflush(stdout);
    gort_go(acceptor, NULL);
    int sig = wait_signal();
    fprintf(stderr, "%s: %s, shutting down\n", srv->name,
            sig > 0 ? strsignal(sig) : "signal wait failed");
    gort_close(lfd); /* the acceptor returns */
    gort_mutex_lock(&conns_mu);
    stopping = 1;
    for (int i = 0; i < nconns; i++)
        gort_shutdown(conns[i], SHUT_RDWR); /* parked calls wake and fail */
    gort_mutex_unlock(&conns_mu);
    gort_waitgroup_wait(&conns_wg);
    free(conns);
}

static void usage(const struct server *s)
{
    fprintf(stderr, "usage: %s [-addr HOST:PORT] [-procs N] [-idle SECONDS]",
            s->name);
    for (const struct server_flag *f = s->flags; f && f->name; f++)
        fprintf(stderr, " [%s %s]", f->name, f->value);
    fputc('\n', stderr);
}

/* The server's own flag named arg, or NULL. */
static const struct server_flag *own_flag(const struct server *s,
                                          const char *arg)
{
    for (const struct server_flag *f = s->flags; f && f->name; f++)
        if (!strcmp(arg, f->name))
            return f;
    return NULL;
}

int server_main(const struct server *s, int argc, char **argv)
{
    srv = s;
    addr = s->default_addr;
    const struct server_flag *f;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-addr") && i + 1 < argc) {
            addr = argv[++i];
        } else if (!strcmp(argv[i], "-procs") && i + 1 < argc) {
            procs = atoi(argv[++i]);
            if (procs < 1) {
                fprintf(stderr, "%s: -procs wants a number >= 1\n", s->name);
                return 2;
            }
        } else if (!strcmp(argv[i], "-idle") && i + 1 < argc) {
            double sec = atof(argv[++i]);
            if (sec <= 0) {
                fprintf(stderr, "%s: -idle wants seconds > 0\n", s->name);
                return 2;
            }
            idle_ns = (int64_t)(sec * 1e9);
        } else if ((f = own_flag(s, argv[i])) && i + 1 < argc) {
            if (!f->set(argv[++i])) {
                fprintf(stderr, "%s: %s wants %s\n", s->name, f->name,
                        f->want);
                return 2;
            }
        } else {
            usage(s);
            return 2;
        }
    }
    int r = gort_main(server_goroutine, NULL);
    if (r < 0) {
        fprintf(stderr, "%s: gort_main: %s\n", s->name, strerror(-r));
        return 1;
    }
    return run_status;
}
