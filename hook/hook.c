/* SPDX-License-Identifier: MIT */
/*
 * hook.c - gort-hook, the interposition library: the C library's
 * blocking calls under their own names, so that a program and the
 * libraries it uses (hiredis, libpq, libcurl, OpenSSL) park their
 * goroutine instead of its thread when they call them from a goroutine
 * (docs/hooks.md).  Linked into a program, or preloaded (LD_PRELOAD) into
 * one that uses the shared libgort.
 *
 * Each function asks libgort whether the calling thread runs a goroutine
 * (gort__hook_active); if so the goroutine version does the work
 * (src/hook.c), otherwise the C library's function does, exactly as
 * without gort-hook: before gort_main, on threads gort did not make, in
 * GORT_BLOCKING sections, after gort_main returned, in a forked child and
 * with GORTDEBUG=hook=0.
 *
 * The C library's functions are found once, by the constructor, with
 * dlsym(RTLD_NEXT): the next definition after this library's (the C
 * library's, or a sanitizer's interceptor).  The table goes to libgort too
 * (gort__hook_install), for the runtime's own calls.  A program linked
 * with -static has no dynamic loader to ask: gort-hook says so and stops
 * the program at its first call (docs/hooks.md).
 */
#include "../src/hook.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* The C library's functions: libgort's table, and those only the
 * non-goroutine path of this file needs. */
static struct gort__libc real;
static struct {
    int (*socketpair)(int, int, int, int *);
    int (*pipe)(int *);
    int (*accept)(int, struct sockaddr *, socklen_t *);
    ssize_t (*recv)(int, void *, size_t, int);
    ssize_t (*send)(int, const void *, size_t, int);
    int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *,
                 const sigset_t *);
    int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
    int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
    unsigned (*sleep)(unsigned);
    int (*usleep)(useconds_t);
    int (*dup)(int);
    int (*ioctl)(int, unsigned long, ...);
    int (*gethostbyname_r)(const char *, struct hostent *, char *, size_t,
                           struct hostent **, int *);
    struct hostent *(*gethostbyname)(const char *);
    struct hostent *(*gethostbyname2)(const char *, int);
} more;

static void *next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* Fill both tables (idempotent; the constructor and any call that comes
 * before it). */
static void resolve(void)
{
#define R(t, n) (t).n = (__typeof__((t).n))next(#n)
    R(real, read);
    R(real, write);
    R(real, readv);
    R(real, writev);
    R(real, recvfrom);
    R(real, sendto);
    R(real, recvmsg);
    R(real, sendmsg);
    R(real, accept4);
    R(real, connect);
    R(real, socket);
    R(real, pipe2);
    R(real, close);
    R(real, dup2);
    R(real, dup3);
    R(real, fcntl);
    R(real, getsockopt);
    R(real, setsockopt);
    R(real, poll);
    R(real, pselect);
    R(real, epoll_wait);
    R(real, nanosleep);
    R(real, clock_nanosleep);
    R(real, getaddrinfo);
    R(real, getnameinfo);
    R(real, gethostbyname2_r);
    R(more, socketpair);
    R(more, pipe);
    R(more, accept);
    R(more, recv);
    R(more, send);
    R(more, ppoll);
    R(more, select);
    R(more, epoll_pwait);
    R(more, sleep);
    R(more, usleep);
    R(more, dup);
    R(more, ioctl);
    R(more, gethostbyname_r);
    R(more, gethostbyname);
    R(more, gethostbyname2);
#undef R
    if (!real.read) {
        static const char msg[] =
            "gort-hook: dlsym(RTLD_NEXT) does not find the C library's "
            "functions: a program linked with -static cannot use gort-hook\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        abort();
    }
}

__attribute__((constructor)) static void hook_init(void)
{
    resolve();
    gort__hook_install(&real, sizeof real);
}

/* The C library's function n, resolved now if the constructor has not
 * run yet (another library's constructor may call it first). */
#define REAL(t, n)                                                             \
    (__builtin_expect((t).n != NULL, 1) ? (t).n : (resolve(), (t).n))

/* Marks the object for static links (gort::hook's link options name it,
 * so that the linker takes this file whole). */
const int gort__hook_linked = 1;

ssize_t read(int fd, void *buf, size_t n)
{
    if (gort__hook_active())
        return gort__hook_read(fd, buf, n);
    return REAL(real, read)(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (gort__hook_active())
        return gort__hook_write(fd, buf, n);
    return REAL(real, write)(fd, buf, n);
}

ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    if (gort__hook_active())
        return gort__hook_readv(fd, iov, cnt);
    return REAL(real, readv)(fd, iov, cnt);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (gort__hook_active())
        return gort__hook_writev(fd, iov, cnt);
    return REAL(real, writev)(fd, iov, cnt);
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    if (gort__hook_active())
        return gort__hook_recvfrom(fd, buf, n, flags, NULL, NULL);
    return REAL(more, recv)(fd, buf, n, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                 socklen_t *fromlen)
{
    if (gort__hook_active())
        return gort__hook_recvfrom(fd, buf, n, flags, from, fromlen);
    return REAL(real, recvfrom)(fd, buf, n, flags, from, fromlen);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    if (gort__hook_active())
        return gort__hook_recvmsg(fd, msg, flags);
    return REAL(real, recvmsg)(fd, msg, flags);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    if (gort__hook_active())
        return gort__hook_sendto(fd, buf, n, flags, NULL, 0);
    return REAL(more, send)(fd, buf, n, flags);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags,
               const struct sockaddr *to, socklen_t tolen)
{
    if (gort__hook_active())
        return gort__hook_sendto(fd, buf, n, flags, to, tolen);
    return REAL(real, sendto)(fd, buf, n, flags, to, tolen);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (gort__hook_active())
        return gort__hook_sendmsg(fd, msg, flags);
    return REAL(real, sendmsg)(fd, msg, flags);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    if (gort__hook_active())
        return gort__hook_accept4(fd, addr, len, 0);
    return REAL(more, accept)(fd, addr, len);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    if (gort__hook_active())
        return gort__hook_accept4(fd, addr, len, flags);
    return REAL(real, accept4)(fd, addr, len, flags);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    if (gort__hook_active())
        return gort__hook_connect(fd, addr, len);
    return REAL(real, connect)(fd, addr, len);
}

/* The calls that make descriptors: the hooks forget what they knew of
 * the numbers they return. */
int socket(int domain, int type, int protocol)
{
    int fd = REAL(real, socket)(domain, type, protocol);
    if (fd >= 0 && gort__hook_active())
        gort__hook_fd_new(fd);
    return fd;
}

int socketpair(int domain, int type, int protocol, int sv[2])
{
    int r = REAL(more, socketpair)(domain, type, protocol, sv);
    if (r == 0 && gort__hook_active()) {
        gort__hook_fd_new(sv[0]);
        gort__hook_fd_new(sv[1]);
    }
    return r;
}

int pipe(int fds[2])
{
    int r = REAL(more, pipe)(fds);
    if (r == 0 && gort__hook_active()) {
        gort__hook_fd_new(fds[0]);
        gort__hook_fd_new(fds[1]);
    }
    return r;
}

int pipe2(int fds[2], int flags)
{
    int r = REAL(real, pipe2)(fds, flags);
    if (r == 0 && gort__hook_active()) {
        gort__hook_fd_new(fds[0]);
        gort__hook_fd_new(fds[1]);
    }
    return r;
}

int dup(int fd)
{
    int r = REAL(more, dup)(fd);
    if (r >= 0 && gort__hook_active())
        gort__hook_fd_new(r);
    return r;
}

int dup2(int oldfd, int newfd)
{
    if (gort__hook_active())
        return gort__hook_dup3(oldfd, newfd, -1);
    return REAL(real, dup2)(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
    if (gort__hook_active())
        return gort__hook_dup3(oldfd, newfd, flags);
    return REAL(real, dup3)(oldfd, newfd, flags);
}

int close(int fd)
{
    if (gort__hook_active())
        return gort__hook_close(fd);
    return REAL(real, close)(fd);
}

/* fcntl's third argument is an int or a pointer, by command; passing it
 * on as a long or a pointer is what the C library's own fcntl does. */
int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int r = REAL(real, fcntl)(fd, cmd, arg);
    if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) &&
        gort__hook_active())
        gort__hook_fd_new(r);
    if (r >= 0 && cmd == F_SETFL)
        gort__hook_fd_changed();
    return r;
}

int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ioctl: the C library's; FIONBIO changes a descriptor's mode, of which
 * the hooks keep a copy (src/hook.c, pd_modes). */
int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int r = REAL(more, ioctl)(fd, req, arg);
    if (r >= 0 && req == FIONBIO)
        gort__hook_fd_changed();
    return r;
}

/* Socket options are the kernel's; the hooks keep a copy of SO_RCVTIMEO
 * and SO_SNDTIMEO, which become deadlines. */
int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    int r = REAL(real, setsockopt)(fd, level, name, val, len);
    if (r == 0 && level == SOL_SOCKET &&
        (name == SO_RCVTIMEO || name == SO_SNDTIMEO))
        gort__hook_fd_changed();
    return r;
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    return REAL(real, getsockopt)(fd, level, name, val, len);
}

int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
    if (gort__hook_active()) {
        struct timespec ts = {timeout_ms / 1000,
                              (timeout_ms % 1000) * 1000000L};
        return gort__hook_ppoll(fds, n, timeout_ms < 0 ? NULL : &ts);
    }
    return REAL(real, poll)(fds, n, timeout_ms);
}

/* A parked goroutine is on no thread: ppoll's and pselect's signal mask
 * is not applied while it waits (docs/hooks.md). */
int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
          const sigset_t *mask)
{
    if (gort__hook_active())
        return gort__hook_ppoll(fds, n, timeout);
    return REAL(more, ppoll)(fds, n, timeout, mask);
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
    if (gort__hook_active()) {
        if (tv &&
            (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000)) {
            errno = EINVAL;
            return -1;
        }
        struct timespec ts;
        if (tv)
            ts = (struct timespec){tv->tv_sec, tv->tv_usec * 1000};
        return gort__hook_pselect(nfds, r, w, e, tv ? &ts : NULL, tv);
    }
    return REAL(more, select)(nfds, r, w, e, tv);
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
            const struct timespec *timeout, const sigset_t *mask)
{
    if (gort__hook_active())
        return gort__hook_pselect(nfds, r, w, e, timeout, NULL);
    return REAL(real, pselect)(nfds, r, w, e, timeout, mask);
}

int epoll_wait(int epfd, struct epoll_event *ev, int maxevents, int timeout)
{
    if (gort__hook_active())
        return gort__hook_epoll_wait(epfd, ev, maxevents, timeout);
    return REAL(real, epoll_wait)(epfd, ev, maxevents, timeout);
}

int epoll_pwait(int epfd, struct epoll_event *ev, int maxevents, int timeout,
                const sigset_t *mask)
{
    if (gort__hook_active())
        return gort__hook_epoll_wait(epfd, ev, maxevents, timeout);
    return REAL(more, epoll_pwait)(epfd, ev, maxevents, timeout, mask);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (gort__hook_active()) {
        int e = gort__hook_clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
        if (e) {
            errno = e;
            return -1;
        }
        return 0;
    }
    return REAL(real, nanosleep)(req, rem);
}

int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
                    struct timespec *rem)
{
    if (gort__hook_active())
        return gort__hook_clock_nanosleep(clk, flags, req, rem);
    return REAL(real, clock_nanosleep)(clk, flags, req, rem);
}

unsigned sleep(unsigned s)
{
    if (gort__hook_active()) {
        struct timespec ts = {(time_t)s, 0};
        gort__hook_clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        return 0;
    }
    return REAL(more, sleep)(s);
}

int usleep(useconds_t us)
{
    if (gort__hook_active()) {
        struct timespec ts = {(time_t)(us / 1000000),
                              (long)(us % 1000000) * 1000};
        gort__hook_clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
        return 0;
    }
    return REAL(more, usleep)(us);
}

/* Name lookups: the C library's, on one of a few threads (src/hook.c);
 * freeaddrinfo is the C library's own, which frees what its getaddrinfo
 * made. */
int getaddrinfo(const char *node, const char *service,
                const struct addrinfo *hints, struct addrinfo **res)
{
    if (gort__hook_active())
        return gort__hook_getaddrinfo(node, service, hints, res);
    return REAL(real, getaddrinfo)(node, service, hints, res);
}

int getnameinfo(const struct sockaddr *sa, socklen_t salen, char *host,
                socklen_t hostlen, char *serv, socklen_t servlen, int flags)
{
    if (gort__hook_active())
        return gort__hook_getnameinfo(sa, salen, host, hostlen, serv,
                                      servlen, flags);
    return REAL(real, getnameinfo)(sa, salen, host, hostlen, serv, servlen,
                                   flags);
}

int gethostbyname2_r(const char *name, int af, struct hostent *ret,
                     char *buf, size_t buflen, struct hostent **result,
                     int *h_errnop)
{
    if (gort__hook_active())
        return gort__hook_gethostbyname2_r(name, af, ret, buf, buflen, result,
                                           h_errnop);
    return REAL(real, gethostbyname2_r)(name, af, ret, buf, buflen, result,
                                        h_errnop);
}

int gethostbyname_r(const char *name, struct hostent *ret, char *buf,
                    size_t buflen, struct hostent **result, int *h_errnop)
{
    if (gort__hook_active())
        return gort__hook_gethostbyname2_r(name, AF_INET, ret, buf, buflen,
                                           result, h_errnop);
    return REAL(more, gethostbyname_r)(name, ret, buf, buflen, result,
                                       h_errnop);
}

/* gethostbyname and gethostbyname2 from a goroutine: one result for the
 * whole process, as the C library's (not thread-safe there either),
 * through gethostbyname2_r into a buffer grown until it fits. */
static struct hostent ghb_ent;
static char *ghb_buf;
static size_t ghb_len;

static struct hostent *hook_gethostbyname2(const char *name, int af)
{
    struct hostent *result = NULL;
    int herr = 0;
    for (;;) {
        if (!ghb_buf) {
            ghb_len = ghb_len ? ghb_len * 2 : 1024;
            if (!(ghb_buf = malloc(ghb_len))) {
                h_errno = NETDB_INTERNAL;
                errno = ENOMEM;
                return NULL;
            }
        }
        int r = gort__hook_gethostbyname2_r(name, af, &ghb_ent, ghb_buf,
                                            ghb_len, &result, &herr);
        if (r != ERANGE)
            break;
        free(ghb_buf);
        ghb_buf = NULL;
    }
    if (!result)
        h_errno = herr;
    return result;
}

struct hostent *gethostbyname2(const char *name, int af)
{
    if (gort__hook_active())
        return hook_gethostbyname2(name, af);
    return REAL(more, gethostbyname2)(name, af);
}

struct hostent *gethostbyname(const char *name)
{
    if (gort__hook_active())
        return hook_gethostbyname2(name, AF_INET);
    return REAL(more, gethostbyname)(name);
}
