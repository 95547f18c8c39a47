/* SPDX-License-Identifier: MIT */
/*
 * timers.h - what time.c offers the rest of the runtime: the per-P
 * timers.
 */
#ifndef GORT_TIMERS_H
#define GORT_TIMERS_H

#include "defs.h"
#include "sched.h"

GORT_HIDDEN int64_t gort__timers_check(struct p *pp, int64_t now);
GORT_HIDDEN int64_t gort__timers_earliest(void);
GORT_HIDDEN bool gort__timers_any(void);
GORT_HIDDEN void gort__timers_move(struct p *from, struct p *to);
GORT_HIDDEN void gort__timers_fini(struct p *pp);
GORT_HIDDEN void gort__gtimer_reset(struct gtimer *t, int64_t when);
GORT_HIDDEN bool gort__gtimer_stop(struct gtimer *t);
/* Move a pending selfonly or pushable timer to when, without locks: the
 * caller records the time, and the run loop takes it once the timer comes
 * due.  True when t was pending (and will come due at when, unless its
 * heap key is later: the caller knows it is not); false when not, and the
 * caller must start it (gort__gtimer_reset, after storing 0 in later). */
GORT_HIDDEN bool gort__gtimer_push(struct gtimer *t, int64_t when);
/* gtimer.later of a selfonly or pushable timer the run loop has taken to
 * fire: whoever starts it again stores 0 there first, then resets it. */
#define GTIMER_FIRING INT64_MIN
/* The calling goroutine's P, whose heap its timers go on (fatal, naming
 * who, outside a goroutine or on a thread gort did not create). */
GORT_HIDDEN struct p *gort__timer_p(const char *who);
/* Put t, in no heap, on pp's heap at t->when; take t out of its heap
 * (true if it was pending).  Both with t->mu held. */
GORT_HIDDEN void gort__timer_add(struct p *pp, struct gtimer *t);
GORT_HIDDEN bool gort__timer_remove(struct gtimer *t);
/* Room on pp's heap for one timer more: 0, or -ENOMEM when the heap
 * cannot grow (gort__timer_add would throw).  Only a P's own M adds to
 * its heap (and procresize, with the world stopped), so an add on pp
 * that follows without a switch has the room. */
GORT_HIDDEN int gort__timer_reserve(struct p *pp);

#endif /* GORT_TIMERS_H */
