/* SPDX-License-Identifier: MIT */
/*
 * ctx.c - contexts (gort.h's gort_ctx, Go's context package): a done
 * channel closed at cancellation, the reason (-ECANCELED or -ETIMEDOUT,
 * Go's Canceled and DeadlineExceeded), a deadline, children cancelled
 * with their parent.
 *
 * Ownership.  Go's garbage collector frees a context when nothing refers
 * to it; here references are counted.  Making a context gives the caller
 * one reference, which gort_ctx_cancel_release gives back (Go's cancel
 * function: it also cancels).  A goroutine that keeps a context beyond
 * its maker takes one of its own (gort_ctx_retain) and gives it back
 * (gort_ctx_release).  A child holds one on its parent; the timer of a
 * deadline one on its context until it fires or a cancel stops it.  The
 * last release frees the context, cancelling it first if nobody did.
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
    gort_timer *timer;      /* the deadline's, or NULL */
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
    if (c->timer && gort_timer_stop(c->timer))
        gort_ctx_release(c);
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
 * with the timer's reference. */
static void expire(void *arg)
{
    cancel(arg, -ETIMEDOUT);
    gort_ctx_release(arg);
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
    int perr = 0;
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
        if (in <= 0)
            perr = -ETIMEDOUT;
        else if (gort_timer_make(&c->timer, in, expire, c) < 0)
            perr = -ENOMEM; /* cancelled below; the caller sees why */
        if (!c->timer)
            c->refs--; /* no timer: not shared yet */
    }
    if (!c->prevp)
        c->prevp = &c->next; /* on no list: unlinking touches only c */
    *cp = c;
    if (perr)
        cancel(c, perr == -ENOMEM ? -ECANCELED : perr);
    return perr == -ENOMEM ? -ENOMEM : 0;
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
    if (!c || c == &background)
        return gort_select(cases, ncases);
    if (ncases < 0 || ncases > 65535 || (!cases && ncases > 0))
        return -EINVAL;
    gort_case small[9], *all = small;
    if (ncases + 1 > 9 &&
        !(all = gort__malloc((size_t)(ncases + 1) * sizeof *all)))
        return -ENOMEM;
    for (int i = 0; i < ncases; i++)
        all[i] = cases[i];
    all[ncases] = (gort_case){.ch = c->done, .dir = GORT_CASE_RECV};
    int r = gort_select(all, ncases + 1);
    if (r >= 0 && r < ncases)
        cases[r].ok = all[r].ok;
    if (all != small)
        gort__free(all);
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
