/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the execution tracer's entry points for the runtime's start
 * and end (trace.c).  The scheduler's hooks are in tracehooks.h; the
 * public API (gort_trace_start, gort_trace_stop) is in gort.h.
 */
#ifndef GORT_TRACE_H
#define GORT_TRACE_H

#include "defs.h"
#include "sched.h"

/* Put the recorder's functions into gort__tracehooks (once, at the first
 * gort_main, before any goroutine runs). */
GORT_HIDDEN void gort__trace_register(void);

/* Start tracing into path from gort_main (GORTDEBUG=trace=path), before
 * any other thread runs; a failure is reported on stderr.  Stop whatever
 * trace is running once every other thread has ended (gort_main's end). */
GORT_HIDDEN void gort__trace_boot(struct m *mp, const char *path);
GORT_HIDDEN void gort__trace_shutdown(void);

/* For tests: while nonzero, the writer takes no buffers, so that records
 * are dropped once the pool is used up (tests/unit/test_trace.c). */
GORT_HIDDEN extern uint32_t gort__trace_stall;

#endif /* GORT_TRACE_H */
