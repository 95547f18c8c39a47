/* SPDX-License-Identifier: MIT */
/*
 * test_lifecycle.c - one full lifecycle of the runtime, twice in a
 * process, for Valgrind (ctest entry valgrind.lifecycle runs this case
 * under memcheck with leak checking, and any error or leak fails it).
 *
 * Under Valgrind every thread runs serialised and each instruction is
 * interpreted, so the sizes stay modest.
 */
#include "test.h"

#include <gort.h>

/* ThreadSanitizer gives every G a fiber, and fibers count against its
 * limit of 8128 threads. */
#if defined(__SANITIZE_THREAD__)
#define N 3000
#else
#define N 10000
#endif
#define GROUPS 100

static int64_t ran, deferred;
static gort_waitgroup all_wg, group_wg[GROUPS], never_wg;

static void count_defer(void *arg)
{
    __atomic_add_fetch(&deferred, (int64_t)(intptr_t)arg, __ATOMIC_RELAXED);
}

static void done_defer(void *arg)
{
    gort_waitgroup_done(arg);
}

static void worker(void *arg)
{
    int i = (int)(intptr_t)arg;
    /* Registered first, run last: the group is done after the others. */
    CHECK_EQ(gort_defer(done_defer, &group_wg[i % GROUPS]), 0);
    CHECK_EQ(gort_defer(count_defer, (void *)1), 0);
    CHECK_EQ(gort_defer(count_defer, (void *)2), 0);
    __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
    if (i % 7 == 0)
        gort_gosched();
    if (i % 3 == 0)
        gort_goexit();
}

/* One per group: waits for its group, then reports to main. */
static void group_waiter(void *arg)
{
    gort_waitgroup_wait(arg);
    gort_waitgroup_done(&all_wg);
}

/* Parked forever: main returns with these still waiting. */
static void stuck(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_defer(count_defer, (void *)1000), 0);
    gort_waitgroup_wait(&never_wg);
}

static void lifecycle_main(void *arg)
{
    int round = (int)(intptr_t)arg;
    ran = deferred = 0;
    /* The last run left waiters counted in it; they were discarded. */
    never_wg = (gort_waitgroup)GORT_WAITGROUP_INIT;
    gort_gomaxprocs(2);
    CHECK_EQ(gort_gomaxprocs(0), 2);
    gort_waitgroup_add(&never_wg, 1);
    for (int i = 0; i < 10; i++)
        gort_go(stuck, NULL);
    gort_waitgroup_add(&all_wg, GROUPS);
    for (int g = 0; g < GROUPS; g++) {
        gort_waitgroup_add(&group_wg[g], N / GROUPS);
        gort_go(group_waiter, &group_wg[g]);
    }
    for (int i = 0; i < N; i++) {
        CHECK_GT(gort_go(worker, (void *)(intptr_t)i), 0);
        if (i == N / 2)
            CHECK_EQ(gort_gomaxprocs(round == 0 ? 1 : 3), 2);
    }
    gort_waitgroup_wait(&all_wg);
    CHECK_EQ(ran, N);
    CHECK_EQ(deferred, 3 * N); /* the stuck ones' defers never run */
    CHECK_GE(gort_numgoroutine(), 11);
}

/* gort_main with GOMAXPROCS 2: 10,000 goroutines with defers (some ending by
 * gort_goexit), nested wait groups, a GOMAXPROCS change while they run,
 * goroutines still parked when main returns (discarded, as in Go); then
 * gort_main again, which must start from a clean slate. */
TEST(lifecycle)
{
    /* Outside gort_main nothing is set (gort.h). */
    CHECK_EQ(gort_gomaxprocs(7), 0);
    CHECK_EQ(gort_gomaxprocs(0), 0);
    for (int round = 0; round < 2; round++)
        CHECK_EQ(gort_main(lifecycle_main, (void *)(intptr_t)round), 0);
    CHECK_EQ(deferred, 3 * N);
    CHECK_EQ(gort_goid(), 0);
}
