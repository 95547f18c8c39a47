/* SPDX-License-Identifier: MIT */
/*
 * syscall.h - what syscall.c offers the rest of the runtime:
 * entersyscall/exitsyscall as the scheduler sees them, and the body of a
 * blocking-call wrapper.
 */
#ifndef GORT_SYSCALL_H
#define GORT_SYSCALL_H

#include "defs.h"
#include "sched.h"

/* Syscalls (syscall.c).  how: 1 explicit, 2 marked by the preemption
 * signal. */
GORT_HIDDEN void gort__entersyscall_m(struct m *mp, struct g *gp,
                                      uint32_t how);
GORT_HIDDEN void gort__exitsyscall_m(struct m *mp, struct g *gp);
/* A preemption signal is on its way to mp's thread, which is entering a
 * system call: wait until its handler has run (syscall.c). */
GORT_HIDDEN void gort__urg_wait(struct m *mp);

/* On an idle M woken to watch a syscall: take its P if the syscall lasts.
 * True when mp now holds a P. */
GORT_HIDDEN bool gort__syscall_watch(struct m *mp);

/* fn(arg), a name lookup of the C library's, made with one of the
 * GORT_DNS_THREADS slots (parked until one is free) in the syscall
 * hand-off; its result, errno as fn left it.  Outside a goroutine, fn(arg)
 * as it is. */
GORT_HIDDEN int gort__dns_call(int (*fn)(void *), void *arg);
/* getaddrinfo from a goroutine (the C library's codes), numeric names
 * answered at once and the rest through gort__dns_call: gort_getaddrinfo
 * and gort-hook's getaddrinfo. */
struct addrinfo;
GORT_HIDDEN int gort__getaddrinfo(const char *node, const char *service,
                                  const struct addrinfo *hints,
                                  struct addrinfo **res);
/* gort_main's teardown: every slot free. */
GORT_HIDDEN void gort__dns_fini(void);

/* The body of a blocking-call wrapper: `call`, an expression of type
 * `type` (-1 and errno on failure), between gort_entersyscall and
 * gort_exitsyscall, retried on EINTR; returns its value or -errno from the
 * enclosing function.  errno is read before exitsyscall: the G may come
 * back on another thread, whose errno is another variable. */
#define GORT_SYSCALL_RETRY(type, call)                                         \
    do {                                                                       \
        for (;;) {                                                             \
            gort_entersyscall();                                               \
            type r_ = (call);                                                  \
            int e_ = r_ < 0 ? GORT_ERRNO : 0;                                  \
            gort_exitsyscall();                                                \
            if (r_ >= 0)                                                       \
                return r_;                                                     \
            if (e_ != EINTR)                                                   \
                return -e_;                                                    \
        }                                                                      \
    } while (0)

#endif /* GORT_SYSCALL_H */
