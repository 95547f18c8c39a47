/* SPDX-License-Identifier: MIT */
/*
 * hook.c - the goroutine side of gort-hook (hook/hook.c, docs/hooks.md):
 * the C library's blocking calls, made by a goroutine on a descriptor that
 * would block, park the goroutine in the network poller instead of its
 * thread, with the results, errno and side effects the C library's call
 * would have had.
 *
 * The program's descriptors keep the mode the program gave them.  The
 * hooks never set O_NONBLOCK on a file description (another process, a
 * forked child, an exec'd program or a dup'd descriptor shares it and
 * would see the change), except for the moment a blocking connect takes
 * to start.  Instead every attempt is non-blocking by itself: recv and
 * send with MSG_DONTWAIT on sockets, preadv2 and pwritev2 with RWF_NOWAIT
 * on the rest.  On EAGAIN the hook asks the kernel what the program would
 * have seen: O_NONBLOCK on the description (fcntl) returns EAGAIN to the
 * program; otherwise the goroutine parks until the descriptor is ready,
 * its SO_RCVTIMEO or SO_SNDTIMEO passes (EAGAIN, as the C library) or a
 * hooked close wakes it (EBADF).  A descriptor the poller cannot watch (a
 * regular file) or that refuses RWF_NOWAIT (a terminal) takes the
 * syscall hand-off: the blocking call runs between entersyscall and
 * exitsyscall, holding its thread but not its P.
 *
 * The poller watches a hooked descriptor by its number (netpoll.c,
 * gort__fd_register_hook), edge-triggered, registered once.  A program
 * may close one behind the hooks' back (fclose of an fdopen'd socket uses
 * the C library's internal close) and get the number again for another
 * file.  A hooked call that makes a descriptor drops whatever the poller
 * had under its number; a number made otherwise (open, eventfd) keeps a
 * registration the kernel dropped with the old file, and a goroutine that
 * parks on it is found by sysmon, which re-arms the descriptor of a park
 * that lasted from one of its checks to the next (10-40 ms; up to 180
 * when the park began during one of sysmon's long idle rounds:
 * gort__fd_check_hooked): the number is added again for its present file
 * and its readiness reported (re-arming at every park would cost an
 * epoll_ctl a wait).  A hooked close or dup2 over a watched
 * number wakes the goroutines waiting on it (EBADF); the pollDesc's
 * sequence number drops the old file's late events, so a later descriptor
 * with the same number never receives them.
 *
 * Writes in blocking mode write everything, as the kernel does for a
 * blocking descriptor; reads return what one read returns, except that a
 * regular file read short by RWF_NOWAIT (part of it not cached) goes on
 * with a blocking read for the rest, as the C library's one read would
 * have.
 */
#include "atomic.h"
#include "env.h"
#include "hook.h"
#include "libc.h"
#include "lock_futex.h"
#include "netpoll.h"
#include "san.h"
#include "sched.h"
#include "syscall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Installation and the goroutine check.
 * ------------------------------------------------------------------------- */

static struct {
    uint32_t installed; /* atomic: gort__hook_install succeeded */
    uint32_t epoch;     /* atomic: moved by every change to a descriptor's
                         * mode or timeouts (gort__hook_fd_changed);
                         * starts at 1, pollDescs' copies at 0 */
    uint32_t forked;    /* atomic: this process is a forked child */
    uint64_t parked;    /* atomic: hooked calls that parked */
    uint64_t handoff;   /* atomic: hooked calls that took the hand-off */
} hook = {.epoch = 1};

static void hook_atfork_child(void)
{
    /* Relaxed: the child has one thread. */
    store_relaxed(&hook.forked, 1);
}

int gort__hook_install(const struct gort__libc *real, size_t size)
{
    if (size != sizeof *real || !real)
        return -EINVAL;
    for (size_t i = 0; i < sizeof *real / sizeof(void (*)(void)); i++)
        if (!((void (*const *)(void))real)[i])
            return -EINVAL;
#ifndef GORT_TSAN
    /* (With ThreadSanitizer the table keeps its interceptors: libc.c.) */
    gort__libc = *real;
#endif
    pthread_atfork(NULL, NULL, hook_atfork_child);
    /* Release: a thread that sees the hooks installed sees the table. */
    store_rel(&hook.installed, 1);
    return 0;
}

bool gort__hook_active(void)
{
    /* Acquire: pairs with gort__hook_install's release. */
    if (!load_acq(&hook.installed) || load_relaxed(&hook.forked))
        return false;
    if (!gort__debug.hook)
        return false;
    /* The fast slot is empty for threads gort did not create (the C
     * library's calls there) and on a gort thread back from a call that
     * the preemption signal or the inspector of unwrapped calls put into
     * the syscall state (malloc's mprotect, say).  The latter is still
     * its goroutine's thread: gort__getm_slow finishes that call and gives
     * the goroutine a P again, as every entry into gort does, so that its
     * next read parks instead of blocking the thread. */
    struct m *mp = gort__tls_mfast;
    if (!mp) {
        struct m *raw = gort__getm_raw();
        if (!raw || raw->foreign || !(mp = gort__getm_slow()))
            return false;
    }
#ifdef GORT_TSAN
    if (gort__libc_depth)
        return false; /* the runtime's own call, come back (libc.c) */
#endif
    struct g *gp = mp->curg;
    return gp && !gp->foreign && gort__readgstatus(gp) == G_RUNNING;
}

uint64_t gort__hook_parked(void)
{
    return load_relaxed(&hook.parked);
}

uint64_t gort__hook_handoffs(void)
{
    return load_relaxed(&hook.handoff);
}

/* ---------------------------------------------------------------------------
 * What the hooks know of a descriptor number: whether it is a socket.
 * Only a hint: a wrong one costs a failed call (ENOTSOCK), never a wrong
 * result, so a number closed and reused behind the hooks' back is
 * harmless.  A byte per number, in a table that only grows (a replaced
 * table is retired, not freed, as the poller's).
 * ------------------------------------------------------------------------- */

enum { K_UNKNOWN = 0, K_SOCK, K_OTHER };

static struct {
    gort_spinlock lock; /* growing the table */
    uint8_t *kind;      /* atomic pointer */
    int32_t n;          /* atomic */
} kinds = {.lock = GORT_LOCK_INIT(LOCKRANK_HOOK)};

static int kind_get(int fd)
{
    /* Acquire: the table before its size (kind_set's release). */
    int32_t n = load_acq(&kinds.n);
    uint8_t *t = load_acq(&kinds.kind);
    return fd >= 0 && fd < n ? load_relaxed(&t[fd]) : K_UNKNOWN;
}

static void kind_set(int fd, int k)
{
    if (fd < 0)
        return;
    if (fd >= load_acq(&kinds.n)) {
        gort__spinlock(&kinds.lock);
        int32_t n = kinds.n;
        if (fd >= n) {
            int32_t nn = n ? n : 256;
            while (nn <= fd)
                nn *= 2;
            uint8_t *t = gort__calloc((size_t)nn, 1);
            if (!t) {
                gort__spinunlock(&kinds.lock);
                return; /* only a hint */
            }
            if (kinds.kind) {
                /* Entry by entry: other threads may set old ones (a store
                 * into the old table meanwhile is lost, a hint). */
                for (int32_t i = 0; i < n; i++)
                    store_relaxed(&t[i], load_relaxed(&kinds.kind[i]));
                gort__retire(kinds.kind);
            }
            store_rel(&kinds.kind, t);
            store_rel(&kinds.n, nn);
        }
        gort__spinunlock(&kinds.lock);
    }
    /* Relaxed: a hint. */
    store_relaxed(&load_acq(&kinds.kind)[fd], (uint8_t)k);
}

/* fd's kind, asked of the kernel when not known: a socket has a type.
 * Through the table (libc.h), like the hooks' other calls about a
 * descriptor: a sanitizer's interceptor would take them for the
 * program's own use of it. */
static int kind_of(int fd)
{
    int k = kind_get(fd);
    if (GORT_LIKELY(k != K_UNKNOWN))
        return k;
    int type;
    socklen_t len = sizeof type;
    if (gort__libc.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0)
        k = K_SOCK;
    else if (errno == ENOTSOCK)
        k = K_OTHER;
    else
        return K_OTHER; /* the call itself reports EBADF */
    kind_set(fd, k);
    return k;
}

/* Forget what the hooks knew of fd's number. */
static void kind_forget(int fd)
{
    if (fd >= 0 && fd < load_acq(&kinds.n))
        kind_set(fd, K_UNKNOWN);
}

void gort__hook_fd_new(int fd)
{
    GORT_SAN_SCOPE();
    kind_forget(fd);
    /* The kernel just gave out the number, so whatever the poller still
     * has under it belongs to a file closed behind the hooks' back
     * (fclose of an fdopen'd socket): let it go, without close(2). */
    gort__fd_detach(fd);
}

/* ---------------------------------------------------------------------------
 * Waiting.
 * ------------------------------------------------------------------------- */

/* wait_fd's answer for a descriptor the poller cannot watch. */
#define HANDOFF 1
/* pd_park's answer to a caller with a deadline when another goroutine
 * waits in the slot. */
#define BUSY 2

void gort__hook_fd_changed(void)
{
    /* Relaxed: a wait that the change happens before reads this or a later
     * value (coherence); the copies it invalidates are only read. */
    xadd_relaxed(&hook.epoch, 1);
}

/* pd's copy of its descriptor's mode and socket timeouts (see netpoll.h),
 * read from the kernel again when a change may have made it stale. */
static void pd_modes(struct polldesc *pd, int fd)
{
    uint32_t e = load_relaxed(&hook.epoch);
    /* Acquire: the copy stored before the epoch (release, below). */
    if (load_acq(&pd->hk_epoch) == e)
        return;
    int fl = gort__libc.fcntl(fd, F_GETFL);
    store_relaxed(&pd->hk_nonblock, fl >= 0 && (fl & O_NONBLOCK) ? 1u : 0u);
    for (int k = 0; k < 2; k++) {
        struct timeval tv = {0, 0};
        socklen_t len = sizeof tv;
        /* The kernel's answer, not the kind hint: a number the hooks saw
         * as a pipe may be a socket now (closed and reused behind their
         * back), and its timeout must hold.  A non-socket's getsockopt
         * fails: no timeout. */
        if (gort__libc.getsockopt(fd, SOL_SOCKET, k ? SO_SNDTIMEO : SO_RCVTIMEO,
                                  &tv, &len) < 0)
            tv = (struct timeval){0, 0};
        store_relaxed(&pd->hk_timeo[k], (int64_t)tv.tv_sec * 1000000000 +
                                            (int64_t)tv.tv_usec * 1000);
    }
    store_rel(&pd->hk_epoch, e);
}

/* Whether the program made fd's file description non-blocking (the
 * kernel asked: accept and connect, once a call). */
static bool user_nonblock(int fd)
{
    int fl = gort__libc.fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_NONBLOCK);
}

/* fd's pollDesc with a reference held, registering fd for the hooks if
 * nobody has: NULL with *err -EPERM when the poller cannot watch it. */
static struct polldesc *hook_pd(int fd, int *err)
{
    for (;;) {
        struct polldesc *pd = gort__fd_ref(fd);
        if (pd)
            return pd;
        *err = gort__fd_register_hook(fd);
        if (*err && *err != -EEXIST)
            return NULL;
    }
}

/* A hooked call on fd holds fd's pollDesc, when the poller has one, from
 * its start to its end (the first wait registers fd and hands its
 * reference to the call).  A hooked close of fd meanwhile wakes the call
 * and leaves the close(2) to the call's end, so that no attempt of the
 * call lands on another file given the number.  -EBADF when fd was closed
 * by a hooked close whose close(2) still waits for other calls: for the
 * program the number is closed. */
static int hold(int fd, struct polldesc **held)
{
    *held = gort__fd_ref(fd);
    if (*held && gort__fd_closing(*held)) {
        gort__fd_unref(*held);
        *held = NULL;
        return -EBADF;
    }
    return 0;
}

static void unhold(struct polldesc *held)
{
    if (held)
        gort__fd_unref(held);
}

/* Whether the descriptor of a call's hold was closed since: its next
 * attempt fails with EBADF instead. */
static bool held_closed(struct polldesc *held)
{
    return held && gort__fd_closing(held);
}

/* Park until pd is ready for mode ('r' or 'w'), until deadline (0: none)
 * or until it is closed: 0, -ETIMEDOUT or -EBADF.  Waiters in one
 * direction take turns (the pollDesc's slot holds one goroutine); one
 * with a deadline does not wait for its turn, which could outlast the
 * deadline, but gets BUSY and waits elsewhere (wait_ep); one without that
 * had to wait for its turn returns 0 at once, to make its call again
 * before it parks: the waiter before it may have consumed the readiness
 * and left data behind (an edge it consumed is not reported again).
 * Each park is counted for sysmon's check of stale registrations (see
 * the top). */
static int pd_park(struct polldesc *pd, int mode, int64_t deadline)
{
    gort_mutex *gate = &pd->gate[mode == 'w'];
    if (!gort_mutex_trylock(gate)) {
        if (deadline > 0)
            return BUSY;
        gort_mutex_lock(gate);
        gort_mutex_unlock(gate);
        return 0;
    }
    int err = 0;
    if (pd->hooked) {
        /* Relaxed: only sysmon's check reads it, under no ordering; the
         * gate makes this G the only writer. */
        uint32_t *parks = &pd->hk_parks[mode == 'w'];
        store_relaxed(parks, load_relaxed(parks) + 1);
    }
    if (deadline > 0)
        err = gort__fd_set_deadline(pd, mode, deadline);
    if (!err) {
        xadd_relaxed(&hook.parked, 1);
        err = gort__fd_wait(pd, mode);
        if (deadline > 0)
            gort__fd_set_deadline(pd, mode, 0);
    }
    gort_mutex_unlock(gate);
    return err;
}

/* ---------------------------------------------------------------------------
 * Private epoll instances, for a goroutine that waits on several
 * descriptors (poll, select) or on one whose slot another goroutine has:
 * taken from a pool, watching the descriptors level-triggered (what is
 * ready as it is added is reported at once), and itself watched by the
 * poller.
 *
 * A descriptor closed while in an instance leaves it without an event, so
 * the waiters on instances are listed (watchers) and a hooked close or
 * dup2 wakes those that watch its number.  A waiter lists itself before
 * it checks and adds its descriptors, a closer closes (or marks closing)
 * before it looks at the list: one of the two sees the other (seq-cst on
 * the list's count and on closing, gort__fd_closed; for a number the
 * poller does not know, the kernel's order of the close and the
 * epoll_ctl that then fails).
 * ------------------------------------------------------------------------- */

static struct {
    gort_spinlock lock;
    int *fds; /* free private epoll descriptors */
    int n, cap;
} epool = {.lock = GORT_LOCK_INIT(LOCKRANK_HOOK)};

static int epool_get(void)
{
    gort__spinlock(&epool.lock);
    int ep = epool.n > 0 ? epool.fds[--epool.n] : -1;
    gort__spinunlock(&epool.lock);
    if (ep < 0)
        ep = epoll_create1(EPOLL_CLOEXEC);
    return ep;
}

static void close_ep(int ep)
{
    if (gort__fd_close(ep) == 1)
        gort__libc.close(ep);
}

static void epool_put(int ep)
{
    gort__spinlock(&epool.lock);
    if (epool.n == epool.cap) {
        int cap = epool.cap ? epool.cap * 2 : 16;
        int *f = gort__realloc(epool.fds, (size_t)cap * sizeof *f);
        if (!f) {
            gort__spinunlock(&epool.lock);
            close_ep(ep);
            return;
        }
        epool.fds = f;
        epool.cap = cap;
    }
    epool.fds[epool.n++] = ep;
    gort__spinunlock(&epool.lock);
}

/* A goroutine parked on a private instance. */
struct watcher {
    struct watcher *next, **prevp; /* under watchers.lock */
    const struct pollfd *fds;      /* what it watches (fd < 0: nothing) */
    nfds_t n;
    int ep;     /* the instance */
    bool woken; /* a close woke it; under the lock */
};

static struct {
    gort_spinlock lock;
    struct watcher *head;
    uint32_t n; /* atomic: watchers listed */
} watchers = {.lock = GORT_LOCK_INIT(LOCKRANK_HOOK)};

static void watch(struct watcher *w)
{
    gort__spinlock(&watchers.lock);
    w->next = watchers.head;
    w->prevp = &watchers.head;
    if (w->next)
        w->next->prevp = &w->next;
    watchers.head = w;
    /* Seq-cst: the waiter's half (see above), before its checks. */
    xadd_seqcst(&watchers.n, 1);
    gort__spinunlock(&watchers.lock);
}

static void unwatch(struct watcher *w)
{
    gort__spinlock(&watchers.lock);
    *w->prevp = w->next;
    if (w->next)
        w->next->prevp = w->prevp;
    /* Relaxed: only the closers' fast path reads it, and a waiter that
     * left needs no wake-up. */
    xadd_relaxed(&watchers.n, -1);
    gort__spinunlock(&watchers.lock);
}

static bool watches(const struct watcher *w, int fd)
{
    for (nfds_t i = 0; i < w->n; i++)
        if (w->fds[i].fd == fd)
            return true;
    return false;
}

/* fd was closed, or dup2 gave its number another file: wake the waiters
 * on private instances that watch it (their call looks again: poll
 * reports POLLNVAL, select EBADF, or the new file's state).  In batches:
 * the goroutines are made runnable after the list's lock is let go (it
 * ranks above the scheduler's), each instance's pollDesc held meanwhile. */
static void wake_watchers(int fd)
{
    /* Seq-cst: the closer's half (see above), after its close. */
    if (load_seqcst(&watchers.n) == 0)
        return;
    for (;;) {
        struct polldesc *batch[16];
        int nb = 0;
        bool more = false;
        gort__spinlock(&watchers.lock);
        for (struct watcher *w = watchers.head; w; w = w->next) {
            if (w->woken || !watches(w, fd))
                continue;
            if (nb == 16) {
                more = true;
                break;
            }
            /* Listed, so its instance is registered and held. */
            struct polldesc *pd = gort__fd_ref(w->ep);
            if (!pd)
                continue;
            w->woken = true;
            batch[nb++] = pd;
        }
        gort__spinunlock(&watchers.lock);
        for (int i = 0; i < nb; i++) {
            gort__fd_notify(batch[i]);
            gort__fd_unref(batch[i]);
        }
        if (!more)
            return;
    }
}

static uint32_t epoll_events_of(short ev)
{
    uint32_t e = 0;
    if (ev & POLLIN)
        e |= EPOLLIN;
    if (ev & POLLPRI)
        e |= EPOLLPRI;
    if (ev & POLLOUT)
        e |= EPOLLOUT;
    if (ev & POLLRDHUP)
        e |= EPOLLRDHUP;
    return e; /* errors and hang-ups are always reported */
}

/* Park on a private instance until one of fds (fd < 0: skipped) may be
 * ready, until deadline (0: none) or until a hooked close or dup2 of one
 * of them: 0, -ETIMEDOUT or -errno.  One that is closed already returns
 * 0 at once: the caller's next call reports it. */
static int wait_ep(const struct pollfd *fds, nfds_t n, int64_t deadline)
{
    int ep = epool_get();
    if (ep < 0)
        return -errno;
    int err = 0;
    struct polldesc *pd = hook_pd(ep, &err);
    if (!pd) {
        close_ep(ep);
        return err;
    }
    /* A reference on each watched descriptor the poller knows, for the
     * whole wait, as every call holds one: a close meanwhile waits with
     * its close(2) until the instance no longer watches the number. */
    struct polldesc *small[16], **held = small;
    if (n > 16 && !(held = gort__malloc(n * sizeof *held))) {
        gort__fd_unref(pd);
        close_ep(ep);
        return -ENOMEM;
    }
    struct watcher me = {.fds = fds, .n = n, .ep = ep};
    watch(&me);
    bool closed = false;
    nfds_t added = 0;
    for (; added < n; added++) {
        int fd = fds[added].fd;
        held[added] = NULL;
        if (fd < 0)
            continue;
        held[added] = gort__fd_ref(fd);
        if (gort__fd_closed(fd)) {
            closed = true;
            added++;
            break;
        }
        struct epoll_event e = {.events = epoll_events_of(fds[added].events),
                                .data.u32 = (uint32_t)added};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) == 0)
            continue;
        if (errno == EBADF) {
            closed = true;
            added++;
            break;
        }
        if (errno == EEXIST) {
            /* The same descriptor twice: watch both sets of events. */
            for (nfds_t j = 0; j < added; j++)
                if (fds[j].fd == fd)
                    e.events |= epoll_events_of(fds[j].events);
            epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
        }
        /* Anything else (a regular file: EPERM) is ready for poll(2)
         * anyway. */
    }
    if (!closed)
        err = pd_park(pd, 'r', deadline);
    unwatch(&me);
    /* An instance goes back to the pool only empty: a descriptor it could
     * not take out (its number closed or reused meanwhile) may still be
     * in it, under a file another dup keeps open. */
    bool empty = true;
    for (nfds_t i = 0; i < added; i++) {
        if (fds[i].fd >= 0 &&
            epoll_ctl(ep, EPOLL_CTL_DEL, fds[i].fd, NULL) < 0 &&
            errno != EPERM)
            empty = false;
        if (held[i])
            gort__fd_unref(held[i]);
    }
    if (held != small)
        gort__free(held);
    gort__fd_unref(pd);
    if (empty && (err == 0 || err == -ETIMEDOUT))
        epool_put(ep);
    else
        close_ep(ep);
    return err;
}

/* ---------------------------------------------------------------------------
 * Waiting in a call on one descriptor.
 * ------------------------------------------------------------------------- */

/* A call on fd failed with EAGAIN: wait as the C library's call would
 * have blocked.  *held is the call's hold (hold), taken here if the call
 * has none yet.  *deadline is -1 on the first wait of a call (then set
 * from the socket's timeout), kept across the call's waits.  0 (try
 * again), HANDOFF (make the call blocking, in the hand-off), or -errno to
 * return: -EAGAIN for a non-blocking descriptor or a passed timeout,
 * -EBADF once closed. */
static int wait_fd(int fd, int mode, int64_t *deadline,
                   struct polldesc **held)
{
    int err = 0;
    if (!*held && !(*held = hook_pd(fd, &err)))
        return err == -EPERM ? HANDOFF : err;
    struct polldesc *pd = *held;
    if (*deadline < 0) {
        /* gort's own descriptors (gort_socket and the rest) are
         * non-blocking in the kernel for gort's sake: they wait. */
        *deadline = 0;
        if (pd->hooked) {
            pd_modes(pd, fd);
            if (load_relaxed(&pd->hk_nonblock))
                return -EAGAIN;
            int64_t t = load_relaxed(&pd->hk_timeo[mode == 'w']);
            if (t > 0)
                *deadline = gort_nanotime() + t;
        }
    }
    err = pd_park(pd, mode, *deadline);
    if (err == BUSY) {
        struct pollfd p = {.fd = fd, .events = mode == 'r' ? POLLIN : POLLOUT};
        err = wait_ep(&p, 1, *deadline);
        if (!err && gort__fd_closing(pd))
            err = -EBADF;
    }
    return err == -ETIMEDOUT ? -EAGAIN : err;
}

/* Return r from a hooked call, with errno set (on this thread) when r is
 * -errno. */
static ssize_t ret(ssize_t r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

/* The blocking form of a call, in the syscall hand-off: its result or
 * -errno.  EINTR is retried: a hooked call is not interrupted by the
 * runtime's signals, and the program's own do not reach a parked
 * goroutine either. */
#define BLOCKING_CALL(type, call)                                              \
    __extension__({                                                            \
        type hr_;                                                              \
        for (;;) {                                                             \
            gort_entersyscall();                                               \
            hr_ = (call);                                                      \
            int he_ = hr_ < 0 ? errno : 0;                                     \
            gort_exitsyscall();                                                \
            if (hr_ >= 0)                                                      \
                break;                                                         \
            if (he_ != EINTR) {                                                \
                hr_ = -he_;                                                    \
                break;                                                         \
            }                                                                  \
        }                                                                      \
        hr_;                                                                   \
    })

/* BLOCKING_CALL for a call the poller could not wait for: counted
 * (/gort/hook/handoffs:calls). */
#define HANDOFF_CALL(type, call)                                               \
    (xadd_relaxed(&hook.handoff, 1), BLOCKING_CALL(type, call))

/* An exported hooked call: its body (call) runs here, with
 * ThreadSanitizer and an instrumented libgort on the G's second fiber,
 * outside the blocking-call state of ThreadSanitizer's interceptor that
 * led to it (san.c). */
#define HOOKED(type, call)                                                     \
    __extension__({                                                            \
        struct g *hg_ = gort__san_hook_fiber() ? gort__tls_mfast->curg : NULL; \
        if (hg_)                                                               \
            gort__san_hook_enter(hg_);                                         \
        type hv_ = (call);                                                     \
        if (hg_)                                                               \
            gort__san_hook_leave(hg_);                                         \
        hv_;                                                                   \
    })

/* ---------------------------------------------------------------------------
 * Reads and writes.
 * ------------------------------------------------------------------------- */

/* Skip done bytes of iov (cnt entries) into the scratch copy tmp:
 * returns the entries left. */
static int iov_skip(const struct iovec *iov, int cnt, size_t done,
                    struct iovec *tmp)
{
    int i = 0;
    while (i < cnt && done >= iov[i].iov_len)
        done -= iov[i++].iov_len;
    int left = cnt - i;
    for (int k = 0; k < left; k++)
        tmp[k] = iov[i + k];
    if (left > 0) {
        tmp[0].iov_base = (char *)tmp[0].iov_base + done;
        tmp[0].iov_len -= done;
    }
    return left;
}

static size_t iov_len(const struct iovec *iov, int cnt)
{
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* One non-blocking attempt on a descriptor that is not a socket: its
 * result or -errno (-EOPNOTSUPP: the file cannot do RWF_NOWAIT). */
static ssize_t try_rw(int fd, const struct iovec *iov, int cnt, int mode)
{
    ssize_t r = mode == 'r' ? preadv2(fd, iov, cnt, -1, RWF_NOWAIT)
                            : pwritev2(fd, iov, cnt, -1, RWF_NOWAIT);
    return r < 0 ? -errno : r;
}

/* One non-blocking attempt on a socket, as recvmsg or sendmsg, with
 * flags added. */
static ssize_t try_sock(int fd, const struct iovec *iov, int cnt, int mode,
                        int flags)
{
    flags |= MSG_DONTWAIT;
    if (cnt == 1) {
        ssize_t r = mode == 'r'
                        ? gort__libc.recvfrom(fd, iov->iov_base, iov->iov_len,
                                              flags, NULL, NULL)
                        : gort__libc.sendto(fd, iov->iov_base, iov->iov_len,
                                            flags, NULL, 0);
        return r < 0 ? -errno : r;
    }
    struct msghdr msg = {.msg_iov = (struct iovec *)iov,
                         .msg_iovlen = (size_t)cnt};
    ssize_t r = mode == 'r' ? gort__libc.recvmsg(fd, &msg, flags)
                            : gort__libc.sendmsg(fd, &msg, flags);
    return r < 0 ? -errno : r;
}

/* A blocking send on a socket that has sent part of its data and waited
 * for room returns what it sent when an error or a shutdown ends the wait
 * (the kernel's stream sendmsg), leaving the error for the next call and
 * raising no SIGPIPE.  The hooks' next attempt would consume the error:
 * whether one is pending (poll's POLLERR) is asked first, and the attempt
 * is made with MSG_NOSIGNAL (sock_flags). */
static bool error_pending(int fd)
{
    struct pollfd p = {.fd = fd, .events = 0};
    return gort__libc.poll(&p, 1, 0) > 0 && (p.revents & POLLERR);
}

static int sock_flags(int mode, size_t done)
{
    return mode == 'w' && done > 0 ? MSG_NOSIGNAL : 0;
}

/* The blocking call for the hand-off. */
static ssize_t block_rw(int fd, const struct iovec *iov, int cnt, int mode)
{
    if (mode == 'r')
        return HANDOFF_CALL(ssize_t, gort__libc.readv(fd, iov, cnt));
    return HANDOFF_CALL(ssize_t, gort__libc.writev(fd, iov, cnt));
}

static bool is_regular(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

/* The entries of iov (cnt of them) left after done bytes, in tmp (small
 * entries, or allocated: *heap, freed by the caller) unless done is 0: *cur
 * and the count.  -ENOMEM when the copy cannot be made. */
static int iov_rest(const struct iovec *iov, int cnt, size_t done,
                    struct iovec *small, int nsmall, struct iovec **heap,
                    const struct iovec **cur)
{
    if (done == 0) {
        *cur = iov;
        return cnt;
    }
    if (cnt > nsmall && !*heap &&
        !(*heap = gort__malloc((size_t)cnt * sizeof **heap)))
        return -ENOMEM;
    struct iovec *tmp = cnt > nsmall ? *heap : small;
    *cur = tmp;
    return iov_skip(iov, cnt, done, tmp);
}

/* read, readv, write and writev from a goroutine: the result or -errno. */
static ssize_t hook_rw_body(int fd, const struct iovec *iov, int cnt, int mode,
                            struct iovec **heap, struct polldesc **held)
{
    size_t want = iov_len(iov, cnt);
    struct iovec small[8];
    size_t done = 0;
    int64_t deadline = -1;
    bool pollonly = false; /* RWF_NOWAIT refused: wait, then block */
    for (;;) {
        if (held_closed(*held))
            return done > 0 ? (ssize_t)done : -EBADF;
        const struct iovec *cur;
        int left = iov_rest(iov, cnt, done, small, 8, heap, &cur);
        if (left < 0)
            return done > 0 ? (ssize_t)done : left;
        int k = kind_of(fd);
        ssize_t r;
        if (pollonly)
            r = block_rw(fd, cur, left, mode);
        else if (k == K_SOCK)
            r = try_sock(fd, cur, left, mode, sock_flags(mode, done));
        else
            r = try_rw(fd, cur, left, mode);
        if (r == -ENOTSOCK && k == K_SOCK) {
            kind_set(fd, K_OTHER); /* the number was reused */
            continue;
        }
        if (r == -EOPNOTSUPP && !pollonly) {
            pollonly = true;
            /* A description the program made non-blocking answers the
             * plain call at once, data or EAGAIN: no wait before it
             * (wait_fd would say EAGAIN without trying). */
            if (user_nonblock(fd))
                continue;
            int w = wait_fd(fd, mode, &deadline, held);
            if (w < 0)
                return done > 0 ? (ssize_t)done : w;
            continue;
        }
        if (r >= 0) {
            done += (size_t)r;
            if (mode == 'r') {
                /* A short read from a socket or a pipe is the answer; from
                 * a regular file RWF_NOWAIT stopped at an uncached page:
                 * read the rest as the blocking read would have. */
                if (r == 0 || done == want || k == K_SOCK || pollonly ||
                    !is_regular(fd))
                    return (ssize_t)done;
                pollonly = true;
                continue;
            }
            if (done == want || (r == 0 && want > 0))
                return (ssize_t)done;
            continue; /* a blocking write writes it all */
        }
        if (r == -EINTR)
            continue;
        if (r != -EAGAIN)
            return done > 0 ? (ssize_t)done : r;
        int w = wait_fd(fd, mode, &deadline, held);
        if (w == HANDOFF) {
            pollonly = true;
            continue;
        }
        if (w < 0)
            return done > 0 ? (ssize_t)done : w;
        if (k == K_SOCK && mode == 'w' && done > 0 && error_pending(fd))
            return (ssize_t)done;
    }
}

/* A read of a TCP socket the hooks watch (pd, held by the call), whose
 * last read was short: that read emptied it, so a read now would fail
 * with EAGAIN unless data came since, and data that came since is an edge
 * the poller has (or will have) collected.  So wait for readiness first
 * and save the read that would fail: one system call of the three a
 * request and its reply cost the client (fdio.c's fd_read does the same).
 * Should the guess be wrong (data left by a read that stopped early
 * without the urgent mark's EPOLLPRI), sysmon's check re-arms the socket
 * within 10-40 ms, or 180 (see the top).  0 to make the call, -errno to
 * return. */
static int sock_wait_first(struct polldesc *pd, int fd, size_t want)
{
    int err = 0;
    if (pd->hooked && pd->stream && want > 0 &&
        load_relaxed(&pd->rdrained) && !load_relaxed(&pd->rdhup)) {
        store_relaxed(&pd->rdrained, 0);
        pd_modes(pd, fd);
        if (!load_relaxed(&pd->hk_nonblock)) {
            int64_t t = load_relaxed(&pd->hk_timeo[0]);
            err = pd_park(pd, 'r', t > 0 ? gort_nanotime() + t : 0);
            if (err == BUSY)
                err = 0; /* another reader waits: read */
            else if (err == -ETIMEDOUT)
                err = -EAGAIN;
        }
    }
    return err;
}

/* A read of r bytes of want from socket pd: a short one empties a stream
 * (sock_wait_first). */
static void sock_read_done(struct polldesc *pd, ssize_t r, size_t want)
{
    /* Relaxed: a hint for this descriptor's readers; any value is safe (it
     * only decides whether to read or wait first). */
    if (r > 0 && (size_t)r < want && pd->hooked && pd->stream)
        store_relaxed(&pd->rdrained, 1);
}

static ssize_t hook_rw(int fd, const struct iovec *iov, int cnt, int mode)
{
    if (cnt < 0 || cnt > IOV_MAX)
        return -EINVAL;
    struct polldesc *held;
    int err = hold(fd, &held);
    if (err)
        return err;
    bool sockread = mode == 'r' && kind_get(fd) == K_SOCK;
    size_t want = sockread ? iov_len(iov, cnt) : 0;
    if (sockread && held) {
        err = sock_wait_first(held, fd, want);
        if (err < 0) {
            unhold(held);
            return err;
        }
    }
    struct iovec *heap = NULL;
    ssize_t r = hook_rw_body(fd, iov, cnt, mode, &heap, &held);
    gort__free(heap);
    if (sockread && held)
        sock_read_done(held, r, want);
    unhold(held);
    return r;
}

ssize_t gort__hook_read(int fd, void *buf, size_t n)
{
    GORT_SAN_SCOPE();
    struct iovec iov = {buf, n};
    return HOOKED(ssize_t, ret(hook_rw(fd, &iov, 1, 'r')));
}

ssize_t gort__hook_write(int fd, const void *buf, size_t n)
{
    GORT_SAN_SCOPE();
    struct iovec iov = {(void *)buf, n};
    return HOOKED(ssize_t, ret(hook_rw(fd, &iov, 1, 'w')));
}

ssize_t gort__hook_readv(int fd, const struct iovec *iov, int cnt)
{
    GORT_SAN_SCOPE();
    return HOOKED(ssize_t, ret(hook_rw(fd, iov, cnt, 'r')));
}

ssize_t gort__hook_writev(int fd, const struct iovec *iov, int cnt)
{
    GORT_SAN_SCOPE();
    return HOOKED(ssize_t, ret(hook_rw(fd, iov, cnt, 'w')));
}

/* recvmsg and sendmsg (recv, recvfrom, send, sendto through them) from a
 * goroutine: one non-blocking attempt after another, waiting between.
 * MSG_DONTWAIT in flags is the program's own: EAGAIN is its answer.  A
 * blocking send sends everything; a receive returns what one returns
 * (MSG_WAITALL: until all of it, end of stream or an error). */
static ssize_t hook_msg_body(int fd, struct msghdr *msg, int flags, int mode,
                             struct polldesc **held)
{
    if (flags & MSG_DONTWAIT) {
        ssize_t r = mode == 'r' ? gort__libc.recvmsg(fd, msg, flags)
                                : gort__libc.sendmsg(fd, msg, flags);
        return r < 0 ? -errno : r;
    }
    int cnt = (int)msg->msg_iovlen;
    if (cnt < 0 || cnt > IOV_MAX)
        return -EMSGSIZE;
    const struct iovec *iov = msg->msg_iov;
    size_t want = iov_len(iov, cnt);
    bool all = mode == 'w' || (flags & MSG_WAITALL);
    struct iovec small[8], *heap = NULL;
    struct msghdr m = *msg;
    ssize_t res;
    size_t done = 0;
    int64_t deadline = -1;
    for (;;) {
        if (held_closed(*held)) {
            res = done > 0 ? (ssize_t)done : -EBADF;
            break;
        }
        const struct iovec *cur;
        int left = iov_rest(iov, cnt, done, small, 8, &heap, &cur);
        if (left < 0) {
            res = done > 0 ? (ssize_t)done : left;
            break;
        }
        m.msg_iovlen = (size_t)left;
        m.msg_iov = (struct iovec *)cur;
        int f = flags | MSG_DONTWAIT | sock_flags(mode, done);
        ssize_t r = mode == 'r' ? gort__libc.recvmsg(fd, &m, f)
                                : gort__libc.sendmsg(fd, &m, f);
        if (r >= 0) {
            done += (size_t)r;
            if (mode == 'r') {
                msg->msg_namelen = m.msg_namelen;
                msg->msg_controllen = m.msg_controllen;
                msg->msg_flags = m.msg_flags;
            }
            if (!all || done == want || r == 0) {
                res = (ssize_t)done;
                break;
            }
            /* Once part is through, the address and control data are
             * sent or received. */
            m.msg_name = NULL;
            m.msg_namelen = 0;
            m.msg_control = NULL;
            m.msg_controllen = 0;
            continue;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK) {
            res = done > 0 ? (ssize_t)done : -e;
            break;
        }
        int w = wait_fd(fd, mode, &deadline, held);
        if (w < 0 || w == HANDOFF) {
            res = done > 0 ? (ssize_t)done : (w < 0 ? w : -EAGAIN);
            break;
        }
        if (mode == 'w' && done > 0 && error_pending(fd)) {
            res = (ssize_t)done;
            break;
        }
    }
    gort__free(heap);
    return res;
}

static ssize_t hook_msg(int fd, struct msghdr *msg, int flags, int mode)
{
    struct polldesc *held;
    int err = hold(fd, &held);
    if (err)
        return err;
    /* A plain receive (no peek, nothing out of band, no MSG_WAITALL) may
     * wait first, and a short one leaves a TCP socket empty. */
    bool plain = mode == 'r' && flags == 0 && msg->msg_iovlen <= IOV_MAX;
    size_t want = plain ? iov_len(msg->msg_iov, (int)msg->msg_iovlen) : 0;
    if (plain && held && (err = sock_wait_first(held, fd, want)) < 0) {
        unhold(held);
        return err;
    }
    ssize_t r = hook_msg_body(fd, msg, flags, mode, &held);
    if (plain && held)
        sock_read_done(held, r, want);
    unhold(held);
    return r;
}

ssize_t gort__hook_recvmsg(int fd, struct msghdr *msg, int flags)
{
    GORT_SAN_SCOPE();
    return HOOKED(ssize_t, ret(hook_msg(fd, msg, flags, 'r')));
}

ssize_t gort__hook_sendmsg(int fd, const struct msghdr *msg, int flags)
{
    GORT_SAN_SCOPE();
    struct msghdr m = *msg;
    return HOOKED(ssize_t, ret(hook_msg(fd, &m, flags, 'w')));
}

static ssize_t hook_recvfrom(int fd, void *buf, size_t n, int flags,
                             struct sockaddr *from, socklen_t *fromlen)
{
    struct iovec iov = {buf, n};
    struct msghdr msg = {.msg_name = from,
                         .msg_namelen = from && fromlen ? *fromlen : 0,
                         .msg_iov = &iov,
                         .msg_iovlen = 1};
    ssize_t r = hook_msg(fd, &msg, flags, 'r');
    if (r >= 0 && from && fromlen)
        *fromlen = msg.msg_namelen;
    return ret(r);
}

ssize_t gort__hook_recvfrom(int fd, void *buf, size_t n, int flags,
                            struct sockaddr *from, socklen_t *fromlen)
{
    GORT_SAN_SCOPE();
    return HOOKED(ssize_t, hook_recvfrom(fd, buf, n, flags, from, fromlen));
}

static ssize_t hook_sendto(int fd, const void *buf, size_t n, int flags,
                           const struct sockaddr *to, socklen_t tolen)
{
    struct iovec iov = {(void *)buf, n};
    struct msghdr msg = {.msg_name = (void *)to,
                         .msg_namelen = to ? tolen : 0,
                         .msg_iov = &iov,
                         .msg_iovlen = 1};
    return ret(hook_msg(fd, &msg, flags, 'w'));
}

ssize_t gort__hook_sendto(int fd, const void *buf, size_t n, int flags,
                          const struct sockaddr *to, socklen_t tolen)
{
    GORT_SAN_SCOPE();
    return HOOKED(ssize_t, hook_sendto(fd, buf, n, flags, to, tolen));
}

/* ---------------------------------------------------------------------------
 * Connections.
 * ------------------------------------------------------------------------- */

/* Whether fd is ready now for events (poll(2) with no wait). */
static bool ready_now(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    return gort__libc.poll(&p, 1, 0) > 0;
}

/* accept4 from a goroutine.  There is no per-call non-blocking accept, so
 * on a listening socket in blocking mode the goroutine waits until a
 * connection is there and then accepts in the syscall hand-off: if
 * another process took the connection first, the thread blocks as the C
 * library's accept would, but not the P.  The result or -errno. */
static int accept_body(int fd, struct sockaddr *addr, socklen_t *len, int flags,
                       struct polldesc **held)
{
    if (user_nonblock(fd)) {
        int r = gort__libc.accept4(fd, addr, len, flags);
        return r < 0 ? -errno : r;
    }
    int64_t deadline = -1;
    for (;;) {
        if (held_closed(*held))
            return -EBADF;
        if (ready_now(fd, POLLIN))
            return BLOCKING_CALL(int,
                                 gort__libc.accept4(fd, addr, len, flags));
        int w = wait_fd(fd, 'r', &deadline, held);
        if (w == HANDOFF)
            return HANDOFF_CALL(int, gort__libc.accept4(fd, addr, len, flags));
        if (w < 0)
            return w;
    }
}

static int hook_accept4(int fd, struct sockaddr *addr, socklen_t *len,
                        int flags)
{
    struct polldesc *held;
    int r = hold(fd, &held);
    if (!r)
        r = accept_body(fd, addr, len, flags, &held);
    unhold(held);
    if (r >= 0)
        gort__hook_fd_new(r);
    return (int)ret(r);
}

int gort__hook_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    GORT_SAN_SCOPE();
    return HOOKED(int, hook_accept4(fd, addr, len, flags));
}

/* Pauses between a blocking connect's tries while a Unix listener's
 * backlog is full: the first, doubled each time up to the longest. */
#define NAP_FIRST (50 * 1000)
#define NAP_MOST (10 * 1000 * 1000)

/* The SO_SNDTIMEO of socket fd, as a deadline from now (0: none). */
static int64_t sock_deadline(int fd)
{
    struct timeval tv;
    socklen_t len = sizeof tv;
    if (gort__libc.getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) < 0 ||
        (tv.tv_sec == 0 && tv.tv_usec == 0))
        return 0;
    return gort_nanotime() + (int64_t)tv.tv_sec * 1000000000 +
           (int64_t)tv.tv_usec * 1000;
}

/* A blocking connect on fd found a Unix listener's backlog full (EAGAIN).
 * The C library's connect waits on the listener, which nothing of ours
 * can watch (the socket polls writable all along), so the hook tries
 * again after a pause (*pause, doubled here): parked in fd's pollDesc
 * without re-arming it, so that a hooked close ends the pause.  *deadline
 * and *held as for wait_fd.  0 (try again), or -errno: -EAGAIN once
 * SO_SNDTIMEO has passed, as the C library's, or -EBADF once closed. */
static int nap_fd(int fd, int64_t *deadline, struct polldesc **held,
                  int64_t *pause)
{
    int err = 0;
    if (!*held)
        *held = hook_pd(fd, &err);
    if (*deadline < 0)
        *deadline = sock_deadline(fd);
    int64_t until = gort_nanotime() + *pause;
    *pause = *pause < NAP_MOST / 2 ? *pause * 2 : NAP_MOST;
    bool last = *deadline > 0 && *deadline <= until;
    if (last)
        until = *deadline;
    err = *held ? pd_park(*held, 'w', until) : BUSY;
    if (err == BUSY) {
        /* No slot to park in (another goroutine waits to write, or the
         * poller cannot watch fd): a plain sleep. */
        int64_t d = until - gort_nanotime();
        if (d > 0)
            gort_sleep(d);
        err = held_closed(*held) ? -EBADF : -ETIMEDOUT;
    }
    if (err == -ETIMEDOUT)
        return last ? -EAGAIN : 0;
    return err;
}

/* connect from a goroutine.  A socket in blocking mode is made
 * non-blocking for the moment the connect takes to start (the only
 * change the hooks make to a file description), then the goroutine waits
 * until it is writable and reads the outcome, as Go's connect does.
 * SO_SNDTIMEO bounds the wait (EINPROGRESS when it passes, as Linux's
 * blocking connect).  A Unix socket whose listener's backlog is full says
 * EAGAIN: the blocking connect waits, so the hook pauses and tries again
 * (nap_fd).  The result or -errno. */
static int connect_body(int fd, const struct sockaddr *addr, socklen_t len,
                        struct polldesc **held)
{
    int fl = gort__libc.fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK))
        return gort__libc.connect(fd, addr, len) < 0 ? -errno : 0;
    int64_t deadline = -1, pause = NAP_FIRST;
    for (;;) {
        if (held_closed(*held))
            return -EBADF;
        if (gort__libc.fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return -errno;
        int r = gort__libc.connect(fd, addr, len);
        int e = errno;
        gort__libc.fcntl(fd, F_SETFL, fl);
        if (r == 0)
            return 0;
        if (e == EINPROGRESS)
            break;
        if (e != EAGAIN && e != EINTR)
            return -e;
        if (e == EAGAIN) {
            int w = nap_fd(fd, &deadline, held, &pause);
            if (w < 0)
                return w;
        }
    }
    /* Started: wait until the socket says the outcome.  A wake-up without
     * it (readiness left from an earlier file at the number) waits on. */
    for (;;) {
        int w = wait_fd(fd, 'w', &deadline, held);
        if (w == HANDOFF || w == -EAGAIN)
            return -EINPROGRESS;
        if (w < 0)
            return w;
        if (held_closed(*held))
            return -EBADF;
        if (!ready_now(fd, POLLOUT))
            continue;
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (gort__libc.getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            return -errno;
        return -soerr;
    }
}

static int hook_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    struct polldesc *held;
    int r = hold(fd, &held);
    if (!r)
        r = connect_body(fd, addr, len, &held);
    unhold(held);
    return (int)ret(r);
}

int gort__hook_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    GORT_SAN_SCOPE();
    return HOOKED(int, hook_connect(fd, addr, len));
}

/* ---------------------------------------------------------------------------
 * Closing and duplicating.
 * ------------------------------------------------------------------------- */

/* close from a goroutine: a descriptor the poller watches is closed
 * through it (its waiters return EBADF; the close(2) waits for calls in
 * flight, so that the number is not reused under them); any other is the
 * C library's close.  Goroutines in poll or select on it are woken.
 * close, dup2 and dup3 are not HOOKED: ThreadSanitizer's interceptors of
 * them are no blocking calls (and its own symbolizer's close comes here
 * from inside a report, where a fiber call would wait for its lock). */
int gort__hook_close(int fd)
{
    GORT_SAN_SCOPE();
    kind_forget(fd);
    int r = gort__fd_close(fd);
    if (r == 1)
        r = gort__libc.close(fd) < 0 ? -errno : 0;
    /* Linux frees the number whatever else close(2) reports. */
    if (r != -EBADF)
        wake_watchers(fd);
    return (int)ret(r);
}

/* dup2 (flags < 0) or dup3 from a goroutine: goroutines waiting on newfd
 * are woken (EBADF, poll and select look again), unless the call fails,
 * which leaves newfd alone: what the kernel would refuse is refused
 * first.  A number closed by a hooked close whose close(2) still waits
 * (gort__fd_closed) is closed as oldfd, and free as newfd. */
int gort__hook_dup3(int oldfd, int newfd, int flags)
{
    GORT_SAN_SCOPE();
    if (gort__fd_closed(oldfd) || gort__libc.fcntl(oldfd, F_GETFD) < 0 ||
        newfd < 0)
        return (int)ret(-EBADF);
    /* dup2 of a number onto itself changes nothing; dup3 refuses it. */
    if (oldfd == newfd)
        return flags < 0 ? newfd : (int)ret(-EINVAL);
    if (flags > 0 && (flags & ~O_CLOEXEC))
        return (int)ret(-EINVAL);
    int r = gort__fd_dup(oldfd, newfd, flags);
    if (r < 0)
        return (int)ret(r);
    kind_forget(newfd);
    wake_watchers(newfd);
    return r;
}

/* ---------------------------------------------------------------------------
 * Waiting for several descriptors: poll, select, epoll_wait.  Each first
 * makes its call without waiting; when nothing is ready the goroutine
 * parks until something may be, then makes the call again.  One
 * descriptor in one direction parks in its pollDesc; anything else parks
 * on a private epoll instance (wait_ep).
 *
 * A hooked close (or dup2) wakes the call, which then looks again: a
 * closed descriptor is POLLNVAL for poll and EBADF for select, as in the
 * kernel's calls on a closed number, also while the close(2) itself still
 * waits for other calls in flight on it (the number stays open in the
 * kernel until then, and the kernel's call would report the old file).
 * ------------------------------------------------------------------------- */

/* Deadline (nanotime) for a timeout, 0 for none, -1 for no wait. */
static int64_t deadline_of(const struct timespec *ts)
{
    if (!ts)
        return 0;
    if (ts->tv_sec == 0 && ts->tv_nsec == 0)
        return -1;
    return gort_nanotime() + (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* poll's result r for fds, each descriptor closed for the program but
 * not yet in the kernel (gort__fd_closed) reported as closed: POLLNVAL. */
static int closed_entries(struct pollfd *fds, nfds_t n, int r)
{
    for (nfds_t i = 0; i < n; i++) {
        if (fds[i].fd < 0 || !gort__fd_closed(fds[i].fd))
            continue;
        if (fds[i].revents == 0)
            r++;
        fds[i].revents = POLLNVAL;
    }
    return r;
}

/* Park until one of fds may be ready or deadline (0: none) passes: 0, or
 * -ETIMEDOUT, or -errno (HANDOFF: a descriptor the poller cannot watch,
 * which poll(2) reports ready anyway: the caller's call will see it). */
static int wait_many(struct pollfd *fds, nfds_t n, int64_t deadline)
{
    int one = -1;
    nfds_t active = 0;
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0) {
            active++;
            one = (int)i;
        }
    if (active == 0) {
        /* Only a sleep. */
        if (deadline == 0)
            return -EDEADLK; /* poll(NULL, 0, -1): caller parks forever */
        int64_t d = deadline - gort_nanotime();
        if (d > 0)
            gort_sleep(d);
        return -ETIMEDOUT;
    }
    short ev = active == 1 ? fds[one].events : 0;
    bool in = ev & (POLLIN | POLLPRI | POLLRDHUP), out = ev & POLLOUT;
    if (active == 1 && in != out) {
        int err = 0;
        struct polldesc *pd = hook_pd(fds[one].fd, &err);
        if (!pd)
            return err == -EPERM ? HANDOFF : err == -EBADF ? 0 : err;
        err = pd_park(pd, in ? 'r' : 'w', deadline);
        gort__fd_unref(pd);
        if (err != BUSY)
            return err == -EBADF ? 0 : err; /* closed: poll reports it */
        /* Another goroutine waits in the slot: wait beside it. */
    }
    return wait_ep(fds, n, deadline);
}

static int hook_ppoll(struct pollfd *fds, nfds_t n,
                      const struct timespec *timeout)
{
    if (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
                    timeout->tv_nsec >= 1000000000L))
        return (int)ret(-EINVAL);
    int64_t deadline = deadline_of(timeout);
    for (;;) {
        int r = gort__libc.poll(fds, n, 0);
        if (r >= 0)
            r = closed_entries(fds, n, r);
        if (r != 0 || deadline < 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return r;
        }
        if (deadline > 0 && gort_nanotime() >= deadline)
            return 0;
        int w = wait_many(fds, n, deadline);
        if (w == -EDEADLK) {
            /* Nothing to wait for and no timeout: poll's wait forever. */
            for (;;)
                gort_sleep(INT64_MAX / 2);
        }
        if (w == -ETIMEDOUT)
            return 0;
        if (w == HANDOFF) {
            int ms =
                deadline == 0
                    ? -1
                    : (int)((deadline - gort_nanotime() + 999999) / 1000000);
            int hr = (int)ret(HANDOFF_CALL(
                int, gort__libc.poll(fds, n, ms < 0 && deadline ? 0 : ms)));
            return hr >= 0 ? closed_entries(fds, n, hr) : hr;
        }
        if (w < 0)
            return (int)ret(w);
    }
}

int gort__hook_ppoll(struct pollfd *fds, nfds_t n,
                     const struct timespec *timeout)
{
    GORT_SAN_SCOPE();
    return HOOKED(int, hook_ppoll(fds, n, timeout));
}

/* Whether a descriptor in select's sets as given (saved: words longs a
 * set, NULL sets skipped) is closed for the program but not yet in the
 * kernel (gort__fd_closed): select fails with EBADF, as for any closed
 * descriptor in its sets. */
static bool sets_closed(int nfds, const unsigned long *saved, size_t words,
                        fd_set *const sets[3])
{
    size_t bits = 8 * sizeof(unsigned long);
    for (size_t word = 0; word < words; word++) {
        unsigned long any = 0;
        for (int k = 0; k < 3; k++)
            if (sets[k])
                any |= saved[k * words + word];
        for (; any; any &= any - 1) {
            int fd = (int)(word * bits) + __builtin_ctzl(any);
            if (fd < nfds && gort__fd_closed(fd))
                return true;
        }
    }
    return false;
}

static int hook_pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
                        const struct timespec *timeout, struct timeval *tv)
{
    if (nfds < 0 || (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
                                 timeout->tv_nsec >= 1000000000L)))
        return (int)ret(-EINVAL);
    int64_t deadline = deadline_of(timeout);
    /* The sets as given, to start every try from: whole longs, as the
     * kernel reads them. */
    size_t bits = 8 * sizeof(unsigned long);
    size_t bytes = ((size_t)nfds + bits - 1) / bits * sizeof(unsigned long);
    unsigned long *saved = gort__malloc(3 * bytes + 1);
    size_t words = bytes / sizeof *saved;
    if (!saved)
        return (int)ret(-ENOMEM);
    fd_set *sets[3] = {r, w, e};
    for (int k = 0; k < 3; k++)
        if (sets[k])
            memcpy(saved + k * words, sets[k], bytes);
    struct pollfd *pfd = NULL;
    nfds_t np = 0;
    int res;
    for (;;) {
        for (int k = 0; k < 3; k++)
            if (sets[k])
                memcpy(sets[k], saved + k * words, bytes);
        if (sets_closed(nfds, saved, words, sets)) {
            res = (int)ret(-EBADF);
            break;
        }
        struct timespec zero = {0, 0};
        res = gort__libc.pselect(nfds, r, w, e, &zero, NULL);
        if (res < 0 && errno == EINTR)
            continue;
        if (res != 0 || deadline < 0)
            break;
        if (deadline > 0 && gort_nanotime() >= deadline)
            break;
        if (!pfd) {
            /* The descriptors to watch, with their events. */
            pfd = gort__malloc(((size_t)nfds + 1) * sizeof *pfd);
            if (!pfd) {
                res = (int)ret(-ENOMEM);
                break;
            }
            for (int fd = 0; fd < nfds; fd++) {
                short ev = 0;
                size_t word = (size_t)fd / bits;
                unsigned long bit = 1ul << ((size_t)fd % bits);
                if (r && (saved[word] & bit))
                    ev |= POLLIN;
                if (w && (saved[words + word] & bit))
                    ev |= POLLOUT;
                if (e && (saved[2 * words + word] & bit))
                    ev |= POLLPRI;
                if (ev)
                    pfd[np++] = (struct pollfd){.fd = fd, .events = ev};
            }
        }
        int wr = wait_many(pfd, np, deadline);
        if (wr == -EDEADLK)
            for (;;)
                gort_sleep(INT64_MAX / 2);
        if (wr == -ETIMEDOUT || wr == HANDOFF) {
            /* A descriptor the poller cannot watch is always ready for
             * select: the next try reports it. */
            if (wr == -ETIMEDOUT) {
                for (int k = 0; k < 3; k++)
                    if (sets[k])
                        memset(sets[k], 0, bytes);
                res = 0;
                break;
            }
            continue;
        }
        if (wr < 0) {
            res = (int)ret(wr);
            break;
        }
    }
    if (tv && deadline > 0) {
        int64_t left = deadline - gort_nanotime();
        if (left < 0)
            left = 0;
        tv->tv_sec = left / 1000000000;
        tv->tv_usec = (left % 1000000000) / 1000;
    }
    int saved_errno = errno;
    gort__free(pfd);
    gort__free(saved);
    errno = saved_errno;
    return res;
}

int gort__hook_pselect(int nfds, fd_set *r, fd_set *w, fd_set *e,
                       const struct timespec *timeout, struct timeval *tv)
{
    GORT_SAN_SCOPE();
    return HOOKED(int, hook_pselect(nfds, r, w, e, timeout, tv));
}

static int hook_epoll_wait(int epfd, struct epoll_event *ev, int maxevents,
                           int timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    int64_t deadline = deadline_of(timeout_ms < 0 ? NULL : &ts);
    for (;;) {
        int r = gort__libc.epoll_wait(epfd, ev, maxevents, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r != 0 || deadline < 0)
            return r;
        if (deadline > 0 && gort_nanotime() >= deadline)
            return 0;
        struct pollfd p = {.fd = epfd, .events = POLLIN};
        int w = wait_many(&p, 1, deadline);
        if (w == -ETIMEDOUT)
            return 0;
        if (w == HANDOFF)
            return (int)ret(HANDOFF_CALL(
                int, gort__libc.epoll_wait(epfd, ev, maxevents, timeout_ms)));
        if (w < 0)
            return (int)ret(w == -EBADF ? -EBADF : w);
    }
}

int gort__hook_epoll_wait(int epfd, struct epoll_event *ev, int maxevents,
                          int timeout_ms)
{
    GORT_SAN_SCOPE();
    return HOOKED(int, hook_epoll_wait(epfd, ev, maxevents, timeout_ms));
}

/* ---------------------------------------------------------------------------
 * Sleeping.
 * ------------------------------------------------------------------------- */

static int hook_clock_nanosleep(clockid_t clk, int flags,
                                const struct timespec *req,
                                struct timespec *rem)
{
    if (!req)
        return EFAULT;
    if (req->tv_sec < 0 || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L)
        return EINVAL;
    /* The program's clocks that time passes on; a CPU-time clock (of the
     * process: a thread's own is refused) runs with the program's work,
     * which the hand-off waits for. */
    if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC &&
        clk != CLOCK_BOOTTIME && clk != CLOCK_TAI) {
        xadd_relaxed(&hook.handoff, 1);
        gort_entersyscall();
        int e = gort__libc.clock_nanosleep(clk, flags, req, rem);
        gort_exitsyscall();
        return e;
    }
    struct timespec now;
    if (clock_gettime(clk, &now) < 0)
        return EINVAL;
    int64_t ns = (int64_t)req->tv_sec * 1000000000 + req->tv_nsec;
    if (flags & TIMER_ABSTIME)
        ns -= (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    if (ns > 0) {
        xadd_relaxed(&hook.parked, 1);
        gort_sleep(ns);
    }
    if (rem && !(flags & TIMER_ABSTIME))
        rem->tv_sec = rem->tv_nsec = 0;
    return 0;
}

int gort__hook_clock_nanosleep(clockid_t clk, int flags,
                               const struct timespec *req, struct timespec *rem)
{
    GORT_SAN_SCOPE();
    return HOOKED(int, hook_clock_nanosleep(clk, flags, req, rem));
}

/* ---------------------------------------------------------------------------
 * Name lookups: the C library's own, so that nsswitch, /etc/hosts and
 * resolv.conf's search and timeouts hold as the program expects, each on
 * one of GORT_DNS_THREADS threads (gort__dns_call); goroutines beyond
 * them wait parked for a slot.
 * ------------------------------------------------------------------------- */

int gort__hook_getaddrinfo(const char *node, const char *service,
                           const struct addrinfo *hints, struct addrinfo **res)
{
    GORT_SAN_SCOPE();
    return gort__getaddrinfo(node, service, hints, res);
}

struct gni_args {
    const struct sockaddr *sa;
    socklen_t salen;
    char *host;
    socklen_t hostlen;
    char *serv;
    socklen_t servlen;
    int flags;
};

static int gni_call(void *p)
{
    struct gni_args *a = p;
    return gort__libc.getnameinfo(a->sa, a->salen, a->host, a->hostlen, a->serv,
                                  a->servlen, a->flags);
}

int gort__hook_getnameinfo(const struct sockaddr *sa, socklen_t salen,
                           char *host, socklen_t hostlen, char *serv,
                           socklen_t servlen, int flags)
{
    GORT_SAN_SCOPE();
    struct gni_args a = {sa, salen, host, hostlen, serv, servlen, flags};
    /* Numbers asked for both: no lookup, at once. */
    if ((flags & NI_NUMERICHOST) && (flags & NI_NUMERICSERV))
        return gni_call(&a);
    return gort__dns_call(gni_call, &a);
}

struct ghb_args {
    const char *name;
    int af;
    struct hostent *ret;
    char *buf;
    size_t buflen;
    struct hostent **result;
    int *h_errnop;
};

static int ghb_call(void *p)
{
    struct ghb_args *a = p;
    return gort__libc.gethostbyname2_r(a->name, a->af, a->ret, a->buf,
                                       a->buflen, a->result, a->h_errnop);
}

int gort__hook_gethostbyname2_r(const char *name, int af, struct hostent *ret,
                                char *buf, size_t buflen,
                                struct hostent **result, int *h_errnop)
{
    GORT_SAN_SCOPE();
    struct ghb_args a = {name, af, ret, buf, buflen, result, h_errnop};
    return gort__dns_call(ghb_call, &a);
}
