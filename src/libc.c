/* SPDX-License-Identifier: MIT */
/*
 * libc.c - the table of the C library's calls that gort-hook replaces
 * (libc.h says why the runtime calls them through it).
 *
 * Built with ThreadSanitizer, the table keeps the sanitizer's
 * interceptors (gort__hook_install leaves it alone): they tell the
 * sanitizer of the order that reads and writes of a descriptor, epoll and
 * the like create between threads, which the runtime's own calls need as
 * much as the program's.  An interceptor calls the next definition, which
 * may be gort-hook's; each entry is then a wrapper that marks the thread
 * as inside a runtime call for its length (gort__libc_depth), and
 * gort-hook passes such calls straight to the C library.
 */
#include "libc.h"

#include <fcntl.h>
#include <stdarg.h>
#include <netdb.h>
#include <sys/select.h>
#include <unistd.h>

#ifdef GORT_TSAN
__thread int gort__libc_depth;

/* w_NAME: NAME through the sanitizer's interceptor, marked as the
 * runtime's own call. */
#define W(name, ret, params, args)                                             \
    static ret w_##name params                                                 \
    {                                                                          \
        gort__libc_depth++;                                                    \
        ret res_ = name args;                                                  \
        gort__libc_depth--;                                                    \
        return res_;                                                           \
    }
W(read, ssize_t, (int fd, void *b, size_t n), (fd, b, n))
W(write, ssize_t, (int fd, const void *b, size_t n), (fd, b, n))
W(readv, ssize_t, (int fd, const struct iovec *v, int c), (fd, v, c))
W(writev, ssize_t, (int fd, const struct iovec *v, int c), (fd, v, c))
W(recvfrom, ssize_t,
  (int fd, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l),
  (fd, b, n, f, a, l))
W(sendto, ssize_t,
  (int fd, const void *b, size_t n, int f, const struct sockaddr *a,
   socklen_t l),
  (fd, b, n, f, a, l))
W(recvmsg, ssize_t, (int fd, struct msghdr *m, int f), (fd, m, f))
W(sendmsg, ssize_t, (int fd, const struct msghdr *m, int f), (fd, m, f))
W(accept4, int, (int fd, struct sockaddr *a, socklen_t *l, int f),
  (fd, a, l, f))
W(connect, int, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))
W(socket, int, (int d, int t, int p), (d, t, p))
W(pipe2, int, (int *p, int f), (p, f))
W(close, int, (int fd), (fd))
W(dup2, int, (int a, int b), (a, b))
W(dup3, int, (int a, int b, int f), (a, b, f))
W(getsockopt, int, (int fd, int l, int n, void *v, socklen_t *len),
  (fd, l, n, v, len))
W(setsockopt, int, (int fd, int l, int n, const void *v, socklen_t len),
  (fd, l, n, v, len))
W(poll, int, (struct pollfd *p, nfds_t n, int t), (p, n, t))
W(pselect, int,
  (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
   const sigset_t *m),
  (n, r, w, e, t, m))
W(epoll_wait, int, (int ep, struct epoll_event *e, int n, int t),
  (ep, e, n, t))
W(nanosleep, int, (const struct timespec *a, struct timespec *b), (a, b))
W(clock_nanosleep, int,
  (clockid_t c, int f, const struct timespec *a, struct timespec *b),
  (c, f, a, b))
W(getaddrinfo, int,
  (const char *n, const char *s, const struct addrinfo *h,
   struct addrinfo **r),
  (n, s, h, r))
W(getnameinfo, int,
  (const struct sockaddr *a, socklen_t l, char *h, socklen_t hl, char *s,
   socklen_t sl, int f),
  (a, l, h, hl, s, sl, f))
W(gethostbyname2_r, int,
  (const char *n, int af, struct hostent *r, char *b, size_t bl,
   struct hostent **res, int *e),
  (n, af, r, b, bl, res, e))
#undef W

/* fcntl's third argument is an int or a pointer by command; passed on as
 * a pointer, as the C library's own fcntl reads it. */
static int w_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    gort__libc_depth++;
    int r = fcntl(fd, cmd, arg);
    gort__libc_depth--;
    return r;
}
#define L(name) w_##name
#else
#define L(name) name
#endif

struct gort__libc gort__libc = {
    .read = L(read),
    .write = L(write),
    .readv = L(readv),
    .writev = L(writev),
    .recvfrom = L(recvfrom),
    .sendto = L(sendto),
    .recvmsg = L(recvmsg),
    .sendmsg = L(sendmsg),
    .accept4 = L(accept4),
    .connect = L(connect),
    .socket = L(socket),
    .pipe2 = L(pipe2),
    .close = L(close),
    .dup2 = L(dup2),
    .dup3 = L(dup3),
    .fcntl = L(fcntl),
    .getsockopt = L(getsockopt),
    .setsockopt = L(setsockopt),
    .poll = L(poll),
    .pselect = L(pselect),
    .epoll_wait = L(epoll_wait),
    .nanosleep = L(nanosleep),
    .clock_nanosleep = L(clock_nanosleep),
    .getaddrinfo = L(getaddrinfo),
    .getnameinfo = L(getnameinfo),
    .gethostbyname2_r = L(gethostbyname2_r),
};
