/* SPDX-License-Identifier: MIT */
/*
 * env.h - what env.c offers: the settings read from the environment.
 */
#ifndef GORT_ENV_H
#define GORT_ENV_H

#include "defs.h"
#include "sched.h"

/* CPUs this process may use: sched_getaffinity, at least 1. */
GORT_HIDDEN int gort__affinity_cpus(void);
/*
 * The CPU limit from the cgroup (v1 cpu.cfs_quota_us/cfs_period_us or v2
 * cpu.max, the smallest along the path to the root), read below `root`
 * ("" for the real filesystem; tests pass a fake tree with the same layout:
 * root/proc/self/cgroup, root/proc/self/mountinfo, root/sys/fs/cgroup/...).
 * Returns the limit in CPUs (e.g. 1.5) or a value <= 0 when there is none.
 */
GORT_HIDDEN double gort__cgroup_cpu_limit(const char *root);
/* Default GOMAXPROCS: affinity CPUs capped by ceil(cgroup limit), >= 1. */
GORT_HIDDEN int gort__default_procs(const char *root, int ncpu);
/* Parse GORTMAXPROCS; on error print a message and return dflt. */
GORT_HIDDEN int gort__parse_maxprocs(const char *s, int dflt);
/* Parse GORTDEBUG into *dv (defaults kept for bad entries, each reported). */
GORT_HIDDEN void gort__parse_debug(const char *s, struct gort_debugvars *dv);
/* The same without reports (lock_futex.c reads lockfence when the library
 * loads; gort_main reads the whole variable again and reports then). */
GORT_HIDDEN void gort__parse_debug_quiet(const char *s,
                                         struct gort_debugvars *dv);
/* Parse GORTSTACKSIZE; on error print a message and return dflt. */
GORT_HIDDEN size_t gort__parse_stacksize(const char *s, size_t dflt);
/* Read all settings from the environment (called by gort_main). */
GORT_HIDDEN void gort__read_env(void);

#endif /* GORT_ENV_H */
