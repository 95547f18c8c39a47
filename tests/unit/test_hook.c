/* SPDX-License-Identifier: MIT */
/*
 * test_hook.c - gort-hook (hook/hook.c, src/hook.c): the C library's own
 * calls, made from goroutines, park the goroutine and not its thread, and
 * return what the C library's would have.  Linked with the shared
 * libgort-hook, as a program would be.
 */
#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* The most threads a process on 2 Ps may have with every goroutine
 * parked: the 2 Ms with Ps, sysmon, the gort_main thread and slack, and
 * ThreadSanitizer's own background thread; under an emulator (qemu-user),
 * whose system calls are slow enough for the runtime to hand off the P of
 * an accept or a connect now and then (and keep the thread), two more. */
#define THREADS_MOST (2 + 4 + TSAN + (under_emulator() ? 2 : 0))

static bool under_emulator(void)
{
    const char *emu = getenv("GORT_TEST_EMULATOR");
    return emu && *emu;
}

/* A counter of the metrics (gort_metrics_read). */
static uint64_t metric(const char *name)
{
    gort_metric_sample m = {.name = name};
    CHECK_EQ(gort_metrics_read(&m, 1), 0);
    CHECK_EQ(m.kind, GORT_METRIC_UINT64);
    return m.u64;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---------------------------------------------------------------------------
 * Many goroutines blocked in read(2) at once hold no thread each.
 * ------------------------------------------------------------------------- */

#define NREADERS 200
static int rpipes[NREADERS][2];
static gort_waitgroup readers_wg;
static int readers_ok;
static int32_t readers_in;

static void reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char buf[16];
    __atomic_add_fetch(&readers_in, 1, __ATOMIC_ACQ_REL);
    ssize_t r = read(rpipes[i][0], buf, sizeof buf);
    if (r == (ssize_t)sizeof(int)) {
        int v;
        memcpy(&v, buf, sizeof v);
        if (v == i)
            __atomic_add_fetch(&readers_ok, 1, __ATOMIC_ACQ_REL);
    }
    gort_waitgroup_done(&readers_wg);
}

static void many_readers_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    uint64_t parked0 = metric("/gort/hook/parked:calls");
    for (int i = 0; i < NREADERS; i++) {
        CHECK_EQ(pipe(rpipes[i]), 0);
        gort_waitgroup_add(&readers_wg, 1);
        CHECK_GT(gort_go(reader, (void *)(intptr_t)i), 0);
    }
    while (ATOMIC_LOAD(&readers_in) < NREADERS)
        gort_sleep(MS);
    gort_sleep(50 * MS); /* let every reader reach its read */
    int threads = count_threads();
    CHECK_LE(threads, THREADS_MOST);
    CHECK_GE(metric("/gort/hook/parked:calls") - parked0, NREADERS);
    for (int i = 0; i < NREADERS; i++)
        CHECK_EQ(write(rpipes[i][1], &i, sizeof i), (ssize_t)sizeof i);
    gort_waitgroup_wait(&readers_wg);
    CHECK_EQ(ATOMIC_LOAD(&readers_ok), NREADERS);
    for (int i = 0; i < NREADERS; i++) {
        CHECK_EQ(close(rpipes[i][0]), 0);
        CHECK_EQ(close(rpipes[i][1]), 0);
    }
}

/* 200 goroutines in read(2) on pipes in blocking mode at once, on 2 Ps:
 * the process keeps at most GOMAXPROCS + 4 threads, /gort/hook/parked
 * counts each, and each read returns the value written to its pipe. */
TEST(many_readers_no_threads)
{
    readers_ok = 0;
    readers_in = 0;
    run_main(many_readers_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Semantics as the C library's.
 * ------------------------------------------------------------------------- */

static void nonblock_main(void *arg)
{
    (void)arg;
    int p[2];
    CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
    char c;
    errno = 0;
    CHECK_EQ(read(p[0], &c, 1), -1);
    CHECK_EQ(errno, EAGAIN);
    /* The hooks leave the mode alone: blocking again, the read waits. */
    int fl = fcntl(p[0], F_GETFL);
    CHECK_EQ(fcntl(p[0], F_SETFL, fl & ~O_NONBLOCK), 0);
    CHECK_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
    CHECK_EQ(write(p[1], "x", 1), 1);
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(c, 'x');
    close(p[0]);
    close(p[1]);
}

/* A descriptor the program made non-blocking returns EAGAIN, and the
 * hooks never change a descriptor's mode. */
TEST(nonblocking_descriptor_eagain)
{
    run_main(nonblock_main, NULL);
}

static void nonblock_tty_main(void *arg)
{
    (void)arg;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    CHECK_GE(master, 0);
    CHECK_EQ(grantpt(master), 0);
    CHECK_EQ(unlockpt(master), 0);
    int tty = open(ptsname(master), O_RDWR | O_NOCTTY | O_NONBLOCK);
    CHECK_GE(tty, 0);
    struct termios t;
    CHECK_EQ(tcgetattr(tty, &t), 0);
    cfmakeraw(&t);
    CHECK_EQ(tcsetattr(tty, TCSANOW, &t), 0);
    char buf[16];
    errno = 0;
    CHECK_EQ(read(tty, buf, sizeof buf), -1);
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(write(master, "hello", 5), 5);
    /* The line discipline passes the bytes on in its own time. */
    struct pollfd p = {.fd = tty, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(read(tty, buf, sizeof buf), 5);
    CHECK_EQ(memcmp(buf, "hello", 5), 0);
    CHECK_EQ(write(tty, "x", 1), 1);
    CHECK_EQ(read(master, buf, 1), 1);
    CHECK_EQ(buf[0], 'x');
    close(tty);
    close(master);
}

/* A terminal (which refuses RWF_NOWAIT) that the program made
 * non-blocking: read(2) returns what is waiting and EAGAIN only when
 * nothing is, write(2) writes, as the C library's calls do. */
TEST(nonblocking_tty_reads_and_writes)
{
    run_main(nonblock_tty_main, NULL);
}

static void rcvtimeo_main(void *arg)
{
    (void)arg;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct timeval tv = {0, 50 * 1000};
    CHECK_EQ(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    char c;
    int64_t t0 = now_ns();
    errno = 0;
    CHECK_EQ(recv(sv[0], &c, 1, 0), -1);
    CHECK_EQ(errno, EAGAIN);
    int64_t took = now_ns() - t0;
    CHECK_GE(took, 45 * MS);
    CHECK_LT(took, 2000 * MS);
    close(sv[0]);
    close(sv[1]);
}

/* SO_RCVTIMEO is a deadline: EAGAIN once it passes, not before. */
TEST(so_rcvtimeo_deadline)
{
    run_main(rcvtimeo_main, NULL);
}

static int stale_sv[2];

static void *stale_make_socket(void *arg)
{
    (void)arg;
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, stale_sv), 0);
    return NULL;
}

static void stale_kind_main(void *arg)
{
    (void)arg;
    int p[2];
    CHECK_EQ(pipe(p), 0);
    char c = 'x';
    CHECK_EQ(write(p[1], &c, 1), 1);
    CHECK_EQ(read(p[0], &c, 1), 1); /* the hooks note p[0]: no socket */
    /* fclose closes p[0] with the C library's internal close, which the
     * hooks do not see; a thread gort did not create then gets the number
     * for a socket. */
    FILE *f = fdopen(p[0], "r");
    CHECK(f != NULL);
    fclose(f);
    CHECK_EQ(close(p[1]), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, stale_make_socket, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(stale_sv[0], p[0]);
    struct timeval tv = {0, 50 * 1000};
    CHECK_EQ(setsockopt(stale_sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv),
             0);
    int64_t t0 = now_ns();
    errno = 0;
    CHECK_EQ(read(stale_sv[0], &c, 1), -1);
    CHECK_EQ(errno, EAGAIN);
    int64_t took = now_ns() - t0;
    CHECK_GE(took, 45 * MS);
    CHECK_LT(took, 2000 * MS);
    close(stale_sv[0]);
    close(stale_sv[1]);
}

/* A number the hooks saw as a pipe, closed behind their back and reused
 * for a socket: read(2) on it still ends with EAGAIN when the socket's
 * SO_RCVTIMEO passes, as the C library's read does. */
TEST(stale_kind_keeps_rcvtimeo)
{
    run_main(stale_kind_main, NULL);
}

static int marked_pipe[2];
static gort_waitgroup marked_wg;

static void marked_reader(void *arg)
{
    (void)arg;
    /* A second in nanosleep made with syscall(2), which the hooks do not
     * see: sysmon finds the thread blocked in it and puts the goroutine
     * into the syscall state (where signals do that, they cut the call
     * short: it is made again until the second is over). */
    int64_t end = now_ns() + 1000 * MS;
    for (int64_t left; (left = end - now_ns()) > 0;) {
        struct timespec ts = {(time_t)(left / 1000000000),
                              (long)(left % 1000000000)};
        syscall(SYS_nanosleep, &ts, NULL);
    }
    char c;
    CHECK_EQ(read(marked_pipe[0], &c, 1), 1);
    CHECK_EQ(c, 'x');
    gort_waitgroup_done(&marked_wg);
}

static void marked_main(void *arg)
{
    (void)arg;
    CHECK_EQ(pipe(marked_pipe), 0);
    gort_waitgroup_add(&marked_wg, 1);
    int64_t goid = gort_go(marked_reader, NULL);
    CHECK_GT(goid, 0);
    await_waiting("syscall", goid, 1);
    await_waiting("IO wait", goid, 1);
    CHECK_EQ(write(marked_pipe[1], "x", 1), 1);
    gort_waitgroup_wait(&marked_wg);
    close(marked_pipe[0]);
    close(marked_pipe[1]);
}

/* A goroutine back from a call that sysmon put into the syscall state (a
 * raw nanosleep) parks in the poller on its next read(2) of an empty
 * pipe, as anywhere else, instead of blocking its thread in the C
 * library's read with the goroutine still in the syscall state.  Skipped
 * under ThreadSanitizer, where nothing takes a goroutine from a thread in
 * a raw call (rawsys.c). */
TEST(read_after_marked_call_parks)
{
    if (TSAN) {
        fprintf(stderr, "read_after_marked_call_parks: skipped (no call is "
                        "marked under ThreadSanitizer)\n");
        exit(77);
    }
    run_main(marked_main, NULL);
}

static int close_fd;
static int close_errno;
static gort_waitgroup close_wg;

static void blocked_reader(void *arg)
{
    (void)arg;
    char c;
    errno = 0;
    ssize_t r = read(close_fd, &c, 1);
    close_errno = r < 0 ? errno : 0;
    gort_waitgroup_done(&close_wg);
}

static void close_main(void *arg)
{
    (void)arg;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close_fd = sv[0];
    close_errno = -1;
    gort_waitgroup_add(&close_wg, 1);
    CHECK_GT(gort_go(blocked_reader, NULL), 0);
    gort_sleep(30 * MS);
    CHECK_EQ(close(sv[0]), 0);
    gort_waitgroup_wait(&close_wg);
    CHECK_EQ(close_errno, EBADF);
    /* The number again, for a new socket: the old wake-up is not its. */
    int sv2[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2), 0);
    CHECK_EQ(write(sv2[1], "y", 1), 1);
    char c;
    CHECK_EQ(read(sv2[0], &c, 1), 1);
    CHECK_EQ(c, 'y');
    close(sv[1]);
    close(sv2[0]);
    close(sv2[1]);
}

/* close of a descriptor another goroutine reads wakes it with EBADF; the
 * number, reused, works as new. */
TEST(close_wakes_reader_ebadf)
{
    run_main(close_main, NULL);
}

/* ---------------------------------------------------------------------------
 * poll, select, sleeps.
 * ------------------------------------------------------------------------- */

static int poll_pipe[2][2];

static void poll_writer(void *arg)
{
    (void)arg;
    gort_sleep(20 * MS);
    CHECK_EQ(write(poll_pipe[1][1], "z", 1), 1);
}

static void poll_main(void *arg)
{
    (void)arg;
    CHECK_EQ(pipe(poll_pipe[0]), 0);
    CHECK_EQ(pipe(poll_pipe[1]), 0);
    struct pollfd fds[3] = {{.fd = poll_pipe[0][0], .events = POLLIN},
                            {.fd = -1, .events = POLLIN},
                            {.fd = poll_pipe[1][0], .events = POLLIN}};
    /* Nothing ready: the timeout. */
    int64_t t0 = now_ns();
    CHECK_EQ(poll(fds, 3, 30), 0);
    CHECK(now_ns() - t0 >= 25 * MS);
    /* The second pipe becomes readable while the goroutine waits. */
    CHECK_GT(gort_go(poll_writer, NULL), 0);
    CHECK_EQ(poll(fds, 3, 5000), 1);
    CHECK_EQ(fds[0].revents, 0);
    CHECK_EQ(fds[1].revents, 0);
    CHECK_EQ(fds[2].revents, POLLIN);
    /* select sees it too; an invalid descriptor is EBADF. */
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(poll_pipe[0][0], &rs);
    FD_SET(poll_pipe[1][0], &rs);
    int nfds = (poll_pipe[0][0] > poll_pipe[1][0] ? poll_pipe[0][0]
                                                  : poll_pipe[1][0]) +
               1;
    struct timeval tv = {1, 0};
    CHECK_EQ(select(nfds, &rs, NULL, NULL, &tv), 1);
    CHECK(!FD_ISSET(poll_pipe[0][0], &rs));
    CHECK(FD_ISSET(poll_pipe[1][0], &rs));
    for (int i = 0; i < 2; i++) {
        close(poll_pipe[i][0]);
        close(poll_pipe[i][1]);
    }
    FD_ZERO(&rs);
    FD_SET(poll_pipe[0][0], &rs);
    tv = (struct timeval){0, 1000};
    errno = 0;
    CHECK_EQ(select(poll_pipe[0][0] + 1, &rs, NULL, NULL, &tv), -1);
    CHECK_EQ(errno, EBADF);
}

/* poll with a timeout, on several descriptors (and a negative one that it
 * skips), woken by the one that becomes ready; select likewise. */
TEST(poll_select_wait_and_wake)
{
    run_main(poll_main, NULL);
}

#define NSLEEPERS 500
static gort_waitgroup sleep_wg;
static int burn_stop;

/* Burns CPU until burn_stop: the process's CPU-time clock must move. */
static void burner(void *arg)
{
    (void)arg;
    while (!ATOMIC_LOAD(&burn_stop))
        ;
}

static void sleeper(void *arg)
{
    (void)arg;
    usleep(100 * 1000);
    gort_waitgroup_done(&sleep_wg);
}

static void sleep_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    int64_t t0 = now_ns();
    for (int i = 0; i < NSLEEPERS; i++) {
        gort_waitgroup_add(&sleep_wg, 1);
        CHECK_GT(gort_go(sleeper, NULL), 0);
    }
    gort_sleep(50 * MS);
    int threads = count_threads();
    gort_waitgroup_wait(&sleep_wg);
    int64_t took = now_ns() - t0;
    CHECK_LE(threads, THREADS_MOST);
    CHECK_LT(took, 3000 * MS);
    struct timespec req = {0, 10 * 1000 * 1000}, rem = {1, 1};
    t0 = now_ns();
    CHECK_EQ(nanosleep(&req, &rem), 0);
    CHECK(now_ns() - t0 >= 9 * MS);
    req.tv_nsec = 1000000000L;
    errno = 0;
    CHECK_EQ(nanosleep(&req, NULL), -1);
    CHECK_EQ(errno, EINVAL);
    /* A CPU-time clock runs with the process's work (a burner's, on the
     * other P): the hand-off. */
    burn_stop = 0;
    CHECK_GT(gort_go(burner, NULL), 0);
    uint64_t h0 = metric("/gort/hook/handoffs:calls");
    struct timespec cpu;
    CHECK_EQ(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu), 0);
    cpu.tv_nsec += 1000000;
    if (cpu.tv_nsec >= 1000000000L) {
        cpu.tv_sec++;
        cpu.tv_nsec -= 1000000000L;
    }
    CHECK_EQ(
        clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, TIMER_ABSTIME, &cpu, NULL),
        0);
    CHECK_EQ(metric("/gort/hook/handoffs:calls") - h0, 1);
    ATOMIC_STORE(&burn_stop, 1);
}

/* usleep in 500 goroutines at once parks them (no thread each, all done
 * in about one sleep's time); nanosleep sleeps and checks its argument; a
 * sleep on the process's CPU-time clock takes the hand-off, counted by
 * /gort/hook/handoffs. */
TEST(sleeps_park)
{
    run_main(sleep_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Sockets: connect and accept in blocking mode.
 * ------------------------------------------------------------------------- */

#define NCLIENTS 100
static int lsock;
static struct sockaddr_in laddr;
static gort_waitgroup conn_wg;
static int conn_ok;

static void echo_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0)
        CHECK_EQ(write(fd, buf, (size_t)n), n);
    close(fd);
}

static void acceptor(void *arg)
{
    (void)arg;
    for (int i = 0; i < NCLIENTS; i++) {
        int fd = accept(lsock, NULL, NULL);
        CHECK(fd >= 0);
        CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
        CHECK_GT(gort_go(echo_conn, (void *)(intptr_t)fd), 0);
    }
}

static void client(void *arg)
{
    int i = (int)(intptr_t)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK_EQ(connect(fd, (struct sockaddr *)&laddr, sizeof laddr), 0);
    CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    char msg[32], back[32];
    int len = snprintf(msg, sizeof msg, "hello %d", i);
    CHECK_EQ(send(fd, msg, (size_t)len, 0), len);
    ssize_t n = recv(fd, back, sizeof back, MSG_WAITALL);
    if (n == len && memcmp(msg, back, (size_t)len) == 0)
        __atomic_add_fetch(&conn_ok, 1, __ATOMIC_ACQ_REL);
    close(fd);
    gort_waitgroup_done(&conn_wg);
}

static void sockets_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    lsock = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(lsock >= 0);
    memset(&laddr, 0, sizeof laddr);
    laddr.sin_family = AF_INET;
    laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(lsock, (struct sockaddr *)&laddr, sizeof laddr), 0);
    socklen_t alen = sizeof laddr;
    CHECK_EQ(getsockname(lsock, (struct sockaddr *)&laddr, &alen), 0);
    CHECK_EQ(listen(lsock, 128), 0);
    CHECK_GT(gort_go(acceptor, NULL), 0);
    for (int i = 0; i < NCLIENTS; i++) {
        gort_waitgroup_add(&conn_wg, 1);
        CHECK_GT(gort_go(client, (void *)(intptr_t)i), 0);
    }
    gort_waitgroup_wait(&conn_wg);
    CHECK_EQ(ATOMIC_LOAD(&conn_ok), NCLIENTS);
    int threads = count_threads();
    CHECK_LE(threads, THREADS_MOST);
    close(lsock);
}

/* 100 clients connect, send, and read the echo back with MSG_WAITALL
 * through accept, connect, send, recv, read and write in blocking mode;
 * the descriptors stay in blocking mode and no thread is added. */
TEST(blocking_sockets_echo)
{
    conn_ok = 0;
    run_main(sockets_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Outside goroutines, and turned off.
 * ------------------------------------------------------------------------- */

/* Before gort_main and on threads gort did not make, the calls are the C
 * library's: a read on an empty pipe in non-blocking mode says EAGAIN, a
 * blocking one is served. */
TEST(outside_goroutines_plain)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(write(p[1], "q", 1), 1);
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    errno = 0;
    CHECK_EQ(read(p[0], &c, 1), -1);
    CHECK_EQ(errno, EAGAIN);
    close(p[0]);
    close(p[1]);
}

static void hook_off_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int i = 0; i < 20; i++) {
        CHECK_EQ(pipe(rpipes[i]), 0);
        gort_waitgroup_add(&readers_wg, 1);
        CHECK_GT(gort_go(reader, (void *)(intptr_t)i), 0);
    }
    while (ATOMIC_LOAD(&readers_in) < 20)
        gort_sleep(MS);
    /* The readers hold their threads: sysmon hands their Ps off. */
    int64_t t0 = now_ns();
    int threads;
    while ((threads = count_threads()) < 20 && now_ns() - t0 < 5000 * MS)
        gort_sleep(10 * MS);
    CHECK_GE(threads, 20);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(write(rpipes[i][1], &i, sizeof i), (ssize_t)sizeof i);
    gort_waitgroup_wait(&readers_wg);
    CHECK_EQ(ATOMIC_LOAD(&readers_ok), 20);
    for (int i = 0; i < 20; i++) {
        close(rpipes[i][0]);
        close(rpipes[i][1]);
    }
}

/* GORTDEBUG=hook=0: every call is the C library's, so 20 goroutines in
 * read(2) hold 20 threads (the test that shows the hooks make the
 * difference).  Skipped under ThreadSanitizer, where sysmon hands off no
 * P of a thread in a raw call. */
TEST(hook_off_plain_calls)
{
    if (TSAN) {
        fprintf(stderr, "hook_off_plain_calls: skipped (nothing takes the P "
                        "of a thread in a raw call under ThreadSanitizer)\n");
        exit(77);
    }
    setenv("GORTDEBUG", "hook=0", 1);
    readers_ok = 0;
    readers_in = 0;
    run_main(hook_off_main, NULL);
    unsetenv("GORTDEBUG");
}

/* ---------------------------------------------------------------------------
 * Name lookups.
 * ------------------------------------------------------------------------- */

#define NLOOKUPS 200
static gort_waitgroup dns_wg;
static int dns_ok;
static int32_t dns_threads_max;

static void lookup(void *arg)
{
    (void)arg;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int r = getaddrinfo("localhost", "80", &hints, &res);
    int t = count_threads();
    int32_t m = ATOMIC_LOAD(&dns_threads_max);
    while (t > m &&
           !__atomic_compare_exchange_n(&dns_threads_max, &m, t, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    if (r == 0 && res && res->ai_family == AF_INET &&
        ntohs(((struct sockaddr_in *)res->ai_addr)->sin_port) == 80 &&
        ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr ==
            htonl(INADDR_LOOPBACK))
        __atomic_add_fetch(&dns_ok, 1, __ATOMIC_ACQ_REL);
    if (r == 0)
        freeaddrinfo(res);
    gort_waitgroup_done(&dns_wg);
}

static void dns_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int i = 0; i < NLOOKUPS; i++) {
        gort_waitgroup_add(&dns_wg, 1);
        CHECK_GT(gort_go(lookup, NULL), 0);
    }
    gort_waitgroup_wait(&dns_wg);
    CHECK_EQ(ATOMIC_LOAD(&dns_ok), NLOOKUPS);
    /* At most 4 lookups at once, each on a thread: GOMAXPROCS, the 4,
     * sysmon and the thread a handed-off P went to; ThreadSanitizer's
     * background thread is counted too, and two more under an emulator,
     * as THREADS_MOST says. */
    CHECK_LE(ATOMIC_LOAD(&dns_threads_max),
             2 + 4 + 2 + TSAN + (under_emulator() ? 2 : 0));
    /* A name that does not exist: the C library's answer, as a code. */
    struct addrinfo *res = NULL;
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST};
    CHECK_EQ(getaddrinfo("not an address", NULL, &hints, &res), EAI_NONAME);
    /* getnameinfo and gethostbyname through the same path. */
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons(80),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    char host[256], serv[32];
    CHECK_EQ(getnameinfo((struct sockaddr *)&sin, sizeof sin, host, sizeof host,
                         serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV),
             0);
    CHECK_EQ(strcmp(host, "127.0.0.1"), 0);
    CHECK_EQ(strcmp(serv, "80"), 0);
    struct hostent *he = gethostbyname("localhost");
    CHECK(he != NULL);
    CHECK_EQ(he->h_addrtype, AF_INET);
    CHECK_EQ(((struct in_addr *)he->h_addr_list[0])->s_addr,
             htonl(INADDR_LOOPBACK));
}

/* 200 goroutines resolve "localhost" at once through getaddrinfo: every
 * answer is 127.0.0.1 port 80, and the lookups run on a few threads, not
 * one each; a bad numeric host gets EAI_NONAME; getnameinfo and
 * gethostbyname answer through the same path. */
TEST(name_lookups_few_threads)
{
    dns_ok = 0;
    dns_threads_max = 0;
    run_main(dns_main, NULL);
}

/* ---------------------------------------------------------------------------
 * A TCP read after a short one.
 * ------------------------------------------------------------------------- */

#define URG_ROUNDS 10
static gort_chan *urg_go, *urg_sent;
static int64_t urg_took[URG_ROUNDS];

/* A connected loopback TCP pair, both blocking, made through the hooks. */
static void tcp_pair(int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    struct sockaddr_in in = {.sin_family = AF_INET};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof in;
    CHECK_EQ(bind(l, (struct sockaddr *)&in, sizeof in), 0);
    CHECK_EQ(getsockname(l, (struct sockaddr *)&in, &len), 0);
    CHECK_EQ(listen(l, 1), 0);
    *a = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(*a >= 0);
    CHECK_EQ(connect(*a, (struct sockaddr *)&in, sizeof in), 0);
    *b = accept(l, NULL, NULL);
    CHECK(*b >= 0);
    CHECK_EQ(close(l), 0);
}

static void urg_reader(void *arg)
{
    int fd = (int)(intptr_t)arg, round;
    char buf[64];
    CHECK(gort_chan_recv(urg_go, &round));
    /* Waits (the poller now watches fd); one byte of 64: short. */
    CHECK_EQ(recv(fd, buf, sizeof buf, 0), 1);
    CHECK_EQ(buf[0], 'x');
    gort_chan_send(urg_sent, &round);
    CHECK(gort_chan_recv(urg_go, &round));
    /* "a", the urgent "!", "bc" are all there: the read stops at the
     * urgent mark, short again, with "bc" left that no edge will
     * announce. */
    CHECK_EQ(recv(fd, buf, sizeof buf, 0), 1);
    CHECK_EQ(buf[0], 'a');
    int64_t t0 = now_ns();
    CHECK_EQ(recv(fd, buf, sizeof buf, 0), 2);
    urg_took[round] = now_ns() - t0;
    CHECK_EQ(memcmp(buf, "bc", 2), 0);
    gort_chan_send(urg_sent, &round);
}

static void urg_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    CHECK_EQ(gort_chan_make(&urg_go, sizeof(int), 0), 0);
    CHECK_EQ(gort_chan_make(&urg_sent, sizeof(int), 0), 0);
    for (int round = 0; round < URG_ROUNDS; round++) {
        int a, b, r;
        tcp_pair(&a, &b);
        CHECK_GT(gort_go(urg_reader, (void *)(intptr_t)b), 0);
        gort_chan_send(urg_go, &round);
        gort_sleep(2 * MS); /* the reader parks */
        CHECK_EQ(send(a, "x", 1, 0), 1);
        CHECK(gort_chan_recv(urg_sent, &r));
        CHECK_EQ(send(a, "a", 1, 0), 1);
        CHECK_EQ(send(a, "!", 1, MSG_OOB), 1);
        CHECK_EQ(send(a, "bc", 2, 0), 2);
        gort_sleep(2 * MS); /* all of it there, its edges collected */
        gort_chan_send(urg_go, &round);
        CHECK(gort_chan_recv(urg_sent, &r));
        CHECK_EQ(close(a), 0);
        CHECK_EQ(close(b), 0);
    }
    int64_t took[URG_ROUNDS];
    memcpy(took, urg_took, sizeof took);
    for (int i = 1; i < URG_ROUNDS; i++)
        for (int j = i; j > 0 && took[j] < took[j - 1]; j--) {
            int64_t t = took[j];
            took[j] = took[j - 1];
            took[j - 1] = t;
        }
    /* Waiting for an edge would last until sysmon's check re-arms the
     * socket, 10 ms or more, every round. */
    CHECK_LT(took[URG_ROUNDS / 2], 5 * MS);
    gort_chan_free(urg_go);
    gort_chan_free(urg_sent);
}

/* A TCP read that was short waits for readiness before it reads again
 * (saving the read that would fail), except once urgent data came: a
 * read stops at the urgent mark with data left that no edge announces;
 * the next read gets it at once (median of 10 rounds under 5 ms, where
 * waiting would take sysmon's 10-180 ms). */
TEST(tcp_read_after_urgent_mark)
{
    run_main(urg_main, NULL);
}

/* ---------------------------------------------------------------------------
 * A descriptor closed behind the hooks' back.
 * ------------------------------------------------------------------------- */

static int stale_fd;

static void stale_writer(void *arg)
{
    (void)arg;
    gort_sleep(50 * MS);
    uint64_t one = 1;
    CHECK_EQ(write(stale_fd, &one, sizeof one), (ssize_t)sizeof one);
}

static void stale_reader(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char c;
    CHECK_EQ(read(fd, &c, 1), 1);
    gort_waitgroup_done(&readers_wg);
}

static void stale_main(void *arg)
{
    (void)arg;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    /* A read that waits: the poller now watches sv[0]'s number. */
    gort_waitgroup_add(&readers_wg, 1);
    CHECK_GT(gort_go(stale_reader, (void *)(intptr_t)sv[0]), 0);
    gort_sleep(20 * MS);
    CHECK_EQ(write(sv[1], "s", 1), 1);
    gort_waitgroup_wait(&readers_wg);
    /* Closed without the hooks, and the number taken by a file they did
     * not see made (eventfd is not interposed). */
    CHECK_EQ(syscall(SYS_close, sv[0]), 0);
    stale_fd = eventfd(0, EFD_CLOEXEC);
    CHECK_EQ(stale_fd, sv[0]);
    CHECK_GT(gort_go(stale_writer, NULL), 0);
    int64_t t0 = now_ns();
    uint64_t v = 0;
    CHECK_EQ(read(stale_fd, &v, sizeof v), (ssize_t)sizeof v);
    CHECK_EQ(v, 1);
    CHECK_LT(now_ns() - t0, 10000 * MS);
    close(stale_fd);
    close(sv[1]);
}

/* A socket the poller watched is closed with a raw close(2) and its
 * number reused by an eventfd, neither seen by the hooks; a read of the
 * eventfd that waits still wakes when it is written (sysmon's check of
 * parked hooked descriptors adds the number again), with the right
 * value. */
TEST(closed_behind_back_recovers)
{
    run_main(stale_main, NULL);
}
