/* SPDX-License-Identifier: MIT */
/*
 * procresize.h - what procresize.c offers the rest of the runtime: stop-
 * the-world, GOMAXPROCS and P ownership.
 */
#ifndef GORT_PROCRESIZE_H
#define GORT_PROCRESIZE_H

#include "atomic.h"
#include "defs.h"
#include "sched.h"

/* Stop-the-world, GOMAXPROCS and P ownership (procresize.c). */
GORT_HIDDEN void gort__stop_the_world(const char *why);
GORT_HIDDEN void gort__start_the_world(void);
/* The halves of stop/start-the-world that run on any stack of an M
 * holding a P (procresize.c). */
GORT_HIDDEN void gort__stw_stop(struct m *mp);
GORT_HIDDEN void gort__stw_start(struct m *mp);
/* Change the number of Ps; world stopped, sched.lock held.  Returns the
 * Ps that have work, linked through p->link (procresize.c). */
GORT_HIDDEN struct p *gort__procresize(struct m *mp, int32_t nprocs);
GORT_HIDDEN extern int32_t gort__newprocs;
GORT_HIDDEN extern uint32_t gort__worldsema;
/* P ownership and the idle P list (procresize.c); the _locked ones need
 * sched.lock. */
GORT_HIDDEN void gort__acquirep(struct m *mp, struct p *pp);
/* Take mp's P from it and return the P, now idle.  Mirrors releasep. */
GORT_HIDDEN struct p *gort__releasep(struct m *mp);
GORT_HIDDEN void gort__pidleput_locked(struct p *pp);
GORT_HIDDEN struct p *gort__pidleget_locked(void);
/* pidleget, recording that a spinning M was wanted when no P is idle.
 * Mirrors pidlegetSpinning (proc.go). */
GORT_HIDDEN struct p *gort__pidlegetspinning_locked(void);
GORT_HIDDEN void gort__setidlep(int32_t id, bool idle);
static inline bool gort__isidlep(int32_t id)
{
    return (load_relaxed(&gort__idlepmask[id / 32]) >> (id % 32)) & 1;
}
/* Stop the current M's P for a pending stop-the-world; false when the M
 * must exit.  Mirrors gcstopm (procresize.c). */
GORT_HIDDEN bool gort__gcstopm(struct m *mp);

#endif /* GORT_PROCRESIZE_H */
