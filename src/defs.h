/* SPDX-License-Identifier: MIT */
/*
 * defs.h - what every internal header starts from: the fixed-width and
 * boolean types, the compiler attributes gort's internals are declared
 * with (hidden visibility, branch hints, noinline, noreturn), the
 * always-on assertion and whether gort itself is built with a sanitizer.
 * It has no .c file; gort__throw_assert, which a failed assertion calls,
 * is fatal.c's.
 */
#ifndef GORT_DEFS_H
#define GORT_DEFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GORT_HIDDEN __attribute__((visibility("hidden")))
#define GORT_LIKELY(x) __builtin_expect(!!(x), 1)
#define GORT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GORT_NOINLINE __attribute__((noinline))
/* The spelling include/gort.h gives C11, so that a file may include both
 * headers: the same definition twice is no redefinition. */
#define GORT_NORETURN _Noreturn
/* For the few functions that read other threads' fields racily by design
 * (schedtrace, the fatal dump); each use says why. */
#define GORT_NO_TSAN __attribute__((no_sanitize("thread")))

/* Always-on assertion: a broken invariant is a fatal error, never UB. */
GORT_HIDDEN GORT_NORETURN void gort__throw_assert(const char *cond,
                                                   const char *file, int line);
#define GORT_ASSERT(cond)                                                      \
    do {                                                                       \
        if (GORT_UNLIKELY(!(cond)))                                            \
            gort__throw_assert(#cond, __FILE__, __LINE__);                     \
    } while (0)

#ifdef GORT_DEBUG
#define GORT_DASSERT(cond) GORT_ASSERT(cond)
#else
#define GORT_DASSERT(cond) ((void)0)
#endif

/* gort itself is built with a sanitizer (-DGORT_SANITIZE=...).  Whether
 * the program has one is found at run time (san.h). */
#if defined(__SANITIZE_ADDRESS__)
#define GORT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GORT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define GORT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GORT_TSAN 1
#endif
#endif

#endif /* GORT_DEFS_H */
