/* SPDX-License-Identifier: MIT */
/*
 * newproc.c - goroutine creation: gort_go and the runtime's own
 * goroutines, G structures and allgs, the free lists of dead Gs, and
 * goids.  Mirrors newproc, newproc1, malg, gfput and gfget (proc.go).
 *
 * A G structure, once made, lives until shutdown: it is on allgs, which
 * dumps, metrics and checkdead walk, and when its goroutine ends it goes
 * to its P's free list (the older half of a full list to the global one)
 * for the next gort_go.  Creating a goroutine touches no stack: the G
 * takes a reservation, and a stack and its first context only when it
 * first runs (execute_prep, proc.c).  The goroutine's first code and its
 * exit are proc.c's (gostart, goexit1).
 *
 * Invariants:
 *   - A G on a free list is G_DEAD and has no stack (its stack went to
 *     its P's stack cache when it exited).
 *   - allgs only grows; entries [0, allglen) are published with release
 *     stores, and an array replaced by a larger one is retired (freed at
 *     shutdown), never freed while a dump may read it without the lock.
 *   - gort_go holds its P (m->locks) from taking a G off the free list
 *     until the new G is queued, so the P's caches stay its own.
 */
#include "arch.h"
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "foreign.h"
#include "lock_futex.h"
#include "mthread.h"
#include "newproc.h"
#include "preempt.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "stack.h"
#include "tracehooks.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static uint32_t allgcap;
/* allgs' first array: address space for ALLGS_RESERVE entries, reserved
 * once (MAP_NORESERVE: only the pages written count), so that it grows
 * without copies; a copied array would have to be kept until shutdown
 * for the dumps that read it without the lock, 16 bytes a G at a
 * million.  NULL if the reservation failed (then malloc'd arrays). */
#define ALLGS_RESERVE (1u << 24)
static struct g **allgs_map;

/* ---------------------------------------------------------------------------
 * G structures and allgs.
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
struct g *gort__malg(void)
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

/* Free every G structure and the allgs array: at shutdown (teardown),
 * after every thread has ended and what the Gs held is freed. */
void gort__allgs_fini(void)
{
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
    allgcap = 0;
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
 * Free lists of dead Gs.
 * ------------------------------------------------------------------------- */

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

/* A G has exited and its context is gone: its stack goes to the hot top
 * of the P's stack cache, the G to the free list. */
void gort__gfree_stack_and_put(struct p *pp, struct g *gp)
{
    if (GORT_UNLIKELY(gort__san))
        gort__san_g_dead(gp); /* its fiber; its stack cleaned for reuse */
    gort__stackcache_put(&pp->stackcache, &gp->stack);
    memset(&gp->stack, 0, sizeof gp->stack);
    gp->sched_sp = NULL;
    gort__stat_add(&pp->ngexited, 1);
    gfput(pp, gp);
}

/* ---------------------------------------------------------------------------
 * Creation.
 * ------------------------------------------------------------------------- */

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
    if (!newg && !(newg = gort__malg())) {
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

/* The main goroutine, queued on pp (M0's, at boot) to run fn(arg); pc is
 * where gort_main was called from.  0 or -ENOMEM. */
int gort__newproc_main(struct p *pp, void (*fn)(void *), void *arg,
                       uintptr_t pc)
{
    struct g *gp = gort__malg();
    if (!gp)
        return -ENOMEM;
    gp->is_main = true;
    int64_t goid = newproc1(pp, gp, fn, arg, pc, 0, GT_CHECK,
                            gort__san & GORT_SAN_TSAN);
    return goid < 0 ? (int)goid : 0;
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
    if (!gp && !(gp = gort__malg())) {
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
    gort__foreign_queue(mp, gp, G_DEAD);
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
    if (!newg && !(newg = gort__malg())) {
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

int64_t gort_goid(void)
{
    struct g *gp = gort__getg();
    return gp ? gp->goid : 0;
}
