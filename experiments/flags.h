/* SPDX-License-Identifier: MIT */
/*
 * flags.h - the integer flags of the experiments (header only).
 */
#ifndef GORT_EXPERIMENTS_FLAGS_H
#define GORT_EXPERIMENTS_FLAGS_H

#include <stdio.h>
#include <stdlib.h>

/* The value v of flag `name` as an integer >= min; exit 2 with a message
 * naming prog, the flag and what was wrong otherwise. */
static inline int intflag(const char *prog, const char *name, const char *v,
                          int min)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < min || x > 1000000000) {
        fprintf(stderr, "%s: %s wants an integer >= %d, got %s\n", prog, name,
                min, v ? v : "nothing");
        exit(2);
    }
    return (int)x;
}

#endif /* GORT_EXPERIMENTS_FLAGS_H */
