/* SPDX-License-Identifier: MIT */
/*
 * tcp_echo - a TCP echo server, one goroutine per connection, and its
 * clients, in one process over loopback.
 *
 * The main goroutine listens on 127.0.0.1 (a free port) and starts an
 * accept loop that runs one echo goroutine per accepted connection (read
 * up to 16 KiB, write it all back, until EOF).  It then starts 50 client
 * goroutines; each connects, and for SIZE seconds (default 5) sends a
 * 64-byte message, reads the 64-byte echo back in full and records the
 * round-trip time.  When its time is up a client closes its connection.
 *
 * Figures (both on the one row):
 *   requests_per_s  round trips completed by all clients / wall time
 *   latency_p99     99th percentile of every round trip's time, in us
 *
 * The row is procs=2, so -procs defaults to 2 here, not to all CPUs.
 *
 * Go peer: bench/go/tcp_echo (net.Listen, a goroutine per conn, net.Dial).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "bench.h"

#define CLIENTS 50
#define MSG 64

static struct bench_opts opt;
static struct sockaddr_in srv_addr;
static gort_waitgroup clients_done = GORT_WAITGROUP_INIT;
static int64_t deadline_ns; /* bench_now_ns() at which clients stop */

struct client {
    int64_t *lat;   /* round-trip times, ns */
    size_t n, cap;
    int failed;
};
static struct client cl[CLIENTS];

static _Noreturn void fail(const char *what, long err)
{
    fprintf(stderr, "tcp_echo: %s: %s\n", what, strerror((int)-err));
    exit(1);
}

static void echo_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];

    for (;;) {
        long n = gort_read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        if (gort_write(fd, buf, (size_t)n) != n)
            break;
    }
    gort_close(fd);
}

static void accept_loop(void *arg)
{
    int lfd = (int)(intptr_t)arg, one = 1;

    for (;;) {
        int fd = gort_accept(lfd, NULL, NULL);
        if (fd < 0)
            fail("accept", fd);
        /* Go's net package sets TCP_NODELAY on every TCP connection. */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        gort_go(echo_conn, (void *)(intptr_t)fd);
    }
}

static void client(void *arg)
{
    struct client *c = arg;
    char msg[MSG], back[MSG];
    int one = 1;
    int fd = gort_socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        fail("socket", fd);
    long r = gort_connect(fd, (struct sockaddr *)&srv_addr, sizeof srv_addr, 0);
    if (r < 0)
        fail("connect", r);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    memset(msg, 'x', sizeof msg);
    for (;;) {
        int64_t t0 = bench_now_ns();
        if (t0 >= deadline_ns)
            break;
        r = gort_write(fd, msg, sizeof msg);
        if (r != MSG) {
            c->failed = 1;
            break;
        }
        size_t got = 0;
        while (got < MSG) {
            r = gort_read(fd, back + got, MSG - got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got < MSG) {
            c->failed = 1;
            break;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 4096;
            c->lat = realloc(c->lat, c->cap * sizeof *c->lat);
            if (c->lat == NULL) {
                fprintf(stderr, "tcp_echo: out of memory\n");
                exit(1);
            }
        }
        c->lat[c->n++] = bench_now_ns() - t0;
    }
    gort_close(fd);
    gort_waitgroup_done(&clients_done);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void main_g(void *arg)
{
    int lfd, one = 1;
    socklen_t alen = sizeof srv_addr;
    long r;

    (void)arg;
    bench_set_procs(&opt);
    if ((lfd = gort_socket(AF_INET, SOCK_STREAM, 0)) < 0)
        fail("socket", lfd);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    srv_addr.sin_family = AF_INET;
    srv_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    srv_addr.sin_port = 0;
    if (bind(lfd, (struct sockaddr *)&srv_addr, sizeof srv_addr) < 0 ||
        listen(lfd, 1024) < 0 ||
        getsockname(lfd, (struct sockaddr *)&srv_addr, &alen) < 0)
        fail("listen", -errno);
    gort_go(accept_loop, (void *)(intptr_t)lfd);

    int64_t t0 = bench_now_ns();
    deadline_ns = t0 + opt.n * 1000000000;
    gort_waitgroup_add(&clients_done, CLIENTS);
    for (int i = 0; i < CLIENTS; i++)
        gort_go(client, &cl[i]);
    gort_waitgroup_wait(&clients_done);
    int64_t elapsed = bench_now_ns() - t0;

    size_t total = 0;
    for (int i = 0; i < CLIENTS; i++) {
        if (cl[i].failed) {
            fprintf(stderr, "tcp_echo: client %d: connection failed\n", i);
            exit(1);
        }
        total += cl[i].n;
    }
    if (total == 0) {
        fprintf(stderr, "tcp_echo: no round trip completed\n");
        exit(1);
    }
    int64_t *all = malloc(total * sizeof *all);
    size_t k = 0;
    if (all == NULL) {
        fprintf(stderr, "tcp_echo: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < CLIENTS; i++) {
        memcpy(all + k, cl[i].lat, cl[i].n * sizeof *all);
        k += cl[i].n;
    }
    qsort(all, total, sizeof *all, cmp_i64);
    size_t idx = (total * 99 + 99) / 100 - 1; /* nearest rank */
    (void)r;
    /* The shape of the distribution, for the log (not a figure). */
    fprintf(stderr, "tcp_echo: %zu round trips; us: p50 %.1f p90 %.1f "
            "p99 %.1f p99.9 %.1f max %.1f\n", total,
            (double)all[total / 2] / 1e3, (double)all[total * 9 / 10] / 1e3,
            (double)all[idx] / 1e3, (double)all[total * 999 / 1000] / 1e3,
            (double)all[total - 1] / 1e3);
    bench_result(&opt, "requests_per_s", (double)total * 1e9 / (double)elapsed,
                 "req/s");
    bench_result(&opt, "latency_p99", (double)all[idx] / 1e3, "us");
    exit(0);
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "tcp_echo", 2, 5);
    return bench_run(&opt, main_g, NULL);
}
