/* SPDX-License-Identifier: MIT */
/*
 * fdio.c - every public call on a file descriptor: gort_read, gort_write,
 * gort_close and the other file calls, and the network and pipe API
 * (gort_fd_register, gort_socket, gort_pipe, gort_accept, gort_connect,
 * gort_readv/gort_writev, gort_sendto/gort_recvfrom, gort_shutdown,
 * gort_fd_set_deadline).  Mirrors internal/poll's FD (fd_unix.go) over the
 * runtime's pollDesc (netpoll.c).
 *
 * A descriptor the network poller knows (gort_fd_register, or made by
 * gort_socket, gort_accept, gort_pipe) is non-blocking: a call tries the
 * system call and, on EAGAIN, parks its goroutine in the pollDesc
 * (gort__fd_wait) until the descriptor is ready, its deadline passes or it
 * is closed, then tries again.  Every call on such a descriptor holds a
 * reference to its pollDesc (gort__fd_ref) for its whole length.  Any
 * other descriptor takes the syscall path: the call runs between
 * entersyscall and exitsyscall (syscall.c), so that a call that blocks
 * holds up its thread and not its P.
 *
 * Errors are returned as negative errnos.  A call reads errno through
 * GORT_ERRNO, on the thread the system call ran on: a goroutine may come
 * back from a park or a syscall on another thread.
 */
#include "atomic.h"
#include "libc.h"
#include "netpoll.h"
#include "preempt.h"
#include "san.h"
#include "sched.h"
#include "syscall.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef TCP_INQ
#define TCP_INQ 36
#endif
#ifndef TCP_CM_INQ
#define TCP_CM_INQ TCP_INQ
#endif

/* ---------------------------------------------------------------------------
 * I/O on registered descriptors.  Each tries the call; EAGAIN parks the
 * goroutine until the descriptor is ready.
 * ------------------------------------------------------------------------- */

/* fd's pollDesc with a reference held, or NULL when gort's calls take
 * the syscall path on fd: not registered, or registered by gort-hook
 * (hook.c), which leaves the descriptor in the program's mode. */
static struct polldesc *fd_ref(int fd)
{
    struct polldesc *pd = gort__fd_ref(fd);
    if (pd && GORT_UNLIKELY(pd->hooked)) {
        gort__fd_unref(pd);
        return NULL;
    }
    return pd;
}

/* The value of `call`, an expression of type `type` that uses `pd`, made
 * with a reference held on fd's pollDesc; -EBADF when fd is not
 * registered. */
#define WITH_PD(fd, type, call)                                                \
    __extension__({                                                            \
        struct polldesc *pd = fd_ref(fd);                                      \
        type with_pd_r = -EBADF;                                               \
        if (pd) {                                                              \
            with_pd_r = (call);                                                \
            gort__fd_unref(pd);                                                \
        }                                                                      \
        with_pd_r;                                                             \
    })

#define FD_IO(res, pd, mode, call)                                             \
    do {                                                                       \
        for (;;) {                                                             \
            (res) = (call);                                                    \
            if ((res) >= 0)                                                    \
                break;                                                         \
            int e_ = GORT_ERRNO;                                               \
            if (e_ == EINTR)                                                   \
                continue;                                                      \
            if (e_ != EAGAIN && e_ != EWOULDBLOCK) {                           \
                (res) = -e_;                                                   \
                break;                                                         \
            }                                                                  \
            int w_ = gort__fd_wait(pd, mode);                                  \
            if (w_) {                                                          \
                (res) = w_;                                                    \
                break;                                                         \
            }                                                                  \
        }                                                                      \
    } while (0)

static int pd_err(struct polldesc *pd)
{
    if (load_acq(&pd->closing))
        return -EBADF;
    return 0;
}

/* Ask the kernel to say, with every read of TCP socket fd, how many bytes
 * it left behind (TCP_INQ, Linux 4.18+).  Only on sockets gort made
 * itself (gort_socket, gort_accept): it adds a control message to the
 * program's own recvmsg calls on the socket.  False where refused. */
static bool enable_inq(int fd)
{
    int one = 1;
    return gort__libc.setsockopt(fd, IPPROTO_TCP, TCP_INQ, &one, sizeof one) ==
           0;
}

/* read(2) on a socket with TCP_INQ on; *left is what stays queued after
 * it (-1: not reported).  The kernel reports 1 at end of stream, so 0
 * means empty and open: new data will be a new edge. */
static ssize_t read_inq(int fd, void *buf, size_t n, int *left)
{
    struct iovec iov = {buf, n};
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cb;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cb.b;
    msg.msg_controllen = sizeof cb.b;
    ssize_t r = gort__libc.recvmsg(fd, &msg, 0);
    *left = -1;
    if (r > 0) {
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ &&
            c->cmsg_len >= CMSG_LEN(sizeof(int)))
            memcpy(left, CMSG_DATA(c), sizeof(int));
    }
    return r;
}

/* gort_read on a registered descriptor.  Mirrors FD.Read (fd_unix.go). */
static long fd_read(struct polldesc *pd, void *buf, size_t n)
{
    int e = pd_err(pd);
    if (e)
        return e;
    int err = gort__fd_checkerr(pd, 'r');
    if (err)
        return err;
    /* A short read of a stream empties it, so the next read would fail
     * with EAGAIN unless data came since; and data that came since is an
     * edge the poller has (or will have) collected.  So after a short
     * read, wait for readiness first and save the failing read(2): one
     * syscall of the three a request-reply exchange costs each side.
     * gort__fd_wait returns at once if readiness was seen meanwhile.  An
     * end of file or error gets no new edge once its event was consumed,
     * so a descriptor that reported one (rdhup) always reads first. */
    if (n > 0 && load_relaxed(&pd->rdrained) && !load_relaxed(&pd->rdhup)) {
        store_relaxed(&pd->rdrained, 0);
        if ((err = gort__fd_wait(pd, 'r')) != 0)
            return err;
    }
    for (;;) {
        /* With TCP_INQ a full read tells too whether it emptied the
         * socket: a client that writes a request and then reads exactly
         * the reply's size saves the read(2) that would fail before the
         * next reply.  Only a read that may fill its buffer needs that,
         * and recvmsg with its control message costs more than read(2)
         * (docs/design.md, "The network poller"), so a socket asks only
         * while its reads come back full: after the first full read, and
         * until one comes back short. */
        int left = -1;
        bool ask = pd->inq && load_relaxed(&pd->rdfull);
        ssize_t r = ask ? read_inq(pd->fd, buf, n, &left)
                        : gort__libc.read(pd->fd, buf, n);
        if (r >= 0) {
            /* Relaxed, both: hints for this descriptor's reader; any
             * value is safe (they only decide whether to try read(2)
             * first, and which call reads). */
            if (pd->stream && r > 0 && ((size_t)r < n || left == 0))
                store_relaxed(&pd->rdrained, 1);
            if (pd->inq && ((size_t)r == n) != ask)
                store_relaxed(&pd->rdfull, (size_t)r == n);
            return r;
        }
        int e = GORT_ERRNO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        if ((err = gort__fd_wait(pd, 'r')) != 0)
            return err;
    }
}

/* gort_write on a registered descriptor.  Mirrors FD.Write. */
static long fd_write(struct polldesc *pd, const void *buf, size_t n)
{
    /* All of it, as Go's FD.Write. */
    size_t done = 0;
    int err = gort__fd_checkerr(pd, 'w');
    if (err)
        return err;
    while (done < n) {
        ssize_t r = GORT_NOSIGPIPE(
            pd->fd,
            gort__libc.write(pd->fd, (const char *)buf + done, n - done));
        if (r >= 0) {
            done += (size_t)r;
            continue;
        }
        int e = GORT_ERRNO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return done > 0 ? (long)done : -e;
        int w = gort__fd_wait(pd, 'w');
        if (w)
            return done > 0 ? (long)done : w;
    }
    return (long)done;
}

/* ---------------------------------------------------------------------------
 * File calls: through the poller for registered descriptors, else the
 * syscall path.
 * ------------------------------------------------------------------------- */

long gort_read(int fd, void *buf, size_t n)
{
    GORT_SAN_SCOPE();
    struct polldesc *pd = fd_ref(fd);
    if (pd) {
        long r = fd_read(pd, buf, n);
        gort__fd_unref(pd);
        return r;
    }
    GORT_SYSCALL_RETRY(ssize_t, gort__libc.read(fd, buf, n));
}

long gort_write(int fd, const void *buf, size_t n)
{
    GORT_SAN_SCOPE();
    struct polldesc *pd = fd_ref(fd);
    if (pd) {
        long r = fd_write(pd, buf, n);
        gort__fd_unref(pd);
        return r;
    }
    GORT_SYSCALL_RETRY(ssize_t,
                       GORT_NOSIGPIPE(fd, gort__libc.write(fd, buf, n)));
}

long gort_pread(int fd, void *buf, size_t n, int64_t off)
{
    GORT_SAN_SCOPE();
    GORT_SYSCALL_RETRY(ssize_t, pread(fd, buf, n, (off_t)off));
}

long gort_pwrite(int fd, const void *buf, size_t n, int64_t off)
{
    GORT_SAN_SCOPE();
    GORT_SYSCALL_RETRY(ssize_t, pwrite(fd, buf, n, (off_t)off));
}

int gort_open(const char *path, int flags, ...)
{
    GORT_SAN_SCOPE();
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    GORT_SYSCALL_RETRY(int, open(path, flags, mode));
}

int gort_close(int fd)
{
    GORT_SAN_SCOPE();
    int pr = gort__fd_close(fd);
    if (pr != 1)
        return pr; /* it was the poller's */
    /* Not retried on EINTR: on Linux the descriptor is gone either way. */
    gort_entersyscall();
    int r = gort__libc.close(fd);
    int e = r < 0 ? errno : 0;
    gort_exitsyscall();
    return r < 0 && e != EINTR ? -e : 0;
}

int gort_fsync(int fd)
{
    GORT_SAN_SCOPE();
    GORT_SYSCALL_RETRY(int, fsync(fd));
}

int gort_poll(struct pollfd *fds, unsigned long nfds, int timeout_ms)
{
    GORT_SAN_SCOPE();
    /* Retried on EINTR with what is left of the timeout (rounded up to a
     * millisecond, as poll rounds), so that it still ends on time. */
    int64_t end = timeout_ms > 0 ? gort_nanotime() + timeout_ms * 1000000LL
                                 : 0;
    int r, e;
    gort_entersyscall();
    for (;;) {
        r = gort__libc.poll(fds, (nfds_t)nfds, timeout_ms);
        e = r < 0 ? GORT_ERRNO : 0;
        if (e != EINTR)
            break;
        if (timeout_ms > 0) {
            int64_t left = end - gort_nanotime();
            timeout_ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
        }
    }
    gort_exitsyscall();
    return r < 0 ? -e : r;
}

/* ---------------------------------------------------------------------------
 * Network and pipe I/O through the poller.
 * ------------------------------------------------------------------------- */

int gort_fd_register(int fd)
{
    GORT_SAN_SCOPE();
    return gort__fd_register(fd, false);
}

int gort_fd_set_deadline(int fd, int mode, int64_t when)
{
    GORT_SAN_SCOPE();
    int err = WITH_PD(fd, int, gort__fd_set_deadline(pd, mode, when));
    gort__preempt_check();
    return err;
}

/* readv/writev: through the poller for registered fds, else the syscall
 * path, retried on EINTR as gort_read and gort_write are. */
static long vec_io(int fd, const struct iovec *iov, int iovcnt, int mode)
{
    struct polldesc *pd = fd_ref(fd);
    if (!pd) {
        if (mode == 'r')
            GORT_SYSCALL_RETRY(ssize_t, gort__libc.readv(fd, iov, iovcnt));
        GORT_SYSCALL_RETRY(
            ssize_t, GORT_NOSIGPIPE(fd, gort__libc.writev(fd, iov, iovcnt)));
    }
    ssize_t r = pd_err(pd);
    if (r == 0)
        FD_IO(r, pd, mode,
              mode == 'r' ? gort__libc.readv(pd->fd, iov, iovcnt)
                          : GORT_NOSIGPIPE(pd->fd, gort__libc.writev(
                                                       pd->fd, iov, iovcnt)));
    gort__fd_unref(pd);
    return r;
}

long gort_readv(int fd, const struct iovec *iov, int iovcnt)
{
    GORT_SAN_SCOPE();
    return vec_io(fd, iov, iovcnt, 'r');
}

long gort_writev(int fd, const struct iovec *iov, int iovcnt)
{
    GORT_SAN_SCOPE();
    return vec_io(fd, iov, iovcnt, 'w');
}

int gort_socket(int domain, int type, int protocol)
{
    GORT_SAN_SCOPE();
    int fd = gort__libc.socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC,
                               protocol);
    if (fd < 0)
        return -errno;
    bool tcp = (domain == AF_INET || domain == AF_INET6) &&
               (type & 0xf) == SOCK_STREAM &&
               (protocol == 0 || protocol == IPPROTO_TCP);
    int err = gort__fd_register(fd, tcp && enable_inq(fd));
    if (err) {
        gort__libc.close(fd);
        return err;
    }
    return fd;
}

int gort_pipe(int fds[2])
{
    GORT_SAN_SCOPE();
    /* NULL is refused here: pipe2 with it fails with nothing open on
     * Linux, but qemu's user mode makes the pipe and loses it. */
    if (!fds)
        return -EFAULT;
    if (gort__libc.pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    int err = gort_fd_register(fds[0]);
    if (err) {
        gort__libc.close(fds[0]);
        gort__libc.close(fds[1]);
        return err;
    }
    if ((err = gort_fd_register(fds[1])) != 0) {
        gort_close(fds[0]); /* registered: gort closes it */
        gort__libc.close(fds[1]);
        return err;
    }
    return 0;
}

static int pd_accept(struct polldesc *pd, struct sockaddr *addr,
                     unsigned *addrlen)
{
    int fd = pd->fd, e = pd_err(pd);
    if (e)
        return e;
    for (;;) {
        socklen_t len = addrlen ? (socklen_t)*addrlen : 0;
        int nfd = gort__libc.accept4(fd, addr, addrlen ? &len : NULL,
                                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (nfd >= 0) {
            if (addrlen)
                *addrlen = (unsigned)len;
            /* A connection of a TCP listener gort made is a TCP socket
             * gort made. */
            int err = gort__fd_register(nfd, pd->inq && enable_inq(nfd));
            if (err) {
                gort__libc.close(nfd);
                return err;
            }
            return nfd;
        }
        int e = GORT_ERRNO;
        if (e == EINTR || e == ECONNABORTED)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        int w = gort__fd_wait(pd, 'r');
        if (w)
            return w;
    }
}

int gort_accept(int fd, struct sockaddr *addr, unsigned *addrlen)
{
    GORT_SAN_SCOPE();
    return WITH_PD(fd, int, pd_accept(pd, addr, addrlen));
}

/* connect(2), waiting for the outcome until at (an absolute
 * gort_nanotime(); 0: no limit, the descriptor's write deadline only). */
static int pd_connect(struct polldesc *pd, const struct sockaddr *addr,
                      unsigned addrlen, int64_t at)
{
    int fd = pd->fd, r = pd_err(pd);
    if (r)
        return r;
    while ((r = gort__libc.connect(fd, addr, (socklen_t)addrlen)) < 0 &&
           errno == EINTR)
        ;
    if (r == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -errno;
    if (at > 0)
        gort__fd_set_deadline(pd, 'w', at);
    int err;
    for (;;) {
        err = gort__fd_wait(pd, 'w');
        if (err)
            break;
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (gort__libc.getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) {
            err = -GORT_ERRNO;
            break;
        }
        if (soerr == EINPROGRESS || soerr == EALREADY || soerr == EINTR)
            continue;
        err = -soerr;
        break;
    }
    if (at > 0)
        gort__fd_set_deadline(pd, 'w', 0);
    return err;
}

int gort_connect(int fd, const struct sockaddr *addr, unsigned addrlen,
                 int64_t timeout_ns)
{
    GORT_SAN_SCOPE();
    int64_t at = timeout_ns > 0 ? gort_nanotime() + timeout_ns : 0;
    return WITH_PD(fd, int, pd_connect(pd, addr, addrlen, at));
}

int gort_connect_until(int fd, const struct sockaddr *addr, unsigned addrlen,
                       gort_deadline d)
{
    GORT_SAN_SCOPE();
    int64_t at = d.at == INT64_MAX ? 0 : d.at;
    return WITH_PD(fd, int, pd_connect(pd, addr, addrlen, at));
}

long gort_sendto(int fd, const void *buf, size_t n, int flags,
                 const struct sockaddr *to, unsigned tolen)
{
    GORT_SAN_SCOPE();
    struct polldesc *pd = fd_ref(fd);
    if (!pd)
        return -EBADF;
    ssize_t r = pd_err(pd);
    if (r == 0)
        FD_IO(r, pd, 'w',
              GORT_NOSIGPIPE(pd->fd, gort__libc.sendto(pd->fd, buf, n,
                                                       flags | MSG_DONTWAIT, to,
                                                       (socklen_t)tolen)));
    gort__fd_unref(pd);
    return r;
}

static long pd_recvfrom(struct polldesc *pd, void *buf, size_t n, int flags,
                        struct sockaddr *from, unsigned *fromlen)
{
    int fd = pd->fd, e = pd_err(pd);
    if (e)
        return e;
    for (;;) {
        socklen_t len = fromlen ? (socklen_t)*fromlen : 0;
        ssize_t r = gort__libc.recvfrom(fd, buf, n, flags | MSG_DONTWAIT, from,
                                        fromlen ? &len : NULL);
        if (r >= 0) {
            if (fromlen)
                *fromlen = (unsigned)len;
            return r;
        }
        int e = GORT_ERRNO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        int w = gort__fd_wait(pd, 'r');
        if (w)
            return w;
    }
}

long gort_recvfrom(int fd, void *buf, size_t n, int flags,
                   struct sockaddr *from, unsigned *fromlen)
{
    GORT_SAN_SCOPE();
    return WITH_PD(fd, long, pd_recvfrom(pd, buf, n, flags, from, fromlen));
}

int gort_shutdown(int fd, int how)
{
    GORT_SAN_SCOPE();
    return shutdown(fd, how) < 0 ? -errno : 0;
}
