/*
 * netpoll.c - the network poller: goroutines wait for file descriptors,
 * not threads.  Mirrors netpoll.go and netpoll_epoll.go.
 *
 * A descriptor handed to the poller (gort_fd_register, or made by
 * gort_socket, gort_accept, gort_pipe) is put in non-blocking mode and
 * added to one epoll instance, edge-triggered, for reading and writing at
 * once.  Its pollDesc has a slot per direction (rg, wg), each
 *
 *     PD_NIL    nothing happened, nobody waits
 *     PD_READY  readiness arrived and nobody has consumed it
 *     PD_WAIT   a goroutine is about to park
 *     a G       that goroutine is parked (status WAITING, reason IO wait)
 *
 * An I/O call tries the system call; on EAGAIN it parks in its slot
 * (netpollblock) until an epoll event, a deadline or a close unblocks it
 * (netpollunblock), then tries again.  Events are collected by
 * gort__netpoll(delay):
 *   - findrunnable polls without blocking before it steals;
 *   - the one M that has nothing to do sleeps in epoll until the next timer
 *     (the poller of time.c; an eventfd write breaks the sleep);
 *   - sysmon polls when nobody has for 10 ms.
 * Of the readied Gs, one per idle P goes to the global queue with an M
 * started for it, and the rest to the polling M's own P (injectglist).
 *
 * Deadlines are timers: the timer function re-reads the deadline and, if
 * it has passed, marks it expired (-1) and unblocks the waiter, which then
 * returns -ETIMEDOUT.  gort_close marks the descriptor closing, unblocks
 * both slots (their goroutines return -EBADF), and closes it.
 *
 * Every call on a descriptor holds a reference to its pollDesc for its
 * whole length (gort__fd_ref/gort__fd_unref: Go's fdMutex, reduced to a
 * count).  gort_close marks the descriptor closing at once (calls fail
 * with -EBADF from then on), but the close(2) itself, the removal from the
 * table and the pollDesc's return to the free list wait for the last call
 * in flight to end: until then no other open() can get the
 * same number and have a late read(2) or write(2) land on it, and no
 * other descriptor can get the same pollDesc under a goroutine that is
 * still using it.  (Go's FD.Close likewise leaves the close(2) to the last
 * decref.)
 *
 * pollDescs are never freed while the runtime runs: an epoll event may
 * still name one after its descriptor was closed.  Events carry the
 * pollDesc's sequence number, bumped on every reuse, and stale ones are
 * dropped (Go's fdseq tagging).
 *
 * Invariants:
 *   - rg/wg change only by CAS (atomics).  pollcache.lock (a spinlock)
 *     guards the fd table, the free list and the list of every pollDesc;
 *     it is held with no other runtime lock (runtime.h's lock order) and
 *     never while a timer's lock is taken.
 *   - A slot holds at most one G.
 */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef TCP_INQ
#define TCP_INQ 36
#endif
#ifndef TCP_CM_INQ
#define TCP_CM_INQ TCP_INQ
#endif

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

#define PD_NIL ((uintptr_t)0)
#define PD_READY ((uintptr_t)1)
#define PD_WAIT ((uintptr_t)2)

/* pollDesc.refs: calls in flight in the low bits, and two flags. */
#define PD_REF_CLOSED (1U << 30) /* gort_close has closed it (for gort) */
#define PD_REF_FREED (1U << 31)  /* closed and back on the free list */

struct polldesc {
    struct polldesc *link;  /* free list; under pollcache.lock */
    int fd;                 /* atomic (relaxed): set under pollcache.lock
                             * at registration, read by gort__fd_ref */
    uint32_t refs;          /* atomic: PD_REF_* | calls in flight */
    uint32_t seq;           /* bumped on reuse; events carry it */
    uint32_t closing;       /* atomic: gort_close began */
    bool stream;            /* a pipe or stream socket: a short read
                             * leaves it empty; set at registration */
    bool inq;               /* a TCP socket of gort's own with TCP_INQ on:
                             * every read says whether it left the socket
                             * empty (gort__fd_read); set at registration */
    uint32_t rdrained;      /* atomic: the last read was short (see
                             * gort__fd_read) */
    uint32_t rdhup;         /* atomic: an event said hang-up or error:
                             * reads never wait first again */
    uintptr_t rg, wg;       /* atomic: PD_* or a G */
    int64_t rd, wd;         /* atomic: deadline (0 none, -1 expired) */
    struct gtimer rt, wt;   /* deadline timers */
};

static struct {
    gort_spinlock lock;
    struct polldesc *free;
    struct polldesc **byfd;  /* fd -> pollDesc, or NULL */
    int nbyfd;
    /* every pollDesc ever made, for teardown */
    struct polldesc **all;
    int nall, capall;
} pollcache = {.lock = GORT_LOCK_INIT(LOCKRANK_POLLCACHE)};

static int epfd = -1, breakfd = -1;
/* epoll_pwait2 (Linux 5.11) is missing: use epoll_wait's milliseconds.
 * Set on ENOSYS, and from the start under Valgrind, which does not know
 * the call and would warn on every use.  Relaxed: a flag that only saves
 * a failing system call. */
static uint32_t no_pwait2;
static uint32_t inited;          /* atomic: epoll set up */
static uint32_t wakesig;         /* atomic: a break is pending */
static uint32_t nwaiters;        /* atomic: goroutines parked in IO wait */

/* ---------------------------------------------------------------------------
 * Set-up, break, teardown.
 * ------------------------------------------------------------------------- */

static int netpollinit_locked(void)
{
    gort__lock_assert_held(&pollcache.lock);
    if (load_relaxed(&inited))
        return 0;
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        return -errno;
    breakfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (breakfd < 0) {
        int e = -errno;
        close(epfd);
        epfd = -1;
        return e;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, breakfd, &ev) < 0) {
        int e = -errno;
        close(breakfd);
        close(epfd);
        breakfd = epfd = -1;
        return e;
    }
    /* Release: a thread that sees inited sees the descriptors. */
    store_rel(&inited, 1);
    /* A poller asleep on the futex must come round to epoll. */
    gort__poller_wake_futex();
    return 0;
}

bool gort__netpoll_inited(void)
{
    return load_acq(&inited) != 0;
}

/* Wake the M blocked in epoll_wait.  Mirrors netpollBreak. */
void gort__netpoll_break(void)
{
    /* One write is enough until the poller drains it. */
    if (!cas_acqrel(&wakesig, 0, 1))
        return;
    uint64_t one = 1;
    while (write(breakfd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

void gort__netpoll_fini(void)
{
    if (load_relaxed(&inited)) {
        close(epfd);
        close(breakfd);
        epfd = breakfd = -1;
        store_relaxed(&inited, 0);
    }
    for (int i = 0; i < pollcache.nall; i++) {
        /* Closed with calls in flight that never ended (their goroutines
         * were discarded with the runtime): close(2) is still owed. */
        struct polldesc *pd = pollcache.all[i];
        if ((pd->refs & (PD_REF_CLOSED | PD_REF_FREED)) == PD_REF_CLOSED)
            close(pd->fd);
        gort__free(pd);
    }
    gort__free(pollcache.all);
    gort__free(pollcache.byfd);
    memset(&pollcache, 0, sizeof pollcache);
    gort__lock_init(&pollcache.lock, LOCKRANK_POLLCACHE);
    store_relaxed(&wakesig, 0);
    store_relaxed(&nwaiters, 0);
}

uint32_t gort__netpoll_waiters(void)
{
    return load_relaxed(&nwaiters);
}

/* ---------------------------------------------------------------------------
 * Blocking and unblocking.  Mirrors netpollblock/netpollunblock.
 * ------------------------------------------------------------------------- */

/* Take the G parked in *gpp, if any, leaving PD_READY (ioready) or
 * PD_NIL.  Returns the G to ready, or NULL. */
static struct g *netpollunblock(uintptr_t *gpp, bool ioready)
{
    for (;;) {
        /* Seq-cst: the second half of the handshake with netpollwait (a
         * close or deadline stored its flag with seq-cst just before). */
        uintptr_t old = load_seqcst(gpp);
        if (old == PD_READY)
            return NULL;
        if (old == PD_NIL && !ioready)
            /* Only readiness is remembered: a waiter that comes later
             * checks deadlines and closing itself. */
            return NULL;
        uintptr_t new = ioready ? PD_READY : PD_NIL;
        /* Acq-rel: takes the G the parker published with release. */
        if (cas_acqrel(gpp, old, new)) {
            if (old == PD_WAIT)
                old = PD_NIL; /* it will see the new value and not park */
            return old > PD_WAIT ? (struct g *)old : NULL;
        }
    }
}

static bool netpollblockcommit(struct m *mp, struct g *gp, void *arg)
{
    (void)mp;
    uintptr_t *gpp = arg;
    /* Release: publishes the parked G to netpollunblock's acquire. */
    bool ok = cas_acqrel(gpp, PD_WAIT, (uintptr_t)gp);
    if (ok)
        xadd_acqrel(&nwaiters, 1);
    return ok;
}

/* The error that ends a wait in direction mode (0 none).
 *
 * Closing and deadlines against a parking waiter are a store-buffer
 * handshake: the waiter stores PD_WAIT in rg/wg and then loads closing and
 * rd/wd; a closer or an expired deadline stores its flag and then loads
 * rg/wg (netpollunblock).  With acquire/release alone both loads may read
 * the old values (on x86-64 a plain store waits in the store buffer while
 * the next load goes ahead), the waiter parks, nobody wakes it.  So all
 * four accesses are sequentially consistent, as Go's atomics are: one of
 * the two sides sees the other.  (On x86-64 the loads stay plain moves.) */
static int netpollcheckerr(struct polldesc *pd, int mode)
{
    if (load_seqcst(&pd->closing)) {
        /* ThreadSanitizer (san.c): the close happens before this. */
        gort__san_acquire(&pd->closing);
        return -EBADF;
    }
    int64_t d = load_seqcst(mode == 'r' ? &pd->rd : &pd->wd);
    if (d < 0)
        return -ETIMEDOUT;
    return 0;
}

/* A thread gort did not create has no goroutine to park: it waits in
 * poll(2) itself, in slices, so that deadlines and closes are seen. */
static int netpollwait_foreign(struct polldesc *pd, int mode)
{
    struct pollfd pfd = {.fd = pd->fd,
                         .events = mode == 'r' ? POLLIN : POLLOUT};
    for (;;) {
        int err = netpollcheckerr(pd, mode);
        if (err)
            return err;
        int r = poll(&pfd, 1, 10);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
        /* A deadline passes on the timer of some P: look at the clock too. */
        int64_t d = load_relaxed(mode == 'r' ? &pd->rd : &pd->wd);
        if (d > 0 && gort_nanotime() >= d)
            return -ETIMEDOUT;
    }
}

/* Wait until pd is ready for mode, or an error.  0 when ready.  Mirrors
 * poll_runtime_pollWait. */
static int netpollwait(struct polldesc *pd, int mode)
{
    struct m *mp = gort__getm();
    if (GORT_UNLIKELY(!mp || !mp->curg))
        gort__fatal("I/O on a registered descriptor outside gort_main");
    if (GORT_UNLIKELY(mp->curg->foreign))
        return netpollwait_foreign(pd, mode);
    uintptr_t *gpp = mode == 'r' ? &pd->rg : &pd->wg;
    for (;;) {
        int err = netpollcheckerr(pd, mode);
        if (err)
            return err;
        uintptr_t old = load_acq(gpp);
        if (old == PD_READY) {
            if (cas_acqrel(gpp, PD_READY, PD_NIL))
                return 0;
            continue;
        }
        if (old != PD_NIL)
            gort__fatal("netpoll: two goroutines wait to %s fd %d at once",
                        mode == 'r' ? "read" : "write", pd->fd);
        /* Seq-cst: the waiter's half of the handshake (netpollcheckerr). */
        if (!cas_seqcst(gpp, PD_NIL, PD_WAIT))
            continue;
        /* Re-check after publishing PD_WAIT: a deadline or close that
         * came in between saw nobody to wake. */
        if (netpollcheckerr(pd, mode) == 0)
            gort__park(netpollblockcommit, gpp, WAIT_IO);
        /* Woken (or never parked): consume what woke us. */
        old = xchg_acqrel(gpp, PD_NIL);
        if (old > PD_WAIT)
            gort__throw("netpollwait: corrupted state");
        if (old == PD_READY)
            return 0;
        /* Unblocked without readiness: a deadline or close; loop to
         * report it (or to wait again after a deadline was extended). */
    }
}

/* Make a G woken from IO wait runnable: in a batch (q) or now. */
static void netpoll_collect(struct g *gp, struct gqueue *q, int32_t *n)
{
    xadd_acqrel(&nwaiters, -1);
    gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
    gort__gqueue_push(q, gp);
    (*n)++;
}

/* ---------------------------------------------------------------------------
 * Polling.  Mirrors netpoll (netpoll_epoll.go) and injectglist.
 * ------------------------------------------------------------------------- */

/* The descriptor hung up or failed: its end of file or error will not
 * come with another edge, so a reader must not wait for one after a short
 * read (gort__fd_read).  The flag is stored before an RMW on rg: a reader
 * that consumes rg's readiness after the RMW sees the flag (release
 * sequence), and one that consumed it before finds rg ready again, set by
 * netpollunblock below. */
static void mark_hup(struct polldesc *pd)
{
    store_relaxed(&pd->rdhup, 1);
    /* Acq-rel, on READY only: joins the flag to rg's release sequence. */
    cas_acqrel(&pd->rg, PD_READY, PD_READY);
}

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
            if (read(breakfd, &v, sizeof v) < 0 && errno != EAGAIN)
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
        bool r = e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
        bool w = e & (EPOLLOUT | EPOLLHUP | EPOLLERR);
        struct g *gp;
        if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            mark_hup(pd);
        if (r && (gp = netpollunblock(&pd->rg, true)))
            netpoll_collect(gp, q, &cnt);
        if (w && (gp = netpollunblock(&pd->wg, true)))
            netpoll_collect(gp, q, &cnt);
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
    if (!load_acq(&inited))
        return 0;
    struct epoll_event evs[128];
    int n;
    for (;;) {
        if (delay < 0) {
            n = epoll_wait(epfd, evs, 128, -1);
        } else if (delay == 0) {
            n = epoll_wait(epfd, evs, 128, 0);
        } else {
            struct timespec ts = {delay / 1000000000, delay % 1000000000};
            bool pwait2 = !load_relaxed(&no_pwait2) && !gort__valgrind;
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
                n = epoll_wait(epfd, evs, 128, ms > 1000000 ? 1000000 : (int)ms);
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

/* Poll without blocking until `end` (nanotime) or the first event, the
 * break included, while every P stays idle.  Returns the Gs readied (0
 * for a break alone), or -1 when nothing came.  See
 * gort__netpoll_sleep. */
int32_t gort__netpoll_spin(int64_t end, struct gqueue *q)
{
    q->head = q->tail = NULL;
    if (!load_acq(&inited))
        return -1;
    struct epoll_event evs[128];
    for (;;) {
        /* Relaxed: a hint.  A P taken means other threads of ours run,
         * and this one would only take CPU from them. */
        if (load_relaxed(&gort__sched.npidle) !=
            load_relaxed(&gort__gomaxprocs))
            return -1;
        int n = epoll_wait(epfd, evs, 128, 0);
        if (n > 0)
            return netpoll_handle(evs, n, q);
        if (n < 0 && errno != EINTR)
            gort__throw("netpoll: epoll_wait failed: %s", strerror(errno));
        if (gort_nanotime() >= end)
            return -1;
    }
}

/* Make a batch of readied Gs runnable where they will run soonest.
 * Mirrors injectglist. */
void gort__injectglist(struct gqueue *q, int32_t n)
{
    if (n == 0)
        return;
    struct m *mp = gort__getm_raw();
    struct p *pp = mp ? mp->p : NULL;
    if (mp)
        mp->locks++;
    /* As many on the global queue as there are idle Ps, each with an M
     * started to run one; the rest on our own ring, where this M finds
     * them next (Go 1.21's injectglist).  Without a P, all go globally.
     * On the global queue alone, a busy P would look at them only every
     * 61 ticks, which gave round trips of milliseconds.  But when the
     * batch is short work (this P's runavg, how long a G runs, times n,
     * under GORT_WAKE_WORTH_NS), this M runs it all: waking a thread
     * costs more CPU than the work, and more time too. */
    int32_t idle = pp ? load_relaxed(&gort__sched.npidle) : n;
    if (pp && idle > 0 &&
        pp->runavg * n < GORT_WAKE_WORTH_NS)
        idle = 0;
    int32_t nglob = idle < n ? idle : n;
    if (nglob > 0) {
        struct gqueue globq = {NULL, NULL};
        for (int32_t i = 0; i < nglob; i++)
            gort__gqueue_push(&globq, gort__gqueue_pop(q));
        gort__lock(&gort__sched.lock);
        gort__globrunqputbatch_locked(&globq, nglob);
        int32_t npidle = load_relaxed(&gort__sched.npidle);
        gort__unlock(&gort__sched.lock);
        for (int32_t i = 0; i < nglob && i < npidle; i++)
            gort__startm_idle();
    }
    if (q->head) {
        gort__runqputbatch(pp, q, n - nglob);
        if (idle > 0)
            gort__wakep();
    }
    if (mp)
        mp->locks--;
}

/* ---------------------------------------------------------------------------
 * Descriptors.
 * ------------------------------------------------------------------------- */

static void deadline_fire(struct gtimer *t, int64_t now)
{
    struct polldesc *pd = t->arg;
    bool read = t == &pd->rt;
    int64_t *dp = read ? &pd->rd : &pd->wd;
    int64_t d = load_relaxed(dp);
    if (d <= 0 || d > now)
        return; /* moved or cleared since the timer was set */
    /* Seq-cst: the deadline's half of the handshake (netpollcheckerr). */
    store_seqcst(dp, -1);
    struct g *gp = netpollunblock(read ? &pd->rg : &pd->wg, false);
    if (gp) {
        xadd_acqrel(&nwaiters, -1);
        gort__ready(gp, false);
    }
}

/* fd's pollDesc, without a lock: every read and write looks it up.  The
 * table only grows; a replaced one is retired, not freed, so a reader
 * holding it still reads valid (if stale) entries. */
static struct polldesc *pd_get(int fd)
{
    /* Acquire: pairs with the release stores in gort_fd_register (the
     * count after the table, each entry after its pollDesc is set up). */
    int n = load_acq(&pollcache.nbyfd);
    struct polldesc **t = load_acq(&pollcache.byfd);
    return fd >= 0 && fd < n ? load_acq(&t[fd]) : NULL;
}

/* Whether a read shorter than asked leaves fd empty: pipes and stream
 * sockets (a datagram socket returns one datagram a read). */
static bool is_stream(int fd)
{
    struct stat st;
    int type = 0;
    socklen_t len = sizeof type;
    if (fstat(fd, &st) < 0)
        return false;
    if (S_ISFIFO(st.st_mode))
        return true;
    return S_ISSOCK(st.st_mode) &&
           getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
           type == SOCK_STREAM;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

/* Register fd; inq: it is a TCP socket with TCP_INQ on. */
static int fd_register(int fd, bool inq)
{
    if (fd < 0)
        return -EBADF;
    if (!load_acq(&gort__main_started))
        return -EPERM;
    int err = set_nonblock(fd);
    if (err)
        return err;
    bool stream = is_stream(fd);
    gort__spinlock(&pollcache.lock);
    if ((err = netpollinit_locked()) != 0)
        goto out;
    if (fd < pollcache.nbyfd && pollcache.byfd[fd]) {
        err = -EEXIST;
        goto out;
    }
    if (fd >= pollcache.nbyfd) {
        int n = pollcache.nbyfd ? pollcache.nbyfd : 64;
        while (n <= fd)
            n *= 2;
        struct polldesc **nb = gort__malloc(n * sizeof *nb);
        if (!nb) {
            err = -ENOMEM;
            goto out;
        }
        memset(nb + pollcache.nbyfd, 0,
               (size_t)(n - pollcache.nbyfd) * sizeof *nb);
        if (pollcache.byfd)
            memcpy(nb, pollcache.byfd,
                   (size_t)pollcache.nbyfd * sizeof *nb);
        if (pollcache.byfd)
            gort__retire(pollcache.byfd);
        /* Release, table first: a reader that sees the new count sees
         * the new table. */
        store_rel(&pollcache.byfd, nb);
        store_rel(&pollcache.nbyfd, n);
    }
    struct polldesc *pd = pollcache.free;
    if (pd) {
        pollcache.free = pd->link;
    } else {
        if (pollcache.nall == pollcache.capall) {
            int cap = pollcache.capall ? pollcache.capall * 2 : 64;
            struct polldesc **na = gort__realloc(pollcache.all, cap * sizeof *na);
            if (!na) {
                err = -ENOMEM;
                goto out;
            }
            pollcache.all = na;
            pollcache.capall = cap;
        }
        pd = gort__calloc(1, sizeof *pd);
        if (!pd) {
            err = -ENOMEM;
            goto out;
        }
        pollcache.all[pollcache.nall++] = pd;
        gort__lock_init(&pd->rt.mu, LOCKRANK_TIMER);
        gort__lock_init(&pd->wt.mu, LOCKRANK_TIMER);
        pd->rt.arg = pd->wt.arg = pd;
        pd->rt.f = pd->wt.f = deadline_fire;
    }
    pd->link = NULL;
    store_relaxed(&pd->fd, fd);
    /* A late gort__fd_ref may hold a passing count on a free pollDesc:
     * clear the flags only, its unref brings the count back. */
    and_relaxed(&pd->refs, ~(PD_REF_CLOSED | PD_REF_FREED));
    store_relaxed(&pd->seq, pd->seq + 1);
    store_relaxed(&pd->closing, 0);
    pd->stream = stream;
    pd->inq = inq && stream;
    store_relaxed(&pd->rdrained, 0);
    store_relaxed(&pd->rdhup, 0);
    store_relaxed(&pd->rg, PD_NIL);
    store_relaxed(&pd->wg, PD_NIL);
    store_relaxed(&pd->rd, 0);
    store_relaxed(&pd->wd, 0);
    struct epoll_event ev = {
        .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
        .data.u64 = (uint64_t)(uintptr_t)pd |
                    ((uint64_t)(pd->seq & 0xffff) << 48),
    };
    TSAN_RELEASE(pd);
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        err = -errno;
        pd->link = pollcache.free;
        pollcache.free = pd;
        goto out;
    }
    /* Release: publishes the pollDesc's set-up to pd_get. */
    store_rel(&pollcache.byfd[fd], pd);
out:
    gort__spinunlock(&pollcache.lock);
    return err;
}

int gort_fd_register(int fd)
{
    GORT_SAN_SCOPE();
    return fd_register(fd, false);
}

/* Ask the kernel to say, with every read of TCP socket fd, how many bytes
 * it left behind (TCP_INQ, Linux 4.18+).  Only on sockets gort made
 * itself (gort_socket, gort_accept): it adds a control message to the
 * program's own recvmsg calls on the socket.  False where refused. */
static bool enable_inq(int fd)
{
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_INQ, &one, sizeof one) == 0;
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
    ssize_t r = recvmsg(fd, &msg, 0);
    *left = -1;
    if (r > 0) {
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ &&
            c->cmsg_len >= CMSG_LEN(sizeof(int)))
            memcpy(left, CMSG_DATA(c), sizeof(int));
    }
    return r;
}

/* Give pd back once it is closed and no call holds it: close(2) and the
 * free list.  Whoever brings refs to exactly PD_REF_CLOSED calls this; the
 * CAS makes one of them (a late gort__fd_ref's passing count may bring it
 * there twice) do the work.  The close(2)'s result, or 0 if another did it. */
static int pd_destroy(struct polldesc *pd)
{
    /* Acq-rel: every call's accesses (acq-rel decrements) happen before. */
    if (!cas_acqrel(&pd->refs, PD_REF_CLOSED, PD_REF_CLOSED | PD_REF_FREED))
        return 0;
    /* A deadline set by a call that checked closing just before the close
     * may have re-armed a timer after fd_close stopped it: stop them
     * again, so that the next descriptor's pollDesc starts with none. */
    gort__gtimer_stop(&pd->rt);
    gort__gtimer_stop(&pd->wt);
    int fd = load_relaxed(&pd->fd);
    /* close(2) and the table under the lock: a call that looks the number
     * up meanwhile finds the closing pollDesc (-EBADF), never no entry and
     * the syscall path on a descriptor still open; and a registration of
     * the number, once the kernel hands it out again, waits for the lock
     * and finds the slot free.  (A close(2) is quick for the descriptors
     * registered here, sockets and pipes, unless the program set
     * SO_LINGER.) */
    gort__spinlock(&pollcache.lock);
    int r = close(fd) < 0 && errno != EINTR ? -errno : 0;
    store_rel(&pollcache.byfd[fd], NULL);
    pd->link = pollcache.free;
    pollcache.free = pd;
    gort__spinunlock(&pollcache.lock);
    return r;
}

/* fd's pollDesc with a reference held, or NULL if fd is not registered.
 * A closed one is returned too (the call then fails with -EBADF). */
struct polldesc *gort__fd_ref(int fd)
{
    if (!load_acq(&inited))
        return NULL;
    for (;;) {
        struct polldesc *pd = pd_get(fd);
        if (!pd)
            return NULL;
        /* Acq-rel: against pd_destroy's CAS (we either hold it before it
         * is given back, or see FREED). */
        uint32_t r = xadd_acqrel(&pd->refs, 1);
        if (!(r & PD_REF_FREED) && load_relaxed(&pd->fd) == fd &&
            pd_get(fd) == pd)
            return pd;
        /* Given back, or given to another descriptor, since pd_get: look
         * again. */
        gort__fd_unref(pd);
    }
}

void gort__fd_unref(struct polldesc *pd)
{
    /* Acq-rel: the last one out orders every call before pd_destroy. */
    if (xadd_acqrel(&pd->refs, -1) == PD_REF_CLOSED)
        pd_destroy(pd);
}

/* Close fd: waiters return -EBADF.  Mirrors poll.FD.Close with
 * runtime_pollUnblock and runtime_pollClose.  pd is held by the caller;
 * the reference is dropped here. */
static int fd_close(int fd, struct polldesc *pd)
{
    gort__san_release(&pd->closing);
    /* Seq-cst: the closer's half of the handshake (netpollcheckerr); an
     * exchange, so that of two closers only the first closes. */
    if (xchg_seqcst(&pd->closing, 1)) {
        gort__fd_unref(pd);
        return -EBADF;
    }
    struct g *r = netpollunblock(&pd->rg, false);
    struct g *w = netpollunblock(&pd->wg, false);
    if (r) {
        xadd_acqrel(&nwaiters, -1);
        gort__ready(r, false);
    }
    if (w) {
        xadd_acqrel(&nwaiters, -1);
        gort__ready(w, false);
    }
    gort__gtimer_stop(&pd->rt);
    gort__gtimer_stop(&pd->wt);
    gort__spinlock(&pollcache.lock);
    epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
    /* It stays in the table, closing, until pd_destroy: calls on the
     * number meanwhile fail with -EBADF (not the syscall path on a
     * descriptor that is still open). */
    /* Bump now: events already queued for it are stale. */
    store_relaxed(&pd->seq, pd->seq + 1);
    gort__spinunlock(&pollcache.lock);
    xadd_acqrel(&pd->refs, PD_REF_CLOSED);
    /* Our own reference: the last one, unless calls are in flight, which
     * then close it as they leave. */
    if (xadd_acqrel(&pd->refs, -1) == PD_REF_CLOSED)
        return pd_destroy(pd);
    return 0;
}

/* The value of `call`, an expression of type `type` that uses `pd`, made
 * with a reference held on fd's pollDesc; -EBADF when fd is not
 * registered. */
#define WITH_PD(fd, type, call)                                                \
    __extension__({                                                            \
        struct polldesc *pd = gort__fd_ref(fd);                                \
        type with_pd_r = -EBADF;                                               \
        if (pd) {                                                              \
            with_pd_r = (call);                                                \
            gort__fd_unref(pd);                                                \
        }                                                                      \
        with_pd_r;                                                             \
    })

int gort__fd_close(int fd)
{
    struct polldesc *pd = gort__fd_ref(fd);
    if (!pd)
        return 1; /* not ours: the caller closes it */
    return fd_close(fd, pd);
}

static int pd_set_deadline(struct polldesc *pd, int mode, int64_t when)
{
    if (mode != 'r' && mode != 'w' && mode != 'r' + 'w')
        return -EINVAL;
    if (when < 0)
        return -EINVAL;
    struct m *mp = gort__getm();
    if (!mp || !mp->p)
        return -EPERM; /* deadlines are timers: a goroutine's call */
    if (load_acq(&pd->closing))
        return -EBADF;
    int64_t now = gort_nanotime();
    for (int k = 0; k < 2; k++) {
        int m = k == 0 ? 'r' : 'w';
        if (mode != m && mode != 'r' + 'w')
            continue;
        int64_t *dp = m == 'r' ? &pd->rd : &pd->wd;
        struct gtimer *t = m == 'r' ? &pd->rt : &pd->wt;
        if (when == 0) {
            store_relaxed(dp, 0);
            gort__gtimer_stop(t);
        } else if (when <= now) {
            store_seqcst(dp, -1); /* the handshake of netpollcheckerr */
            gort__gtimer_stop(t);
            struct g *gp = netpollunblock(m == 'r' ? &pd->rg : &pd->wg,
                                          false);
            if (gp) {
                xadd_acqrel(&nwaiters, -1);
                gort__ready(gp, false);
            }
        } else {
            store_relaxed(dp, when);
            gort__gtimer_reset(t, when);
        }
    }
    return 0;
}

int gort_fd_set_deadline(int fd, int mode, int64_t when)
{
    GORT_SAN_SCOPE();
    int err = WITH_PD(fd, int, pd_set_deadline(pd, mode, when));
    gort__preempt_check();
    return err;
}

/* ---------------------------------------------------------------------------
 * I/O on registered descriptors.  Each tries the call; EAGAIN parks the
 * goroutine until the descriptor is ready.
 * ------------------------------------------------------------------------- */

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
            int w_ = netpollwait(pd, mode);                                    \
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

long gort__fd_read(struct polldesc *pd, void *buf, size_t n)
{
    int e = pd_err(pd);
    if (e)
        return e;
    int err = netpollcheckerr(pd, 'r');
    if (err)
        return err;
    /* A short read of a stream empties it, so the next read would fail
     * with EAGAIN unless data came since; and data that came since is an
     * edge the poller has (or will have) collected.  So after a short
     * read, wait for readiness first and save the failing read(2): one
     * syscall of the three a request-reply exchange costs each side.
     * netpollwait returns at once if readiness was seen meanwhile.  An
     * end of file or error gets no new edge once its event was consumed,
     * so a descriptor that reported one (rdhup) always reads first. */
    if (n > 0 && load_relaxed(&pd->rdrained) && !load_relaxed(&pd->rdhup)) {
        store_relaxed(&pd->rdrained, 0);
        if ((err = netpollwait(pd, 'r')) != 0)
            return err;
    }
    for (;;) {
        /* With TCP_INQ a full read tells too whether it emptied the
         * socket: a client that writes a request and then reads exactly
         * the reply's size saves the read(2) that would fail before the
         * next reply. */
        int left = -1;
        ssize_t r = pd->inq ? read_inq(pd->fd, buf, n, &left)
                            : read(pd->fd, buf, n);
        if (r >= 0) {
            /* Relaxed: a hint for this descriptor's reader; any value is
             * safe (it only decides whether to try read(2) first). */
            if (pd->stream && r > 0 && ((size_t)r < n || left == 0))
                store_relaxed(&pd->rdrained, 1);
            return r;
        }
        int e = GORT_ERRNO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        if ((err = netpollwait(pd, 'r')) != 0)
            return err;
    }
}

long gort__fd_write(struct polldesc *pd, const void *buf, size_t n)
{
    /* All of it, as Go's FD.Write. */
    size_t done = 0;
    int err = netpollcheckerr(pd, 'w');
    if (err)
        return err;
    while (done < n) {
        ssize_t r = GORT_NOSIGPIPE(
            pd->fd, write(pd->fd, (const char *)buf + done, n - done));
        if (r >= 0) {
            done += (size_t)r;
            continue;
        }
        int e = GORT_ERRNO;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return done > 0 ? (long)done : -e;
        int w = netpollwait(pd, 'w');
        if (w)
            return done > 0 ? (long)done : w;
    }
    return (long)done;
}

/* readv/writev: through the poller for registered fds, else the syscall
 * path. */
static long vec_io(int fd, const struct iovec *iov, int iovcnt, int mode)
{
    struct polldesc *pd = gort__fd_ref(fd);
    if (!pd) {
        gort_entersyscall();
        ssize_t r = mode == 'r' ? readv(fd, iov, iovcnt)
                                : GORT_NOSIGPIPE(fd, writev(fd, iov, iovcnt));
        int e = r < 0 ? errno : 0;
        gort_exitsyscall();
        return r < 0 ? -e : r;
    }
    ssize_t r = pd_err(pd);
    if (r == 0)
        FD_IO(r, pd, mode,
              mode == 'r' ? readv(pd->fd, iov, iovcnt)
                          : GORT_NOSIGPIPE(pd->fd, writev(pd->fd, iov, iovcnt)));
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
    int fd = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
    if (fd < 0)
        return -errno;
    bool tcp = (domain == AF_INET || domain == AF_INET6) &&
               (type & 0xf) == SOCK_STREAM &&
               (protocol == 0 || protocol == IPPROTO_TCP);
    int err = fd_register(fd, tcp && enable_inq(fd));
    if (err) {
        close(fd);
        return err;
    }
    return fd;
}

int gort_pipe(int fds[2])
{
    GORT_SAN_SCOPE();
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
        return -errno;
    int err = gort_fd_register(fds[0]);
    if (err) {
        close(fds[0]);
        close(fds[1]);
        return err;
    }
    if ((err = gort_fd_register(fds[1])) != 0) {
        gort_close(fds[0]); /* registered: gort closes it */
        close(fds[1]);
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
        int nfd = accept4(fd, addr, addrlen ? &len : NULL,
                          SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (nfd >= 0) {
            if (addrlen)
                *addrlen = (unsigned)len;
            /* A connection of a TCP listener gort made is a TCP socket
             * gort made. */
            int err = fd_register(nfd, pd->inq && enable_inq(nfd));
            if (err) {
                close(nfd);
                return err;
            }
            return nfd;
        }
        int e = GORT_ERRNO;
        if (e == EINTR || e == ECONNABORTED)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return -e;
        int w = netpollwait(pd, 'r');
        if (w)
            return w;
    }
}

int gort_accept(int fd, struct sockaddr *addr, unsigned *addrlen)
{
    GORT_SAN_SCOPE();
    return WITH_PD(fd, int, pd_accept(pd, addr, addrlen));
}

static int pd_connect(struct polldesc *pd, const struct sockaddr *addr,
                      unsigned addrlen, int64_t timeout_ns)
{
    int fd = pd->fd, r = pd_err(pd);
    if (r)
        return r;
    while ((r = connect(fd, addr, (socklen_t)addrlen)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -errno;
    if (timeout_ns > 0)
        pd_set_deadline(pd, 'w', gort_nanotime() + timeout_ns);
    int err;
    for (;;) {
        err = netpollwait(pd, 'w');
        if (err)
            break;
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) {
            err = -GORT_ERRNO;
            break;
        }
        if (soerr == EINPROGRESS || soerr == EALREADY || soerr == EINTR)
            continue;
        err = -soerr;
        break;
    }
    if (timeout_ns > 0)
        pd_set_deadline(pd, 'w', 0);
    return err;
}

int gort_connect(int fd, const struct sockaddr *addr, unsigned addrlen,
                 int64_t timeout_ns)
{
    GORT_SAN_SCOPE();
    return WITH_PD(fd, int, pd_connect(pd, addr, addrlen, timeout_ns));
}

long gort_sendto(int fd, const void *buf, size_t n, int flags,
                 const struct sockaddr *to, unsigned tolen)
{
    GORT_SAN_SCOPE();
    struct polldesc *pd = gort__fd_ref(fd);
    if (!pd)
        return -EBADF;
    ssize_t r = pd_err(pd);
    if (r == 0)
        FD_IO(r, pd, 'w',
              GORT_NOSIGPIPE(pd->fd, sendto(pd->fd, buf, n, flags | MSG_DONTWAIT,
                                            to, (socklen_t)tolen)));
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
        ssize_t r = recvfrom(fd, buf, n, flags | MSG_DONTWAIT, from,
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
        int w = netpollwait(pd, 'r');
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
