/* SPDX-License-Identifier: MIT */
/*
 * hook.h - what libgort offers gort-hook, the interposition library
 * (hook/hook.c, docs/hooks.md): the check that the calling thread runs a
 * goroutine, and the goroutine versions of the C library's blocking calls.
 *
 * These functions are exported by libgort for gort-hook alone: they are
 * not in gort.h, and a gort-hook of one version works with the libgort of
 * the same version only (gort__hook_install checks the table's size).
 * Each follows its C library function's convention: -1 (or the error
 * number, for clock_nanosleep) with errno set on the thread it returns on.
 */
#ifndef GORT_HOOK_H
#define GORT_HOOK_H

#include "../include/gort.h"
#include "libc.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/select.h>

struct hostent;

/* gort-hook's constructor: the C library's functions as gort-hook's own
 * calls reach them (libc.h), for the runtime's calls and for the calls
 * the hooks make once they have decided.  size is sizeof(struct
 * gort__libc) as gort-hook was built.  0, or -EINVAL on a mismatch (the
 * hooks then stay off: every call is the C library's). */
GORT_EXTERN int gort__hook_install(const struct gort__libc *real, size_t size);

/* Whether the calling thread runs a goroutine that a hooked call should
 * park: gort-hook is installed and not turned off (GORTDEBUG=hook=0), this
 * is not a forked child, and the thread is an M of gort's running a
 * goroutine outside a system call.  Foreign threads, the thread before
 * gort_main and after it, and goroutines inside GORT_BLOCKING get the C
 * library's calls. */
GORT_EXTERN bool gort__hook_active(void);

/* Hooked calls that parked, and that took the syscall hand-off (a
 * descriptor the poller cannot watch), since the start: for the
 * metrics. */
GORT_HIDDEN uint64_t gort__hook_parked(void);
GORT_HIDDEN uint64_t gort__hook_handoffs(void);

GORT_EXTERN ssize_t gort__hook_read(int fd, void *buf, size_t n);
GORT_EXTERN ssize_t gort__hook_write(int fd, const void *buf, size_t n);
GORT_EXTERN ssize_t gort__hook_readv(int fd, const struct iovec *iov,
                                     int iovcnt);
GORT_EXTERN ssize_t gort__hook_writev(int fd, const struct iovec *iov,
                                      int iovcnt);
GORT_EXTERN ssize_t gort__hook_recvfrom(int fd, void *buf, size_t n, int flags,
                                        struct sockaddr *from,
                                        socklen_t *fromlen);
GORT_EXTERN ssize_t gort__hook_sendto(int fd, const void *buf, size_t n,
                                      int flags, const struct sockaddr *to,
                                      socklen_t tolen);
GORT_EXTERN ssize_t gort__hook_recvmsg(int fd, struct msghdr *msg, int flags);
GORT_EXTERN ssize_t gort__hook_sendmsg(int fd, const struct msghdr *msg,
                                       int flags);
GORT_EXTERN int gort__hook_accept4(int fd, struct sockaddr *addr,
                                   socklen_t *len, int flags);
GORT_EXTERN int gort__hook_connect(int fd, const struct sockaddr *addr,
                                   socklen_t len);
/* A descriptor made, or given another file, by the program: forget what
 * the hooks knew of its number. */
GORT_EXTERN void gort__hook_fd_new(int fd);
/* A descriptor's mode or socket timeouts changed (fcntl F_SETFL, ioctl
 * FIONBIO, setsockopt SO_RCVTIMEO or SO_SNDTIMEO), from any thread: the
 * hooks' copies are read from the kernel again. */
GORT_EXTERN void gort__hook_fd_changed(void);
GORT_EXTERN int gort__hook_close(int fd);
/* dup2 and dup3 (flags -1 for dup2). */
GORT_EXTERN int gort__hook_dup3(int oldfd, int newfd, int flags);
/* poll and ppoll: timeout NULL for none. */
GORT_EXTERN int gort__hook_ppoll(struct pollfd *fds, nfds_t n,
                                 const struct timespec *timeout);
/* select and pselect: timeout NULL for none; select's timeval is updated
 * with the time left, as Linux does (tv non-NULL). */
GORT_EXTERN int gort__hook_pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
                                   const struct timespec *timeout,
                                   struct timeval *tv);
/* epoll_wait and epoll_pwait. */
GORT_EXTERN int gort__hook_epoll_wait(int epfd, struct epoll_event *ev,
                                      int maxevents, int timeout_ms);
/* nanosleep and clock_nanosleep (clock_nanosleep's convention: the error
 * number). */
GORT_EXTERN int gort__hook_clock_nanosleep(clockid_t clk, int flags,
                                           const struct timespec *req,
                                           struct timespec *rem);

/* getaddrinfo, getnameinfo and gethostbyname2_r (gethostbyname_r,
 * gethostbyname and gethostbyname2 through it): the C library's lookup,
 * on one of a few threads (syscall.c, gort__dns_call); the goroutines
 * beyond them wait parked. */
GORT_EXTERN int gort__hook_getaddrinfo(const char *node, const char *service,
                                       const struct addrinfo *hints,
                                       struct addrinfo **res);
GORT_EXTERN int gort__hook_getnameinfo(const struct sockaddr *sa,
                                       socklen_t salen, char *host,
                                       socklen_t hostlen, char *serv,
                                       socklen_t servlen, int flags);
GORT_EXTERN int gort__hook_gethostbyname2_r(const char *name, int af,
                                            struct hostent *ret, char *buf,
                                            size_t buflen,
                                            struct hostent **result,
                                            int *h_errnop);

#endif /* GORT_HOOK_H */
