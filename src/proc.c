/*
 * proc.c - the scheduler: G, M and P, schedule/findrunnable, spinning,
 * stop-the-world, GOMAXPROCS, and the lifecycle of gort_main.
 *
 * Design (Go's, from proc.go's header): an M runs Go code only while it
 * holds a P.  When an M's G blocks or ends, the M switches to its g0 and
 * runs schedule(), which finds the next runnable G: every 61st tick from
 * the global queue, then runnext and the local ring, then findrunnable's
 * slow path (global batch, stealing from other Ps, and finally parking the
 * M).  A new G goes into runnext, so a spawner hands the CPU to its newest
 * child when it blocks.  Idle Ps are woken sparingly: at most one M spins
 * looking for work at a time from wakep, and at most half the busy Ps'
 * worth of Ms spin at all (2*nmspinning < gomaxprocs-npidle).  The last M
 * to stop spinning re-checks every queue, so no work is stranded while Ps
 * sit idle ("the delicate dance" in proc.go).
 *
 * Stacks and switching: a G switches only to its M's g0 (mcall), and g0
 * switches only to a G (run_g).  The G -> g0 switch saves the G's context
 * first; only then does g0 publish the G (make it runnable, release the
 * park lock), so no other M can resume a G whose registers are still
 * being saved.
 *
 * Invariants:
 *   - mp->p != NULL iff the M may run Gs; pp->m == mp for the P it holds.
 *   - A G in G_RUNNING has gp->m set and is mp->curg of that M.
 *   - nmspinning counts Ms with m->spinning set (plus wakep's reservation
 *     between its CAS and the woken M taking over the count).
 *   - sched.npidle equals the length of sched.pidle; idlepmask mirrors it.
 *   - Runtime code reaches the current M through gort__getm() after every
 *     switch, never through a cached TLS address.
 *
 * Not here: run queues (runq.c), stacks (stack.c), sysmon (sysmon.c),
 * schedtrace and fatal errors (debug.c).
 */
#include "runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


struct schedt gort__sched = {
    .lock = GORT_LOCK_INIT(LOCKRANK_SCHED),
    .gfree_lock = GORT_LOCK_INIT(LOCKRANK_GFREE),
};
struct p **gort__allp;
int32_t gort__gomaxprocs;
int32_t gort__ncpu = 1;
struct m *gort__allm;
gort_lock gort__allglock = GORT_LOCK_INIT(LOCKRANK_ALLG);
gort_lock gort__allplock = GORT_LOCK_INIT(LOCKRANK_ALLP);
struct g **gort__allgs;
uint32_t gort__allglen;
uint32_t gort__idlepmask[GORT_MAX_PROCS / 32];
int64_t gort__runtime_init_time;
uint32_t gort__main_started;
struct gort_debugvars gort__debug;

static uint32_t allgcap;
/* allgs' first array: address space for ALLGS_RESERVE entries, reserved
 * once (MAP_NORESERVE: only the pages written count), so that it grows
 * without copies; a copied array would have to be kept until shutdown
 * for the dumps that read it without the lock, 16 bytes a G at a
 * million.  NULL if the reservation failed (then malloc'd arrays). */
#define ALLGS_RESERVE (1u << 24)
static struct g **allgs_map;
int32_t gort__allp_len;       /* entries of gort__allp allocated (>= procs) */
static uint32_t gort_running;  /* atomic: a gort_main is in progress */
static struct m *m0;           /* the thread that called gort_main */
static int main_status;

/* The current M.  initial-exec TLS: one %fs-relative load, also in the
 * shared library (static TLS is reserved for libraries loaded at start).
 * Read through gort__getm (runtime.h), never directly. */
__thread struct m *gort__tls_m __attribute__((tls_model("initial-exec")));
/* The same M when gort__getm has nothing to finish for it (runtime.h),
 * else NULL: NULL for a foreign thread's M and while the preemption
 * signal has this thread's M in a syscall.  Written only by this thread:
 * gort__setm, the signal handler marking a syscall
 * (gort__entersyscall_m) and gort__getm_slow finishing it
 * (gort__exitsyscall_m). */
__thread struct m *gort__tls_mfast __attribute__((tls_model("initial-exec")));

#if !(defined(__x86_64__) && defined(__GNUC__))
GORT_NOINLINE struct m *gort__getm(void)
{
    struct m *mp = load_relaxed(&gort__tls_mfast);
    /* Keep the compiler from treating this as a pure function whose
     * result can be reused across a context switch. */
    __asm__ __volatile__("" : "+r"(mp)::"memory");
    return gort__getm_finish(mp);
}

/* The fast slot alone (runtime.h, gort__getm_fast): NULL where gort__getm
 * would take its slow path, which may make a thread an extra M. */
GORT_NOINLINE struct m *gort__getm_fastslot(void)
{
    struct m *mp = load_relaxed(&gort__tls_mfast);
    __asm__ __volatile__("" : "+r"(mp)::"memory");
    return mp;
}
#endif

/* The M without side effects: for signal handlers and the extra-M code. */
GORT_NOINLINE struct m *gort__getm_raw(void)
{
    struct m *mp = gort__tls_m;
    __asm__ __volatile__("" : "+r"(mp)::"memory");
    return mp;
}

GORT_NOINLINE void gort__setm(struct m *mp)
{
    gort__tls_m = mp;
    /* Atomic: an inspector may clear it from another thread (rawsys.c). */
    store_relaxed(&gort__tls_mfast, mp && !mp->foreign ? mp : NULL);
}

void gort__setm_fast(struct m *mp)
{
    store_relaxed(&gort__tls_mfast, mp);
}

int *gort_errno_location(void)
{
    return __errno_location();
}

/* errno's address must be recomputed after a switch (glibc declares
 * __errno_location const, so a cached result would name the old thread). */
int *gort__errno_ptr(void)
{
    int *p = &errno;
    __asm__ __volatile__("" : "+r"(p)::"memory");
    return p;
}

/* ---------------------------------------------------------------------------
 * Random numbers: per-M xorshift64+ (Go's fastrand).
 * ------------------------------------------------------------------------- */

uint32_t gort__fastrand(void)
{
    struct m *mp = gort__getm();
    uint32_t s1 = mp->fastrand[0], s0 = mp->fastrand[1];
    s1 ^= s1 << 17;
    s1 = s1 ^ s0 ^ (s1 >> 7) ^ (s0 >> 16);
    mp->fastrand[0] = s0;
    mp->fastrand[1] = s1;
    return s0 + s1;
}

uint32_t gort__fastrandn(uint32_t n)
{
    return (uint32_t)(((uint64_t)gort__fastrand() * n) >> 32);
}

/* ---------------------------------------------------------------------------
 * G status.  Mirrors casgstatus (proc.go).
 * ------------------------------------------------------------------------- */

/* gort__legal[from] has bit `to` set when from -> to is a legal
 * transition (the table beside enum gstatus in runtime.h). */
#define B(s) (1u << (s))
const uint16_t gort__legal[16] = {
    [G_IDLE] = B(G_DEAD),
    [G_DEAD] = B(G_RUNNABLE),
    [G_RUNNABLE] = B(G_RUNNING),
    [G_RUNNING] = B(G_RUNNABLE) | B(G_WAITING) | B(G_SYSCALL) |
                  B(G_PREEMPTED) | B(G_DEAD),
    [G_SYSCALL] = B(G_RUNNING) | B(G_RUNNABLE),
    [G_WAITING] = B(G_RUNNABLE),
    [G_PREEMPTED] = B(G_RUNNABLE),
};
#undef B

/* The cold half of gort__casgstatus: report what was wrong and die. */
void gort__casgstatus_fail(struct g *gp, uint32_t oldval, uint32_t newval)
{
    if (!(oldval < 16 && newval < 16 && ((gort__legal[oldval] >> newval) & 1)))
        gort__throw("casgstatus: bad transition of goroutine %lld from %s "
                    "to %s", (long long)gp->goid, gort__gstatus_name(oldval),
                    gort__gstatus_name(newval));
    gort__throw("casgstatus: goroutine %lld is %s, not %s (wanted %s)",
                (long long)gp->goid, gort__gstatus_name(gort__readgstatus(gp)),
                gort__gstatus_name(oldval), gort__gstatus_name(newval));
}

/* ---------------------------------------------------------------------------
 * Context switching with the sanitizers told about it.
 * ------------------------------------------------------------------------- */

/* Switch from `from` (the running context) to `to`, passing arg; dying
 * says `from` will never run again (it is exiting).  Returns the arg of
 * whoever switches back to `from`.  With a sanitizer in the process the
 * switch is announced to it (san.c). */
static inline void *switch_to(struct g *from, struct g *to, void *arg,
                              bool dying)
{
    if (GORT_UNLIKELY(gort__san))
        return gort__san_switch(from, to, arg, dying);
    return gort__ctx_switch(&from->sched_sp, to->sched_sp, arg);
}

/* First thing a G does when it resumes (or starts): finish the switch
 * that brought it here.  If the previous G handed over directly (not via
 * g0), it left work to do for itself now that its context is saved:
 * queue it, release its park lock, or recycle it.  That work must not run
 * before the switch, or another M could resume a half-saved G. */
static inline void after_switch(struct g *prev)
{
    struct m *mp = gort__getm();
    void (*fn)(struct m *, struct g *) = mp->post_fn;
    if (fn) {
        mp->post_fn = NULL;
        gort__stack_check(prev);
        fn(mp, prev);
    }
}

/* Switch away from the running G gp to `to` (g0 or another G), keeping
 * gp's errno; returns when gp runs again, possibly on another M.  Nothing
 * on the way here changes errno: the runtime's lock waits and wake-ups
 * keep it (lock_futex.c). */
static inline void g_switch(struct m *mp, struct g *gp, struct g *to,
                            bool dying)
{
    int saved_errno = *mp->errnop;
    struct g *prev = switch_to(gp, to, gp, dying);
    mp = gort__getm(); /* maybe another thread now */
    void (*fn)(struct m *, struct g *) = mp->post_fn;
    if (fn) {
        mp->post_fn = NULL;
        gort__stack_check(prev);
        fn(mp, prev);
    }
    /* Last: the hand-off above may make system calls (a futex wake-up)
     * or, under a sanitizer, intercepted calls that set errno. */
    *mp->errnop = saved_errno;
}

/* Run fn(gp) on g0 with gp's context saved: the G -> g0 half of a switch.
 * fn returns NULL to go back to schedule(), or a G to run next at once.
 * Returns when gp is resumed, possibly on another M.  Mirrors mcall. */
static void mcall(struct g *(*fn)(struct g *), bool dying)
{
    struct m *mp = gort__getm_raw();
    struct g *gp = mp->curg;
    mp->mcall_fn = fn;
    g_switch(mp, gp, mp->g0, dying);
}

void gort__mcall(struct g *(*fn)(struct g *))
{
    mcall(fn, false);
}

void gort__dropg(struct m *mp)
{
    struct g *gp = mp->curg;
    /* Relaxed stores: sysmon and schedtrace read these racily. */
    store_relaxed(&gp->m, NULL);
    store_relaxed(&mp->curg, NULL);
}

/* ---------------------------------------------------------------------------
 * P ownership.
 * ------------------------------------------------------------------------- */

void gort__setidlep(int32_t id, bool idle)
{
    uint32_t bit = 1u << (id % 32);
    if (idle)
        or_relaxed(&gort__idlepmask[id / 32], bit);
    else
        and_relaxed(&gort__idlepmask[id / 32], ~bit);
}

/* Associate pp with mp.  Mirrors gort__acquirep/wirep (proc.go). */
void gort__acquirep(struct m *mp, struct p *pp)
{
    if (mp->p || pp->m)
        gort__throw("gort__acquirep: M%lld already has P%d or P%d has an M",
                    (long long)mp->id, mp->p ? mp->p->id : -1, pp->id);
    /* Relaxed: the caller took the P (a list under sched.lock, or a CAS
     * out of P_SYSCALL); this only checks it. */
    uint32_t st = load_relaxed(&pp->status);
    if (st != P_IDLE)
        gort__throw("gort__acquirep: P%d has status %u, want idle", pp->id,
                    st);
    store_relaxed(&mp->p, pp);
    store_relaxed(&pp->sysmon_schedwhen, 0); /* restart sysmon's clock */
    /* Release: sysmon load-acquires pp->m and then reads the M. */
    store_rel(&pp->m, mp);
    store_relaxed(&pp->status, P_RUNNING);
    gort__trace_procstart(mp, pp);
    /* sysmon sleeps deeply while every P is idle; work has resumed.
     * (The npidle change that made this P busy was seq-cst: see
     * deep_sleep in sysmon.c.) */
    gort__sysmon_wake();
}

/* Disassociate mp's P from it and return the P, now idle.  Mirrors
 * releasep (proc.go). */
struct p *gort__releasep(struct m *mp)
{
    struct p *pp = mp->p;
    if (!pp || pp->m != mp)
        gort__throw("releasep: M%lld has P%d whose M is %lld",
                    (long long)mp->id, pp ? pp->id : -1,
                    pp && pp->m ? (long long)pp->m->id : -1LL);
    gort__trace_procstop(mp, pp);
    store_relaxed(&mp->p, NULL);
    store_relaxed(&pp->m, NULL);
    store_relaxed(&pp->status, P_IDLE);
    return pp;
}

/* Idle P list; sched.lock held.  Mirrors pidleput/pidleget. */
void gort__pidleput_locked(struct p *pp)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (!gort__runqempty(pp))
        gort__throw("pidleput: P%d has a non-empty run queue", pp->id);
    pp->link = gort__sched.pidle;
    gort__sched.pidle = pp;
    gort__setidlep(pp->id, true);
    /* Seq-cst: readers of npidle outside the lock (wakep, the spinning
     * limit) see the P on the list once they see the count, and sysmon's
     * deep_sleep handshake needs a total order. */
    xadd_seqcst(&gort__sched.npidle, 1);
}

struct p *gort__pidleget_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct p *pp = gort__sched.pidle;
    if (pp) {
        gort__sched.pidle = pp->link;
        pp->link = NULL;
        gort__setidlep(pp->id, false);
        xadd_seqcst(&gort__sched.npidle, -1); /* see pidleput */
    }
    return pp;
}

/* As pidleget, but if no P is idle, record that a spinning M was wanted
 * so that the next M releasing its P spins instead.  Mirrors
 * pidlegetSpinning (proc.go). */
static struct p *pidlegetspinning_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct p *pp = gort__pidleget_locked();
    if (!pp)
        store_relaxed(&gort__sched.needspinning, 1);
    return pp;
}

/* ---------------------------------------------------------------------------
 * M lifecycle.
 * ------------------------------------------------------------------------- */

static int32_t mcount_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    return (int32_t)(gort__sched.mnext - gort__sched.nmfreed);
}

/* Threads the runtime has made (racy outside sched.lock; for reports). */
int32_t gort__mcount(void)
{
    return (int32_t)(load_relaxed(&gort__sched.mnext) -
                     load_relaxed(&gort__sched.nmfreed));
}

/* Fatal if one more M would pass the thread limit.  sched.lock held.
 * Mirrors checkmcount (proc.go). */
static void checkmcount_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (mcount_locked() > gort__sched.maxmcount) {
        gort__printf(2, "gort: program exceeds %d-thread limit\n",
                     gort__sched.maxmcount);
        gort__fatal("thread exhaustion");
    }
}

static struct m *allocm(void)
{
    struct m *mp = gort__calloc(1, sizeof *mp);
    struct g *g0 = gort__calloc(1, sizeof *g0);
    if (!mp || !g0) {
        gort__free(mp);
        gort__free(g0);
        return NULL;
    }
    mp->g0 = g0;
    mp->cputimer = -1;
    g0->atomicstatus = G_RUNNING;
    return mp;
}

static void freem(struct m *mp)
{
    gort__free(mp->g0);
    gort__free(mp);
}

/* Count one more M and return its id.  sched.lock held.  Mirrors
 * mReserveID: an M about to be created counts as running for checkdead
 * from the moment its creator lets go of the lock. */
static int64_t mreserveid_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    int64_t id = gort__sched.mnext++;
    checkmcount_locked();
    return id;
}

/* Give mp an id (reserved, or a new one when id < 0), seed its random
 * state and publish it on allm.  sched.lock held.  Mirrors mcommoninit. */
static void mcommoninit_id_locked(struct m *mp, int64_t id)
{
    gort__lock_assert_held(&gort__sched.lock);
    mp->id = id >= 0 ? id : mreserveid_locked();
    uint64_t seed = (uint64_t)gort_nanotime() ^ ((uint64_t)mp->id << 32) ^
                    (uint64_t)(uintptr_t)mp;
    mp->fastrand[0] = (uint32_t)(seed | 1);
    mp->fastrand[1] = (uint32_t)(seed >> 32) | 0x9e3779b9u;
    mp->alllink = gort__allm;
    /* Release: schedtrace walks allm without the lock. */
    store_rel(&gort__allm, mp);
}

static void schedule(void);
static struct g *take_lockedwant_locked(struct m *mp);
static struct g *stoplockedm(struct m *mp);
static int64_t newproc_foreign(void (*fn)(void *), void *arg, uintptr_t pc);
static void park_foreign(struct m *mp, struct g *gp,
                         gort__unlockf unlockf, void *lock);
static void ready_slow(struct m *mp, struct g *gp);

/* An M for a runtime thread that runs without a P (sysmon): counted in
 * nmsys so that deadlock detection ignores it. */
struct m *gort__allocm_sys(void)
{
    struct m *mp = allocm();
    if (!mp)
        return NULL;
    gort__lock(&gort__sched.lock);
    mcommoninit_id_locked(mp, -1);
    gort__sched.nmsys++;
    gort__unlock(&gort__sched.lock);
    return mp;
}

/* Set up the current thread as mp: TLS, signal stack, sanitizer fiber
 * (M0 is the program's thread, inside gort_main; the others are gort's
 * own). */
static int mstart_common(struct m *mp)
{
    gort__setm(mp);
    gort__rawsys_thread_start(mp, &gort__tls_mfast);
    mp->errnop = gort__errno_ptr();
    int err = gort__minit(mp);
    if (err)
        return err;
    if (GORT_UNLIKELY(gort__san))
        gort__san_thread_start(mp->g0, !mp->is_m0);
    return 0;
}

/* Thread entry of every M but M0.  Mirrors mstart1 (proc.go). */
static void *mstart(void *arg)
{
    struct m *mp = arg;
    if (mstart_common(mp) != 0)
        gort__throw("mstart: could not set up thread for M%lld",
                    (long long)mp->id);
    /* A spinning start (wakep) set mp->spinning before the thread
     * existed; nmspinning already counts it (Go's mspinning). */
    struct p *pp = mp->nextp;
    mp->nextp = NULL;
    gort__acquirep(mp, pp);
    schedule();
    gort__rawsys_thread_exit(mp);
    gort__unminit(mp);
    gort__setm(NULL);
    if (GORT_UNLIKELY(gort__san))
        gort__san_thread_end(1);
    return NULL;
}

/* Create a new M to run pp, with an id reserved by mreserveid_locked or
 * -1.  Mirrors newm (proc.go). */
static void newm_id(struct p *pp, bool spinning, int64_t id)
{
    struct m *mp = allocm();
    if (!mp)
        gort__fatal("out of memory allocating an M");
    gort__lock(&gort__sched.lock);
    mcommoninit_id_locked(mp, id);
    gort__unlock(&gort__sched.lock);
    mp->nextp = pp;
    mp->spinning = spinning;
    int err = gort__newosproc(mp, mstart);
    if (err)
        gort__fatal("newosproc: cannot create a thread (%s; threads=%d)",
                    strerror(-err), (int)gort__mcount());
}

void gort__newm(struct p *pp, bool spinning)
{
    newm_id(pp, spinning, -1);
}

/* Put mp on the idle list and check for deadlock.  sched.lock held. */
static void mput_locked(struct m *mp)
{
    gort__lock_assert_held(&gort__sched.lock);
    mp->inmidle = true;
    mp->schedlink = gort__sched.midle;
    gort__sched.midle = mp;
    store_relaxed(&gort__sched.nmidle, gort__sched.nmidle + 1);
    gort__checkdead_locked();
}

struct m *gort__mget_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct m *mp = gort__sched.midle;
    if (mp) {
        gort__sched.midle = mp->schedlink;
        store_relaxed(&gort__sched.nmidle, gort__sched.nmidle - 1);
        mp->schedlink = NULL;
        mp->inmidle = false;
    }
    return mp;
}

/* Park the current M until startm hands it a P (or shutdown).  Returns
 * false when the M must exit.  Mirrors stopm (proc.go). */
static bool stopm(struct m *mp)
{
    if (mp->locks)
        gort__throw("stopm: holding locks");
    if (mp->p)
        gort__throw("stopm: holding P%d", mp->p->id);
    if (mp->spinning)
        gort__throw("stopm: spinning");
    gort__trace_mpark(mp);
    gort__lock(&gort__sched.lock);
    if (load_relaxed(&gort__sched.exiting)) {
        /* Shutting down: main_exit_m may already have emptied the idle
         * list (a gcstopm counts its P stopped before it gets here), so
         * nobody would wake us.  Exit instead of parking. */
        gort__unlock(&gort__sched.lock);
        return false;
    }
    struct g *want = take_lockedwant_locked(mp);
    if (GORT_UNLIKELY(want)) {
        /* Our wired G was handed to us while we had no P: take an idle
         * one, or let the G go round the global queue again (whoever
         * takes it hands us a P with it: startlockedm). */
        struct p *pp = gort__pidleget_locked();
        if (pp) {
            store_relaxed(&mp->lockedwant, want);
            gort__unlock(&gort__sched.lock);
            gort__acquirep(mp, pp);
            return true;
        }
        gort__globrunqput_locked(want);
    }
    mput_locked(mp);
    gort__unlock(&gort__sched.lock);
    gort__notesleep(&mp->park);
    gort__noteclear(&mp->park);
    if (mp->exiting)
        return false;
    if (GORT_UNLIKELY(mp->watchp)) {
        /* Woken to watch a syscall (syscall.c): with its P, or back to
         * sleep. */
        if (gort__syscall_watch(mp))
            return true;
        return stopm(mp);
    }
    gort__acquirep(mp, mp->nextp);
    mp->nextp = NULL;
    return true;
}

/* Run some M on pp (an idle P taken from the list when pp is NULL),
 * waking an idle M or creating one.  With spinning, the caller has
 * already counted the M in nmspinning.  Mirrors startm (proc.go). */
static void startm(struct p *pp, bool spinning, bool lockheld)
{
    if (!lockheld)
        gort__lock(&gort__sched.lock);
    if (!pp) {
        if (spinning)
            gort__throw("startm: P required for spinning M");
        pp = gort__pidleget_locked();
        if (!pp) {
            if (!lockheld)
                gort__unlock(&gort__sched.lock);
            return;
        }
    }
    struct m *nmp = gort__mget_locked();
    if (!nmp) {
        int64_t id = mreserveid_locked();
        gort__unlock(&gort__sched.lock);
        newm_id(pp, spinning, id);
        if (lockheld)
            gort__lock(&gort__sched.lock);
        return;
    }
    if (!lockheld)
        gort__unlock(&gort__sched.lock);
    if (nmp->spinning)
        gort__throw("startm: M is spinning");
    if (nmp->nextp)
        gort__throw("startm: M has P");
    if (spinning && !gort__runqempty(pp))
        gort__throw("startm: P has runnable Gs");
    nmp->spinning = spinning;
    nmp->nextp = pp;
    gort__notewakeup(&nmp->park);
}

/* stopm for code outside this file (exitsyscall0): the M parks until it
 * is handed a P; if it must exit instead, schedule() sees that. */
void gort__stopm_schedule(struct m *mp)
{
    (void)stopm(mp);
}

/* ---------------------------------------------------------------------------
 * LockOSThread.  Mirrors lockOSThread, stoplockedm and startlockedm.
 *
 * A wired M runs only its G.  When that G blocks, the M gives its P away
 * and sleeps on its note (stoplockedm), counted in sched.nmidlelocked;
 * when the G is made runnable it goes to a run queue as any G, and the M
 * that takes it from there hands the G to the wired M (startlockedm):
 *
 *   - the wired M sleeps (in stoplockedm, or in stopm on the idle list):
 *     it gets the taker's P with the G (m->lockedwant), and the taker
 *     parks;
 *   - it is awake (about to sleep, or, for M0 asked for by the main
 *     goroutine, still running other Gs): the G waits in its lockedwant
 *     slot, and the wired M takes it before it next sleeps or at its next
 *     schedule (its running G is asked to yield).
 *
 * All of it under sched.lock, so that a wired M never sleeps with a G in
 * its slot.  Direct G-to-G hand-offs never involve a wired G or a wired M
 * (pick_handoff).
 * ------------------------------------------------------------------------- */

/* Take the G waiting for mp, if any.  sched.lock held. */
static struct g *take_lockedwant_locked(struct m *mp)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct g *gp = mp->lockedwant;
    if (gp)
        store_relaxed(&mp->lockedwant, NULL);
    return gp;
}

/* The wired G of mp cannot run: give the P away and sleep until a P comes
 * with the G.  Returns the G to run (mp holding a P), or NULL when the M
 * must exit (shutdown). */
static struct g *stoplockedm(struct m *mp)
{
    struct g *wired = load_relaxed(&mp->lockedg);
    if (!wired || load_relaxed(&wired->lockedm) != mp)
        gort__throw("stoplockedm: inconsistent locking");
    gort__lock(&gort__sched.lock);
    struct g *gp = take_lockedwant_locked(mp);
    if (gp && mp->p) {
        gort__unlock(&gort__sched.lock);
        return gp;
    }
    /* Handed its G with no P to run it on: an M that took the G from a
     * run queue while this one, out of a syscall without a P, had queued
     * it and not yet gone to sleep (startlockedm found it awake).  Back
     * to the queue: the next M to take it finds this one asleep and hands
     * it a P. */
    if (gp)
        gort__globrunqput_locked(gp);
    mp->lockedsleep = true;
    gort__unlock(&gort__sched.lock);
    if (gp)
        gort__wakep();
    if (mp->p) {
        struct p *pp = gort__releasep(mp);
        gort__handoffp(pp);
    }
    gort__lock(&gort__sched.lock);
    /* Counted idle only once its P is handed off, as in Go's
     * stoplockedm: until then that P, released and not yet idle, may hold
     * runnable Gs, and another M's checkdead must see this M running. */
    if (mp->lockedsleep) {
        gort__sched.nmidlelocked++;
        mp->lockedcounted = true;
    }
    gort__checkdead_locked();
    bool exiting = load_relaxed(&gort__sched.exiting);
    gort__unlock(&gort__sched.lock);
    if (!exiting) {
        gort__notesleep(&mp->park);
        gort__noteclear(&mp->park);
    }
    gort__lock(&gort__sched.lock);
    if (mp->lockedsleep) { /* nobody woke us: shutdown */
        gort__sched.nmidlelocked -= mp->lockedcounted;
        mp->lockedsleep = mp->lockedcounted = false;
    }
    gp = take_lockedwant_locked(mp);
    gort__unlock(&gort__sched.lock);
    if (!gp || mp->exiting || load_relaxed(&gort__sched.exiting))
        return NULL;
    gort__acquirep(mp, mp->nextp);
    mp->nextp = NULL;
    return gp;
}

bool gort__stoplockedm(struct m *mp)
{
    struct g *gp = stoplockedm(mp);
    if (gp && gp != load_relaxed(&mp->lockedg))
        gort__throw("stoplockedm: handed a G wired elsewhere");
    return gp != NULL;
}

static void unlink_midle_locked(struct m *mp)
{
    gort__lock_assert_held(&gort__sched.lock);
    struct m **pp = &gort__sched.midle;
    while (*pp != mp)
        pp = &(*pp)->schedlink;
    *pp = mp->schedlink;
    mp->schedlink = NULL;
    mp->inmidle = false;
    store_relaxed(&gort__sched.nmidle, gort__sched.nmidle - 1);
}

/* gp, just taken from a run queue, is wired to another M: hand it over.
 * Returns false when the caller must exit; otherwise the caller goes on
 * scheduling (holding a P again).  Mirrors startlockedm (proc.go). */
static bool startlockedm(struct m *mp, struct g *gp)
{
    struct m *lm = gp->lockedm;
    if (lm == mp)
        gort__throw("startlockedm: locked to me");
    gort__lock(&gort__sched.lock);
    if (lm->lockedwant)
        gort__throw("startlockedm: M%lld already has a G waiting",
                    (long long)lm->id);
    store_relaxed(&lm->lockedwant, gp);
    bool asleep = lm->lockedsleep || lm->inmidle;
    if (asleep) {
        if (lm->inmidle)
            unlink_midle_locked(lm);
        if (lm->lockedsleep) {
            gort__sched.nmidlelocked -= lm->lockedcounted;
            lm->lockedsleep = lm->lockedcounted = false;
        }
        lm->nextp = gort__releasep(mp);
    }
    gort__unlock(&gort__sched.lock);
    if (!asleep) {
        /* It takes gp at its next schedule: make that soon. */
        struct g *cur = load_acq(&lm->curg);
        if (cur)
            store_relaxed(&cur->preempt, 1);
        gort__poller_wake(); /* it may sleep as the poller */
        return true;
    }
    gort__notewakeup(&lm->park);
    return stopm(mp);
}

/* The current G wires itself to the current M.  Mirrors dolockOSThread. */
static void dolock(struct m *mp, struct g *gp)
{
    store_relaxed(&mp->lockedg, gp);
    store_relaxed(&gp->lockedm, mp);
}

/* On g0: the main goroutine asked to be wired while on another M than
 * M0: hand it to M0 (through startlockedm, as if taken from a queue). */
static struct g *lock_to_m0(struct g *gp)
{
    struct m *mp = gort__getm_raw();
    gort__casgstatus(gp, G_RUNNING, G_RUNNABLE);
    gort__dropg(mp);
    /* Under sched.lock: M0's own G may be wiring itself right now. */
    gort__lock(&gort__sched.lock);
    bool taken = load_relaxed(&m0->lockedg) || m0->dead || m0->exiting;
    if (!taken) {
        m0->lockedext = 1;
        store_relaxed(&m0->lockedg, gp);
        store_relaxed(&gp->lockedm, m0);
    }
    gort__unlock(&gort__sched.lock);
    if (taken) {
        /* M0 is wired to another G: stay on this thread instead. */
        mp->lockedext = 1;
        dolock(mp, gp);
        return gp;
    }
    (void)startlockedm(mp, gp); /* false (shutdown): schedule() sees it */
    return NULL;
}

void gort_lock_os_thread(void)
{
    GORT_SAN_SCOPE();
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->foreign)
        return; /* a thread of its own already */
    if (mp->lockedext > 0 || mp->lockedint > 0) {
        mp->lockedext++;
        return;
    }
    if (gp->is_main && !mp->is_m0) {
        /* The main goroutine belongs on the main thread. */
        mcall(lock_to_m0, false);
        return;
    }
    if (mp->is_m0)
        gort__lock(&gort__sched.lock); /* see lock_to_m0 */
    if (!load_relaxed(&mp->lockedg)) {
        mp->lockedext = 1;
        dolock(mp, gp);
    }
    if (mp->is_m0)
        gort__unlock(&gort__sched.lock);
    /* M0 already promised to the main goroutine: move on and retry. */
    if (load_relaxed(&mp->lockedg) != gp) {
        gort_gosched();
        gort_lock_os_thread();
    }
}

void gort_unlock_os_thread(void)
{
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->foreign || mp->lockedext == 0 ||
        load_relaxed(&mp->lockedg) != gp)
        return;
    if (--mp->lockedext == 0 && mp->lockedint == 0) {
        store_relaxed(&mp->lockedg, NULL);
        store_relaxed(&gp->lockedm, NULL);
    }
}

void gort__startm_idle(void)
{
    startm(NULL, false, false);
}

/* Hand off pp from an M that is blocking or exiting: start an M for it if
 * there is work, else put it on the idle list.  Mirrors handoffp. */
void gort__handoffp(struct p *pp)
{
    if (!gort__runqempty(pp) || load_relaxed(&gort__sched.runqsize) != 0) {
        startm(pp, false, false);
        return;
    }
    /* No local work: if nobody spins or idles, start a spinning M so that
     * work arriving later is found. */
    if (load_relaxed(&gort__sched.nmspinning) +
                load_relaxed(&gort__sched.npidle) == 0 &&
        cas_acqrel(&gort__sched.nmspinning, 0, 1)) {
        store_relaxed(&gort__sched.needspinning, 0);
        startm(pp, true, false);
        return;
    }
    gort__lock(&gort__sched.lock);
    if (load_relaxed(&gort__sched.gcwaiting)) {
        store_relaxed(&pp->status, P_GCSTOP);
        if (--gort__sched.stopwait == 0)
            gort__notewakeup(&gort__sched.stopnote);
        gort__unlock(&gort__sched.lock);
        return;
    }
    if (gort__sched.runqsize != 0) {
        gort__unlock(&gort__sched.lock);
        startm(pp, false, false);
        return;
    }
    gort__pidleput_locked(pp);
    gort__unlock(&gort__sched.lock);
}

/*
 * The spinning handshake (Go's "delicate dance", findRunnable).  A
 * submitter queues work and then calls wakep, which looks at npidle and
 * nmspinning; an M that stops spinning decrements nmspinning and then
 * looks at every queue again (findrunnable_drop).  Each side writes, then
 * reads what the other wrote: a StoreLoad pattern, which acquire and
 * release alone do not order.  Why acq_rel is enough here, source by
 * source:
 *
 *   - The global queue: the submitter puts under sched.lock and the
 *     dropping M re-checks under sched.lock.  If the put comes first, the
 *     re-check sees it.  If the re-check comes first, the M's decrement
 *     (before it took the lock) happens before the submitter's critical
 *     section, so the wakep that follows the put sees the decremented
 *     nmspinning, and the M's P already in the idle list (pidleput, also
 *     under the lock), and starts an M.
 *   - A P's own ring: the submitter is the P's owner, running, and puts
 *     with a release store of runqtail; the dropping M reads every ring
 *     after its decrement.  Here both sides may miss (the owner's store
 *     still in its store buffer while it reads an old nmspinning, the M's
 *     read of the ring before the store drains).  Nothing is lost: the
 *     work sits on a running P whose owner runs it at its next schedule,
 *     or another M steals it when it next looks; the window costs only
 *     parallelism for a moment.  Go's runqput and wakep leave the same
 *     window (a release store and plain loads).
 *   - Timers and the network: the poller's sleep has its own seq-cst
 *     handshake (polluntil against wakenetpoller, time.c), which does not
 *     depend on nmspinning.
 *
 * The RMWs on nmspinning are acq_rel so that the count itself is exact
 * (each decrement pairs with one increment; a negative count throws).
 */

/* Try to put one more P to work, with a spinning M.  Mirrors wakep. */
void gort__wakep(void)
{
    /* No idle P: nothing to wake (Go 1.19's early exit; a busy M will
     * find the work itself). */
    if (load_relaxed(&gort__sched.npidle) == 0)
        return;
    /* Only one M spins up from wakep at a time: the CAS reserves the
     * spinning slot that the started M then owns. */
    if (load_relaxed(&gort__sched.nmspinning) != 0 ||
        !cas_acqrel(&gort__sched.nmspinning, 0, 1))
        return;
    struct m *mp = gort__getm();
    mp->locks++;
    gort__lock(&gort__sched.lock);
    struct p *pp = pidlegetspinning_locked();
    if (!pp) {
        if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
            gort__throw("wakep: negative nmspinning");
        gort__unlock(&gort__sched.lock);
        mp->locks--;
        return;
    }
    gort__unlock(&gort__sched.lock);
    startm(pp, true, false);
    mp->locks--;
}

static void become_spinning(struct m *mp)
{
    mp->spinning = true;
    xadd_acqrel(&gort__sched.nmspinning, 1);
    store_relaxed(&gort__sched.needspinning, 0);
}

/* The current M found work and stops spinning; if it was the last
 * spinning M, start another so that more work is looked for.  Mirrors
 * resetspinning (proc.go). */
static void resetspinning(struct m *mp)
{
    mp->spinning = false;
    if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
        gort__throw("resetspinning: negative nmspinning");
    gort__wakep();
}

/* ---------------------------------------------------------------------------
 * Stop-the-world.
 * ------------------------------------------------------------------------- */

/* Stop the current M's P for a pending stop-the-world.  Mirrors gcstopm. */
static bool gcstopm(struct m *mp)
{
    if (mp->spinning) {
        mp->spinning = false;
        if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
            gort__throw("gcstopm: negative nmspinning");
    }
    struct p *pp = gort__releasep(mp);
    gort__lock(&gort__sched.lock);
    store_relaxed(&pp->status, P_GCSTOP);
    if (--gort__sched.stopwait == 0)
        gort__notewakeup(&gort__sched.stopnote);
    gort__unlock(&gort__sched.lock);
    return stopm(mp);
}

/* ---------------------------------------------------------------------------
 * Finding work.
 * ------------------------------------------------------------------------- */

/* Steal order: all Ps visited once in a random order generated by a
 * random start and a stride coprime to the count.  Mirrors randomOrder. */
static uint32_t coprimes[GORT_MAX_PROCS];
static uint32_t ncoprimes, coprime_count;

static uint32_t gcd(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void gort__steal_order_reset(uint32_t count)
{
    coprime_count = count;
    ncoprimes = 0;
    for (uint32_t i = 1; i <= count; i++)
        if (gcd(i, count) == 1)
            coprimes[ncoprimes++] = i;
}

/* Look for a G to steal: 4 passes over all Ps in random order, taking
 * half of a victim's ring; the last pass may take its runnext.  Sets
 * *newwork when a stop-the-world is pending.  Mirrors stealWork. */
static struct g *stealwork(struct m *mp, struct p *pp, bool *newwork)
{
    uint32_t n = (uint32_t)load_acq(&gort__gomaxprocs);
    if (n != coprime_count)
        return NULL; /* resizing; the caller re-checks */
    for (int i = 0; i < GORT_STEAL_TRIES; i++) {
        bool last = i == GORT_STEAL_TRIES - 1;
        uint32_t r = gort__fastrand();
        uint32_t pos = r % n, inc = coprimes[r % ncoprimes];
        for (uint32_t k = 0; k < n; k++, pos = (pos + inc) % n) {
            if (load_relaxed(&gort__sched.gcwaiting)) {
                *newwork = true;
                return NULL;
            }
            struct p *p2 = gort__allp_load()[pos];
            if (p2 == pp)
                continue;
            if (last && load_relaxed(&p2->timers.minwhen) != 0) {
                /* Run the victim's due timers for it (it may be idle or
                 * busy in a long G); what they ready lands on our P. */
                gort__timers_check(p2, 0);
                bool inherit;
                struct g *gp = gort__runqget(pp, &inherit);
                if (gp)
                    return gp;
            }
            if (gort__isidlep((int32_t)pos))
                continue;
            struct g *gp = gort__runqsteal(pp, p2, last);
            if (gp) {
                gort__trace_steal(mp, p2);
                return gp;
            }
        }
    }
    return NULL;
}

/* With no P of our own: is there a non-idle P with local work?  If so
 * take an idle P to go steal it.  Mirrors checkRunqsNoP (proc.go). */
static struct p *checkrunqsnop(void)
{
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++) {
        struct p *p2 = gort__allp_load()[i];
        if (!gort__isidlep(i) && !gort__runqempty(p2)) {
            gort__lock(&gort__sched.lock);
            struct p *pp = pidlegetspinning_locked();
            gort__unlock(&gort__sched.lock);
            return pp;
        }
    }
    return NULL;
}

/* Take the next G the way schedule() would, but only what is at hand:
 * NULL when the slow path (findrunnable: stealing, parking, a pending
 * stop-the-world) is needed.  When it took from the global queue it keeps
 * sched.lock held and sets *locked. */
static inline __attribute__((always_inline)) struct g *
pick_fast(struct m *mp, struct p *pp, bool *inherit, bool *locked,
          bool global_turn)
{
    struct g *gp;
    *inherit = false;
    *locked = false;
    if (load_relaxed(&gort__sched.gcwaiting))
        return NULL;
    bool global = load_relaxed(&gort__sched.runqsize) > 0;
    /* Every 61st schedule, the global queue's turn (Go's fairness check
     * for the global queue against the local ones), its two parts in
     * turn; and when the caller gives it its turn (a yield on 1 P).  A G
     * in runnext (just readied: by its timer, by a channel partner) runs
     * before the 61-tick turn, which the next pick then takes: taken
     * first, the turn would make it wait out a whole time slice of the
     * global queue's head. */
    if (global && (global_turn || pp->globowed ||
                   pp->schedtick % GORT_GLOBAL_CHECK_TICKS == 0)) {
        if (!global_turn && !pp->globowed && load_relaxed(&pp->runnext)) {
            pp->globowed = true;
        } else {
            pp->globowed = false;
            gort__lock_m(mp, &gort__sched.lock);
            if ((gp = gort__globrunqget_turn_locked(pp))) {
                *locked = true;
                return gp;
            }
            gort__unlock_m(mp, &gort__sched.lock);
        }
    }

    /* Owner's view of its own queue: relaxed loads suffice to see that it
     * is empty (thieves only ever make it emptier). */
    if ((load_relaxed(&pp->runnext) ||
         load_relaxed(&pp->runqhead) != pp->runqtail) &&
        (gp = gort__runqget(pp, inherit)))
        return gp;
    if (global) {
        gort__lock_m(mp, &gort__sched.lock);
        if ((gp = gort__globrunqget_locked(pp, 0))) {
            *locked = true;
            return gp;
        }
        gort__unlock_m(mp, &gort__sched.lock);
    }
    return NULL;
}

/* pick_fast for the direct hand-offs (park, gosched, goexit): NULL also
 * when a timer of this P is due, so that it runs on g0 first
 * (findrunnable); a stream of hand-offs could hold it back otherwise. */
static GORT_NOINLINE void unpick_locked_g(struct m *mp, struct p *pp,
                                           struct g *gp, bool locked)
{
    if (locked)
        gort__unlock_m(mp, &gort__sched.lock);
    /* Back at the front: schedule() takes it next and hands it over. */
    gort__runqput(pp, gp, true);
}

static inline __attribute__((always_inline)) struct g *
pick_handoff(struct m *mp, struct p *pp, bool *inherit, bool *locked,
             bool global_turn)
{
    /* m->locks from here until g_handoff has prepared the next G (then
     * post_fn keeps the signal out): this code holds pp and reads the
     * clock, a system call where there is no vDSO, and the preemption
     * signal must never take it for a blocking call of the program's own
     * and hand pp to another M (preempt.c, "unwrapped blocking calls"). */
    mp->locks++;
    /* Relaxed: a hint, re-read under the heap's lock.  A wired M (the
     * outgoing G is wired, or the main goroutine wants M0) goes through
     * schedule() too. */
    int64_t tw = load_relaxed(&pp->timers.minwhen);
    if (tw != 0) {
        int64_t now = gort_nanotime();
        if (now >= tw) {
            *inherit = *locked = false;
            mp->locks--;
            return NULL;
        }
        /* None due: a check as gort__timers_check's (sysmon's clock of
         * the next G's run; relaxed, a hint). */
        store_relaxed(&pp->timers.checked, now);
    }
    if (GORT_UNLIKELY(load_relaxed(&mp->lockedg))) {
        *inherit = *locked = false;
        mp->locks--;
        return NULL;
    }
    struct g *gp = pick_fast(mp, pp, inherit, locked, global_turn);
    if (GORT_UNLIKELY(gp && gp->lockedm)) {
        unpick_locked_g(mp, pp, gp, *locked);
        *inherit = *locked = false;
        gp = NULL;
    }
    if (!gp)
        mp->locks--;
    return gp; /* non-NULL: g_handoff drops the count */
}

/* The part of findrunnable that looks without giving up the P.  Returns a
 * G, or NULL with *again set when the search must restart. */
static struct g *findrunnable_fast(struct m *mp, struct p *pp, bool *inherit,
                                   bool *again)
{
    /* The 61-tick global check, runnext, the ring, a global batch: the
     * same order as the direct hand-off takes (pick_fast). */
    bool locked;
    struct g *gp = pick_fast(mp, pp, inherit, &locked, false);
    if (locked)
        gort__unlock_m(mp, &gort__sched.lock);
    if (gp)
        return gp;
    /* Network readiness, without blocking, before stealing (Go's
     * findRunnable): only when goroutines wait on descriptors and no M
     * is blocked in epoll already (it would get the events).  Not when
     * every other P is idle: there is nothing to steal, so this M goes
     * on to block in epoll as the poller, which returns at once with
     * whatever is ready (a server at partial load would otherwise make
     * two epoll calls for every idle spell). */
    int32_t procs = load_acq(&gort__gomaxprocs);
    if (gort__netpoll_waiters() > 0 &&
        load_relaxed(&gort__sched.npidle) < procs - 1) {
        int64_t last = load_seqcst(&gort__sched.lastpoll);
        if (last != 0) {
            struct gqueue q;
            int32_t n = gort__netpoll(0, &q);
            cas_acqrel(&gort__sched.lastpoll, last, gort_nanotime());
            if (n > 0) {
                gp = gort__gqueue_pop(&q);
                gort__injectglist(&q, n - 1);
                return gp;
            }
        }
    }
    if (mp->spinning || 2 * load_relaxed(&gort__sched.nmspinning) <
                            procs - load_relaxed(&gort__sched.npidle)) {
        if (!mp->spinning)
            become_spinning(mp);
        bool newwork = false;
        if ((gp = stealwork(mp, pp, &newwork)))
            return gp;
        if (newwork) {
            *again = true;
            return NULL;
        }
    }
    return NULL;
}

/* Give up the P and park, re-checking for work on the way so none is
 * stranded.  Returns a G (with the M holding a P again), or NULL with the
 * M either holding a P to search again or told to exit (*exit). */
static struct g *findrunnable_drop(struct m *mp, struct p *pp, bool *exit)
{
    gort__lock(&gort__sched.lock);
    if (load_relaxed(&gort__sched.gcwaiting)) {
        gort__unlock(&gort__sched.lock);
        return NULL;
    }
    if (gort__sched.runqsize != 0) {
        struct g *gp = gort__globrunqget_locked(pp, 0);
        gort__unlock(&gort__sched.lock);
        return gp;
    }
    if (!mp->spinning && load_relaxed(&gort__sched.needspinning)) {
        /* A wakep found no idle P: spin instead of idling (the delicate
         * dance in proc.go). */
        become_spinning(mp);
        gort__unlock(&gort__sched.lock);
        return NULL;
    }
    gort__releasep(mp);
    gort__pidleput_locked(pp);
    gort__unlock(&gort__sched.lock);

    if (mp->spinning) {
        /* The last M to stop spinning re-checks every queue: a G may have
         * been queued after our checks while wakep saw us spinning and did
         * nothing. */
        mp->spinning = false;
        if (xadd_acqrel(&gort__sched.nmspinning, -1) < 0)
            gort__throw("findrunnable: negative nmspinning");
        gort__lock(&gort__sched.lock);
        if (gort__sched.runqsize != 0) {
            struct p *p2 = pidlegetspinning_locked();
            if (p2) {
                struct g *gp = gort__globrunqget_locked(p2, 0);
                gort__unlock(&gort__sched.lock);
                gort__acquirep(mp, p2);
                become_spinning(mp);
                return gp;
            }
        }
        gort__unlock(&gort__sched.lock);
        struct p *p2 = checkrunqsnop();
        if (p2) {
            gort__acquirep(mp, p2);
            become_spinning(mp);
            return NULL;
        }
    }
    /* Sleep until the next timer of any P, or a descriptor's readiness,
     * as the one poller M (Go's blocking netpoll); the others stop. */
    int64_t until = gort__timers_earliest();
    if ((until != 0 || gort__netpoll_waiters() > 0) &&
        !load_relaxed(&gort__sched.exiting) &&
        xchg_seqcst(&gort__sched.lastpoll, 0) != 0) {
        struct gqueue ready;
        int32_t nready = gort__netpoll_sleep(until, &ready);
        /* Seq-cst: pairs with wakenetpoller's load of lastpoll. */
        store_seqcst(&gort__sched.lastpoll, gort_nanotime());
        gort__lock(&gort__sched.lock);
        struct p *p2 = load_relaxed(&gort__sched.gcwaiting)
                           ? NULL
                           : gort__pidleget_locked();
        gort__unlock(&gort__sched.lock);
        if (!p2) {
            gort__injectglist(&ready, nready);
        } else {
            /* With a P, the first readied goroutine is ours to run and
             * the rest are injected (one per other idle P globally, with
             * an M for each, the others on our P): a single readiness
             * wakes no other thread (Go's findRunnable does the same). */
            gort__acquirep(mp, p2);
            struct g *gp = nready > 0 ? gort__gqueue_pop(&ready) : NULL;
            if (nready > 1)
                gort__injectglist(&ready, nready - 1);
            /* Run what is due everywhere now (then gp, or search again). */
            int32_t n = load_acq(&gort__gomaxprocs);
            int64_t now = gort_nanotime();
            for (int32_t i = 0; i < n; i++)
                gort__timers_check(gort__allp_load()[i], now);
            return gp;
        }
    }
    if (!stopm(mp))
        *exit = true;
    return NULL;
}

/* Find a runnable G, parking the M while there is none.  Returns NULL
 * only when the M must exit.  Mirrors findRunnable (proc.go). */
static struct g *findrunnable(struct m *mp, bool *inherit)
{
    for (;;) {
        if (load_relaxed(&gort__sched.exiting) && !mp->p)
            return NULL;
        if (GORT_UNLIKELY(load_relaxed(&mp->lockedg))) {
            /* Wired while we searched (M0, for the main goroutine). */
            *inherit = false;
            return stoplockedm(mp);
        }
        if (load_relaxed(&gort__sched.gcwaiting)) {
            if (!gcstopm(mp))
                return NULL;
            continue;
        }
        struct p *pp = mp->p;
        /* This P's due timers first: what they ready is found below. */
        gort__timers_check(pp, 0);
        bool again = false;
        struct g *gp = findrunnable_fast(mp, pp, inherit, &again);
        if (gp || again) {
            if (gp)
                return gp;
            continue;
        }
        bool exit = false;
        *inherit = false;
        gp = findrunnable_drop(mp, pp, &exit);
        if (exit)
            return NULL;
        if (gp)
            return gp;
    }
}

/* ---------------------------------------------------------------------------
 * Running Gs on g0.
 * ------------------------------------------------------------------------- */

static void gostart(void *prev);

/* Make gp, taken from a run queue, the M's current G.  Mirrors the first
 * half of execute (proc.go). */
static inline __attribute__((always_inline)) void
execute_prep(struct m *mp, struct g *gp, bool inherit, enum gtrace t)
{
    if (!gp->sched_sp) {
        /* First run: take the hottest free stack of this P (stack.c,
         * "Per-P stack caches and reservations"); the G's reservation
         * then joins this P's batch. */
        struct p *pp = mp->p;
        if (gort__stackcache_get(&pp->stackcache, &gp->stack) == 0) {
            if (++pp->stackres > 2 * GORT_STACKRES_BATCH) {
                gort__stackunreserve(GORT_STACKRES_BATCH);
                pp->stackres -= GORT_STACKRES_BATCH;
            }
        } else {
            gort__stackcache_refill_reserved(&pp->stackcache, &gp->stack);
        }
        gp->sched_sp = gort__ctx_make((void *)gp->stack.hi, gostart,
                                      &gp->fpctl);
    }
    /* A new stretch of execution (rawsys.c).  Relaxed store: inspectors
     * on other threads read it. */
    store_relaxed(&mp->nexecute, mp->nexecute + 1);
    /* Release: sysmon load-acquires curg and then touches the G, whose
     * memory another thread may have initialised. */
    store_rel(&mp->curg, gp);
    store_relaxed(&gp->m, mp);
    gort__casgstatus_t(gp, G_RUNNABLE, G_RUNNING, t);
    gp->waitsince = 0;
    if (inherit) {
        /* Same time slice: a pending request for it holds for gp. */
        store_relaxed(&gp->preempt, load_relaxed(&mp->p->preempt));
    } else {
        store_relaxed(&gp->preempt, 0);
        store_relaxed(&mp->p->preempt, 0);
    }
    if (!inherit)
        store_relaxed(&mp->p->schedtick, mp->p->schedtick + 1);
}

/* Run gp on the current M, and whatever its mcall functions hand back
 * directly, until one returns to the scheduler.  g0 only.  Mirrors
 * execute (proc.go). */
static void run_g(struct m *mp, struct g *gp, bool inherit)
{
    for (;;) {
        execute_prep(mp, gp, inherit, GT_CHECK);
        /* arg NULL: no handover work for the G to do (after_switch). */
        struct g *from = switch_to(mp->g0, gp, NULL, false);
        gort__stack_check(from);
        struct g *(*fn)(struct g *) = mp->mcall_fn;
        mp->mcall_fn = NULL;
        gp = fn(from);
        if (!gp)
            return;
        inherit = true;
    }
}

/* A wired G exited without unlocking: its thread ends with it (Go's
 * mexit), its P goes to another M.  M0 stays (gort_main returns on it).
 * Returns false when the M must exit. */
static bool mexit_wired(struct m *mp)
{
    mp->exitlocked = false;
    if (mp->is_m0)
        return true;
    struct p *pp = gort__releasep(mp);
    gort__handoffp(pp);
    gort__lock(&gort__sched.lock);
    gort__sched.nmfreed++;
    mp->dead = true;
    gort__checkdead_locked();
    gort__unlock(&gort__sched.lock);
    return false;
}

/* One round of scheduling after another, on g0, until shutdown.
 * Mirrors schedule (proc.go). */
static void schedule(void)
{
    struct m *mp = gort__getm_raw(); /* g0 never changes thread */
    for (;;) {
        if (mp->locks)
            gort__throw("schedule: holding locks");
        /* Relaxed: another M wires the main goroutine to M0 (lock_to_m0)
         * and hands it over through startlockedm's note. */
        if (GORT_UNLIKELY(load_relaxed(&mp->lockedg))) {
            /* Wired: run only our G, when it is handed to us. */
            struct g *lg = stoplockedm(mp);
            if (!lg)
                return;
            run_g(mp, lg, false);
            if (GORT_UNLIKELY(mp->exitlocked) && !mexit_wired(mp))
                return;
            continue;
        }
        bool inherit = false;
        struct g *gp = findrunnable(mp, &inherit);
        if (!gp)
            return;
        if (mp->spinning)
            resetspinning(mp);
        if (GORT_UNLIKELY(gp->lockedm && gp->lockedm != mp)) {
            if (!startlockedm(mp, gp))
                return;
            continue;
        }
        run_g(mp, gp, inherit);
        if (GORT_UNLIKELY(mp->exitlocked) && !mexit_wired(mp))
            return;
    }
}

/* ---------------------------------------------------------------------------
 * Direct hand-off: G to G without a trip through g0.
 *
 * When a G yields, parks or exits and its own P has a runnable G at hand,
 * it switches straight to that G: one context switch instead of two.  The
 * order of schedule() is kept (61-tick global check, runnext, ring, global
 * batch).  The outgoing G is published only by the post-switch function
 * (after_switch), which runs on the incoming G's stack once the outgoing
 * context is saved.  A needed sched.lock taken before the switch is
 * released by that function: the lock never leaves the M.
 * ------------------------------------------------------------------------- */

/* Switch from the running gp (whose new status the caller has set) to
 * next; post(mp, gp) runs on next's stack.  Returns when gp runs again.
 * t: whether next's start is traced (enum gtrace). */
static inline __attribute__((always_inline)) void
g_handoff(struct m *mp, struct g *gp, struct g *next, bool inherit,
          bool locked, void (*post)(struct m *, struct g *), bool dying,
          enum gtrace t)
{
    store_relaxed(&gp->m, NULL);
    mp->post_locked = locked;
    mp->post_fn = post;
    execute_prep(mp, next, inherit, t);
    mp->locks--; /* pick_handoff's; post_fn guards the rest */
    g_switch(mp, gp, next, dying);
}

static void post_unlock_sched(struct m *mp)
{
    if (mp->post_locked) {
        mp->post_locked = false;
        gort__unlock_m(mp, &gort__sched.lock);
    }
}

/* ---------------------------------------------------------------------------
 * Goroutine creation and exit.
 * ------------------------------------------------------------------------- */

static void allgadd(struct g *gp)
{
    gort__lock(&gort__allglock);
    if (gort__allglen == allgcap) {
        /* The first array is the reservation (allgs_map), which never
         * fills in practice.  Past it, or without it, a copy, not
         * realloc: a dump may be reading the old array without the lock,
         * so it is retired (freed at shutdown). */
        uint32_t cap = allgcap ? allgcap * 2 : 1024;
        struct g **na = NULL;
        if (!allgcap) {
            void *m = mmap(NULL, (size_t)ALLGS_RESERVE * sizeof *na,
                           PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                           0);
            if (m != MAP_FAILED) {
                allgs_map = na = m;
                cap = ALLGS_RESERVE;
            }
        }
        if (!na && !(na = gort__malloc(cap * sizeof *na)))
            gort__fatal("out of memory growing allgs to %u", cap);
        struct g **old = gort__allgs;
        if (old) {
            memcpy(na, old, gort__allglen * sizeof *na);
            if (old != allgs_map)
                gort__retire(old); /* the reservation goes at shutdown */
        }
        /* Release: a dump that load-acquires the array sees the copied
         * entries. */
        store_rel(&gort__allgs, na);
        allgcap = cap;
    }
    gort__allgs[gort__allglen] = gp;
    /* Release: the dump reads allglen then the entries without the lock. */
    store_rel(&gort__allglen, gort__allglen + 1);
    gort__unlock(&gort__allglock);
}

/* G structures come from chunks of GCHUNK, never freed before shutdown
 * (Go's allgs keeps every G too).  Dense: the run queues and free lists
 * touch Gs far more often than stacks, so many Gs share a page and a TLB
 * entry.  Under allglock. */
#define GCHUNK 64
struct gchunk {
    struct gchunk *next;
    uint32_t used;
    struct g gs[GCHUNK];
};
static struct gchunk *gchunks;

static struct g *galloc_locked(void)
{
    gort__lock_assert_held(&gort__allglock);
    if (!gchunks || gchunks->used == GCHUNK) {
        struct gchunk *c = gort__calloc(1, sizeof *c);
        if (!c)
            return NULL;
        c->next = gchunks;
        gchunks = c;
    }
    return &gchunks->gs[gchunks->used++];
}

/* A new G, without a stack yet, status DEAD, on allgs.  newproc1 gives
 * it a stack; its first context is made only when it first runs
 * (execute_prep), so creating a goroutine does not touch its stack.
 * Mirrors malg. */
static struct g *malg(void)
{
    gort__lock(&gort__allglock);
    struct g *gp = galloc_locked();
    gort__unlock(&gort__allglock);
    if (!gp)
        return NULL;
    allgadd(gp);
    gort__casgstatus(gp, G_IDLE, G_DEAD);
    return gp;
}

/* Put a dead G on pp's free list; a full list moves its older half to
 * the global list, keeping the Gs most likely still in the cache.
 * Mirrors gfput (proc.go). */
static void gfput(struct p *pp, struct g *gp)
{
    pp->gfree[pp->ngfree++] = gp;
    if (pp->ngfree < GORT_GFREE_MAX)
        return;
    int32_t n = GORT_GFREE_MAX - GORT_GFREE_KEEP;
    gort__lock(&gort__sched.gfree_lock);
    for (int32_t i = 0; i < n; i++)
        gort__gsegq_push_head(&gort__sched.gfree, pp->gfree[i]);
    store_relaxed(&gort__sched.ngfree, gort__sched.ngfree + n);
    gort__unlock(&gort__sched.gfree_lock);
    memmove(&pp->gfree[0], &pp->gfree[n],
            (size_t)GORT_GFREE_KEEP * sizeof pp->gfree[0]);
    pp->ngfree = GORT_GFREE_KEEP;
}

/* Take a dead G from pp's free list, refilling it from the global list.
 * Mirrors gfget (proc.go). */
static struct g *gfget(struct p *pp)
{
    if (pp->ngfree == 0) {
        /* Relaxed: a hint; an empty answer only means a new G. */
        if (load_relaxed(&gort__sched.ngfree) == 0)
            return NULL;
        int32_t n = 0;
        gort__lock(&gort__sched.gfree_lock);
        struct g *gp;
        while (n < GORT_GFREE_KEEP &&
               (gp = gort__gsegq_pop(&gort__sched.gfree)))
            pp->gfree[GORT_GFREE_KEEP - 1 - n++] = gp;
        store_relaxed(&gort__sched.ngfree, gort__sched.ngfree - n);
        gort__unlock(&gort__sched.gfree_lock);
        /* The most recently freed at the top, as they were. */
        memmove(&pp->gfree[0], &pp->gfree[GORT_GFREE_KEEP - n],
                (size_t)n * sizeof pp->gfree[0]);
        pp->ngfree = n;
        if (n == 0)
            return NULL;
    }
    struct g *gp = pp->gfree[--pp->ngfree];
    if (pp->ngfree > 0) /* the next spawn's G */
        gort__prefetch_g(pp->gfree[pp->ngfree - 1]);
    return gp;
}

static GORT_NORETURN void goexit1(struct g *gp);

/* A G has exited and its context is gone: its stack goes to the hot top
 * of the P's stack cache, the G to the free list. */
static void gfree_stack_and_put(struct p *pp, struct g *gp)
{
    if (GORT_UNLIKELY(gort__san))
        gort__san_g_dead(gp); /* its fiber; its stack cleaned for reuse */
    gort__stackcache_put(&pp->stackcache, &gp->stack);
    memset(&gp->stack, 0, sizeof gp->stack);
    gp->sched_sp = NULL;
    gort__stat_add(&pp->ngexited, 1);
    gfput(pp, gp);
}

/* gostart with a sanitizer in the process (san.c). */
static GORT_NOINLINE GORT_NORETURN void gostart_san(void *prev)
{
    gort__san_gostart();
    after_switch(prev);
    struct g *gp = gort__getg();
    *gort__errno_ptr() = 0;
    gort__san_acquire(gp); /* gort_go happens before the body (san.c) */
    gort__san_callback(gp->fn, gp->arg);
    goexit1(gp);
}

/* First code of every goroutine, on its own stack. */
static void gostart(void *prev)
{
    if (GORT_UNLIKELY(gort__san))
        gostart_san(prev);
    after_switch(prev);
    struct g *gp = gort__getg();
    *gort__errno_ptr() = 0;
    gp->fn(gp->arg);
    goexit1(gp);
}

static int64_t newgoid(struct p *pp)
{
    if (pp->goidcache == pp->goidcacheend) {
        /* Relaxed: goids need only be unique, not ordered. */
        uint64_t end = xadd_relaxed(&gort__sched.goidgen, GORT_GOID_BATCH);
        pp->goidcache = (int64_t)(end - GORT_GOID_BATCH) + 1;
        pp->goidcacheend = (int64_t)end + 1;
    }
    return pp->goidcache++;
}

/* Fill in a dead G's fields for running fn(arg). */
static inline void gsetup(struct g *gp, void (*fn)(void *), void *arg,
                          uintptr_t pc, int64_t goid, int64_t parent)
{
    gp->sched_sp = NULL; /* made when it first runs (execute_prep) */
    gort__fpctl_save(&gp->fpctl); /* it starts with its creator's FP modes */
    gp->fn = fn;
    gp->arg = arg;
    gp->gopc = pc;
    gp->parentgoid = parent;
    gp->defers = NULL;
    gp->param = NULL;
    gp->waitreason = WAIT_ZERO;
    gp->goid = goid;
    /* Which of its scheduling rounds are timed for /sched/latencies: a
     * hash of the goid places the first one anywhere in the period, as
     * Go's random trackingSeq does, without a random draw per spawn. */
    uint8_t seq = (uint8_t)(((uint64_t)goid * 0x9e3779b97f4a7c15ull) >> 56);
    gp->trackingseq = seq;
    gp->tracking = seq % GORT_TRACKING_PERIOD == 0;
    gp->runtiming = false;
}

/* Make gp (DEAD, stackless) ready to run fn(arg) and queue it on pp.
 * Returns its goid, or -ENOMEM when no stack can be had (gp is then left
 * unchanged).  san: ThreadSanitizer is in the process (gp gets a fiber,
 * san.c).  Mirrors newproc1 (proc.go). */
static inline __attribute__((always_inline)) int64_t
newproc1(struct p *pp, struct g *gp, void (*fn)(void *), void *arg,
         uintptr_t pc, int64_t parent, enum gtrace t, bool san)
{
    /* A reservation, not a stack: the G takes one when it first runs
     * (execute_prep). */
    if (pp->stackres == 0) {
        if (gort__stack_reserve(GORT_STACKRES_BATCH) != 0)
            return -ENOMEM;
        pp->stackres = GORT_STACKRES_BATCH;
    }
    pp->stackres--;
    gsetup(gp, fn, arg, pc, newgoid(pp), parent);
    if (san)
        gort__san_g_new(gp);
    int64_t goid = gp->goid;
    gort__stat_add(&pp->ngcreated, 1);
    gort__casgstatus_t(gp, G_DEAD, G_RUNNABLE, t);
    gort__runqput(pp, gp, true);
    return goid;
}

int64_t gort__newproc_sys(void (*fn)(void *), void *arg)
{
    struct m *mp = gort__getm();
    struct p *pp = mp->p;
    mp->locks++;
    struct g *newg = gfget(pp);
    if (!newg && !(newg = malg())) {
        mp->locks--;
        return -ENOMEM;
    }
    /* Created by the runtime (a timer's AfterFunc): no parent. */
    int64_t goid = newproc1(pp, newg, fn, arg,
                            (uintptr_t)__builtin_return_address(0), 0,
                            GT_CHECK, gort__san & GORT_SAN_TSAN);
    if (goid < 0)
        gfput(pp, newg);
    else if (load_relaxed(&gort__main_started))
        gort__wakep();
    mp->locks--;
    return goid;
}

/* gort_go's body; pc is the caller's return address, t says whether the
 * creation is traced (see enum gtrace), san whether ThreadSanitizer is in
 * the process. */
static inline __attribute__((always_inline)) int64_t
go_impl(void (*fn)(void *), void *arg, uintptr_t pc, enum gtrace t, bool san)
{
    struct m *mp = gort__getm();
    if (!fn)
        return -EINVAL;
    if (!mp || !mp->curg)
        return -EPERM; /* the runtime is not running */
    if (GORT_UNLIKELY(!mp->p))
        return newproc_foreign(fn, arg, pc);
    mp->locks++; /* keep our P while we use its caches */
    struct p *pp = mp->p;
    struct g *newg = gfget(pp);
    if (!newg && !(newg = malg())) {
        mp->locks--;
        return -ENOMEM;
    }
    int64_t goid = newproc1(pp, newg, fn, arg, pc, mp->curg->goid, t, san);
    if (goid < 0) {
        gfput(pp, newg);
        mp->locks--;
        return goid;
    }
    /* wakep's own first test inline: no idle P, nothing to wake. */
    if (load_relaxed(&gort__sched.npidle) != 0 &&
        load_relaxed(&gort__main_started))
        gort__wakep();
    mp->locks--;
    gort__preempt_check_m(mp);
    return goid;
}

static GORT_NOINLINE int64_t go_traced(void (*fn)(void *), void *arg,
                                       uintptr_t pc)
{
    return go_impl(fn, arg, pc, GT_ON, false);
}

static GORT_NOINLINE int64_t go_san(void (*fn)(void *), void *arg,
                                    uintptr_t pc)
{
    GORT_SAN_SCOPE();
    return go_impl(fn, arg, pc, GT_CHECK, true);
}

int64_t gort_go(void (*fn)(void *), void *arg)
{
    uintptr_t pc = (uintptr_t)__builtin_return_address(0);
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN))
        return go_san(fn, arg, pc);
    /* A goroutine calling this holds its P throughout: the flag stays. */
    if (GORT_TRACE_ON())
        return go_traced(fn, arg, pc);
    return go_impl(fn, arg, pc, GT_OFF, false);
}

/* Forget what a dead G ran (gdestroy's field resets). */
static void gclear(struct g *gp)
{
    gp->fn = NULL;
    gp->arg = NULL;
    gp->goid = 0;
    gp->is_main = false;
    gp->waitreason = WAIT_ZERO;
}

/* On g0: the G is finished; recycle it.  Mirrors goexit0/gdestroy. */
static struct g *goexit0(struct g *gp)
{
    struct m *mp = gort__getm_raw();
    gort__casgstatus(gp, G_RUNNING, G_DEAD);
    gort__dropg(mp);
    if (GORT_UNLIKELY(gp->lockedm)) {
        /* Exited wired: the thread goes too (schedule, mexit_wired). */
        mp->exitlocked = mp->lockedext > 0;
        mp->lockedext = mp->lockedint = 0;
        store_relaxed(&mp->lockedg, NULL);
        gp->lockedm = NULL;
    }
    gclear(gp);
    gfree_stack_and_put(mp->p, gp);
    return NULL;
}

static struct g *main_exit_m(struct g *gp);

/* Run the G's deferred handlers, LIFO.  A handler may defer more (they
 * run next).  A record stays on the list while its handler runs, so that
 * a goroutine discarded at shutdown in the middle of a handler (it may
 * park) still has every record freed by teardown. */
static void rundefers(struct g *gp)
{
    struct gort_defer_rec *d;
    while ((d = gp->defers)) {
        if (d->started) {
            /* Its handler called gort_goexit: it never returns, so drop
             * the record and go on with the rest (Go's d.started). */
            gp->defers = d->next;
            gort__free(d);
            continue;
        }
        d->started = true;
        gort__san_callback(d->fn, d->arg);
        struct gort_defer_rec **pp = &gp->defers;
        while (*pp != d)
            pp = &(*pp)->next; /* handlers deferred by d sit above it */
        *pp = d->next;
        gort__free(d);
    }
}

/* After a direct hand-off from an exiting G: recycle it. */
static void post_goexit(struct m *mp, struct g *prev)
{
    post_unlock_sched(mp);
    gfree_stack_and_put(mp->p, prev);
}

/* goexit1's hand-off to the next G, traced or not (enum gtrace). */
static inline __attribute__((always_inline)) GORT_NORETURN void
goexit_handoff(struct m *mp, struct g *gp, enum gtrace t)
{
    bool inherit, locked;
    struct g *next = pick_handoff(mp, mp->p, &inherit, &locked, false);
    if (!next)
        mcall(goexit0, true);
    gort__casgstatus_t(gp, G_RUNNING, G_DEAD, t);
    gclear(gp);
    g_handoff(mp, gp, next, inherit, locked, post_goexit, true, t);
    gort__throw("goexit: dead goroutine resumed");
}

static GORT_NOINLINE GORT_NORETURN void goexit_traced(struct m *mp,
                                                      struct g *gp)
{
    goexit_handoff(mp, gp, GT_ON);
}

static GORT_NORETURN void goexit1(struct g *gp)
{
    rundefers(gp);
    struct m *mp = gort__getm();
    if (gp->is_main && !load_relaxed(&gort__sched.main_goexited)) {
        /* ThreadSanitizer: what main did happens before gort_main
         * returns. */
        gort__san_release(&main_status);
        mcall(main_exit_m, true);
    }
    /* From here on the G holds its P until it is gone. */
    if (GORT_TRACE_ON())
        goexit_traced(mp, gp);
    goexit_handoff(mp, gp, GT_OFF);
}

int gort_defer(void (*fn)(void *), void *arg)
{
    GORT_SAN_SCOPE();
    struct g *gp = gort__getg();
    if (!gp || !fn)
        return gp ? -EINVAL : -EPERM;
    struct gort_defer_rec *d = gort__malloc(sizeof *d);
    if (!d)
        return -ENOMEM;
    d->fn = fn;
    d->arg = arg;
    d->started = false;
    d->next = gp->defers;
    gp->defers = d;
    return 0;
}

void gort_goexit(void)
{
    /* Never left: the goroutine's last switch leaves it (san.c). */
    gort__san_enter();
    struct g *gp = gort__need_goroutine("gort_goexit")->curg;
    if (gort__san & GORT_SAN_TSAN)
        gp->tsan_stale = true; /* frames that never return (san.c) */
    if (gp->is_main)
        /* Go: the main goroutine ends but the program goes on; when no
         * goroutine is left, checkdead reports it. */
        store_relaxed(&gort__sched.main_goexited, 1);
    goexit1(gp);
}

int64_t gort_goid(void)
{
    struct g *gp = gort__getg();
    return gp ? gp->goid : 0;
}

int64_t gort_numgoroutine(void)
{
    int64_t n = 0;
    gort__lock(&gort__allglock);
    for (uint32_t i = 0; i < gort__allglen; i++) {
        uint32_t s = gort__readgstatus(gort__allgs[i]);
        if (s != G_DEAD && s != G_IDLE)
            n++;
    }
    gort__unlock(&gort__allglock);
    return n;
}

/* ---------------------------------------------------------------------------
 * Parking, readying, yielding.
 * ------------------------------------------------------------------------- */

static struct g *park_m(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_RUNNING, G_WAITING);
    gort__dropg(mp);
    gort__unlockf fn = mp->waitunlockf;
    if (fn) {
        void *lock = mp->waitlock;
        mp->waitunlockf = NULL;
        mp->waitlock = NULL;
        if (!fn(mp, gp, lock)) {
            gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
            return gp; /* resume it at once, same time slice */
        }
    }
    return NULL;
}

/* After a direct hand-off from a parking G: release its park lock, now
 * that its context is saved; if unlockf says not to park after all, make
 * it runnable again (next in line). */
static void post_park(struct m *mp, struct g *prev)
{
    post_unlock_sched(mp);
    gort__unlockf fn = mp->waitunlockf;
    if (!fn)
        return;
    void *lock = mp->waitlock;
    mp->waitunlockf = NULL;
    mp->waitlock = NULL;
    if (!fn(mp, prev, lock)) {
        gort__casgstatus(prev, G_WAITING, G_RUNNABLE);
        gort__runqput(mp->p, prev, true);
    }
}

/* gort__park's body, traced or not (enum gtrace). */
static inline __attribute__((always_inline)) void
park_impl(gort__unlockf unlockf, void *lock, uint32_t reason,
          enum gtrace t)
{
    struct m *mp = gort__getm();
    struct g *gp = mp->curg;
    if (GORT_UNLIKELY(!gp)) /* every caller has checked */
        gort__throw("park: not on a goroutine");
    gp->waitreason = reason;
    gp->waitsince = load_relaxed(&gort__sched.coarsenow);
    if (GORT_UNLIKELY(gp->foreign)) {
        park_foreign(mp, gp, unlockf, lock);
        return;
    }
    mp->waitunlockf = unlockf;
    mp->waitlock = lock;
    bool inherit, locked;
    struct g *next = pick_handoff(mp, mp->p, &inherit, &locked, false);
    if (!next) {
        /* Not mcall's assertions: the caller may hold the lock that
         * unlockf releases on g0, so m->locks may be raised here. */
        mp->mcall_fn = park_m;
        g_switch(mp, gp, mp->g0, false);
        return;
    }
    gort__casgstatus_t(gp, G_RUNNING, G_WAITING, t);
    g_handoff(mp, gp, next, inherit, locked, post_park, false, t);
}

static GORT_NOINLINE __attribute__((cold)) void
park_traced(gort__unlockf unlockf, void *lock, uint32_t reason)
{
    park_impl(unlockf, lock, reason, GT_ON);
}

void gort__park(gort__unlockf unlockf, void *lock,
                uint32_t reason)
{
    /* The parking G holds its P until it switches away. */
    if (GORT_TRACE_ON())
        park_traced(unlockf, lock, reason);
    else
        park_impl(unlockf, lock, reason, GT_OFF);
}

void gort__ready(struct g *gp, bool next)
{
    gort__ready_m(gort__getm(), gp, next);
}

/* gort__ready_m's body, traced or not (enum gtrace). */
static inline __attribute__((always_inline)) void
ready_impl(struct m *mp, struct g *gp, bool next, enum gtrace t)
{
    if (GORT_UNLIKELY(gp->foreign || !mp->p)) {
        ready_slow(mp, gp);
        return;
    }
    gort__ready_onp(mp, mp->p, gp, next, t);
}

static GORT_NOINLINE __attribute__((cold)) void
ready_traced(struct m *mp, struct g *gp, bool next)
{
    ready_impl(mp, gp, next, GT_ON);
}

void gort__ready_m(struct m *mp, struct g *gp, bool next)
{
    /* A caller holding a P keeps it throughout (one without a P takes
     * ready_slow, which looks at the flag itself). */
    if (GORT_TRACE_ON())
        ready_traced(mp, gp, next);
    else
        ready_impl(mp, gp, next, GT_OFF);
}

/* On g0: put the G at the tail of the global queue.  Mirrors goschedImpl,
 * used by Gosched and by cooperative preemption (gopreempt_m). */
static struct g *gosched_m(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_RUNNING, G_RUNNABLE);
    gort__dropg(mp);
    gort__lock(&gort__sched.lock);
    gort__globrunqput_locked(gp);
    gort__unlock(&gort__sched.lock);
    if (load_relaxed(&gort__main_started))
        gort__wakep();
    return NULL;
}

/* After a direct hand-off from a yielding G: queue it globally. */
static void post_gosched(struct m *mp, struct g *prev)
{
    if (!mp->post_locked)
        gort__lock_m(mp, &gort__sched.lock);
    mp->post_locked = false;
    gort__globrunqput_locked(prev);
    gort__unlock_m(mp, &gort__sched.lock);
    if (load_relaxed(&gort__sched.npidle) != 0) /* wakep's own first test */
        gort__wakep();
}

/* After a direct hand-off from a G that yielded while its P had other Gs
 * queued: to the tail of the P's own queue. */
static void post_gosched_local(struct m *mp, struct g *prev)
{
    if (mp->post_locked) {
        mp->post_locked = false;
        gort__unlock_m(mp, &gort__sched.lock);
    }
    gort__runqput(mp->p, prev, false);
    if (load_relaxed(&gort__sched.npidle) != 0) /* wakep's own first test */
        gort__wakep();
}

/* Yield: to the tail of the global queue, as Go's Gosched (and
 * gopreempt_m for cooperative preemption), except for a G that yields on
 * the only P where it would wait less in the P's own queue (fewer Gs
 * there than 61 for each G ahead of it in the global queue's plain part,
 * which gets one schedule in 61): that one gives the global queue its
 * turn (its head runs next, if it has one) and goes to the tail of the
 * P's own queue.  The global queue gets one schedule in 61 while the
 * P's queue never empties, so behind it a yield would cost 61 schedules
 * for every G there (docs/design.md, "Timer wake-ups run ahead of new
 * work").  Giving the turn keeps what a yield is for: a
 * goroutine that yields in a loop until others have done their work lets
 * the global queue run one G per yield.  With more Ps the global queue
 * also evens yielding goroutines out between them (a P's own queue gives
 * up Gs only to a P that runs dry), so there the yield is Go's. */
static void gosched(struct m *mp, struct g *gp, bool preempted)
{
    struct p *pp = mp->p;
    /* Relaxed: GOMAXPROCS changes stop the world, and this G runs; the
     * queue lengths are hints (the owner's view of its own ring, which
     * thieves only empty, and the global queue's size outside its
     * lock). */
    bool local = false;
    if (!preempted && load_relaxed(&gort__gomaxprocs) == 1) {
        int32_t ring = (int32_t)(pp->runqtail - load_relaxed(&pp->runqhead));
        int32_t plain = load_relaxed(&gort__sched.runqsize) -
                        load_relaxed(&gort__sched.nwoken);
        local = ring < GORT_GLOBAL_CHECK_TICKS * (plain + 1);
    }
    bool inherit, locked;
    struct g *next = pick_handoff(mp, pp, &inherit, &locked, local);
    if (!next) {
        mcall(gosched_m, false);
        return;
    }
    gort__casgstatus(gp, G_RUNNING, G_RUNNABLE);
    g_handoff(mp, gp, next, inherit, locked,
              local ? post_gosched_local : post_gosched, false, GT_CHECK);
}

static inline __attribute__((always_inline)) void gosched_common(void)
{
    struct m *mp = gort__getm();
    if (!mp || !mp->curg || mp->curg->foreign) {
        gort__osyield();
        return;
    }
    gosched(mp, mp->curg, false);
}

static GORT_NOINLINE void gosched_san(void)
{
    GORT_SAN_SCOPE();
    gosched_common();
}

void gort_gosched(void)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        gosched_san();
        return;
    }
    gosched_common();
}

void gort__preempt_check(void)
{
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    /* Relaxed: a late sighting only delays the preemption a little. */
    if (gp && load_relaxed(&gp->preempt) && mp->locks == 0)
        gort__preempt_yield(mp, gp);
}

void gort__preempt_yield(struct m *mp, struct g *gp)
{
    if (GORT_UNLIKELY(gp->foreign))
        return;
    store_relaxed(&gp->preempt, 0);
    store_relaxed(&mp->p->preempt, 0);
    gort__stat_add(&mp->p->npreemptsync, 1);
    gort__trace_preempted(mp);
    gosched(mp, gp, true);
}

/* ---------------------------------------------------------------------------
 * Foreign threads: threads gort did not create that call into it (a
 * library's callback thread, a plain pthread).  Mirrors needm/dropm.
 *
 * On its first call such a thread gets an extra M and a G standing for
 * it (g->foreign, wired to that M through lockedm).  It never holds a P:
 *   - a G it readies, or one it starts with gort_go, goes to the global
 *     queue and an idle P is woken (wakep);
 *   - when it must block (a channel, a select, a semaphore) it parks its
 *     own thread on the M's note, and whoever readies its G wakes it;
 *   - while it is in one of those, sched.nforeigninside counts it as a
 *     running M, so checkdead does not report a deadlock it is about to
 *     end.  Outside gort it is not counted.
 * The extra M is freed when the thread exits (a pthread key destructor),
 * or, if the thread outlives the runtime, then.
 * ------------------------------------------------------------------------- */

static pthread_key_t extram_key;
static pthread_once_t extram_key_once = PTHREAD_ONCE_INIT;
static uint32_t runtime_gen;   /* bumped by every gort_main */
static struct m *extram;       /* extra Ms alive; under sched.lock */

static void foreign_inside(int32_t d)
{
    gort__lock(&gort__sched.lock);
    gort__sched.nforeigninside += d;
    gort__unlock(&gort__sched.lock);
}

static void dropm(void *arg)
{
    struct m *mp = arg;
    if (!mp || !mp->foreign)
        return;
    if (mp->foreign_gen == load_acq(&runtime_gen) &&
        load_acq(&gort__main_started)) {
        gort__lock(&gort__sched.lock);
        struct m **pp = &extram;
        while (*pp && *pp != mp)
            pp = &(*pp)->schedlink;
        if (*pp)
            *pp = mp->schedlink;
        struct g *gp = mp->curg;
        gort__casgstatus(gp, G_RUNNING, G_DEAD);
        gp->goid = 0;
        gp->lockedm = NULL;
        gp->m = NULL;
        gort__unlock(&gort__sched.lock);
    }
    if (gort__getm_raw() == mp)
        gort__setm(NULL);
    gort__free(mp->g0);
    gort__free(mp);
}

static void extram_key_init(void)
{
    if (pthread_key_create(&extram_key, dropm) != 0)
        gort__throw("needm: pthread_key_create failed");
}

static struct g *foreign_g(void)
{
    gort__lock(&gort__allglock);
    struct g *gp = galloc_locked();
    gort__unlock(&gort__allglock);
    if (!gp)
        return NULL;
    allgadd(gp);
    gort__casgstatus(gp, G_IDLE, G_DEAD);
    gort__casgstatus(gp, G_DEAD, G_RUNNABLE);
    gort__casgstatus(gp, G_RUNNABLE, G_RUNNING);
    return gp;
}

/* Make the calling thread an extra M.  Mirrors needm (proc.go). */
static struct m *needm(void)
{
    pthread_once(&extram_key_once, extram_key_init);
    struct m *mp = allocm();
    if (!mp)
        gort__fatal("out of memory making an M for a foreign thread");
    mp->foreign = true;
    mp->foreign_gen = load_acq(&runtime_gen);
    /* The locks below find this M through gort__getm. */
    gort__setm(mp);
    struct g *gp = foreign_g();
    if (!gp)
        gort__fatal("out of memory making a G for a foreign thread");
    mp->procid = gort__gettid();
    mp->errnop = gort__errno_ptr();
    uint64_t seed = (uint64_t)gort_nanotime() ^ (uint64_t)(uintptr_t)mp;
    mp->fastrand[0] = (uint32_t)(seed | 1);
    mp->fastrand[1] = (uint32_t)(seed >> 32) | 0x9e3779b9u;
    gp->foreign = true;
    gp->goid = (int64_t)xadd_relaxed(&gort__sched.goidgen, 1);
    gp->lockedm = mp;
    store_relaxed(&gp->m, mp);
    store_rel(&mp->curg, gp);
    gort__lock(&gort__sched.lock);
    mp->id = -(int64_t)(++gort__sched.nforeign);
    mp->schedlink = extram;
    extram = mp;
    gort__unlock(&gort__sched.lock);
    pthread_setspecific(extram_key, mp);
    return mp;
}

struct m *gort__getm_noextra_slow(void)
{
    /* A thread without an M gets none here: a runtime lock or a
     * read-only call needs none, and an extra M stays with its thread
     * (and counts as a goroutine) until the thread ends. */
    return gort__getm_raw() ? gort__getm_slow() : NULL;
}

GORT_NOINLINE struct m *gort__getm_slow(void)
{
    GORT_SAN_SCOPE(); /* needm allocates */
    struct m *mp = gort__getm_raw();
    if (mp && mp->foreign) {
        if (mp->foreign_gen == load_acq(&runtime_gen) &&
            load_acq(&gort__main_started))
            return mp;
        if (mp->foreign_gen == load_acq(&runtime_gen))
            return NULL; /* shutting down */
        /* Left over from an earlier gort_main: start afresh. */
        pthread_setspecific(extram_key, NULL);
        gort__setm(NULL);
        gort__free(mp->g0);
        gort__free(mp);
        mp = NULL;
    }
    if (!mp) {
        if (!load_acq(&gort__main_started) ||
            load_relaxed(&gort__sched.exiting))
            return NULL;
        return needm();
    }
    /* An inspector claimed this thread while it slept in a call nobody
     * wrapped (rawsys.c): settle the claim before anything else. */
    if (load_acq(&mp->rawmark) != RAWMARK_NONE)
        gort__rawsys_back(mp);
    /* The thread was put into a syscall while blocked in the kernel (by
     * an inspector, or by the preemption signal); it is back in gort now.
     * Else the fast slot was cleared by a claim that was withdrawn. */
    if (load_relaxed(&mp->insyscall) == 2)
        gort__exitsyscall_m(mp, mp->curg);
    else
        gort__setm_fast(mp);
    return gort__getm_raw();
}

/* Teardown: forget extra Ms whose threads still live (their threads free
 * them, seeing the generation change). */
static void extram_fini(void)
{
    extram = NULL;
    xadd_acqrel(&runtime_gen, 1);
}

/* A foreign thread makes gp (status from) runnable: the global queue and
 * a wakep, the thread counted as running until an M is on its way. */
static void foreign_queue(struct m *mp, struct g *gp, uint32_t from)
{
    mp->locks++;
    gort__lock(&gort__sched.lock);
    gort__sched.nforeigninside++;
    if (from == G_DEAD) /* a new goroutine (newproc_foreign); relaxed:
                           metrics read it without the lock */
        store_relaxed(&gort__sched.ngcreatednop,
                      gort__sched.ngcreatednop + 1);
    gort__casgstatus(gp, from, G_RUNNABLE);
    gort__globrunqput_locked(gp);
    gort__unlock(&gort__sched.lock);
    gort__wakep();
    mp->locks--;
    foreign_inside(-1);
}

/* gort__ready_m's rare cases: the G stands for a foreign thread (wake the
 * thread), or the caller is one (no P: the global queue). */
static GORT_NOINLINE void ready_slow(struct m *mp, struct g *gp)
{
    if (gp->foreign) {
        gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
        gort__notewakeup(&gp->lockedm->park);
        return;
    }
    foreign_queue(mp, gp, G_WAITING);
}

/* gort__park on a foreign thread: sleep on the M's note. */
static GORT_NOINLINE void park_foreign(struct m *mp, struct g *gp,
                                       gort__unlockf unlockf,
                                       void *lock)
{
    foreign_inside(1);
    gort__casgstatus(gp, G_RUNNING, G_WAITING);
    if (unlockf && !unlockf(mp, gp, lock)) {
        gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
    } else {
        gort__notesleep(&mp->park);
        gort__noteclear(&mp->park);
    }
    gort__casgstatus(gp, G_RUNNABLE, G_RUNNING);
    foreign_inside(-1);
}

/* gort_go from a foreign thread: the new G goes to the global queue. */
static int64_t newproc_foreign(void (*fn)(void *), void *arg, uintptr_t pc)
{
    struct m *mp = gort__getm_raw();
    mp->locks++;
    gort__lock(&gort__sched.gfree_lock);
    struct g *gp = gort__gsegq_pop(&gort__sched.gfree);
    if (gp)
        store_relaxed(&gort__sched.ngfree, gort__sched.ngfree - 1);
    gort__unlock(&gort__sched.gfree_lock);
    if (!gp && !(gp = malg())) {
        mp->locks--;
        return -ENOMEM;
    }
    if (gort__stack_reserve(1) != 0) {
        gort__lock(&gort__sched.gfree_lock);
        gort__gsegq_push_head(&gort__sched.gfree, gp);
        store_relaxed(&gort__sched.ngfree, gort__sched.ngfree + 1);
        gort__unlock(&gort__sched.gfree_lock);
        mp->locks--;
        return -ENOMEM;
    }
    gsetup(gp, fn, arg, pc, (int64_t)xadd_relaxed(&gort__sched.goidgen, 1),
           mp->curg->goid);
    if (gort__san & GORT_SAN_TSAN)
        gort__san_g_new(gp);
    int64_t goid = gp->goid;
    mp->locks--;
    foreign_queue(mp, gp, G_DEAD);
    return goid;
}

/* ---------------------------------------------------------------------------
 * Deadlock detection.  Mirrors checkdead (proc.go).
 * ------------------------------------------------------------------------- */

/* Where a runnable G found by checkdead is queued, for the message:
 * nothing runs, so the queues hold still.  sched.lock held. */
static const char *where_queued_locked(struct g *gp, char *buf, size_t n)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (gort__globrunq_has_locked(gp))
        return "on the global queue";
    int32_t procs = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < procs; i++) {
        struct p *pp = gort__allp_load()[i];
        const char *how = NULL;
        if (load_relaxed(&pp->runnext) == gp)
            how = "in runnext";
        uint32_t h = load_relaxed(&pp->runqhead);
        uint32_t t = load_relaxed(&pp->runqtail);
        for (uint32_t k = h; !how && k != t; k++)
            if (load_relaxed(&pp->runq[k % GORT_RUNQ_SIZE]) == gp)
                how = "in the run queue";
        if (how) {
            snprintf(buf, n, "%s of P%d (status %u, idle %d)", how, i,
                     (unsigned)load_relaxed(&pp->status),
                     (int)gort__isidlep(i));
            return buf;
        }
    }
    return "on no run queue";
}

void gort__checkdead_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (gort__debug.checkdeadoff || load_relaxed(&gort__sched.exiting))
        return;
    int32_t run = mcount_locked() - gort__sched.nmidle -
                  gort__sched.nmidlelocked - gort__sched.nmsys +
                  gort__sched.nforeigninside +
                  load_seqcst(&gort__sched.nretaking);
    if (run > 0)
        return;
    if (run < 0)
        gort__throw("checkdead: inconsistent counts: run=%d nmidle=%d "
                    "mcount=%d nmsys=%d", run, gort__sched.nmidle,
                    mcount_locked(), gort__sched.nmsys);
    int32_t waiting = 0;
    uint32_t n = load_acq(&gort__allglen);
    for (uint32_t i = 0; i < n; i++) {
        struct g *gp = gort__allgs[i];
        uint32_t s = gort__readgstatus(gp);
        if (gp->foreign)
            continue; /* a thread outside gort: not ours to judge */
        if (s == G_WAITING || s == G_PREEMPTED)
            waiting++;
        else if (s == G_RUNNABLE || s == G_RUNNING || s == G_SYSCALL) {
            char buf[96];
            gort__throw("checkdead: runnable goroutine %lld (status %s, %s; "
                        "npidle=%d nmspinning=%d runqsize=%d)",
                        (long long)gp->goid, gort__gstatus_name(s),
                        where_queued_locked(gp, buf, sizeof buf),
                        (int)load_relaxed(&gort__sched.npidle),
                        (int)load_relaxed(&gort__sched.nmspinning),
                        (int)gort__sched.runqsize);
        }
    }
    if (waiting == 0 && load_relaxed(&gort__sched.main_goexited))
        gort__fatal("no goroutines (main called runtime.Goexit) - deadlock!");
    /* A pending timer will wake someone (a sleeper, a timer's channel
     * or function): not a deadlock, as in Go. */
    if (gort__timers_any())
        return;
    gort__fatal("all goroutines are asleep - deadlock!");
}

/* ---------------------------------------------------------------------------
 * Boot and shutdown.
 * ------------------------------------------------------------------------- */

/* On g0 of the M that ran the main goroutine when it returned: stop the
 * world, then tell every M to exit; M0 frees everything in gort_main. */
static struct g *main_exit_m(struct g *gp)
{
    struct m *mp = gort__getm();
    gort__casgstatus(gp, G_RUNNING, G_DEAD);
    gort__dropg(mp);
    store_relaxed(&gort__sched.exiting, 1);
    gort__stw_stop(mp);
    gort__lock(&gort__sched.lock);
    struct m *idle;
    while ((idle = gort__mget_locked())) {
        idle->exiting = true;
        gort__notewakeup(&idle->park);
    }
    for (struct m *w = gort__allm; w; w = w->alllink)
        if (w->lockedsleep) {
            w->exiting = true;
            gort__notewakeup(&w->park);
        }
    gort__unlock(&gort__sched.lock);
    /* An M sleeping as the poller finds exiting set when it wakes. */
    gort__poller_wake();
    /* Our own P stays with us; we exit through findrunnable's check. */
    store_relaxed(&mp->p->m, NULL);
    store_relaxed(&mp->p, NULL);
    return NULL;
}

/* Arrays replaced while racy readers may hold them (growallp). */
struct retired {
    struct retired *next;
    void *mem;
};
static struct retired *retired;
/* A leaf: taken under allplock or the poll cache's lock. */
static gort_spinlock retired_lock = GORT_LOCK_INIT(LOCKRANK_RETIRED);

void gort__retire(void *mem)
{
    struct retired *r = gort__malloc(sizeof *r);
    if (!r)
        gort__fatal("out of memory retiring an array");
    r->mem = mem;
    gort__spinlock(&retired_lock);
    r->next = retired;
    retired = r;
    gort__spinunlock(&retired_lock);
}

static void retired_free(void)
{
    while (retired) {
        struct retired *next = retired->next;
        gort__free(retired->mem);
        gort__free(retired);
        retired = next;
    }
}

static void reset_globals(void)
{
    memset(&gort__sched, 0, sizeof gort__sched);
    gort__lock_init(&gort__sched.lock, LOCKRANK_SCHED);
    gort__lock_init(&gort__sched.gfree_lock, LOCKRANK_GFREE);
    gort__sched.maxmcount = gort__sched.maxmcount ? gort__sched.maxmcount
                                                  : GORT_DEFAULT_MAX_THREADS;
    gort__allp = NULL;
    gort__allp_len = 0;
    gort__gomaxprocs = 0;
    gort__allm = NULL;
    gort__allgs = NULL;
    gort__allglen = 0;
    allgcap = 0;
    gort__newprocs = 0;
    gort__worldsema = 1;
    gort__sched.lastpoll = 1; /* nobody sleeps as the poller */
    gort__sched.coarsenow = gort_nanotime();
    memset(gort__idlepmask, 0, sizeof gort__idlepmask);
}

static int32_t max_threads_setting = GORT_DEFAULT_MAX_THREADS;

int gort_set_max_threads(int n)
{
    if (n < 1)
        return -EINVAL;
    int32_t old = max_threads_setting;
    max_threads_setting = n;
    if (load_relaxed(&gort_running)) {
        gort__lock(&gort__sched.lock);
        gort__sched.maxmcount = n;
        checkmcount_locked();
        gort__unlock(&gort__sched.lock);
    }
    return old;
}

/* Free every G, M and P after all threads have exited. */
static void teardown(void)
{
    for (uint32_t i = 0; i < gort__allglen; i++) {
        struct g *gp = gort__allgs[i];
        struct gort_defer_rec *d = gp->defers;
        while (d) {
            struct gort_defer_rec *next = d->next;
            gort__free(d);
            d = next;
        }
        if (gort__san & GORT_SAN_TSAN)
            gort__san_g_teardown(gp);
        gort__stackfree(&gp->stack); /* no-op for stackless Gs */
        gort__preemptstk_free(gp);
    }
    for (int32_t i = 0; i < gort__allp_len; i++) {
        gort__stackcache_flush(&gort__allp[i]->stackcache);
        gort__timers_fini(gort__allp[i]);
    }
    while (gchunks) {
        struct gchunk *next = gchunks->next;
        gort__free(gchunks);
        gchunks = next;
    }
    if (gort__allgs != allgs_map)
        gort__free(gort__allgs);
    if (allgs_map)
        munmap(allgs_map, (size_t)ALLGS_RESERVE * sizeof *allgs_map);
    allgs_map = NULL;
    for (int32_t i = 0; i < gort__allp_len; i++)
        gort__free(gort__allp[i]);
    gort__free(gort__allp);
    retired_free();
    struct m *mp = gort__allm;
    while (mp) {
        struct m *next = mp->alllink;
        freem(mp);
        mp = next;
    }
    gort__globrunq_fini();
    gort__gsegq_fini(&gort__sched.gfree);
    gort__semafini();
    gort__netpoll_fini();
    gort__stackfini();
    extram_fini();
    reset_globals();
}

/* Wait for every M thread but the caller's to end. */
static void join_ms(struct m *self)
{
    for (struct m *mp = gort__allm; mp; mp = mp->alllink)
        if (mp != self && mp->thread)
            pthread_join(mp->thread, NULL);
}

static int boot(struct m *mp, void (*fn)(void *), void *arg)
{
    gort__read_env();
    int err = gort__stackinit();
    if (err)
        return err;
    gort__lock(&gort__sched.lock);
    gort__sched.maxmcount = max_threads_setting;
    mcommoninit_id_locked(mp, -1);
    int32_t procs = gort__gomaxprocs; /* from the environment */
    gort__gomaxprocs = 0;
    gort__procresize(mp, procs);
    gort__unlock(&gort__sched.lock);
    struct g *gp = malg();
    if (!gp)
        return -ENOMEM;
    gp->is_main = true;
    int64_t goid = newproc1(mp->p, gp, fn, arg,
                            (uintptr_t)__builtin_return_address(0), 0,
                            GT_CHECK, gort__san & GORT_SAN_TSAN);
    return goid < 0 ? (int)goid : 0;
}

int gort_main(void (*fn)(void *), void *arg)
{
    GORT_SAN_SCOPE();
    if (!fn)
        return -EINVAL;
    if (!cas_acqrel(&gort_running, 0, 1))
        return -EBUSY;
    reset_globals();
    gort__runtime_init_time = gort_nanotime();
    gort__track_clock_init();
    gort__spinpay_reset();
    struct m *mp = allocm();
    if (!mp) {
        store_rel(&gort_running, 0);
        return -ENOMEM;
    }
    mp->is_m0 = true;
    mp->thread = 0;
    m0 = mp;
    int err = mstart_common(mp);
    if (!err && GORT_UNLIKELY(gort__san))
        gort__san_main_start();
    if (!err)
        err = gort__signals_install();
    if (!err)
        err = boot(mp, fn, arg); /* reads GORTDEBUG */
    if (!err)
        gort__trace_boot(mp, gort__debug.trace);
    if (!err) {
        gort__rawsys_init();
        err = gort__preempt_init();
    }
    if (!err)
        err = gort__sysmon_start();
    if (err) {
        gort__trace_shutdown();
        gort__preempt_fini();
        gort__signals_restore();
        gort__unminit(mp);
        gort__setm(NULL);
        teardown();
        store_rel(&gort_running, 0);
        return err;
    }
    store_rel(&gort__main_started, 1);
    schedule();
    gort__san_acquire(&main_status);
    /* Every other M has been told to exit. */
    gort__sysmon_stop();
    join_ms(mp);
    gort__trace_shutdown(); /* GORTDEBUG=trace, or a trace never stopped */
    gort__preempt_fini();
    gort__rawsys_thread_exit(mp);
    gort__unminit(mp);
    gort__signals_restore();
    gort__setm(NULL);
    teardown();
    store_rel(&gort__main_started, 0);
    store_rel(&gort_running, 0);
    return main_status;
}
