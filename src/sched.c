/* SPDX-License-Identifier: MIT */
/*
 * sched.c - the scheduler's shared state at the bottom of the runtime:
 * the globals every layer reads (sched, allp, allm, allgs, GOMAXPROCS),
 * the current M in thread-local storage, errno's address, the per-M
 * random numbers, the table of legal G status changes with the report of
 * an illegal one, and Go's names for statuses and wait reasons.
 *
 * Nothing here schedules: proc.c, procresize.c and the files above them
 * do, through these.  The globals are written under the locks sched.h
 * names beside them (sched.lock, allplock, allglock) or while the world
 * is stopped, and read as the comments at their declarations say.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "sched.h"
#include "tracehooks.h"

#include <errno.h>

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
int32_t gort__allp_len; /* entries of gort__allp allocated (>= procs) */
int64_t gort__runtime_init_time;
uint32_t gort__main_started;
/* Tracing (tracehooks.h): the flag every hook tests, and the recorder's
 * functions, filled by trace.c at start-up. */
uint32_t gort__trace_on;
struct gort__tracehooks gort__tracehooks;
struct m *gort__m0;            /* the thread that called gort_main */
/* What gort_main returns after the main goroutine has returned (0).  Its
 * address also orders the main goroutine's work before gort_main's
 * return for ThreadSanitizer (gort__san_release in goexit1, proc.c). */
int gort__main_status;

/* The current M.  initial-exec TLS: one %fs-relative load, also in the
 * shared library (static TLS is reserved for libraries loaded at start).
 * Read through gort__getm (sched.h), never directly. */
__thread struct m *gort__tls_m __attribute__((tls_model("initial-exec")));
/* The same M when gort__getm has nothing to finish for it (sched.h),
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

/* The fast slot alone (sched.h, gort__getm_fast): NULL where gort__getm
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

/* The scheduler's slow path of gort__getm (foreign.c), set at boot. */
static struct m *(*getm_slow_fn)(void);

void gort__getm_set_slow(struct m *(*fn)(void))
{
    /* Relaxed: set before the threads that need it exist (boot), and a
     * foreign thread that reads NULL meanwhile has no runtime to join. */
    store_relaxed(&getm_slow_fn, fn);
}

GORT_NOINLINE struct m *gort__getm_slow(void)
{
    struct m *(*fn)(void) = load_relaxed(&getm_slow_fn);
    return fn ? fn() : NULL;
}

struct m *gort__getm_noextra_slow(void)
{
    /* A thread without an M gets none here: a runtime lock or a
     * read-only call needs none, and an extra M stays with its thread
     * (and counts as a goroutine) until the thread ends. */
    return gort__getm_raw() ? gort__getm_slow() : NULL;
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

/* Go's names for G statuses and wait reasons.  tools/gort-gdb.py reads
 * these two tables from the program (see sched.h). */
const char gort__gstatus_names[GORT_GSTATUS_NAMES][GORT_NAME_MAX] = {
    [G_IDLE] = "idle",
    [G_RUNNABLE] = "runnable",
    [G_RUNNING] = "running",
    [G_SYSCALL] = "syscall",
    [G_WAITING] = "waiting",
    [G_DEAD] = "dead",
    [G_PREEMPTED] = "preempted",
};

const char gort__waitreason_names[WAIT_NREASONS][GORT_NAME_MAX] = {
    [WAIT_ZERO] = "",
    [WAIT_SYNC_WAITGROUP_WAIT] = "sync.WaitGroup.Wait",
    [WAIT_SEMACQUIRE] = "semacquire",
    [WAIT_STOP_THE_WORLD] = "stop-the-world",
    [WAIT_GOEXIT_MAIN] = "main called Goexit",
    [WAIT_TEST_PARK] = "test park",
    [WAIT_CHAN_RECV_NIL] = "chan receive (nil chan)",
    [WAIT_CHAN_SEND_NIL] = "chan send (nil chan)",
    [WAIT_SELECT] = "select",
    [WAIT_SELECT_NO_CASES] = "select (no cases)",
    [WAIT_CHAN_RECV] = "chan receive",
    [WAIT_CHAN_SEND] = "chan send",
    [WAIT_SLEEP] = "sleep",
    [WAIT_SYNC_MUTEX_LOCK] = "sync.Mutex.Lock",
    [WAIT_SYNC_RWMUTEX_RLOCK] = "sync.RWMutex.RLock",
    [WAIT_SYNC_RWMUTEX_LOCK] = "sync.RWMutex.Lock",
    [WAIT_SYNC_COND_WAIT] = "sync.Cond.Wait",
    [WAIT_IO] = "IO wait",
};

const char *gort__gstatus_name(uint32_t s)
{
    return s < GORT_GSTATUS_NAMES && gort__gstatus_names[s][0]
               ? gort__gstatus_names[s]
               : "???";
}

const char *gort__waitreason_name(uint32_t r)
{
    if (r == WAIT_ZERO)
        return "";
    return r < WAIT_NREASONS && gort__waitreason_names[r][0]
               ? gort__waitreason_names[r]
               : "???";
}

/* ---------------------------------------------------------------------------
 * Arrays kept until shutdown.
 * ------------------------------------------------------------------------- */

/* Arrays replaced while racy readers may hold them (growallp). */
struct retired {
    struct retired *next;
    void *mem;
};
static struct retired *retired;
/* A leaf: taken under allplock, allglock or the poll cache's lock. */
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

void gort__retired_free(void)
{
    while (retired) {
        struct retired *next = retired->next;
        gort__free(retired->mem);
        gort__free(retired);
        retired = next;
    }
}
