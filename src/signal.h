/* SPDX-License-Identifier: MIT */
/*
 * signal.h - what signal.c offers the rest of the runtime: the teardown
 * of os/signal's state (gort.h's gort_signal_*).  Included as "signal.h"
 * from src/ only; the C library's header is always <signal.h>, and src/
 * is on no include path.
 */
#ifndef GORT_SIGNAL_H
#define GORT_SIGNAL_H

#include "defs.h"

/* At the end of gort_main, every goroutine gone: put back the
 * dispositions gort_signal_notify and gort_signal_ignore changed, wait
 * for handlers still running, close the wake-up descriptor and forget
 * every channel. */
GORT_HIDDEN void gort__signal_fini(void);

#endif /* GORT_SIGNAL_H */
