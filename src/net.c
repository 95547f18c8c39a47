/* SPDX-License-Identifier: MIT */
/*
 * net.c - listening and dialing by network name and address string
 * (gort.h, "Networks"): gort_split_host_port and gort_join_host_port
 * (Go's net.SplitHostPort and JoinHostPort), gort_listen (net.Listen and
 * net.ListenPacket) and gort_dial (net.Dial with a deadline).  Mirrors
 * net/ipsock.go (the address syntax and the resolution to a list),
 * net/ipsock_posix.go's favoriteAddrFamily (which socket family a
 * listener gets), net/dial.go's dialSerial and partialDeadline, and
 * net/tcpsock_posix.go's dialTCP (the self-connect retry), over fdio.c's
 * descriptor calls: every descriptor made here is gort_socket's,
 * non-blocking, close-on-exec and known to the poller.
 *
 * Resolution.  The port is a number, or a service name looked up with
 * getaddrinfo for the socket type (/etc/services).  The host is empty (a
 * listener's wildcard, a dialer's own machine), a numeric address
 * (getaddrinfo with AI_NUMERICHOST, answered at once) or a name
 * (gort_getaddrinfo, on a thread of its own).  A dial with a deadline
 * looks a name up in a goroutine of its own and waits for the answer
 * until the deadline; a lookup the deadline abandons finishes by itself
 * and frees what it found.  The list keeps the resolver's order (RFC 6724
 * for glibc); "tcp4" and "udp4" keep its IPv4 addresses, "tcp6" and
 * "udp6" its IPv6 ones, IPv4-mapped IPv6 addresses count as IPv4 (Go's
 * ipv4only and ipv6only).
 *
 * Dialing tries the addresses in order and returns the first connection,
 * or the first address's error.  A deadline is shared: each attempt gets
 * an equal part of what is left for the addresses still to try, but at
 * least 2 s (all of it, when less is left), so that a black-holed first
 * address does not take all the time (Go's partialDeadline).  Go races
 * IPv4 against IPv6 (dialParallel, RFC 6555) on top of that; gort does
 * not.
 */
#include "atomic.h"
#include "libc.h"
#include "san.h"
#include "sched.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

/* ---------------------------------------------------------------------------
 * Host and port syntax.
 * ------------------------------------------------------------------------- */

int gort_split_host_port(const char *hostport, char *host, size_t hostlen,
                         char *port, size_t portlen)
{
    if (!hostport)
        return -EINVAL;
    /* Go's SplitHostPort, step by step; each -EINVAL is one of its
     * AddrErrors. */
    const char *s = hostport;
    size_t n = strlen(s);
    /* The port starts after the last colon. */
    const char *colon = strrchr(s, ':');
    if (!colon)
        return -EINVAL; /* missing port in address */
    size_t i = (size_t)(colon - s), j = 0, k = 0;
    const char *h;
    size_t hl;
    if (s[0] == '[') {
        /* Expect the first ']' just before the last ':'. */
        const char *rb = strchr(s, ']');
        if (!rb)
            return -EINVAL; /* missing ']' in address */
        size_t end = (size_t)(rb - s);
        if (end + 1 != i)
            /* ']' last (missing port), followed by a colon that is not
             * the last one (too many colons), or by something else
             * (missing port). */
            return -EINVAL;
        h = s + 1;
        hl = end - 1;
        j = 1;       /* no '[' from here on, */
        k = end + 1; /* no ']' from here on */
    } else {
        h = s;
        hl = i;
        if (memchr(h, ':', hl))
            return -EINVAL; /* too many colons in address */
    }
    if (strchr(s + j, '['))
        return -EINVAL; /* unexpected '[' in address */
    if (strchr(s + k, ']'))
        return -EINVAL; /* unexpected ']' in address */
    size_t pl = n - i - 1;
    if ((host && hl >= hostlen) || (port && pl >= portlen))
        return -ERANGE;
    if (host) {
        memcpy(host, h, hl);
        host[hl] = '\0';
    }
    if (port)
        memcpy(port, colon + 1, pl + 1);
    return 0;
}

int gort_join_host_port(const char *host, const char *port, char *buf, size_t n)
{
    if (!host || !port || (!buf && n > 0))
        return -EINVAL;
    /* A host with a colon is an IPv6 address: bracketed (Go). */
    bool br = strchr(host, ':') != NULL;
    size_t hl = strlen(host), pl = strlen(port);
    size_t len = hl + pl + 1 + (br ? 2 : 0);
    if (len >= n || len > INT32_MAX) {
        if (n > 0)
            buf[0] = '\0';
        return -ERANGE;
    }
    char *p = buf;
    if (br)
        *p++ = '[';
    memcpy(p, host, hl);
    p += hl;
    if (br)
        *p++ = ']';
    *p++ = ':';
    memcpy(p, port, pl + 1);
    return (int)len;
}

/* ---------------------------------------------------------------------------
 * Networks and addresses.
 * ------------------------------------------------------------------------- */

enum net_kind { NET_TCP, NET_UDP, NET_UNIX };

/* What a network name stands for. */
struct net {
    int kind;     /* enum net_kind */
    int family;   /* AF_INET, AF_INET6 or AF_UNIX; 0: either IP version */
    int socktype; /* SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET */
};

static const struct {
    const char *name;
    struct net net;
} networks[] = {
    {"tcp", {NET_TCP, 0, SOCK_STREAM}},
    {"tcp4", {NET_TCP, AF_INET, SOCK_STREAM}},
    {"tcp6", {NET_TCP, AF_INET6, SOCK_STREAM}},
    {"udp", {NET_UDP, 0, SOCK_DGRAM}},
    {"udp4", {NET_UDP, AF_INET, SOCK_DGRAM}},
    {"udp6", {NET_UDP, AF_INET6, SOCK_DGRAM}},
    {"unix", {NET_UNIX, AF_UNIX, SOCK_STREAM}},
    {"unixpacket", {NET_UNIX, AF_UNIX, SOCK_SEQPACKET}},
    {"unixgram", {NET_UNIX, AF_UNIX, SOCK_DGRAM}},
};

static int parse_network(const char *name, struct net *nt)
{
    if (!name)
        return -EINVAL;
    for (size_t i = 0; i < sizeof networks / sizeof networks[0]; i++)
        if (!strcmp(name, networks[i].name)) {
            *nt = networks[i].net;
            return 0;
        }
    return -EINVAL;
}

/* An IP socket address. */
union inaddr {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
};

/* The addresses a host resolves to, in the resolver's order; the first
 * MAX_ADDRS of them. */
#define MAX_ADDRS 16
struct addrlist {
    int n;
    union inaddr a[MAX_ADDRS];
};

static socklen_t inaddr_len(const union inaddr *a)
{
    return a->sa.sa_family == AF_INET ? sizeof a->in4 : sizeof a->in6;
}

static bool unspecified(const union inaddr *a)
{
    return a->sa.sa_family == AF_INET
               ? a->in4.sin_addr.s_addr == htonl(INADDR_ANY)
               : IN6_IS_ADDR_UNSPECIFIED(&a->in6.sin6_addr);
}

/* The address of family (AF_INET or AF_INET6) that is IPv4's 0.0.0.0 or
 * 127.0.0.1 (loopback) or IPv6's :: or ::1, with port. */
static void special_addr(union inaddr *a, int family, bool loopback, int port)
{
    memset(a, 0, sizeof *a);
    if (family == AF_INET) {
        a->in4.sin_family = AF_INET;
        a->in4.sin_port = htons((uint16_t)port);
        a->in4.sin_addr.s_addr = htonl(loopback ? INADDR_LOOPBACK : INADDR_ANY);
    } else {
        a->in6.sin6_family = AF_INET6;
        a->in6.sin6_port = htons((uint16_t)port);
        a->in6.sin6_addr = loopback ? in6addr_loopback : in6addr_any;
    }
}

/* What the machine's IP stack does, probed once as Go's
 * ipStackCapabilities.probe does: binding a socket to 127.0.0.1 (IPv4),
 * to ::1 (IPv6) and an IPv6 socket without IPV6_V6ONLY to ::ffff:127.0.0.1
 * (IPv4 traffic on IPv6 sockets, which a dual-stack listener needs). */
enum {
    CAP_KNOWN = 1,
    CAP_IPV4 = 2,
    CAP_IPV6 = 4,
    CAP_IPV4MAP = 8,
};
/* Relaxed: a word of its own that every thread probes to the same value;
 * nothing else is published through it. */
static int stack_caps;

static bool probe_bind(int family, int v6only, const union inaddr *a)
{
    int fd = gort__libc.socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool ok =
        (v6only < 0 || gort__libc.setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY,
                                             &v6only, sizeof v6only) == 0) &&
        bind(fd, &a->sa, inaddr_len(a)) == 0;
    gort__libc.close(fd);
    return ok;
}

static int caps(void)
{
    int c = load_relaxed(&stack_caps);
    if (c)
        return c;
    union inaddr a;
    c = CAP_KNOWN;
    special_addr(&a, AF_INET, true, 0);
    if (probe_bind(AF_INET, -1, &a))
        c |= CAP_IPV4;
    special_addr(&a, AF_INET6, true, 0);
    if (probe_bind(AF_INET6, 1, &a))
        c |= CAP_IPV6;
    special_addr(&a, AF_INET6, false, 0);
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &a.in6.sin6_addr);
    if (probe_bind(AF_INET6, 0, &a))
        c |= CAP_IPV4MAP;
    store_relaxed(&stack_caps, c);
    return c;
}

/* The port of service (Go's LookupPort): "" is 0; a decimal number, with
 * an optional sign, must be 0-65535; anything else is a service name
 * looked up for socktype.  0 and *port, -EINVAL for a number out of
 * range, or gort_getaddrinfo's error. */
static int lookup_port(const char *service, int socktype, int *port)
{
    const char *p = service;
    if (*p == '+' || *p == '-')
        p++;
    unsigned long v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (v <= 65535)
            v = v * 10 + (unsigned long)(*p - '0');
    if (*p == '\0') {
        if (v > 65535 || (service[0] == '-' && v != 0))
            return -EINVAL; /* invalid port */
        *port = (int)v;
        return 0;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = socktype;
    hints.ai_flags = AI_PASSIVE;
    int r = gort_getaddrinfo(NULL, service, &hints, &res);
    if (r)
        return r;
    r = GORT_EAI(EAI_SERVICE);
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            *port = ntohs(((struct sockaddr_in *)ai->ai_addr)->sin_port);
            r = 0;
            break;
        }
        if (ai->ai_family == AF_INET6) {
            *port = ntohs(((struct sockaddr_in6 *)ai->ai_addr)->sin6_port);
            r = 0;
            break;
        }
    }
    freeaddrinfo(res);
    return r;
}

/* A name lookup that a dial with a deadline waits for on a channel; the
 * lookup's goroutine and the dialer each hold a reference, the last one
 * frees it (and a result nobody took). */
struct lookup {
    uint32_t refs; /* atomic */
    struct addrinfo hints;
    struct addrinfo *res; /* the goroutine's, then the taker's */
    gort_chan *done;      /* cap 1: the lookup's return value */
    char host[];
};

static void lookup_release(struct lookup *l)
{
    /* Acq-rel: the last holder sees what the other did with res. */
    if (xadd_acqrel(&l->refs, (uint32_t)-1) != 0)
        return;
    if (l->res)
        freeaddrinfo(l->res);
    gort_chan_free(l->done);
    gort__free(l);
}

static void lookup_run(void *arg)
{
    struct lookup *l = arg;
    int r = gort_getaddrinfo(l->host, NULL, &l->hints, &l->res);
    gort_chan_send(l->done, &r); /* cap 1: never waits */
    lookup_release(l);
}

/* gort_getaddrinfo(host, NULL, hints, res), given up with -ETIMEDOUT when
 * the deadline until (0: none) passes first. */
static int lookup_until(const char *host, const struct addrinfo *hints,
                        int64_t until, struct addrinfo **res)
{
    if (!until)
        return gort_getaddrinfo(host, NULL, hints, res);
    size_t hl = strlen(host) + 1;
    struct lookup *l = gort__calloc(1, sizeof *l + hl);
    if (!l)
        return -ENOMEM;
    int r = gort_chan_make(&l->done, sizeof(int), 1);
    if (r) {
        gort__free(l);
        return r;
    }
    l->refs = 2;
    l->hints = *hints;
    memcpy(l->host, host, hl);
    if (gort_go(lookup_run, l) < 0) {
        gort_chan_free(l->done);
        gort__free(l);
        return gort_getaddrinfo(host, NULL, hints, res);
    }
    int got = gort_chan_recv_until(l->done, &r, gort_deadline_at(until));
    if (got == 1) {
        /* The send came after the goroutine stored res: it is ours. */
        *res = l->res;
        l->res = NULL;
    } else {
        r = got < 0 ? got : -EIO;
    }
    lookup_release(l);
    return r;
}

/* Whether host is an IPv4 or IPv6 address in numbers (an IPv6 one may
 * carry a %zone), which getaddrinfo reads without a lookup. */
static bool numeric_host(const char *host)
{
    char buf[INET6_ADDRSTRLEN];
    unsigned char bin[sizeof(struct in6_addr)];
    size_t n = strcspn(host, "%");
    if (n >= sizeof buf)
        return false;
    memcpy(buf, host, n);
    buf[n] = '\0';
    return inet_pton(AF_INET, buf, bin) == 1 ||
           inet_pton(AF_INET6, buf, bin) == 1;
}

/* Resolve host (not empty) to the addresses of family (0: both), port
 * set in each: 0, a GORT_EAI code or -errno; GORT_EAI(EAI_ADDRFAMILY)
 * when it has none of that family (Go's "no suitable address").  A name
 * lookup gives up when until (0: none) passes. */
static int resolve_host(const char *host, int family, int socktype, int port,
                        int64_t until, struct addrlist *al)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = socktype;
    int r;
    if (numeric_host(host)) {
        hints.ai_flags = AI_NUMERICHOST;
        r = gort_getaddrinfo(host, NULL, &hints, &res);
    } else {
        r = lookup_until(host, &hints, until, &res);
    }
    if (r)
        return r;
    al->n = 0;
    for (struct addrinfo *ai = res; ai && al->n < MAX_ADDRS; ai = ai->ai_next) {
        union inaddr a;
        memset(&a, 0, sizeof a);
        if (ai->ai_family == AF_INET &&
            ai->ai_addrlen >= (socklen_t)sizeof a.in4) {
            memcpy(&a.in4, ai->ai_addr, sizeof a.in4);
            a.in4.sin_port = htons((uint16_t)port);
        } else if (ai->ai_family == AF_INET6 &&
                   ai->ai_addrlen >= (socklen_t)sizeof a.in6) {
            memcpy(&a.in6, ai->ai_addr, sizeof a.in6);
            a.in6.sin6_port = htons((uint16_t)port);
            if (IN6_IS_ADDR_V4MAPPED(&a.in6.sin6_addr)) {
                /* An IPv4 address, as Go counts it. */
                struct in_addr v4;
                memcpy(&v4, &a.in6.sin6_addr.s6_addr[12], sizeof v4);
                memset(&a, 0, sizeof a);
                a.in4.sin_family = AF_INET;
                a.in4.sin_port = htons((uint16_t)port);
                a.in4.sin_addr = v4;
            }
        } else {
            continue;
        }
        if (family && a.sa.sa_family != family)
            continue;
        al->a[al->n++] = a;
    }
    freeaddrinfo(res);
    return al->n > 0 ? 0 : GORT_EAI(EAI_ADDRFAMILY);
}

/* address ("host:port") split and its port looked up: 0, -EINVAL for a
 * malformed address, or lookup_port's error. */
static int split_inet(const char *address, int socktype, char *host,
                      size_t hostlen, int *port)
{
    char service[64];
    int r =
        gort_split_host_port(address, host, hostlen, service, sizeof service);
    if (r)
        return -EINVAL; /* malformed, or a host or service too long */
    return lookup_port(service, socktype, port);
}

/* A Unix socket address: a path, or with a leading '@' a name in Linux's
 * abstract namespace (the '@' stands for the leading NUL).  0, -EINVAL for
 * an empty one, -ENAMETOOLONG for one longer than sun_path. */
static int unix_addr(const char *path, struct sockaddr_un *un, socklen_t *len)
{
    size_t n = strlen(path);
    if (n == 0)
        return -EINVAL;
    if (n > sizeof un->sun_path)
        return -ENAMETOOLONG;
    memset(un, 0, sizeof *un);
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, path, n);
    size_t off = offsetof(struct sockaddr_un, sun_path);
    if (path[0] == '@') {
        un->sun_path[0] = '\0'; /* abstract: exactly n bytes, no NUL */
        *len = (socklen_t)(off + n);
    } else {
        *len = (socklen_t)(off + n + (n < sizeof un->sun_path));
    }
    return 0;
}

static int set_int(int fd, int level, int opt, int v)
{
    return gort__libc.setsockopt(fd, level, opt, &v, sizeof v) < 0 ? -errno : 0;
}

/* ---------------------------------------------------------------------------
 * Listening.
 * ------------------------------------------------------------------------- */

/* A registered socket of family and socktype bound to sa (an AF_INET6
 * one with IPV6_V6ONLY set to v6only, as Go sets it on every IPv6
 * socket), listening unless it is a datagram socket: the fd or -errno,
 * nothing left open. */
static int bind_listen(int family, int socktype, int v6only,
                       const struct sockaddr *sa, socklen_t len)
{
    int fd = gort_socket(family, socktype, 0);
    if (fd < 0)
        return fd;
    int r = 0;
    if (family == AF_INET6)
        r = set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, v6only);
    /* Go's defaults: a listener may bind a port whose old connections
     * linger in TIME_WAIT; an IP datagram socket may broadcast. */
    if (!r && socktype != SOCK_DGRAM)
        r = set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
    if (!r && socktype == SOCK_DGRAM && family != AF_UNIX)
        r = set_int(fd, SOL_SOCKET, SO_BROADCAST, 1);
    if (!r && bind(fd, sa, len) < 0)
        r = -errno;
    /* The kernel caps the backlog at net.core.somaxconn, the value Go
     * reads and passes; 65535 stays within the 16 bits that kernels
     * before 4.1 keep. */
    if (!r && socktype != SOCK_DGRAM && listen(fd, 65535) < 0)
        r = -errno;
    if (r) {
        gort_close(fd);
        return r;
    }
    return fd;
}

int gort_listen(const char *network, const char *address)
{
    GORT_SAN_SCOPE();
    struct net nt;
    if (parse_network(network, &nt) < 0 || !address)
        return -EINVAL;
    if (nt.kind == NET_UNIX) {
        struct sockaddr_un un;
        socklen_t len;
        int r = unix_addr(address, &un, &len);
        if (r)
            return r;
        return bind_listen(AF_UNIX, nt.socktype, 0, (struct sockaddr *)&un,
                           len);
    }
    /* An empty address is ":0" (Go). */
    char host[NI_MAXHOST];
    int port = 0, r;
    host[0] = '\0';
    if (*address &&
        (r = split_inet(address, nt.socktype, host, sizeof host, &port)))
        return r;
    union inaddr la;
    bool have = host[0] != '\0';
    if (have) {
        struct addrlist al;
        if ((r = resolve_host(host, nt.family, nt.socktype, port, 0, &al)))
            return r;
        /* The first IPv4 address, else the first (Go's
         * addrs.first(isIPv4)). */
        la = al.a[0];
        for (int i = 0; i < al.n; i++)
            if (al.a[i].sa.sa_family == AF_INET) {
                la = al.a[i];
                break;
            }
    }
    /* The socket's family: Go's favoriteAddrFamily for a listener. */
    int family, v6only = nt.family == AF_INET6;
    if (nt.family) {
        family = nt.family;
        if (!have)
            special_addr(&la, family, false, port);
    } else if (!have || unspecified(&la)) {
        /* Every address: one IPv6 socket takes IPv4 too (dual stack)
         * where the kernel maps IPv4 onto IPv6 sockets, or the IPv6
         * stack is all there is. */
        int c = caps();
        if ((c & CAP_IPV4MAP) || !(c & CAP_IPV4))
            family = AF_INET6;
        else
            family = have ? la.sa.sa_family : AF_INET;
        special_addr(&la, family, false, port);
    } else {
        family = la.sa.sa_family;
    }
    return bind_listen(family, nt.socktype, v6only, &la.sa, inaddr_len(&la));
}

/* ---------------------------------------------------------------------------
 * Dialing.
 * ------------------------------------------------------------------------- */

/* Whether TCP socket fd is connected to itself: dialing a loopback port
 * nobody listens on, the kernel may pick that very port as the local one
 * and connect the socket to itself (Go's selfConnect). */
static bool self_connected(int fd)
{
    union inaddr l, p;
    socklen_t ll = sizeof l, pl = sizeof p;
    if (getsockname(fd, &l.sa, &ll) < 0 || getpeername(fd, &p.sa, &pl) < 0)
        return true;
    return ll == pl && !memcmp(&l, &p, ll);
}

/* Connect a new socket of nt's type to sa, giving up at until (0: none):
 * the registered fd, or -ETIMEDOUT or the connection's error with nothing
 * left open.  UDP sockets may broadcast, TCP sockets get TCP_NODELAY
 * (Go's defaults); one connected
 * to itself, or refused a local address, is tried again twice (Go's
 * dialTCP). */
static int dial_one(const struct net *nt, const struct sockaddr *sa,
                    socklen_t len, int64_t until)
{
    for (int retry = 0;; retry++) {
        int64_t left = 0;
        if (until && (left = until - gort_nanotime()) <= 0)
            return -ETIMEDOUT;
        int fd = gort_socket(sa->sa_family, nt->socktype, 0);
        if (fd < 0)
            return fd;
        /* Go's default for IP datagram sockets, which a connect to a
         * broadcast address needs. */
        int r =
            nt->kind == NET_UDP ? set_int(fd, SOL_SOCKET, SO_BROADCAST, 1) : 0;
        if (!r)
            r = gort_connect(fd, sa, len, left);
        if (nt->kind == NET_TCP && retry < 2 &&
            (r == -EADDRNOTAVAIL || (r == 0 && self_connected(fd)))) {
            gort_close(fd);
            continue;
        }
        if (r) {
            gort_close(fd);
            return r;
        }
        if (nt->kind == NET_TCP)
            set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
        return fd;
    }
}

/* Go's partialDeadline: the deadline of one attempt with n addresses
 * (this one included) left to try before until. */
static int64_t partial_deadline(int64_t now, int64_t until, int n)
{
    const int64_t sane_minimum = 2000000000; /* 2 s */
    int64_t left = until - now;
    int64_t t = left / n;
    if (t < sane_minimum)
        t = left < sane_minimum ? left : sane_minimum;
    return now + t;
}

int gort_dial(const char *network, const char *address, gort_deadline d)
{
    GORT_SAN_SCOPE();
    struct net nt;
    if (parse_network(network, &nt) < 0 || !address || !*address)
        return -EINVAL;
    int64_t until = d.at == INT64_MAX ? 0 : d.at;
    if (nt.kind == NET_UNIX) {
        struct sockaddr_un un;
        socklen_t len;
        int r = unix_addr(address, &un, &len);
        if (r)
            return r;
        return dial_one(&nt, (struct sockaddr *)&un, len, until);
    }
    char host[NI_MAXHOST];
    int port, r;
    if ((r = split_inet(address, nt.socktype, host, sizeof host, &port)))
        return r;
    if (until && until <= gort_nanotime())
        return -ETIMEDOUT;
    /* "tcp" and "udp" dial IPv4 alone where there is no IPv6 (Go). */
    int family = nt.family;
    if (!family && !(caps() & CAP_IPV6))
        family = AF_INET;
    struct addrlist al;
    if (!host[0]) {
        /* This machine (Go dials the unspecified address, which Linux
         * takes for the loopback one). */
        al.n = 1;
        special_addr(&al.a[0], family ? family : AF_INET, true, port);
    } else if ((r = resolve_host(host, family, nt.socktype, port, until,
                                 &al))) {
        return r;
    } else if (al.a[0].sa.sa_family == AF_INET6 && unspecified(&al.a[0]) &&
               family != AF_INET6 && numeric_host(host)) {
        /* [::] is this machine too, and where IPv6 cannot connect back
         * to it, 0.0.0.0 is (Go's issue 18806). */
        al.n = 2;
        special_addr(&al.a[1], AF_INET, false, port);
    }
    /* dialSerial: the first connection, or the first error. */
    int first = 0;
    for (int i = 0; i < al.n; i++) {
        int64_t part = 0;
        if (until) {
            int64_t now = gort_nanotime();
            if (until <= now) {
                if (!first)
                    first = -ETIMEDOUT;
                break;
            }
            part = partial_deadline(now, until, al.n - i);
        }
        int fd = dial_one(&nt, &al.a[i].sa, inaddr_len(&al.a[i]), part);
        if (fd >= 0)
            return fd;
        if (!first)
            first = fd;
    }
    return first;
}
