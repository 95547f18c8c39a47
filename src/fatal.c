/* SPDX-License-Identifier: MIT */
/*
 * fatal.c - fatal errors and the runtime's own printing.
 *
 * gort__throw reports a broken runtime invariant, gort__fatal a misuse by
 * the program; both print "gort: fatal error: ..." as Go does, then the
 * goroutine dump, and abort.  The dump is the observability layer's
 * (traceback.c): it registers it here at start-up (gort__fatal_set_dump),
 * so that the lowest layers can die with a dump without calling upward.
 * A throw's dump shows the runtime's frames too, as Go's does.
 *
 * Invariants:
 *   - One report at a time: a second fatal error on the reporting thread
 *     aborts at once, one on another thread waits for the first to end
 *     the process.
 *   - Printing never allocates (fixed stack buffers), so it works when
 *     malloc is broken or the fatal error is "out of memory".
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "os_linux.h"
#include "sched.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The goroutine dump (NULL until registered).  Written at start-up before
 * any goroutine runs, read by a dying thread: relaxed atomics suffice,
 * a dump missed by a race would only be a shorter report. */
static gort__dump_fn dump_hook;
static uint32_t dying; /* atomic: a fatal error is being reported */

bool gort__fatal_dying(void)
{
    /* Relaxed: a report for people (scheddetail's dying=). */
    return load_relaxed(&dying) != 0;
}

void gort__fatal_set_dump(gort__dump_fn fn)
{
    store_relaxed(&dump_hook, fn);
}

void gort__fatal_dump(int fd, const struct gort_trap *trap,
                      bool runtime_frames)
{
    gort__dump_fn fn = load_relaxed(&dump_hook);
    if (fn)
        fn(fd, trap, runtime_frames);
}

void gort__printf(int fd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    size_t off = 0;
    struct m *mp = gort__libc_begin();
    while (off < len) {
        ssize_t w = gort__libc.write(fd, buf + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    gort__libc_end(mp);
}

static uint32_t sim_reported; /* atomic: the replay line is out */
void gort__sim_report(void)
{
    /* Acq-rel: one line, however many threads fail. */
    if (!gort__sim_on() || xchg_acqrel(&sim_reported, 1u) != 0)
        return;
    /* PCT's depth and the fault rate too, when they apply: they are part
     * of what replays the run.  Each part is written apart (async-signal
     * context: no buffer to build the line in). */
    gort__printf(2, "gort: sim seed=%llu strategy=%s",
                 (unsigned long long)gort__sim.seed,
                 gort__sim.strategy == SIM_PCT ? "pct" : "random");
    if (gort__sim.strategy == SIM_PCT)
        gort__printf(2, " simpct=%d", (int)gort__sim.pctdepth);
    if (gort__sim.faultppm > 0)
        gort__printf(2, " simfault=%d", (int)gort__sim.faultppm);
    gort__printf(2, "\n");
}

/*
 * Claim the right to report a fatal error (or SIGQUIT).  The first caller
 * gets it.  A second error on the same thread while it reports aborts at
 * once (the report itself failed); one on another thread waits for the
 * first report, which ends the process, and aborts after 10 s if it does
 * not (Go relays and waits likewise).
 */
static uint32_t dying_tid; /* atomic: the reporting thread */
void gort__fatal_begin(void)
{
    uint32_t tid = (uint32_t)gort__gettid();
    /* Acq-rel: exactly one caller sees 1. */
    if (xadd_acqrel(&dying, 1) == 1) {
        /* Release: pairs with the acquire below. */
        store_rel(&dying_tid, tid);
        /* First, so that every report of a simulated run says how to
         * replay it (docs/sim.md). */
        gort__sim_report();
        return;
    }
    if (load_acq(&dying_tid) != tid) {
        for (int i = 0; i < 1000; i++)
            gort__usleep(10000);
    }
    signal(SIGABRT, SIG_DFL);
    abort();
}

static GORT_NORETURN void die(bool runtime_frames, const char *fmt,
                              va_list ap)
{
    gort__fatal_begin();
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    gort__printf(2, "gort: fatal error: %s\n\n", msg);
    gort__fatal_dump(2, NULL, runtime_frames);
    signal(SIGABRT, SIG_DFL);
    abort();
}

void gort__throw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    die(true, fmt, ap);
}

void gort__fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    die(false, fmt, ap);
}

void gort__fatal_no_goroutine(const char *who)
{
    /* A plain thread of the program (never a signal handler here, nor
     * under a runtime lock): what it printed and its stdio still holds
     * would be lost to the abort. */
    fflush(NULL);
    gort__fatal("%s: not called from a goroutine (only a goroutine, run "
                "by gort_main or gort_go, may wait in gort)",
                who);
}

void gort__throw_assert(const char *cond, const char *file, int line)
{
    gort__throw("assertion failed: %s (%s:%d)", cond, file, line);
}
