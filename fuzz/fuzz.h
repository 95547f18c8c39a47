/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the harnesses in fuzz/ share.
 *
 * Each harness defines LLVMFuzzerTestOneInput, libFuzzer's entry point,
 * and checks properties of the code it drives with FUZZ_CHECK: a broken
 * property aborts with its file, line and condition, which libFuzzer (or
 * replay.c) reports as a crash and keeps the input that caused it.
 */
#ifndef GORT_FUZZ_H
#define GORT_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* FNV-1a over n bytes, continuing from h: a digest of what a run saw, to
 * compare two runs over the same input. */
static inline uint64_t fuzz_mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

#define FUZZ_DIGEST_INIT 0xcbf29ce484222325ULL

/* A deterministic sequence of piece sizes, 1 to 64, seeded from the
 * input: how a second run splits the input into reads. */
static inline size_t fuzz_piece(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return 1 + (size_t)(x % 64);
}

#endif
