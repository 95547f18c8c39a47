/* SPDX-License-Identifier: MIT */
/*
 * netpoll.h - what netpoll.c offers the rest of the runtime: the network
 * poller: pollDescs and the poller's sleep, wake and spin.
 */
#ifndef GORT_NETPOLL_H
#define GORT_NETPOLL_H

#include "atomic.h"
#include "defs.h"
#include "san.h"
#include "sched.h"

/* A registered descriptor's state in the poller: its goroutines waiting
 * to read and to write, its deadlines, its references.  Mirrors pollDesc
 * (netpoll.go). */
struct polldesc {
    struct polldesc *link;  /* free list; under pollcache.lock */
    int fd;                 /* atomic (relaxed): set under pollcache.lock
                             * at registration, read by gort__fd_ref */
    uint32_t refs;          /* atomic: PD_REF_* | calls in flight */
    uint32_t seq;           /* bumped on reuse; events carry it */
    uint32_t closing;       /* atomic: gort_close began */
    bool stream;            /* a short read leaves it empty: a pipe or
                             * stream socket, for gort-hook a TCP socket
                             * (netpoll.c, is_tcp); set at registration */
    bool inq;               /* a TCP socket of gort's own with TCP_INQ on:
                             * every read says whether it left the socket
                             * empty (fdio.c, fd_read); set at
                             * registration */
    uint32_t rdrained;      /* atomic: the last read was short (see
                             * fdio.c, fd_read) */
    uint32_t rdfull;        /* atomic: on an inq socket, the last read
                             * filled its buffer, so the next one asks
                             * what it leaves (fdio.c, fd_read) */
    uint32_t rdhup;         /* atomic: an event said hang-up or error:
                             * reads never wait first again */
    bool hooked;            /* registered by gort-hook (hook.c) for the
                             * program's own descriptor: its mode is left
                             * as the program set it, and gort's calls
                             * (fdio.c) take the syscall path on it; set
                             * at registration */
    bool noclose;           /* its number was taken over by dup2 or dup3:
                             * the last call out frees it without
                             * close(2) */
    gort_mutex gate[2];     /* gort-hook's waiters to read ([0]) and to
                             * write ([1]) take turns: a slot holds one G */
    /* gort-hook's copy of what the kernel says of the descriptor (hook.c,
     * wait_fd): valid while hk_epoch equals hook.c's epoch, which the
     * hooked calls that change these (fcntl F_SETFL, ioctl FIONBIO,
     * setsockopt SO_RCVTIMEO/SO_SNDTIMEO) move.  All atomic (relaxed; the
     * epoch stored last with release), as goroutines refresh it at once;
     * hk_epoch is 0 (never valid) at registration. */
    uint32_t hk_epoch;
    uint32_t hk_nonblock;   /* O_NONBLOCK on the file description */
    int64_t hk_timeo[2];    /* SO_RCVTIMEO, SO_SNDTIMEO, ns (0: none) */
    /* gort-hook's parks to read ([0]) and to write ([1]), counted by the
     * waiter holding the gate (atomic, relaxed), and what sysmon's check
     * of them (gort__fd_check_hooked) last saw and last re-armed, under
     * pollcache.lock. */
    uint32_t hk_parks[2], hk_seen[2], hk_checked[2];
    uintptr_t rg, wg;       /* atomic: PD_* (netpoll.c) or a G */
    int64_t rd, wd;         /* atomic: deadline (0 none, -1 expired) */
    int64_t rkey, wkey;     /* atomic: the last deadline set on rt, wt; one
                             * no earlier is pushed to the pending timer
                             * without locks (gort__fd_set_deadline) */
    struct gtimer rt, wt;   /* deadline timers */
};

/* Set (release) once the backend is set up, on the first registration. */
GORT_HIDDEN extern uint32_t gort__netpollinited;
/* Whether the backend is set up.  Acquire: a thread that sees it set sees
 * the backend's descriptors. */
static inline bool gort__netpoll_inited(void)
{
    return load_acq(&gort__netpollinited) != 0;
}
GORT_HIDDEN void gort__netpoll_fini(void);
/* Goroutines parked in IO wait. */
GORT_HIDDEN uint32_t gort__netpoll_waiters(void);
/* Goroutines the poller has readied so far, all Ms. */
GORT_HIDDEN uint64_t gort__netpoll_wakeups(void);
/* For the backend: readiness for mode ('r', 'w' or 'r' + 'w') arrived on
 * pd (hup: it hung up or failed); the Gs it unblocks, RUNNABLE, go in q.
 * Returns how many. */
GORT_HIDDEN int32_t gort__netpoll_ready(struct polldesc *pd, int mode,
                                        bool hup, struct gqueue *q);

/* The poller's sleep, until `until` (0: until woken); returns the Gs the
 * backend readied meanwhile (RUNNABLE, linked in q).  The caller holds no
 * P and has claimed sched.lastpoll. */
GORT_HIDDEN int32_t gort__netpoll_sleep(int64_t until, struct gqueue *q);
/* Wake the M sleeping as the poller: through the backend once it is set
 * up (gort__netpoll_break), else on the futex it then sleeps on. */
GORT_HIDDEN void gort__netpoll_wake(void);
/* A timer at `when` was added: wake the poller if it would sleep past
 * it, or, with no poller, a P.  Mirrors wakeNetPoller (proc.go). */
GORT_HIDDEN void gort__netpoll_wake_by(int64_t when);
/* Whether the poller's spin pays: spin now (SPINPAY_*: while it
 * does not pay, one idle spell in 64 to 1,024 probes)?  Does an idle spell that
 * ended after gap ns, spun or slept, tell anything?  Record it (probe: it
 * was a probe).  Reset (gort_main's start, and tests).  The poller M
 * only. */
enum { SPINPAY_SLEEP = 0, SPINPAY_SPIN, SPINPAY_PROBE };
GORT_HIDDEN int gort__spinpay_spin(void);
GORT_HIDDEN bool gort__spinpay_counts(bool spun, int64_t gap, int64_t spin);
GORT_HIDDEN void gort__spinpay_record(int64_t gap, int64_t spin, bool probe);
GORT_HIDDEN void gort__spinpay_reset(void);
/* A sleep of the poller cost its thread cpu ns of CPU (measured). */
GORT_HIDDEN void gort__spinpay_sleepcpu(int64_t cpu);
/* The spin trial (netpoll.c): while spinpay says spin, windows of
 * sleeping, spinning and napping compare the process's CPU time per
 * descriptor wake-up and its wake-ups a second.  Is a window's end due
 * at now?  End it (or start the first) with the process's CPU time and
 * wake-ups so far.  The current window's mode.  Drop the open window
 * (the spin went off).  Reset.  The poller M only. */
enum { SPINTRIAL_SLEEP = 0, SPINTRIAL_SPIN, SPINTRIAL_NAP };
GORT_HIDDEN bool gort__spintrial_due(int64_t now);
GORT_HIDDEN void gort__spintrial_turn(int64_t now, int64_t cpu,
                                      uint64_t wakeups);
GORT_HIDDEN int gort__spintrial_mode(void);
/* Tests: every spell in this mode from now on, whatever spinpay and the
 * trial say (-1: as they say). */
GORT_HIDDEN void gort__spintrial_force(int mode);
GORT_HIDDEN void gort__spintrial_drop(void);
GORT_HIDDEN void gort__spintrial_reset(void);
/* How long a nap lasts now, ns (0: no naps): GORTDEBUG=netpollnap, half
 * of it on one P. */
GORT_HIDDEN int64_t gort__netpoll_nap_ns(void);

/* A registered descriptor's pollDesc, for fdio.c's calls.  Register fd
 * (inq: a TCP socket with TCP_INQ on): 0 or -errno. */
GORT_HIDDEN int gort__fd_register(int fd, bool inq);
/* Register fd for gort-hook: as gort__fd_register, but fd keeps its
 * mode (hook.c makes each call non-blocking by itself) and pd->hooked is
 * set.  0, -EPERM for a descriptor epoll cannot watch (a regular file, a
 * directory), or -errno. */
GORT_HIDDEN int gort__fd_register_hook(int fd);
/* gort-hook watches the program's descriptors by number and does not
 * re-arm them at each park.  A program may close one behind the hooks'
 * back (fclose of an fdopen'd socket) and get the number again for a file
 * the backend does not watch; and a TCP read that waits for an edge after
 * a short one (hook.c, sock_wait_first) may wait for data that came in
 * no edge.  So sysmon re-arms, once a park, every hooked descriptor a
 * goroutine has been parked on since its last check (all: since any
 * time): EPOLL_CTL_MOD, or ADD when the backend no longer watches the
 * number for its present file, each reporting readiness at once.
 * Returns whether a park was seen that the next check re-arms (sysmon
 * then comes back for it within its shortest all-idle round). */
GORT_HIDDEN bool gort__fd_check_hooked(bool all);
/* The kernel gave out the number fd again, for a new file (gort-hook saw
 * the call that made it): whatever is registered under it belongs to a
 * file closed behind gort's back.  Its waiters return -EBADF and its
 * pollDesc is given back without close(2).  0, or 1 when fd is not
 * registered. */
GORT_HIDDEN int gort__fd_detach(int fd);
/* dup2 (flags < 0) or dup3 of oldfd onto newfd, through the table
 * (libc.h): the result or -errno.  When newfd is registered, its waiters
 * return -EBADF once the number has the new file, and its pollDesc is
 * given back without close(2) (dup2 closed the file; also when newfd was
 * closed already and its close(2) still waits for calls in flight).  A
 * failed call leaves newfd as it was. */
GORT_HIDDEN int gort__fd_dup(int oldfd, int newfd, int flags);
/* Whether the number fd has been closed (gort_close, or a hooked close)
 * while its close(2) waits for the calls in flight on it: for the program
 * it is closed already.  Without a reference; seq-cst (see
 * gort__fd_checkerr): a closer that then looks for waiters of the number
 * and a waiter that published itself before this check see each other. */
GORT_HIDDEN bool gort__fd_closed(int fd);
/* Readiness for reading on pd, from outside the backend: wake the
 * goroutine parked to read it, or leave the readiness for the next one
 * (gort-hook wakes a goroutine that waits on a private epoll instance for
 * a descriptor that a hooked close closed). */
GORT_HIDDEN void gort__fd_notify(struct polldesc *pd);
/* The pollDesc of a registered fd with a reference held (a closed one
 * too: the call fails with -EBADF), or NULL; every call that uses it
 * drops it with gort__fd_unref when done. */
GORT_HIDDEN struct polldesc *gort__fd_ref(int fd);
GORT_HIDDEN void gort__fd_unref(struct polldesc *pd);
/* Close a registered fd (0 or -errno), or 1 when it is not registered. */
GORT_HIDDEN int gort__fd_close(int fd);
/* Whether pd's descriptor has been closed (gort_close, a hooked close or
 * dup2).  Acquire: pairs with the closer's exchange (netpoll.c,
 * close_notify), so that what the closer did before is seen. */
static inline bool gort__fd_closing(struct polldesc *pd)
{
    if (!load_acq(&pd->closing))
        return false;
    /* ThreadSanitizer (san.c): the close happens before this. */
    gort__san_acquire(&pd->closing);
    return true;
}
/* Park until pd is ready for mode ('r' or 'w'): 0, or -EBADF (closed),
 * -ETIMEDOUT (its deadline passed). */
GORT_HIDDEN int gort__fd_wait(struct polldesc *pd, int mode);
GORT_HIDDEN int gort__fd_set_deadline(struct polldesc *pd, int mode,
                                      int64_t when);
/* The error that ends a wait in direction mode (0 none).  Mirrors
 * netpollcheckerr.
 *
 * Closing and deadlines against a parking waiter are a store-buffer
 * handshake: the waiter stores PD_WAIT in rg/wg and then loads closing and
 * rd/wd; a closer or an expired deadline stores its flag and then loads
 * rg/wg (netpollunblock).  With acquire/release alone both loads may read
 * the old values (on x86-64 a plain store waits in the store buffer while
 * the next load goes ahead), the waiter parks, nobody wakes it.  So all
 * four accesses are sequentially consistent, as Go's atomics are: one of
 * the two sides sees the other.  (On x86-64 the loads stay plain moves.) */
static inline int gort__fd_checkerr(struct polldesc *pd, int mode)
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

#endif /* GORT_NETPOLL_H */
