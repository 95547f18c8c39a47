/* SPDX-License-Identifier: MIT */
/*
 * netpoll_epoll.c - the network poller's epoll backend: the one epoll
 * instance every registered descriptor is in, the eventfd that breaks a
 * sleep in epoll_wait, and the wait that turns epoll events into a list of
 * runnable goroutines.  Mirrors netpoll_epoll.go; the pollDescs and what
 * readiness does to them are netpoll.c's.
 *
 * A descriptor is added edge-triggered, for reading and writing at once;
 * its event data is its pollDesc's address with the low 16 bits of the
 * pollDesc's sequence number in the top 16 bits.  netpoll.c bumps the
 * number when the descriptor is closed, so the events still queued for it
 * (or for a later descriptor that reuses the pollDesc) are dropped here
 * (Go's fdseq tagging).  The break eventfd's events carry 0.
 *
 * Events are collected by gort__netpoll(delay):
 *   - findrunnable polls without blocking before it steals;
 *   - the one M that has nothing to do sleeps in epoll until the next timer
 *     (gort__netpoll_sleep, netpoll.c; an eventfd write breaks the sleep);
 *   - sysmon polls when nobody has for 10 ms.
 * Of the readied Gs, one per idle P goes to the global queue with an M
 * started for it, and the rest to the polling M's own P (injectglist,
 * proc.c).
 *
 * Invariants:
 *   - epfd and breakfd are set before gort__netpollinited (netpoll.c,
 *     release) and read only after it is seen (acquire), or under the poll
 *     cache lock that set them.
 *   - At most one break is pending (wakesig): the poller drains the
 *     eventfd before the next break writes it again.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "netpoll.h"
#include "netpoll_epoll.h"
#include "san.h"
#include "sched.h"
#include "tracehooks.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel orders epoll_ctl before the events it reports, so the
 * pollDesc an event names is fully set up; ThreadSanitizer cannot see
 * that ordering, and is told (release at registration, acquire per
 * event).  Only gort's own accesses need it: in a gort built with TSan. */
#ifdef GORT_TSAN
#define TSAN_RELEASE(p) __tsan_release(p)
#define TSAN_ACQUIRE(p) __tsan_acquire(p)
#else
#define TSAN_RELEASE(p) ((void)0)
#define TSAN_ACQUIRE(p) ((void)0)
#endif

static int epfd = -1, breakfd = -1;
/* epoll_pwait2 (Linux 5.11) is missing: use epoll_wait's milliseconds.
 * Set on ENOSYS, and from the start under Valgrind, which does not know
 * the call and would warn on every use.  Relaxed: a flag that only saves
 * a failing system call.  Under ThreadSanitizer epoll_wait is used too:
 * the sanitizer runs the handler of a signal that comes while a thread
 * waits in an intercepted call at once, but defers it past a wait in a
 * system call made directly, which may last until the next timer. */
static uint32_t no_pwait2;
static uint32_t wakesig;         /* atomic: a break is pending */

/* ---------------------------------------------------------------------------
 * Set-up, registration, break, teardown.
 * ------------------------------------------------------------------------- */

/* Make the epoll instance and the break eventfd: 0 or -errno.  Once, under
 * the poll cache lock (netpoll.c).  Mirrors netpollinit. */
int gort__netpoll_init(void)
{
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        return -errno;
    breakfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (breakfd < 0) {
        int e = -errno;
        gort__libc.close(epfd);
        epfd = -1;
        return e;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, breakfd, &ev) < 0) {
        int e = -errno;
        gort__libc.close(breakfd);
        gort__libc.close(epfd);
        breakfd = epfd = -1;
        return e;
    }
    return 0;
}

/* Close them again (gort__netpoll_fini, the runtime stopped). */
void gort__netpoll_uninit(void)
{
    gort__libc.close(epfd);
    gort__libc.close(breakfd);
    epfd = breakfd = -1;
    store_relaxed(&wakesig, 0);
}

/* Add fd, whose pollDesc is pd, for both directions: 0 or -errno.  Under
 * the poll cache lock.  Mirrors netpollopen. */
int gort__netpoll_open(int fd, struct polldesc *pd)
{
    struct epoll_event ev = {
        .events = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET,
        .data.u64 = (uint64_t)(uintptr_t)pd |
                    ((uint64_t)(pd->seq & 0xffff) << 48),
    };
    TSAN_RELEASE(pd);
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Watch fd again as pd, or add it if the backend does not watch that
 * number for its present file: 0 or -errno.  Under the poll cache lock. */
int gort__netpoll_rearm(int fd, struct polldesc *pd)
{
    struct epoll_event ev = {
        .events = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET,
        .data.u64 =
            (uint64_t)(uintptr_t)pd | ((uint64_t)(pd->seq & 0xffff) << 48),
    };
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
        return 0;
    if (errno != ENOENT)
        return -errno;
    TSAN_RELEASE(pd);
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Take fd out.  Under the poll cache lock.  Mirrors netpollclose. */
void gort__netpoll_close(int fd)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* Wake the M blocked in epoll_wait.  Mirrors netpollBreak. */
void gort__netpoll_break(void)
{
    /* One write is enough until the poller drains it. */
    if (!cas_acqrel(&wakesig, 0, 1))
        return;
    uint64_t one = 1;
    while (gort__libc.write(breakfd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

/* ---------------------------------------------------------------------------
 * Polling.  Mirrors netpoll (netpoll_epoll.go).
 * ------------------------------------------------------------------------- */

/* Make the Gs that evs[0..n) unblock RUNNABLE, in q; consume a break.
 * Returns how many. */
static int32_t netpoll_handle(const struct epoll_event *evs, int n,
                              struct gqueue *q)
{
    int32_t cnt = 0;
    for (int i = 0; i < n; i++) {
        uint64_t data = evs[i].data.u64;
        uint32_t e = evs[i].events;
        if (data == 0) {
            /* The break eventfd. */
            uint64_t v;
            if (gort__libc.read(breakfd, &v, sizeof v) < 0 && errno != EAGAIN)
                gort__throw("netpoll: eventfd read failed");
            store_rel(&wakesig, 0);
            continue;
        }
        struct polldesc *pd =
            (struct polldesc *)(uintptr_t)(data & ((1ULL << 48) - 1));
        TSAN_ACQUIRE(pd);
        uint32_t seq = (uint32_t)(data >> 48);
        if ((load_relaxed(&pd->seq) & 0xffff) != seq)
            continue; /* stale: the descriptor was closed and reused */
        int mode = 0;
        if (e & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            mode += 'r';
        if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            mode += 'w';
        /* Urgent data (EPOLLPRI) too: a TCP read stops at its mark and
         * leaves data no edge announces, so reads no longer wait first. */
        bool hup = e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI);
        cnt += gort__netpoll_ready(pd, mode, hup, q);
    }
    if (cnt > 0) {
        /* /gort/sched/netpoll-wakeups, on the polling M (a runtime M:
         * findrunnable's, the poller's or sysmon's). */
        struct m *mp = gort__getm_raw();
        if (mp)
            gort__stat_add(&mp->nnetpollwake, (uint64_t)cnt);
    }
    if (cnt > 0)
        gort__trace_netpoll(cnt);
    return cnt;
}

/* Collect ready Gs, waiting up to delay ns (0: don't block, < 0: until an
 * event or a break).  The Gs come back RUNNABLE, linked in q. */
int32_t gort__netpoll(int64_t delay, struct gqueue *q)
{
    q->head = q->tail = NULL;
    if (!gort__netpoll_inited())
        return 0;
    struct epoll_event evs[128];
    int n;
    for (;;) {
        if (delay < 0) {
            n = gort__libc.epoll_wait(epfd, evs, 128, -1);
        } else if (delay == 0) {
            n = gort__libc.epoll_wait(epfd, evs, 128, 0);
        } else {
            struct timespec ts = {delay / 1000000000, delay % 1000000000};
            bool pwait2 = !load_relaxed(&no_pwait2) && !gort__valgrind &&
                          !(gort__san & GORT_SAN_TSAN);
            if (pwait2) {
                n = (int)syscall(SYS_epoll_pwait2, epfd, evs, 128, &ts, NULL,
                                 0);
                if (n < 0 && errno == ENOSYS) {
                    store_relaxed(&no_pwait2, 1);
                    pwait2 = false;
                }
            }
            if (!pwait2) {
                int64_t ms = (delay + 999999) / 1000000;
                n = gort__libc.epoll_wait(epfd, evs, 128,
                                          ms > 1000000 ? 1000000 : (int)ms);
            }
        }
        if (n >= 0)
            break;
        if (errno != EINTR)
            gort__throw("netpoll: epoll_wait failed: %s", strerror(errno));
        if (delay > 0)
            return 0; /* let the caller recompute its timeout */
    }
    return netpoll_handle(evs, n, q);
}

/* Poll without blocking until `end` (nanotime) or the first event that
 * readies a G, or the break, while every P stays idle.  Returns the Gs
 * readied (0 for a break alone), or -1 when nothing came.  Events that
 * ready nobody (a pipe's or a socket's writable edge that no G waits for,
 * after its reader took data) do not end the spin: it has saved no sleep
 * and no wake-up.  See gort__netpoll_sleep. */
int32_t gort__netpoll_spin(int64_t end, struct gqueue *q)
{
    q->head = q->tail = NULL;
    if (!gort__netpoll_inited())
        return -1;
    struct epoll_event evs[128];
    for (;;) {
        /* Relaxed: a hint.  A P taken means other threads of ours run,
         * and this one would only take CPU from them. */
        if (load_relaxed(&gort__sched.npidle) !=
            load_relaxed(&gort__gomaxprocs))
            return -1;
        int n = gort__libc.epoll_wait(epfd, evs, 128, 0);
        if (n > 0) {
            bool brk = false;
            for (int i = 0; i < n; i++)
                brk |= evs[i].data.u64 == 0;
            int32_t r = netpoll_handle(evs, n, q);
            if (r > 0 || brk)
                return r;
        }
        if (n < 0 && errno != EINTR)
            gort__throw("netpoll: epoll_wait failed: %s", strerror(errno));
        if (gort_nanotime() >= end)
            return -1;
    }
}
