/* SPDX-License-Identifier: MIT */
/*
 * test_lock.c - the runtime mutexes alone (lock_futex.c), on plain
 * threads without the scheduler (off the runtime gort__getm() is NULL,
 * which gort__lock accepts).
 */
#include "internal.h"
#include "test_util.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


#define NTHREADS 8
#define ITERS 4000

static gort_lock lk = GORT_LOCK_INIT(LOCKRANK_SCHED); /* taken alone */
static int inside;          /* threads in the critical section */
static uint64_t counter;    /* plain: the lock alone protects it */
static int overlaps;

static void hold_for_us(int us)
{
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
    intptr_t id = (intptr_t)arg;
    for (int i = 0; i < ITERS; i++) {
        gort__lock(&lk);
        /* Relaxed atomics: overlaps must be seen, not raced on. */
        if (__atomic_add_fetch(&inside, 1, __ATOMIC_RELAXED) != 1)
            __atomic_add_fetch(&overlaps, 1, __ATOMIC_RELAXED);
        counter++;
        if ((i + id) % 64 == 0)
            hold_for_us(200);
        __atomic_sub_fetch(&inside, 1, __ATOMIC_RELAXED);
        gort__unlock(&lk);
    }
    return NULL;
}

static void run_exclusion(void)
{
    uint64_t sleeps0 = __atomic_load_n(&gort__lock_sleeps, __ATOMIC_RELAXED);
    pthread_t t[NTHREADS];
    for (intptr_t i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    uint64_t sleeps =
        __atomic_load_n(&gort__lock_sleeps, __ATOMIC_RELAXED) - sleeps0;
    printf("%s protocol: %d x %d sections, %llu sleeps in the kernel\n",
           gort__lock_fenced ? "fenced" : "exchange", NTHREADS, ITERS,
           (unsigned long long)sleeps);
    CHECK_EQ(overlaps, 0);
    CHECK_EQ(counter, (uint64_t)NTHREADS * ITERS);
    CHECK_EQ(lk.key, 0);
    CHECK_EQ(lk.nsleep, 0);
    CHECK_GT(sleeps, 0);
}

/* 8 threads take one lock 4,000 times each; some holders keep it for 200 us,
 * so waiters use up their spinning and sleep in the kernel: the critical
 * sections never overlap, none is lost, every sleeper is woken (a lost wake-up
 * hangs the case until its timeout), and sleeps did happen.  Runs in the
 * protocol the library chose at load: the fenced one where membarrier(2) works
 * (checked against the kernel here), else the exchange one. */
TEST(exclusion)
{
    /* The library uses the fenced protocol exactly where the kernel
     * offers the expedited barrier. */
    bool offered =
        syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0) > 0 &&
        (syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0) &
         MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
    CHECK_EQ(gort__lock_fenced, offered);
    run_exclusion();
}

TEST_HIDDEN(exclusion_exchange_child)
{
    CHECK(!gort__lock_fenced);
    run_exclusion();
}

/* The same as exclusion in a child run with GORTDEBUG=lockfence=0: the
 * exchange protocol, whatever the kernel offers. */
TEST(exclusion_exchange)
{
    static const char *const env[] = {"GORTDEBUG= lockfence = 0 ", NULL};
    struct test_child r;
    test_run_child("exclusion_exchange_child", env, 100, &r);
    if (r.exit_code != 0 || r.signal != 0)
        fprintf(stderr, "child: exit %d signal %d\n%s\n%s\n", r.exit_code,
                r.signal, r.out, r.err);
    CHECK_EQ(r.signal, 0);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "exchange protocol:");
    test_child_free(&r);
}

TEST_HIDDEN(unlock_unlocked_child)
{
    gort__unlock(&lk);
    say("survived\n");
}

/* Run child, which must abort before it says "survived"; r holds what it
 * wrote. */
static void run_dying(const char *child, struct test_child *r)
{
    run_death(child, NULL, r);
    CHECK_EQ(r->signal, SIGABRT);
    CHECK(strstr(r->out, "survived") == NULL);
}

/* Unlocking a free lock is a fatal error naming it. */
TEST(unlock_unlocked)
{
    struct test_child r;
    run_dying("unlock_unlocked_child", &r);
    CHECK_STR_CONTAINS(r.err, "unlock of unlocked lock");
    test_child_free(&r);
}

/* Skips the case (exit 77, which ctest shows as skipped) unless this
 * build checks lock ranks. */
static void need_ranks(const char *what)
{
#ifdef GORT_LOCKRANK
    (void)what;
#else
    fprintf(stderr, "%s: skipped (built without GORT_LOCKRANK: lock ranks "
                    "are not checked)\n",
            what);
    exit(77);
#endif
}

TEST_HIDDEN(lock_order_child)
{
    gort__lock(&gort__allplock);
    gort__lock(&gort__sched.lock);
    say("survived\n");
}

/* With lock ranks checked (GORT_LOCKRANK), taking sched.lock while
 * holding allplock, which ranks after it, is a fatal error naming both. */
TEST(lock_order)
{
    need_ranks("lock_order");
    struct test_child r;
    run_dying("lock_order_child", &r);
    /* The child's addresses are its own (it is started afresh). */
    CHECK_STR_CONTAINS(r.err, "fatal error: lock order: taking sched.lock "
                              "0x");
    CHECK_STR_CONTAINS(r.err, " while holding allplock 0x");
    test_child_free(&r);
}

/* Two locks of the cyclic channel rank, at increasing addresses. */
static gort_spinlock chanlocks[2] = {GORT_LOCK_INIT(LOCKRANK_HCHAN),
                                     GORT_LOCK_INIT(LOCKRANK_HCHAN)};

TEST_HIDDEN(lock_order_cyclic_child)
{
    gort__spinlock(&chanlocks[1]);
    gort__spinlock(&chanlocks[0]);
    say("survived\n");
}

/* Two channel locks (a cyclic rank) may be held together when taken in
 * address order; the other order is a fatal error naming both. */
TEST(lock_order_cyclic)
{
    need_ranks("lock_order_cyclic");
    /* In address order: allowed, and released in either order. */
    gort__spinlock(&chanlocks[0]);
    gort__spinlock(&chanlocks[1]);
    gort__spinunlock(&chanlocks[0]);
    gort__spinunlock(&chanlocks[1]);
    struct test_child r;
    run_dying("lock_order_cyclic_child", &r);
    /* The lower address taken while holding the higher one. */
    const char *msg = "fatal error: lock order: taking channel lock ";
    CHECK_STR_CONTAINS(r.err, msg);
    void *taken = NULL, *holding = NULL;
    CHECK_EQ(sscanf(strstr(r.err, msg) + strlen(msg),
                    "%p while holding channel lock %p", &taken, &holding),
             2);
    CHECK_EQ((char *)holding - (char *)taken, sizeof(gort_spinlock));
    test_child_free(&r);
}

TEST_HIDDEN(locked_without_lock_child)
{
    gort__pidleget_locked();
    say("survived\n");
}

/* Calling a _locked function without its lock is a fatal error naming
 * the function and the lock. */
TEST(locked_without_lock)
{
    need_ranks("locked_without_lock");
    struct test_child r;
    run_dying("locked_without_lock_child", &r);
    CHECK_STR_CONTAINS(r.err, "fatal error: gort__pidleget_locked: called "
                              "without holding sched.lock 0x");
    test_child_free(&r);
}
