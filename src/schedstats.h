/* SPDX-License-Identifier: MIT */
/*
 * schedstats.h - what schedstats.c offers: what the scheduler records
 * for the metrics.
 */
#ifndef GORT_SCHEDSTATS_H
#define GORT_SCHEDSTATS_H

#include "defs.h"

/* A stop-the-world that began at `began` (nanotime) has stopped every P
 * (stopping) or restarted the world (total): one sample each for
 * /sched/pauses/{stopping,total}/other.  Called by the stopper only. */
GORT_HIDDEN void gort__stw_record_stopping(int64_t began, int64_t now);
GORT_HIDDEN void gort__stw_record_total(int64_t began, int64_t now);

#endif /* GORT_SCHEDSTATS_H */
