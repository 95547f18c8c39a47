/* SPDX-License-Identifier: MIT */
/*
 * foreign.c - foreign threads: threads gort did not create that call into
 * it (a library's callback thread, a plain pthread), each given an extra
 * M and a G standing for it.  Mirrors needm/dropm (proc.go).
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
 *
 * Invariants:
 *   - An extra M has a negative id and never holds a P; its G is
 *     G_RUNNING while the thread runs, in gort or outside it, and
 *     G_WAITING (G_RUNNABLE once readied) while it sleeps on the M's note.
 *   - extram lists the extra Ms of the current gort_main (sched.lock); an
 *     M whose foreign_gen is not runtime_gen belongs to an earlier one,
 *     and its thread frees it.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "foreign.h"
#include "lock_futex.h"
#include "mthread.h"
#include "newproc.h"
#include "os_linux.h"
#include "rawsys.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "syscall.h"

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
    struct g *gp = gort__malg();
    if (!gp)
        return NULL;
    gort__casgstatus(gp, G_DEAD, G_RUNNABLE);
    gort__casgstatus(gp, G_RUNNABLE, G_RUNNING);
    return gp;
}

/* Make the calling thread an extra M.  Mirrors needm (proc.go). */
static struct m *needm(void)
{
    pthread_once(&extram_key_once, extram_key_init);
    struct m *mp = gort__allocm();
    if (!mp)
        gort__fatal("out of memory making an M for a foreign thread");
    mp->foreign = true;
    mp->foreign_gen = load_acq(&runtime_gen);
    /* The locks below find this M through gort__getm. */
    gort__setm(mp);
    struct g *gp = foreign_g();
    if (!gp)
        gort__fatal("out of memory making a G for a foreign thread");
    /* Release: after foreign, which sysmon's crowd meter reads once it
     * sees the id (sysmon.c). */
    store_rel(&mp->procid, gort__gettid());
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

/* gort__getm's slow path (registered with gort__getm_set_slow at boot):
 * an extra M for a thread gort did not create, or the M of a thread back
 * from a signal-marked syscall with the syscall finished. */
struct m *gort__foreign_getm(void)
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
void gort__foreign_fini(void)
{
    extram = NULL;
    xadd_acqrel(&runtime_gen, 1);
}

/* A foreign thread makes gp (status from) runnable: the global queue and
 * a wakep, the thread counted as running until an M is on its way. */
void gort__foreign_queue(struct m *mp, struct g *gp, uint32_t from)
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

/* gort__ready's rare cases: the G stands for a foreign thread (wake the
 * thread), or the caller is one (no P: the global queue). */
GORT_NOINLINE void gort__foreign_ready(struct m *mp, struct g *gp)
{
    if (gp->foreign) {
        gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
        gort__notewakeup(&gp->lockedm->park);
        return;
    }
    gort__foreign_queue(mp, gp, G_WAITING);
}

/* gort__park on a foreign thread: sleep on the M's note. */
GORT_NOINLINE void gort__foreign_park(struct m *mp, struct g *gp,
                                      gort__unlockf unlockf, void *lock)
{
    foreign_inside(1);
    gort__casgstatus(gp, G_RUNNING, G_WAITING);
    if (unlockf && !unlockf(mp, gp, lock)) {
        gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
    } else {
        gort__m_notesleep(mp, &mp->park);
        gort__noteclear(&mp->park);
    }
    gort__casgstatus(gp, G_RUNNABLE, G_RUNNING);
    foreign_inside(-1);
}
