/* SPDX-License-Identifier: MIT */
/*
 * syscall.c - goroutines in system calls: entersyscall and exitsyscall,
 * the watcher that hands off the P of a syscall that lasts, and the
 * wrappers of the blocking calls that are not descriptor I/O
 * (gort_nanosleep, gort_getaddrinfo, gort_waitpid; the calls on
 * descriptors are fdio.c's).  Mirrors entersyscall, entersyscallblock,
 * exitsyscall and exitsyscall0 (proc.go).
 *
 * A goroutine about to block its thread tells the scheduler:
 *
 *   entersyscall       the G becomes G_SYSCALL and its P P_SYSCALL; the M
 *                      lets go of the P (m->p = NULL, m->oldp = P) but
 *                      nobody else runs it yet.  A quick call comes back
 *                      and takes the same P with one CAS (exitsyscall's
 *                      fast path).  A call that lasts is noticed by sysmon
 *                      (retake, sysmon.c), which CASes the P to idle and
 *                      hands it to another M (handoffp).
 *   entersyscallblock  the call is known to block: the P is handed off at
 *                      once, no sysmon round-trip.
 *   exitsyscall        takes back the old P if it is still P_SYSCALL (the
 *                      CAS arbitrates against retake and stop-the-world),
 *                      else any idle P, else the G goes to the global queue
 *                      and the M parks (exitsyscall0, on g0).
 *
 * The P_SYSCALL status word carries a sequence number of the syscall entry
 * (sched.h, enum pstatus), so an M coming back late cannot take a P that
 * was retaken, reused and has entered another M's syscall since.
 *
 * The preemption signal can also put a G into this state from its own
 * thread when it finds the thread blocked in the kernel in a call nobody
 * wrapped (preempt.c); m->insyscall says which way it entered.
 *
 * Invariants:
 *   - Between entersyscall and exitsyscall the M holds no P (m->p NULL) and
 *     the G does not call gort; only the M itself runs exitsyscall.
 *   - Only the party whose CAS moves the P out of its P_SYSCALL word owns
 *     the P afterwards.
 */
#include "atomic.h"
#include "defs.h"
#include "libc.h"
#include "lock_futex.h"
#include "mthread.h"
#include "os_linux.h"
#include "preempt.h"
#include "proc.h"
#include "procresize.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "sema.h"
#include "syscall.h"
#include "sysmon.h"
#include "tracehooks.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

/* A stop-the-world is waiting for Ps: give it ours (Go's
 * entersyscall_gcwait). */
static void entersyscall_gcwait(struct m *mp, struct p *pp, uint32_t word)
{
    gort__lock_m(mp, &gort__sched.lock);
    if (gort__sched.stopwait > 0 && cas_acqrel(&pp->status, word, P_GCSTOP)) {
        if (--gort__sched.stopwait == 0)
            gort__notewakeup(&gort__sched.stopnote);
    }
    gort__unlock_m(mp, &gort__sched.lock);
}

/* ---------------------------------------------------------------------------
 * Watching a syscall.
 *
 * Go hands off the P of a lasting syscall from sysmon, which must see the
 * same syscall on two rounds (20 us each).  Here a sleeping thread takes
 * 60-150 us to wake, so that costs sysmon's wake-up plus the wake-up of
 * the M that takes the P: about 200 us.  When goroutines wait on the P as
 * a syscall begins, gort instead wakes one idle M at once, in parallel
 * with the syscall, to watch it: once the syscall has lasted a sysmon
 * round (20 us) and the P is still in it, the watcher takes the P with
 * the same CAS sysmon would use.  One watcher at a time; none while Ms
 * are spinning (they find the work anyway); and after a watch that found
 * the syscall over, none for 1 ms, so that a stream of short syscalls
 * does not wake a thread each.  sysmon's retake stays as the fallback.
 * ------------------------------------------------------------------------- */

#define WATCH_AFTER_NS ((int64_t)GORT_SYSMON_MIN_US * 1000)
#define WATCH_QUIET_NS (1000 * 1000)

static void syscall_watch_start(struct m *mp, struct p *pp, uint32_t word,
                                int64_t began)
{
    if (load_relaxed(&gort__sched.watching) ||
        load_relaxed(&gort__sched.nmspinning) ||
        load_relaxed(&gort__sched.nmidle) == 0 ||
        load_relaxed(&gort__sched.watchquiet) > began ||
        !cas_acqrel(&gort__sched.watching, 0, 1)) {
        gort__sysmon_kick(); /* sysmon on short rounds, at least */
        return;
    }
    gort__lock_m(mp, &gort__sched.lock);
    struct m *w = gort__mget_locked();
    gort__unlock_m(mp, &gort__sched.lock);
    if (!w) {
        store_rel(&gort__sched.watching, 0);
        gort__sysmon_kick();
        return;
    }
    w->watchp = pp;
    w->watchword = word;
    gort__notewakeup(&w->park); /* publishes watchp to the watcher */
}

bool gort__syscall_watch(struct m *mp)
{
    struct p *pp = mp->watchp;
    uint32_t word = mp->watchword;
    mp->watchp = NULL;
    int64_t until = load_relaxed(&pp->syscallwhen) + WATCH_AFTER_NS;
    bool got = false;
    for (;;) {
        /* Acquire: pairs with exitsyscall's and retake's CAS. */
        if (load_acq(&pp->status) != word ||
            load_relaxed(&gort__sched.gcwaiting) ||
            load_relaxed(&gort__sched.exiting))
            break;
        if (gort_nanotime() >= until) {
            /* Acq-rel: as sysmon's retake, the winner owns the P. */
            got = cas_acqrel(&pp->status, word, P_IDLE);
            break;
        }
        gort__cpu_relax();
    }
    if (!got)
        store_relaxed(&gort__sched.watchquiet,
                      gort_nanotime() + WATCH_QUIET_NS);
    store_rel(&gort__sched.watching, 0);
    if (got) {
        gort__stat_add(&mp->nhandoffs, 1);
        gort__trace_procsteal(pp, TRACE_STEAL_WATCHER);
        gort__acquirep(mp, pp);
    }
    return got;
}

/*
 * No preemption signal lands in a wrapped system call: a signal with a
 * handler makes nanosleep, poll, epoll_wait and others return EINTR.  A
 * Dekker handshake with the sender (gort__preempt_signal): the sender
 * sets urgpending by exchange, then reads insyscall; entersyscall sets
 * insyscall, then reads urgpending (all sequentially consistent).  Either
 * the sender sees the call and does not send, or the thread sees the
 * signal coming and waits here, before the call, until its handler has
 * run (the handler clears urgpending).  The signal is sent to this very
 * thread, which runs: it arrives within microseconds.  If SIGURG is
 * blocked in the thread it cannot arrive; then nothing is waited for (it
 * stays pending, and interrupts the call only if the call unblocks it).
 */
void gort__urg_wait(struct m *mp)
{
    for (int i = 0; load_seqcst(&mp->urgpending); i++) {
        if (i < 1000) {
            gort__cpu_relax();
            continue;
        }
        sigset_t cur;
        if (pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 &&
            sigismember(&cur, SIGURG)) {
            store_relaxed(&mp->urgpending, 0);
            return;
        }
        gort__osyield();
    }
}

/* Put mp's G and P into the syscall state.  how: 1 explicit, 2 marked by
 * the preemption signal.  Also called from that signal handler on the M's
 * own thread: plain stores and atomics only, no locks unless a
 * stop-the-world waits (and the handler never runs with locks held). */
void gort__entersyscall_m(struct m *mp, struct g *gp, uint32_t how)
{
    struct p *pp = mp->p;
    /* Relaxed: sysmon's coarse clock, as for parking (dumps show how long
     * a syscall has lasted, as Go's). */
    gp->waitsince = load_relaxed(&gort__sched.coarsenow);
    gort__casgstatus(gp, G_RUNNING, G_SYSCALL);
    uint32_t tick = pp->syscalltick + 1;
    /* Relaxed: sysmon reads it as a hint; the status word decides. */
    store_relaxed(&pp->syscalltick, tick);
    uint32_t word = P_SYSCALL | (tick << 4);
    /* Work waiting behind us: note when the syscall began, so that sysmon
     * can hand the P off after one round instead of two (it need not see
     * the same syscall twice to know it has lasted).  Only then: a clock
     * read costs ~25 ns. */
    bool work = how == 1 && !gort__runqempty(pp);
    int64_t began = work ? gort_nanotime() : 0;
    store_relaxed(&pp->syscallwhen, began);
    mp->oldp = pp;
    mp->oldpstatus = word;
    if (how == 2) { /* on this thread, from the signal handler */
        store_relaxed(&mp->insyscall, how); /* sysmon reads it */
        gort__setm_fast(NULL); /* gort__getm must finish it */
    } else {
        /* Seq-cst, then urgpending: no preemption signal lands in the
         * call (gort__urg_wait). */
        store_seqcst(&mp->insyscall, how);
        if (GORT_UNLIKELY(load_seqcst(&mp->urgpending)))
            gort__urg_wait(mp);
    }
    store_relaxed(&mp->p, NULL);
    store_relaxed(&pp->m, NULL);
    /* Seq-cst: publishes oldp and the G's status to whoever CASes the P
     * away (retake, stop-the-world), and orders this store before the
     * gcwaiting load below against stw_stop's store of gcwaiting and its
     * scan of the statuses (each side sees the other). */
    store_seqcst(&pp->status, word);
    if (GORT_UNLIKELY(load_seqcst(&gort__sched.gcwaiting)))
        entersyscall_gcwait(mp, pp, word);
    else if (work)
        syscall_watch_start(mp, pp, word, began);
}

/* Record where the goroutine entered its syscall, for dumps: the caller
 * of the function whose frame record is fp (gort_entersyscall's own,
 * which the syscall's own frames overwrite once it returns): that
 * caller's frame record and the return address into it.  Mirrors
 * reentersyscall's save of syscallpc and syscallsp. */
static inline void syscall_record(struct g *gp, uintptr_t fp)
{
    gp->syscallfp = ((const uintptr_t *)fp)[0];
    gp->syscallpc = ((const uintptr_t *)fp)[1];
    gp->syscalltrap = false;
}

/* Not inlined, so that the frame recorded is always its caller's:
 * dumps show gort_read, or the program's function, on top. */
GORT_NOINLINE void gort_entersyscall(void)
{
    GORT_SAN_SCOPE();
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->foreign || mp->insyscall)
        return;
    syscall_record(gp, (uintptr_t)__builtin_frame_address(0));
    gort__entersyscall_m(mp, gp, 1);
}

GORT_NOINLINE void gort_entersyscallblock(void)
{
    GORT_SAN_SCOPE();
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->foreign || mp->insyscall)
        return;
    mp->locks++;
    syscall_record(gp, (uintptr_t)__builtin_frame_address(0));
    gp->waitsince = load_relaxed(&gort__sched.coarsenow);
    gort__casgstatus(gp, G_RUNNING, G_SYSCALL);
    struct p *pp = mp->p;
    store_relaxed(&pp->syscalltick, pp->syscalltick + 1);
    mp->oldp = NULL; /* nothing to take back: exitsyscall looks for any P */
    /* Seq-cst, then urgpending: see gort__urg_wait. */
    store_seqcst(&mp->insyscall, 1);
    if (GORT_UNLIKELY(load_seqcst(&mp->urgpending)))
        gort__urg_wait(mp);
    gort__releasep(mp);
    mp->locks--;
    /* Go's entersyscallblock_handoff. */
    gort__stat_add(&mp->nhandoffs, 1);
    gort__handoffp(pp);
}

/* On g0: no P for the G coming back from its syscall; queue it and park
 * the M.  Mirrors exitsyscall0 (proc.go). */
static struct g *exitsyscall0(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_SYSCALL, G_RUNNABLE);
    gort__dropg(mp);
    gort__lock(&gort__sched.lock);
    struct p *pp = load_relaxed(&gort__sched.gcwaiting)
                       ? NULL
                       : gort__pidleget_locked();
    if (!pp)
        gort__globrunqput_locked(gp);
    gort__unlock(&gort__sched.lock);
    if (pp) {
        gort__acquirep(mp, pp);
        return gp; /* run it at once (run_g executes what we return) */
    }
    if (load_relaxed(&mp->lockedg)) {
        /* Wired to this M: wait until a P is handed over with it. */
        gort__stoplockedm(mp);
        return gp;
    }
    gort__stopm_schedule(mp);
    return NULL;
}

void gort__exitsyscall_m(struct m *mp, struct g *gp)
{
    gort__trace_syscall_exit(mp);
    mp->locks++;
    struct p *oldp = mp->oldp;
    mp->oldp = NULL;
    if (mp->insyscall == 2) /* this thread's M (gort__getm_slow) */
        gort__setm_fast(mp);
    store_relaxed(&mp->insyscall, 0);
    /* The fast path: our P is still waiting for us.  Acq-rel: pairs with
     * the seq-cst store of the word; acquiring makes the P's state as the
     * M left it visible. */
    if (oldp && cas_acqrel(&oldp->status, mp->oldpstatus, P_IDLE)) {
        gort__acquirep(mp, oldp);
        gort__casgstatus(gp, G_SYSCALL, G_RUNNING);
        mp->locks--;
        return;
    }
    /* Any idle P (Go's exitsyscallfast_pidle). */
    if (load_relaxed(&gort__sched.npidle) > 0 &&
        !load_relaxed(&gort__sched.gcwaiting)) {
        gort__lock_m(mp, &gort__sched.lock);
        struct p *pp = load_relaxed(&gort__sched.gcwaiting)
                           ? NULL
                           : gort__pidleget_locked();
        gort__unlock_m(mp, &gort__sched.lock);
        if (pp) {
            gort__acquirep(mp, pp);
            gort__casgstatus(gp, G_SYSCALL, G_RUNNING);
            mp->locks--;
            return;
        }
    }
    mp->locks--;
    gort__mcall(exitsyscall0);
}

void gort_exitsyscall(void)
{
    GORT_SAN_SCOPE();
    /* The call's errno survives: nothing on the way changes it (the
     * runtime's lock waits keep it, lock_futex.c) and a switch carries it
     * to whichever thread the G comes back on. */
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || !mp->insyscall)
        return;
    gort__exitsyscall_m(mp, gp);
    gort__preempt_check();
}

/* ---------------------------------------------------------------------------
 * Wrappers.  errno is read before exitsyscall: the G may come back on
 * another thread, whose errno is another variable.
 * ------------------------------------------------------------------------- */

/* The monotonic clock now plus d. */
static struct timespec deadline_after(const struct timespec *d)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += d->tv_sec;
    t.tv_nsec += d->tv_nsec;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

int gort_nanosleep(const struct timespec *req, struct timespec *rem)
{
    GORT_SAN_SCOPE();
    if (!req)
        return -EFAULT;
    if (req->tv_sec < 0 || req->tv_nsec < 0 || req->tv_nsec >= 1000000000L)
        return -EINVAL;
    /* The whole sleep, however often a signal interrupts it: to an
     * absolute deadline, so that a retry does not start the time over. */
    struct timespec until = deadline_after(req);
    int e;
    /* A sleep of known length blocks: hand the P off at once. */
    gort_entersyscallblock();
    do
        e = gort__libc.clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until,
                                       NULL);
    while (e == EINTR);
    gort_exitsyscall();
    if (rem && e == 0)
        rem->tv_sec = rem->tv_nsec = 0;
    return -e;
}

/* Free slots for name lookups: GORT_DNS_THREADS, less the lookups under
 * way (a runtime semaphore's count; gort__dns_fini puts it back for the
 * next gort_main). */
static uint32_t dns_slots = GORT_DNS_THREADS;

int gort__dns_call(int (*fn)(void *), void *arg)
{
    struct m *mp = gort__getm();
    if (!mp || !mp->curg || mp->curg->foreign)
        return fn(arg); /* no goroutine to park: the thread waits */
    gort__semacquire(&dns_slots, WAIT_SEMACQUIRE);
    /* A lookup may take seconds (resolv.conf's timeouts): the P goes to
     * another thread at once. */
    gort_entersyscallblock();
    int r = fn(arg);
    int e = errno;
    gort_exitsyscall();
    gort__semrelease(&dns_slots, false);
    errno = e;
    return r;
}

void gort__dns_fini(void)
{
    dns_slots = GORT_DNS_THREADS;
}

struct gai_args {
    const char *node, *service;
    const struct addrinfo *hints;
    struct addrinfo **res;
};

static int gai_call(void *p)
{
    struct gai_args *a = p;
    return gort__libc.getaddrinfo(a->node, a->service, a->hints, a->res);
}

/* Whether s is NULL or a port number: getaddrinfo reads no file for it. */
static bool numeric_service(const char *s)
{
    if (!s)
        return true;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Whether node is an address in numbers (or NULL, the wildcard or
 * loopback): getaddrinfo answers it without a lookup, at once. */
static bool numeric_node(const char *node)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return !node || inet_pton(AF_INET, node, buf) == 1 ||
           inet_pton(AF_INET6, node, buf) == 1;
}

int gort__getaddrinfo(const char *node, const char *service,
                      const struct addrinfo *hints, struct addrinfo **res)
{
    struct gai_args a = {node, service, hints, res};
    /* Numbers for both (hiredis and libpq pass "127.0.0.1" this way): no
     * file, no network, no thread.  AI_CANONNAME may look the address up
     * by name: not then. */
    if (numeric_node(node) && numeric_service(service) &&
        !(hints && (hints->ai_flags & AI_CANONNAME)))
        return gai_call(&a);
    return gort__dns_call(gai_call, &a);
}

int gort_getaddrinfo(const char *node, const char *service,
                     const struct addrinfo *hints, struct addrinfo **res)
{
    GORT_SAN_SCOPE();
    int r = gort__getaddrinfo(node, service, hints, res);
    if (r == 0)
        return 0;
    /* EAI_SYSTEM means errno's error; EAI_MEMORY is ENOMEM. */
    if (r == EAI_SYSTEM)
        return errno ? -errno : -EIO;
    if (r == EAI_MEMORY)
        return -ENOMEM;
    return GORT_EAI(r);
}

const char *gort_strerror(int err)
{
    if (err == 0)
        return "success";
    if (err == INT_MIN)
        return "unknown error";
    if (err <= -GORT_EAI_BASE - 1)
        return gai_strerror(-(-err - GORT_EAI_BASE));
    const char *s = strerrordesc_np(err < 0 ? -err : err);
    return s ? s : "unknown error";
}

int gort_waitpid(int pid, int *status, int options)
{
    GORT_SAN_SCOPE();
    GORT_SYSCALL_RETRY(pid_t, waitpid(pid, status, options));
}
