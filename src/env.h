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
/* Whether s is a valid GORTMAXPROCS value (no report). */
GORT_HIDDEN bool gort__parse_maxprocs_ok(const char *s);
/*
 * GOMAXPROCS follows the CPUs available (Go 1.25's updater).  Sysmon calls
 * gort__maxprocs_poll once a second: unless the program chose GOMAXPROCS
 * (gort__maxprocs_custom), it re-reads the affinity mask and the cgroup
 * limit and, when they call for another value, stores it in
 * gort__maxprocs_want; a goroutine at its next preemption check applies it
 * (gort__maxprocs_apply, procresize.c).  gort__cgroup_root is where the
 * cgroup files are read ("" for the real ones; tests set a fake tree
 * before gort_main).
 */
GORT_HIDDEN extern const char *gort__cgroup_root;
GORT_HIDDEN extern uint32_t gort__maxprocs_custom; /* atomic */
GORT_HIDDEN extern int32_t gort__maxprocs_want;    /* atomic */
GORT_HIDDEN extern uint64_t gort__maxprocs_updates; /* atomic */
GORT_HIDDEN int gort__maxprocs_poll(void);
GORT_HIDDEN bool gort__maxprocs_apply(void);
/* Read all settings from the environment (called by gort_main). */
GORT_HIDDEN void gort__read_env(void);

#endif /* GORT_ENV_H */
