/* SPDX-License-Identifier: MIT */
/*
 * gort_simpoints.h - preemption points at function entries for the
 * simulation mode (GORTDEBUG=sim=SEED, docs/sim.md).
 *
 * Compile the program's code with -finstrument-functions and include this
 * header in exactly one of its C files (it defines the two functions the
 * compiler calls at every function entry and exit): each entry then calls
 * gort_sim_point, so the simulation can interleave goroutines that run
 * the program's own code without calling gort, as Go preempts at function
 * prologues.  The runtime itself is not compiled so.  Outside the mode
 * each entry costs a call and one load.  Code that holds a lock the
 * simulation does not see (a pthread mutex) across a call may then yield
 * while holding it; another goroutine that waits for that lock blocks the
 * simulation's one thread: use gort_mutex in such code, or leave it
 * uninstrumented (-finstrument-functions-exclude-file-list).
 */
#ifndef GORT_SIMPOINTS_H
#define GORT_SIMPOINTS_H

#include <gort.h>

#ifdef __cplusplus
extern "C" {
#endif

__attribute__((no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *site);
__attribute__((no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *site);

__attribute__((no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *site)
{
    (void)fn;
    (void)site;
    gort_sim_point();
}

__attribute__((no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn;
    (void)site;
}

#ifdef __cplusplus
}
#endif

#endif /* GORT_SIMPOINTS_H */
