/* SPDX-License-Identifier: MIT */
/*
 * mthread.h - what mthread.c offers the rest of the runtime: Ms: making,
 * parking and starting them, LockOSThread, deadlock detection, the main
 * goroutine's exit.
 */
#ifndef GORT_MTHREAD_H
#define GORT_MTHREAD_H

#include "defs.h"
#include "sched.h"

/* Sleep on n (the calling thread's, whose M is mp), shown meanwhile as
 * blocked=true in schedtrace, as Go's notesleep sets m.blocked.  The flag
 * is a report only: relaxed stores by the owner, racy reads by
 * schedtrace. */
static inline void gort__m_notesleep(struct m *mp, gort_note *n)
{
    store_relaxed(&mp->blocked, 1);
    gort__notesleep(n);
    store_relaxed(&mp->blocked, 0);
}
static inline bool gort__m_notetsleep(struct m *mp, gort_note *n, int64_t ns)
{
    store_relaxed(&mp->blocked, 1);
    bool woken = gort__notetsleep(n, ns);
    store_relaxed(&mp->blocked, 0);
    return woken;
}

/* A new M and its g0, not yet counted or on allm (NULL when out of
 * memory). */
GORT_HIDDEN struct m *gort__allocm(void);
GORT_HIDDEN void gort__freem(struct m *mp);
/* An M for a runtime thread that runs without a P (sysmon), counted in
 * sched.nmsys. */
GORT_HIDDEN struct m *gort__allocm_sys(void);
/* Give mp an id (id, reserved, or a new one when id < 0), seed its
 * random state and put it on allm.  sched.lock held. */
GORT_HIDDEN void gort__mcommoninit_id_locked(struct m *mp, int64_t id);
/* Fatal if the Ms pass sched.maxmcount.  sched.lock held. */
GORT_HIDDEN void gort__checkmcount_locked(void);
/* Threads the runtime has made (racy outside sched.lock; for reports). */
GORT_HIDDEN int32_t gort__mcount(void);
/* Set up the calling thread as mp (TLS, signal stack, sanitizer fiber):
 * 0 or a negative errno. */
GORT_HIDDEN int gort__mstart_common(struct m *mp);
/* A new M (a thread) to run pp.  Mirrors newm (proc.go). */
GORT_HIDDEN void gort__newm(struct p *pp, bool spinning);
/* An M off the idle list, or NULL.  sched.lock held.  Mirrors mget. */
GORT_HIDDEN struct m *gort__mget_locked(void);
/* Park the current M, which holds no P, until it is handed one.  Returns
 * false when the M must exit instead.  Mirrors stopm (proc.go). */
GORT_HIDDEN bool gort__stopm(struct m *mp);
GORT_HIDDEN void gort__stopm_schedule(struct m *mp);
/* startm with an idle P and no spinning (for injectglist). */
GORT_HIDDEN void gort__startm_idle(void);
/* Hand pp, whose M is blocking, to another M or the idle list. */
GORT_HIDDEN void gort__handoffp(struct p *pp);
/* Try to put one more P to work with a spinning M.  Mirrors wakep. */
GORT_HIDDEN void gort__wakep(void);
/* A wired G exited without unlocking: its M's thread ends (not M0's).
 * Returns false when the M must exit.  Mirrors mexit (proc.go). */
GORT_HIDDEN bool gort__mexit(struct m *mp);
/* LockOSThread.  The wired G of mp cannot run: give the P away and sleep
 * until a P comes with the G; returns the G (mp holding a P), or NULL
 * when the M must exit.  gort__stoplockedm: the same, returning whether
 * the M got its G.  Mirrors stoplockedm (proc.go). */
GORT_HIDDEN struct g *gort__stoplockedm_g(struct m *mp);
GORT_HIDDEN bool gort__stoplockedm(struct m *mp);
/* gp, just taken from a run queue, is wired to another M: hand it over.
 * Returns false when the caller must exit.  Mirrors startlockedm. */
GORT_HIDDEN bool gort__startlockedm(struct m *mp, struct g *gp);
/* Deadlock detection whenever an M goes idle.  sched.lock held.  Mirrors
 * checkdead (proc.go). */
GORT_HIDDEN void gort__checkdead_locked(void);

/* On g0, the main goroutine gp having returned: stop the world and tell
 * every M to exit (an mcall function). */
GORT_HIDDEN struct g *gort__main_exit_m(struct g *gp);

#endif /* GORT_MTHREAD_H */
