/* SPDX-License-Identifier: MIT */
/*
 * sysmon.h - what sysmon.c offers the rest of the runtime: the system
 * monitor.
 */
#ifndef GORT_SYSMON_H
#define GORT_SYSMON_H

#include "defs.h"

/* sysmon (sysmon.c). */
GORT_HIDDEN int gort__sysmon_start(void);
GORT_HIDDEN void gort__sysmon_stop(void);
GORT_HIDDEN void gort__sysmon_wake(void);
/* Put sysmon back on its shortest rounds (a syscall holds a P that has
 * work waiting). */
GORT_HIDDEN void gort__sysmon_kick(void);

#endif /* GORT_SYSMON_H */
