/* SPDX-License-Identifier: MIT */
/*
 * test.h - gort's small test harness.
 *
 * A test file defines cases with TEST(name), each with a comment right
 * above it saying what it checks.  The one binary per file runs the case
 * named on its command line, so that ctest gives every case its own
 * process and timeout: a deadlock fails the case instead of hanging the
 * suite.
 *
 * The cases are written down once, here at their TEST().  `./test_x
 * --list` prints them, one a line, each name followed by its ctest
 * options (TEST_WITH); the build runs it after linking the binary and
 * makes every line a ctest entry test_x.<name> (tests/CMakeLists.txt).
 *
 * Checks stop the case at the first failure with file, line and values.
 * Death tests re-run this binary on a hidden case (TEST_HIDDEN) in a child
 * process with extra environment variables and collect its stderr and exit
 * status.
 */
#ifndef GORT_TEST_H
#define GORT_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*gort_test_fn)(void);
/* Register case `name`.  A hidden case is left out of --list (so it is no
 * ctest entry) but runs when named.  opts: NULL or a NULL-terminated list
 * of "PROPERTY=value" strings for --list. */
void gort_test_register(const char *name, gort_test_fn fn, int hidden,
                        const char *const *opts);

#define TEST_CASE_(name, hidden, opts)                                         \
    static void test_##name(void);                                             \
    __attribute__((constructor)) static void test_reg_##name(void)             \
    {                                                                          \
        gort_test_register(#name, test_##name, hidden, opts);                  \
    }                                                                          \
    static void test_##name(void)

/* A case: the ctest entry test_x.<name>. */
#define TEST(name) TEST_CASE_(name, 0, NULL)

/* A case with ctest options, each a string from the list below:
 *   TEST_WITH(woken_no_starve, TEST_SERIAL) */
#define TEST_WITH(name, ...)                                                   \
    static const char *const test_opts_##name[] = {__VA_ARGS__, NULL};        \
    TEST_CASE_(name, 0, test_opts_##name)

/* A case that is no ctest entry: the child of a death test, which
 * test_run_child runs by name, or a program that a script drives. */
#define TEST_HIDDEN(name) TEST_CASE_(name, 1, NULL)

/*
 * Options for TEST_WITH.  Each is a ctest property of the case's entry,
 * printed by --list as PROPERTY=value (value without spaces or ';'); the
 * build accepts the properties named in tests/list_cases.cmake.  The
 * binary's own settings (TIMEOUT, ENVIRONMENT) are in tests/tests.cmake.
 */
/* Nothing else runs beside the case (a bound on wall-clock time that a
 * test running beside it would break). */
#define TEST_SERIAL "RUN_SERIAL=TRUE"
/* The case never runs beside another that holds the same resource. */
#define TEST_RESOURCE_LOCK(resource) "RESOURCE_LOCK=" resource

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fflush(stderr);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define CHECK_OP(a, op, b)                                                     \
    do {                                                                       \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);        \
        if (!(check_a_ op check_b_)) {                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s %s %s (%lld vs %lld)\n",  \
                    __FILE__, __LINE__, #a, #op, #b, check_a_, check_b_);      \
            fflush(stderr);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)
#define CHECK_EQ(a, b) CHECK_OP(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP(a, !=, b)
#define CHECK_LT(a, b) CHECK_OP(a, <, b)
#define CHECK_LE(a, b) CHECK_OP(a, <=, b)
#define CHECK_GT(a, b) CHECK_OP(a, >, b)
#define CHECK_GE(a, b) CHECK_OP(a, >=, b)
#define CHECK_STR_CONTAINS(hay, needle)                                        \
    do {                                                                       \
        const char *check_h_ = (hay), *check_n_ = (needle);                    \
        if (!check_h_ || !strstr(check_h_, check_n_)) {                        \
            fprintf(stderr, "%s:%d: CHECK failed: output lacks \"%s\"\n"       \
                            "--- output ---\n%s\n--------------\n",            \
                    __FILE__, __LINE__, check_n_,                              \
                    check_h_ ? check_h_ : "(null)");                           \
            fflush(stderr);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Result of a child run: stderr and stdout text (malloc'd, NUL-ended),
 * the exit code (or -1) and the terminating signal (or 0). */
struct test_child {
    char *err;
    char *out;
    int exit_code;
    int signal;
};

/*
 * Run this test binary on case `name` in a child process, with the
 * NULL-terminated list of "KEY=VALUE" strings added to (or, as "KEY=",
 * overriding) its environment.  Waits at most timeout_s seconds, then
 * kills it (the result then has signal SIGKILL).
 */
void test_run_child(const char *name, const char *const *env, int timeout_s,
                    struct test_child *r);
void test_child_free(struct test_child *r);

/* Procs to loop over in concurrency tests: {1, 2, 4, ncpu}, deduplicated.
 * Returns the count; fills procs[0..3]. */
int test_procs_list(int procs[4]);
/* True when GORT_TEST_LONG=1: run the long variant. */
int test_long(void);
/* Monotonic nanoseconds (independent of gort). */
int64_t test_now_ns(void);

#endif /* GORT_TEST_H */
