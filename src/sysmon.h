/* SPDX-License-Identifier: MIT */
/*
 * sysmon.h - what sysmon.c offers the rest of the runtime: the system
 * monitor.
 */
#ifndef GORT_SYSMON_H
#define GORT_SYSMON_H

#include "defs.h"

#include <stdbool.h>
#include <stdint.h>

/* sysmon (sysmon.c). */
GORT_HIDDEN int gort__sysmon_start(void);
GORT_HIDDEN void gort__sysmon_stop(void);
GORT_HIDDEN void gort__sysmon_wake(void);
/* Put sysmon back on its shortest rounds (a syscall holds a P that has
 * work waiting). */
GORT_HIDDEN void gort__sysmon_kick(void);

/* The crowd meter's decision (sysmon.c, "The crowd meter"): fed each
 * window's run-queue wait of this process's threads and the window's
 * length, ns. */
struct gort__crowd {
    bool crowded;     /* the last deciding window's wait was high */
    bool trial;       /* the next window runs uncrowded, and decides */
    uint32_t windows; /* crowded windows since the last decision */
    uint32_t every;   /* a trial every this many windows */
};
GORT_HIDDEN void gort__crowd_step(struct gort__crowd *c, int64_t wait,
                                  int64_t window);
/* Whether the next window runs crowded. */
GORT_HIDDEN bool gort__crowd_on(const struct gort__crowd *c);

#endif /* GORT_SYSMON_H */
