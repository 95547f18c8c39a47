/* SPDX-License-Identifier: MIT */
/*
 * runq.c - the per-P local run queue, runnext, and the global run queue.
 *
 * The local queue is Go's lock-free ring (runtime2.go, proc.go):
 *
 *     runq[GORT_RUNQ_SIZE]    slots, indexed by counter % size
 *     runqhead                next slot to take; advanced by CAS by the
 *                             owner (runqget) and by thieves (runqgrab)
 *     runqtail                next slot to fill; written by the owner only
 *     runnext                 one G that runs before the ring
 *
 * head and tail are free-running uint32 counters: the length is tail-head
 * even across wrap-around.  The ring holds at most GORT_RUNQ_SIZE Gs.
 *
 * Memory ordering (each pairing is named at its site):
 *   - The owner fills a slot, then store-releases tail; a consumer
 *     load-acquires tail before reading slots up to it.
 *   - A consumer reads slots, then CAS-releases head; the owner
 *     load-acquires head before reusing the slots below it.
 *   - Slots themselves are accessed with relaxed atomics: a thief may read
 *     a slot the owner is overwriting, but then its CAS on head fails and
 *     the value it read is discarded.
 *
 * The global queue is two FIFOs of G pointers in 1 KiB segments (the
 * Gs woken by sleep timers, then the rest: sched.h, struct gqseg) under
 * sched.lock; its length is read without the lock (relaxed) as a hint
 * only.  Emptied segments are kept for reuse until shutdown.
 *
 * With one P (gomaxprocs == 1) there are no thieves: a thief steals into
 * a P of its own, and there is no other.  The owner then takes runnext
 * and the ring's head with plain (relaxed) stores instead of locked CAS
 * and exchange instructions (runq_owned).  The count changes only with
 * the world stopped, which the owner is not while it holds its P, so it
 * cannot change under a queue operation; the stop-the-world's hand-over
 * orders the owner's next load of it after the change.
 *
 * Invariants:
 *   - 0 <= tail - head <= GORT_RUNQ_SIZE at every instant.
 *   - A G is in at most one of: a ring, a runnext, the global queue.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "os_linux.h"
#include "runq.h"
#include "sched.h"

#include <stdlib.h>
#include <string.h>

#define RQ GORT_RUNQ_SIZE
#define SLOT(i) ((i) % (uint32_t)RQ)

static bool randomized(void)
{
    return GORT_UNLIKELY(gort__debug.randomize != 0);
}

/* No other M can touch pp's runnext or head: there is one P (see above).
 * Owner only.  Relaxed: the count changes only with the world stopped. */
static inline bool runq_owned(void)
{
    return load_relaxed(&gort__gomaxprocs) == 1;
}

/* Put gp and half of pp's full ring on the global queue in one batch.
 * Returns false if consumers moved head meanwhile (the caller retries).
 * Owner P only.  Mirrors runtime.runqputslow (proc.go). */
static bool runqputslow(struct p *pp, struct g *gp, uint32_t h, uint32_t t)
{
    struct g *batch[RQ / 2 + 1];
    uint32_t n = (t - h) / 2;
    if (n != RQ / 2)
        gort__throw("runqputslow: queue is not full");
    for (uint32_t i = 0; i < n; i++)
        batch[i] = load_relaxed(&pp->runq[SLOT(h + i)]);
    /* Release: our reads of the slots happen before the owner (us, later)
     * or anyone else reuses them; pairs with load_acq of head. */
    if (!cas_rel(&pp->runqhead, h, h + n))
        return false;
    batch[n] = gp;
    if (randomized())
        for (uint32_t i = 1; i <= n; i++) {
            uint32_t j = gort__fastrandn(i + 1);
            struct g *tmp = batch[i];
            batch[i] = batch[j];
            batch[j] = tmp;
        }
    gort__lock(&gort__sched.lock);
    for (uint32_t i = 0; i <= n; i++)
        gort__gsegq_push(&gort__sched.runq, batch[i]);
    store_relaxed(&gort__sched.runqsize, gort__sched.runqsize + (int32_t)n + 1);
    gort__unlock(&gort__sched.lock);
    return true;
}

/* Put gp on pp's local queue; with next, into runnext, kicking the old
 * runnext to the tail of the ring.  A full ring spills half of itself to
 * the global queue.  Owner P only.  Mirrors runtime.runqput (proc.go). */
void gort__runqput_slow(struct p *pp, struct g *gp, bool next)
{
    if (randomized() && next && gort__fastrandn(2) == 0)
        next = false;
    if (next) {
        /* An empty runnext is ours alone to fill: thieves only ever CAS
         * a G out of it, never into it.  So a release store (publishing
         * the G to a thief's load-acquire) suffices, without the locked
         * exchange a full one needs. */
        struct g *old = load_relaxed(&pp->runnext);
        if (!old) {
            store_rel(&pp->runnext, gp);
            return;
        }
        /* Acq-rel exchange: a thief may CAS the old G out on its last
         * pass at the same time; with no thief, a store. */
        if (runq_owned())
            store_relaxed(&pp->runnext, gp);
        else if (!(old = xchg_acqrel(&pp->runnext, gp)))
            return;
        gp = old; /* kick the old runnext out to the ring */
    }
    for (;;) {
        /* Acquire: pairs with consumers' CAS-release of head, so their
         * reads of the slots are done before we overwrite them. */
        uint32_t h = load_acq(&pp->runqhead);
        uint32_t t = pp->runqtail; /* only the owner writes tail */
        if (t - h < RQ) {
            store_relaxed(&pp->runq[SLOT(t)], gp);
            /* Release: makes the slot's content visible to consumers
             * that load-acquire tail. */
            store_rel(&pp->runqtail, t + 1);
            return;
        }
        if (runqputslow(pp, gp, h, t))
            return;
        /* The queue is not full any more; the put above will succeed. */
    }
}

/* Prefetch for the Gs after the one at h, taken: in a deep queue each
 * has likely waited long enough to go cold.  The one after next: its
 * lines.  The next one, whose lines were asked for when the one before
 * it was taken: the memory it will touch first, the context it saved or
 * its argument.  Those two reads are hints that may race with a thief
 * that took the next G and runs it (a G is never freed, so the address
 * is always valid; a stale value costs one useless prefetch); they are
 * left out under ThreadSanitizer, which would report the race. */
static inline void prefetch_next(struct p *pp, uint32_t h, uint32_t t)
{
#ifndef GORT_TSAN
    struct g *next = load_relaxed(&pp->runq[SLOT(h + 1)]);
    const void *sp = load_relaxed(&next->sched_sp);
    __builtin_prefetch(sp ? sp : load_relaxed(&next->arg));
#endif
    if (t - h > 2)
        gort__prefetch_g(load_relaxed(&pp->runq[SLOT(h + 2)]));
}

/* Take a G from pp: runnext first (it inherits the time slice), then the
 * ring.  Owner P only.  Mirrors runtime.runqget (proc.go). */
struct g *gort__runqget(struct p *pp, bool *inherit_time)
{
    /* A thief may CAS runnext to NULL concurrently, so take it by CAS
     * (with no thief, by a store). */
    bool owned = runq_owned();
    struct g *next = load_relaxed(&pp->runnext);
    if (next) {
        bool took = true;
        if (owned)
            store_relaxed(&pp->runnext, NULL);
        else
            took = cas_acqrel(&pp->runnext, next, NULL);
        if (took) {
            *inherit_time = true;
            return next;
        }
    }
    *inherit_time = false;
    for (;;) {
        /* Acquire: pairs with other consumers' CAS-release of head. */
        uint32_t h = load_acq(&pp->runqhead);
        uint32_t t = pp->runqtail; /* owner: our own writes */
        if (t == h)
            return NULL;
        struct g *gp = load_relaxed(&pp->runq[SLOT(h)]);
        /* Release: our read of the slot precedes its reuse. */
        if (owned)
            store_rel(&pp->runqhead, h + 1);
        else if (!cas_rel(&pp->runqhead, h, h + 1))
            continue;
        if (t - h > 1)
            prefetch_next(pp, h, t);
        return gp;
    }
}

bool gort__runqempty(struct p *pp)
{
    /* Go's runqempty: read head, tail, runnext, then tail again, so that
     * a G moving from runnext into the ring between the loads is not
     * missed.  Acquire loads order the reads. */
    for (;;) {
        uint32_t head = load_acq(&pp->runqhead);
        uint32_t tail = load_acq(&pp->runqtail);
        struct g *next = load_acq(&pp->runnext);
        if (load_acq(&pp->runqtail) == tail)
            return head == tail && next == NULL;
    }
}

uint32_t gort__runqlen(struct p *pp)
{
    uint32_t h = load_acq(&pp->runqhead);
    uint32_t t = load_acq(&pp->runqtail);
    return t - h;
}

/* Grab about half of pp's ring into batch[bh...] (a ring of RQ slots).
 * On the last steal pass (stealnext) an empty ring gives up its runnext.
 * Returns the count.  Any M.  Mirrors runtime.runqgrab (proc.go). */
static uint32_t runqgrab(struct p *pp, struct g **batch, uint32_t bh,
                         bool stealnext)
{
    /* runq_owned's premise: with one P nobody steals. */
    if (GORT_UNLIKELY(runq_owned()))
        gort__throw("runqgrab: stealing with one P");
    for (;;) {
        /* Acquire both: pairs with the owner's store-release of tail
         * (slot contents) and other consumers' CAS of head. */
        uint32_t h = load_acq(&pp->runqhead);
        uint32_t t = load_acq(&pp->runqtail);
        uint32_t n = t - h;
        n = n - n / 2;
        if (n == 0) {
            if (!stealnext)
                return 0;
            struct g *next = load_acq(&pp->runnext);
            if (!next)
                return 0;
            if (load_relaxed(&pp->status) == P_RUNNING) {
                /* pp's G is probably about to park and hand runnext the
                 * CPU; stealing it now would only bounce it between
                 * threads.  Back off briefly, as Go does (usleep(3)). */
                gort__usleep(3);
            }
            if (!cas_acqrel(&pp->runnext, next, NULL))
                continue;
            store_relaxed(&batch[SLOT(bh)], next);
            return 1;
        }
        if (n > RQ / 2)
            continue; /* head and tail read inconsistently: retry */
        for (uint32_t i = 0; i < n; i++) {
            struct g *gp = load_relaxed(&pp->runq[SLOT(h + i)]);
            store_relaxed(&batch[SLOT(bh + i)], gp);
        }
        /* Release: our reads of the slots happen before their reuse. */
        if (cas_rel(&pp->runqhead, h, h + n))
            return n;
    }
}

/* Steal half of p2's queue into pp's ring and return one G to run.
 * Caller owns pp.  Mirrors runtime.runqsteal (proc.go). */
struct g *gort__runqsteal(struct p *pp, struct p *p2, bool stealnext)
{
    uint32_t t = pp->runqtail; /* owner */
    uint32_t n = runqgrab(p2, pp->runq, t, stealnext);
    if (n == 0)
        return NULL;
    gort__stat_add(&pp->nsteals, n); /* /gort/sched/steals */
    n--;
    struct g *gp = load_relaxed(&pp->runq[SLOT(t + n)]);
    if (n == 0)
        return gp;
    uint32_t h = load_acq(&pp->runqhead);
    if (t - h + n >= RQ)
        gort__throw("runqsteal: runq overflow");
    /* Release: publishes the stolen slots to consumers of pp. */
    store_rel(&pp->runqtail, t + n);
    return gp;
}

/* Move every G of a P being destroyed to the head of the global queue,
 * keeping their order.  STW only, sched.lock held.  From (*p).destroy. */
void gort__runqdrain_to_global_locked(struct p *pp)
{
    gort__lock_assert_held(&gort__sched.lock);
    while (pp->runqhead != pp->runqtail) {
        pp->runqtail--;
        gort__globrunqputhead_locked(pp->runq[SLOT(pp->runqtail)]);
    }
    struct g *next = pp->runnext;
    if (next) {
        gort__globrunqputhead_locked(next);
        pp->runnext = NULL;
    }
}

/* A segment for q: one of its spares, or a new one.  q's lock held. */
static struct gqseg *seg_get(struct gsegq *q)
{
    struct gqseg *s = q->spare;
    if (s)
        q->spare = s->next;
    else if (!(s = gort__malloc(sizeof *s)))
        gort__fatal("out of memory: no segment for a queue of Gs "
                    "(%zu bytes)", sizeof *s);
    s->next = NULL;
    return s;
}

/* q's tail segment is full (or q is empty): append a segment and gp. */
void gort__gsegq_push_slow(struct gsegq *q, struct g *gp)
{
    struct gqseg *s = seg_get(q);
    s->head = 0;
    s->tail = 1;
    s->g[0] = gp;
    if (q->tail)
        q->tail->next = s;
    else
        q->head = s;
    q->tail = s;
}

/* q's head segment has been emptied and another follows: unlink it and
 * keep it spare (a queue's segments, spares included, never exceed its
 * peak length / GORT_GQSEG_N + 2). */
void gort__gsegq_retire(struct gsegq *q)
{
    struct gqseg *s = q->head;
    q->head = s->next;
    if (!q->head)
        q->tail = NULL;
    s->next = q->spare;
    q->spare = s;
}

void gort__gsegq_push_head(struct gsegq *q, struct g *gp)
{
    struct gqseg *s = q->head;
    if (s && s->head == s->tail) /* empty, so the only one: fill from the top */
        s->head = s->tail = GORT_GQSEG_N;
    if (!s || s->head == 0) {
        s = seg_get(q);
        s->head = s->tail = GORT_GQSEG_N;
        s->next = q->head;
        q->head = s;
        if (!q->tail)
            q->tail = s;
    }
    s->g[--s->head] = gp;
}

static void seg_free_all(struct gqseg *s)
{
    while (s) {
        struct gqseg *next = s->next;
        gort__free(s);
        s = next;
    }
}

void gort__gsegq_fini(struct gsegq *q)
{
    seg_free_all(q->head);
    seg_free_all(q->spare);
    q->head = q->tail = q->spare = NULL;
}

void gort__globrunqputhead_locked(struct g *gp)
{
    gort__lock_assert_held(&gort__sched.lock);
    gort__gsegq_push_head(&gort__sched.runq, gp);
    store_relaxed(&gort__sched.runqsize, gort__sched.runqsize + 1);
}

/* Move a list of Gs to the tail of a segment queue. */
static void gsegq_push_list(struct gsegq *q, struct gqueue *batch)
{
    struct g *gp;
    while ((gp = gort__gqueue_pop(batch)))
        gort__gsegq_push(q, gp);
}

void gort__globrunqputbatch_locked(struct gqueue *batch, int32_t n)
{
    gort__lock_assert_held(&gort__sched.lock);
    gsegq_push_list(&gort__sched.runq, batch);
    store_relaxed(&gort__sched.runqsize, gort__sched.runqsize + n);
}

/* Put Gs woken by timers into the global queue after the ones woken
 * before them but ahead of everything else (new and yielding Gs): a
 * sleeper that is due runs before work that has not started, and sleepers
 * stay in deadline order among themselves.  They have a queue of their
 * own, runq_woken, taken before runq. */
void gort__globrunqputwoken_locked(struct gqueue *batch, int32_t n)
{
    gort__lock_assert_held(&gort__sched.lock);
    gsegq_push_list(&gort__sched.runq_woken, batch);
    /* Relaxed store: pick_fast reads it outside the lock as a hint. */
    store_relaxed(&gort__sched.nwoken, gort__sched.nwoken + n);
    store_relaxed(&gort__sched.runqsize, gort__sched.runqsize + n);
}

static bool gsegq_has(const struct gsegq *q, const struct g *gp)
{
    for (const struct gqseg *s = q->head; s; s = s->next)
        for (uint32_t i = s->head; i < s->tail; i++)
            if (s->g[i] == gp)
                return true;
    return false;
}

bool gort__globrunq_has_locked(struct g *gp)
{
    gort__lock_assert_held(&gort__sched.lock);
    return gsegq_has(&gort__sched.runq_woken, gp) ||
           gsegq_has(&gort__sched.runq, gp);
}

void gort__globrunq_fini(void)
{
    gort__gsegq_fini(&gort__sched.runq_woken);
    gort__gsegq_fini(&gort__sched.runq);
}

/* Put the Gs of q (n of them) on pp's ring, and what does not fit on the
 * global queue in one batch.  Owner P only.  Mirrors runqputbatch. */
void gort__runqputbatch(struct p *pp, struct gqueue *q, int32_t n)
{
    /* Acquire: pairs with consumers' CAS-release of head, so the slots
     * below head are free before we refill them. */
    uint32_t h = load_acq(&pp->runqhead);
    uint32_t t = pp->runqtail, t0 = t;
    while (q->head && t - h < (uint32_t)RQ) {
        store_relaxed(&pp->runq[SLOT(t)], gort__gqueue_pop(q));
        t++;
    }
    n -= (int32_t)(t - t0);
    /* Release: the slots are filled before a consumer sees the new tail. */
    store_rel(&pp->runqtail, t);
    if (q->head) {
        gort__lock(&gort__sched.lock);
        gort__globrunqputbatch_locked(q, n);
        gort__unlock(&gort__sched.lock);
    }
}

/* Take a batch from the global queue: one G to return, and up to
 * len/gomaxprocs (capped at half the ring, and at max when max > 0) more
 * into pp's ring.  Mirrors runtime.globrunqget (proc.go). */
struct g *gort__globrunqget_slow(struct p *pp, int32_t max)
{
    int32_t size = gort__sched.runqsize;
    if (size <= 1 || max == 1) {
        /* The common small case: one G, nothing to move to the ring. */
        if (size == 0)
            return NULL;
        store_relaxed(&gort__sched.runqsize, size - 1);
        return gort__globpop_locked();
    }
    int32_t procs = load_relaxed(&gort__gomaxprocs);
    /* size/procs + 1, without the division in the common small case. */
    int32_t n = size < procs ? 1 : size / procs + 1;
    if (n > size)
        n = size;
    if (max > 0 && n > max)
        n = max;
    if (n > RQ / 2)
        n = RQ / 2;
    store_relaxed(&gort__sched.runqsize, size - n);
    struct g *gp = gort__globpop_locked();
    for (n--; n > 0; n--)
        gort__runqput(pp, gort__globpop_locked(), false);
    return gp;
}

/* ---------------------------------------------------------------------------
 * The simulation's pick (docs/sim.md).
 *
 * With GORTDEBUG=sim there is one P, driven by one M at a time, so every
 * runnable G is in its runnext, its ring or the global queue, and nothing
 * else moves them while the driver holds sched.lock.  The next G is drawn
 * from all of them by the seeded random state: where a G sits (runnext
 * or not, woken by a timer or not) no longer orders it.
 * ------------------------------------------------------------------------- */

/* The address of the i-th G of a segment queue, or NULL past its end. */
static struct g **gsegq_at(struct gsegq *q, uint32_t *i)
{
    for (struct gqseg *s = q->head; s; s = s->next) {
        uint32_t len = s->tail - s->head;
        if (*i < len)
            return &s->g[s->head + *i];
        *i -= len;
    }
    return NULL;
}

/* PCT's priorities, by goid (0: not drawn yet).  Beside the Gs rather
 * than in struct g, which the normal mode's hot paths walk.  The driving
 * M only (sched.lock held, or the preemption check of the one P's G). */
static int64_t *sim_prios;
static size_t sim_nprios;

/* gp's slot in sim_prios, grown as goids grow. */
static int64_t *sim_prio_slot(struct g *gp)
{
    size_t id = (size_t)gp->goid;
    if (id >= sim_nprios) {
        size_t n = sim_nprios ? 2 * sim_nprios : 1024;
        while (n <= id)
            n *= 2;
        int64_t *np = gort__realloc(sim_prios, n * sizeof *np);
        if (!np)
            gort__fatal("out of memory: no room for %zu PCT priorities", n);
        memset(np + sim_nprios, 0, (n - sim_nprios) * sizeof *np);
        sim_prios = np;
        sim_nprios = n;
    }
    return &sim_prios[id];
}

/* gp's PCT priority: drawn from the seeded state when the simulation
 * first meets its goroutine, at least d. */
static int64_t sim_prio(struct g *gp)
{
    int64_t *slot = sim_prio_slot(gp);
    if (*slot == 0)
        *slot = gort__sim.pctdepth + (int64_t)gort__fastrandn(1u << 30);
    return *slot;
}

void gort__sim_fini(void)
{
    gort__free(sim_prios);
    sim_prios = NULL;
    sim_nprios = 0;
}

/* PCT's step: the index of a change point that falls on it, or -1. */
static int32_t sim_pct_step(void)
{
    int64_t step = ++gort__sim.step;
    for (int32_t i = 0; i < gort__sim.pctdepth - 1; i++)
        if (gort__sim.change[i] == step)
            return i;
    return -1;
}

/* The index, among pp's runnext, ring and the global queue (in that
 * order), of the G with the highest PCT priority (the first of equals),
 * and that priority in *prio; -1 when all are empty.  sched.lock held. */
static int64_t sim_pct_best(struct p *pp, int64_t *prio)
{
    int64_t best = -1, idx = 0;
    *prio = INT64_MIN;
#define SIM_CONSIDER(gp)                                                       \
    do {                                                                       \
        int64_t pr_ = sim_prio(gp);                                            \
        if (pr_ > *prio) {                                                     \
            *prio = pr_;                                                       \
            best = idx;                                                        \
        }                                                                      \
        idx++;                                                                 \
    } while (0)
    struct g *next = load_relaxed(&pp->runnext);
    if (next)
        SIM_CONSIDER(next);
    for (uint32_t h = pp->runqhead; h != pp->runqtail; h++)
        SIM_CONSIDER(load_relaxed(&pp->runq[SLOT(h)]));
    struct gsegq *qs[2] = {&gort__sched.runq_woken, &gort__sched.runq};
    for (int k = 0; k < 2; k++)
        for (struct gqseg *s = qs[k]->head; s; s = s->next)
            for (uint32_t i = s->head; i < s->tail; i++)
                SIM_CONSIDER(s->g[i]);
#undef SIM_CONSIDER
    return best;
}

/* Steps count only where there is a choice (a runnable G besides the
 * running one, or two runnable ones at a pick): a change point in a
 * stretch where one G alone can run would change nothing (Burckhardt et
 * al., 4.1). */
bool gort__sim_pct_preempt(struct m *mp, struct g *gp)
{
    gort__lock_m(mp, &gort__sched.lock);
    int64_t prio;
    bool other = sim_pct_best(mp->p, &prio) >= 0;
    gort__unlock_m(mp, &gort__sched.lock);
    if (!other)
        return false;
    int32_t cp = sim_pct_step();
    if (cp >= 0) {
        *sim_prio_slot(gp) = cp + 1;
        return true;
    }
    return prio > sim_prio(gp);
}

struct g *gort__sim_runqpick(struct p *pp)
{
    gort__lock(&gort__sched.lock);
    /* One P, its owner here: plain reads of its queue are exact. */
    struct g *next = load_relaxed(&pp->runnext);
    uint32_t h = load_relaxed(&pp->runqhead), t = pp->runqtail;
    uint32_t nnext = next != NULL, nring = t - h;
    uint32_t nglob = (uint32_t)gort__sched.runqsize;
    uint32_t n = nnext + nring + nglob;
    struct g *gp = NULL;
    if (n == 0)
        goto out;
    uint32_t r;
    if (gort__sim.strategy == SIM_PCT) {
        /* The highest priority runs; at a change point the one chosen
         * drops to the change point's low priority first. */
        int64_t prio;
        r = (uint32_t)sim_pct_best(pp, &prio);
        int32_t cp = n > 1 ? sim_pct_step() : -1;
        if (cp >= 0) {
            struct g *chosen;
            if (r < nnext) {
                chosen = next;
            } else if (r < nnext + nring) {
                chosen = load_relaxed(&pp->runq[SLOT(h + r - nnext)]);
            } else {
                uint32_t i = r - nnext - nring;
                struct g **slot = gsegq_at(&gort__sched.runq_woken, &i);
                if (!slot)
                    slot = gsegq_at(&gort__sched.runq, &i);
                chosen = *slot;
            }
            *sim_prio_slot(chosen) = cp + 1;
            r = (uint32_t)sim_pct_best(pp, &prio);
        }
    } else {
        r = gort__fastrandn(n);
    }
    if (r < nnext) {
        gp = next;
        store_relaxed(&pp->runnext, NULL);
    } else if ((r -= nnext) < nring) {
        /* The chosen slot takes the head's G; the head is then taken. */
        gp = load_relaxed(&pp->runq[SLOT(h + r)]);
        store_relaxed(&pp->runq[SLOT(h + r)],
                      load_relaxed(&pp->runq[SLOT(h)]));
        /* Release, as in gort__runqget: our reads of the slots come
         * before their reuse. */
        store_rel(&pp->runqhead, h + 1);
    } else {
        r -= nring;
        uint32_t i = r;
        struct g **slot = gsegq_at(&gort__sched.runq_woken, &i);
        if (!slot)
            slot = gsegq_at(&gort__sched.runq, &i);
        if (!slot)
            gort__throw("sim: global queue shorter than runqsize");
        gp = *slot;
        /* The chosen place takes the G the queue would give up first. */
        store_relaxed(&gort__sched.runqsize, gort__sched.runqsize - 1);
        *slot = gort__globpop_locked();
    }
out:
    gort__unlock(&gort__sched.lock);
    return gp;
}
