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
 * window's run-queue wait of this process's threads, its length (ns) and
 * the goroutines the poller readied in it. */
struct gort__crowd {
    bool crowded;   /* a window run with two loops waited long: the
                     * trial is on */
    bool one;       /* the open window runs one event loop */
    bool favor;     /* the trial favors one loop */
    bool settle;    /* the open window is the first in its mode since a
                     * change, and is not measured */
    int64_t last;   /* wake-ups a second in the last favored window */
    int64_t tried;  /* ... in the last trial window, until the favored
                     * mode is measured again (0: none) */
    int64_t gain;   /* the other mode's rate over the favored mode's,
                     * 1024ths, a moving average (0: not tried yet) */
    uint32_t n;     /* favored windows since the last trial */
    uint32_t tries; /* trials since the favored mode changed */
    uint32_t every; /* one trial every `every` windows; 0:
                     * GORT_CROWD_TRIAL_EVERY */
};
GORT_HIDDEN void gort__crowd_step(struct gort__crowd *c, int64_t wait,
                                  int64_t window, uint64_t wakeups);
/* Whether the next window runs one event loop. */
GORT_HIDDEN bool gort__crowd_on(const struct gort__crowd *c);

#endif /* GORT_SYSMON_H */
