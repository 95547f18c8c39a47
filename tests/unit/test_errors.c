/* SPDX-License-Identifier: MIT */
/*
 * test_errors.c - what gort's calls return when they fail, and
 * gort_strerror's names for it (gort.h, "Errors").
 */
#include "test_util.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <string.h>

static void noop(void *arg)
{
    (void)arg;
}

/* errno values by either sign, getaddrinfo's codes through GORT_EAI,
 * 0, and numbers nobody knows. */
TEST(strerror_names)
{
    CHECK(strcmp(gort_strerror(0), "success") == 0);
    CHECK(strcmp(gort_strerror(-ENOENT), "No such file or directory") == 0);
    CHECK(strcmp(gort_strerror(ENOENT), "No such file or directory") == 0);
    CHECK(strcmp(gort_strerror(-ETIMEDOUT), "Connection timed out") == 0);
    int codes[] = {EAI_NONAME, EAI_AGAIN, EAI_FAIL, EAI_FAMILY, EAI_SERVICE,
                   EAI_BADFLAGS, EAI_SOCKTYPE, EAI_OVERFLOW};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        int e = GORT_EAI(codes[i]);
        CHECK_LT(e, -GORT_EAI_BASE);
        CHECK(strcmp(gort_strerror(e), gai_strerror(codes[i])) == 0);
    }
    /* Apart from every errno value. */
    CHECK_LT(GORT_EAI(EAI_BADFLAGS), -4096);
    CHECK(strcmp(gort_strerror(-5000), "unknown error") == 0);
    CHECK(strcmp(gort_strerror(INT_MIN), "unknown error") == 0);
    CHECK(strcmp(gort_strerror(INT_MAX), "unknown error") == 0);
}

static void go_inside(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_go(NULL, NULL), -EINVAL);
    CHECK_GT(gort_go(noop, NULL), 0);
}

/* gort_go without gort_main running (before it and after it) returns
 * -EPERM, with a NULL function -EINVAL. */
TEST(go_returns)
{
    CHECK_EQ(gort_go(noop, NULL), -EPERM);
    CHECK(strcmp(gort_strerror(-EPERM), "Operation not permitted") == 0);
    run_main(go_inside, NULL);
    CHECK_EQ(gort_go(noop, NULL), -EPERM);
}

/* ---------------------------------------------------------------------------
 * gort_run: the main goroutine's exit status.
 * ------------------------------------------------------------------------- */

static int exits_with(void *arg)
{
    CHECK_EQ(gort_goid(), 1);
    return (int)(intptr_t)arg;
}

/* gort_run returns what the main goroutine returned (0, 3, 255), and
 * -EINVAL for a NULL main. */
TEST(run_exit_status)
{
    CHECK_EQ(gort_run(exits_with, (void *)(intptr_t)0), 0);
    CHECK_EQ(gort_run(exits_with, (void *)(intptr_t)3), 3);
    CHECK_EQ(gort_run(exits_with, (void *)(intptr_t)255), 255);
    CHECK_EQ(gort_run(NULL, NULL), -EINVAL);
}
