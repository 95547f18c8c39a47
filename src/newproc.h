/* SPDX-License-Identifier: MIT */
/*
 * newproc.h - what newproc.c offers the rest of the runtime: goroutine
 * creation and the G structures.
 */
#ifndef GORT_NEWPROC_H
#define GORT_NEWPROC_H

#include "defs.h"
#include "sched.h"

/* A new G on allgs: G_DEAD, no stack.  NULL when out of memory.  Mirrors
 * malg (proc.go). */
GORT_HIDDEN struct g *gort__malg(void);
/* A G whose goroutine has ended (its context gone): its stack to pp's
 * stack cache, the G to pp's free list.  Owner P only. */
GORT_HIDDEN void gort__gfree_stack_and_put(struct p *pp, struct g *gp);
/* Start a goroutine from the scheduler (g0 of an M holding a P): the
 * goid, or -ENOMEM. */
GORT_HIDDEN int64_t gort__newproc_sys(void (*fn)(void *), void *arg);
/* Queue the main goroutine on pp at boot: 0 or -ENOMEM. */
GORT_HIDDEN int gort__newproc_main(struct p *pp, void (*fn)(void *),
                                   void *arg, uintptr_t pc);
/* Free every G and allgs at shutdown. */
GORT_HIDDEN void gort__allgs_fini(void);

#endif /* GORT_NEWPROC_H */
