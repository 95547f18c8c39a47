/* SPDX-License-Identifier: MIT */
/*
 * netpoll.c - the network poller's platform-independent half: the
 * pollDesc of every registered descriptor (registration, references,
 * close, deadlines), the goroutines that park in it waiting for I/O and
 * the readiness that wakes them, and the poller, the one M that sleeps in
 * the backend (netpoll_epoll.c) until the next timer or an event, with
 * its wake-up and its spin.  Mirrors netpoll.go.
 *
 * A descriptor handed to the poller (gort__fd_register, for fdio.c's
 * calls) is put in non-blocking mode and added to the backend for reading
 * and writing at once.  Its pollDesc has a slot per direction (rg, wg),
 * each
 *
 *     PD_NIL    nothing happened, nobody waits
 *     PD_READY  readiness arrived and nobody has consumed it
 *     PD_WAIT   a goroutine is about to park
 *     a G       that goroutine is parked (status WAITING, reason IO wait)
 *
 * An I/O call tries the system call; on EAGAIN it parks in its slot
 * (gort__fd_wait) until readiness (gort__netpoll_ready, for the backend's
 * events), a deadline or a close unblocks it (netpollunblock), then tries
 * again.
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
 * pollDescs are never freed while the runtime runs: an event may still
 * name one after its descriptor was closed.  Events carry the pollDesc's
 * sequence number, bumped on every reuse, and the backend drops stale
 * ones (Go's fdseq tagging).
 *
 * The poller is the M that findrunnable parks (gort__netpoll_sleep) when
 * it has nothing to do: it sleeps until the earliest timer of all Ps or a
 * descriptor's readiness, in the backend once a descriptor has been
 * registered, before that on a futex.  Ms that add an earlier timer, or
 * have work for it, wake it (gort__netpoll_wake_by, gort__netpoll_wake).
 *
 * Invariants:
 *   - rg/wg change only by CAS (atomics).  pollcache.lock (a spinlock)
 *     guards the fd table, the free list and the list of every pollDesc;
 *     it is held with no other runtime lock (sched.h's lock order) and
 *     never while a timer's lock is taken.
 *   - A slot holds at most one G.
 *   - One M at a time sleeps as the poller: it has exchanged
 *     sched.lastpoll for 0.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "lock_futex.h"
#include "mthread.h"
#include "netpoll.h"
#include "netpoll_epoll.h"
#include "os_linux.h"
#include "proc.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "timers.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PD_NIL ((uintptr_t)0)
#define PD_READY ((uintptr_t)1)
#define PD_WAIT ((uintptr_t)2)

/* pollDesc.refs: calls in flight in the low bits, and two flags. */
#define PD_REF_CLOSED (1U << 30) /* gort_close has closed it (for gort) */
#define PD_REF_FREED (1U << 31)  /* closed and back on the free list */

static struct {
    gort_spinlock lock;
    struct polldesc *free;
    struct polldesc **byfd;  /* fd -> pollDesc, or NULL */
    int nbyfd;
    /* every pollDesc ever made, for teardown */
    struct polldesc **all;
    int nall, capall;
    int nhooked; /* hooked pollDescs in byfd, for gort__fd_check_hooked:
                  * written under the lock, read (relaxed) without it */
} pollcache = {.lock = GORT_LOCK_INIT(LOCKRANK_POLLCACHE)};

/* Release store once the backend is set up (a thread that sees it sees
 * the backend's descriptors); cleared only by gort__netpoll_fini.
 * Mirrors netpollInited. */
uint32_t gort__netpollinited;
static uint32_t nwaiters;        /* atomic: goroutines parked in IO wait */

static void futex_wake_poller(void);

/* ---------------------------------------------------------------------------
 * Set-up and teardown.
 * ------------------------------------------------------------------------- */

/* Set the backend up on the first registration.  pollcache.lock held.
 * Mirrors netpollGenericInit. */
static int generic_init_locked(void)
{
    gort__lock_assert_held(&pollcache.lock);
    if (load_relaxed(&gort__netpollinited))
        return 0;
    int err = gort__netpoll_init();
    if (err)
        return err;
    /* Release: a thread that sees inited sees the descriptors. */
    store_rel(&gort__netpollinited, 1);
    /* A poller asleep on the futex must come round to the backend. */
    futex_wake_poller();
    return 0;
}

void gort__netpoll_fini(void)
{
    if (load_relaxed(&gort__netpollinited)) {
        gort__netpoll_uninit();
        store_relaxed(&gort__netpollinited, 0);
    }
    for (int i = 0; i < pollcache.nall; i++) {
        /* Closed with calls in flight that never ended (their goroutines
         * were discarded with the runtime): close(2) is still owed. */
        struct polldesc *pd = pollcache.all[i];
        if ((pd->refs & (PD_REF_CLOSED | PD_REF_FREED)) == PD_REF_CLOSED)
            gort__libc.close(pd->fd);
        gort__free(pd);
    }
    gort__free(pollcache.all);
    gort__free(pollcache.byfd);
    memset(&pollcache, 0, sizeof pollcache);
    gort__lock_init(&pollcache.lock, LOCKRANK_POLLCACHE);
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
        /* Seq-cst: the second half of the handshake with gort__fd_wait (a
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

/* A thread gort did not create has no goroutine to park: it waits in
 * poll(2) itself, in slices, so that deadlines and closes are seen. */
static int fd_wait_foreign(struct polldesc *pd, int mode)
{
    struct pollfd pfd = {.fd = pd->fd,
                         .events = mode == 'r' ? POLLIN : POLLOUT};
    for (;;) {
        int err = gort__fd_checkerr(pd, mode);
        if (err)
            return err;
        int r = gort__libc.poll(&pfd, 1, 10);
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
int gort__fd_wait(struct polldesc *pd, int mode)
{
    struct m *mp = gort__getm();
    if (GORT_UNLIKELY(!mp || !mp->curg))
        gort__fatal("I/O on a registered descriptor outside gort_main");
    if (GORT_UNLIKELY(mp->curg->foreign))
        return fd_wait_foreign(pd, mode);
    uintptr_t *gpp = mode == 'r' ? &pd->rg : &pd->wg;
    for (;;) {
        int err = gort__fd_checkerr(pd, mode);
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
        /* Seq-cst: the waiter's half of the handshake (gort__fd_checkerr). */
        if (!cas_seqcst(gpp, PD_NIL, PD_WAIT))
            continue;
        /* Re-check after publishing PD_WAIT: a deadline or close that
         * came in between saw nobody to wake. */
        if (gort__fd_checkerr(pd, mode) == 0)
            gort__park(netpollblockcommit, gpp, WAIT_IO);
        /* Woken (or never parked): consume what woke us. */
        old = xchg_acqrel(gpp, PD_NIL);
        if (old > PD_WAIT)
            gort__throw("fd_wait: corrupted state");
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

/* The descriptor hung up or failed, or got urgent data: its end of file,
 * error or the data after the urgent mark will not come with another
 * edge, so a reader must not wait for one after a short read (fdio.c,
 * fd_read; hook.c, sock_wait_first).  The flag is stored before an RMW on
 * rg: a reader that consumes rg's readiness after the RMW sees the flag
 * (release sequence), and one that consumed it before finds rg ready
 * again, set by netpollunblock below. */
static void mark_hup(struct polldesc *pd)
{
    store_relaxed(&pd->rdhup, 1);
    /* Acq-rel, on READY only: joins the flag to rg's release sequence. */
    cas_acqrel(&pd->rg, PD_READY, PD_READY);
}

/* Readiness for mode ('r', 'w' or 'r' + 'w') arrived on pd; hup: the
 * descriptor hung up or failed.  Make the Gs it unblocks RUNNABLE, in q;
 * returns how many.  Called by the backend for each event.  Mirrors
 * netpollready. */
int32_t gort__netpoll_ready(struct polldesc *pd, int mode, bool hup,
                            struct gqueue *q)
{
    int32_t cnt = 0;
    struct g *gp;
    if (hup)
        mark_hup(pd);
    if ((mode == 'r' || mode == 'r' + 'w') &&
        (gp = netpollunblock(&pd->rg, true)))
        netpoll_collect(gp, q, &cnt);
    if ((mode == 'w' || mode == 'r' + 'w') &&
        (gp = netpollunblock(&pd->wg, true)))
        netpoll_collect(gp, q, &cnt);
    return cnt;
}

/* ---------------------------------------------------------------------------
 * Deadlines.  Mirrors netpolldeadlineimpl and poll_runtime_pollSetDeadline.
 * ------------------------------------------------------------------------- */

static void deadline_fire(struct gtimer *t, int64_t now)
{
    struct polldesc *pd = t->arg;
    bool read = t == &pd->rt;
    int64_t *dp = read ? &pd->rd : &pd->wd;
    int64_t d = load_relaxed(dp);
    if (d <= 0 || d > now)
        return; /* moved or cleared since the timer was set */
    /* Seq-cst: the deadline's half of the handshake (gort__fd_checkerr). */
    store_seqcst(dp, -1);
    struct g *gp = netpollunblock(read ? &pd->rg : &pd->wg, false);
    if (gp) {
        xadd_acqrel(&nwaiters, -1);
        gort__ready(gp, false);
    }
}

/* Set pd's deadline for mode ('r', 'w' or 'r' + 'w'): when, an absolute
 * nanotime, 0 for none.  0, -EINVAL, -EPERM outside a goroutine or -EBADF
 * once closing. */
int gort__fd_set_deadline(struct polldesc *pd, int mode, int64_t when)
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
        int64_t *kp = m == 'r' ? &pd->rkey : &pd->wkey;
        struct gtimer *t = m == 'r' ? &pd->rt : &pd->wt;
        if (when == 0) {
            store_relaxed(dp, 0);
            gort__gtimer_stop(t);
        } else if (when <= now) {
            store_seqcst(dp, -1); /* the handshake of gort__fd_checkerr */
            gort__gtimer_stop(t);
            struct g *gp = netpollunblock(m == 'r' ? &pd->rg : &pd->wg,
                                          false);
            if (gp) {
                xadd_acqrel(&nwaiters, -1);
                gort__ready(gp, false);
            }
        } else {
            store_relaxed(dp, when);
            /* An idle deadline moved on at every request: at or after
             * the last one set, it is pushed without locks, and the
             * timer, when its heap key comes due, waits on for it
             * (gort__timers_check).  An earlier one is started again
             * under the locks.  Relaxed key: between concurrent setters
             * of one deadline it is a hint, and the deadline one of
             * their times, as a race between them allows. */
            if (when < load_relaxed(kp) || !gort__gtimer_push(t, when)) {
                /* Seq-cst: after a firing's or a stop's exchange. */
                store_seqcst(&t->later, 0);
                gort__gtimer_reset(t, when);
            }
            store_relaxed(kp, when);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Descriptors.
 * ------------------------------------------------------------------------- */

/* fd's pollDesc, without a lock: every read and write looks it up.  The
 * table only grows; a replaced one is retired, not freed, so a reader
 * holding it still reads valid (if stale) entries. */
static struct polldesc *pd_get(int fd)
{
    /* Acquire: pairs with the release stores in gort__fd_register (the
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
           gort__libc.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
           type == SOCK_STREAM;
}

/* Whether a short read of a descriptor gort-hook watches leaves it empty:
 * a TCP socket.  Not a Unix stream socket, whose read stops after a
 * message that passed descriptors or, with SO_PASSCRED, at another
 * writer's data, with more data behind; nor a pipe (the program may share
 * it with readers the hooks do not see).  TCP's read stops at an urgent
 * mark too: that comes with EPOLLPRI, which marks the pollDesc (mark_hup). */
static bool is_tcp(int fd)
{
    int proto = 0;
    socklen_t len = sizeof proto;
    return gort__libc.getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) ==
               0 &&
           proto == IPPROTO_TCP;
}

static int set_nonblock(int fd)
{
    int fl = gort__libc.fcntl(fd, F_GETFL);
    if (fl < 0)
        return -errno;
    if (!(fl & O_NONBLOCK) &&
        gort__libc.fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

/* Register fd; inq: it is a TCP socket with TCP_INQ on; hooked: for
 * gort-hook, in the mode the program gave it.  Mirrors
 * poll_runtime_pollOpen. */
static int fd_register(int fd, bool inq, bool hooked)
{
    if (fd < 0)
        return -EBADF;
    if (!load_acq(&gort__main_started))
        return -EPERM;
    int err = hooked ? 0 : set_nonblock(fd);
    if (err)
        return err;
    bool stream = hooked ? is_tcp(fd) : is_stream(fd);
    gort__spinlock(&pollcache.lock);
    if ((err = generic_init_locked()) != 0)
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
        pd->rt.pushable = pd->wt.pushable = true;
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
    pd->hooked = hooked;
    pd->noclose = false;
    store_relaxed(&pd->hk_epoch, 0);
    store_relaxed(&pd->rdrained, 0);
    store_relaxed(&pd->rdfull, 0);
    store_relaxed(&pd->rdhup, 0);
    store_relaxed(&pd->rg, PD_NIL);
    store_relaxed(&pd->wg, PD_NIL);
    store_relaxed(&pd->rd, 0);
    store_relaxed(&pd->wd, 0);
    store_relaxed(&pd->rkey, 0);
    store_relaxed(&pd->wkey, 0);
    if ((err = gort__netpoll_open(fd, pd)) != 0) {
        pd->link = pollcache.free;
        pollcache.free = pd;
        goto out;
    }
    /* Release: publishes the pollDesc's set-up to pd_get. */
    store_rel(&pollcache.byfd[fd], pd);
    if (hooked)
        store_relaxed(&pollcache.nhooked, pollcache.nhooked + 1);
out:
    gort__spinunlock(&pollcache.lock);
    return err;
}

int gort__fd_register(int fd, bool inq) { return fd_register(fd, inq, false); }

int gort__fd_register_hook(int fd) { return fd_register(fd, false, true); }

/* Take fd's entry out of the table if it is still pd.  Under the lock. */
static void byfd_clear_locked(int fd, struct polldesc *pd)
{
    if (pollcache.byfd[fd] != pd)
        return;
    store_rel(&pollcache.byfd[fd], NULL);
    if (pd->hooked)
        store_relaxed(&pollcache.nhooked, pollcache.nhooked - 1);
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
    int r = 0;
    if (!pd->noclose && gort__libc.close(fd) < 0 && errno != EINTR)
        r = -errno;
    byfd_clear_locked(fd, pd); /* not there when detached (fd_close) */
    pd->link = pollcache.free;
    pollcache.free = pd;
    gort__spinunlock(&pollcache.lock);
    return r;
}

/* fd's pollDesc with a reference held, or NULL if fd is not registered.
 * A closed one is returned too (the call then fails with -EBADF). */
struct polldesc *gort__fd_ref(int fd)
{
    if (!gort__netpoll_inited())
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

/* Mark pd closed and wake its waiters (they return -EBADF): true, or
 * false when it was closed already.  Mirrors runtime_pollUnblock. */
static bool close_notify(struct polldesc *pd)
{
    gort__san_release(&pd->closing);
    /* Seq-cst: the closer's half of the handshake (gort__fd_checkerr); an
     * exchange, so that of two closers only the first closes. */
    if (xchg_seqcst(&pd->closing, 1))
        return false;
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
    return true;
}

/* Drop the closer's reference to pd, marked closed: the last one, unless
 * calls are in flight, which then give it back as they leave. */
static int close_unref(struct polldesc *pd)
{
    xadd_acqrel(&pd->refs, PD_REF_CLOSED);
    if (xadd_acqrel(&pd->refs, -1) == PD_REF_CLOSED)
        return pd_destroy(pd);
    return 0;
}

/* Close fd: waiters return -EBADF.  Mirrors poll.FD.Close with
 * runtime_pollUnblock and runtime_pollClose.  pd is held by the caller;
 * the reference is dropped here. */
static int fd_close(int fd, struct polldesc *pd)
{
    if (!close_notify(pd)) {
        gort__fd_unref(pd);
        return -EBADF;
    }
    gort__spinlock(&pollcache.lock);
    gort__netpoll_close(fd);
    /* It stays in the table, closing, until pd_destroy: calls on the
     * number meanwhile fail with -EBADF (not the syscall path on a
     * descriptor that is still open). */
    /* Bump now: events already queued for it are stale. */
    store_relaxed(&pd->seq, pd->seq + 1);
    gort__spinunlock(&pollcache.lock);
    return close_unref(pd);
}

int gort__fd_close(int fd)
{
    struct polldesc *pd = gort__fd_ref(fd);
    if (!pd)
        return 1; /* not ours: the caller closes it */
    return fd_close(fd, pd);
}

/* fd's number has a new file, or none: pd (held; the reference is
 * dropped here) lets it go without close(2), and its waiters return
 * -EBADF.  The backend's registration is the old file's, out of reach by
 * number; events it still sends are stale by the bumped sequence. */
static void detach(int fd, struct polldesc *pd)
{
    gort__spinlock(&pollcache.lock);
    pd->noclose = true;
    byfd_clear_locked(fd, pd);
    store_relaxed(&pd->seq, pd->seq + 1);
    gort__spinunlock(&pollcache.lock);
    if (close_notify(pd))
        close_unref(pd);
    else
        gort__fd_unref(pd);
}

int gort__fd_detach(int fd)
{
    struct polldesc *pd = gort__fd_ref(fd);
    if (!pd)
        return 1;
    detach(fd, pd);
    return 0;
}

bool gort__fd_check_hooked(bool all)
{
    /* Relaxed: a registration missed here is seen at the next check. */
    if (load_relaxed(&pollcache.nhooked) == 0)
        return false;
    /* Numbers the backend refused to watch again: closed (a close(2) that
     * raced the registration, or one behind the hooks' back), or now a
     * file it cannot watch.  Let go after the scan. */
    enum { MAXGONE = 16 };
    struct polldesc *gone[MAXGONE];
    int gonefd[MAXGONE], ngone = 0;
    bool parked = false; /* a park waits for its re-arm */
    gort__spinlock(&pollcache.lock);
    for (int fd = 0; fd < pollcache.nbyfd && ngone < MAXGONE; fd++) {
        struct polldesc *pd = pollcache.byfd[fd];
        if (!pd || !pd->hooked || load_relaxed(&pd->closing))
            continue;
        bool rearm = false;
        uint32_t was[2] = {pd->hk_checked[0], pd->hk_checked[1]};
        for (int k = 0; k < 2; k++) {
            /* Relaxed: a park missed now is seen at the next check. */
            uintptr_t w = load_relaxed(k ? &pd->wg : &pd->rg);
            uint32_t parks = load_relaxed(&pd->hk_parks[k]);
            if (w <= PD_WAIT || parks == pd->hk_checked[k])
                continue; /* no G parked, or this park re-armed */
            if (all || parks == pd->hk_seen[k]) {
                pd->hk_checked[k] = parks;
                rearm = true;
            } else {
                pd->hk_seen[k] = parks; /* parked since the last check */
                parked = true;          /* re-armed at the next */
            }
        }
        int err = rearm ? gort__netpoll_rearm(fd, pd) : 0;
        if (err == -ENOMEM || err == -ENOSPC) {
            /* Out of kernel memory or of watches: again next time. */
            pd->hk_checked[0] = was[0];
            pd->hk_checked[1] = was[1];
            parked = true;
        } else if (err) {
            /* In the table, so not given back: a reference is safe. */
            xadd_acqrel(&pd->refs, 1);
            gone[ngone] = pd;
            gonefd[ngone++] = fd;
        }
    }
    gort__spinunlock(&pollcache.lock);
    for (int i = 0; i < ngone; i++)
        detach(gonefd[i], gone[i]);
    return parked;
}

int gort__fd_dup(int oldfd, int newfd, int flags)
{
    struct polldesc *pd = gort__fd_ref(newfd);
    if (!pd) {
        int r = flags < 0 ? gort__libc.dup2(oldfd, newfd)
                          : gort__libc.dup3(oldfd, newfd, flags);
        return r < 0 ? -errno : r;
    }
    /* Closed already (its close(2) waiting for calls in flight): out of
     * the backend already.  Acquire: pairs with the closer's exchange; a
     * close that comes after this look takes it out a second time, which
     * does no harm. */
    bool closed = load_acq(&pd->closing) != 0;
    /* The backend's registration goes by number, so it is taken out while
     * the number still has the old file; the table's entry goes as the
     * number changes files, all under the lock, so that no registration
     * of the number comes in between (it would watch the old file).  The
     * dup's implicit close is quick, as pd_destroy's close(2). */
    gort__spinlock(&pollcache.lock);
    if (!closed)
        gort__netpoll_close(newfd);
    int r = flags < 0 ? gort__libc.dup2(oldfd, newfd)
                      : gort__libc.dup3(oldfd, newfd, flags);
    int e = errno;
    if (r >= 0) {
        /* The last call out gives pd back without close(2): dup2 closed
         * the file. */
        pd->noclose = true;
        byfd_clear_locked(newfd, pd);
        store_relaxed(&pd->seq, pd->seq + 1);
    } else if (!closed) {
        gort__netpoll_rearm(newfd, pd);
    }
    gort__spinunlock(&pollcache.lock);
    if (r < 0) {
        gort__fd_unref(pd);
        return -e;
    }
    /* Now its waiters: they look at the number again and find the new
     * file. */
    if (close_notify(pd))
        close_unref(pd);
    else
        gort__fd_unref(pd);
    return r;
}

bool gort__fd_closed(int fd)
{
    if (!gort__netpoll_inited())
        return false;
    /* No reference needed: pollDescs are never freed; one given to
     * another number since pd_get has another fd, and one given back to
     * this number (a new file) is not closing. */
    struct polldesc *pd = pd_get(fd);
    /* Relaxed: fd is set under the lock before the pollDesc is published
     * (pd_get's acquire); seq-cst: see netpoll.h. */
    return pd && load_relaxed(&pd->fd) == fd && load_seqcst(&pd->closing);
}

void gort__fd_notify(struct polldesc *pd)
{
    struct g *gp = netpollunblock(&pd->rg, true);
    if (gp) {
        xadd_acqrel(&nwaiters, -1);
        gort__ready(gp, false);
    }
}

/* ---------------------------------------------------------------------------
 * The poller: the one M that sleeps until the next timer.  Mirrors the
 * blocking netpoll of findRunnable with netpollBreak as the wake-up.
 * sched.lastpoll == 0 while an M sleeps there; sched.pollgen changes to
 * wake it.
 * ------------------------------------------------------------------------- */

static void futex_wake_poller(void)
{
    /* Seq-cst: the sleeper compares pollgen in the futex call; a change
     * before it sleeps makes the sleep return at once. */
    xadd_seqcst(&gort__sched.pollgen, 1);
    gort__futexwake(&gort__sched.pollgen, 1);
}

/* 1 while the poller naps on sched.pollgen instead of sleeping in the
 * backend (gort__netpoll_sleep). */
static uint32_t napping;

/* Wake the M sleeping as the poller, if one is. */
void gort__netpoll_wake(void)
{
    /* Once the backend is set up the poller sleeps in it; before, on the
     * futex (generic_init_locked switches it over). */
    if (!gort__netpoll_inited()) {
        futex_wake_poller();
        return;
    }
    gort__netpoll_break();
    /* A napping poller sleeps on pollgen, and the break waits in the
     * backend until the nap ends.  Seq-cst, both: our pollgen bump before
     * our read of napping, against the poller's store of napping before
     * the futex call compares pollgen: either we see it napping and wake
     * it, or its futex call sees the bump and does not sleep. */
    xadd_seqcst(&gort__sched.pollgen, 1);
    if (load_seqcst(&napping))
        gort__futexwake(&gort__sched.pollgen, 1);
}

/* A timer at `when` was added: make sure some M will run it in time.
 * Mirrors wakeNetPoller (proc.go). */
void gort__netpoll_wake_by(int64_t when)
{
    /* Seq-cst: the added timer's minwhen store (update_minwhen, time.c)
     * before this read of lastpoll, against the poller's lastpoll
     * exchange before its read of minwhen (gort__timers_earliest): one of
     * us sees the other. */
    if (load_seqcst(&gort__sched.lastpoll) == 0) {
        int64_t until = load_seqcst(&gort__sched.polluntil);
        if (until == 0 || until > when)
            gort__netpoll_wake();
    } else {
        gort__wakep();
    }
}

/*
 * Before the poller sleeps in the backend, it may poll without blocking for
 * up to GORTDEBUG=netpollspin microseconds (default 50), when goroutines
 * wait on descriptors, every P is idle and the sleep would be longer.  In
 * a request-reply exchange under heavy load the next request often comes
 * within that, and then neither does the poller's thread sleep nor does
 * the sender pay to wake it (a futex or epoll wake-up and the thread's
 * switch back in).  Every P idle: no thread of ours wants a CPU, and the
 * spin stops as soon as one does.
 *
 * The spin pays only when work comes within it.  Each idle spell ends
 * after a gap (until the first event or break); a spin of up to L would
 * have cost min(gap, L) of CPU and, when the gap was within L, saved a
 * sleep and a wake-up: the CPU the poller's thread spends to block in
 * epoll_wait and be woken, which the poller measures on every 16th spell
 * that sleeps while it spins, every 256th while it does not (its thread's
 * CPU clock around the call, two system calls: far less than the
 * wake-up's latency).  spinpay keeps moving averages of the cost and the
 * gain (1/16 weight each) and the poller spins while the gain outweighs
 * the cost: by a quarter more to start spinning, a quarter less to stop,
 * so that it does not flap.  A spell spent asleep shows its gap only with
 * the wake-up's own latency added, so it counts only when it is plainly
 * beyond L (a miss either way); and while not spinning, a spell now and
 * then spins anyway, to see the gaps as they are, and counts for a quarter
 * (it stands for many).  A probe that misses costs L, so the probes back
 * off while they miss: the next comes twice as many spells later after a
 * miss, half as many after a hit, between 64 and 1,024.  At partial load,
 * where most probes miss, they cost about L/1,024 a request; when the
 * gaps shorten, the probes come every 64th spell again within a few
 * thousand spells (a few dozen milliseconds at the rates that need the
 * spin).  So the poller spins only where requests follow each other by
 * less than a sleep costs, under a client that never pauses; at partial
 * load it stops within a few dozen requests.  Only the poller M (one at a
 * time: sched.lastpoll's claim, which orders one poller's updates before
 * the next one's) touches spinpay.
 */
/* The gain of a hit until a sleep has been measured. */
#define SPIN_GAIN_NS (10 * 1000)
/* A slept spell whose gap is this much beyond L was beyond it anyway. */
#define SPIN_WAKE_SLACK_NS (200 * 1000)
/* One slept spell in this many has its CPU measured, while spinning
 * and while not: off, the gain only has to stay roughly right for the
 * probes, and at partial load nearly every request is a slept spell. */
#define SPIN_SAMPLE_EVERY 16
#define SPIN_SAMPLE_EVERY_OFF 256
/* Spells between probes while not spinning: doubled after a probe that
 * misses, halved after one that hits, within these bounds. */
#define SPIN_PROBE_FIRST 64
#define SPIN_PROBE_MOST 1024
static struct {
    int64_t cost, gain;   /* ns, moving averages over idle spells */
    int64_t sleepcpu;     /* ns, a sleep's CPU (0: not measured yet) */
    bool off;             /* not spinning: the gain fell behind */
    uint32_t spells;      /* idle spells since the last probe, while off */
    uint32_t probe_every; /* spells between probes (0: the first) */
    uint32_t slept;       /* spells slept since the last sample */
} spinpay;

void gort__spinpay_record(int64_t gap, int64_t spin, bool probe)
{
    int64_t saved = spinpay.sleepcpu ? spinpay.sleepcpu : SPIN_GAIN_NS;
    bool hit = gap <= spin;
    int64_t cost = hit ? gap : spin;
    int64_t gain = hit ? saved : 0;
    int shift = probe ? 2 : 4;
    spinpay.cost += (cost - spinpay.cost) / (1 << shift);
    spinpay.gain += (gain - spinpay.gain) / (1 << shift);
    if (spinpay.off)
        spinpay.off = 4 * spinpay.gain <= 5 * spinpay.cost;
    else
        spinpay.off = 4 * spinpay.gain < 3 * spinpay.cost;
    uint32_t every = spinpay.probe_every ? spinpay.probe_every
                                         : SPIN_PROBE_FIRST;
    if (probe && hit && every > SPIN_PROBE_FIRST)
        spinpay.probe_every = every / 2;
    else if (probe && !hit && every < SPIN_PROBE_MOST)
        spinpay.probe_every = every * 2;
}

void gort__spinpay_sleepcpu(int64_t cpu)
{
    if (spinpay.sleepcpu == 0)
        spinpay.sleepcpu = cpu;
    else
        spinpay.sleepcpu += (cpu - spinpay.sleepcpu) / 8;
}

int gort__spinpay_spin(void)
{
    if (!spinpay.off)
        return SPINPAY_SPIN;
    uint32_t every = spinpay.probe_every ? spinpay.probe_every
                                         : SPIN_PROBE_FIRST;
    if (++spinpay.spells < every)
        return SPINPAY_SLEEP;
    spinpay.spells = 0;
    return SPINPAY_PROBE;
}

bool gort__spinpay_counts(bool spun, int64_t gap, int64_t spin)
{
    return spun || gap > spin + SPIN_WAKE_SLACK_NS;
}

void gort__spinpay_reset(void)
{
    memset(&spinpay, 0, sizeof spinpay);
}

/*
 * The spin trial.  spinpay credits each spell that spins and gets its
 * event with a sleep saved.  Under many connections that is not what a
 * sleep would have cost: a poller that sleeps wakes a while after the
 * first event, with the events that came meanwhile, and handles them as
 * one batch, so that the sleeps it pays are far fewer than the spells a
 * spinning poller sees; the client, answered in batches, sends in batches
 * too (docs/design.md, "Every busy-wait is bounded by what it saves", has
 * the measurements).  No model of the gaps sees that, so it is measured:
 * while spinpay says spin, time is cut into windows of 10 ms, and each
 * window sleeps, spins or naps.  At each window's end the poller reads the
 * process's CPU time and its descriptor wake-ups (goroutines the poller
 * readied, all Ms), and keeps for each mode moving averages of the CPU per
 * wake-up and of the wake-ups a second (a quarter weight a window).
 *
 * Between sleeping and spinning the cheaper by CPU a wake-up wins; the
 * two swap only for a difference of a sixteenth.  The nap (sleeping on a
 * timer for GORTDEBUG=netpollnap microseconds, then polling, before the
 * sleep in the backend) costs the process about what a sleep does, but
 * while it naps nobody waits in epoll_wait, so the peers that send to it
 * pay no wake-up: a peer that is short of CPU then sends more.  The nap
 * costs latency (a request that comes during it waits for its end), so
 * it runs only where it buys throughput: it wins when its windows see a
 * sixteenth more wake-ups a second than the better of the other two, at
 * no more CPU a wake-up, and keeps winning while they see a
 * thirty-second more, at no more than a thirty-second more CPU a
 * wake-up.  Under a peer that sends at a fixed rate the nap buys
 * nothing, and under one that waits for each answer it loses wake-ups;
 * only a peer held back by its own CPU makes it win.
 *
 * The mode that wins runs seven windows in eight, and the others take
 * turns in the eighth.  A mode that costs a quarter more CPU a wake-up
 * or worse in the window it gets (a nap also when it got no more
 * wake-ups a second than a thirty-second over the winner's) is tried
 * half as often after it, down to one window in 64, and one in eight
 * again once a mode comes within that quarter or the choice changes: a window in eight at a quarter
 * more would add 3% to the CPU of a load that never changes, while a
 * load that does change is still seen within a few dozen windows.  A
 * window with fewer than 64 wake-ups stays open until it has them, or is
 * dropped after 200 ms; the open window is dropped whenever spinpay says
 * sleep.  Costs: two clock reads and a walk over the Ms every 10 ms, and
 * one window in 8 to 64 in another mode.
 */
#define TRIAL_WINDOW_NS (10 * 1000 * 1000)
#define TRIAL_MIN_WAKEUPS 64
#define TRIAL_MAX_NS (200 * 1000 * 1000)
#define TRIAL_OTHER_EVERY 8
#define TRIAL_OTHER_RAREST 64
static struct {
    int64_t start;   /* the open window's start (nanotime); 0: none */
    int64_t cpu0;    /* the process's CPU time then, ns */
    uint64_t wake0;  /* its descriptor wake-ups then */
    int mode;        /* the open window's: SPINTRIAL_SLEEP, _SPIN, _NAP */
    int favor;       /* the mode that wins */
    int base;        /* the better of sleeping and spinning */
    int last_other;  /* the mode the last other window ran */
    int64_t cpu[3];  /* CPU ns a wake-up, by mode; 0: not measured yet */
    int64_t rate[3]; /* wake-ups a second, by mode */
    uint32_t n;      /* windows since the last in another mode */
    uint32_t every;  /* one window in `every` runs another mode; 0:
                      * TRIAL_OTHER_EVERY */
} spintrial;

static uint32_t trial_every(void)
{
    return spintrial.every ? spintrial.every : TRIAL_OTHER_EVERY;
}

/* The modes the trial compares: the nap only while it has a length. */
static int trial_modes(void)
{
    /* Relaxed: a setting that a test changes while the runtime runs. */
    return load_relaxed(&gort__debug.netpollnap) > 0 ? 3 : 2;
}

/* The winning mode by the averages so far; favor is the current one. */
static int trial_choose(int favor)
{
    const int64_t *c = spintrial.cpu, *r = spintrial.rate;
    int base = spintrial.base;
    if (c[SPINTRIAL_SLEEP] && c[SPINTRIAL_SPIN])
        base = base == SPINTRIAL_SPIN
                   ? (16 * c[SPINTRIAL_SPIN] <= 17 * c[SPINTRIAL_SLEEP]
                          ? SPINTRIAL_SPIN
                          : SPINTRIAL_SLEEP)
                   : (16 * c[SPINTRIAL_SPIN] < 15 * c[SPINTRIAL_SLEEP]
                          ? SPINTRIAL_SPIN
                          : SPINTRIAL_SLEEP);
    spintrial.base = base;
    if (trial_modes() < 3 || !c[SPINTRIAL_NAP] || !c[base])
        return base;
    int64_t cn = c[SPINTRIAL_NAP], rn = r[SPINTRIAL_NAP];
    bool win = favor == SPINTRIAL_NAP
                   ? 32 * rn >= 33 * r[base] && 32 * cn <= 33 * c[base]
                   : 16 * rn >= 17 * r[base] && cn <= c[base];
    return win ? SPINTRIAL_NAP : base;
}

/* The mode for the next window that does not run the winner: the modes
 * other than the winner in turn. */
static int trial_other(void)
{
    int modes = trial_modes(), m = spintrial.last_other;
    do
        m = (m + 1) % modes;
    while (m == spintrial.favor);
    spintrial.last_other = m;
    return m;
}

bool gort__spintrial_due(int64_t now)
{
    return spintrial.start == 0 || now - spintrial.start >= TRIAL_WINDOW_NS;
}

void gort__spintrial_turn(int64_t now, int64_t cpu, uint64_t wakeups)
{
    if (spintrial.start != 0) {
        uint64_t dw = wakeups - spintrial.wake0;
        int64_t dcpu = cpu - spintrial.cpu0, dt = now - spintrial.start;
        if (dw < TRIAL_MIN_WAKEUPS) {
            if (dt < TRIAL_MAX_NS)
                return; /* the window stays open */
        } else if (dcpu > 0 && dt > 0 && spintrial.mode < trial_modes()) {
            int64_t per = dcpu / (int64_t)dw;
            int64_t rate = (int64_t)(dw * 1000000000u / (uint64_t)dt);
            int favor = spintrial.favor, m = spintrial.mode;
            int64_t best = spintrial.cpu[favor];
            bool tried = m != favor && best != 0;
            int64_t *a = &spintrial.cpu[m], *r = &spintrial.rate[m];
            *a = *a ? *a + (per - *a) / 4 : per;
            *r = *r ? *r + (rate - *r) / 4 : rate;
            /* A tried mode comes close within a quarter of the winner's
             * CPU, and a nap only when it also bought wake-ups. */
            bool close = 4 * per < 5 * best &&
                         (m != SPINTRIAL_NAP ||
                          32 * rate >= 33 * spintrial.rate[favor]);
            spintrial.favor = trial_choose(favor);
            uint32_t every = trial_every();
            if (spintrial.favor != favor || (tried && close))
                spintrial.every = TRIAL_OTHER_EVERY;
            else if (tried && every < TRIAL_OTHER_RAREST)
                spintrial.every = 2 * every;
        }
    }
    spintrial.start = now;
    spintrial.cpu0 = cpu;
    spintrial.wake0 = wakeups;
    /* Each mode measured once first, then the winner all windows but
     * one in `every`. */
    int modes = trial_modes();
    if (spintrial.favor >= modes)
        spintrial.favor = spintrial.base;
    for (int m = 0; m < modes; m++) {
        if (spintrial.cpu[m] == 0) {
            spintrial.mode = m;
            return;
        }
    }
    if (++spintrial.n >= trial_every()) {
        spintrial.n = 0;
        spintrial.mode = trial_other();
    } else {
        spintrial.mode = spintrial.favor;
    }
}

int gort__spintrial_mode(void)
{
    return spintrial.mode;
}

/* The mode forced by a test, plus one (0: none). */
static uint32_t trial_forced;

void gort__spintrial_force(int mode)
{
    /* Relaxed: a test's setting, read at the poller's next spell. */
    store_relaxed(&trial_forced, (uint32_t)(mode + 1));
}

void gort__spintrial_drop(void)
{
    spintrial.start = 0;
}

void gort__spintrial_reset(void)
{
    memset(&spintrial, 0, sizeof spintrial);
}

uint64_t gort__netpoll_wakeups(void)
{
    uint64_t n = 0;
    /* Ms are never freed while the runtime runs (allm is push-only);
     * acquire pairs with the release that published each.  Relaxed
     * counts: each M adds to its own, and a sum a little old only moves
     * a wake-up from one window to the next. */
    for (struct m *mp = load_acq(&gort__allm); mp; mp = mp->alllink)
        n += load_relaxed(&mp->nnetpollwake);
    return n;
}

/* The spin limit in ns (0: none).  Relaxed: a setting that a test changes
 * while the runtime runs; a stale value costs one spin more or less. */
static int64_t spin_limit(void)
{
    return (int64_t)load_relaxed(&gort__debug.netpollspin) * 1000;
}

/* The nap's length in ns (0: none).  Half as long on one P: there the
 * napping thread is the only one to answer what came during the nap, one
 * request after another, where two Ps share the batch (docs/design.md,
 * "The poller's nap", has the measurements).  Relaxed, as spin_limit;
 * GOMAXPROCS too: a change seen one nap late changes one nap's length. */
int64_t gort__netpoll_nap_ns(void)
{
    int64_t ns = (int64_t)load_relaxed(&gort__debug.netpollnap) * 1000;
    return load_relaxed(&gort__gomaxprocs) == 1 ? ns / 2 : ns;
}

/* Spin if it pays (*probe: a probe of the gaps).  Returns true when the
 * spin got an event (*n Gs readied, 0 for a break); *nap is set when the
 * trial's window naps instead. */
static bool spin_before_sleep(int64_t until, struct gqueue *q, int32_t *n,
                              bool *probe, bool *nap)
{
    /* gort__netpoll_spin checks that every P is idle. */
    int64_t spin = spin_limit();
    if (spin == 0 || gort__netpoll_waiters() == 0)
        return false;
    /* Relaxed: see gort__spintrial_force. */
    int forced = (int)load_relaxed(&trial_forced) - 1;
    if (forced >= 0) {
        *nap = forced == SPINTRIAL_NAP;
        if (forced != SPINTRIAL_SPIN)
            return false;
    }
    int how = forced >= 0 ? SPINPAY_SPIN : gort__spinpay_spin();
    *probe = how == SPINPAY_PROBE;
    if (how == SPINPAY_SLEEP) {
        gort__spintrial_drop();
        return false;
    }
    int64_t now = gort_nanotime();
    if (how == SPINPAY_SPIN && forced < 0) {
        if (gort__spintrial_due(now))
            gort__spintrial_turn(now, (int64_t)gort__process_cputime(),
                                 gort__netpoll_wakeups());
        int mode = gort__spintrial_mode();
        *nap = mode == SPINTRIAL_NAP;
        if (mode != SPINTRIAL_SPIN)
            return false;
    }
    int64_t end = now + spin;
    if (until != 0 && until <= end)
        return false;
    int32_t r = gort__netpoll_spin(end, q);
    if (r < 0)
        return false;
    *n = r;
    return true;
}

/* Nap on a timer instead of sleeping in the backend, then poll without
 * blocking: while nobody waits in epoll_wait, a sender pays no wake-up.
 * gen is sched.pollgen from before the poller published polluntil; any
 * wake-up since (gort__netpoll_wake) ends the nap.  Returns true when the
 * nap ends the spell: it found events (*n Gs readied) or was woken. */
static bool nap_before_sleep(int64_t until, uint32_t gen, struct gqueue *q,
                             int32_t *n)
{
    int64_t nap = gort__netpoll_nap_ns();
    if (nap == 0 || (until != 0 && until - gort_nanotime() <= nap))
        return false;
    /* Seq-cst: against gort__netpoll_wake's bump of pollgen and its read
     * of napping (see there). */
    struct m *mp = gort__getm_raw();
    if (mp)
        gort__stat_add(&mp->nnetpollnap, 1); /* /gort/sched/netpoll-naps */
    store_seqcst(&napping, 1);
    gort__futexsleep(&gort__sched.pollgen, gen, nap);
    /* Relaxed: napping only asks wakers for a futex wake-up; one they
     * make after the nap is a spurious wake of nobody. */
    store_relaxed(&napping, 0);
    int32_t r = gort__netpoll(0, q);
    if (r > 0 || load_seqcst(&gort__sched.pollgen) != gen) {
        *n = r;
        return true;
    }
    return false;
}

/* Sleep as the poller until `until` or a break.  The caller holds no P
 * and has claimed sched.lastpoll. */
int32_t gort__netpoll_sleep(int64_t until, struct gqueue *q)
{
    q->head = q->tail = NULL;
    uint32_t gen = load_seqcst(&gort__sched.pollgen);
    /* polluntil 0 would read as "unknown"; a poller with no timer sleeps
     * until woken: publish a far deadline instead. */
    store_seqcst(&gort__sched.polluntil, until ? until : INT64_MAX);
    /* Timers added before we published polluntil may be earlier. */
    int64_t again = gort__timers_earliest();
    if (again != 0 && (until == 0 || again < until))
        until = again;
    int32_t n = 0;
    if (gort__netpoll_inited()) {
        int64_t began = gort_nanotime();
        bool eligible = gort__netpoll_waiters() > 0, probe = false;
        bool nap = false;
        bool spun = spin_before_sleep(until, q, &n, &probe, &nap);
        bool napped = !spun && nap && nap_before_sleep(until, gen, q, &n);
        if (!spun && !napped) {
            /* -1: no timer, sleep until an event or a break.  A deadline
             * that has already passed (a slow thread got here late) polls
             * without sleeping: it must never read as "no deadline". */
            int64_t delay = -1;
            if (until != 0) {
                delay = until - gort_nanotime();
                if (delay < 0)
                    delay = 0;
            }
            /* Now and then: what a sleep costs this thread in CPU, the
             * gain of a spin that would have avoided it.  Counted only
             * when the thread was off the CPU for a while (it slept). */
            bool sample = false;
            if (eligible && spin_limit() != 0 &&
                ++spinpay.slept >= (spinpay.off ? SPIN_SAMPLE_EVERY_OFF
                                                : SPIN_SAMPLE_EVERY)) {
                spinpay.slept = 0;
                sample = true;
            }
            int64_t c0 = sample ? (int64_t)gort__thread_cputime(0) : 0;
            int64_t w0 = sample ? gort_nanotime() : 0;
            n = gort__netpoll(delay, q);
            if (c0 > 0) {
                int64_t cpu = (int64_t)gort__thread_cputime(0) - c0;
                int64_t wall = gort_nanotime() - w0;
                if (cpu >= 0 && wall > 2 * cpu + 2000)
                    gort__spinpay_sleepcpu(cpu);
            }
        }
        /* The gap: until the event or the break (a break leaves no G but
         * ends the wait early), or none when the sleep simply ran out. */
        int64_t now = gort_nanotime(), gap = now - began, lim = spin_limit();
        bool ended = spun || n > 0 || until == 0 || now < until;
        if (!ended)
            gap = INT64_MAX;
        if (eligible && gort__spinpay_counts(spun, gap, lim))
            gort__spinpay_record(gap, lim, probe);
        if (spun || napped)
            goto done;
    } else if (until != 0) {
        int64_t delay = until - gort_nanotime();
        if (delay > 0)
            gort__futexsleep(&gort__sched.pollgen, gen, delay);
    } else {
        gort__futexsleep(&gort__sched.pollgen, gen, -1);
    }
done:
    store_seqcst(&gort__sched.polluntil, 0);
    return n;
}
