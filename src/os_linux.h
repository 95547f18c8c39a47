/* SPDX-License-Identifier: MIT */
/*
 * os_linux.h - what os_linux.c offers: threads, clocks and signals.
 */
#ifndef GORT_OS_LINUX_H
#define GORT_OS_LINUX_H

#include "defs.h"
#include "sched.h"

#include <signal.h>

GORT_HIDDEN int32_t gort__gettid(void);
/* CLOCK_MONOTONIC in ns: the real clock, for the runtime's own waits,
 * which must not follow the simulation's virtual clock (gort_nanotime). */
GORT_HIDDEN int64_t gort__nanotime_real(void);
/* The CPU time thread tid (0: the caller) has used, in ns; 0 if
 * unknown. */
GORT_HIDDEN uint64_t gort__thread_cputime(int32_t tid);
/* The CPU time the whole process has used (all its threads, ended ones
 * included), in ns; 0 if unknown. */
GORT_HIDDEN uint64_t gort__process_cputime(void);
GORT_HIDDEN int gort__newosproc(struct m *mp, void *(*start)(void *));
GORT_HIDDEN int gort__minit(struct m *mp);
GORT_HIDDEN void gort__unminit(struct m *mp);
GORT_HIDDEN void gort__osyield(void);
GORT_HIDDEN void gort__usleep(int64_t us);
GORT_HIDDEN int gort__signals_install(void);
/* Whether the signal mask saved in a signal frame (uc_sigmask) blocks a
 * signal that the runtime's threads do not block: the thread was running
 * a signal handler, which blocks its own signal, or the program blocked
 * more itself.  Async-signal-safe. */
GORT_HIDDEN bool gort__sigmask_beyond_init(const sigset_t *saved);
GORT_HIDDEN void gort__signals_restore(void);
/* For a SIGPIPE handler, on the thread that took the signal: true when
 * it is the one a gort write raised (GORT_NOSIGPIPE), which the write
 * reports as -EPIPE; that write then owes nothing.  Async-signal-safe. */
GORT_HIDDEN bool gort__sigpipe_absorb(void);
/* In the simulation mode (once the settings are read), SIGABRT's handler
 * that prints the replay line (gort__sim_report); undone by
 * gort__signals_restore. */
GORT_HIDDEN void gort__signals_sim(void);

#endif /* GORT_OS_LINUX_H */
