/* SPDX-License-Identifier: MIT */
/*
 * test_hook_torture.c - gort-hook (hook/hook.c, src/hook.c) through the
 * whole life of descriptors: closed, dup2'd over and reused while
 * goroutines wait on them, half-closed, refused and reset connections,
 * the program's own non-blocking connect, poll and select on every kind
 * of descriptor and on numbers past FD_SETSIZE, fork and exec from a
 * goroutine, ten thousand descriptors at once, and several goroutines on
 * one descriptor.  Every result and errno is the C library's; where a
 * blocking call's outcome is not obvious the same steps run on a thread
 * gort did not make (the C library's own calls) and the two are compared.
 * Where the hooks differ from the C library by design (a close or dup2
 * wakes the goroutines waiting on the descriptor), docs/hooks.md says so
 * and the cases check that behaviour.  Linked with the shared
 * libgort-hook, as a program would be.
 */
#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Helpers.
 * ------------------------------------------------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Raise RLIMIT_NOFILE's soft limit to at least want; exit 77 (skipped)
 * with a message when the hard limit does not allow it. */
static void need_nofile(rlim_t want)
{
    struct rlimit rl;
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur >= want)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        printf("skipped: needs %llu descriptors, RLIMIT_NOFILE's hard limit "
               "is %llu\n",
               (unsigned long long)want, (unsigned long long)rl.rlim_max);
        fflush(stdout);
        exit(77);
    }
    rl.rlim_cur = want;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* A TCP listener on 127.0.0.1 with the given backlog; its address in
 * *addr. */
static int tcp_listener(int backlog, struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(fd, (struct sockaddr *)addr, sizeof *addr), 0);
    socklen_t len = sizeof *addr;
    CHECK_EQ(getsockname(fd, (struct sockaddr *)addr, &len), 0);
    CHECK_EQ(listen(fd, backlog), 0);
    return fd;
}

/* A loopback address whose port nobody listens on. */
static struct sockaddr_in closed_port(void)
{
    struct sockaddr_in a;
    int l = tcp_listener(1, &a);
    CHECK_EQ(close(l), 0);
    return a;
}

/* A Unix socket address in the abstract namespace, unique to this process
 * and tag. */
static socklen_t unix_addr(struct sockaddr_un *a, const char *tag)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1,
                     "gort-torture-%d-%s", (int)getpid(), tag);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A Unix stream listener at a's abstract name, with the given backlog. */
static int unix_listener(const char *tag, int backlog, struct sockaddr_un *a,
                         socklen_t *alen)
{
    *alen = unix_addr(a, tag);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    CHECK_EQ(bind(fd, (struct sockaddr *)a, *alen), 0);
    CHECK_EQ(listen(fd, backlog), 0);
    return fd;
}

/* A connected TCP pair over loopback, both ends in blocking mode. */
static void tcp_pair(int *a, int *b)
{
    struct sockaddr_in addr;
    int l = tcp_listener(4, &addr);
    *a = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(*a, 0);
    CHECK_EQ(connect(*a, (struct sockaddr *)&addr, sizeof addr), 0);
    *b = accept(l, NULL, NULL);
    CHECK_GE(*b, 0);
    CHECK_EQ(close(l), 0);
}

/* Fill socket fd's send side until it would block: the bytes sent. */
static size_t fill_socket(int fd)
{
    static char chunk[65536];
    size_t total = 0;
    for (size_t n = sizeof chunk; n > 0; n /= 4) {
        ssize_t r;
        while ((r = send(fd, chunk, n, MSG_DONTWAIT | MSG_NOSIGNAL)) > 0)
            total += (size_t)r;
        CHECK_EQ(r, -1);
        CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return total;
}

/* Shrink pipe write end wfd to one page and fill it: its size. */
static size_t fill_pipe(int wfd)
{
    int size = fcntl(wfd, F_SETPIPE_SZ, 4096);
    CHECK_GT(size, 0);
    char *buf = calloc(1, (size_t)size);
    CHECK(buf != NULL);
    CHECK_EQ(write(wfd, buf, (size_t)size), size);
    free(buf);
    return (size_t)size;
}

/* Read fd until the end of the stream: the bytes read. */
static size_t drain(int fd)
{
    char buf[4096];
    size_t total = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        total += (size_t)r;
    CHECK_EQ(r, 0);
    return total;
}

/* Whether fd's file description is in non-blocking mode. */
static bool nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK_GE(fl, 0);
    return (fl & O_NONBLOCK) != 0;
}

/* Run fn(arg) on a thread gort did not make, where every call is the C
 * library's own (the reference the hooked calls are compared with). */
struct plain {
    void (*fn)(void *);
    void *arg;
};

static void *plain_run(void *p)
{
    struct plain *x = p;
    x->fn(x->arg);
    return NULL;
}

static void on_plain_thread(void (*fn)(void *), void *arg)
{
    struct plain x = {fn, arg};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, plain_run, &x), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* ---------------------------------------------------------------------------
 * A goroutine that makes one blocking call, and its outcome.
 * ------------------------------------------------------------------------- */

enum op {
    OP_READ,      /* read(fd, buf, len) */
    OP_WRITE,     /* write(fd, data or zeros, len) */
    OP_WRITE_ALL, /* write(fd, 1 byte) until it fails: r the bytes written */
    OP_ACCEPT,    /* accept(fd, NULL, NULL) */
    OP_CONNECT,   /* connect(fd, addr, alen) */
    OP_POLL,      /* poll(pfd, npfd, timeout_ms) */
    OP_SELECT,    /* select on pfd's descriptors for reading, timeout_ms */
};

struct waiter {
    enum op op;
    int fd;
    size_t len;
    const char *data;
    char buf[64];
    struct sockaddr_storage addr;
    socklen_t alen;
    struct pollfd pfd[4];
    int npfd;
    int timeout_ms; /* -1: none */
    /* The outcome. */
    ssize_t r;
    int err;      /* errno when r is -1 (OP_WRITE_ALL: always) */
    int64_t took; /* ns */
    int64_t goid;
    int done; /* atomic */
};

static char zeros[65536];

static void waiter_main(void *arg)
{
    struct waiter *w = arg;
    int64_t t0 = now_ns();
    errno = 0;
    switch (w->op) {
    case OP_READ:
        w->r = read(w->fd, w->buf, w->len);
        break;
    case OP_WRITE:
        w->r = write(w->fd, w->data ? w->data : zeros, w->len);
        break;
    case OP_WRITE_ALL: {
        ssize_t n = 0, r;
        while ((r = write(w->fd, zeros, 1)) == 1)
            n++;
        CHECK_EQ(r, -1);
        w->r = n;
        break;
    }
    case OP_ACCEPT:
        w->r = accept(w->fd, NULL, NULL);
        break;
    case OP_CONNECT:
        w->r = connect(w->fd, (struct sockaddr *)&w->addr, w->alen);
        break;
    case OP_POLL:
        w->r = poll(w->pfd, (nfds_t)w->npfd, w->timeout_ms);
        break;
    case OP_SELECT: {
        fd_set rs;
        FD_ZERO(&rs);
        int nfds = 0;
        for (int i = 0; i < w->npfd; i++) {
            FD_SET(w->pfd[i].fd, &rs);
            if (w->pfd[i].fd >= nfds)
                nfds = w->pfd[i].fd + 1;
        }
        struct timeval tv = {w->timeout_ms / 1000,
                             (w->timeout_ms % 1000) * 1000};
        w->r = select(nfds, &rs, NULL, NULL, w->timeout_ms < 0 ? NULL : &tv);
        int e = errno;
        for (int i = 0; i < w->npfd; i++)
            w->pfd[i].revents =
                w->r > 0 && FD_ISSET(w->pfd[i].fd, &rs) ? POLLIN : 0;
        errno = e;
        break;
    }
    }
    w->err = w->r < 0 || w->op == OP_WRITE_ALL ? errno : 0;
    w->took = now_ns() - t0;
    ATOMIC_STORE(&w->done, 1);
}

static void start(struct waiter *w)
{
    w->done = 0;
    w->r = -2;
    w->err = -1;
    w->goid = gort_go(waiter_main, w);
    CHECK_GT(w->goid, 0);
}

/* Wait until w's goroutine is parked: in IO wait, or queued behind
 * another goroutine waiting on the same descriptor. */
static void parked(struct waiter *w)
{
    int64_t end = now_ns() + 30000 * MS;
    while (count_waiting("IO wait", w->goid) +
               count_waiting("sync.Mutex.Lock", w->goid) ==
           0) {
        CHECK(!ATOMIC_LOAD(&w->done));
        if (now_ns() > end)
            await_waiting("IO wait", w->goid, 1); /* fails with the dump */
        gort_sleep(MS / 4);
    }
}

/* Wait (at most 10 s) for w's call to return. */
static void finish(struct waiter *w)
{
    int64_t end = now_ns() + 10000 * MS;
    while (!ATOMIC_LOAD(&w->done)) {
        if (now_ns() > end) {
            fprintf(stderr,
                    "goroutine %lld (op %d on fd %d) still blocked "
                    "after 10 s\n",
                    (long long)w->goid, (int)w->op, w->fd);
            char *t = dump_text();
            fprintf(stderr, "%.20000s\n", t);
            free(t);
            CHECK(0);
        }
        gort_sleep(MS / 4);
    }
}

/* That w's call is still blocked after ms milliseconds. */
static void still_blocked(struct waiter *w, int ms)
{
    gort_sleep(ms * MS);
    CHECK(!ATOMIC_LOAD(&w->done));
}

/* ---------------------------------------------------------------------------
 * close while a goroutine waits: the waiter returns EBADF.
 * ------------------------------------------------------------------------- */

static void close_read_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int kind = 0; kind < 2; kind++) {
        int p[2];
        if (kind == 0)
            CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
        else
            CHECK_EQ(pipe(p), 0);
        struct waiter w = {.op = OP_READ, .fd = p[0], .len = 1};
        start(&w);
        parked(&w);
        CHECK_EQ(close(p[0]), 0);
        finish(&w);
        CHECK_EQ(w.r, -1);
        CHECK_EQ(w.err, EBADF);
        /* The file is gone once the reader has left: the peer sees it. */
        if (kind == 0) {
            char c;
            CHECK_EQ(read(p[1], &c, 1), 0);
        } else {
            errno = 0;
            CHECK_EQ(write(p[1], "x", 1), -1);
            CHECK_EQ(errno, EPIPE);
        }
        CHECK_EQ(close(p[1]), 0);
        CHECK_EQ(fcntl(p[0], F_GETFD), -1);
    }
}

/* A goroutine in read on a socket and on a pipe in blocking mode; close
 * of the descriptor from another goroutine returns 0 and the read -1 with
 * EBADF; then the file is closed (the socket's peer reads end of file, a
 * write to the pipe's write end fails with EPIPE) and the number too. */
TEST(close_wakes_read)
{
    signal(SIGPIPE, SIG_IGN);
    run_main(close_read_main, NULL);
}

static void close_write_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int kind = 0; kind < 2; kind++) {
        int p[2], fd, peer;
        size_t filled;
        if (kind == 0) {
            CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
            fd = p[0];
            peer = p[1];
            filled = fill_socket(fd);
        } else {
            CHECK_EQ(pipe(p), 0);
            fd = p[1];
            peer = p[0];
            filled = fill_pipe(fd);
        }
        struct waiter w = {.op = OP_WRITE, .fd = fd, .len = 1};
        start(&w);
        parked(&w);
        CHECK_EQ(close(fd), 0);
        finish(&w);
        CHECK_EQ(w.r, -1);
        CHECK_EQ(w.err, EBADF);
        /* Nothing of the failed write reached the peer. */
        CHECK_EQ(drain(peer), filled);
        CHECK_EQ(close(peer), 0);
    }
}

/* A goroutine in write on a full socket and on a full pipe in blocking
 * mode; close returns 0, the write -1 with EBADF, and the peer reads
 * exactly the bytes written before, then end of file. */
TEST(close_wakes_write)
{
    run_main(close_write_main, NULL);
}

static void close_accept_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    struct sockaddr_in in;
    struct sockaddr_un un;
    socklen_t unlen;
    int ls[2] = {tcp_listener(8, &in), unix_listener("acc", 8, &un, &unlen)};
    for (int i = 0; i < 2; i++) {
        struct waiter w = {.op = OP_ACCEPT, .fd = ls[i]};
        start(&w);
        parked(&w);
        CHECK_EQ(close(ls[i]), 0);
        finish(&w);
        CHECK_EQ(w.r, -1);
        CHECK_EQ(w.err, EBADF);
    }
    /* Nobody listens there any more. */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    errno = 0;
    CHECK_EQ(connect(c, (struct sockaddr *)&in, sizeof in), -1);
    CHECK_EQ(errno, ECONNREFUSED);
    CHECK_EQ(close(c), 0);
    c = socket(AF_UNIX, SOCK_STREAM, 0);
    errno = 0;
    CHECK_EQ(connect(c, (struct sockaddr *)&un, unlen), -1);
    CHECK_EQ(errno, ECONNREFUSED);
    CHECK_EQ(close(c), 0);
}

/* A goroutine in accept on a TCP and on a Unix listener; close returns 0
 * and the accept -1 with EBADF; a connect to either address is refused
 * afterwards. */
TEST(close_wakes_accept)
{
    run_main(close_accept_main, NULL);
}

/* Goroutines the poller has woken so far (a goroutine that waits by
 * trying again and again is woken over and over). */
static uint64_t netpoll_wakeups(void)
{
    gort_metric_sample m;
    CHECK_EQ(gort_metric_read("/gort/sched/netpoll-wakeups:goroutines", &m), 0);
    return m.u64;
}

static void close_connect_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int kind = 0; kind < 2; kind++) {
        /* A listener with backlog 0 that nobody accepts from: the first
         * connection fills its queue, the second waits. */
        struct waiter w = {.op = OP_CONNECT};
        int l, first;
        if (kind == 0) {
            struct sockaddr_in in;
            l = tcp_listener(0, &in);
            first = socket(AF_INET, SOCK_STREAM, 0);
            CHECK_EQ(connect(first, (struct sockaddr *)&in, sizeof in), 0);
            memcpy(&w.addr, &in, sizeof in);
            w.alen = sizeof in;
            w.fd = socket(AF_INET, SOCK_STREAM, 0);
        } else {
            struct sockaddr_un un;
            l = unix_listener("conn", 0, &un, &w.alen);
            first = socket(AF_UNIX, SOCK_STREAM, 0);
            CHECK_EQ(connect(first, (struct sockaddr *)&un, w.alen), 0);
            memcpy(&w.addr, &un, sizeof un);
            w.fd = socket(AF_UNIX, SOCK_STREAM, 0);
        }
        CHECK_GE(w.fd, 0);
        start(&w);
        parked(&w);
        /* It waits parked, not trying again and again. */
        uint64_t woken = netpoll_wakeups();
        still_blocked(&w, 100);
        CHECK_LE(netpoll_wakeups() - woken, 10);
        CHECK_EQ(close(w.fd), 0);
        finish(&w);
        CHECK_EQ(w.r, -1);
        CHECK_EQ(w.err, EBADF);
        CHECK_EQ(close(first), 0);
        CHECK_EQ(close(l), 0);
    }
}

/* A goroutine in connect in blocking mode to a TCP and to a Unix listener
 * whose backlog (0) is full: it stays parked (not retrying in a loop)
 * until close, which returns 0; the connect returns -1 with EBADF. */
TEST(close_wakes_connect)
{
    run_main(close_connect_main, NULL);
}

/* Connect with SO_SNDTIMEO of 100 ms to a full listener: the result,
 * errno, a second connect's errno and the time it took. */
struct timed_connect {
    int unix_kind;
    int r, err, r2, err2;
    int64_t took;
};

static void timed_connect_run(void *arg)
{
    struct timed_connect *t = arg;
    int l, first, fd;
    struct sockaddr_storage ss;
    socklen_t alen;
    if (!t->unix_kind) {
        struct sockaddr_in in;
        l = tcp_listener(0, &in);
        first = socket(AF_INET, SOCK_STREAM, 0);
        CHECK_EQ(connect(first, (struct sockaddr *)&in, sizeof in), 0);
        memcpy(&ss, &in, sizeof in);
        alen = sizeof in;
        fd = socket(AF_INET, SOCK_STREAM, 0);
    } else {
        struct sockaddr_un un;
        char tag[32];
        snprintf(tag, sizeof tag, "timeo-%d", (int)gettid());
        l = unix_listener(tag, 0, &un, &alen);
        first = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK_EQ(connect(first, (struct sockaddr *)&un, alen), 0);
        memcpy(&ss, &un, sizeof un);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
    }
    struct timeval tv = {0, 100 * 1000};
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
    int64_t t0 = now_ns();
    errno = 0;
    t->r = connect(fd, (struct sockaddr *)&ss, alen);
    t->err = errno;
    t->took = now_ns() - t0;
    errno = 0;
    t->r2 = connect(fd, (struct sockaddr *)&ss, alen);
    t->err2 = errno;
    CHECK(!nonblocking(fd));
    close(fd);
    close(first);
    close(l);
}

static void connect_timeo_main(void *arg)
{
    (void)arg;
    for (int kind = 0; kind < 2; kind++) {
        struct timed_connect hooked = {.unix_kind = kind},
                             plain = {.unix_kind = kind};
        timed_connect_run(&hooked);
        on_plain_thread(timed_connect_run, &plain);
        CHECK_EQ(hooked.r, -1);
        CHECK_EQ(hooked.r, plain.r);
        CHECK_EQ(hooked.err, plain.err);
        CHECK_EQ(hooked.err, kind == 0 ? EINPROGRESS : EAGAIN);
        CHECK_EQ(hooked.r2, plain.r2);
        CHECK_EQ(hooked.err2, plain.err2);
        CHECK_GE(hooked.took, 90 * MS);
        CHECK_LT(hooked.took, 5000 * MS);
    }
}

/* connect in blocking mode with SO_SNDTIMEO 100 ms to a full TCP and a
 * full Unix listener returns what the C library's does on a plain thread
 * (TCP: -1 EINPROGRESS, then EALREADY; Unix: -1 EAGAIN, twice), after
 * the timeout and not before. */
TEST(connect_sndtimeo)
{
    run_main(connect_timeo_main, NULL);
}

static void connect_reused_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    struct sockaddr_in in;
    int l = tcp_listener(0, &in);
    int first = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(connect(first, (struct sockaddr *)&in, sizeof in), 0);
    for (int round = 0; round < 3; round++) {
        /* A socket a goroutine waited on (the poller saw it writable),
         * closed behind the hooks' back. */
        int a, b;
        tcp_pair(&a, &b);
        struct waiter w = {.op = OP_READ, .fd = a, .len = 1};
        start(&w);
        parked(&w);
        CHECK_EQ(write(b, "r", 1), 1);
        finish(&w);
        CHECK_EQ(w.r, 1);
        CHECK_EQ(syscall(SYS_close, a), 0);
        /* Its number for a socket that connects to the full listener
         * (put there behind the hooks' back too). */
        int s = socket(AF_INET, SOCK_STREAM, 0);
        CHECK_GE(s, 0);
        if (s == a) {
            /* The lowest free number was a itself: the socket is there,
             * and the hooks saw it made.  Move it away and back behind
             * their back. */
            int t = (int)syscall(SYS_fcntl, s, F_DUPFD, a + 1);
            CHECK_GT(t, a);
            CHECK_EQ(syscall(SYS_close, s), 0);
            s = t;
        }
        int fd = (int)syscall(SYS_dup3, s, a, 0);
        CHECK_EQ(fd, a);
        CHECK_EQ(syscall(SYS_close, s), 0);
        struct timeval tv = {0, 100 * 1000};
        CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
        int64_t t0 = now_ns();
        errno = 0;
        CHECK_EQ(connect(fd, (struct sockaddr *)&in, sizeof in), -1);
        CHECK_EQ(errno, EINPROGRESS);
        CHECK_GE(now_ns() - t0, 90 * MS);
        CHECK_EQ(close(fd), 0);
        CHECK_EQ(close(b), 0);
    }
    CHECK_EQ(close(first), 0);
    CHECK_EQ(close(l), 0);
}

/* A blocking connect on a number that a socket the poller watched had
 * (closed behind the hooks' back, with readiness left over) does not
 * take the old socket's readiness for its outcome: to a full listener
 * with SO_SNDTIMEO 100 ms it fails with EINPROGRESS after the timeout. */
TEST(connect_on_reused_number)
{
    run_main(connect_reused_main, NULL);
}

static void close_poll_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    /* One descriptor, then two (a pipe and the socket that is closed),
     * with no timeout and with a long one. */
    for (int round = 0; round < 4; round++) {
        int sv[2], p[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        CHECK_EQ(pipe(p), 0);
        struct waiter w = {.op = OP_POLL, .timeout_ms = round % 2 ? 20000 : -1};
        w.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
        w.pfd[1] = (struct pollfd){.fd = p[0], .events = POLLIN};
        w.npfd = round < 2 ? 1 : 2;
        start(&w);
        parked(&w);
        CHECK_EQ(close(sv[0]), 0);
        finish(&w);
        CHECK_EQ(w.r, 1);
        CHECK_EQ(w.pfd[0].revents, POLLNVAL);
        CHECK_EQ(w.pfd[1].revents, 0);
        CHECK_LT(w.took, 5000 * MS);
        CHECK_EQ(close(sv[1]), 0);
        CHECK_EQ(close(p[0]), 0);
        CHECK_EQ(close(p[1]), 0);
    }
    /* select: EBADF, as for a closed descriptor in its sets. */
    for (int round = 0; round < 4; round++) {
        int sv[2], p[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        CHECK_EQ(pipe(p), 0);
        struct waiter w = {.op = OP_SELECT,
                           .timeout_ms = round % 2 ? 20000 : -1};
        w.pfd[0].fd = sv[0];
        w.pfd[1].fd = p[0];
        w.npfd = round < 2 ? 1 : 2;
        start(&w);
        parked(&w);
        CHECK_EQ(close(sv[0]), 0);
        finish(&w);
        CHECK_EQ(w.r, -1);
        CHECK_EQ(w.err, EBADF);
        CHECK_LT(w.took, 5000 * MS);
        CHECK_EQ(close(sv[1]), 0);
        CHECK_EQ(close(p[0]), 0);
        CHECK_EQ(close(p[1]), 0);
    }
}

/* A goroutine in poll on a socket alone, and on the socket and a pipe,
 * with no timeout and with 20 s: close of the socket wakes it at once and
 * poll returns 1 with POLLNVAL for the socket (what Linux's poll reports
 * for a closed descriptor) and nothing for the pipe; select, likewise
 * woken, fails with EBADF. */
TEST(close_wakes_poll_select)
{
    run_main(close_poll_main, NULL);
}

static void closed_at_once_main(void *arg)
{
    (void)arg;
    /* One P: the woken reader cannot run (and leave) while the checks
     * below are made; the descriptor's close(2) waits for it. */
    gort_gomaxprocs(1);
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct waiter w = {.op = OP_READ, .fd = sv[0], .len = 1};
    start(&w);
    parked(&w);
    CHECK_EQ(close(sv[0]), 0);
    char c = 'x';
    errno = 0;
    CHECK_EQ(write(sv[0], &c, 1), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(send(sv[0], &c, 1, MSG_NOSIGNAL), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(send(sv[0], &c, 1, MSG_DONTWAIT), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(recv(sv[0], &c, 1, MSG_DONTWAIT), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(read(sv[0], &c, 1), -1);
    CHECK_EQ(errno, EBADF);
    struct iovec iov = {&c, 1};
    errno = 0;
    CHECK_EQ(writev(sv[0], &iov, 1), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(accept(sv[0], NULL, NULL), -1);
    CHECK_EQ(errno, EBADF);
    struct pollfd pfd = {.fd = sv[0], .events = POLLIN | POLLOUT};
    CHECK_EQ(poll(&pfd, 1, 0), 1);
    CHECK_EQ(pfd.revents, POLLNVAL);
    fd_set ws;
    FD_ZERO(&ws);
    FD_SET(sv[0], &ws);
    struct timeval tv = {0, 0};
    errno = 0;
    CHECK_EQ(select(sv[0] + 1, NULL, &ws, NULL, &tv), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(dup2(sv[0], 1000), -1);
    CHECK_EQ(errno, EBADF);
    errno = 0;
    CHECK_EQ(close(sv[0]), -1);
    CHECK_EQ(errno, EBADF);
    finish(&w);
    CHECK_EQ(w.r, -1);
    CHECK_EQ(w.err, EBADF);
    /* Nothing was written to the closed socket. */
    CHECK_EQ(read(sv[1], &c, 1), 0);
    CHECK_EQ(close(sv[1]), 0);
}

/* Right after close returned (its close(2) waits for the woken reader,
 * which one P keeps from running yet), every hooked call on the number
 * fails as on a closed descriptor: write, send, recv, read, writev,
 * accept, select and dup2 with EBADF, poll with POLLNVAL, a second close
 * with EBADF; nothing written reaches the peer. */
TEST(closed_number_ebadf_at_once)
{
    run_main(closed_at_once_main, NULL);
}

/* ---------------------------------------------------------------------------
 * dup2 over a descriptor a goroutine waits on.
 * ------------------------------------------------------------------------- */

static void dup2_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int a[2], b[2];
    char c;
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
    struct waiter w = {.op = OP_READ, .fd = a[0], .len = 1};
    start(&w);
    parked(&w);
    CHECK_EQ(dup2(b[0], a[0]), a[0]);
    finish(&w);
    CHECK_EQ(w.r, -1);
    CHECK_EQ(w.err, EBADF);
    /* a[0] is b[0]'s file now, both ways; a's old file is closed. */
    CHECK_EQ(write(b[1], "n", 1), 1);
    CHECK_EQ(read(a[0], &c, 1), 1);
    CHECK_EQ(c, 'n');
    CHECK_EQ(write(a[0], "m", 1), 1);
    CHECK_EQ(read(b[1], &c, 1), 1);
    CHECK_EQ(c, 'm');
    CHECK_EQ(read(a[1], &c, 1), 0);
    /* A goroutine waits on a[0] (b's file) again: read through it. */
    w = (struct waiter){.op = OP_READ, .fd = a[0], .len = 1};
    start(&w);
    parked(&w);
    CHECK_EQ(write(b[1], "o", 1), 1);
    finish(&w);
    CHECK_EQ(w.r, 1);
    CHECK_EQ(w.buf[0], 'o');
    CHECK_EQ(close(a[0]), 0);
    CHECK_EQ(close(a[1]), 0);

    /* dup2 that fails leaves the waited descriptor alone. */
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
    w = (struct waiter){.op = OP_READ, .fd = a[0], .len = 1};
    start(&w);
    parked(&w);
    int gone = dup(b[1]);
    CHECK_EQ(close(gone), 0);
    errno = 0;
    CHECK_EQ(dup2(gone, a[0]), -1);
    CHECK_EQ(errno, EBADF);
    still_blocked(&w, 20);
    CHECK_EQ(write(a[1], "k", 1), 1);
    finish(&w);
    CHECK_EQ(w.r, 1);
    CHECK_EQ(w.buf[0], 'k');
    /* dup2 onto itself is a no-op, dup3 onto itself EINVAL. */
    CHECK_EQ(dup2(a[0], a[0]), a[0]);
    errno = 0;
    CHECK_EQ(dup3(a[0], a[0], 0), -1);
    CHECK_EQ(errno, EINVAL);

    /* A goroutine in poll on a number (alone, and beside a pipe) looks
     * at the new file after dup2: woken by the new file's data. */
    for (int k = 0; k < 2; k++) {
        int e[2], d[2], p[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, e), 0);
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, d), 0);
        CHECK_EQ(pipe(p), 0);
        struct waiter pw = {.op = OP_POLL, .npfd = k + 1, .timeout_ms = 20000};
        pw.pfd[0] = (struct pollfd){.fd = e[0], .events = POLLIN};
        pw.pfd[1] = (struct pollfd){.fd = p[0], .events = POLLIN};
        start(&pw);
        parked(&pw);
        CHECK_EQ(dup2(d[0], e[0]), e[0]);
        still_blocked(&pw, 20);
        CHECK_EQ(write(d[1], "q", 1), 1);
        finish(&pw);
        CHECK_EQ(pw.r, 1);
        CHECK_EQ(pw.pfd[0].revents, POLLIN);
        CHECK_EQ(read(e[0], &c, 1), 1);
        CHECK_EQ(c, 'q');
        int fds[6] = {e[0], e[1], d[0], d[1], p[0], p[1]};
        for (int i = 0; i < 6; i++)
            CHECK_EQ(close(fds[i]), 0);
    }

    /* close, then dup2 onto the number before the woken reader has left
     * (one P): the reader's late close(2) must not close the new file. */
    gort_gomaxprocs(1);
    w = (struct waiter){.op = OP_READ, .fd = a[0], .len = 1};
    start(&w);
    parked(&w);
    CHECK_EQ(close(a[0]), 0);
    CHECK_EQ(dup2(b[0], a[0]), a[0]);
    finish(&w);
    CHECK_EQ(w.r, -1);
    CHECK_EQ(w.err, EBADF);
    CHECK_GE(fcntl(a[0], F_GETFD), 0);
    CHECK_EQ(write(b[1], "p", 1), 1);
    CHECK_EQ(read(a[0], &c, 1), 1);
    CHECK_EQ(c, 'p');
    CHECK_EQ(close(a[0]), 0);
    CHECK_EQ(close(a[1]), 0);
    CHECK_EQ(close(b[0]), 0);
    CHECK_EQ(close(b[1]), 0);
}

/* dup2 of another socket over a descriptor a goroutine reads: the read
 * returns -1 with EBADF, the number then reads and writes the new file
 * (and a goroutine can wait on it), the old file is closed (its peer
 * reads end of file).  A dup2 that fails (EBADF) leaves the waiter
 * waiting; dup2 onto itself returns the number, dup3 EINVAL.  dup2 onto a
 * number whose close still waits for a woken reader gives it the new
 * file for good.  A goroutine in poll on the number looks at the new
 * file after dup2 (woken by its data). */
TEST(dup2_over_waited)
{
    run_main(dup2_main, NULL);
}

/* ---------------------------------------------------------------------------
 * A closed number reused by a new descriptor.
 * ------------------------------------------------------------------------- */

static void reuse_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int rounds = SANITIZED ? 60 : 300, reused = 0, behind = 0;
    for (int i = 0; i < rounds; i++) {
        int s[2], t[2];
        char c;
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
        int old = s[0];
        struct waiter w = {.op = OP_READ, .fd = s[0], .len = 8};
        start(&w);
        if (i % 8 == 0)
            parked(&w);
        else
            gort_sleep((i % 3) * 100 * 1000);
        /* A byte and the close race: the reader gets the byte or EBADF;
         * the byte's readiness event may come after the close.
         * ThreadSanitizer takes the close and the read's start or return
         * for a race on the descriptor (they are one): there the reader
         * has its byte first. */
        CHECK_EQ(write(s[1], "o", 1), 1);
        if (TSAN)
            finish(&w);
        CHECK_EQ(close(s[0]), 0);
        finish(&w);
        if (w.r == 1)
            CHECK_EQ(w.buf[0], 'o');
        else {
            CHECK_EQ(w.r, -1);
            CHECK_EQ(w.err, EBADF);
        }
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, t), 0);
        reused += t[0] == old || t[1] == old;
        int fd = t[0] == old ? t[0] : t[1];
        int peer = fd == t[0] ? t[1] : t[0];
        /* The new socket at the old number: a reader there waits for its
         * own data and gets exactly it. */
        struct waiter w2 = {.op = OP_READ, .fd = fd, .len = 8};
        start(&w2);
        parked(&w2);
        still_blocked(&w2, i % 10 == 0 ? 2 : 0);
        CHECK_EQ(write(peer, "n", 1), 1);
        finish(&w2);
        CHECK_EQ(w2.r, 1);
        CHECK_EQ(w2.buf[0], 'n');
        /* The old socket's peer sees its end closed. */
        errno = 0;
        CHECK_EQ(send(s[1], "z", 1, MSG_NOSIGNAL), -1);
        CHECK_EQ(errno, EPIPE);
        CHECK_EQ(close(s[1]), 0);
        /* Closed behind the hooks' back (as fclose of an fdopen'd socket
         * does), then the number reused: a reader on the new socket is
         * woken by its data. */
        CHECK_EQ(syscall(SYS_close, fd), 0);
        int u[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
        behind += u[0] == fd || u[1] == fd;
        int ufd = u[0] == fd ? u[0] : u[1];
        int upeer = ufd == u[0] ? u[1] : u[0];
        struct waiter w3 = {.op = OP_READ, .fd = ufd, .len = 8};
        start(&w3);
        parked(&w3);
        CHECK_EQ(write(upeer, "u", 1), 1);
        finish(&w3);
        CHECK_EQ(w3.r, 1);
        CHECK_EQ(w3.buf[0], 'u');
        CHECK_EQ(read(peer, &c, 1), 0);
        CHECK_EQ(close(peer), 0);
        CHECK_EQ(close(u[0]), 0);
        CHECK_EQ(close(u[1]), 0);
    }
    /* The kernel hands out the lowest free number: most rounds reused. */
    CHECK_GE(reused, rounds / 2);
    CHECK_GE(behind, rounds / 2);
}

/* A socket closed while a goroutine reads it (with a byte racing the
 * close), its number then taken by a new socket: the old reader gets the
 * byte or EBADF, a reader of the new socket waits for its own data and
 * gets exactly it, the old peer sees EPIPE.  The same after a close
 * behind the hooks' back (the raw system call). */
TEST(reused_number_no_stale_wakeups)
{
    run_main(reuse_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Half-close, refused and reset connections.
 * ------------------------------------------------------------------------- */

static void half_close_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int kind = 0; kind < 2; kind++) {
        int a, b;
        char c;
        if (kind == 0) {
            int sv[2];
            CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            a = sv[0];
            b = sv[1];
        } else {
            tcp_pair(&a, &b);
        }
        struct waiter w = {.op = OP_READ, .fd = b, .len = 8};
        start(&w);
        parked(&w);
        CHECK_EQ(shutdown(a, SHUT_WR), 0);
        finish(&w);
        CHECK_EQ(w.r, 0);
        errno = 0;
        CHECK_EQ(write(a, "x", 1), -1);
        CHECK_EQ(errno, EPIPE);
        errno = 0;
        CHECK_EQ(send(a, "x", 1, MSG_NOSIGNAL), -1);
        CHECK_EQ(errno, EPIPE);
        /* The other direction still works, with a reader waiting. */
        w = (struct waiter){.op = OP_READ, .fd = a, .len = 8};
        start(&w);
        parked(&w);
        CHECK_EQ(write(b, "y", 1), 1);
        finish(&w);
        CHECK_EQ(w.r, 1);
        CHECK_EQ(w.buf[0], 'y');
        CHECK_EQ(read(b, &c, 1), 0);
        /* And a reader of a is woken by b's own shutdown. */
        w = (struct waiter){.op = OP_READ, .fd = a, .len = 8};
        start(&w);
        parked(&w);
        CHECK_EQ(shutdown(b, SHUT_WR), 0);
        finish(&w);
        CHECK_EQ(w.r, 0);
        CHECK_EQ(close(a), 0);
        CHECK_EQ(close(b), 0);
        /* SHUT_RD wakes a reader of the same end with end of file. */
        if (kind == 0) {
            int sv[2];
            CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            a = sv[0];
            b = sv[1];
        } else {
            tcp_pair(&a, &b);
        }
        w = (struct waiter){.op = OP_READ, .fd = a, .len = 8};
        start(&w);
        parked(&w);
        CHECK_EQ(shutdown(a, SHUT_RD), 0);
        finish(&w);
        CHECK_EQ(w.r, 0);
        CHECK_EQ(write(a, "v", 1), 1);
        CHECK_EQ(read(b, &c, 1), 1);
        CHECK_EQ(c, 'v');
        CHECK_EQ(close(a), 0);
        CHECK_EQ(close(b), 0);
    }
}

/* Unix and TCP: shutdown(SHUT_WR) of one end wakes a goroutine reading
 * the other with end of file (0); writes on the shut end fail with EPIPE
 * (SIGPIPE ignored; send with MSG_NOSIGNAL); the other direction carries
 * data to a waiting reader until its own shutdown; SHUT_RD wakes a reader
 * of the same end with 0 and leaves its writes working. */
TEST(half_close)
{
    signal(SIGPIPE, SIG_IGN);
    run_main(half_close_main, NULL);
}

/* A blocking connect to addr: its result and errno, and then SO_ERROR
 * and the mode. */
struct refused {
    struct sockaddr_storage addr;
    socklen_t alen;
    int r, err, soerr;
    bool nonblock;
};

static void refused_run(void *arg)
{
    struct refused *x = arg;
    int fd = socket(x->addr.ss_family, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    errno = 0;
    x->r = connect(fd, (struct sockaddr *)&x->addr, x->alen);
    x->err = errno;
    socklen_t sl = sizeof x->soerr;
    CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &x->soerr, &sl), 0);
    x->nonblock = nonblocking(fd);
    CHECK_EQ(close(fd), 0);
}

static void refused_main(void *arg)
{
    (void)arg;
    struct sockaddr_in in = closed_port();
    struct sockaddr_un un;
    socklen_t unlen = unix_addr(&un, "nobody");
    /* A Unix socket bound but not listening, and a path that is not. */
    struct sockaddr_un bound;
    socklen_t boundlen = unix_addr(&bound, "bound");
    int bs = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_EQ(bind(bs, (struct sockaddr *)&bound, boundlen), 0);
    struct sockaddr_un path = {.sun_family = AF_UNIX};
    snprintf(path.sun_path, sizeof path.sun_path, "/tmp/gort-torture-%d-none/s",
             (int)getpid());
    const int want[4] = {ECONNREFUSED, ECONNREFUSED, ECONNREFUSED, ENOENT};
    for (int k = 0; k < 4; k++) {
        struct refused hooked = {0};
        switch (k) {
        case 0:
            memcpy(&hooked.addr, &in, sizeof in);
            hooked.alen = sizeof in;
            break;
        case 1:
            memcpy(&hooked.addr, &un, sizeof un);
            hooked.alen = unlen;
            break;
        case 2:
            memcpy(&hooked.addr, &bound, sizeof bound);
            hooked.alen = boundlen;
            break;
        case 3:
            memcpy(&hooked.addr, &path, sizeof path);
            hooked.alen = sizeof path;
            break;
        }
        struct refused plain = hooked;
        refused_run(&hooked);
        on_plain_thread(refused_run, &plain);
        CHECK_EQ(hooked.r, -1);
        CHECK_EQ(hooked.err, want[k]);
        CHECK_EQ(hooked.err, plain.err);
        CHECK_EQ(hooked.soerr, 0);
        CHECK_EQ(hooked.soerr, plain.soerr);
        CHECK(!hooked.nonblock);
    }
    CHECK_EQ(close(bs), 0);
}

/* A blocking connect to a TCP port nobody listens on, to a Unix name
 * nobody is bound to and to one bound but not listening fails with
 * ECONNREFUSED, to a missing path with ENOENT, as on a plain thread; the
 * error is consumed (SO_ERROR 0 afterwards) and the socket stays in
 * blocking mode. */
TEST(connection_refused)
{
    run_main(refused_main, NULL);
}

static void reset_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    /* The peer closes with data it never read: RST. */
    int a, b;
    char c;
    tcp_pair(&a, &b);
    CHECK_EQ(write(a, "unread", 6), 6);
    struct waiter w = {.op = OP_READ, .fd = a, .len = 8};
    start(&w);
    parked(&w);
    CHECK_EQ(close(b), 0);
    finish(&w);
    CHECK_EQ(w.r, -1);
    CHECK_EQ(w.err, ECONNRESET);
    CHECK_EQ(read(a, &c, 1), 0);
    errno = 0;
    CHECK_EQ(write(a, "x", 1), -1);
    CHECK_EQ(errno, EPIPE);
    errno = 0;
    CHECK_EQ(send(a, "x", 1, MSG_NOSIGNAL), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(close(a), 0);

    /* SO_LINGER 0: RST at once; a writer blocked on a full socket. */
    tcp_pair(&a, &b);
    struct linger lg = {1, 0};
    CHECK_EQ(setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    fill_socket(a);
    w = (struct waiter){.op = OP_WRITE_ALL, .fd = a};
    start(&w);
    parked(&w);
    CHECK_EQ(close(b), 0);
    finish(&w);
    CHECK_EQ(w.err, ECONNRESET);
    errno = 0;
    CHECK_EQ(write(a, "x", 1), -1);
    CHECK_EQ(errno, EPIPE);
    CHECK_EQ(read(a, &c, 1), 0);
    CHECK_EQ(close(a), 0);

    /* A reader blocked when the peer resets with SO_LINGER 0. */
    tcp_pair(&a, &b);
    CHECK_EQ(setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    w = (struct waiter){.op = OP_READ, .fd = a, .len = 8};
    start(&w);
    parked(&w);
    CHECK_EQ(close(b), 0);
    finish(&w);
    CHECK_EQ(w.r, -1);
    CHECK_EQ(w.err, ECONNRESET);
    CHECK_EQ(close(a), 0);
}

/* A blocking write of 8 MB to a TCP peer that reads nothing and then
 * resets (SO_LINGER 0): what the write returned (the bytes it wrote
 * before the reset) and the errno of the two writes after it. */
struct cut_write {
    ssize_t r;
    int err1, err2;
    int sigpipes;
};

static int sigpipes; /* atomic */

static void count_sigpipe(int sig)
{
    (void)sig;
    ATOMIC_INC(&sigpipes);
}

#define CUT_LEN (8 << 20)
static int cut_fd;
static char *cut_data;

static void cut_write_run(void *arg)
{
    struct cut_write *x = arg;
    x->r = write(cut_fd, cut_data, CUT_LEN);
    errno = 0;
    CHECK_EQ(write(cut_fd, "x", 1), -1);
    x->err1 = errno;
    errno = 0;
    CHECK_EQ(write(cut_fd, "x", 1), -1);
    x->err2 = errno;
}

static void cut_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    cut_data = calloc(1, CUT_LEN);
    CHECK(cut_data != NULL);
    struct linger lg = {1, 0};
    struct cut_write res[2];
    for (int k = 0; k < 2; k++) {
        int a, b;
        tcp_pair(&a, &b);
        CHECK_EQ(setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
        cut_fd = a;
        memset(&res[k], 0, sizeof res[k]);
        ATOMIC_STORE(&sigpipes, 0);
        if (k == 0) {
            struct waiter w = {
                .op = OP_WRITE, .fd = a, .len = CUT_LEN, .data = cut_data};
            start(&w);
            parked(&w);
            CHECK_EQ(close(b), 0);
            finish(&w);
            /* The rest of the sequence, from this goroutine. */
            res[k].r = w.r;
            errno = 0;
            CHECK_EQ(write(a, "x", 1), -1);
            res[k].err1 = errno;
            errno = 0;
            CHECK_EQ(write(a, "x", 1), -1);
            res[k].err2 = errno;
        } else {
            /* The C library's own write, on a plain thread; the reset
             * once it has filled the buffers and blocks. */
            struct plain x = {cut_write_run, &res[k]};
            pthread_t t;
            CHECK_EQ(pthread_create(&t, NULL, plain_run, &x), 0);
            gort_sleep(100 * MS);
            CHECK_EQ(close(b), 0);
            CHECK_EQ(pthread_join(t, NULL), 0);
        }
        res[k].sigpipes = ATOMIC_LOAD(&sigpipes);
        CHECK_EQ(close(a), 0);
    }
    free(cut_data);
    CHECK_GT(res[1].r, 0);
    CHECK_LT(res[1].r, CUT_LEN);
    CHECK_GT(res[0].r, 0);
    CHECK_LT(res[0].r, CUT_LEN);
    CHECK_EQ(res[0].err1, res[1].err1);
    CHECK_EQ(res[0].err1, ECONNRESET);
    CHECK_EQ(res[0].err2, res[1].err2);
    CHECK_EQ(res[0].err2, EPIPE);
    CHECK_EQ(res[0].sigpipes, res[1].sigpipes);
    CHECK_EQ(res[0].sigpipes, 1);
}

/* A blocking write of 8 MB to a TCP peer that reads nothing, cut by the
 * peer's reset (SO_LINGER 0), returns the bytes it wrote; the next write
 * fails with ECONNRESET, the one after with EPIPE and raises the one
 * SIGPIPE of the three (counted by a handler), as the C library's own
 * write on a plain thread does. */
TEST(write_cut_by_reset)
{
    signal(SIGPIPE, count_sigpipe);
    run_main(cut_main, NULL);
}

/* TCP: a goroutine reading when the peer closes with unread data, and
 * one when the peer closes with SO_LINGER 0, returns -1 with ECONNRESET;
 * a writer blocked on a full socket stops with ECONNRESET; after that
 * reads return 0 and writes fail with EPIPE (SIGPIPE ignored; send with
 * MSG_NOSIGNAL too). */
TEST(connection_reset)
{
    signal(SIGPIPE, SIG_IGN);
    run_main(reset_main, NULL);
}

/* The program's own non-blocking connect: connect's result, poll's,
 * SO_ERROR, and the mode afterwards. */
struct nbconnect {
    struct sockaddr_in addr;
    int r, err, pr, soerr;
    short revents;
    bool nonblock;
};

static void nbconnect_run(void *arg)
{
    struct nbconnect *x = arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    CHECK_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    errno = 0;
    x->r = connect(fd, (struct sockaddr *)&x->addr, sizeof x->addr);
    x->err = errno;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    x->pr = poll(&p, 1, 5000);
    x->revents = p.revents;
    socklen_t sl = sizeof x->soerr;
    CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &x->soerr, &sl), 0);
    x->nonblock = nonblocking(fd);
    if (x->soerr == 0) {
        char c;
        errno = 0;
        CHECK_EQ(read(fd, &c, 1), -1);
        CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
    }
    CHECK_EQ(close(fd), 0);
}

static void nbconnect_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    struct sockaddr_in in;
    int l = tcp_listener(8, &in);
    struct nbconnect ok = {.addr = in};
    nbconnect_run(&ok);
    CHECK_EQ(ok.r, -1);
    CHECK_EQ(ok.err, EINPROGRESS);
    CHECK_EQ(ok.pr, 1);
    CHECK_EQ(ok.revents, POLLOUT);
    CHECK_EQ(ok.soerr, 0);
    CHECK(ok.nonblock);
    /* The listener has it. */
    int s = accept(l, NULL, NULL);
    CHECK_GE(s, 0);
    CHECK_EQ(close(s), 0);
    CHECK_EQ(close(l), 0);
    /* Refused: poll reports it, SO_ERROR says ECONNREFUSED, as on a
     * plain thread. */
    struct nbconnect bad = {.addr = closed_port()};
    struct nbconnect plain = bad;
    nbconnect_run(&bad);
    on_plain_thread(nbconnect_run, &plain);
    CHECK_EQ(bad.r, -1);
    CHECK_EQ(bad.err, EINPROGRESS);
    CHECK_EQ(bad.pr, 1);
    CHECK_EQ(bad.revents, plain.revents);
    CHECK(bad.revents & POLLERR);
    CHECK_EQ(bad.soerr, ECONNREFUSED);
    CHECK_EQ(plain.soerr, ECONNREFUSED);
    CHECK(bad.nonblock);
}

/* A socket the program made non-blocking: connect returns -1 with
 * EINPROGRESS, poll for POLLOUT returns 1 with POLLOUT, SO_ERROR is 0,
 * the socket stays non-blocking (a read says EAGAIN) and the listener
 * accepts it; to a port nobody listens on, poll reports what it reports
 * on a plain thread (POLLERR among it) and SO_ERROR is ECONNREFUSED. */
TEST(nonblocking_connect_by_program)
{
    run_main(nbconnect_main, NULL);
}

/* ---------------------------------------------------------------------------
 * poll and select on every kind of descriptor.
 * ------------------------------------------------------------------------- */

struct pollcall {
    struct pollfd pfd[6];
    int n, timeout, r;
};

static void pollcall_run(void *arg)
{
    struct pollcall *x = arg;
    x->r = poll(x->pfd, (nfds_t)x->n, x->timeout);
}

static int poll_writer_fd;

static void poll_writer(void *arg)
{
    (void)arg;
    gort_sleep(30 * MS);
    CHECK_EQ(write(poll_writer_fd, "w", 1), 1);
}

static void poll_mixed_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int sv[2], p[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK_EQ(pipe(p), 0);
    char tmpl[64];
    int file = mkstemp(tmp_template(tmpl, sizeof tmpl, "gort-torture-"));
    CHECK_GE(file, 0);
    CHECK_EQ(unlink(tmpl), 0);
    /* A number nothing is open at (a closed low one may be taken by any
     * library meanwhile: the hooks' own epoll instances for poll). */
    int bad = 9999;
    CHECK_EQ(fcntl(bad, F_GETFD), -1);
    /* Everything ready or invalid at once, with every kind of timeout. */
    const int timeouts[3] = {0, 100, -1};
    for (int k = 0; k < 3; k++) {
        struct pollcall x = {.n = 5, .timeout = timeouts[k]};
        x.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
        x.pfd[1] = (struct pollfd){.fd = p[0], .events = POLLIN};
        x.pfd[2] = (struct pollfd){.fd = file, .events = POLLIN | POLLOUT};
        x.pfd[3] = (struct pollfd){.fd = bad, .events = POLLIN};
        x.pfd[4] = (struct pollfd){.fd = -1, .events = POLLIN};
        struct pollcall plain = x;
        int64_t t0 = now_ns();
        pollcall_run(&x);
        CHECK_LT(now_ns() - t0, 50 * MS);
        on_plain_thread(pollcall_run, &plain);
        CHECK_EQ(x.r, 2);
        CHECK_EQ(x.r, plain.r);
        for (int i = 0; i < 5; i++)
            CHECK_EQ(x.pfd[i].revents, plain.pfd[i].revents);
        CHECK_EQ(x.pfd[2].revents, POLLIN | POLLOUT);
        CHECK_EQ(x.pfd[3].revents, POLLNVAL);
        /* The regular file alone, the invalid one alone. */
        struct pollcall f = {.n = 1, .timeout = timeouts[k]};
        f.pfd[0] = (struct pollfd){.fd = file, .events = POLLIN};
        pollcall_run(&f);
        CHECK_EQ(f.r, 1);
        CHECK_EQ(f.pfd[0].revents, POLLIN);
        f.pfd[0] = (struct pollfd){.fd = bad, .events = POLLOUT};
        pollcall_run(&f);
        CHECK_EQ(f.r, 1);
        CHECK_EQ(f.pfd[0].revents, POLLNVAL);
    }
    /* Nothing ready: the timeout, then a pipe made ready while waiting
     * (with and without a timeout); the socket's peer writable. */
    struct pollcall x = {.n = 3, .timeout = 50};
    x.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
    x.pfd[1] = (struct pollfd){.fd = p[0], .events = POLLIN};
    x.pfd[2] = (struct pollfd){.fd = -1, .events = POLLIN};
    int64_t t0 = now_ns();
    pollcall_run(&x);
    int64_t took = now_ns() - t0;
    CHECK_EQ(x.r, 0);
    CHECK_GE(took, 45 * MS);
    CHECK_LT(took, 5000 * MS);
    x.timeout = 0;
    pollcall_run(&x);
    CHECK_EQ(x.r, 0);
    for (int k = 0; k < 2; k++) {
        poll_writer_fd = p[1];
        CHECK_GT(gort_go(poll_writer, NULL), 0);
        x.timeout = k == 0 ? -1 : 10000;
        pollcall_run(&x);
        CHECK_EQ(x.r, 1);
        CHECK_EQ(x.pfd[0].revents, 0);
        CHECK_EQ(x.pfd[1].revents, POLLIN);
        CHECK_EQ(x.pfd[2].revents, 0);
        char c;
        CHECK_EQ(read(p[0], &c, 1), 1);
    }
    x.pfd[0] = (struct pollfd){.fd = sv[1], .events = POLLOUT};
    x.timeout = -1;
    pollcall_run(&x);
    CHECK_EQ(x.r, 1);
    CHECK_EQ(x.pfd[0].revents, POLLOUT);
    /* The same descriptor twice, once for each direction. */
    x = (struct pollcall){.n = 2, .timeout = -1};
    x.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
    x.pfd[1] = (struct pollfd){.fd = sv[0], .events = POLLOUT};
    pollcall_run(&x);
    CHECK_EQ(x.r, 1);
    CHECK_EQ(x.pfd[0].revents, 0);
    CHECK_EQ(x.pfd[1].revents, POLLOUT);
    /* Only invalid descriptors, no timeout: at once. */
    x = (struct pollcall){.n = 2, .timeout = -1};
    x.pfd[0] = (struct pollfd){.fd = bad, .events = POLLIN};
    x.pfd[1] = (struct pollfd){.fd = 19999, .events = POLLIN};
    pollcall_run(&x);
    CHECK_EQ(x.r, 2);
    CHECK_EQ(x.pfd[0].revents, POLLNVAL);
    CHECK_EQ(x.pfd[1].revents, POLLNVAL);
    CHECK_EQ(close(file), 0);
    CHECK_EQ(close(sv[0]), 0);
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(close(p[0]), 0);
    CHECK_EQ(close(p[1]), 0);
}

/* poll on a socket, a pipe, a regular file (always ready), a number
 * nothing is open at (POLLNVAL) and -1 (skipped) returns at once with the
 * timeout 0, 100 ms and none, with the counts and revents of a plain
 * thread's poll;
 * with only the socket and the pipe it waits out a 50 ms timeout, or
 * returns when another goroutine writes to the pipe (with and without a
 * timeout); the same descriptor twice, and only invalid ones, too. */
TEST(poll_mixed_descriptors)
{
    run_main(poll_mixed_main, NULL);
}

#define BITS (8 * sizeof(unsigned long))
static void bit_set(unsigned long *s, int fd)
{
    s[fd / BITS] |= 1ul << (fd % BITS);
}
static bool bit_isset(const unsigned long *s, int fd)
{
    return (s[fd / BITS] >> (fd % BITS)) & 1;
}

struct selectcall {
    int nfds, r, err;
    unsigned long *sets[3];
    size_t bytes;
    int64_t timeout_us; /* -1: none */
};

static void selectcall_run(void *arg)
{
    struct selectcall *x = arg;
    struct timeval tv = {x->timeout_us / 1000000, x->timeout_us % 1000000};
    errno = 0;
    x->r = select(x->nfds, (fd_set *)x->sets[0], (fd_set *)x->sets[1],
                  (fd_set *)x->sets[2], x->timeout_us < 0 ? NULL : &tv);
    x->err = errno;
}

static struct selectcall selectcall_new(int nfds, int64_t timeout_us)
{
    struct selectcall x = {.nfds = nfds, .timeout_us = timeout_us};
    size_t words = ((size_t)nfds + BITS - 1) / BITS;
    if (words * sizeof(unsigned long) < sizeof(fd_set))
        words = sizeof(fd_set) / sizeof(unsigned long);
    x.bytes = words * sizeof(unsigned long);
    for (int k = 0; k < 3; k++) {
        x.sets[k] = calloc(1, x.bytes);
        CHECK(x.sets[k] != NULL);
    }
    return x;
}

static struct selectcall selectcall_copy(const struct selectcall *x)
{
    struct selectcall y = *x;
    for (int k = 0; k < 3; k++) {
        y.sets[k] = malloc(x->bytes);
        CHECK(y.sets[k] != NULL);
        memcpy(y.sets[k], x->sets[k], x->bytes);
    }
    return y;
}

static void selectcall_free(struct selectcall *x)
{
    for (int k = 0; k < 3; k++)
        free(x->sets[k]);
}

static void selectcall_same(const struct selectcall *a,
                            const struct selectcall *b)
{
    CHECK_EQ(a->r, b->r);
    if (a->r < 0)
        CHECK_EQ(a->err, b->err);
    for (int k = 0; k < 3; k++)
        CHECK_EQ(memcmp(a->sets[k], b->sets[k], a->bytes), 0);
}

static gort_waitgroup select_writers;

/* Writes a byte to the descriptor arg after 30 ms. */
static void select_writer(void *arg)
{
    int fd = (int)(intptr_t)arg;
    gort_sleep(30 * MS);
    CHECK_EQ(write(fd, "s", 1), 1);
    gort_waitgroup_done(&select_writers);
}

/* Whether the test runs under an emulator (qemu-user), whose own select
 * stops at FD_SETSIZE. */
static bool under_emulator(void)
{
    const char *emu = getenv("GORT_TEST_EMULATOR");
    return emu && *emu;
}

static void select_high_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int sv[2], tv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, tv), 0);
    /* 1023: the last number an fd_set holds. */
    CHECK_EQ(dup2(sv[0], 1023), 1023);
    CHECK_EQ(dup2(tv[0], 1500), 1500);
    CHECK_EQ(dup2(sv[0], 4000), 4000);
    CHECK_EQ(dup2(tv[1], 4001), 4001);
    int most = under_emulator() ? 1024 : 4002;
    for (int nfds = 1024; nfds <= most; nfds += 4002 - 1024) {
        /* Writable and not readable, in all three sets, at once. */
        struct selectcall x = selectcall_new(nfds, 0);
        for (int k = 0; k < 3; k++) {
            bit_set(x.sets[k], 1023);
            if (nfds > 4000) {
                bit_set(x.sets[k], 1500);
                bit_set(x.sets[k], 4000);
            }
        }
        struct selectcall plain = selectcall_copy(&x);
        selectcall_run(&x);
        on_plain_thread(selectcall_run, &plain);
        selectcall_same(&x, &plain);
        CHECK_EQ(x.r, nfds > 4000 ? 3 : 1);
        CHECK(bit_isset(x.sets[1], 1023));
        CHECK(!bit_isset(x.sets[0], 1023));
        selectcall_free(&x);
        selectcall_free(&plain);
        /* Readable only: waits out a 50 ms timeout, the sets cleared. */
        x = selectcall_new(nfds, 50 * 1000);
        bit_set(x.sets[0], 1023);
        if (nfds > 4000)
            bit_set(x.sets[0], 1500);
        int64_t t0 = now_ns();
        selectcall_run(&x);
        int64_t took = now_ns() - t0;
        CHECK_EQ(x.r, 0);
        CHECK_GE(took, 45 * MS);
        CHECK(!bit_isset(x.sets[0], 1023));
        selectcall_free(&x);
        /* Then made readable by another goroutine while select waits. */
        for (int k = 0; k < 2; k++) {
            int target = nfds > 4000 && k == 1 ? 1500 : 1023;
            int wfd = target == 1023 ? sv[1] : tv[1];
            x = selectcall_new(nfds, k == 0 ? -1 : 10 * 1000 * 1000);
            bit_set(x.sets[0], 1023);
            if (nfds > 4000)
                bit_set(x.sets[0], 1500);
            gort_waitgroup_add(&select_writers, 1);
            CHECK_GT(gort_go(select_writer, (void *)(intptr_t)wfd), 0);
            selectcall_run(&x);
            CHECK_EQ(x.r, 1);
            CHECK(bit_isset(x.sets[0], target));
            if (nfds > 4000)
                CHECK(!bit_isset(x.sets[0], target == 1023 ? 1500 : 1023));
            char c;
            CHECK_EQ(read(target, &c, 1), 1);
            CHECK_EQ(c, 's');
            selectcall_free(&x);
        }
    }
    /* The writers are done before their descriptors close (the order a
     * race detector needs: select's readiness is no synchronization). */
    gort_waitgroup_wait(&select_writers);
    int nums[4] = {1023, 1500, 4000, 4001};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(close(nums[i]), 0);
    CHECK_EQ(close(sv[0]), 0);
    CHECK_EQ(close(sv[1]), 0);
    CHECK_EQ(close(tv[0]), 0);
    CHECK_EQ(close(tv[1]), 0);
}

/* select on sockets dup2'd to 1023, 1500, 4000 and 4001, with nfds 1024
 * (an fd_set) and 4002 (a bitmap allocated to size, RLIMIT_NOFILE raised;
 * not under an emulator, whose own select aborts past FD_SETSIZE):
 * with all three sets given it reports what a plain thread's select does
 * at once (writable, not readable); waiting for reading it times out
 * after 50 ms with the sets cleared, and returns 1 with only the right
 * bit when another goroutine writes. */
TEST(select_high_numbers)
{
    need_nofile(4200);
    run_main(select_high_main, NULL);
}

/* ---------------------------------------------------------------------------
 * fork and exec from a goroutine.
 * ------------------------------------------------------------------------- */

/* The O_NONBLOCK bit of a "flags:" line that the child printed for the
 * descriptor named by key ("fdinfo/0"), or -1 if missing. */
static int child_nonblock(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    if (!p)
        return -1;
    p = strstr(p, "flags:");
    if (!p)
        return -1;
    unsigned long fl = strtoul(p + 6, NULL, 8);
    return (fl & O_NONBLOCK) != 0;
}

static void fork_exec_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int in[2], out[2], keep[2], cx[2];
    CHECK_EQ(pipe(in), 0);
    CHECK_EQ(pipe(out), 0);
    CHECK_EQ(pipe(keep), 0);
    CHECK_EQ(pipe2(cx, O_CLOEXEC), 0);
    /* A goroutine waits on the child's stdin before the fork: the
     * poller watches it (and the hooks would have changed its mode, if
     * they did that). */
    struct waiter w = {.op = OP_READ, .fd = in[0], .len = 1};
    start(&w);
    parked(&w);
    CHECK_EQ(write(in[1], "-", 1), 1);
    finish(&w);
    CHECK_EQ(w.r, 1);
    CHECK(!nonblocking(in[0]));
    char script[512];
    snprintf(script, sizeof script,
             "read x; echo \"got $x\"; "
             "grep -H ^flags /proc/self/fdinfo/0 /proc/self/fdinfo/1; "
             "if [ -e /proc/self/fd/%d ]; then echo keep-open; fi; "
             "if [ -e /proc/self/fd/%d ]; then echo cloexec-open; fi",
             keep[1], cx[1]);
    pid_t pid = fork();
    CHECK_GE(pid, 0);
    if (pid == 0) {
        /* The child: only async-signal-safe calls until exec. */
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            _exit(126);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    CHECK_EQ(close(in[0]), 0);
    CHECK_EQ(close(out[1]), 0);
    /* A goroutine waits for the child's first byte; the child waits for
     * its line, blocked in its read. */
    w = (struct waiter){.op = OP_READ, .fd = out[0], .len = 1};
    start(&w);
    parked(&w);
    gort_sleep(50 * MS);
    CHECK(!ATOMIC_LOAD(&w.done));
    CHECK_EQ(write(in[1], "hello\n", 6), 6);
    finish(&w);
    CHECK_EQ(w.r, 1);
    char buf[4096];
    buf[0] = w.buf[0];
    size_t n = 1;
    ssize_t r;
    while ((r = read(out[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    CHECK_EQ(r, 0);
    buf[n] = '\0';
    int status = -1;
    for (int i = 0; i < 10000; i++) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        CHECK_GE(got, 0);
        if (got == pid)
            break;
        gort_sleep(MS);
    }
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    CHECK_STR_CONTAINS(buf, "got hello\n");
    CHECK_EQ(child_nonblock(buf, "fdinfo/0:"), 0);
    CHECK_EQ(child_nonblock(buf, "fdinfo/1:"), 0);
    CHECK_STR_CONTAINS(buf, "keep-open\n");
    CHECK(strstr(buf, "cloexec-open") == NULL);
    /* And the parent's ends are as they were. */
    CHECK(!nonblocking(in[1]));
    CHECK(!nonblocking(out[0]));
    CHECK_EQ(close(in[1]), 0);
    CHECK_EQ(close(out[0]), 0);
    CHECK_EQ(close(keep[0]), 0);
    CHECK_EQ(close(keep[1]), 0);
    CHECK_EQ(close(cx[0]), 0);
    CHECK_EQ(close(cx[1]), 0);
}

/* A goroutine forks and execs /bin/sh with pipes for stdin (which a
 * goroutine has waited on) and stdout: the child blocks in its read
 * until the parent writes (its descriptors are in blocking mode:
 * O_NONBLOCK clear in its /proc/self/fdinfo), its output reaches a
 * goroutine parked in a hooked read, a descriptor without FD_CLOEXEC is
 * inherited and one with it is not, and the child exits 0. */
TEST(fork_exec_child_blocking)
{
    run_main(fork_exec_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Many descriptors, and several goroutines on one.
 * ------------------------------------------------------------------------- */

#define NPAIRS (SANITIZED ? 500 : 5000)
/* ThreadSanitizer's own background thread, which the process counts. */
#define TSAN_THREADS TSAN
static int (*pairs)[2];
static int many_ok, many_in;

static void many_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    int v = -1;
    ATOMIC_INC(&many_in);
    ssize_t r = read(pairs[i][0], &v, sizeof v);
    if (r == (ssize_t)sizeof v && v == i)
        ATOMIC_INC(&many_ok);
}

static void many_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    pairs = calloc(NPAIRS, sizeof *pairs);
    CHECK(pairs != NULL);
    for (int i = 0; i < NPAIRS; i++)
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[i]), 0);
    for (int i = 0; i < NPAIRS; i++)
        CHECK_GT(gort_go(many_reader, (void *)(intptr_t)i), 0);
    while (ATOMIC_LOAD(&many_in) < NPAIRS)
        gort_sleep(MS);
    await_waiting("IO wait", 0, NPAIRS);
    int threads = count_threads();
    CHECK_LE(threads, 2 + 4 + TSAN_THREADS);
    /* Written in an order unlike the readers' start. */
    for (int k = 0; k < NPAIRS; k++) {
        int i = (int)(((int64_t)k * 7919) % NPAIRS);
        CHECK_EQ(write(pairs[i][1], &i, sizeof i), (ssize_t)sizeof i);
    }
    int64_t end = now_ns() + 60000 * MS;
    while (ATOMIC_LOAD(&many_ok) < NPAIRS && now_ns() < end)
        gort_sleep(MS);
    CHECK_EQ(ATOMIC_LOAD(&many_ok), NPAIRS);
    CHECK_LE(count_threads(), 2 + 4 + TSAN_THREADS);
    for (int i = 0; i < NPAIRS; i++) {
        CHECK_EQ(close(pairs[i][0]), 0);
        CHECK_EQ(close(pairs[i][1]), 0);
    }
    free(pairs);
}

/* 5,000 socketpairs (10,000 descriptors; 500 pairs under a sanitizer)
 * with a goroutine blocked in read on each, on 2 Ps: the process keeps at most
 * GOMAXPROCS + 4 threads (and ThreadSanitizer's own), and writes in a
 * shuffled order wake every reader with its own value. */
TEST(ten_thousand_descriptors)
{
    need_nofile((rlim_t)NPAIRS * 2 + 256);
    many_ok = many_in = 0;
    run_main(many_main, NULL);
}

static void two_readers_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int kind = 0; kind < 2; kind++) {
        int p[2];
        if (kind == 0)
            CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, p), 0);
        else
            CHECK_EQ(pipe(p), 0);
        struct waiter w[2] = {{.op = OP_READ, .fd = p[0], .len = 8},
                              {.op = OP_READ, .fd = p[0], .len = 8}};
        start(&w[0]);
        start(&w[1]);
        parked(&w[0]);
        parked(&w[1]);
        CHECK_EQ(write(p[1], "a", 1), 1);
        /* Exactly one of them gets it, the other goes on waiting. */
        int64_t end = now_ns() + 10000 * MS;
        while (!ATOMIC_LOAD(&w[0].done) && !ATOMIC_LOAD(&w[1].done)) {
            CHECK_LT(now_ns(), end);
            gort_sleep(MS / 4);
        }
        gort_sleep(20 * MS);
        int first = ATOMIC_LOAD(&w[0].done) ? 0 : 1;
        CHECK(!ATOMIC_LOAD(&w[1 - first].done));
        CHECK_EQ(w[first].r, 1);
        CHECK_EQ(w[first].buf[0], 'a');
        CHECK_EQ(write(p[1], "b", 1), 1);
        finish(&w[1 - first]);
        CHECK_EQ(w[1 - first].r, 1);
        CHECK_EQ(w[1 - first].buf[0], 'b');
        CHECK_EQ(close(p[0]), 0);
        CHECK_EQ(close(p[1]), 0);
    }
}

/* Two goroutines in read on one socket (and on one pipe): a byte written
 * wakes exactly one, which reads it while the other goes on waiting; a
 * second byte goes to the other. */
TEST(two_readers_one_descriptor)
{
    run_main(two_readers_main, NULL);
}

static void poll_and_read_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int sv[2];
    char c;
    /* A poller and a reader, both woken by a byte: the reader gets it;
     * poll reports POLLIN (the same byte, or a second one written once
     * the reader has returned, if the reader took the first before poll
     * looked again, as with the C library's calls). */
    for (int order = 0; order < 2; order++) {
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        struct waiter pw = {.op = OP_POLL, .npfd = 1, .timeout_ms = -1};
        pw.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
        struct waiter rw = {.op = OP_READ, .fd = sv[0], .len = 1};
        struct waiter *one = order ? &rw : &pw, *two = order ? &pw : &rw;
        start(one);
        parked(one);
        start(two);
        parked(two);
        CHECK_EQ(write(sv[1], "a", 1), 1);
        finish(&rw);
        CHECK_EQ(rw.r, 1);
        CHECK_EQ(rw.buf[0], 'a');
        gort_sleep(5 * MS);
        if (!ATOMIC_LOAD(&pw.done))
            CHECK_EQ(write(sv[1], "b", 1), 1);
        finish(&pw);
        CHECK_EQ(pw.r, 1);
        CHECK_EQ(pw.pfd[0].revents, POLLIN);
        CHECK_EQ(close(sv[0]), 0);
        CHECK_EQ(close(sv[1]), 0);
    }
    /* A poll with a timeout beside a reader that waits on: it times out
     * in time, and so does a second reader with SO_RCVTIMEO. */
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct waiter rw = {.op = OP_READ, .fd = sv[0], .len = 1};
    start(&rw);
    parked(&rw);
    struct waiter pw = {.op = OP_POLL, .npfd = 1, .timeout_ms = 100};
    pw.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
    start(&pw);
    finish(&pw);
    CHECK_EQ(pw.r, 0);
    CHECK_EQ(pw.pfd[0].revents, 0);
    CHECK_GE(pw.took, 95 * MS);
    CHECK_LT(pw.took, 5000 * MS);
    struct timeval tv = {0, 100 * 1000};
    CHECK_EQ(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    struct waiter tw = {.op = OP_READ, .fd = sv[0], .len = 1};
    start(&tw);
    finish(&tw);
    CHECK_EQ(tw.r, -1);
    CHECK_EQ(tw.err, EAGAIN);
    CHECK_GE(tw.took, 95 * MS);
    CHECK_LT(tw.took, 5000 * MS);
    /* The first reader, which started before the timeout was set, still
     * waits; close wakes it and a poller beside it together. */
    CHECK(!ATOMIC_LOAD(&rw.done));
    pw = (struct waiter){.op = OP_POLL, .npfd = 1, .timeout_ms = 20000};
    pw.pfd[0] = (struct pollfd){.fd = sv[0], .events = POLLIN};
    start(&pw);
    parked(&pw);
    CHECK_EQ(close(sv[0]), 0);
    finish(&rw);
    finish(&pw);
    CHECK_EQ(rw.r, -1);
    CHECK_EQ(rw.err, EBADF);
    CHECK_EQ(pw.r, 1);
    CHECK_EQ(pw.pfd[0].revents, POLLNVAL);
    CHECK_LT(pw.took, 5000 * MS);
    CHECK_EQ(read(sv[1], &c, 1), 0);
    CHECK_EQ(close(sv[1]), 0);
}

/* A goroutine in poll and another in read on one socket, in either order:
 * a byte wakes the reader with it and poll returns 1 with POLLIN.  Beside
 * a reader that waits on, a poll with a 100 ms timeout returns 0 after
 * it and a second reader with SO_RCVTIMEO 100 ms returns EAGAIN after it;
 * close wakes a poller (POLLNVAL) and the reader (EBADF) together. */
TEST(poll_beside_reader)
{
    run_main(poll_and_read_main, NULL);
}
