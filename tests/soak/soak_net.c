/* SPDX-License-Identifier: MIT */
/*
 * soak_net.c - the network poller under the soak, over loopback.
 *
 *   server    accepts on a listening socket and starts a goroutine per
 *             connection that answers each request: a header and up to
 *             64 KiB of payload, answered with the header and the payload
 *             transformed (each byte xor-ed with the sequence number plus
 *             its offset), after a delay when the request asks for one
 *   client    request/reply on connections it reopens every 1-50
 *             requests (then half the time shutting its side first and
 *             waiting for the server's end of file), with read and write
 *             deadlines the stall time ahead: every reply checked byte
 *             for byte
 *   deadline  requests the server answers 20-60 ms late with a read
 *             deadline of 1-10 ms: the read must fail with -ETIMEDOUT, not
 *             before the deadline (lateness recorded); then either the
 *             deadline is cleared and the late reply read, or the
 *             connection is dropped with the reply in flight
 *   udp       datagrams of 1-1400 bytes to an echo goroutine with
 *             gort_sendto / gort_recvfrom, under a read deadline; an empty
 *             datagram ends the echo
 *
 * The server accepts under a read deadline 100 ms ahead, renewed each
 * time it passes, and stops once every client and deadline worker has
 * returned (net.dialers): a connection it never accepted would be reset
 * when the listener closes.  Then it waits for its connection goroutines,
 * which end when their clients close.
 */
#include "soak.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define NET_MAX_PAYLOAD (64 * 1024)
#define NET_ASK 0x534f414bU   /* "SOAK": a request */
#define NET_ANSWER 0x414e5357U /* "ANSW": a reply */
#define NET_SLOW 1U            /* flags: wait delay_us before answering */

struct net_hdr {
    uint32_t magic;
    uint32_t len;      /* payload bytes */
    uint64_t seq;
    uint32_t flags;
    uint32_t delay_us;
};

static struct {
    int lfd;                   /* the listening socket */
    struct sockaddr_in addr;   /* its address */
    struct soak_worker *server; /* counts the requests answered */
    gort_waitgroup conns;      /* connection goroutines */
    int dialers;               /* client and deadline workers not yet
                                  returned: set by init, decremented with
                                  release by each, loaded with acquire by
                                  the server */
} net = {.lfd = -1};

/* The byte at offset i of the reply to request seq, for request byte b. */
static unsigned char net_xform(unsigned char b, uint64_t seq, size_t i)
{
    return (unsigned char)(b ^ (unsigned char)(seq + i));
}

/* Read exactly n bytes; returns n, 0 at end of file before any byte, or a
 * negative errno (-EPIPE for end of file in the middle). */
static long read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        long r = gort_read(fd, (char *)buf + got, n - got);
        if (r < 0)
            return r;
        if (r == 0)
            return got == 0 ? 0 : -EPIPE;
        got += (size_t)r;
    }
    return (long)n;
}

/* Header and payload in one gort_writev, the rest (if it wrote less) with
 * gort_write, which writes everything.  Returns 0 or a negative errno. */
static long write_msg(int fd, const struct net_hdr *h, const void *payload)
{
    struct iovec iov[2] = {{(void *)h, sizeof *h},
                           {(void *)payload, h->len}};
    long r = gort_writev(fd, iov, 2);
    if (r < 0)
        return r;
    size_t done = (size_t)r, total = sizeof *h + h->len;
    if (done < sizeof *h) {
        r = gort_write(fd, (const char *)h + done, sizeof *h - done);
        if (r < 0)
            return r;
        done = sizeof *h;
    }
    if (done < total) {
        r = gort_write(fd, (const char *)payload + (done - sizeof *h),
                       total - done);
        if (r < 0)
            return r;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * server
 * ------------------------------------------------------------------------- */

void soak_net_init(void)
{
    net.dialers = soak_workers_of(soak_client) + soak_workers_of(soak_deadline);
    net.lfd = gort_socket(AF_INET, SOCK_STREAM, 0);
    if (net.lfd < 0)
        soak_fail(NULL, "gort_socket returned %d", net.lfd);
    int one = 1;
    setsockopt(net.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    net.addr.sin_family = AF_INET;
    net.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof net.addr;
    if (bind(net.lfd, (struct sockaddr *)&net.addr, sizeof net.addr) != 0 ||
        getsockname(net.lfd, (struct sockaddr *)&net.addr, &len) != 0 ||
        listen(net.lfd, 256) != 0)
        soak_fail(NULL, "listening on loopback: %s", strerror(errno));
}

/* A client or deadline worker is done dialing: its last connection is
 * closed. */
static void net_dialer_done(void)
{
    /* Release: the server's acquire load sees our close before zero. */
    __atomic_sub_fetch(&net.dialers, 1, __ATOMIC_RELEASE);
}

/* Answer one request; false when the connection is over. */
static bool net_answer(int fd, unsigned char *buf)
{
    struct net_hdr h;
    long r = read_full(fd, &h, sizeof h);
    if (r == 0 || r == -ECONNRESET)
        return false; /* closed, or dropped by the deadline worker */
    if (r < 0 || h.magic != NET_ASK || h.len > NET_MAX_PAYLOAD)
        soak_fail(net.server, "server read a header: %ld, magic %#x, len %u",
                  r, h.magic, h.len);
    r = read_full(fd, buf, h.len);
    if (r == -ECONNRESET || r == -EPIPE)
        return false;
    if (r != (long)h.len)
        soak_fail(net.server, "server read %u payload bytes: %ld", h.len, r);
    if (h.flags & NET_SLOW)
        gort_sleep((int64_t)h.delay_us * SOAK_US);
    for (size_t i = 0; i < h.len; i++)
        buf[i] = net_xform(buf[i], h.seq, i);
    h.magic = NET_ANSWER;
    r = write_msg(fd, &h, buf);
    if (r == -EPIPE || r == -ECONNRESET)
        return false; /* the deadline worker dropped the connection */
    if (r != 0)
        soak_fail(net.server, "server writing a reply: %ld", r);
    soak_progress(net.server);
    return true;
}

static void net_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    unsigned char *buf = soak_alloc(net.server, NET_MAX_PAYLOAD);
    while (net_answer(fd, buf))
        ;
    free(buf);
    int r = gort_close(fd);
    if (r != 0)
        soak_fail(net.server, "gort_close of a served connection: %d", r);
    gort_waitgroup_done(&net.conns);
}

void soak_server(struct soak_worker *w)
{
    net.server = w;
    for (;;) {
        SOAK_OK(w, gort_fd_set_deadline(net.lfd, 'r',
                                        gort_nanotime() + 100 * SOAK_MS));
        int fd = gort_accept(net.lfd, NULL, NULL);
        if (fd == -ETIMEDOUT) {
            if (__atomic_load_n(&net.dialers, __ATOMIC_ACQUIRE) == 0)
                break;
            continue;
        }
        if (fd < 0)
            soak_fail(w, "gort_accept returned %d", fd);
        gort_waitgroup_add(&net.conns, 1);
        soak_go(w, net_conn, (void *)(intptr_t)fd);
    }
    gort_waitgroup_wait(&net.conns);
    SOAK_OK(w, gort_close(net.lfd));
}

/* ---------------------------------------------------------------------------
 * Clients
 * ------------------------------------------------------------------------- */

/* A connection to the server. */
static int net_dial(struct soak_worker *w)
{
    int fd = gort_socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        soak_fail(w, "gort_socket returned %d", fd);
    int r = gort_connect(fd, (struct sockaddr *)&net.addr, sizeof net.addr,
                         soak_patience());
    if (r != 0)
        soak_fail(w, "gort_connect returned %d", r);
    return fd;
}

/* Payload sizes: mostly small, some up to the maximum. */
static uint32_t net_size(struct soak_worker *w)
{
    uint64_t r = soak_rand(w) % 100;
    if (r < 50)
        return (uint32_t)soak_between(w, 0, 256);
    if (r < 85)
        return (uint32_t)soak_between(w, 257, 8192);
    return (uint32_t)soak_between(w, 8193, NET_MAX_PAYLOAD);
}

/* Read the reply to h into in and check it against out. */
static void net_check_reply(struct soak_worker *w, int fd,
                            const struct net_hdr *h, const unsigned char *out,
                            unsigned char *in)
{
    struct net_hdr rh;
    long r = read_full(fd, &rh, sizeof rh);
    if (r != sizeof rh || rh.magic != NET_ANSWER || rh.seq != h->seq ||
        rh.len != h->len)
        soak_fail(w, "reply header to request %llu (%u bytes): read %ld, "
                     "magic %#x, seq %llu, len %u",
                  (unsigned long long)h->seq, h->len, r, rh.magic,
                  (unsigned long long)rh.seq, rh.len);
    r = read_full(fd, in, h->len);
    if (r != (long)h->len)
        soak_fail(w, "reply payload to request %llu: read %ld of %u bytes",
                  (unsigned long long)h->seq, r, h->len);
    for (size_t i = 0; i < h->len; i++)
        if (in[i] != net_xform(out[i], h->seq, i))
            soak_fail(w, "reply to request %llu: byte %zu of %u is %#x, want "
                         "%#x",
                      (unsigned long long)h->seq, i, h->len, in[i],
                      net_xform(out[i], h->seq, i));
    soak_count(&soak_stats.net_bytes, h->len);
}

/* One request and its reply under deadlines of the stall time. */
static void net_exchange(struct soak_worker *w, int fd, uint64_t seq,
                         unsigned char *out, unsigned char *in)
{
    struct net_hdr h = {NET_ASK, net_size(w), seq, 0, 0};
    for (size_t i = 0; i < h.len; i++)
        out[i] = (unsigned char)soak_rand(w);
    SOAK_OK(w, gort_fd_set_deadline(fd, 'r' + 'w',
                                    gort_nanotime() + soak_patience()));
    long r = write_msg(fd, &h, out);
    if (r != 0)
        soak_fail(w, "writing request %llu (%u bytes): %ld",
                  (unsigned long long)seq, h.len, r);
    net_check_reply(w, fd, &h, out, in);
}

/* End a connection: half the time shut our side and wait for the
 * server's end of file first. */
static void net_hangup(struct soak_worker *w, int fd)
{
    if (soak_one_in(w, 2)) {
        SOAK_OK(w, gort_shutdown(fd, SHUT_WR));
        char c;
        long r = gort_read(fd, &c, 1);
        if (r != 0)
            soak_fail(w, "read after shutdown returned %ld, want end of file",
                      r);
    }
    SOAK_OK(w, gort_close(fd));
}

void soak_client(struct soak_worker *w)
{
    unsigned char *out = soak_alloc(w, NET_MAX_PAYLOAD);
    unsigned char *in = soak_alloc(w, NET_MAX_PAYLOAD);
    int fd = -1, left = 0;
    for (uint64_t seq = 1; soak_running(); seq++) {
        if (fd < 0) {
            fd = net_dial(w);
            left = (int)soak_between(w, 1, 50);
        }
        net_exchange(w, fd, seq, out, in);
        if (--left == 0) {
            net_hangup(w, fd);
            fd = -1;
        }
        soak_progress(w);
    }
    if (fd >= 0)
        net_hangup(w, fd);
    net_dialer_done();
    free(out);
    free(in);
}

/* ---------------------------------------------------------------------------
 * deadline
 * ------------------------------------------------------------------------- */

/*
 * The read waiting under the deadline got the reply's first byte c after
 * the deadline had passed, `late` ns after it: the deadline's timer ran
 * later than the reply came.  That is counted (the summary reports it;
 * gort.h promises -ETIMEDOUT to a call still waiting when the deadline
 * passes), and the reply is still checked.
 */
static bool net_deadline_missed(struct soak_worker *w, int fd,
                                const struct net_hdr *h, char c,
                                int64_t late, unsigned char *out,
                                unsigned char *in)
{
    soak_count(&soak_stats.deadline_missed, 1);
    soak_max(&soak_stats.deadline_missed_max, late);
    struct net_hdr rh;
    memcpy(&rh, &c, 1);
    SOAK_OK(w, gort_fd_set_deadline(fd, 'r',
                                    gort_nanotime() + soak_patience()));
    long r = read_full(fd, (char *)&rh + 1, sizeof rh - 1);
    if (r != sizeof rh - 1 || rh.magic != NET_ANSWER || rh.seq != h->seq ||
        rh.len != h->len)
        soak_fail(w, "reply to slow request %llu: read %ld, magic %#x",
                  (unsigned long long)h->seq, r, rh.magic);
    r = read_full(fd, in, h->len);
    if (r != (long)h->len)
        soak_fail(w, "reply payload to slow request %llu: read %ld of %u",
                  (unsigned long long)h->seq, r, h->len);
    for (size_t i = 0; i < h->len; i++)
        if (in[i] != net_xform(out[i], h->seq, i))
            soak_fail(w, "reply to slow request %llu differs at byte %zu",
                      (unsigned long long)h->seq, i);
    return true;
}

/* A slow request under a short read deadline: -ETIMEDOUT, not early.
 * Returns false when the connection must be dropped. */
static bool net_timeout_round(struct soak_worker *w, int fd, uint64_t seq,
                              unsigned char *out, unsigned char *in)
{
    struct net_hdr h = {NET_ASK, (uint32_t)soak_between(w, 0, 512), seq,
                        NET_SLOW, (uint32_t)soak_between(w, 20000, 60000)};
    memset(out, (int)seq, h.len);
    SOAK_OK(w, gort_fd_set_deadline(fd, 'w',
                                    gort_nanotime() + soak_patience()));
    long r = write_msg(fd, &h, out);
    if (r != 0)
        soak_fail(w, "writing a slow request: %ld", r);
    int64_t deadline = gort_nanotime() + soak_between(w, SOAK_MS, 10 * SOAK_MS);
    SOAK_OK(w, gort_fd_set_deadline(fd, 'r', deadline));
    char c;
    r = gort_read(fd, &c, 1);
    int64_t now = gort_nanotime();
    if (r == 1 && now >= deadline)
        return net_deadline_missed(w, fd, &h, c, now - deadline, out, in);
    if (r != -ETIMEDOUT || now < deadline)
        soak_fail(w, "read under a deadline %lld ns ahead returned %ld %lld "
                     "ns after it (the server answers after %u us)",
                  (long long)(deadline - now), r,
                  (long long)(now - deadline), h.delay_us);
    soak_lat_add(&soak_stats.deadline, now - deadline);
    soak_count(&soak_stats.net_timeouts, 1);
    if (soak_one_in(w, 2))
        return false; /* drop it with the reply in flight */
    /* A later deadline re-arms the reads: the late reply arrives. */
    SOAK_OK(w, gort_fd_set_deadline(fd, 'r',
                                    gort_nanotime() + soak_patience()));
    net_check_reply(w, fd, &h, out, in);
    return true;
}

void soak_deadline(struct soak_worker *w)
{
    unsigned char *out = soak_alloc(w, NET_MAX_PAYLOAD);
    unsigned char *in = soak_alloc(w, NET_MAX_PAYLOAD);
    int fd = -1;
    for (uint64_t seq = 1; soak_running(); seq++) {
        if (fd < 0)
            fd = net_dial(w);
        bool keep = true;
        if (soak_one_in(w, 3))
            net_exchange(w, fd, seq, out, in);
        else
            keep = net_timeout_round(w, fd, seq, out, in);
        if (!keep) {
            SOAK_OK(w, gort_close(fd));
            fd = -1;
        }
        soak_progress(w);
    }
    if (fd >= 0)
        SOAK_OK(w, gort_close(fd));
    net_dialer_done();
    free(out);
    free(in);
}

/* ---------------------------------------------------------------------------
 * udp
 * ------------------------------------------------------------------------- */

#define UDP_MAX 1400

struct udp_echo {
    struct soak_worker *w;
    int fd;
    gort_waitgroup done;
};

/* Sends every datagram back reversed, until an empty one comes. */
static void udp_echo(void *arg)
{
    struct udp_echo *e = arg;
    unsigned char buf[UDP_MAX], back[UDP_MAX];
    for (;;) {
        struct sockaddr_in from;
        unsigned fromlen = sizeof from;
        long n = gort_recvfrom(e->fd, buf, sizeof buf, 0,
                               (struct sockaddr *)&from, &fromlen);
        if (n == 0)
            break;
        if (n < 0)
            soak_fail(e->w, "echo gort_recvfrom returned %ld", n);
        for (long i = 0; i < n; i++)
            back[i] = buf[n - 1 - i];
        long r = gort_sendto(e->fd, back, (size_t)n, 0,
                             (struct sockaddr *)&from, fromlen);
        if (r != n)
            soak_fail(e->w, "echo gort_sendto of %ld bytes returned %ld", n,
                      r);
    }
    gort_waitgroup_done(&e->done);
}

static int udp_bound(struct soak_worker *w, struct sockaddr_in *addr)
{
    int fd = gort_socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        soak_fail(w, "gort_socket(SOCK_DGRAM) returned %d", fd);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    if (bind(fd, (struct sockaddr *)addr, sizeof *addr) != 0 ||
        getsockname(fd, (struct sockaddr *)addr, &len) != 0)
        soak_fail(w, "binding a datagram socket: %s", strerror(errno));
    return fd;
}

/* One datagram there and back. */
static void udp_round(struct soak_worker *w, int fd,
                      const struct sockaddr_in *to, unsigned char *out,
                      unsigned char *in)
{
    size_t n = (size_t)soak_between(w, 1, UDP_MAX);
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)soak_rand(w);
    long r = gort_sendto(fd, out, n, 0, (const struct sockaddr *)to,
                         sizeof *to);
    if (r != (long)n)
        soak_fail(w, "gort_sendto of %zu bytes returned %ld", n, r);
    SOAK_OK(w, gort_fd_set_deadline(fd, 'r',
                                    gort_nanotime() + soak_patience()));
    r = gort_recvfrom(fd, in, UDP_MAX, 0, NULL, NULL);
    if (r != (long)n)
        soak_fail(w, "gort_recvfrom of the %zu-byte echo returned %ld", n, r);
    for (size_t i = 0; i < n; i++)
        if (in[i] != out[n - 1 - i])
            soak_fail(w, "echoed datagram of %zu bytes differs at %zu", n, i);
    soak_count(&soak_stats.net_bytes, n);
}

void soak_udp(struct soak_worker *w)
{
    struct sockaddr_in echo_addr, mine;
    struct udp_echo e = {.w = w};
    e.fd = udp_bound(w, &echo_addr);
    int fd = udp_bound(w, &mine);
    unsigned char *out = soak_alloc(w, UDP_MAX), *in = soak_alloc(w, UDP_MAX);
    gort_waitgroup_add(&e.done, 1);
    soak_go(w, udp_echo, &e);
    while (soak_running()) {
        udp_round(w, fd, &echo_addr, out, in);
        soak_progress(w);
    }
    if (gort_sendto(fd, out, 0, 0, (struct sockaddr *)&echo_addr,
                    sizeof echo_addr) != 0)
        soak_fail(w, "gort_sendto of the empty datagram failed");
    gort_waitgroup_wait(&e.done);
    SOAK_OK(w, gort_close(e.fd));
    SOAK_OK(w, gort_close(fd));
    free(out);
    free(in);
}
