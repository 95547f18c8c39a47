/* SPDX-License-Identifier: MIT */
/*
 * threads.h - the process's threads, for the examples that show how few
 * a crowd of goroutines in unmodified C libraries needs (header only).
 *
 * os_threads reads the count the kernel keeps; note_threads keeps the
 * most seen, from any goroutine on any thread.
 */
#ifndef GORT_EXAMPLE_THREADS_H
#define GORT_EXAMPLE_THREADS_H

#include <stdbool.h>
#include <stdio.h>

/* The process's threads (/proc/self/status), the runtime's Ms and any
 * others alike; -1 when it cannot be read. */
static inline int os_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* Raise *max to the process's threads now.  Goroutines on several Ms call
 * it at once: the update is atomic. */
static inline void note_threads(int *max)
{
    int t = os_threads();
    int m = __atomic_load_n(max, __ATOMIC_RELAXED);
    while (t > m && !__atomic_compare_exchange_n(max, &m, t, false,
                                                 __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED))
        ;
}

#endif /* GORT_EXAMPLE_THREADS_H */
