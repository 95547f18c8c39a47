/* SPDX-License-Identifier: MIT */
/*
 * chan.h - channel internals shared by chan.c, select.c and time.c.
 * Mirrors hchan, waitq and sudog (chan.go, runtime2.go).
 */
#ifndef GORT_CHAN_H
#define GORT_CHAN_H

#include "atomic.h"
#include "defs.h"
#include "lock_futex.h"
#include "sched.h"

#include <string.h>

/* A G waiting on a channel (or in a select, one per case).  Lives on the
 * waiting G's stack for as long as it is queued. */
struct sudog {
    struct g *g;
    struct sudog *next, *prev; /* in the channel's waitq; under c->lock */
    void *elem;                /* the sender's value / the receiver's
                                  destination (NULL: discard) */
    struct gort_chan *c;
    struct sudog *waitlink;    /* next in g->waiting (select) */
    int32_t casei;             /* select: the case it stands for */
    bool isselect;             /* dequeue must win g->selectdone */
    bool success;              /* woken by a value (true) or a close */
    bool dl;                   /* a wait with a deadline (chan.c) */
    bool timedout;             /* ... that the deadline ended */
};

struct waitq {
    struct sudog *first, *last;
};

struct gort_timer;

struct gort_chan {
    gort_spinlock lock;
    uint32_t closed;     /* 0 -> 1 under lock; read racily (see chan.c) */
    uint32_t qcount;     /* elements in buf; written under lock, read
                            racily (relaxed) by len and fast paths */
    uint32_t dataqsiz;   /* capacity */
    uint32_t elemsize;
    uint32_t sendx, recvx; /* ring indexes; under lock */
    void *buf;
    struct waitq recvq, sendq; /* under lock; .first peeked relaxed */
    struct gort_timer *timer;  /* the timer that sends on it, or NULL */
    bool timer_owned;          /* the timer owns the channel (NewTimer) */
};

GORT_HIDDEN int gort__chan_alloc(gort_chan **chp, size_t elemsize,
                                 size_t cap);
GORT_HIDDEN int gort__chan_release(gort_chan *c);
/* Send / receive for a goroutine on mp (or g0 with a P, non-blocking);
 * a blocking call waits as a select case ("select" in dumps), as the one
 * live case of a gort_select does.  san: tell ThreadSanitizer (chan.c). */
GORT_HIDDEN bool gort__chansend(struct m *mp, struct gort_chan *c,
                                const void *ep, bool block, bool san);
GORT_HIDDEN bool gort__chanrecv(struct m *mp, struct gort_chan *c, void *ep,
                                bool block, bool *ok, bool san);
GORT_HIDDEN void gort__waitq_enqueue(struct waitq *q, struct sudog *sg);
GORT_HIDDEN struct sudog *gort__waitq_dequeue_slow(struct waitq *q);
/* Unlink sg from q; c->lock held. */
static inline void gort__waitq_unlink(struct waitq *q, struct sudog *sg)
{
    if (sg->prev)
        sg->prev->next = sg->next;
    else
        store_relaxed(&q->first, sg->next); /* peeked without the lock */
    if (sg->next)
        sg->next->prev = sg->prev;
    else
        q->last = sg->prev;
    sg->next = sg->prev = NULL;
}

/* Take the first waiter that can still be woken (chan.c): the head when
 * it is a plain send or receive, inline; select sudogs out of line. */
static inline struct sudog *gort__waitq_dequeue(struct waitq *q)
{
    struct sudog *sg = q->first;
    if (sg && !sg->isselect) {
        gort__waitq_unlink(q, sg);
        return sg;
    }
    return sg ? gort__waitq_dequeue_slow(q) : NULL;
}
GORT_HIDDEN void gort__waitq_remove(struct waitq *q, struct sudog *sg);
/* ---------------------------------------------------------------------------
 * Element copies.
 * ------------------------------------------------------------------------- */

static inline void *gort__chanbuf(struct gort_chan *c, uint32_t i)
{
    return (char *)c->buf + (size_t)i * c->elemsize;
}

static inline void gort__elemcopy(struct gort_chan *c, void *dst, const void *src)
{
    if (!dst)
        return;
    /* The common word sizes as single moves, the rest via memcpy. */
    switch (c->elemsize) {
    case 0: return;
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    case 16: memcpy(dst, src, 16); return;
    default: memcpy(dst, src, c->elemsize); return;
    }
}

static inline void gort__elemzero(struct gort_chan *c, void *dst)
{
    if (dst && c->elemsize)
        memset(dst, 0, c->elemsize);
}

/* Buffer operations, c->lock held. */
/* Take the buffer's head into ep; lock held. */
static inline void gort__chan_bufrecv(struct gort_chan *c, void *ep)
{
    void *qp = gort__chanbuf(c, c->recvx);
    gort__elemcopy(c, ep, qp);
    if (++c->recvx == c->dataqsiz)
        c->recvx = 0;
    store_relaxed(&c->qcount, c->qcount - 1);
}

/* Put ep at the buffer's tail; lock held, a slot free. */
static inline void gort__chan_bufsend(struct gort_chan *c, const void *ep)
{
    gort__elemcopy(c, gort__chanbuf(c, c->sendx), ep);
    if (++c->sendx == c->dataqsiz)
        c->sendx = 0;
    store_relaxed(&c->qcount, c->qcount + 1);
}

/* A send or receive on c waiting until at (an absolute gort_nanotime(),
 * not 0): 1 when done (recv: *ok says whether a value came), -ETIMEDOUT,
 * -ENOMEM (the G's timer could not be made).  deadline.c. */
GORT_HIDDEN int gort__chansend_until(struct gort_chan *c, const void *ep,
                                     int64_t at);
GORT_HIDDEN int gort__chanrecv_until(struct gort_chan *c, void *ep, bool *ok,
                                     int64_t at);

/* Push the G's deadline timer to at (an absolute gort_nanotime()): 0, or
 * -ENOMEM when the timer, made on the G's first wait with a deadline,
 * cannot be made.  Channel waits (chan.c) and semaphore and notify-list
 * waits (sema.c, through sync.c) share it; dl->c or dl->sync says
 * which wait it ends.  The G of a thread gort did not create has no P
 * for the timer: the fatal error of a goroutine-only call, who (the
 * public function's name). */
GORT_HIDDEN int gort__dl_arm(struct g *gp, int64_t at, const char *who);
/* The G's record of waits with a deadline (struct gdl), made on the first
 * call: NULL when out of memory.  Owner G only.  gdl_free discards it at
 * shutdown, its channel timer too. */
GORT_HIDDEN struct gdl *gort__gdl(struct g *gp);
GORT_HIDDEN void gort__gdl_free(struct g *gp);

/* gort_select over cases and one case more, extra, as the last (select.c;
 * the caller has checked cases and ncases): the index of the case taken,
 * ncases for extra, or -ENOMEM.  The taken case's ok is set in cases.
 * Deadlines and contexts wait this way. */
GORT_HIDDEN int gort__select_extra(gort_case *cases, int ncases,
                                   gort_case extra);

/* gort_chan_free of a gort_after channel (time.c). */
GORT_HIDDEN int gort__timer_free_chan(struct gort_chan *c);
/* Free a timer and its channel at teardown, when no thread runs and the
 * timers' heaps are gone (boot.c: a G's deadline timer). */
GORT_HIDDEN void gort__timer_discard(struct gort_timer *ut);

#endif /* GORT_CHAN_H */
