/* SPDX-License-Identifier: MIT */
/*
 * version.c - the library's own version, gort_version().
 *
 * The string is GORT_VERSION_STRING as include/gort.h says it when the
 * library is compiled, so a program compares the header it was compiled
 * with (GORT_VERSION_STRING, GORT_VERSION_HEX) against the library it runs
 * with.  It is in the core layer: it uses nothing of the runtime and may
 * be called from any thread at any time, before gort_main and after it.
 */
#include "../include/gort.h"

GORT_EXTERN const char *gort_version(void)
{
    return GORT_VERSION_STRING;
}
