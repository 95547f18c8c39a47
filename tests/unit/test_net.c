/* SPDX-License-Identifier: MIT */
/*
 * test_net.c - listening and dialing by address (gort.h, "Networks"):
 * gort_split_host_port and gort_join_host_port against Go's own tables,
 * gort_listen and gort_dial over loopback on every network (TCP on IPv4,
 * IPv6 and both, UDP, Unix paths, abstract names, seqpacket and
 * datagram), ports picked and named, refused connections, the serial
 * dial that goes on to the next address, deadlines that have passed or
 * that a connection nobody accepts runs into (and their split between
 * addresses), bad networks and addresses, names that do not resolve, and
 * no descriptor left open by any failure.
 *
 * The IPv6 cases need the loopback address ::1; without it they say so
 * and check what they can.
 */
#include "test_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define SECOND (1000 * MS)

/* Make the network poller open its own descriptors (epoll's and its
 * wake-up's, on the first registration), so that counts taken after this
 * see only the test's. */
static void poller_up(void)
{
    int p[2];
    CHECK_EQ(gort_pipe(p), 0);
    gort_close(p[0]);
    gort_close(p[1]);
}

/* Wait (2 s at most) until this process has want descriptors open, and
 * check it: a descriptor's close(2) comes with the last reference to its
 * pollDesc, which the poller or a deadline's timer on another thread may
 * hold for a moment after gort_close returns (Go's close waits for them
 * likewise). */
static void await_fds(int want)
{
    /* One count a round, checked as read: a descriptor another thread
     * holds open for a moment (sysmon's reads) only delays the check. */
    int64_t end = gort_nanotime() + 2 * SECOND;
    int n;
    while ((n = count_fds()) != want && gort_nanotime() < end)
        gort_sleep(MS);
    CHECK_EQ(n, want);
}

/* The descriptors open, read until two counts 1 ms apart agree: a count
 * to come back to, without another thread's passing descriptor in it. */
static int settled_fds(void)
{
    int a = count_fds();
    for (int i = 0; i < 100; i++) {
        gort_sleep(MS);
        int b = count_fds();
        if (b == a)
            break;
        a = b;
    }
    return a;
}

/* The value of the call expr, a failing gort_listen or gort_dial,
 * checked to be want and to leave no descriptor open. */
#define FAILS(expr, want)                                                      \
    do {                                                                       \
        int fails_before_ = settled_fds();                                     \
        int fails_r_ = (expr);                                                 \
        if (fails_r_ >= 0)                                                     \
            close(fails_r_);                                                   \
        CHECK_EQ(fails_r_, (want));                                            \
        await_fds(fails_before_);                                              \
    } while (0)

/* Whether the machine has IPv6's loopback address ::1. */
static bool have_ipv6(void)
{
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

static void no_ipv6(const char *what)
{
    fprintf(stderr,
            "%s: no IPv6 loopback (::1) here: its IPv6 checks "
            "skipped\n",
            what);
}

/* fd's local (or with peer, its peer's) address and port. */
static int sock_port(int fd, bool peer, struct sockaddr_storage *ss)
{
    struct sockaddr_storage tmp;
    if (!ss)
        ss = &tmp;
    socklen_t len = sizeof *ss;
    CHECK_EQ(peer ? getpeername(fd, (struct sockaddr *)ss, &len)
                  : getsockname(fd, (struct sockaddr *)ss, &len),
             0);
    if (ss->ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)ss)->sin_port);
    CHECK_EQ(ss->ss_family, AF_INET6);
    return ntohs(((struct sockaddr_in6 *)ss)->sin6_port);
}

/* A socket bound to the loopback address of family at port and not
 * listening, so that a dial there is refused whatever else runs on the
 * machine (a listener of another test that got the same port number for
 * the other family, or a connect that meets itself); -1 when the port is
 * taken. */
static int hold_port(int family, int port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(fd, 0);
    struct sockaddr_in sa4 = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6,
                               .sin6_port = htons((uint16_t)port),
                               .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int r = family == AF_INET
                ? bind(fd, (struct sockaddr *)&sa4, sizeof sa4)
                : bind(fd, (struct sockaddr *)&sa6, sizeof sa6);
    if (r != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int sock_family(int fd)
{
    struct sockaddr_storage ss;
    sock_port(fd, false, &ss);
    return ss.ss_family;
}

static int sockopt(int fd, int level, int opt)
{
    int v = -1;
    socklen_t len = sizeof v;
    CHECK_EQ(getsockopt(fd, level, opt, &v, &len), 0);
    return v;
}

/* "host:port" in buf, through gort_join_host_port. */
static const char *hostport(char *buf, size_t n, const char *host, int port)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    CHECK_GT(gort_join_host_port(host, p, buf, n), 0);
    return buf;
}

/* A descriptor made by gort: non-blocking, close-on-exec, the poller's
 * (registering it again is -EEXIST). */
static void check_gort_fd(int fd)
{
    CHECK_GE(fd, 0);
    CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    CHECK_EQ(gort_fd_register(fd), -EEXIST);
}

/* Dial address on network, accept the connection on listener l and
 * exchange a message each way; the accepted side's peer goes to peer
 * (may be NULL).  Returns the dialed descriptor's family. */
static int round_trip(int l, const char *network, const char *address,
                      struct sockaddr_storage *peer)
{
    int c = gort_dial(network, address, gort_deadline_in(10 * SECOND));
    if (c < 0)
        fprintf(stderr, "dial %s %s: %s\n", network, address, gort_strerror(c));
    check_gort_fd(c);
    int s = gort_accept(l, NULL, NULL);
    CHECK_GE(s, 0);
    char b[8];
    CHECK_EQ(gort_write(c, "ping", 4), 4);
    CHECK_EQ(gort_read(s, b, sizeof b), 4);
    CHECK(!memcmp(b, "ping", 4));
    CHECK_EQ(gort_write(s, "pong", 4), 4);
    CHECK_EQ(gort_read(c, b, sizeof b), 4);
    CHECK(!memcmp(b, "pong", 4));
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    CHECK_EQ(getsockname(c, (struct sockaddr *)&ss, &len), 0);
    if (peer) {
        len = sizeof *peer;
        CHECK_EQ(getpeername(s, (struct sockaddr *)peer, &len), 0);
    }
    CHECK_EQ(gort_close(s), 0);
    CHECK_EQ(gort_close(c), 0);
    return ss.ss_family;
}

/* ---------------------------------------------------------------------------
 * Host and port syntax (Go's TestSplitHostPort and TestJoinHostPort,
 * src/net/ip_test.go).
 * ------------------------------------------------------------------------- */

static const struct {
    const char *hostport, *host, *port;
} split_ok[] = {
    /* Host name */
    {"localhost:http", "localhost", "http"},
    {"localhost:80", "localhost", "80"},
    /* Go-specific host name with zone identifier */
    {"localhost%lo0:http", "localhost%lo0", "http"},
    {"localhost%lo0:80", "localhost%lo0", "80"},
    {"[localhost%lo0]:http", "localhost%lo0", "http"},
    {"[localhost%lo0]:80", "localhost%lo0", "80"},
    /* IP literal */
    {"127.0.0.1:http", "127.0.0.1", "http"},
    {"127.0.0.1:80", "127.0.0.1", "80"},
    {"[::1]:http", "::1", "http"},
    {"[::1]:80", "::1", "80"},
    /* IP literal with zone identifier */
    {"[::1%lo0]:http", "::1%lo0", "http"},
    {"[::1%lo0]:80", "::1%lo0", "80"},
    /* Go-specific wildcard for host name */
    {":http", "", "http"},
    {":80", "", "80"},
    /* Go-specific wildcard for service name or transport port number */
    {"golang.org:", "golang.org", ""},
    {"127.0.0.1:", "127.0.0.1", ""},
    {"[::1]:", "::1", ""},
    /* Opaque service name */
    {"golang.org:https%foo", "golang.org", "https%foo"},
};

/* Go's error for each, which gort reports as -EINVAL. */
static const char *const split_bad[] = {
    "golang.org",      /* missing port in address */
    "127.0.0.1",       /* missing port in address */
    "[::1]",           /* missing port in address */
    "[fe80::1%lo0]",   /* missing port in address */
    "[localhost%lo0]", /* missing port in address */
    "localhost%lo0",   /* missing port in address */
    "::1",             /* too many colons in address */
    "fe80::1%lo0",     /* too many colons in address */
    "fe80::1%lo0:80",  /* too many colons in address */
    "[foo:bar]",       /* missing port in address */
    "[foo:bar]baz",    /* missing port in address */
    "[foo]bar:baz",    /* missing port in address */
    "[foo]:[bar]:baz", /* too many colons in address */
    "[foo]:[bar]baz",  /* unexpected '[' in address */
    "foo[bar]:baz",    /* unexpected '[' in address */
    "foo]bar:baz",     /* unexpected ']' in address */
    "",                /* missing port in address */
    "[::1:80",         /* missing ']' in address */
};

/* Go's table of host:port strings that split, and of those that do not
 * (each -EINVAL, the buffers untouched); buffers of exactly the size
 * needed and one byte short (-ERANGE, nothing stored); parts left out
 * with NULL. */
TEST(split_host_port)
{
    char host[64], port[64];
    for (size_t i = 0; i < sizeof split_ok / sizeof split_ok[0]; i++) {
        memset(host, 'x', sizeof host);
        memset(port, 'x', sizeof port);
        int r = gort_split_host_port(split_ok[i].hostport, host, sizeof host,
                                     port, sizeof port);
        if (r || strcmp(host, split_ok[i].host) ||
            strcmp(port, split_ok[i].port))
            fprintf(stderr, "split(\"%s\") = %d \"%s\" \"%s\"\n",
                    split_ok[i].hostport, r, host, port);
        CHECK_EQ(r, 0);
        CHECK(!strcmp(host, split_ok[i].host));
        CHECK(!strcmp(port, split_ok[i].port));
    }
    for (size_t i = 0; i < sizeof split_bad / sizeof split_bad[0]; i++) {
        strcpy(host, "h");
        strcpy(port, "p");
        int r = gort_split_host_port(split_bad[i], host, sizeof host, port,
                                     sizeof port);
        if (r != -EINVAL)
            fprintf(stderr, "split(\"%s\") = %d\n", split_bad[i], r);
        CHECK_EQ(r, -EINVAL);
        CHECK(!strcmp(host, "h") && !strcmp(port, "p"));
    }
    CHECK_EQ(gort_split_host_port(NULL, host, sizeof host, port, sizeof port),
             -EINVAL);
    /* "[::1]:8080": host "::1" needs 4 bytes, port "8080" 5. */
    CHECK_EQ(gort_split_host_port("[::1]:8080", host, 4, port, 5), 0);
    CHECK(!strcmp(host, "::1") && !strcmp(port, "8080"));
    strcpy(host, "h");
    strcpy(port, "p");
    CHECK_EQ(gort_split_host_port("[::1]:8080", host, 3, port, 5), -ERANGE);
    CHECK_EQ(gort_split_host_port("[::1]:8080", host, 4, port, 4), -ERANGE);
    CHECK_EQ(gort_split_host_port("[::1]:8080", host, 0, port, 5), -ERANGE);
    CHECK(!strcmp(host, "h") && !strcmp(port, "p"));
    /* NULL parts are left out, whatever their length. */
    CHECK_EQ(gort_split_host_port("a:b", NULL, 0, port, sizeof port), 0);
    CHECK(!strcmp(port, "b"));
    CHECK_EQ(gort_split_host_port("a:b", host, sizeof host, NULL, 99), 0);
    CHECK(!strcmp(host, "a"));
    CHECK_EQ(gort_split_host_port("a:b", NULL, 0, NULL, 0), 0);
    CHECK_EQ(gort_split_host_port("a", NULL, 0, NULL, 0), -EINVAL);
}

static const struct {
    const char *host, *port, *hostport;
} join[] = {
    {"localhost", "http", "localhost:http"},
    {"localhost", "80", "localhost:80"},
    {"localhost%lo0", "http", "localhost%lo0:http"},
    {"localhost%lo0", "80", "localhost%lo0:80"},
    {"127.0.0.1", "http", "127.0.0.1:http"},
    {"127.0.0.1", "80", "127.0.0.1:80"},
    {"::1", "http", "[::1]:http"},
    {"::1", "80", "[::1]:80"},
    {"::1%lo0", "http", "[::1%lo0]:http"},
    {"::1%lo0", "80", "[::1%lo0]:80"},
    {"", "http", ":http"},
    {"", "80", ":80"},
    {"golang.org", "", "golang.org:"},
    {"127.0.0.1", "", "127.0.0.1:"},
    {"::1", "", "[::1]:"},
    {"golang.org", "https%foo", "golang.org:https%foo"},
};

/* Go's table of joined host:port strings, each of which splits back into
 * its parts; the length returned; a buffer one byte short (-ERANGE, ""
 * stored) and NULL arguments (-EINVAL). */
TEST(join_host_port)
{
    char buf[64], host[64], port[64];
    for (size_t i = 0; i < sizeof join / sizeof join[0]; i++) {
        int r =
            gort_join_host_port(join[i].host, join[i].port, buf, sizeof buf);
        CHECK_EQ(r, (int)strlen(join[i].hostport));
        CHECK(!strcmp(buf, join[i].hostport));
        CHECK_EQ(
            gort_split_host_port(buf, host, sizeof host, port, sizeof port), 0);
        CHECK(!strcmp(host, join[i].host) && !strcmp(port, join[i].port));
    }
    /* "[::1]:80" is 8 bytes and its NUL. */
    CHECK_EQ(gort_join_host_port("::1", "80", buf, 9), 8);
    CHECK_EQ(gort_join_host_port("::1", "80", buf, 8), -ERANGE);
    CHECK(!strcmp(buf, ""));
    CHECK_EQ(gort_join_host_port("::1", "80", NULL, 0), -ERANGE);
    CHECK_EQ(gort_join_host_port(NULL, "80", buf, sizeof buf), -EINVAL);
    CHECK_EQ(gort_join_host_port("h", NULL, buf, sizeof buf), -EINVAL);
    CHECK_EQ(gort_join_host_port("h", "80", NULL, 5), -EINVAL);
}

/* ---------------------------------------------------------------------------
 * TCP.
 * ------------------------------------------------------------------------- */

static void tcp_main(void *arg)
{
    (void)arg;
    poller_up();
    char a[64];
    /* Port 0 picks one; the listener is the poller's. */
    int l = gort_listen("tcp", "127.0.0.1:0");
    check_gort_fd(l);
    CHECK_EQ(sock_family(l), AF_INET);
    CHECK_EQ(sockopt(l, SOL_SOCKET, SO_REUSEADDR), 1);
    CHECK_EQ(sockopt(l, SOL_SOCKET, SO_ACCEPTCONN), 1);
    int port = sock_port(l, false, NULL);
    CHECK_GT(port, 0);
    hostport(a, sizeof a, "127.0.0.1", port);
    CHECK_EQ(round_trip(l, "tcp", a, NULL), AF_INET);
    CHECK_EQ(round_trip(l, "tcp4", a, NULL), AF_INET);
    /* A name, through the resolver (/etc/hosts), and the empty host,
     * which is this machine. */
    hostport(a, sizeof a, "localhost", port);
    int c = gort_dial("tcp4", a, gort_no_deadline());
    check_gort_fd(c);
    /* TCP_NODELAY on dialed connections, as Go sets it. */
    CHECK_EQ(sockopt(c, IPPROTO_TCP, TCP_NODELAY), 1);
    struct sockaddr_storage ss;
    CHECK_EQ(sock_port(c, true, &ss), port);
    CHECK_EQ(((struct sockaddr_in *)&ss)->sin_addr.s_addr,
             htonl(INADDR_LOOPBACK));
    gort_close(c);
    int s = gort_accept(l, NULL, NULL);
    CHECK_GE(s, 0);
    gort_close(s);
    hostport(a, sizeof a, "", port);
    CHECK_EQ(round_trip(l, "tcp", a, NULL), AF_INET);
    gort_close(l);
    /* An empty port picks one too. */
    l = gort_listen("tcp4", "127.0.0.1:");
    check_gort_fd(l);
    CHECK_GT(sock_port(l, false, NULL), 0);
    gort_close(l);

    if (!have_ipv6()) {
        no_ipv6("tcp");
        return;
    }
    l = gort_listen("tcp", "[::1]:0");
    check_gort_fd(l);
    CHECK_EQ(sock_family(l), AF_INET6);
    port = sock_port(l, false, NULL);
    hostport(a, sizeof a, "::1", port);
    CHECK_EQ(round_trip(l, "tcp", a, NULL), AF_INET6);
    CHECK_EQ(round_trip(l, "tcp6", a, NULL), AF_INET6);
    /* ::1 is no IPv4 address. */
    FAILS(gort_dial("tcp4", a, gort_no_deadline()), GORT_EAI(EAI_ADDRFAMILY));
    gort_close(l);
}

/* Listen and dial round trips on 127.0.0.1 and [::1] (when the machine
 * has it): the port picked (0 or empty), the listener's options and
 * family, the descriptors non-blocking, close-on-exec and the poller's,
 * TCP_NODELAY on the dialed side, "localhost" resolved and the empty host
 * dialed as this machine. */
TEST(tcp)
{
    run_main(tcp_main, NULL);
}

static void restrict_main(void *arg)
{
    (void)arg;
    poller_up();
    char a[64];
    /* "tcp4" listens on IPv4 alone. */
    int l4 = gort_listen("tcp4", ":0");
    check_gort_fd(l4);
    CHECK_EQ(sock_family(l4), AF_INET);
    int p4 = sock_port(l4, false, NULL);
    hostport(a, sizeof a, "127.0.0.1", p4);
    CHECK_EQ(round_trip(l4, "tcp", a, NULL), AF_INET);
    FAILS(gort_listen("tcp4", "[::1]:0"), GORT_EAI(EAI_ADDRFAMILY));
    FAILS(gort_listen("tcp4", "[::]:0"), GORT_EAI(EAI_ADDRFAMILY));
    FAILS(gort_listen("tcp6", "127.0.0.1:0"), GORT_EAI(EAI_ADDRFAMILY));
    FAILS(gort_listen("tcp6", "0.0.0.0:0"), GORT_EAI(EAI_ADDRFAMILY));
    FAILS(gort_dial("tcp6", a, gort_no_deadline()), GORT_EAI(EAI_ADDRFAMILY));
    if (!have_ipv6()) {
        no_ipv6("tcp4_tcp6");
        gort_close(l4);
        return;
    }
    hostport(a, sizeof a, "::1", p4);
    int hold = hold_port(AF_INET6, p4);
    if (hold >= 0) { /* else another listener has [::1]:p4 */
        FAILS(gort_dial("tcp", a, gort_no_deadline()), -ECONNREFUSED);
        close(hold);
    }
    gort_close(l4);
    /* "tcp6" listens on IPv6 alone: IPV6_V6ONLY on, 127.0.0.1 refused
     * (on a port whose IPv4 number is held, so nothing else answers). */
    int l6 = -1, p6 = 0;
    hold = -1;
    for (int i = 0; i < 20 && hold < 0; i++) {
        if (l6 >= 0)
            gort_close(l6);
        l6 = gort_listen("tcp6", ":0");
        check_gort_fd(l6);
        p6 = sock_port(l6, false, NULL);
        hold = hold_port(AF_INET, p6);
    }
    CHECK_GE(hold, 0);
    CHECK_EQ(sock_family(l6), AF_INET6);
    CHECK_EQ(sockopt(l6, IPPROTO_IPV6, IPV6_V6ONLY), 1);
    hostport(a, sizeof a, "::1", p6);
    CHECK_EQ(round_trip(l6, "tcp6", a, NULL), AF_INET6);
    hostport(a, sizeof a, "127.0.0.1", p6);
    FAILS(gort_dial("tcp", a, gort_no_deadline()), -ECONNREFUSED);
    close(hold);
    /* The empty host of "tcp6" is ::1. */
    hostport(a, sizeof a, "", p6);
    CHECK_EQ(round_trip(l6, "tcp6", a, NULL), AF_INET6);
    gort_close(l6);
}

/* "tcp4" and "tcp6": a tcp4 listener takes IPv4 alone and is refused to
 * ::1, a tcp6 listener (IPV6_V6ONLY on) IPv6 alone and is refused to
 * 127.0.0.1; an address of the other version does not resolve for
 * either (GORT_EAI(EAI_ADDRFAMILY)), and leaves nothing open. */
TEST(tcp4_tcp6)
{
    run_main(restrict_main, NULL);
}

static void dual_main(void *arg)
{
    (void)arg;
    poller_up();
    static const char *const every[] = {":0", "0.0.0.0:0", "[::]:0", ""};
    char a[64];
    bool v6 = have_ipv6();
    if (!v6)
        no_ipv6("dual_stack");
    for (size_t i = 0; i < sizeof every / sizeof every[0]; i++) {
        int l = gort_listen("tcp", every[i]);
        check_gort_fd(l);
        int port = sock_port(l, false, NULL);
        CHECK_GT(port, 0);
        hostport(a, sizeof a, "127.0.0.1", port);
        struct sockaddr_storage peer;
        CHECK_EQ(round_trip(l, "tcp", a, &peer), AF_INET);
        if (!v6) {
            CHECK_EQ(sock_family(l), AF_INET);
            gort_close(l);
            continue;
        }
        /* One IPv6 socket for both: IPv4 peers come as ::ffff:a.b.c.d. */
        CHECK_EQ(sock_family(l), AF_INET6);
        CHECK_EQ(sockopt(l, IPPROTO_IPV6, IPV6_V6ONLY), 0);
        CHECK_EQ(peer.ss_family, AF_INET6);
        CHECK(IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&peer)->sin6_addr));
        hostport(a, sizeof a, "::1", port);
        CHECK_EQ(round_trip(l, "tcp", a, &peer), AF_INET6);
        CHECK(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&peer)->sin6_addr));
        gort_close(l);
    }
}

/* "tcp" on every address (":0", "0.0.0.0:0", "[::]:0", ""): one IPv6
 * socket with IPV6_V6ONLY off that 127.0.0.1 and ::1 both reach (an IPv4
 * socket where there is no IPv6), as Go listens. */
TEST(dual_stack)
{
    run_main(dual_main, NULL);
}

/* ---------------------------------------------------------------------------
 * UDP and Unix.
 * ------------------------------------------------------------------------- */

/* A datagram exchange: c (dialed) sends to l (listening), which answers
 * to the address it came from. */
static void datagram_round_trip(int l, int c)
{
    char b[16];
    struct sockaddr_storage from;
    unsigned fromlen = sizeof from;
    CHECK_EQ(gort_write(c, "hi", 2), 2);
    CHECK_EQ(
        gort_recvfrom(l, b, sizeof b, 0, (struct sockaddr *)&from, &fromlen),
        2);
    CHECK(!memcmp(b, "hi", 2));
    CHECK_EQ(gort_sendto(l, "yo", 2, 0, (struct sockaddr *)&from, fromlen), 2);
    CHECK_EQ(gort_read(c, b, sizeof b), 2);
    CHECK(!memcmp(b, "yo", 2));
}

static void udp_main(void *arg)
{
    (void)arg;
    poller_up();
    char a[64];
    int l = gort_listen("udp", "127.0.0.1:0");
    check_gort_fd(l);
    CHECK_EQ(sockopt(l, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
    CHECK_EQ(sockopt(l, SOL_SOCKET, SO_BROADCAST), 1);
    int port = sock_port(l, false, NULL);
    hostport(a, sizeof a, "127.0.0.1", port);
    int c = gort_dial("udp", a, gort_deadline_in(5 * SECOND));
    check_gort_fd(c);
    CHECK_EQ(sockopt(c, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
    CHECK_EQ(sockopt(c, SOL_SOCKET, SO_BROADCAST), 1);
    CHECK_EQ(sock_port(c, true, NULL), port); /* connected */
    datagram_round_trip(l, c);
    gort_close(c);
    gort_close(l);
    /* udp4 and the wildcard. */
    l = gort_listen("udp4", ":0");
    check_gort_fd(l);
    CHECK_EQ(sock_family(l), AF_INET);
    hostport(a, sizeof a, "", sock_port(l, false, NULL));
    c = gort_dial("udp4", a, gort_no_deadline());
    check_gort_fd(c);
    datagram_round_trip(l, c);
    gort_close(c);
    gort_close(l);
    if (!have_ipv6()) {
        no_ipv6("udp");
        return;
    }
    l = gort_listen("udp", ":0");
    check_gort_fd(l);
    CHECK_EQ(sock_family(l), AF_INET6);
    port = sock_port(l, false, NULL);
    static const char *const hosts[] = {"127.0.0.1", "::1"};
    for (int i = 0; i < 2; i++) {
        hostport(a, sizeof a, hosts[i], port);
        c = gort_dial("udp", a, gort_no_deadline());
        check_gort_fd(c);
        datagram_round_trip(l, c);
        gort_close(c);
    }
    gort_close(l);
    l = gort_listen("udp6", "[::1]:0");
    check_gort_fd(l);
    CHECK_EQ(sockopt(l, IPPROTO_IPV6, IPV6_V6ONLY), 1);
    hostport(a, sizeof a, "::1", sock_port(l, false, NULL));
    c = gort_dial("udp6", a, gort_no_deadline());
    check_gort_fd(c);
    datagram_round_trip(l, c);
    gort_close(c);
    gort_close(l);
}

/* UDP: a bound datagram socket and a connected one (SO_BROADCAST on both,
 * as Go sets it) exchange datagrams both ways on 127.0.0.1, the "udp4"
 * wildcard, the dual-stack wildcard from 127.0.0.1 and ::1, and "udp6"
 * (IPV6_V6ONLY on). */
TEST(udp)
{
    run_main(udp_main, NULL);
}

static void unix_main(void *arg)
{
    (void)arg;
    poller_up();
    char dir[64], path[128], name[64];
    CHECK(mkdtemp(tmp_template(dir, sizeof dir, "gort-net-")) != NULL);
    snprintf(path, sizeof path, "%s/sock", dir);
    /* A path: the bind makes it, a second listener finds it taken, and
     * it stays after the close. */
    int l = gort_listen("unix", path);
    check_gort_fd(l);
    struct stat st;
    CHECK_EQ(stat(path, &st), 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK_EQ(round_trip(l, "unix", path, NULL), AF_UNIX);
    FAILS(gort_listen("unix", path), -EADDRINUSE);
    gort_close(l);
    CHECK_EQ(stat(path, &st), 0);
    FAILS(gort_dial("unix", path, gort_no_deadline()), -ECONNREFUSED);
    CHECK_EQ(unlink(path), 0);
    FAILS(gort_dial("unix", path, gort_no_deadline()), -ENOENT);
    /* An abstract name: no file. */
    snprintf(name, sizeof name, "@gort-test-net-%d", (int)getpid());
    l = gort_listen("unix", name);
    check_gort_fd(l);
    CHECK_EQ(round_trip(l, "unix", name, NULL), AF_UNIX);
    struct sockaddr_un un;
    socklen_t len = sizeof un;
    CHECK_EQ(getsockname(l, (struct sockaddr *)&un, &len), 0);
    CHECK_EQ(len, offsetof(struct sockaddr_un, sun_path) + strlen(name));
    CHECK_EQ(un.sun_path[0], '\0');
    CHECK(!memcmp(un.sun_path + 1, name + 1, strlen(name) - 1));
    FAILS(gort_listen("unix", name), -EADDRINUSE);
    gort_close(l);
    FAILS(gort_dial("unix", name, gort_no_deadline()), -ECONNREFUSED);
    /* unixpacket keeps message boundaries. */
    l = gort_listen("unixpacket", name);
    check_gort_fd(l);
    CHECK_EQ(sockopt(l, SOL_SOCKET, SO_TYPE), SOCK_SEQPACKET);
    int c = gort_dial("unixpacket", name, gort_no_deadline());
    check_gort_fd(c);
    int s = gort_accept(l, NULL, NULL);
    CHECK_GE(s, 0);
    CHECK_EQ(gort_write(c, "one", 3), 3);
    CHECK_EQ(gort_write(c, "two", 3), 3);
    char b[16];
    CHECK_EQ(gort_read(s, b, sizeof b), 3);
    CHECK_EQ(gort_read(s, b, sizeof b), 3);
    CHECK(!memcmp(b, "two", 3));
    gort_close(s);
    gort_close(c);
    gort_close(l);
    /* unixgram: a bound datagram socket and a connected one. */
    snprintf(path, sizeof path, "%s/dgram", dir);
    l = gort_listen("unixgram", path);
    check_gort_fd(l);
    CHECK_EQ(sockopt(l, SOL_SOCKET, SO_TYPE), SOCK_DGRAM);
    c = gort_dial("unixgram", path, gort_no_deadline());
    check_gort_fd(c);
    CHECK_EQ(gort_write(c, "hi", 2), 2);
    CHECK_EQ(gort_recvfrom(l, b, sizeof b, 0, NULL, NULL), 2);
    gort_close(c);
    gort_close(l);
    CHECK_EQ(unlink(path), 0);
    /* sun_path holds 108 bytes; an empty path is no address. */
    char lng[200];
    memset(lng, 'a', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    FAILS(gort_listen("unix", lng), -ENAMETOOLONG);
    FAILS(gort_dial("unix", lng, gort_no_deadline()), -ENAMETOOLONG);
    FAILS(gort_listen("unix", ""), -EINVAL);
    FAILS(gort_dial("unix", "", gort_no_deadline()), -EINVAL);
    CHECK_EQ(rmdir(dir), 0);
}

/* Unix sockets: a path (made by the bind, taken for a second listener,
 * left after the close, refused then, gone after the unlink), an
 * abstract name ("@...": no file, the leading NUL and exact length in
 * the address), unixpacket's message boundaries, unixgram's datagrams,
 * and paths too long (-ENAMETOOLONG) or empty (-EINVAL). */
TEST(unix_sockets)
{
    run_main(unix_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Ports and service names.
 * ------------------------------------------------------------------------- */

static void service_main(void *arg)
{
    (void)arg;
    poller_up();
    /* Unprivileged services of /etc/services: the first that is there
     * and free must listen on its port, found by name. */
    static const char *const names[] = {"http-alt",   "webcache", "x11",
                                        "postgresql", "mysql",    "amqp"};
    int tried = 0;
    bool done = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !done; i++) {
        struct servent *se = getservbyname(names[i], "tcp");
        if (!se || ntohs((uint16_t)se->s_port) < 1024)
            continue;
        tried++;
        char a[64];
        snprintf(a, sizeof a, "127.0.0.1:%s", names[i]);
        int l = gort_listen("tcp", a);
        if (l == -EADDRINUSE)
            continue;
        check_gort_fd(l);
        CHECK_EQ(sock_port(l, false, NULL), ntohs((uint16_t)se->s_port));
        CHECK_EQ(round_trip(l, "tcp", a, NULL), AF_INET);
        gort_close(l);
        done = true;
    }
    if (!tried)
        fprintf(stderr, "service_names: none of the services looked for "
                        "is in /etc/services: the name lookup unchecked\n");
    else
        CHECK(done);
    /* A port of numbers: 0-65535 with an optional sign. */
    int l = gort_listen("tcp", "127.0.0.1:+0");
    check_gort_fd(l);
    gort_close(l);
    l = gort_listen("tcp", "127.0.0.1:-0");
    check_gort_fd(l);
    gort_close(l);
    FAILS(gort_listen("tcp", "127.0.0.1:65536"), -EINVAL);
    FAILS(gort_listen("tcp", "127.0.0.1:99999999999999999999"), -EINVAL);
    FAILS(gort_listen("tcp", "127.0.0.1:-1"), -EINVAL);
    FAILS(gort_dial("tcp", "127.0.0.1:65536", gort_no_deadline()), -EINVAL);
    /* A name that is no service. */
    FAILS(gort_listen("tcp", "127.0.0.1:no-such-service-here"),
          GORT_EAI(EAI_SERVICE));
    FAILS(
        gort_dial("tcp", "127.0.0.1:no-such-service-here", gort_no_deadline()),
        GORT_EAI(EAI_SERVICE));
}

/* Service names resolve to their /etc/services port (an unprivileged one
 * that is free, listened on and dialed by name); ports of numbers, signs
 * included, as Go reads them; out of range (-EINVAL) and unknown names
 * (GORT_EAI(EAI_SERVICE)). */
TEST(service_names)
{
    run_main(service_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Dialing: refused, several addresses, deadlines.
 * ------------------------------------------------------------------------- */

static void refused_main(void *arg)
{
    (void)arg;
    poller_up();
    char a[64];
    int l = gort_listen("tcp4", "127.0.0.1:0");
    check_gort_fd(l);
    hostport(a, sizeof a, "127.0.0.1", sock_port(l, false, NULL));
    gort_close(l);
    FAILS(gort_dial("tcp", a, gort_no_deadline()), -ECONNREFUSED);
    FAILS(gort_dial("tcp", a, gort_deadline_in(5 * SECOND)), -ECONNREFUSED);
}

/* A port nobody listens on: -ECONNREFUSED, with and without a deadline,
 * nothing left open. */
TEST(dial_refused)
{
    run_main(refused_main, NULL);
}

static void serial_main(void *arg)
{
    (void)arg;
    poller_up();
    if (!have_ipv6()) {
        no_ipv6("dial_serial");
        return;
    }
    /* Listening on 127.0.0.1 alone; [::] is tried as ::1 (refused), then
     * as 0.0.0.0 (Go's issue 18806), which is 127.0.0.1. */
    char a[64];
    int l = gort_listen("tcp4", "127.0.0.1:0");
    check_gort_fd(l);
    int port = sock_port(l, false, NULL);
    hostport(a, sizeof a, "::", port);
    CHECK_EQ(round_trip(l, "tcp", a, NULL), AF_INET);
    /* "tcp6" has no second address: the first error. */
    FAILS(gort_dial("tcp6", a, gort_no_deadline()), -ECONNREFUSED);
    gort_close(l);
    /* Neither accepts: the first address's error. */
    FAILS(gort_dial("tcp", a, gort_deadline_in(5 * SECOND)), -ECONNREFUSED);

    /* A name with ::1 first and 127.0.0.1 after it, where the machine's
     * /etc/hosts has one. */
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo("localhost", NULL, &hints, &res) != 0) {
        fprintf(stderr, "dial_serial: localhost does not resolve: its "
                        "check skipped\n");
        return;
    }
    bool v6_then_v4 = res->ai_family == AF_INET6 && res->ai_next &&
                      res->ai_next->ai_family == AF_INET;
    freeaddrinfo(res);
    if (!v6_then_v4) {
        fprintf(stderr, "dial_serial: localhost does not resolve to ::1 "
                        "then 127.0.0.1 here: its check skipped\n");
        return;
    }
    l = gort_listen("tcp4", "127.0.0.1:0");
    check_gort_fd(l);
    hostport(a, sizeof a, "localhost", sock_port(l, false, NULL));
    CHECK_EQ(round_trip(l, "tcp", a, NULL), AF_INET);
    gort_close(l);
}

/* Several addresses are tried in turn: "[::]:P" is ::1 and then 0.0.0.0
 * (Go's fallback); with only 127.0.0.1:P listening the first is refused
 * and the second connects; "tcp6" has only the first; with nothing
 * listening the first error comes back.  "localhost" too where it
 * resolves to ::1 before 127.0.0.1 (else skipped, saying so). */
TEST(dial_serial)
{
    run_main(serial_main, NULL);
}

static void past_main(void *arg)
{
    (void)arg;
    poller_up();
    char a[64];
    int l = gort_listen("tcp", "127.0.0.1:0");
    check_gort_fd(l);
    hostport(a, sizeof a, "127.0.0.1", sock_port(l, false, NULL));
    FAILS(gort_dial("tcp", a, gort_deadline_at(1)), -ETIMEDOUT);
    FAILS(gort_dial("tcp", a, gort_deadline_in(0)), -ETIMEDOUT);
    FAILS(gort_dial("tcp", a, gort_deadline_in(-SECOND)), -ETIMEDOUT);
    hostport(a, sizeof a, "localhost", sock_port(l, false, NULL));
    FAILS(gort_dial("tcp", a, gort_deadline_in(0)), -ETIMEDOUT);
    /* Nothing connected: the listener has no connection to accept. */
    CHECK_EQ(gort_fd_deadline(l, GORT_FD_READ, gort_deadline_in(50 * MS)), 0);
    CHECK_EQ(gort_accept(l, NULL, NULL), -ETIMEDOUT);
    gort_close(l);
    char name[64];
    snprintf(name, sizeof name, "@gort-test-past-%d", (int)getpid());
    l = gort_listen("unix", name);
    check_gort_fd(l);
    FAILS(gort_dial("unix", name, gort_deadline_in(0)), -ETIMEDOUT);
    CHECK_EQ(gort_fd_deadline(l, GORT_FD_READ, gort_deadline_in(50 * MS)), 0);
    CHECK_EQ(gort_accept(l, NULL, NULL), -ETIMEDOUT);
    gort_close(l);
}

/* A deadline that has passed (1, now, a second ago): -ETIMEDOUT before
 * anything is connected (the listener has nothing to accept), for a
 * number, a name and a Unix socket. */
TEST(deadline_passed)
{
    run_main(past_main, NULL);
}

/* A TCP listener on addr whose backlog is full: connections to it wait
 * (the kernel drops their SYNs) until the returned filler is closed. */
static int full_listener(int family, const struct sockaddr *addr, socklen_t len,
                         int *filler)
{
    int l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(l, 0);
    int one = 1;
    if (family == AF_INET6)
        CHECK_EQ(setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one), 0);
    if (bind(l, addr, len) < 0) {
        int e = errno;
        close(l);
        return -e;
    }
    CHECK_EQ(listen(l, 0), 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    CHECK_EQ(getsockname(l, (struct sockaddr *)&ss, &sl), 0);
    /* A backlog of 0 queues one connection. */
    *filler = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK_GE(*filler, 0);
    CHECK_EQ(connect(*filler, (struct sockaddr *)&ss, sl), 0);
    return l;
}

static void blackhole_main(void *arg)
{
    (void)arg;
    poller_up();
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int filler,
        l = full_listener(AF_INET, (struct sockaddr *)&sa, sizeof sa, &filler);
    CHECK_GE(l, 0);
    char a[64];
    hostport(a, sizeof a, "127.0.0.1", sock_port(l, false, NULL));
    int before = settled_fds();
    int64_t t0 = gort_nanotime();
    int r = gort_dial("tcp", a, gort_deadline_in(300 * MS));
    int64_t took = gort_nanotime() - t0;
    CHECK_EQ(r, -ETIMEDOUT);
    CHECK_GE(took, 300 * MS);
    CHECK_LT(took, 10 * SECOND);
    await_fds(before);
    close(filler);
    close(l);
}

/* A connection the listener never takes (its backlog full, on loopback):
 * the dial waits until its deadline, then -ETIMEDOUT with nothing left
 * open. */
TEST(deadline_unanswered)
{
    run_main(blackhole_main, NULL);
}

static void connect_until_main(void *arg)
{
    (void)arg;
    poller_up();
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int filler,
        l = full_listener(AF_INET, (struct sockaddr *)&sa, sizeof sa, &filler);
    CHECK_GE(l, 0);
    struct sockaddr_in to = sa;
    to.sin_port = htons((uint16_t)sock_port(l, false, NULL));
    /* Unanswered: -ETIMEDOUT at the deadline. */
    int fd = gort_socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    int64_t t0 = gort_nanotime();
    CHECK_EQ(gort_connect_until(fd, (struct sockaddr *)&to, sizeof to,
                                gort_deadline_in(100 * MS)),
             -ETIMEDOUT);
    int64_t took = gort_nanotime() - t0;
    CHECK_GE(took, 100 * MS);
    CHECK_LT(took, 5 * SECOND);
    CHECK_EQ(gort_close(fd), 0);
    /* A passed deadline: -ETIMEDOUT without waiting. */
    fd = gort_socket(AF_INET, SOCK_STREAM, 0);
    t0 = gort_nanotime();
    CHECK_EQ(gort_connect_until(fd, (struct sockaddr *)&to, sizeof to,
                                gort_deadline_in(0)),
             -ETIMEDOUT);
    CHECK_LT(gort_nanotime() - t0, 50 * MS);
    CHECK_EQ(gort_close(fd), 0);
    close(filler);
    close(l);
    /* Answered: 0, and the write deadline it set is cleared after. */
    int ln = gort_listen("tcp4", "127.0.0.1:0");
    check_gort_fd(ln);
    to.sin_port = htons((uint16_t)sock_port(ln, false, NULL));
    fd = gort_socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(gort_connect_until(fd, (struct sockaddr *)&to, sizeof to,
                                gort_deadline_in(2 * SECOND)),
             0);
    int s = gort_accept(ln, NULL, NULL);
    CHECK_GE(s, 0);
    gort_sleep(2100 * MS); /* past the connect's deadline */
    CHECK_EQ(gort_write(fd, "x", 1), 1);
    char c;
    CHECK_EQ(gort_read(s, &c, 1), 1);
    /* No deadline: as gort_connect without a timeout; a bad fd -EBADF. */
    int fd2 = gort_socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(gort_connect_until(fd2, (struct sockaddr *)&to, sizeof to,
                                gort_no_deadline()),
             0);
    CHECK_EQ(gort_connect_until(-1, (struct sockaddr *)&to, sizeof to,
                                gort_no_deadline()),
             -EBADF);
    gort_close(fd2);
    gort_close(s);
    s = gort_accept(ln, NULL, NULL);
    gort_close(s);
    gort_close(fd);
    gort_close(ln);
}

/* gort_connect_until: an unanswered connect (a full backlog) returns
 * -ETIMEDOUT at its deadline, a passed deadline at once; an answered one
 * 0, with no write deadline left behind; no deadline; a bad fd. */
TEST(connect_until)
{
    run_main(connect_until_main, NULL);
}

static void split_main(void *arg)
{
    (void)arg;
    poller_up();
    if (!have_ipv6()) {
        no_ipv6("deadline_split");
        return;
    }
    /* Port P: 127.0.0.1:P accepts, [::1]:P never answers; "[::]:P" tries
     * ::1 first, then 0.0.0.0. */
    int l4 = -1, l6 = -1, filler = -1, port = 0;
    for (int i = 0; i < 20 && l6 < 0; i++) {
        l4 = gort_listen("tcp4", "127.0.0.1:0");
        check_gort_fd(l4);
        port = sock_port(l4, false, NULL);
        struct sockaddr_in6 sa = {.sin6_family = AF_INET6,
                                  .sin6_port = htons((uint16_t)port),
                                  .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        l6 =
            full_listener(AF_INET6, (struct sockaddr *)&sa, sizeof sa, &filler);
        if (l6 < 0)
            gort_close(l4);
    }
    CHECK_GE(l6, 0);
    char a[64];
    hostport(a, sizeof a, "::", port);
    /* What is open before any dial: the count to come back to. */
    int before = settled_fds();
    /* 3 s for two addresses: 1.5 s each is under the 2 s minimum, so the
     * first gets 2 s and the second the rest. */
    int64_t t0 = gort_nanotime();
    int c = gort_dial("tcp", a, gort_deadline_in(3 * SECOND));
    int64_t took = gort_nanotime() - t0;
    check_gort_fd(c);
    CHECK_EQ(sock_family(c), AF_INET);
    /* Connected at all: the first attempt ended at its share, not at
     * the deadline (the bound above it is slack for a loaded machine). */
    CHECK_GE(took, 2 * SECOND);
    CHECK_LT(took, 5 * SECOND);
    gort_close(c);
    int s = gort_accept(l4, NULL, NULL);
    CHECK_GE(s, 0);
    gort_close(s);
    /* Every descriptor of that dial closed, the first attempt's
     * included (its close may finish on the thread that ran its
     * deadline's timer, after the dial has returned). */
    await_fds(before);
    /* Under the minimum the first address takes it all: -ETIMEDOUT, and
     * the second is never tried. */
    t0 = gort_nanotime();
    FAILS(gort_dial("tcp", a, gort_deadline_in(1 * SECOND)), -ETIMEDOUT);
    took = gort_nanotime() - t0;
    CHECK_GE(took, 1 * SECOND);
    await_fds(before);
    CHECK_EQ(gort_fd_deadline(l4, GORT_FD_READ, gort_deadline_in(50 * MS)), 0);
    CHECK_EQ(gort_accept(l4, NULL, NULL), -ETIMEDOUT);
    close(filler);
    close(l6);
    gort_close(l4);
}

/* The deadline shared between addresses (Go's partialDeadline): the first
 * address never answers, the second accepts.  With 3 s the first attempt
 * gets the 2 s minimum and the second connects after it; with 1 s the
 * first takes it all and the dial ends in -ETIMEDOUT without trying the
 * second. */
TEST(deadline_split)
{
    run_main(split_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Bad input and names that do not resolve.
 * ------------------------------------------------------------------------- */

static void bad_main(void *arg)
{
    (void)arg;
    poller_up();
    static const char *const networks[] = {"",   "tcp7",     "TCP",
                                           "ip", "ip4:icmp", "unix "};
    gort_deadline none = gort_no_deadline();
    for (size_t i = 0; i < sizeof networks / sizeof networks[0]; i++) {
        FAILS(gort_listen(networks[i], "127.0.0.1:0"), -EINVAL);
        FAILS(gort_dial(networks[i], "127.0.0.1:80", none), -EINVAL);
    }
    FAILS(gort_listen(NULL, ":0"), -EINVAL);
    FAILS(gort_dial(NULL, "127.0.0.1:80", none), -EINVAL);
    FAILS(gort_listen("tcp", NULL), -EINVAL);
    FAILS(gort_dial("tcp", NULL, none), -EINVAL);
    /* Dialing needs an address. */
    FAILS(gort_dial("tcp", "", none), -EINVAL);
    FAILS(gort_dial("udp", "", none), -EINVAL);
    static const char *const bad[] = {
        "127.0.0.1",     "::1:80",  "[::1]",   "[::1]:80]",
        "1.2.3.4:65536", "[::1:80", "host:-5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FAILS(gort_listen("tcp", bad[i]), -EINVAL);
        FAILS(gort_dial("tcp", bad[i], none), -EINVAL);
        FAILS(gort_listen("udp", bad[i]), -EINVAL);
    }
    /* A host longer than any name. */
    char lng[1200];
    memset(lng, 'a', sizeof lng);
    strcpy(lng + sizeof lng - 4, ":80");
    FAILS(gort_dial("tcp", lng, none), -EINVAL);
    FAILS(gort_listen("tcp", lng), -EINVAL);
}

/* Unknown networks, NULL and empty arguments, malformed addresses (no
 * port, too many colons, unbalanced brackets, ports out of range) and a
 * host too long: -EINVAL from both calls, nothing left open. */
TEST(bad_input)
{
    run_main(bad_main, NULL);
}

/* Whether err is what a name that does not resolve gives: a resolver
 * error (GORT_EAI), or, from a machine that cannot ask, -errno; not the
 * -EINVAL of a malformed address and not -ETIMEDOUT. */
static bool lookup_failure(int err)
{
    return err <= GORT_EAI(1) ||
           (err < 0 && err != -EINVAL && err != -ETIMEDOUT);
}

static void unknown_main(void *arg)
{
    (void)arg;
    poller_up();
    const char *a = "no-such-host.invalid:80";
    int before = settled_fds();
    int r1 = gort_dial("tcp", a, gort_no_deadline());
    int r2 = gort_dial("tcp", a, gort_deadline_in(30 * SECOND));
    int r3 = gort_listen("tcp", a);
    int r4 = gort_dial("udp", a, gort_deadline_in(30 * SECOND));
    fprintf(stderr, "%s: %s\n", a, gort_strerror(r1));
    CHECK(lookup_failure(r1));
    /* The lookup through a goroutine (with a deadline) fails alike (a
     * resolver may say "no such name" once and "try again" the next
     * time: any resolver error). */
    CHECK(lookup_failure(r2));
    CHECK(lookup_failure(r3));
    CHECK(lookup_failure(r4));
    await_fds(before);
}

/* A name under .invalid, which never resolves (RFC 6761): a resolver
 * error (GORT_EAI) from dial, with and without a deadline, and from
 * listen; nothing left open. */
TEST(unknown_host)
{
    run_main(unknown_main, NULL);
}

static void lookup_main(void *arg)
{
    (void)arg;
    poller_up();
    char a[64];
    int l = gort_listen("tcp4", "127.0.0.1:0");
    check_gort_fd(l);
    hostport(a, sizeof a, "localhost", sock_port(l, false, NULL));
    int64_t base = gort_numgoroutine();
    int fds = settled_fds();
    for (int i = 0; i < 50; i++) {
        int c = gort_dial("tcp4", a, gort_deadline_in(30 * SECOND));
        check_gort_fd(c);
        int s = gort_accept(l, NULL, NULL);
        CHECK_GE(s, 0);
        gort_close(s);
        gort_close(c);
    }
    await_fds(fds);
    /* Each lookup's goroutine ends once it has answered. */
    int64_t end = gort_nanotime() + 10 * SECOND;
    while (gort_numgoroutine() > base && gort_nanotime() < end)
        gort_sleep(MS);
    CHECK_EQ(gort_numgoroutine(), base);
    gort_close(l);
}

/* A name looked up under a deadline (in a goroutine of its own, waited
 * for until the deadline): 50 dials to "localhost" connect, and leave no
 * descriptor and no goroutine behind. */
TEST(lookup_deadline)
{
    run_main(lookup_main, NULL);
}
