/* SPDX-License-Identifier: MIT */
/*
 * foreign.h - what foreign.c offers the rest of the runtime: foreign
 * threads' extra Ms and Gs.
 */
#ifndef GORT_FOREIGN_H
#define GORT_FOREIGN_H

#include "defs.h"
#include "sched.h"

/* A foreign thread (mp, without a P) makes gp, of status from, runnable:
 * the global queue and a wakep. */
GORT_HIDDEN void gort__foreign_queue(struct m *mp, struct g *gp,
                                     uint32_t from);
/* gort__ready where the G stands for a foreign thread (its thread is
 * woken) or the caller is one (mp without a P: gort__foreign_queue). */
GORT_HIDDEN void gort__foreign_ready(struct m *mp, struct g *gp);
/* gort__park on a foreign thread: it sleeps on its M's note. */
GORT_HIDDEN void gort__foreign_park(struct m *mp, struct g *gp,
                                    gort__unlockf unlockf, void *lock);
/* Teardown: forget the extra Ms (their threads free them). */
GORT_HIDDEN void gort__foreign_fini(void);
/* gort__getm_slow's work (registered at boot). */
GORT_HIDDEN struct m *gort__foreign_getm(void);

#endif /* GORT_FOREIGN_H */
