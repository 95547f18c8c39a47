/* SPDX-License-Identifier: MIT */
/*
 * runq.h - what runq.c offers: the local and global run queues.
 */
#ifndef GORT_RUNQ_H
#define GORT_RUNQ_H

#include "atomic.h"
#include "defs.h"
#include "lock_futex.h"
#include "sched.h"

GORT_HIDDEN void gort__runqput_slow(struct p *pp, struct g *gp, bool next);
GORT_HIDDEN struct g *gort__runqget(struct p *pp, bool *inherit_time);
GORT_HIDDEN bool gort__runqempty(struct p *pp);
GORT_HIDDEN uint32_t gort__runqlen(struct p *pp);
GORT_HIDDEN struct g *gort__runqsteal(struct p *pp, struct p *p2, bool stealnext);
/* Put a batch on pp's ring, the overflow globally (owner P only). */
GORT_HIDDEN void gort__runqputbatch(struct p *pp, struct gqueue *q, int32_t n);
/* Empty pp's local queue and runnext into the global queue (procresize). */
GORT_HIDDEN void gort__runqdrain_to_global_locked(struct p *pp);
/* Global queue; callers hold sched.lock. */
GORT_HIDDEN void gort__globrunqputhead_locked(struct g *gp);
GORT_HIDDEN void gort__globrunqputbatch_locked(struct gqueue *batch, int32_t n);
GORT_HIDDEN struct g *gort__globrunqget_slow(struct p *pp, int32_t max);
GORT_HIDDEN void gort__globrunqputwoken_locked(struct gqueue *batch,
                                              int32_t n);
GORT_HIDDEN void gort__gsegq_push_slow(struct gsegq *q, struct g *gp);
GORT_HIDDEN void gort__gsegq_push_head(struct gsegq *q, struct g *gp);
GORT_HIDDEN void gort__gsegq_retire(struct gsegq *q);
/* The simulation's choice of the next G (docs/sim.md): one drawn from
 * the seeded random state among pp's runnext, its ring and the global
 * queue, taken off its queue; NULL when all are empty.  The one P's
 * owner only; takes sched.lock. */
GORT_HIDDEN struct g *gort__sim_runqpick(struct p *pp);
/* PCT's preemption point for gp, running on mp (docs/sim.md): counts a
 * step; returns true when gp must yield, at a change point (its priority
 * has dropped) or when a runnable G has a higher priority.  Takes
 * sched.lock. */
GORT_HIDDEN bool gort__sim_pct_preempt(struct m *mp, struct g *gp);
/* Free PCT's priorities (at shutdown). */
GORT_HIDDEN void gort__sim_fini(void);
/* Free every segment of q, spares included. */
GORT_HIDDEN void gort__gsegq_fini(struct gsegq *q);
/* Is gp on the global queue?  (checkdead's message) */
GORT_HIDDEN bool gort__globrunq_has_locked(struct g *gp);
/* Free the global queue's segments (shutdown). */
GORT_HIDDEN void gort__globrunq_fini(void);

/* Start loading a G that will be used soon into the cache (every line of
 * it).  A G that has waited in a deep queue or on a free list has gone
 * cold, and its misses, taken one after another when its turn comes, are
 * much of what a short goroutine costs; fetched one G ahead, its lines
 * arrive while the current one runs.  A prefetch of a G that ends up used
 * elsewhere is only wasted. */
static inline void gort__prefetch_g(const struct g *gp)
{
    const char *p = (const char *)((uintptr_t)gp & ~(uintptr_t)63);
    const char *end = (const char *)gp + sizeof *gp;
    for (; p < end; p += 64)
        __builtin_prefetch(p, 1);
}

static inline void gort__gsegq_push(struct gsegq *q, struct g *gp)
{
    struct gqseg *s = q->tail;
    if (GORT_LIKELY(s && s->tail < GORT_GQSEG_N)) {
        s->g[s->tail++] = gp;
        return;
    }
    gort__gsegq_push_slow(q, gp);
}
/* Pop from a queue known to hold a G. */
static inline struct g *gort__gsegq_pop_some(struct gsegq *q)
{
    struct gqseg *s = q->head;
    GORT_DASSERT(s && s->head < s->tail); /* the caller's count was right */
    struct g *gp = s->g[s->head++];
    if (s->head == s->tail) {
        if (s->next)
            gort__gsegq_retire(q);
        else
            s->head = s->tail = 0; /* the last one: kept, empty */
    }
    return gp;
}
/* Pop from any queue: NULL when it is empty. */
static inline struct g *gort__gsegq_pop(struct gsegq *q)
{
    struct gqseg *s = q->head;
    if (!s || s->head == s->tail)
        return NULL;
    return gort__gsegq_pop_some(q);
}

static inline void gort__gqueue_push(struct gqueue *q, struct g *gp)
{
    gp->schedlink = NULL;
    if (q->tail)
        q->tail->schedlink = gp;
    else
        q->head = gp;
    q->tail = gp;
}
static inline struct g *gort__gqueue_pop(struct gqueue *q)
{
    struct g *gp = q->head;
    if (gp) {
        q->head = gp->schedlink;
        if (!q->head)
            q->tail = NULL;
        gp->schedlink = NULL;
    }
    return gp;
}
/* Put gp at the tail of the global queue; sched.lock held. */
static inline void gort__globrunqput_locked(struct g *gp)
{
    gort__lock_assert_held(&gort__sched.lock);
    gort__gsegq_push(&gort__sched.runq, gp);
    /* Relaxed store: readers outside the lock use it as a hint only. */
    store_relaxed(&gort__sched.runqsize, gort__sched.runqsize + 1);
}

/* Put gp on pp's local queue (runq.c); with next, into runnext.  The
 * commonest case inline: an empty runnext, which only the owner fills
 * (thieves only take from it), takes a release store. */
static inline void gort__runqput(struct p *pp, struct g *gp, bool next)
{
    if (next && !gort__debug.randomize &&
        load_relaxed(&pp->runnext) == NULL) {
        /* Release: publishes the G to a thief's load-acquire. */
        store_rel(&pp->runnext, gp);
        return;
    }
    gort__runqput_slow(pp, gp, next);
}

/* Pop the global queue's head, the woken part first; it holds a G.
 * sched.lock held. */
static inline struct g *gort__globpop_locked(void)
{
    gort__lock_assert_held(&gort__sched.lock);
    if (GORT_UNLIKELY(gort__sched.nwoken > 0)) {
        /* Relaxed store: pick_fast reads it outside the lock. */
        store_relaxed(&gort__sched.nwoken, gort__sched.nwoken - 1);
        return gort__gsegq_pop_some(&gort__sched.runq_woken);
    }
    return gort__gsegq_pop_some(&gort__sched.runq);
}

/* One G from the global queue for pp's 61-tick turn.  Its two parts take
 * turns when both hold Gs: the plain part on one, so that goroutines that
 * yielded, were preempted or are new run however many timers fire; the
 * woken part on the next, so that due sleepers run however busy pp's
 * queue and the plain part keep each other (otherwise the woken part is
 * taken first, but only when pp's queue is empty).  sched.lock held. */
static inline struct g *gort__globrunqget_turn_locked(struct p *pp)
{
    gort__lock_assert_held(&gort__sched.lock);
    int32_t size = gort__sched.runqsize;
    if (size == 0)
        return NULL;
    store_relaxed(&gort__sched.runqsize, size - 1);
    int32_t nwoken = gort__sched.nwoken;
    if (nwoken > 0 && nwoken < size && !(pp->globwoken = !pp->globwoken))
        return gort__gsegq_pop_some(&gort__sched.runq);
    return gort__globpop_locked();
}

/* Take from the global queue: one G, and with max != 1 a batch more into
 * pp's ring (runq.c).  The single-G case, the usual one, inline. */
static inline struct g *gort__globrunqget_locked(struct p *pp, int32_t max)
{
    gort__lock_assert_held(&gort__sched.lock);
    int32_t size = gort__sched.runqsize;
    if (size == 1 || (max == 1 && size > 0)) {
        /* Relaxed store: readers outside the lock use it as a hint. */
        store_relaxed(&gort__sched.runqsize, size - 1);
        return gort__globpop_locked();
    }
    return size == 0 ? NULL : gort__globrunqget_slow(pp, max);
}

#endif /* GORT_RUNQ_H */
