/* SPDX-License-Identifier: MIT */
/*
 * fatal.h - what fatal.c offers: fatal errors, the runtime's printing,
 * the dump hook.
 */
#ifndef GORT_FATAL_H
#define GORT_FATAL_H

#include "defs.h"

/* A broken runtime invariant (Go's throw): "fatal error: msg" and the
 * goroutine dump with gort's own frames in it, whatever GORTTRACEBACK
 * says short of none (the bug is in them). */
GORT_HIDDEN GORT_NORETURN void gort__throw(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* A misuse by the program (Go's fatal): "fatal error: msg" and the
 * goroutine dump as GORTTRACEBACK says (the program's frames). */
GORT_HIDDEN GORT_NORETURN void gort__fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* Claim the right to report a fatal error or signal: returns to the first
 * caller only (a second report on the same thread aborts, one on another
 * thread waits for the first to end the process). */
GORT_HIDDEN void gort__fatal_begin(void);
/* In the simulation mode, print "gort: sim seed=SEED strategy=S" to
 * stderr, once per process (docs/sim.md); otherwise nothing. */
GORT_HIDDEN void gort__sim_report(void);
/* A fatal error is being reported. */
GORT_HIDDEN bool gort__fatal_dying(void);
/* Where a signal interrupted a thread (from its ucontext: os_linux.c). */
struct gort_trap {
    uintptr_t pc, sp, fp;
    uintptr_t lr;   /* aarch64's link register; 0 on x86-64 */
};
GORT_HIDDEN void gort__trap_from_ucontext(struct gort_trap *t, const void *uc);
/* The goroutine dump of a fatal error or signal: the goroutine this
 * thread runs (from trap when a signal handler calls, else NULL), then
 * every other one; gort's own frames too when runtime_frames (a throw).
 * traceback.c's gort__traceback_fatal, registered at start-up;
 * gort__fatal_dump prints nothing before that. */
typedef void (*gort__dump_fn)(int fd, const struct gort_trap *trap,
                              bool runtime_frames);
GORT_HIDDEN void gort__fatal_set_dump(gort__dump_fn fn);
GORT_HIDDEN void gort__fatal_dump(int fd, const struct gort_trap *trap,
                                  bool runtime_frames);
/* Write a formatted string to fd without malloc (async-signal-safe use). */
GORT_HIDDEN void gort__printf(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* GORTTRACEBACK's levels (env.c): what fatal errors and SIGQUIT print
 * (none, only the goroutine that hit it, all goroutines, all with gort's
 * own frames). */
enum { TRACEBACK_NONE, TRACEBACK_SINGLE, TRACEBACK_ALL, TRACEBACK_SYSTEM };
GORT_HIDDEN extern int32_t gort__traceback_level;
/* Parse GORTTRACEBACK; on error print a message and return dflt. */
GORT_HIDDEN int32_t gort__parse_traceback(const char *s, int32_t dflt);
/* Goroutine dumps (traceback.c): gort__fatal_dump's implementation. */
GORT_HIDDEN void gort__traceback_fatal(int fd, const struct gort_trap *trap,
                                       bool runtime_frames);
/* schedtrace/scheddetail (debug.c). */
GORT_HIDDEN void gort__schedtrace(bool detail);

#endif /* GORT_FATAL_H */
