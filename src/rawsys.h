/* SPDX-License-Identifier: MIT */
/*
 * rawsys.h - what rawsys.c offers the rest of the runtime: blocking
 * calls nobody wrapped.
 */
#ifndef GORT_RAWSYS_H
#define GORT_RAWSYS_H

#include "defs.h"
#include "sched.h"

/* Unwrapped blocking calls (rawsys.c). */
enum { RAWSYS_SIGNAL = 0, RAWSYS_PROC };
/* RAWSYS_PROC when /proc shows this process's own system calls, else
 * RAWSYS_SIGNAL (the preemption signal finds them: preempt.c).  Set at
 * start; relaxed. */
GORT_HIDDEN extern uint32_t gort__rawsys_mode;
/* m->rawmark: an inspector's claim on a sleeping thread (rawsys.c). */
enum { RAWMARK_NONE = 0, RAWMARK_INTENT, RAWMARK_COMMITTING, RAWMARK_DONE };
enum rawsys_result {
    RAWSYS_UNKNOWN,   /* /proc cannot tell here: the preemption
                         signal looks instead (preempt.c) */
    RAWSYS_SKIP,      /* nothing to see now (in gort, a lock, a fault) */
    RAWSYS_BUSY,      /* another inspector has the M: look again soon */
    RAWSYS_RUNNING,   /* runnable */
    RAWSYS_BLOCKED,   /* asleep in a call nobody wrapped, not long enough
                         yet: look again soon */
    RAWSYS_HANDEDOFF, /* asleep long enough: its P was handed off */
};
/* Decide how, at start: RAWSYS_PROC or RAWSYS_SIGNAL. */
GORT_HIDDEN void gort__rawsys_init(void);
/* Look at the thread running pp's G: if it sleeps in a call nobody
 * wrapped and has slept long enough (slept_ns), hand its P off.  Any
 * thread but the inspected one. */
GORT_HIDDEN enum rawsys_result gort__rawsys_inspect(struct p *pp, int64_t now,
                                                    int64_t slept_ns);
/* The thread's side: publish its TLS to inspectors (mfast: its
 * gort__tls_mfast) at start, settle an inspector's claim
 * (gort__getm_slow), and let no inspector touch its TLS once it ends. */
GORT_HIDDEN void gort__rawsys_thread_start(struct m *mp, struct m **mfast);
GORT_HIDDEN void gort__rawsys_back(struct m *mp);
GORT_HIDDEN void gort__rawsys_thread_exit(struct m *mp);
/* How long thread tid of this process has waited for a CPU while
 * runnable, ns (schedstat's second field), or -1 when unknown. */
GORT_HIDDEN int64_t gort__thread_runq_wait(int32_t tid);

#endif /* GORT_RAWSYS_H */
