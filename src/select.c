/* SPDX-License-Identifier: MIT */
/*
 * select.c - the select statement.  Mirrors selectgo (select.go).
 *
 * Three passes over the cases, all channels locked together:
 *   1. in a random order (pollorder), take the first case that can go on
 *      now; with a default case and none ready, take the default;
 *   2. otherwise queue a sudog on every channel, in lock order (channel
 *      address), and park; the channels are unlocked once the G is parked;
 *   3. woken by one of them (param = the winning sudog), lock everything
 *      again and take the other sudogs off their queues.
 * A waker claims the select by CAS on g->selectdone (chan.c dequeue), so
 * exactly one case wins however many channels become ready at once.
 *
 * Locking several channels always follows address order and skips
 * repeats of a channel that appears in several cases; that is what makes
 * two selects over the same channels deadlock-free.
 *
 * With ThreadSanitizer in the process (san), a case taken in pass 1 is a
 * channel operation like chan.c's (gort__san_sync on its channel); a
 * parked select is ordered after everything before it on each of its
 * channels, and when it wakes, after the operation that chose its case.
 */
#include "atomic.h"
#include "chan.h"
#include "defs.h"
#include "fatal.h"
#include "preempt.h"
#include "proc.h"
#include "san.h"
#include "sched.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Cases handled with the arrays on the goroutine stack; more use malloc. */
#define SELECT_STACK_CASES 8

static inline uintptr_t key(const gort_case *cases, uint16_t i)
{
    return (uintptr_t)cases[i].ch;
}

static void sellock(const gort_case *cases, const uint16_t *lockorder, int n)
{
    struct gort_chan *prev = NULL;
    for (int i = 0; i < n; i++) {
        struct gort_chan *c = cases[lockorder[i]].ch;
        if (c != prev)
            gort__spinlock(&c->lock);
        prev = c;
    }
}

static void selunlock(const gort_case *cases, const uint16_t *lockorder, int n)
{
    /* Reverse order; a channel repeated in several cases is unlocked once,
     * at its first position. */
    for (int i = n - 1; i >= 0; i--) {
        struct gort_chan *c = cases[lockorder[i]].ch;
        if (i > 0 && c == cases[lockorder[i - 1]].ch)
            continue;
        gort__spinunlock(&c->lock);
    }
}

/* park's unlock function: the G is parked, release its channels in the
 * order of g->waiting (lock order). */
static bool selparkcommit(struct m *mp, struct g *gp, void *arg)
{
    (void)arg;
    struct gort_chan *last = NULL;
    for (struct sudog *sg = gp->waiting; sg; sg = sg->waitlink) {
        if (sg->c != last && last)
            gort__spinunlock_m(mp, &last->lock);
        last = sg->c;
    }
    if (last)
        gort__spinunlock_m(mp, &last->lock);
    return true;
}

/* Sort lockorder by channel address: heap sort, no recursion (as Go). */
static void sort_lockorder(const gort_case *cases, const uint16_t *pollorder,
                           uint16_t *lockorder, int n)
{
    for (int i = 0; i < n; i++) {
        int j = i;
        uintptr_t c = key(cases, pollorder[i]);
        while (j > 0 && key(cases, lockorder[(j - 1) / 2]) < c) {
            int k = (j - 1) / 2;
            lockorder[j] = lockorder[k];
            j = k;
        }
        lockorder[j] = pollorder[i];
    }
    for (int i = n - 1; i >= 0; i--) {
        uint16_t o = lockorder[i];
        uintptr_t c = key(cases, o);
        lockorder[i] = lockorder[0];
        int j = 0;
        for (;;) {
            int k = j * 2 + 1;
            if (k >= i)
                break;
            if (k + 1 < i && key(cases, lockorder[k]) < key(cases, lockorder[k + 1]))
                k++;
            if (c < key(cases, lockorder[k])) {
                lockorder[j] = lockorder[k];
                j = k;
                continue;
            }
            break;
        }
        lockorder[j] = o;
    }
}

/* One ready case (or a default) needs none of the machinery: the plain
 * channel operations do it, blocking or not. */
static int select_one(gort_case *cs, int casei, int dflt, bool san)
{
    bool block = dflt < 0;
    if (cs->dir == GORT_CASE_SEND)
        return gort__chansend(gort__getm(), cs->ch, cs->elem, block, san)
                   ? casei
                   : dflt;
    bool ok;
    if (!gort__chanrecv(gort__getm(), cs->ch, cs->elem, block, &ok, san))
        return dflt;
    cs->ok = ok;
    return casei;
}

static int selectgo(gort_case *cases, int ncases, int dflt, uint16_t *order,
                    struct sudog *sgs, bool san)
{
    uint16_t *pollorder = order, *lockorder = order + ncases;

    /* Random poll order over the cases with a channel (nil-channel cases
     * are never ready and are left out, as in Go). */
    int norder = 0;
    for (int i = 0; i < ncases; i++) {
        if (i == dflt || !cases[i].ch)
            continue;
        uint32_t j = gort__fastrandn((uint32_t)norder + 1);
        pollorder[norder] = pollorder[j];
        pollorder[j] = (uint16_t)i;
        norder++;
    }
    sort_lockorder(cases, pollorder, lockorder, norder);
    sellock(cases, lockorder, norder);

    /* Pass 1: anything ready now? */
    for (int i = 0; i < norder; i++) {
        int casei = pollorder[i];
        gort_case *cs = &cases[casei];
        struct gort_chan *c = cs->ch;
        struct sudog *sg;
        if (cs->dir == GORT_CASE_RECV) {
            if ((sg = gort__waitq_dequeue(&c->sendq))) {
                if (san)
                    gort__san_sync(c);
                /* As chan.c's recv, but all channels are unlocked. */
                if (c->dataqsiz == 0) {
                    if (cs->elem && c->elemsize)
                        memcpy(cs->elem, sg->elem, c->elemsize);
                } else {
                    gort__chan_bufrecv(c, cs->elem);
                    gort__chan_bufsend(c, sg->elem);
                }
                sg->success = true;
                sg->g->param = sg;
                selunlock(cases, lockorder, norder);
                gort__ready(sg->g, true);
                cs->ok = true;
                return casei;
            }
            if (c->qcount > 0) {
                if (san)
                    gort__san_sync(c);
                gort__chan_bufrecv(c, cs->elem);
                selunlock(cases, lockorder, norder);
                cs->ok = true;
                return casei;
            }
            if (c->closed) {
                if (san)
                    gort__san_sync(c);
                selunlock(cases, lockorder, norder);
                if (cs->elem && c->elemsize)
                    memset(cs->elem, 0, c->elemsize);
                cs->ok = false;
                return casei;
            }
        } else {
            if (c->closed) {
                selunlock(cases, lockorder, norder);
                gort__fatal("send on closed channel");
            }
            if ((sg = gort__waitq_dequeue(&c->recvq))) {
                if (san)
                    gort__san_sync(c);
                if (sg->elem && c->elemsize)
                    memcpy(sg->elem, cs->elem, c->elemsize);
                sg->success = true;
                sg->g->param = sg;
                selunlock(cases, lockorder, norder);
                gort__ready(sg->g, true);
                return casei;
            }
            if (c->qcount < c->dataqsiz) {
                if (san)
                    gort__san_sync(c);
                gort__chan_bufsend(c, cs->elem);
                selunlock(cases, lockorder, norder);
                return casei;
            }
        }
    }
    if (dflt >= 0) {
        selunlock(cases, lockorder, norder);
        return dflt;
    }

    /* Pass 2: queue on every channel, in lock order, and park. */
    struct g *gp = gort__getg();
    struct sudog **nextp = &gp->waiting;
    for (int i = 0; i < norder; i++) {
        int casei = lockorder[i];
        gort_case *cs = &cases[casei];
        struct sudog *sg = &sgs[i];
        memset(sg, 0, sizeof *sg);
        sg->g = gp;
        sg->isselect = true;
        sg->elem = cs->elem;
        sg->c = cs->ch;
        sg->casei = casei;
        *nextp = sg;
        nextp = &sg->waitlink;
        if (san)
            gort__san_release(sg->c);
        gort__waitq_enqueue(cs->dir == GORT_CASE_SEND ? &cs->ch->sendq
                                                      : &cs->ch->recvq,
                            sg);
    }
    *nextp = NULL;
    gp->param = NULL;
    gp->waitobj = norder == 1 ? (const void *)cases[lockorder[0]].ch : NULL;
    gort__park(selparkcommit, NULL,
               norder == 0 && ncases == 0 ? WAIT_SELECT_NO_CASES : WAIT_SELECT);
    if (norder == 0)
        gort__throw("unreachable: select with no channels woke");

    /* Pass 3: one sudog won; take the others off their queues. */
    sellock(cases, lockorder, norder);
    /* Relaxed: every claimant of this select has finished (they held a
     * channel lock we now hold). */
    store_relaxed(&gp->selectdone, 0);
    struct sudog *won = gp->param;
    gp->param = NULL;
    gp->waiting = NULL;
    gp->waitobj = NULL;
    int casei = -1;
    for (int i = 0; i < norder; i++) {
        struct sudog *sg = &sgs[i];
        if (sg == won) {
            casei = sg->casei;
            continue;
        }
        gort_case *cs = &cases[sg->casei];
        gort__waitq_remove(cs->dir == GORT_CASE_SEND ? &cs->ch->sendq
                                                     : &cs->ch->recvq,
                           sg);
    }
    if (casei < 0)
        gort__throw("select: bad wake-up");
    if (san)
        gort__san_acquire(won->c);
    selunlock(cases, lockorder, norder);
    if (cases[casei].dir == GORT_CASE_SEND) {
        if (!won->success)
            gort__fatal("send on closed channel");
    } else {
        cases[casei].ok = won->success;
    }
    return casei;
}

static inline __attribute__((always_inline)) int
select_common(gort_case *cases, int ncases, bool san)
{
    if (ncases < 0 || ncases > 65536 || (!cases && ncases > 0))
        return -EINVAL;
    int dflt = -1, nlive = 0, live = -1;
    for (int i = 0; i < ncases; i++) {
        switch (cases[i].dir) {
        case GORT_CASE_DEFAULT:
            if (dflt >= 0)
                return -EINVAL;
            dflt = i;
            break;
        case GORT_CASE_RECV:
        case GORT_CASE_SEND:
            if (cases[i].ch) {
                nlive++;
                live = i;
            }
            break;
        default:
            return -EINVAL;
        }
    }
    gort__preempt_check();
    gort__need_goroutine("gort_select");
    if (nlive == 0 && dflt >= 0)
        return dflt;
    if (nlive == 1)
        return select_one(&cases[live], live, dflt, san);

    uint16_t order_small[2 * SELECT_STACK_CASES];
    struct sudog sgs_small[SELECT_STACK_CASES];
    uint16_t *order = order_small;
    struct sudog *sgs = sgs_small;
    void *heap = NULL;
    if (ncases > SELECT_STACK_CASES) {
        size_t osz = ((size_t)2 * ncases * sizeof(uint16_t) + 15) & ~(size_t)15;
        heap = gort__malloc(osz + (size_t)ncases * sizeof(struct sudog));
        if (!heap)
            return -ENOMEM;
        order = heap;
        sgs = (struct sudog *)((char *)heap + osz);
    }
    int r = selectgo(cases, ncases, dflt, order, sgs, san);
    gort__free(heap);
    return r;
}

static GORT_NOINLINE int select_san(gort_case *cases, int ncases)
{
    GORT_SAN_SCOPE();
    return select_common(cases, ncases, true);
}

int gort_select(gort_case *cases, int ncases)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN))
        return select_san(cases, ncases);
    return select_common(cases, ncases, false);
}

int gort__select_extra(gort_case *cases, int ncases, gort_case extra)
{
    gort_case small[SELECT_STACK_CASES + 1], *all = small;
    if (ncases + 1 > SELECT_STACK_CASES + 1 &&
        !(all = gort__malloc((size_t)(ncases + 1) * sizeof *all)))
        return -ENOMEM;
    if (ncases > 0)
        memcpy(all, cases, (size_t)ncases * sizeof *all);
    all[ncases] = extra;
    int r = gort_select(all, ncases + 1);
    if (r >= 0 && r < ncases)
        cases[r].ok = all[r].ok;
    if (all != small)
        gort__free(all);
    return r;
}
