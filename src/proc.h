/* SPDX-License-Identifier: MIT */
/*
 * proc.h - proc.c's header: park, ready, schedule, the M's loop.  The
 * scheduler layer's other modules have a header each (mthread.h,
 * foreign.h, newproc.h, syscall.h, rawsys.h, preempt.h, procresize.h,
 * sysmon.h, timers.h for time.c, netpoll.h, netpoll_epoll.h, sema.h); a
 * file includes those it uses.
 */
#ifndef GORT_PROC_H
#define GORT_PROC_H

#include "atomic.h"
#include "defs.h"
#include "foreign.h"
#include "mthread.h"
#include "runq.h"
#include "sched.h"
#include "tracehooks.h"

/* ---------------------------------------------------------------------------
 * Scheduler (proc.c).
 * ------------------------------------------------------------------------- */

/* Park the running G with the given reason.  On g0, after the G's context
 * is saved, unlockf(mp, gp, lock) runs on its M; if it returns false the
 * G resumes at once.  Mirrors gopark (proc.go). */
GORT_HIDDEN void gort__park(gort__unlockf unlockf, void *lock,
                            uint32_t reason);
/* Make a WAITING G runnable (in runnext when next): on the caller's P;
 * from a caller without a P (a foreign thread), on the global queue; a G
 * standing for a foreign thread has its thread woken.  Mirrors goready
 * (proc.go). */
GORT_HIDDEN void gort__ready(struct g *gp, bool next);
/* Queue a batch of runnable Gs: one on the global queue per idle P (with
 * an M started for it), the rest on the caller's P, if it holds one.
 * Mirrors injectglist (proc.go). */
GORT_HIDDEN void gort__injectglist(struct gqueue *q, int32_t n);
/* gort__ready for a caller that has its M at hand, with the usual case
 * inline: gp is a G of gort's own and mp holds a P, which it keeps
 * throughout (m->locks).  The rest goes to gort__foreign_ready.  t (enum
 * gtrace): GT_OFF or GT_ON from a caller that has looked at the trace
 * flag (gort__ready's two bodies); GT_CHECK looks at it here and sends a
 * traced wake-up to gort__ready (the channel hand-offs).  Mirrors ready
 * (proc.go). */
static inline __attribute__((always_inline)) void
gort__ready_m(struct m *mp, struct g *gp, bool next, enum gtrace t)
{
    if (t == GT_CHECK && GORT_TRACE_ON()) {
        gort__ready(gp, next);
        return;
    }
    struct p *pp = mp->p;
    if (GORT_UNLIKELY(gp->foreign || !pp)) {
        gort__foreign_ready(mp, gp);
        return;
    }
    mp->locks++;
    /* Past the test above, GT_CHECK means untraced. */
    gort__casgstatus_t(gp, G_WAITING, G_RUNNABLE,
                       t == GT_ON ? GT_ON : GT_OFF);
    gort__runqput(pp, gp, next);
    if (load_relaxed(&gort__sched.npidle) != 0) /* wakep's first test */
        gort__wakep();
    mp->locks--;
}

/* The scheduler's loop on g0, until the M must exit.  Mirrors schedule
 * (proc.go). */
GORT_HIDDEN void gort__schedule(void);
GORT_HIDDEN void gort__dropg(struct m *mp);
/* Run fn(gp) on g0 with the current G's context saved (mcall). */
GORT_HIDDEN void gort__mcall(struct g *(*fn)(struct g *));
/* Reset the steal order for count Ps.  World stopped. */
GORT_HIDDEN void gort__steal_order_reset(uint32_t count);

#endif /* GORT_PROC_H */
