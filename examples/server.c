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

/* fd's own address (peer false) or its peer's as "HOST:PORT", an IPv6
 * host in brackets, an IPv4 address that a dual-stack socket shows
 * mapped into IPv6 as IPv4 (Go's form); "?" when it is not known. */
static const char *sock_text(int fd, bool peer, char *buf, size_t n)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if ((peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
              : getsockname(fd, (struct sockaddr *)&ss, &len)) != 0)
        return "?";
    int family = ss.ss_family;
    const unsigned char *ip;
    unsigned port;
    if (family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        ip = (const unsigned char *)&sin->sin_addr;
        port = ntohs(sin->sin_port);
    } else if (family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        ip = sin6->sin6_addr.s6_addr;
        port = ntohs(sin6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            family = AF_INET;
            ip += 12;
        }
    } else {
        return "?";
    }
    char host[INET6_ADDRSTRLEN], ps[8];
    if (!inet_ntop(family, ip, host, sizeof host))
        return "?";
    snprintf(ps, sizeof ps, "%u", port);
    return gort_join_host_port(host, ps, buf, n) < 0 ? "?" : buf;
}

const char *server_peer(int fd, char *buf, size_t n)
{
    return sock_text(fd, true, buf, n);
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
    /* HOST:PORT as Go reads it: [::1]:PORT, :PORT on every address of
     * both IP versions, a host name. */
    lfd = gort_listen("tcp", addr);
    if (lfd == -EINVAL) {
        fprintf(stderr,
                "%s: bad -addr '%s': expected HOST:PORT, e.g. %s or "
                "[::1]:PORT\n",
                srv->name, addr, srv->default_addr);
        run_status = 2;
        return;
    }
    if (lfd < 0) {
        fprintf(stderr, "%s: cannot listen on %s: %s\n", srv->name, addr,
                gort_strerror(lfd));
        run_status = 1;
        return;
    }
    char where[64];
    printf("%s: listening on %s (GOMAXPROCS %d)\n", srv->name,
           sock_text(lfd, false, where, sizeof where), gort_gomaxprocs(0));
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
