/* SPDX-License-Identifier: MIT */
/*
 * chan.c - channels.  Mirrors chan.go.
 *
 * A channel is a lock, a ring buffer of cap elements (none when
 * unbuffered) and two wait queues of sudogs: goroutines blocked sending
 * (sendq) and receiving (recvq).  Each sudog records the waiting G and
 * where its element lives: a blocked sender's value or a blocked
 * receiver's destination, both in the waiter's own memory, which the
 * other side copies to or from directly ("direct hand-off": the value
 * never touches the buffer and the woken G need not take the lock again).
 *
 * Invariants (under c->lock):
 *   - sendq non-empty implies the buffer is full (or there is none);
 *     recvq non-empty implies it is empty.  A sudog of a select whose
 *     other case already won may linger in either queue until its select
 *     dequeues it; dequeue() skips such sudogs (g->selectdone).
 *   - qcount <= dataqsiz; the elements are at recvx, recvx+1, ... mod
 *     dataqsiz; sendx == (recvx + qcount) mod dataqsiz.
 *   - closed only goes 0 -> 1.  After closing, both queues are empty.
 *
 * Lock order: a channel lock is an object lock (sched.h); select takes
 * several at once only in address order.  Readying a G (sched.lock) is
 * done after the channel lock is released, as Go does.
 */
#include "atomic.h"
#include "chan.h"
#include "defs.h"
#include "fatal.h"
#include "lock_futex.h"
#include "preempt.h"
#include "proc.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "sema.h"
#include "timers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Wait queues.
 * ------------------------------------------------------------------------- */

void gort__waitq_enqueue(struct waitq *q, struct sudog *sg)
{
    sg->next = NULL;
    sg->prev = q->last;
    if (q->last)
        q->last->next = sg;
    else
        store_relaxed(&q->first, sg); /* peeked without the lock */
    q->last = sg;
}

/* Take the first waiter that can still be woken.  A select's sudog is
 * taken only by whoever wins the CAS on its G's selectdone, so a G parked
 * in select on several channels is woken exactly once. */
struct sudog *gort__waitq_dequeue_slow(struct waitq *q)
{
    for (;;) {
        struct sudog *sg = q->first;
        if (!sg)
            return NULL;
        gort__waitq_unlink(q, sg);
        /* Acq-rel: the winner's later writes to the G (param, the
         * element) are ordered after the claim; losers see it claimed. */
        if (sg->isselect && !cas_acqrel(&sg->g->selectdone, 0, 1))
            continue;
        return sg;
    }
}

/* Remove sg if it is still queued (a select cleaning up its losing
 * cases). */
void gort__waitq_remove(struct waitq *q, struct sudog *sg)
{
    if (sg->prev || q->first == sg)
        gort__waitq_unlink(q, sg);
}

/* ---------------------------------------------------------------------------
 * Making and freeing.
 * ------------------------------------------------------------------------- */

/* Header and buffer in one allocation; the buffer aligned for any type. */
#define HCHAN_SIZE ((sizeof(struct gort_chan) + 15) & ~(size_t)15)

int gort__chan_alloc(gort_chan **chp, size_t elemsize, size_t cap)
{
    if (!chp || elemsize > GORT_CHAN_MAX_ELEM)
        return -EINVAL;
    size_t bytes = 0;
    if (elemsize && cap > (SIZE_MAX / 4 - HCHAN_SIZE) / elemsize)
        return -EINVAL;
    if (cap > UINT32_MAX)
        return -EINVAL;
    bytes = elemsize * cap;
    struct gort_chan *c = aligned_alloc(16, (HCHAN_SIZE + bytes + 15) &
                                                ~(size_t)15);
    if (!c)
        return -ENOMEM;
    memset(c, 0, sizeof *c);
    gort__lock_init(&c->lock, LOCKRANK_HCHAN);
    c->elemsize = (uint32_t)elemsize;
    c->dataqsiz = (uint32_t)cap;
    c->buf = bytes ? (char *)c + HCHAN_SIZE : NULL;
    *chp = c;
    return 0;
}

int gort_chan_make(gort_chan **chp, size_t elemsize, size_t cap)
{
    GORT_SAN_SCOPE();
    return gort__chan_alloc(chp, elemsize, cap);
}

int gort_chan_free(gort_chan *c)
{
    GORT_SAN_SCOPE();
    if (!c)
        return 0;
    if (c->timer) {
        if (c->timer_owned)
            return -EPERM; /* a timer's channel: gort_timer_free it */
        return gort__timer_free_chan(c);
    }
    return gort__chan_release(c);
}

/* Free c unless goroutines wait on it. */
int gort__chan_release(gort_chan *c)
{
    gort__spinlock(&c->lock);
    bool busy = c->recvq.first || c->sendq.first;
    gort__spinunlock(&c->lock);
    if (busy)
        return -EBUSY;
    gort__free(c);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Send.
 * ------------------------------------------------------------------------- */

/* Hand ep to the waiting receiver sg, then unlock c and ready it.
 * Mirrors send (chan.go). */
static inline __attribute__((always_inline)) void
chan_send_direct(struct m *mp, struct gort_chan *c, struct sudog *sg,
                 const void *ep)
{
    if (sg->elem)
        gort__elemcopy(c, sg->elem, ep);
    sg->success = true;
    struct g *gp = sg->g;
    gp->param = sg;
    gort__spinunlock_m(mp, &c->lock);
    gort__ready_m(mp, gp, true, GT_CHECK);
}

/* ---------------------------------------------------------------------------
 * Waiting with a deadline (gort_chan_send_until, gort_chan_recv_until).
 *
 * The G's deadline timer (g->dl, made on its first such wait) is pushed
 * to the deadline before the G locks the channel.  gort__gtimer_reset only
 * records a later time for a pending timer, without heap work, and the
 * timer is not stopped after the wait: a loop of waits with deadlines a
 * second ahead costs two lock pairs a wait, and the timer comes due about
 * once a second, to be re-sifted.  When it fires (dl_fire) it looks for
 * its G waiting with a passed deadline: it locks the channel the G
 * recorded (dl->c, set under that channel's lock), finds the G's sudog
 * in the channel's queues and takes it out, and readies the G, which
 * returns -ETIMEDOUT.  Holding the channel's lock orders the firing with
 * the G's park (the G unlocks only once parked) and with the wakers (who
 * dequeue under it), so the G is woken once.  dl->busy keeps the channel
 * from being freed under the firing: the G clears c after its wait and
 * waits while a firing that read it is running (a Dekker pair, seq-cst).
 * ------------------------------------------------------------------------- */

static void dl_fire(struct gtimer *t, int64_t now)
{
    struct gdl *dl = (struct gdl *)((char *)t - offsetof(struct gdl, t));
    struct g *gp = t->arg;
    store_seqcst(&dl->busy, 1);
    struct gort_chan *c = load_seqcst(&dl->c);
    if (c) {
        struct sudog *sg = NULL;
        struct waitq *q = NULL;
        gort__spinlock(&c->lock);
        /* Relaxed: at was stored before the timer was pushed (its lock
         * orders it); a later deadline of the same G just waits. */
        if (load_relaxed(&dl->c) == c && load_relaxed(&dl->at) <= now)
            for (int k = 0; k < 2 && !sg; k++) {
                q = k ? &c->sendq : &c->recvq;
                for (sg = q->first; sg && !(sg->g == gp && sg->dl);)
                    sg = sg->next;
            }
        if (sg) {
            gort__waitq_remove(q, sg);
            sg->timedout = true;
            sg->success = false;
            gp->param = sg;
        }
        gort__spinunlock(&c->lock);
        if (sg)
            gort__ready(gp, false);
    } else {
        /* A semaphore or notify-list wait (sema.c): its cancel locks
         * what the G waits on and checks it is still queued there.
         * Relaxed at: as above. */
        struct dlwait *w = load_seqcst(&dl->sync);
        if (w && load_relaxed(&dl->at) <= now)
            w->cancel(gp, w);
    }
    /* Release: our reads of the channel or the record before the G
     * frees or leaves it. */
    store_rel(&dl->busy, 0);
}

/* The G's wait with a deadline is over: no firing may look at its
 * channel any more. */
static void dl_done(struct g *gp)
{
    store_seqcst(&gp->dl->c, NULL);
    while (load_seqcst(&gp->dl->busy))
        gort__cpu_relax();
}

struct gdl *gort__gdl(struct g *gp)
{
    struct gdl *dl = gp->dl;
    if (GORT_LIKELY(dl))
        return dl;
    if (!(dl = gort__calloc(1, sizeof *dl)))
        return NULL;
    gort__lock_init(&dl->t.mu, LOCKRANK_TIMER);
    dl->t.idx = -1;
    dl->t.f = dl_fire;
    dl->t.arg = gp;
    dl->t.selfonly = true; /* only its G starts it; nobody stops it */
    gp->dl = dl;
    return dl;
}

void gort__gdl_free(struct g *gp)
{
    struct gdl *dl = gp->dl;
    if (!dl)
        return;
    if (dl->sel)
        gort__timer_discard(dl->sel);
    gort__free(dl);
    gp->dl = NULL;
}

/* Make the G's deadline timer come due at at (its channel waits here,
 * its semaphore and notify-list waits in sema.c).  While it is pending
 * at dl->key or earlier, a deadline at or after it is pushed to it
 * without locks (gort__gtimer_push): a loop of waits whose deadlines move
 * on costs no lock for the timer.  Otherwise it is started again.  0 or
 * -ENOMEM. */
int gort__dl_arm(struct g *gp, int64_t at, const char *who)
{
    if (GORT_UNLIKELY(gp->foreign))
        gort__fatal_no_goroutine(who);
    struct gdl *dl = gort__gdl(gp);
    if (!dl)
        return -ENOMEM;
    struct gtimer *t = &dl->t;
    /* Relaxed: dl_fire reads it after the timer's locks. */
    store_relaxed(&dl->at, at);
    if (at < dl->key || !gort__gtimer_push(t, at)) {
        /* Seq-cst: after a firing's exchange (which then leaves it). */
        store_seqcst(&t->later, 0);
        gort__gtimer_reset(t, at);
    }
    dl->key = at;
    return 0;
}

/* Queue the running G on q (c's sendq or recvq, c locked) with a sudog on
 * this stack pointing at the caller's element, and park; c's lock is
 * released once the G is parked.  Returns whether a value moved (false:
 * the channel was closed).  san: tell ThreadSanitizer (san.c). */
static inline __attribute__((always_inline)) bool
chan_block(struct m *mp, struct gort_chan *c, struct waitq *q, void *ep,
           uint32_t reason, bool san, bool *timedout)
{
    struct g *gp = mp->curg;
    struct sudog mysg = {0};
    mysg.g = gp;
    mysg.elem = ep;
    mysg.c = c;
    gp->waiting = &mysg;
    gp->param = NULL;
    gp->waitobj = c;
    if (timedout) {
        /* c first, then the clock.  A firing that reads dl->c before this
         * store found nothing to wake, but it read the clock before, so
         * the clock read here shows the deadline passed, and the G does
         * not park.  One that reads c waits for c's lock, held until the
         * G is parked (or has left).  Seq-cst: dl_fire's load. */
        store_seqcst(&gp->dl->c, c);
        if (gort_nanotime() >= load_relaxed(&gp->dl->at)) {
            gort__spinunlock_m(mp, &c->lock);
            gp->waiting = NULL;
            gp->waitobj = NULL;
            dl_done(gp);
            *timedout = true;
            return false;
        }
        mysg.dl = true;
    }
    gort__waitq_enqueue(q, &mysg);
    gort__park(gort__spinunlock_commit, &c->lock, reason);
    gp->waiting = NULL;
    gp->waitobj = NULL;
    if (timedout) {
        dl_done(gp);
        *timedout = mysg.timedout;
    }
    if (san) /* the operation that woke us, the close or the deadline */
        gort__san_acquire(c);
    return mysg.success;
}

/* Park forever: a nil channel, a select with nothing to wait on. */
static GORT_NORETURN void block_forever(uint32_t reason)
{
    gort__park(NULL, NULL, reason);
    gort__throw("unreachable: woke from a permanent block");
}

/* The bodies are inlined into the public entry points, where block and
 * san are constants and the unused parts fold away; select.c and time.c
 * call the out-of-line copies below.  With san (ThreadSanitizer in the
 * process), every operation on c is ordered after the earlier ones and
 * before the later ones (san.c): gort__san_sync under c's lock, and an
 * acquire after a park. */
static inline __attribute__((always_inline)) bool
chansend_dl(struct m *mp, struct gort_chan *c, const void *ep, bool block,
            uint32_t reason, bool san, bool *timedout)
{
    if (!c) {
        if (!block)
            return false;
        block_forever(WAIT_CHAN_SEND_NIL);
    }
    /* Fast path without the lock (chan.go's full()): a non-blocking send
     * that cannot proceed fails.  Relaxed: like Go, a racy "not ready"
     * answer is fine because the observations could have been made
     * together at some instant (closed is checked first, then fullness,
     * and a channel never reopens). */
    if (!block && !load_relaxed(&c->closed) &&
        (c->dataqsiz == 0 ? load_relaxed(&c->recvq.first) == NULL
                          : load_relaxed(&c->qcount) == c->dataqsiz))
        return false;

    gort__spinlock_m(mp, &c->lock);
    if (san)
        gort__san_sync(c);
    if (c->closed) {
        gort__spinunlock_m(mp, &c->lock);
        gort__fatal("send on closed channel");
    }
    struct sudog *sg = c->recvq.first ? gort__waitq_dequeue(&c->recvq) : NULL;
    if (sg) {
        chan_send_direct(mp, c, sg, ep);
        return true;
    }
    if (c->qcount < c->dataqsiz) {
        gort__chan_bufsend(c, ep);
        gort__spinunlock_m(mp, &c->lock);
        return true;
    }
    if (!block) {
        gort__spinunlock_m(mp, &c->lock);
        return false;
    }

    if (!chan_block(mp, c, &c->sendq, (void *)ep, reason, san, timedout)) {
        if (timedout && *timedout)
            return false;
        gort__fatal("send on closed channel");
    }
    return true;
}

static inline __attribute__((always_inline)) bool
chansend(struct m *mp, struct gort_chan *c, const void *ep, bool block,
         uint32_t reason, bool san)
{
    return chansend_dl(mp, c, ep, block, reason, san, NULL);
}

/* ---------------------------------------------------------------------------
 * Receive.
 * ------------------------------------------------------------------------- */

/* Take a value from the waiting sender sg into ep, then unlock c and
 * ready it.  With a buffer (then full), the receiver takes the head and
 * the sender's value goes to the tail: FIFO is kept.  Mirrors recv. */
static inline __attribute__((always_inline)) void
chan_recv_direct(struct m *mp, struct gort_chan *c, struct sudog *sg,
                 void *ep)
{
    if (c->dataqsiz == 0) {
        gort__elemcopy(c, ep, sg->elem);
    } else {
        void *qp = gort__chanbuf(c, c->recvx);
        gort__elemcopy(c, ep, qp);
        gort__elemcopy(c, qp, sg->elem);
        if (++c->recvx == c->dataqsiz)
            c->recvx = 0;
        c->sendx = c->recvx;
    }
    sg->success = true;
    struct g *gp = sg->g;
    gp->param = sg;
    gort__spinunlock_m(mp, &c->lock);
    gort__ready_m(mp, gp, true, GT_CHECK);
}

/* Returns whether a receive happened (always, when blocking); *ok says
 * whether it was a value (false: closed and drained). */
static inline __attribute__((always_inline)) bool
chanrecv_dl(struct m *mp, struct gort_chan *c, void *ep, bool block, bool *ok,
            uint32_t reason, bool san, bool *timedout)
{
    *ok = false;
    if (!c) {
        if (!block)
            return false;
        block_forever(WAIT_CHAN_RECV_NIL);
    }
    /* Fast path (chan.go's empty()): an empty, open channel fails a
     * non-blocking receive at once.  Acquire on closed: if it is closed
     * and still empty we return the zero value without the lock, and the
     * close must happen-before that. */
    if (!block &&
        (c->dataqsiz == 0 ? load_relaxed(&c->sendq.first) == NULL
                          : load_relaxed(&c->qcount) == 0)) {
        if (!load_acq(&c->closed))
            return false;
        if (c->dataqsiz == 0 ? load_relaxed(&c->sendq.first) == NULL
                             : load_relaxed(&c->qcount) == 0) {
            if (san) /* the close */
                gort__san_acquire(c);
            gort__elemzero(c, ep);
            return true;
        }
    }

    gort__spinlock_m(mp, &c->lock);
    if (san)
        gort__san_sync(c);
    if (c->closed) {
        if (c->qcount == 0) {
            gort__spinunlock_m(mp, &c->lock);
            gort__elemzero(c, ep);
            return true;
        }
    } else {
        struct sudog *sg =
            c->sendq.first ? gort__waitq_dequeue(&c->sendq) : NULL;
        if (sg) {
            chan_recv_direct(mp, c, sg, ep);
            *ok = true;
            return true;
        }
    }
    if (c->qcount > 0) {
        gort__chan_bufrecv(c, ep);
        gort__spinunlock_m(mp, &c->lock);
        *ok = true;
        return true;
    }
    if (!block) {
        gort__spinunlock_m(mp, &c->lock);
        return false;
    }

    *ok = chan_block(mp, c, &c->recvq, ep, reason, san, timedout);
    return !(timedout && *timedout);
}

static inline __attribute__((always_inline)) bool
chanrecv(struct m *mp, struct gort_chan *c, void *ep, bool block, bool *ok,
         uint32_t reason, bool san)
{
    return chanrecv_dl(mp, c, ep, block, ok, reason, san, NULL);
}

/* ---------------------------------------------------------------------------
 * Close.
 * ------------------------------------------------------------------------- */

void gort_chan_close(gort_chan *c)
{
    GORT_SAN_SCOPE();
    if (!c)
        gort__fatal("close of nil channel");
    gort__spinlock(&c->lock);
    gort__san_sync(c);
    if (c->closed) {
        gort__spinunlock(&c->lock);
        gort__fatal("close of closed channel");
    }
    /* Release: pairs with the lock-free acquire in the receive fast
     * path. */
    store_rel(&c->closed, 1);
    /* Everyone waiting leaves with success = false: receivers with the
     * zero value, senders to their fatal error.  Collected first and
     * readied after the unlock. */
    struct gqueue woken = {NULL, NULL};
    struct sudog *sg;
    while ((sg = gort__waitq_dequeue(&c->recvq))) {
        gort__elemzero(c, sg->elem);
        sg->success = false;
        sg->g->param = sg;
        gort__gqueue_push(&woken, sg->g);
    }
    while ((sg = gort__waitq_dequeue(&c->sendq))) {
        sg->success = false;
        sg->g->param = sg;
        gort__gqueue_push(&woken, sg->g);
    }
    gort__spinunlock(&c->lock);
    struct g *gp;
    while ((gp = gort__gqueue_pop(&woken)))
        gort__ready(gp, false);
    gort__preempt_check();
}

/* ---------------------------------------------------------------------------
 * Public entry points.
 * ------------------------------------------------------------------------- */

bool gort__chansend(struct m *mp, struct gort_chan *c, const void *ep,
                    bool block, bool san)
{
    if (san)
        return chansend(mp, c, ep, block, WAIT_SELECT, true);
    return chansend(mp, c, ep, block, WAIT_SELECT, false);
}

bool gort__chanrecv(struct m *mp, struct gort_chan *c, void *ep, bool block,
                    bool *ok, bool san)
{
    if (san)
        return chanrecv(mp, c, ep, block, ok, WAIT_SELECT, true);
    return chanrecv(mp, c, ep, block, ok, WAIT_SELECT, false);
}

/* The M of a goroutine, or a fatal error naming the caller. */
static inline struct m *chan_m(const char *who)
{
    struct m *mp = gort__need_goroutine(who);
    if (GORT_UNLIKELY(load_relaxed(&mp->curg->preempt))) {
        gort__preempt_check_m(mp);
        mp = gort__getm(); /* the yield may have moved us */
    }
    return mp;
}

/* A try on c failed: -ETIMEDOUT once at has passed (for a NULL channel,
 * which is never ready, after sleeping until then), -ENOMEM, or 0 to wait
 * with the G's timer pushed to at.  Neither the timer's locks nor its
 * push move the G to another M.  who: the public call (gort__dl_arm). */
static int dl_before_wait(struct m *mp, struct gort_chan *c, int64_t at,
                          const char *who)
{
    if (at <= gort_nanotime())
        return -ETIMEDOUT;
    if (!c) {
        if (GORT_UNLIKELY(mp->curg->foreign)) /* no P for a timer */
            gort__fatal_no_goroutine(who);
        gort_sleep(at - gort_nanotime());
        return -ETIMEDOUT;
    }
    return gort__dl_arm(mp->curg, at, who);
}

int gort__chansend_until(struct gort_chan *c, const void *ep, int64_t at)
{
    struct m *mp = chan_m("gort_chan_send_until");
    bool san = gort__san & GORT_SAN_TSAN, timedout = false;
    if (san ? chansend(mp, c, ep, false, WAIT_CHAN_SEND, true)
            : chansend(mp, c, ep, false, WAIT_CHAN_SEND, false))
        return 1;
    int err = dl_before_wait(mp, c, at, "gort_chan_send_until");
    if (err)
        return err;
    bool sent = san ? chansend_dl(mp, c, ep, true, WAIT_CHAN_SEND, true,
                                  &timedout)
                    : chansend_dl(mp, c, ep, true, WAIT_CHAN_SEND, false,
                                  &timedout);
    return sent ? 1 : -ETIMEDOUT;
}

int gort__chanrecv_until(struct gort_chan *c, void *ep, bool *ok, int64_t at)
{
    struct m *mp = chan_m("gort_chan_recv_until");
    bool san = gort__san & GORT_SAN_TSAN, timedout = false;
    if (san ? chanrecv(mp, c, ep, false, ok, WAIT_CHAN_RECV, true)
            : chanrecv(mp, c, ep, false, ok, WAIT_CHAN_RECV, false))
        return 1;
    int err = dl_before_wait(mp, c, at, "gort_chan_recv_until");
    if (err)
        return err;
    bool done = san ? chanrecv_dl(mp, c, ep, true, ok, WAIT_CHAN_RECV, true,
                                  &timedout)
                    : chanrecv_dl(mp, c, ep, true, ok, WAIT_CHAN_RECV, false,
                                  &timedout);
    return done ? 1 : -ETIMEDOUT;
}

/* The public operations, each in two copies: the plain one, and one for
 * a process with ThreadSanitizer (inside gort's ignored region, telling
 * it the happens-before), chosen by one branch. */

static GORT_NOINLINE void chan_send_san(gort_chan *c, const void *elem)
{
    GORT_SAN_SCOPE();
    chansend(chan_m("gort_chan_send"), c, elem, true, WAIT_CHAN_SEND, true);
}

/*
 * Buffered channels take a path of their own from gort_chan_send and
 * gort_chan_recv: a buffered channel with room (with a value), nobody
 * parked on the other side, its lock free at the first try, a small
 * element and no preemption pending is served by a function that needs
 * no callee-saved register, so the commonest operation of a stream skips
 * the prologue and epilogue the general body needs for its slow paths
 * (five registers and a frame: a fifth of a buffered operation's
 * instructions).  Anything else goes on to the general body, which
 * checks everything again under the lock; unbuffered channels go there
 * straight from the entry point, by a jump.
 */

/* The M, if the fast path may run on it (see above). */
static inline struct m *chan_fast_m(const gort_chan *c)
{
    struct m *mp = gort__getm_fast();
    uint32_t sz = c->elemsize;
    if (GORT_UNLIKELY(!mp || !mp->curg ||
                      !(sz == 8 || sz == 4 || sz == 16 || sz == 0) ||
                      load_relaxed(&mp->curg->preempt)))
        return NULL;
    return mp;
}

/* chan_fast_m, and c's lock if it is free at the first try; NULL: take
 * the general body. */
static inline struct m *chan_fast_lock(gort_chan *c)
{
    struct m *mp = chan_fast_m(c);
    return mp && gort__spintrylock_m(mp, &c->lock) ? mp : NULL;
}

/* An element of one of the sizes chan_fast_m lets through: single moves,
 * never a call. */
static inline void small_copy(void *dst, const void *src, uint32_t sz)
{
    if (sz == 8)
        memcpy(dst, src, 8);
    else if (sz == 4)
        memcpy(dst, src, 4);
    else if (sz == 16)
        memcpy(dst, src, 16);
}

/* The general bodies, reached by a jump from the entry points: a blocked
 * goroutine's stack holds their frame instead of the public function's,
 * so their symbols carry the public names with a suffix, which dumps
 * leave out (traceback.c, shown_len). */
static GORT_NOINLINE void chan_send_full(gort_chan *c, const void *elem)
    __asm__("gort_chan_send.full");
static GORT_NOINLINE bool chan_recv_full(gort_chan *c, void *elem)
    __asm__("gort_chan_recv.full");

static GORT_NOINLINE void chan_send_full(gort_chan *c, const void *elem)
{
    chansend(chan_m("gort_chan_send"), c, elem, true, WAIT_CHAN_SEND, false);
}

/* A send on a buffered channel: the fast path, or on to the general
 * body by a jump. */
static GORT_NOINLINE void chan_send_buffered(gort_chan *c, const void *elem)
{
    struct m *mp = chan_fast_lock(c);
    if (!mp)
        goto full;
    if (GORT_UNLIKELY(c->closed || c->recvq.first ||
                      c->qcount == c->dataqsiz)) {
        gort__spinunlock_m(mp, &c->lock);
        goto full;
    }
    uint32_t i = c->sendx;
    small_copy(gort__chanbuf(c, i), elem, c->elemsize);
    c->sendx = i + 1 == c->dataqsiz ? 0 : i + 1;
    store_relaxed(&c->qcount, c->qcount + 1); /* peeked without the lock */
    gort__spinunlock_m(mp, &c->lock);
    return;
full:
    chan_send_full(c, elem);
}

void gort_chan_send(gort_chan *c, const void *elem)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        chan_send_san(c, elem);
        return;
    }
    if (c && c->dataqsiz != 0)
        chan_send_buffered(c, elem);
    else
        chan_send_full(c, elem);
}

static GORT_NOINLINE bool chan_recv_san(gort_chan *c, void *elem)
{
    GORT_SAN_SCOPE();
    bool ok;
    chanrecv(chan_m("gort_chan_recv"), c, elem, true, &ok, WAIT_CHAN_RECV,
             true);
    return ok;
}

static GORT_NOINLINE bool chan_recv_full(gort_chan *c, void *elem)
{
    bool ok;
    chanrecv(chan_m("gort_chan_recv"), c, elem, true, &ok, WAIT_CHAN_RECV,
             false);
    return ok;
}

/* A receive on a buffered channel: the fast path, or on to the general
 * body by a jump. */
static GORT_NOINLINE bool chan_recv_buffered(gort_chan *c, void *elem)
{
    struct m *mp = chan_fast_lock(c);
    if (!mp)
        goto full;
    /* A parked sender means a full buffer and a hand-off (recv's direct
     * path); a closed channel with values still gives them. */
    if (GORT_UNLIKELY(c->sendq.first || c->qcount == 0)) {
        gort__spinunlock_m(mp, &c->lock);
        goto full;
    }
    uint32_t i = c->recvx;
    if (elem)
        small_copy(elem, gort__chanbuf(c, i), c->elemsize);
    c->recvx = i + 1 == c->dataqsiz ? 0 : i + 1;
    store_relaxed(&c->qcount, c->qcount - 1); /* peeked without the lock */
    gort__spinunlock_m(mp, &c->lock);
    return true;
full:
    return chan_recv_full(c, elem);
}

bool gort_chan_recv(gort_chan *c, void *elem)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN))
        return chan_recv_san(c, elem);
    if (c && c->dataqsiz != 0)
        return chan_recv_buffered(c, elem);
    return chan_recv_full(c, elem);
}

static GORT_NOINLINE bool chan_trysend_san(gort_chan *c, const void *elem)
{
    GORT_SAN_SCOPE();
    return chansend(chan_m("gort_chan_trysend"), c, elem, false,
                    WAIT_CHAN_SEND, true);
}

bool gort_chan_trysend(gort_chan *c, const void *elem)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN))
        return chan_trysend_san(c, elem);
    return chansend(chan_m("gort_chan_trysend"), c, elem, false,
                    WAIT_CHAN_SEND, false);
}

static GORT_NOINLINE bool chan_tryrecv_san(gort_chan *c, void *elem,
                                           bool *got)
{
    GORT_SAN_SCOPE();
    return chanrecv(chan_m("gort_chan_tryrecv"), c, elem, false, got,
                    WAIT_CHAN_RECV, true);
}

bool gort_chan_tryrecv(gort_chan *c, void *elem, bool *ok)
{
    bool got, sel;
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN))
        sel = chan_tryrecv_san(c, elem, &got);
    else
        sel = chanrecv(chan_m("gort_chan_tryrecv"), c, elem, false, &got,
                       WAIT_CHAN_RECV, false);
    if (ok)
        *ok = got;
    return sel;
}

size_t gort_chan_len(gort_chan *c)
{
    /* Relaxed: a snapshot, as Go's len(c). */
    return c ? load_relaxed(&c->qcount) : 0;
}

size_t gort_chan_cap(gort_chan *c)
{
    return c ? c->dataqsiz : 0;
}

size_t gort_chan_elemsize(gort_chan *c)
{
    return c ? c->elemsize : 0;
}

int gort_chan_send_checked(gort_chan *c, const void *elem, size_t size)
{
    if (c && size != c->elemsize)
        return -EINVAL;
    gort_chan_send(c, elem);
    return 0;
}

int gort_chan_recv_checked(gort_chan *c, void *elem, size_t size)
{
    if (c && elem && size != c->elemsize)
        return -EINVAL;
    return gort_chan_recv(c, elem);
}
