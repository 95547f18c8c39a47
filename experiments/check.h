/* SPDX-License-Identifier: MIT */
/*
 * check.h - the check lines of the experiments (header only).
 *
 * An experiment judges its figures on lines of the form
 *
 *     check: <what was measured, against what>: ok
 *
 * ending in FAILED instead when the figure is off; `failed` then makes
 * its exit status 1.  Each experiment is one file, so the state here is
 * that program's own.
 */
#ifndef GORT_EXPERIMENTS_CHECK_H
#define GORT_EXPERIMENTS_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/* A check line said FAILED: the experiment's exit status. */
static int failed;

static inline void check(bool ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One check line: "check: <fmt>: ok" or "...: FAILED". */
static inline void check(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("check: ", stdout);
    vprintf(fmt, ap);
    va_end(ap);
    printf(": %s\n", ok ? "ok" : "FAILED");
    failed |= !ok;
}

#endif /* GORT_EXPERIMENTS_CHECK_H */
