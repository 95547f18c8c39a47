/* SPDX-License-Identifier: MIT */
/*
 * ctx.c - contexts (gort.h's gort_ctx, Go's context package): a done
 * channel closed at cancellation, the reason (-ECANCELED or -ETIMEDOUT,
 * Go's Canceled and DeadlineExceeded), a deadline, children cancelled
 * with their parent.
 *
 * Error groups and weighted semaphores, which wait with contexts, are
 * here too (below).
 *
 * Ownership.  Go's garbage collector frees a context when nothing refers
 * to it; here references are counted.  Making a context gives the caller
 * one reference, which gort_ctx_cancel_release gives back (Go's cancel
 * function: it also cancels).  A goroutine that keeps a context beyond
 * its maker takes one of its own (gort_ctx_retain) and gives it back
 * (gort_ctx_release).  A child holds one on its parent; the timer of a
 * deadline one on its context until a cancel stops it or, once it has
 * fired, until the maker's gort_ctx_cancel_release: the firing's
 * goroutine (expire) only says it is done (tstate), and cancel_release
 * waits for that, then gives back the timer's reference with its own.  So
 * the context is freed by the maker's goroutine, not by expire, which a
 * program's end could discard before it got there (the context would
 * then be lost, a leak a leak checker reports).  The last release frees
 * the context, cancelling it first if nobody did.
 * Everything but gort_ctx_done, gort_ctx_err and gort_ctx_deadline is
 * for goroutines (the lock is a gort_mutex).
 *
 * A context's lock guards its reason and its list of children.  No two
 * contexts' locks are held at once: cancelling goes down the tree one
 * context at a time (the children listed under the parent's lock, each
 * with a reference taken, then cancelled after it is released), and a
 * child leaves its parent's list under the parent's lock alone.
 */
#include "chan.h"
#include "defs.h"
#include "fatal.h"
#include "san.h"
#include "sched.h"

#include <errno.h>
#include <stdint.h>

struct gort_ctx {
    gort_mutex mu;
    uint32_t refs;          /* atomic */
    int err;                /* under mu; read racily (relaxed) by err */
    gort_chan *done;        /* closed once cancelled; NULL: background */
    int64_t deadline;       /* gort_nanotime(); 0: none */
    struct gort_ctx *parent;             /* a reference held */
    struct gort_ctx *children;           /* under mu */
    struct gort_ctx *next, **prevp;      /* in parent->children */
    gort_timer *timer;      /* the deadline's, or NULL; atomic: set
                               while its firing may already run */
    uint32_t tstate;        /* atomic: the timer's reference, TIMER_* */
};

/* Where the deadline timer's reference is. */
enum {
    TIMER_NONE,    /* no timer, or its reference given back */
    TIMER_ARMED,   /* held by the timer: pending, or fired and its
                      expire not finished */
    TIMER_EXPIRED, /* fired and expire finished: the maker's
                      cancel_release gives it back */
};

/* The background context: never cancelled, never freed. */
static struct gort_ctx background = {.refs = 1};

gort_ctx *gort_ctx_background(void)
{
    return &background;
}

void gort_ctx_retain(gort_ctx *c)
{
    /* Relaxed: the caller holds a reference already. */
    if (c && c != &background)
        xadd_relaxed(&c->refs, 1);
}

/* Cancel c with err (-ECANCELED, -ETIMEDOUT) and its children with the
 * same, unless it was cancelled before. */
static void cancel(struct gort_ctx *c, int err)
{
    if (c == &background)
        return;
    gort_mutex_lock(&c->mu);
    if (c->err) {
        gort_mutex_unlock(&c->mu);
        return;
    }
    /* Release: a reader of the reason (relaxed in gort_ctx_err) that
     * saw the done channel closed sees it through the channel. */
    store_rel(&c->err, err);
    size_t n = 0;
    for (struct gort_ctx *k = c->children; k; k = k->next)
        n++;
    struct gort_ctx *small[16], **kids = small;
    if (n > 16 && !(kids = gort__malloc(n * sizeof *kids)))
        gort__throw("context: out of memory cancelling %zu children", n);
    n = 0;
    for (struct gort_ctx *k = c->children; k; k = k->next) {
        gort_ctx_retain(k);
        kids[n++] = k;
    }
    gort_mutex_unlock(&c->mu);
    gort_chan_close(c->done);
    /* A deadline's timer stopped before it fired gives back its
     * reference (one that fired gives it back in expire); the caller
     * holds one, so this is never the last. */
    gort_timer *t = load_acq(&c->timer);
    if (t && gort_timer_stop(t)) {
        store_rel(&c->tstate, TIMER_NONE); /* release: as refs */
        gort_ctx_release(c);
    }
    for (size_t i = 0; i < n; i++) {
        cancel(kids[i], err);
        gort_ctx_release(kids[i]);
    }
    if (kids != small)
        gort__free(kids);
}

void gort_ctx_release(gort_ctx *c)
{
    if (!c || c == &background)
        return;
    /* Acq-rel: the last one out sees every other holder's accesses. */
    if (xadd_acqrel(&c->refs, -1) != 0)
        return;
    cancel(c, -ECANCELED);
    if (c->timer)
        gort_timer_free(c->timer);
    struct gort_ctx *p = c->parent;
    if (p != &background) {
        gort_mutex_lock(&p->mu);
        *c->prevp = c->next;
        if (c->next)
            c->next->prevp = c->prevp;
        gort_mutex_unlock(&p->mu);
    }
    gort_chan_free(c->done);
    gort__free(c);
    gort_ctx_release(p);
}

/* The deadline's timer: a goroutine of its own (a function timer),
 * with the timer's reference, which it leaves to the maker's
 * cancel_release (see the top of this file). */
static void expire(void *arg)
{
    struct gort_ctx *c = arg;
    cancel(c, -ETIMEDOUT);
    /* Release: cancel's writes before the maker's free.  The last touch
     * of c here. */
    store_rel(&c->tstate, TIMER_EXPIRED);
}

static int make(gort_ctx *parent, int64_t deadline, gort_ctx **cp,
                const char *who)
{
    if (!parent || !cp)
        return -EINVAL;
    gort__need_goroutine(who);
    struct gort_ctx *c = gort__calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    if (gort_chan_make(&c->done, 0, 0) < 0) {
        gort__free(c);
        return -ENOMEM;
    }
    c->refs = 1;
    c->parent = parent;
    /* A child's deadline is never later than its parent's. */
    c->deadline = parent->deadline;
    if (deadline > 0 && (c->deadline == 0 || deadline < c->deadline))
        c->deadline = deadline;
    gort_ctx_retain(parent);
    int perr = 0, terr = 0;
    if (parent != &background) {
        gort_mutex_lock(&parent->mu);
        perr = parent->err;
        if (!perr) {
            c->next = parent->children;
            if (c->next)
                c->next->prevp = &c->next;
            parent->children = c;
            c->prevp = &parent->children;
        }
        gort_mutex_unlock(&parent->mu);
    }
    if (!perr && c->deadline != 0 && c->deadline != parent->deadline) {
        int64_t in = c->deadline - gort_nanotime();
        gort_ctx_retain(c); /* the timer's */
        store_relaxed(&c->tstate, TIMER_ARMED); /* before the timer runs */
        gort_timer *t = NULL;
        if (in <= 0)
            perr = -ETIMEDOUT;
        else if ((terr = gort_timer_make(&t, in, expire, c)) < 0)
            perr = -ECANCELED; /* the caller sees why: terr */
        if (t)
            /* Release: a firing that comes first (expire's cancel) finds
             * NULL and needs no stop; a later cancel finds the timer. */
            store_rel(&c->timer, t);
        else {
            c->refs--; /* no timer: not shared yet */
            store_relaxed(&c->tstate, TIMER_NONE);
        }
    }
    if (!c->prevp)
        c->prevp = &c->next; /* on no list: unlinking touches only c */
    *cp = c;
    if (perr)
        cancel(c, perr);
    /* The timer's error: -ENOMEM, or -EPERM on a thread gort did not
     * create (no P for timers). */
    return terr;
}

int gort_ctx_with_cancel(gort_ctx *parent, gort_ctx **cp)
{
    GORT_SAN_SCOPE();
    return make(parent, 0, cp, "gort_ctx_with_cancel");
}

int gort_ctx_with_deadline(gort_ctx *parent, gort_deadline d, gort_ctx **cp)
{
    GORT_SAN_SCOPE();
    return make(parent, d.at == INT64_MAX ? 0 : d.at, cp,
                "gort_ctx_with_deadline");
}

void gort_ctx_cancel(gort_ctx *c)
{
    GORT_SAN_SCOPE();
    if (c)
        cancel(c, -ECANCELED);
}

void gort_ctx_cancel_release(gort_ctx *c)
{
    GORT_SAN_SCOPE();
    if (!c)
        return;
    cancel(c, -ECANCELED);
    /* Armed after the cancel: the timer fired first, and its expire may
     * still run; wait for it (it does not block for long: it cancels),
     * then give back its reference.  Acquire: pairs with expire's
     * store. */
    if (c != &background && load_acq(&c->tstate) != TIMER_NONE) {
        while (load_acq(&c->tstate) != TIMER_EXPIRED)
            gort_gosched();
        store_relaxed(&c->tstate, TIMER_NONE);
        gort_ctx_release(c);
    }
    gort_ctx_release(c);
}

gort_chan *gort_ctx_done(gort_ctx *c)
{
    return c ? c->done : NULL;
}

int gort_ctx_err(gort_ctx *c)
{
    /* Acquire: pairs with cancel's release. */
    return c ? load_acq(&c->err) : -EINVAL;
}

gort_deadline gort_ctx_deadline(gort_ctx *c)
{
    gort_deadline d = {c ? c->deadline : 0};
    return d;
}

int gort_select_ctx(gort_case *cases, int ncases, gort_ctx *c)
{
    GORT_SAN_SCOPE();
    /* Room for the done case, also when there is none to add: the limit
     * does not depend on the context. */
    if (ncases < 0 || ncases > 65535 || (!cases && ncases > 0))
        return -EINVAL;
    if (!c || c == &background)
        return gort_select(cases, ncases);
    gort_case done = {.ch = c->done, .dir = GORT_CASE_RECV};
    int r = gort__select_extra(cases, ncases, done);
    return r == ncases ? gort_ctx_err(c) : r;
}

int gort_chan_recv_ctx(gort_chan *ch, void *elem, gort_ctx *c)
{
    gort_case cs = {.ch = ch, .dir = GORT_CASE_RECV, .elem = elem};
    int r = gort_select_ctx(&cs, 1, c);
    return r < 0 ? r : cs.ok;
}

int gort_chan_send_ctx(gort_chan *ch, const void *elem, gort_ctx *c)
{
    gort_case cs = {.ch = ch, .dir = GORT_CASE_SEND, .elem = (void *)elem};
    int r = gort_select_ctx(&cs, 1, c);
    return r < 0 ? r : 0;
}

/* ---------------------------------------------------------------------------
 * Error groups (golang.org/x/sync/errgroup with WithContext and SetLimit):
 * goroutines whose first error cancels the group's context.  The limit is
 * a buffered channel of tokens, as errgroup's.
 * ------------------------------------------------------------------------- */

struct gort_errgroup {
    gort_waitgroup wg;
    gort_ctx *ctx;          /* the group's: a child of the parent */
    gort_chan *sem;         /* the limit's tokens, or NULL: none */
    int err;                /* atomic: the first error, 0 until then */
};

struct eg_go {
    struct gort_errgroup *g;
    int (*fn)(void *);
    void *arg;
};

int gort_errgroup_make(gort_errgroup **gp, gort_ctx *parent, gort_ctx **ctxp)
{
    GORT_SAN_SCOPE();
    if (!gp)
        return -EINVAL;
    gort__need_goroutine("gort_errgroup_make"); /* as its context's maker */
    struct gort_errgroup *g = gort__calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    int r = gort_ctx_with_cancel(parent ? parent : &background, &g->ctx);
    if (r < 0) {
        gort__free(g);
        return r;
    }
    if (ctxp)
        *ctxp = g->ctx;
    *gp = g;
    return 0;
}

int gort_errgroup_set_limit(gort_errgroup *g, int n)
{
    GORT_SAN_SCOPE();
    if (!g)
        return -EINVAL;
    /* Relaxed: the counter's high half; nothing runs in the group. */
    if (load_relaxed(&g->wg.state) >> 32)
        return -EBUSY;
    gort_chan *sem = NULL;
    if (n > 0 && gort_chan_make(&sem, 0, (size_t)n) < 0)
        return -ENOMEM;
    if (g->sem)
        gort_chan_free(g->sem);
    g->sem = sem;
    return 0;
}

static void eg_main(void *p)
{
    struct eg_go e = *(struct eg_go *)p;
    gort__free(p);
    int err = e.fn(e.arg);
    /* Seq-cst: exactly one first error. */
    if (err < 0 && cas_seqcst(&e.g->err, 0, err))
        gort_ctx_cancel(e.g->ctx);
    if (e.g->sem)
        gort_chan_recv(e.g->sem, NULL);
    gort_waitgroup_done(&e.g->wg);
}

int64_t gort_errgroup_go(gort_errgroup *g, int (*fn)(void *), void *arg)
{
    GORT_SAN_SCOPE();
    if (!g || !fn)
        return -EINVAL;
    struct eg_go *e = gort__malloc(sizeof *e);
    if (!e)
        return -ENOMEM;
    *e = (struct eg_go){g, fn, arg};
    if (g->sem)
        gort_chan_send(g->sem, NULL); /* waits while the limit is reached */
    gort_waitgroup_add(&g->wg, 1);
    int64_t id = gort_go(eg_main, e);
    if (id < 0) {
        if (g->sem)
            gort_chan_recv(g->sem, NULL);
        gort_waitgroup_add(&g->wg, -1);
        gort__free(e);
    }
    return id;
}

int gort_errgroup_wait(gort_errgroup *g)
{
    GORT_SAN_SCOPE();
    if (!g)
        return -EINVAL;
    gort_waitgroup_wait(&g->wg);
    gort_ctx_cancel(g->ctx);
    return load_acq(&g->err);
}

int gort_errgroup_free(gort_errgroup *g)
{
    GORT_SAN_SCOPE();
    if (!g)
        return 0;
    /* Relaxed: the caller waited, or frees a group it never started. */
    if (load_relaxed(&g->wg.state) >> 32)
        return -EBUSY;
    gort_ctx_cancel_release(g->ctx);
    if (g->sem)
        gort_chan_free(g->sem);
    gort__free(g);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Weighted semaphores (golang.org/x/sync/semaphore): waiters served in
 * arrival order, each on a channel of its own that the grant closes.
 * ------------------------------------------------------------------------- */

struct semwaiter {
    int64_t n;
    gort_chan *ready;           /* closed when granted */
    struct semwaiter *next, **prevp;
};

struct gort_semaphore {
    gort_mutex mu;
    int64_t size, cur;          /* under mu */
    struct semwaiter *head, **tailp; /* under mu: FIFO */
};

int gort_semaphore_make(gort_semaphore **sp, int64_t n)
{
    if (!sp || n <= 0)
        return -EINVAL;
    struct gort_semaphore *s = gort__calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->size = n;
    s->tailp = &s->head;
    *sp = s;
    return 0;
}

static void sem_unlink(struct gort_semaphore *s, struct semwaiter *w)
{
    *w->prevp = w->next;
    if (w->next)
        w->next->prevp = w->prevp;
    else
        s->tailp = w->prevp;
}

/* Grant the waiters at the head that fit, in order.  Under mu. */
static void sem_notify(struct gort_semaphore *s)
{
    struct semwaiter *w;
    while ((w = s->head) && s->size - s->cur >= w->n) {
        s->cur += w->n;
        sem_unlink(s, w);
        gort_chan_close(w->ready);
    }
}

bool gort_semaphore_try_acquire(gort_semaphore *s, int64_t n)
{
    GORT_SAN_SCOPE();
    if (!s || n <= 0)
        return false;
    gort_mutex_lock(&s->mu);
    bool ok = !s->head && s->size - s->cur >= n;
    if (ok)
        s->cur += n;
    gort_mutex_unlock(&s->mu);
    return ok;
}

/* Wait on ch (closed when the units are granted) until ctx is cancelled
 * or, without ctx, until d: 0 when granted (closed), else the error. */
static int sem_wait(gort_chan *ch, gort_ctx *ctx, gort_deadline d)
{
    if (ctx) {
        int r = gort_chan_recv_ctx(ch, NULL, ctx);
        return r < 0 ? r : 0;
    }
    int r = gort_chan_recv_until(ch, NULL, d);
    return r < 0 ? r : 0;
}

/* Acquire n units, waiting until ctx is cancelled or, without ctx,
 * until d. */
static int sem_acquire(gort_semaphore *s, int64_t n, gort_ctx *ctx,
                       gort_deadline d)
{
    if (!s || n <= 0)
        return -EINVAL;
    gort_mutex_lock(&s->mu);
    if (!s->head && s->size - s->cur >= n) {
        s->cur += n;
        gort_mutex_unlock(&s->mu);
        return 0;
    }
    if (n > s->size) {
        /* Can never be had: wait for the context or the deadline alone,
         * as Go's. */
        gort_mutex_unlock(&s->mu);
        int r = sem_wait(NULL, ctx, d);
        return r < 0 ? r : -EINVAL;
    }
    struct semwaiter w = {.n = n};
    if (gort_chan_make(&w.ready, 0, 0) < 0) {
        gort_mutex_unlock(&s->mu);
        return -ENOMEM;
    }
    w.prevp = s->tailp;
    *s->tailp = &w;
    s->tailp = &w.next;
    gort_mutex_unlock(&s->mu);
    int r = sem_wait(w.ready, ctx, d);
    if (r < 0) {
        gort_mutex_lock(&s->mu);
        if (load_acq(&w.ready->closed)) {
            /* Granted as the wait ended: keep it (as Go does). */
            r = 0;
        } else {
            bool front = s->head == &w;
            sem_unlink(s, &w);
            /* Waiters behind this one may fit now. */
            if (front)
                sem_notify(s);
        }
        gort_mutex_unlock(&s->mu);
    }
    gort_chan_free(w.ready);
    return r;
}

int gort_semaphore_acquire(gort_semaphore *s, int64_t n, gort_ctx *ctx)
{
    GORT_SAN_SCOPE();
    return sem_acquire(s, n, ctx ? ctx : &background, gort_no_deadline());
}

int gort_semaphore_acquire_until(gort_semaphore *s, int64_t n,
                                 gort_deadline d)
{
    GORT_SAN_SCOPE();
    return sem_acquire(s, n, NULL, d);
}

void gort_semaphore_release(gort_semaphore *s, int64_t n)
{
    GORT_SAN_SCOPE();
    if (!s || n <= 0)
        return;
    gort_mutex_lock(&s->mu);
    s->cur -= n;
    if (s->cur < 0) {
        gort_mutex_unlock(&s->mu);
        gort__fatal("semaphore: released more than held");
    }
    sem_notify(s);
    gort_mutex_unlock(&s->mu);
}

int gort_semaphore_free(gort_semaphore *s)
{
    GORT_SAN_SCOPE();
    if (!s)
        return 0;
    gort_mutex_lock(&s->mu);
    bool busy = s->head != NULL;
    gort_mutex_unlock(&s->mu);
    if (busy)
        return -EBUSY;
    gort__free(s);
    return 0;
}
