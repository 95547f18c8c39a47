/* SPDX-License-Identifier: MIT */
/*
 * fuzz_gortdebug.c - libFuzzer harness for the parsers of gort's
 * environment variables (src/env.c): GORTDEBUG, GORTMAXPROCS,
 * GORTSTACKSIZE and GORTTRACEBACK.
 *
 * The input, cut at its first NUL, is given to each parser as the
 * variable's value.  Whatever it holds, every GORTDEBUG setting ends in
 * its range (flags 0 or 1, times not negative, the poller's spin at most
 * a second, a stack guard policy gort knows, a NUL-terminated trace path);
 * the quiet parser and the reporting one (which writes its complaints to
 * stderr: run with -close_fd_mask=2 to keep them out of the way) agree;
 * and each other parser returns its default or a value in its range.
 */
#include "fuzz.h"
#include "../src/env.h"
#include "../src/fatal.h"
#include "../src/sched.h"
#include "../src/stack.h"

#include <string.h>

/* The defaults gort__read_env starts from. */
static struct gort_debugvars defaults(void)
{
    return (struct gort_debugvars){.stackguard = -1,
                                   .stackidle = GORT_STACK_IDLE_MS,
                                   .netpollspin = GORT_NETPOLL_SPIN_US,
                                   .lockfence = 1};
}

static bool is_flag(int32_t v)
{
    return v == 0 || v == 1;
}

static void check_debugvars(const struct gort_debugvars *dv)
{
    FUZZ_CHECK(dv->schedtrace >= 0);
    FUZZ_CHECK(is_flag(dv->scheddetail));
    FUZZ_CHECK(is_flag(dv->asyncpreemptoff));
    FUZZ_CHECK(is_flag(dv->randomize));
    FUZZ_CHECK(dv->stackguard == -1 || dv->stackguard == STACK_GUARD_MADVISE ||
               dv->stackguard == STACK_GUARD_MPROTECT ||
               dv->stackguard == STACK_GUARD_CANARY);
    FUZZ_CHECK(is_flag(dv->checkdeadoff));
    FUZZ_CHECK(is_flag(dv->lockfence));
    FUZZ_CHECK(dv->stackidle >= 0);
    FUZZ_CHECK(dv->netpollspin >= 0 && dv->netpollspin <= 1000000);
    FUZZ_CHECK(memchr(dv->trace, '\0', sizeof dv->trace) != NULL);
}

static void check_others(const char *s)
{
    int procs = gort__parse_maxprocs(s, 3);
    FUZZ_CHECK(procs >= 1 && procs <= GORT_MAX_PROCS);
    size_t stack = gort__parse_stacksize(s, 12345);
    FUZZ_CHECK(stack == 12345 ||
               (stack % 4096 == 0 && stack >= GORT_MIN_STACK_SIZE &&
                stack <= ((size_t)1 << 30)));
    int32_t tb = gort__parse_traceback(s, TRACEBACK_ALL);
    FUZZ_CHECK(tb >= TRACEBACK_NONE && tb <= TRACEBACK_SYSTEM);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct gort_debugvars quiet = defaults(), loud = defaults();
    gort__parse_debug_quiet(s, &quiet);
    gort__parse_debug(s, &loud);
    check_debugvars(&quiet);
    FUZZ_CHECK(memcmp(&quiet, &loud, sizeof quiet) == 0);
    check_others(s);
    free(s);
    return 0;
}
