/* SPDX-License-Identifier: MIT */
/*
 * sema.c - semaphores that park goroutines, keyed by address, and the
 * ticket-based notify lists behind gort_cond.  Mirrors sema.go.
 *
 * These are not counting semaphores for users: they are the sleep and
 * wake-up primitive under the sync package, in which every sleep is paired
 * with one wake-up even when, through a race, the wake-up comes first
 * (Mullender and Cox, "Semaphores in Plan 9").  A semaphore is any
 * uint32_t the caller owns; its value counts the units available.
 *
 * Layout.  Waiters for all addresses hash into 251 roots (semTabSize in
 * sema.go: prime, so that addresses spaced by powers of two spread over
 * the table), each on its own cache line.  A root holds a treap of the
 * distinct addresses that have waiters; each tree node is the first
 * waiter of its address and heads a list of the others:
 *
 *     root->treap
 *         |
 *       [A3] --waitlink--> [A3] --> [A3]      tree ordered by address
 *       /   \                                 (left: lower); each node's
 *    [A1]   [A7] --> [A7]                     prio <= its children's
 *              \
 *             [A9]
 *
 * Finding an address is O(log n) in the number of distinct addresses with
 * waiters in the root (expected: the priorities are random, which keeps
 * the tree balanced on average); operations on one address's list are
 * O(1).  A single list per root (a linear scan on every release) is what
 * sema.go used before Go issue 17953: thousands of goroutines parked on
 * distinct addresses that share a root made each release a long walk.
 *
 * A waiter record (struct semawaiter, Go's sudog) lives on the stack of
 * the parked goroutine: it needs no allocation, and it stays valid while
 * the goroutine waits, which is exactly as long as any list refers to it.
 *
 * Protocol (as Go).  semrelease adds a unit first, then wakes the first
 * waiter for that address; a woken waiter takes a unit by CAS and queues
 * again if a newcomer got there first.  root->nwait counts the waiters of
 * a root and lets a release with nobody waiting skip the lock: the waiter
 * increments nwait and then re-checks the value, the releaser increments
 * the value and then reads nwait, both sequentially consistent, so at
 * least one of them sees the other (a Dekker handshake).
 *
 * Hand-off.  With handoff, the releaser takes the unit on the waiter's
 * behalf (ticket = 1) before readying it, so no running goroutine can
 * barge in between.  Go then yields its P (goyield) so that the waiter,
 * readied into runnext, runs at once.  Here the releaser only honours a
 * pending preemption request: the waiter runs as soon as the releaser
 * parks, when its slice ends (sysmon asks after 10 ms) or when an idle P
 * steals it (ready wakes one).  Yielding was rejected because it puts the
 * releaser back on a run queue, which starts a new time slice at every
 * hand-off: two goroutines passing a semaphore back and forth would then
 * count a schedtick each time, where in this design the pair shares one
 * slice and sysmon alone ends it, as for any other runnext hand-off.  The
 * cost is that a releaser that keeps running after a hand-off delays the
 * new owner by up to a time slice.
 *
 * Notify lists (notifyList in sema.go) hand every waiter a ticket from
 * cond->wait, outside any lock, before the waiter drops the user's mutex;
 * cond->notify is the next ticket to wake.  A signal wakes exactly the
 * holder of ticket `notify`, so waiters wake in the order they took
 * tickets, and a signal that comes between a waiter's ticket and its park
 * is not lost: the waiter sees its ticket already passed and does not
 * park.  The list's lock is the uint32_t `lock` of gort_cond used as a
 * gort_spinlock.
 *
 * Invariants:
 *   - root->nwait >= the number of waiters queued in the root: it is
 *     incremented before the final check under the lock and decremented
 *     when a waiter is dequeued (or gives up), so a releaser that reads 0
 *     after adding its unit may skip the lock.
 *   - The treap holds one node per distinct address with waiters; every
 *     node's prio is <= its children's, and left < node < right by
 *     address.  Only nodes have meaningful parent/left/right links;
 *     waittail is meaningful only in a node.
 *   - A waiter record is on at most one list, and only while its G waits;
 *     nothing touches it after the G is readied.
 *   - Tickets of a notify list: notify <= wait (as unwrapped counters,
 *     whose difference stays below 2^31); the list holds only waiters
 *     whose ticket >= notify, in ticket order but for small reorderings
 *     between taking a ticket and queueing.
 *   - A root's lock and a notify list's lock are object locks (lock
 *     order 1 in sched.h): never held together, and released before a
 *     waiter is readied.
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "preempt.h"
#include "proc.h"
#include "sched.h"
#include "sema.h"

#include <string.h>

/* semTabSize in sema.go: a prime, so as not to correlate with user
 * patterns of addresses. */
#define SEMTABSIZE 251

struct semawaiter {
    uint32_t *addr;  /* the semaphore waited on: the treap key */
    struct g *g;     /* the parked goroutine, on whose stack this lives */
    /* Tree links (Go's parent, prev, next), valid only in a node. */
    struct semawaiter *parent, *left, *right;
    uint32_t prio;   /* random heap priority of a node */
    /* Further waiters on the same address, in wake order: waitlink
     * chains them from the node; the node's waittail is the last. */
    struct semawaiter *waitlink, *waittail;
    uint32_t ticket; /* 1: the releaser took the unit for us (handoff);
                        written before the ready that wakes us */
    bool queued;     /* in the root's treap or lists; under the lock */
    bool timedout;   /* its deadline timer took it out; under the lock,
                        read by its G after the ready */
    struct dlwait dl; /* what its deadline timer calls (semacquire_until) */
    struct semaroot *dlroot; /* addr's root, for dl: set before the timer
                                can see the record, then only read */
    struct semawaiter *proxy; /* takes its place when its deadline passes,
                                 or NULL: it leaves */
};

struct semaroot {
    gort_lock lock GORT_CACHELINE; /* guards treap and the waiters in it */
    struct semawaiter *treap;      /* root of the tree; under lock */
    uint32_t nwait;                /* atomic: see the invariants */
};
_Static_assert(sizeof(struct semaroot) == 64, "one root per cache line");

static struct semaroot semtable[SEMTABSIZE] = {
    [0 ... SEMTABSIZE - 1] = {.lock = GORT_LOCK_INIT(LOCKRANK_SEMAROOT)},
};

static struct semaroot *semroot(const uint32_t *addr)
{
    return &semtable[((uintptr_t)addr >> 3) % SEMTABSIZE];
}

/* Take one unit if there is one.  Mirrors cansemacquire (sema.go). */
static bool cansemacquire(uint32_t *addr)
{
    for (;;) {
        /* Seq-cst: the waiter's side of the Dekker handshake with
         * semrelease (nwait increment, then this load; the releaser does
         * value increment, then nwait load).  On success the CAS also
         * acquires what the releaser did before releasing. */
        uint32_t v = load_seqcst(addr);
        if (v == 0)
            return false;
        if (cas_acqrel(addr, v, v - 1))
            return true;
    }
}

static bool unlock_lock(struct m *mp, struct g *gp, void *lock)
{
    (void)gp;
    gort__unlock_m(mp, lock);
    return true;
}

/* ---------------------------------------------------------------------------
 * The treap.  All of it runs under the root's lock.
 * ------------------------------------------------------------------------- */

/* Point x's parent (or the root) at y instead of x. */
static void replace_child(struct semaroot *root, struct semawaiter *x,
                          struct semawaiter *y)
{
    struct semawaiter *p = x->parent;
    if (!p)
        root->treap = y;
    else if (p->left == x)
        p->left = y;
    else if (p->right == x)
        p->right = y;
    else
        gort__throw("semaroot: broken parent link");
}

/* Turn (x a (y b c)) into (y (x a b) c).  Mirrors semaRoot.rotateLeft. */
static void rotate_left(struct semaroot *root, struct semawaiter *x)
{
    struct semawaiter *y = x->right, *b = y->left;
    replace_child(root, x, y);
    y->parent = x->parent;
    y->left = x;
    x->parent = y;
    x->right = b;
    if (b)
        b->parent = x;
}

/* Turn (y (x a b) c) into (x a (y b c)).  Mirrors semaRoot.rotateRight. */
static void rotate_right(struct semaroot *root, struct semawaiter *y)
{
    struct semawaiter *x = y->left, *b = x->right;
    replace_child(root, y, x);
    x->parent = y->parent;
    x->right = y;
    y->parent = x;
    y->left = b;
    if (b)
        b->parent = y;
}

/* Put s in t's place in the tree: same links, same priority. */
static void take_place(struct semaroot *root, struct semawaiter *t,
                       struct semawaiter *s)
{
    replace_child(root, t, s);
    s->parent = t->parent;
    s->left = t->left;
    s->right = t->right;
    s->prio = t->prio;
    if (s->left)
        s->left->parent = s;
    if (s->right)
        s->right->parent = s;
    t->parent = t->left = t->right = NULL;
}

#ifdef GORT_DEBUG
/* Check the order and heap properties below t; returns the node count. */
static size_t treap_check(const struct semawaiter *t, uintptr_t lo,
                          uintptr_t hi)
{
    if (!t)
        return 0;
    uintptr_t a = (uintptr_t)t->addr;
    GORT_ASSERT(a >= lo && a <= hi);
    GORT_ASSERT(!t->left || (t->left->parent == t && t->left->prio >= t->prio));
    GORT_ASSERT(!t->right ||
                (t->right->parent == t && t->right->prio >= t->prio));
    return 1 + treap_check(t->left, lo, a - 1) + treap_check(t->right, a + 1, hi);
}
#define TREAP_CHECK(root)                                                      \
    do {                                                                       \
        GORT_ASSERT(!(root)->treap || !(root)->treap->parent);                 \
        (void)treap_check((root)->treap, 0, UINTPTR_MAX);                      \
    } while (0)
#else
#define TREAP_CHECK(root) ((void)0)
#endif

/* Add s, the waiter record of the running G, for addr: at the end of the
 * address's list, or with lifo at its front (taking the node's place in
 * the tree).  A new address becomes a leaf with a random priority and
 * rotates up until the heap order holds.  Mirrors semaRoot.queue. */
static void queue_locked(struct semaroot *root, uint32_t *addr,
                         struct semawaiter *s, struct g *gp, bool lifo)
{
    gort__lock_assert_held(&root->lock);
    s->addr = addr;
    s->g = gp;
    s->ticket = 0;
    s->parent = s->left = s->right = NULL;
    s->waitlink = s->waittail = NULL;
    s->queued = true;

    struct semawaiter *last = NULL, **pt = &root->treap;
    for (struct semawaiter *t = *pt; t; t = *pt) {
        if (t->addr == addr) {
            if (lifo) {
                /* s becomes the node; t, with its list, follows it. */
                take_place(root, t, s);
                s->waitlink = t;
                s->waittail = t->waittail ? t->waittail : t;
                t->waittail = NULL;
            } else {
                if (t->waittail)
                    t->waittail->waitlink = s;
                else
                    t->waitlink = s;
                t->waittail = s;
            }
            TREAP_CHECK(root);
            return;
        }
        last = t;
        pt = (uintptr_t)addr < (uintptr_t)t->addr ? &t->left : &t->right;
    }

    s->prio = gort__fastrand();
    s->parent = last;
    *pt = s;
    while (s->parent && s->parent->prio > s->prio) {
        if (s->parent->left == s)
            rotate_right(root, s->parent);
        else
            rotate_left(root, s->parent);
    }
    TREAP_CHECK(root);
}

/* Remove and return the first waiter for addr, or NULL.  If others wait
 * on addr, the next one takes its place in the tree; otherwise the node
 * rotates down (towards its child of lower priority) until it is a leaf
 * and is cut off.  Mirrors semaRoot.dequeue. */
static struct semawaiter *dequeue_locked(struct semaroot *root,
                                         uint32_t *addr)
{
    gort__lock_assert_held(&root->lock);
    struct semawaiter *s = root->treap;
    while (s && s->addr != addr)
        s = (uintptr_t)addr < (uintptr_t)s->addr ? s->left : s->right;
    if (!s)
        return NULL;

    struct semawaiter *t = s->waitlink;
    if (t) {
        take_place(root, s, t);
        t->waittail = t->waitlink ? s->waittail : NULL;
    } else {
        while (s->left || s->right) {
            if (!s->right || (s->left && s->left->prio < s->right->prio))
                rotate_right(root, s);
            else
                rotate_left(root, s);
        }
        replace_child(root, s, NULL);
    }
    s->parent = s->left = s->right = NULL;
    s->waitlink = s->waittail = NULL;
    s->queued = false;
    TREAP_CHECK(root);
    return s;
}

/* The node of queued s's address, and in *prevp the record before s on
 * the node's list (NULL when s is the node). */
static struct semawaiter *find_locked(struct semaroot *root,
                                      struct semawaiter *s,
                                      struct semawaiter **prevp)
{
    gort__lock_assert_held(&root->lock);
    struct semawaiter *t = root->treap;
    while (t && t->addr != s->addr)
        t = (uintptr_t)s->addr < (uintptr_t)t->addr ? t->left : t->right;
    if (!t)
        gort__throw("semaroot: waiter's address not in the tree");
    struct semawaiter *prev = NULL;
    if (t != s)
        for (prev = t; prev->waitlink != s;)
            if (!(prev = prev->waitlink))
                gort__throw("semaroot: waiter not on its address's list");
    *prevp = prev;
    return t;
}

/* Take s, queued for its address, out wherever it is: as the node, the
 * way dequeue does; in the node's list, by unlinking it. */
static void remove_locked(struct semaroot *root, struct semawaiter *s)
{
    struct semawaiter *prev, *t = find_locked(root, s, &prev);
    if (t == s) {
        dequeue_locked(root, s->addr);
        return;
    }
    prev->waitlink = s->waitlink;
    if (t->waittail == s)
        t->waittail = prev == t ? NULL : prev;
    s->waitlink = NULL;
    s->queued = false;
    TREAP_CHECK(root);
}

/* Put px, a proxy (no G), in s's place: the same node or list position. */
static void replace_locked(struct semaroot *root, struct semawaiter *s,
                           struct semawaiter *px)
{
    *px = (struct semawaiter){.addr = s->addr, .queued = true};
    struct semawaiter *prev, *t = find_locked(root, s, &prev);
    if (t == s) {
        take_place(root, s, px);
        px->waitlink = s->waitlink;
        px->waittail = s->waittail;
    } else {
        prev->waitlink = px;
        px->waitlink = s->waitlink;
        if (t->waittail == s)
            t->waittail = px;
    }
    s->waitlink = s->waittail = NULL;
    s->queued = false;
    TREAP_CHECK(root);
}

void *gort__semproxy_alloc(void)
{
    return gort__malloc(sizeof(struct semawaiter));
}

/* ---------------------------------------------------------------------------
 * Acquire and release.
 * ------------------------------------------------------------------------- */

/* After the park of s's G: whatever woke it took s out first (a release,
 * or its deadline).  A wake-up from anywhere else would leave s, on the
 * G's stack, in the tree after the G moved on, and a later release would
 * wake whatever the stack then holds: stop here, where the cause is. */
static void woken_check(const struct semawaiter *s, const struct g *gp)
{
    if (GORT_UNLIKELY(s->queued))
        gort__throw("semacquire: goroutine %lld woken while still queued "
                    "on %p",
                    (long long)gp->goid, (const void *)s->addr);
}

void gort__semacquire1(uint32_t *addr, bool lifo, uint32_t reason)
{
    if (cansemacquire(addr)) {
        /* A runtime entry: honour a pending preemption request, as Go's
         * function prologues do; without it, two goroutines handing the P
         * to each other through runnext would never yield to sysmon.  Only
         * once the unit is ours: a caller that has announced itself first
         * (a reader counted in an RWMutex) and then yielded here would
         * leave a unit released for it in the semaphore for a time slice,
         * free for a newcomer to take. */
        gort__preempt_check();
        return;
    }
    struct g *gp =
        gort__need_goroutine("gort_mutex_lock, gort_rwmutex_*lock or "
                             "gort_waitgroup_wait")
            ->curg;
    struct semawaiter s;
    struct semaroot *root = semroot(addr);
    for (;;) {
        gort__lock(&root->lock);
        /* Seq-cst: the Dekker handshake, see cansemacquire; any release
         * after the re-check below sees this count and looks for us. */
        xadd_seqcst(&root->nwait, 1);
        if (cansemacquire(addr)) {
            /* Acq-rel: only the count matters, the lock orders the rest. */
            xadd_acqrel(&root->nwait, -1);
            gort__unlock(&root->lock);
            break;
        }
        queue_locked(root, addr, &s, gp, lifo);
        /* Relaxed: dumps read it from other threads, only as a hint. */
        store_relaxed(&gp->waitobj, (const void *)addr);
        gort__park(unlock_lock, &root->lock, reason);
        /* The ready that woke us ordered the releaser's writes of ticket
         * and queued before these reads (the status CAS pair in
         * casgstatus). */
        woken_check(&s, gp);
        if (s.ticket || cansemacquire(addr))
            break;
    }
    store_relaxed(&gp->waitobj, NULL);
}

void gort__semacquire(uint32_t *addr, uint32_t reason)
{
    gort__semacquire1(addr, false, reason);
}

/* s, queued, leaves: its proxy takes its place (and its count in
 * nwait), or it is taken out. */
static void sema_leave_locked(struct semaroot *root, struct semawaiter *s)
{
    if (s->proxy) {
        replace_locked(root, s, s->proxy);
        return;
    }
    remove_locked(root, s);
    xadd_acqrel(&root->nwait, -1); /* acq-rel: a count, under lock */
}

/* The deadline timer of s's G: take s out of its queue and wake the G,
 * unless a release dequeued it first. */
static void sema_dl_cancel(struct g *gp, struct dlwait *w)
{
    struct semawaiter *s =
        (struct semawaiter *)((char *)w - offsetof(struct semawaiter, dl));
    /* Not semroot(s->addr): the G writes addr again (the same value)
     * each time it queues, and this runs without the lock. */
    struct semaroot *root = s->dlroot;
    gort__lock(&root->lock);
    bool hit = s->queued;
    if (hit) {
        sema_leave_locked(root, s);
        s->timedout = true;
    }
    gort__unlock(&root->lock);
    if (hit)
        gort__ready(gp, false);
}

/* The G's wait with a deadline is over: its timer's function no longer
 * looks at the record (the Dekker pair of chan.c's dl_done). */
static void dlsync_done(struct g *gp)
{
    store_seqcst(&gp->dl->sync, NULL);
    while (load_seqcst(&gp->dl->busy))
        gort__cpu_relax();
}

bool gort__semacquire_until(uint32_t *addr, bool lifo, uint32_t reason,
                            int64_t at, void *proxy)
{
    if (cansemacquire(addr)) {
        gort__preempt_check();
        return true;
    }
    struct g *gp = gort__need_goroutine("a wait with a deadline")->curg;
    struct semawaiter s;
    s.queued = false;
    s.dl.cancel = sema_dl_cancel;
    s.proxy = proxy;
    struct semaroot *root = semroot(addr);
    s.dlroot = root;
    bool got = true;
    for (;;) {
        gort__lock(&root->lock);
        xadd_seqcst(&root->nwait, 1); /* seq-cst: see semacquire1 */
        if (cansemacquire(addr)) {
            xadd_acqrel(&root->nwait, -1);
            gort__unlock(&root->lock);
            break;
        }
        queue_locked(root, addr, &s, gp, lifo);
        s.timedout = false;
        /* The record first, then the clock: a firing that found no
         * record read a clock that this read follows, so the deadline
         * shows passed here; one that finds it waits for the lock.
         * Seq-cst: against the timer's load (chan.c, dl_fire). */
        store_seqcst(&gp->dl->sync, &s.dl);
        if (gort_nanotime() >= at) {
            sema_leave_locked(root, &s);
            gort__unlock(&root->lock);
            got = false;
            break;
        }
        store_relaxed(&gp->waitobj, (const void *)addr); /* dumps only */
        gort__park(unlock_lock, &root->lock, reason);
        /* The ready ordered the timer's or the releaser's writes to s. */
        woken_check(&s, gp);
        if (s.timedout) {
            got = false;
            break;
        }
        if (s.ticket || cansemacquire(addr))
            break;
    }
    dlsync_done(gp);
    store_relaxed(&gp->waitobj, NULL);
    return got;
}

void *gort__semrelease(uint32_t *addr, bool handoff)
{
    struct semaroot *root = semroot(addr);
    /* Seq-cst increment then seq-cst load of nwait: the releaser's side
     * of the Dekker handshake with semacquire (which increments nwait,
     * then re-reads the value), so either we see its nwait or it sees our
     * unit.  The increment also publishes our writes (release). */
    xadd_seqcst(addr, 1);
    if (load_seqcst(&root->nwait) == 0)
        return NULL;
    gort__lock(&root->lock);
    /* Relaxed under the lock: every change of nwait that matters here was
     * made under it. */
    if (load_relaxed(&root->nwait) == 0) {
        /* Another release woke the waiter our unit was for. */
        gort__unlock(&root->lock);
        return NULL;
    }
    struct semawaiter *s = dequeue_locked(root, addr);
    if (s && !s->g) {
        /* A proxy: it takes the unit now, for the caller to act on, or,
         * when a newcomer took it first, goes back to the front, as a
         * woken waiter that lost the race queues again. */
        if (cansemacquire(addr)) {
            xadd_acqrel(&root->nwait, -1);
            gort__unlock(&root->lock);
            return s;
        }
        queue_locked(root, addr, s, NULL, true);
        gort__unlock(&root->lock);
        return NULL;
    }
    if (s)
        xadd_acqrel(&root->nwait, -1); /* acq-rel: a count, under lock */
    gort__unlock(&root->lock);
    if (!s)
        return NULL;
    /* The waiter is still parked (its park released the root lock after
     * saving its context), so s stays valid until the ready below. */
    if (s->ticket != 0)
        gort__throw("semrelease: corrupted semaphore ticket");
    if (handoff && cansemacquire(addr))
        s->ticket = 1;
    gort__ready(s->g, true);
    /* Go yields here after a hand-off (goyield); see the file comment for
     * why the new owner waits in runnext instead. */
    gort__preempt_check();
    return NULL;
}

void gort__semafini(void)
{
    /* Waiters of goroutines discarded at shutdown are forgotten. */
    memset(semtable, 0, sizeof semtable);
    for (int i = 0; i < SEMTABSIZE; i++)
        gort__lock_init(&semtable[i].lock, LOCKRANK_SEMAROOT);
}

/* ---------------------------------------------------------------------------
 * Notify lists.  Mirrors notifyList (sema.go).
 * ------------------------------------------------------------------------- */

struct notifywaiter {
    struct g *g;               /* the parked goroutine, on whose stack
                                  this lives; NULL in a tombstone */
    uint32_t ticket;           /* from notifylistadd */
    struct notifywaiter *next; /* under the list lock */
    /* Waits with a deadline (notifylistwait_until) only: */
    bool queued;               /* on the list; under the list lock */
    bool timedout;             /* its timer took it off; under the lock,
                                  read by its G after the ready */
    gort_cond *c;              /* the list it is on */
    struct notifywaiter *tomb; /* the tombstone it leaves if it must */
    struct dlwait dl;          /* what its deadline timer calls */
};

/* The list lock is a spin lock: its holders only queue, unqueue and
 * count, and a waiter's park releases it at once (as a channel's).  The
 * uint32_t is the lock's key; with GORT_LOCKRANK a gort_spinlock also has
 * a rank after it, which this one lacks: it is taken with its rank passed
 * (notifylock_take), and nothing else reads a spin lock's rank. */
#ifdef GORT_LOCKRANK
_Static_assert(offsetof(gort_spinlock, key) == 0 &&
                   sizeof(((gort_spinlock *)0)->key) ==
                       sizeof(((gort_cond *)0)->lock),
               "gort_cond.lock holds a gort_spinlock's key");
#else
_Static_assert(sizeof(gort_spinlock) == sizeof(((gort_cond *)0)->lock) &&
                   _Alignof(gort_spinlock) == _Alignof(uint32_t),
               "gort_cond.lock holds a gort_spinlock");
#endif

static gort_spinlock *notifylock(gort_cond *c)
{
    return (gort_spinlock *)&c->lock;
}

static inline void notifylock_take(gort_spinlock *l)
{
    gort__spinlock_rank_m(gort__getm(), l, LOCKRANK_NOTIFYLIST);
}

/* a < b for running counters that may wrap, whose unwrapped difference
 * stays below 2^31.  Mirrors less (sema.go). */
static bool ticket_less(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

uint32_t gort__notifylistadd(gort_cond *c)
{
    /* Relaxed: the RMW alone makes tickets unique.  The caller holds
     * c->l, and its unlock orders this increment before any notifier
     * that takes c->l afterwards, so such a notifier's load of wait sees
     * it; every other decision is made under the list lock. */
    return xadd_relaxed(&c->wait, 1) - 1;
}

/* After the park of s's G: whatever woke it took s off the list first
 * (see woken_check). */
static void notify_woken_check(const struct notifywaiter *s,
                               const gort_cond *c)
{
    if (GORT_UNLIKELY(s->queued))
        gort__throw("notifylist: goroutine %lld woken while still on the "
                    "list of %p",
                    (long long)s->g->goid, (const void *)c);
}

void gort__notifylistwait(gort_cond *c, uint32_t t)
{
    gort_spinlock *l = notifylock(c);
    notifylock_take(l);
    /* Relaxed under the list lock, which every store of notify holds. */
    if (ticket_less(t, load_relaxed(&c->notify))) {
        gort__spinunlock(l); /* already notified */
        return;
    }
    struct g *gp = gort__need_goroutine("gort_cond_wait")->curg;
    struct notifywaiter s = {.g = gp, .ticket = t, .queued = true};
    if (c->tail)
        ((struct notifywaiter *)c->tail)->next = &s;
    else
        c->head = &s;
    c->tail = &s;
    store_relaxed(&gp->waitobj, (const void *)c); /* dumps only */
    gort__park(gort__spinunlock_commit, l, WAIT_SYNC_COND_WAIT);
    notify_woken_check(&s, c);
    store_relaxed(&gp->waitobj, NULL);
}

/* Nothing to notify: every ticket handed out has been notified. */
static bool notify_none(gort_cond *c)
{
    /* Relaxed: a hint.  A waiter whose ticket the caller must see was
     * ordered before the caller by c->l (see notifylistadd); one that is
     * not ordered so may be missed, as in Go. */
    return load_relaxed(&c->wait) == load_relaxed(&c->notify);
}

/* Unlink s from c's list; prev is the record before it, or NULL. */
static void notify_unlink(gort_cond *c, struct notifywaiter *prev,
                          struct notifywaiter *s)
{
    if (prev)
        prev->next = s->next;
    else
        c->head = s->next;
    if (!s->next)
        c->tail = prev;
    s->next = NULL;
    s->queued = false;
}

/* Tombstones at the head whose ticket is the next to wake stand for
 * nobody: move notify past them, onto *dead, to be freed once the list
 * lock is dropped. */
static void notify_skip_tombs(gort_cond *c, struct notifywaiter **dead)
{
    struct notifywaiter *h;
    while ((h = c->head) && !h->g && h->ticket == load_relaxed(&c->notify)) {
        notify_unlink(c, NULL, h);
        store_relaxed(&c->notify, h->ticket + 1);
        h->next = *dead;
        *dead = h;
    }
}

static void notify_free(struct notifywaiter *dead)
{
    while (dead) {
        struct notifywaiter *next = dead->next;
        gort__free(dead);
        dead = next;
    }
}

void gort__notifylistnotifyone(gort_cond *c)
{
    if (notify_none(c))
        return;
    gort_spinlock *l = notifylock(c);
    notifylock_take(l);
    struct notifywaiter *woken = NULL, *dead = NULL;
    for (;;) {
        uint32_t t = load_relaxed(&c->notify);
        if (t == load_relaxed(&c->wait))
            break;
        /* Relaxed: written under the list lock; the fast paths only
         * compare it with wait. */
        store_relaxed(&c->notify, t + 1);
        /* The holder of ticket t is near the head: it has others before
         * it only to the extent that it lost the race between taking its
         * ticket and queueing.  If it is not queued yet it will see
         * notify > t and not park.  A tombstone in its place (a waiter
         * whose deadline passed) takes no signal: the next ticket gets
         * it. */
        struct notifywaiter *prev = NULL, *s = c->head;
        while (s && s->ticket != t) {
            prev = s;
            s = s->next;
        }
        if (s)
            notify_unlink(c, prev, s);
        if (s && !s->g) {
            s->next = dead;
            dead = s;
            continue;
        }
        woken = s;
        break;
    }
    notify_skip_tombs(c, &dead);
    gort__spinunlock(l);
    notify_free(dead);
    /* Still parked: the park released the list lock after saving its
     * context, so the record is valid until the ready. */
    if (woken)
        gort__ready(woken->g, true);
}

void gort__notifylistnotifyall(gort_cond *c)
{
    if (notify_none(c))
        return;
    gort_spinlock *l = notifylock(c);
    notifylock_take(l);
    struct notifywaiter *s = c->head;
    c->head = c->tail = NULL;
    for (struct notifywaiter *w = s; w; w = w->next)
        w->queued = false;
    /* Every ticket handed out so far is notified: those holders are on
     * the list taken above, or will see notify when they try to queue.
     * Relaxed: written under the list lock. */
    store_relaxed(&c->notify, load_relaxed(&c->wait));
    gort__spinunlock(l);
    while (s) {
        /* Read next before the ready: s dies when its G runs. */
        struct notifywaiter *next = s->next;
        if (s->g)
            gort__ready(s->g, true);
        else
            gort__free(s); /* a tombstone */
        s = next;
    }
}

/* ---------------------------------------------------------------------------
 * Notify-list waits with a deadline (gort_cond_wait_until).
 *
 * A waiter whose deadline passes leaves the list with a ticket nobody has
 * notified.  Were it simply gone, the signal meant for that ticket would
 * find nobody and be lost while later tickets wait.  So it leaves a
 * tombstone, a heap record with its ticket and no G, which a signal skips
 * (handing itself to the next ticket) and a broadcast frees; when its
 * ticket is the next to wake, notify simply moves past it and no
 * tombstone is needed (a lone waiter timing out in a loop allocates
 * nothing that stays).  The waiter allocates its tombstone before it
 * takes its ticket, so that leaving never fails.
 * ------------------------------------------------------------------------- */

void *gort__notifytomb_alloc(void)
{
    return gort__malloc(sizeof(struct notifywaiter));
}

/* s, off the list with its ticket not notified, is leaving: skip its
 * ticket or leave its tombstone where it was (prev, or the head). */
static void notify_abandon(gort_cond *c, struct notifywaiter *prev,
                           struct notifywaiter *s, struct notifywaiter **dead)
{
    if (s->ticket == load_relaxed(&c->notify)) {
        store_relaxed(&c->notify, s->ticket + 1);
        notify_skip_tombs(c, dead);
        return;
    }
    struct notifywaiter *tb = s->tomb;
    s->tomb = NULL;
    *tb = (struct notifywaiter){.ticket = s->ticket, .queued = true};
    tb->next = prev ? prev->next : c->head;
    if (prev)
        prev->next = tb;
    else
        c->head = tb;
    if (!tb->next)
        c->tail = tb;
}

/* Take s off its list, leaving its ticket (list lock held). */
static void notify_leave(struct notifywaiter *s, struct notifywaiter **dead)
{
    gort_cond *c = s->c;
    struct notifywaiter *prev = NULL, *w = c->head;
    while (w != s) {
        prev = w;
        if (!(w = w->next))
            gort__throw("notifylist: waiter not on its list");
    }
    notify_unlink(c, prev, s);
    notify_abandon(c, prev, s, dead);
}

/* The deadline timer of s's G: take it off the list unless it was
 * notified first. */
static void notify_dl_cancel(struct g *gp, struct dlwait *w)
{
    struct notifywaiter *s =
        (struct notifywaiter *)((char *)w - offsetof(struct notifywaiter, dl));
    gort_spinlock *l = notifylock(s->c);
    notifylock_take(l);
    bool hit = s->queued;
    struct notifywaiter *dead = NULL;
    if (hit) {
        notify_leave(s, &dead);
        s->timedout = true;
    }
    gort__spinunlock(l);
    notify_free(dead);
    if (hit)
        gort__ready(gp, false);
}

bool gort__notifylistwait_until(gort_cond *c, uint32_t t, int64_t at,
                                void *tomb)
{
    struct g *gp = gort__need_goroutine("gort_cond_wait_until")->curg;
    struct notifywaiter s = {.g = gp, .ticket = t, .c = c, .tomb = tomb};
    s.dl.cancel = notify_dl_cancel;
    gort_spinlock *l = notifylock(c);
    struct notifywaiter *dead = NULL;
    notifylock_take(l);
    bool notified = ticket_less(t, load_relaxed(&c->notify));
    if (!notified) {
        if (c->tail)
            ((struct notifywaiter *)c->tail)->next = &s;
        else
            c->head = &s;
        c->tail = &s;
        s.queued = true;
        /* The record first, then the clock (as semacquire_until). */
        store_seqcst(&gp->dl->sync, &s.dl);
        if (gort_nanotime() >= at) {
            notify_leave(&s, &dead);
            gort__spinunlock(l);
        } else {
            store_relaxed(&gp->waitobj, (const void *)c); /* dumps only */
            gort__park(gort__spinunlock_commit, l, WAIT_SYNC_COND_WAIT);
            notify_woken_check(&s, c);
            store_relaxed(&gp->waitobj, NULL);
            notified = !s.timedout;
        }
        dlsync_done(gp);
    } else {
        gort__spinunlock(l);
    }
    notify_free(dead);
    gort__free(s.tomb); /* NULL when it was left behind */
    return notified;
}
