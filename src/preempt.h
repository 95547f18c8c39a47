/* SPDX-License-Identifier: MIT */
/*
 * preempt.h - what preempt.c offers the rest of the runtime: cooperative
 * and asynchronous preemption.
 */
#ifndef GORT_PREEMPT_H
#define GORT_PREEMPT_H

#include "atomic.h"
#include "defs.h"
#include "sched.h"

/* Cooperative preemption point: yield if sysmon asked this G to. */
GORT_HIDDEN void gort__preempt_check(void);
GORT_HIDDEN void gort__preempt_yield(struct m *mp, struct g *gp);
/* gort__preempt_check for a caller that has its M at hand. */
static inline void gort__preempt_check_m(struct m *mp)
{
    struct g *gp = mp->curg;
    /* Relaxed: a late sighting only delays the preemption a little. */
    if (GORT_UNLIKELY(gp && load_relaxed(&gp->preempt) && mp->locks == 0))
        gort__preempt_yield(mp, gp);
}

/* Asynchronous preemption (preempt.c). */
GORT_HIDDEN int gort__preempt_init(void);
GORT_HIDDEN void gort__preempt_fini(void);

/* A G's own stack for preemptions deep in its stack (preempt.c; its
 * size, GORT_PREEMPT_STK, is in sched.h beside struct g). */
GORT_HIDDEN void gort__preemptstk_free(struct g *gp);
/* Whether preemption signals are used (not under ThreadSanitizer or
 * Valgrind, nor with GORTDEBUG=asyncpreemptoff=1). */
GORT_HIDDEN bool gort__preempt_async_on(void);
/* The M's CPU-time timer, which carries its preemption signal where
 * /proc shows the threads' calls (preempt.c): made on the M's own thread
 * (after gort__minit; M0's by gort__preempt_init), deleted before its
 * gort__unminit. */
GORT_HIDDEN void gort__preempt_thread_start(struct m *mp);
GORT_HIDDEN void gort__preempt_thread_exit(struct m *mp);
/* Send mp's thread the preemption signal (when asynchronous preemption
 * is on): by its CPU-time timer, which fires only while the thread runs;
 * at once where it has none (RAWSYS_SIGNAL, where the signal itself looks
 * for blocked calls, or the kernel refused a timer). */
GORT_HIDDEN void gort__preempt_signal(struct m *mp);
/* Ask the G running on pp to yield, and signal its thread. */
GORT_HIDDEN void gort__preempt_request(struct p *pp);

#endif /* GORT_PREEMPT_H */
