/* SPDX-License-Identifier: MIT */
/*
 * planted.h - what the planted-bug programs of tests/sim share: a check
 * that reports the bug and aborts.  Each program (one file each) holds
 * one concurrency bug that shows only on some interleavings; it checks
 * for its own bug and fails by abort() (or by gort's deadlock report),
 * and otherwise exits 0.  gort-shake (tools/gort-shake) searches seeds of
 * the simulation mode for a failing interleaving; docs/sim.md, "Planted
 * bugs", has the find rates.
 */
#ifndef GORT_TESTS_SIM_PLANTED_H
#define GORT_TESTS_SIM_PLANTED_H

#include <gort.h>

#include <stdio.h>
#include <stdlib.h>

/* A line of the program's trace on stdout, written at once (abort() does
 * not flush stdio): what happened in which order, so that two runs of one
 * seed can be compared byte for byte. */
#define NOTE(...)                                                              \
    do {                                                                       \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
        fflush(stdout);                                                        \
    } while (0)

/* When cond is false the bug happened: say which on stdout (part of the
 * output a replay must repeat byte for byte) and abort, which in the
 * simulation mode also prints the seed that replays it. */
#define BUG_IF_NOT(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            NOTE("bug: " __VA_ARGS__);                                         \
            abort();                                                           \
        }                                                                      \
    } while (0)

#endif
