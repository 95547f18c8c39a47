/* SPDX-License-Identifier: MIT */
/*
 * libc.h - the C library's calls that the interposition library
 * (gort-hook, docs/hooks.md) replaces, as the runtime itself makes them.
 *
 * A program linked with gort-hook (or run with it preloaded) gets
 * gort-hook's read, write, close, poll and the rest in place of libc's:
 * called from a goroutine they park it instead of blocking its thread.
 * The runtime makes the same calls for its own purposes (the poller's
 * epoll_wait, a descriptor's close once its last call left, a fatal
 * error's write to stderr), and those must reach the kernel as they are:
 * through gort-hook they would come back into the runtime, from inside
 * it.  So the runtime makes every such call through this table.  It
 * starts out holding the C library's functions as the program's link
 * resolved them (right without gort-hook); gort-hook, as it loads, puts
 * in the functions that its own calls would have reached (dlsym with
 * RTLD_NEXT: the C library's, or a sanitizer's interceptor in front of
 * them; or its own direct system calls in a static link without a dynamic
 * loader), before any goroutine runs.
 *
 * tools/check_layers.py's "libc" rule checks that no object of the
 * runtime but libc.o refers to these names directly.
 */
#ifndef GORT_LIBC_H
#define GORT_LIBC_H

#include "defs.h"

#include <poll.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

struct addrinfo;
struct hostent;

/* The functions, one member each, named as in the C library.  Private to
 * one version of gort: gort-hook fills it from the same build
 * (gort__hook_install checks the size). */
struct gort__libc {
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *,
                        socklen_t *);
    ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *,
                      socklen_t);
    ssize_t (*recvmsg)(int, struct msghdr *, int);
    ssize_t (*sendmsg)(int, const struct msghdr *, int);
    int (*accept4)(int, struct sockaddr *, socklen_t *, int);
    int (*connect)(int, const struct sockaddr *, socklen_t);
    int (*socket)(int, int, int);
    int (*pipe2)(int *, int);
    int (*close)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*fcntl)(int, int, ...);
    int (*getsockopt)(int, int, int, void *, socklen_t *);
    int (*setsockopt)(int, int, int, const void *, socklen_t);
    int (*poll)(struct pollfd *, nfds_t, int);
    int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
                   const sigset_t *);
    int (*epoll_wait)(int, struct epoll_event *, int, int);
    int (*nanosleep)(const struct timespec *, struct timespec *);
    int (*clock_nanosleep)(clockid_t, int, const struct timespec *,
                           struct timespec *);
    int (*getaddrinfo)(const char *, const char *, const struct addrinfo *,
                       struct addrinfo **);
    int (*getnameinfo)(const struct sockaddr *, socklen_t, char *, socklen_t,
                       char *, socklen_t, int);
    int (*gethostbyname2_r)(const char *, int, struct hostent *, char *,
                            size_t, struct hostent **, int *);
};

/* The table every call of the runtime goes through: written only by
 * gort__hook_install, before gort_main starts the runtime. */
GORT_HIDDEN extern struct gort__libc gort__libc;

#ifdef GORT_TSAN
/* Inside a call of the table, on this thread (libc.c says why). */
GORT_HIDDEN extern __thread int gort__libc_depth;
#endif

#endif /* GORT_LIBC_H */
