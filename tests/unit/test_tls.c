/* SPDX-License-Identifier: MIT */
/*
 * test_tls.c - what follows a goroutine to another thread, and what does
 * not (the README's rules for goroutine code, claim by claim).
 *
 * Every case runs goroutines that yield in a loop on 4 Ps until they have
 * been seen on another thread many times (the thread id before and after
 * gort_gosched differs).  Built like any program, at -O2.  The thread id
 * and the value checked are read together with preemption disabled, so
 * that both are of one thread (the preemption signal may move a
 * goroutine anywhere in its own code).
 */
#include "test_util.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROCS "4"
#define WORKERS 8
#define MIGRATIONS 200 /* each worker sees at least this many */

static int tid(void)
{
    return (int)syscall(SYS_gettid);
}

static __thread int tls_var;

/* The address of this thread's tls_var, computed here and now (a call the
 * compiler cannot fold into its caller's earlier computation). */
static __attribute__((noinline)) int *tls_addr(void)
{
    int *p = &tls_var;
    __asm__ __volatile__("" : "+r"(p));
    return p;
}

struct counts {
    int migrations;
    int differ;   /* the property that must hold after a migration */
    int same;     /* ... and the times it did not */
};

static struct counts results[WORKERS];
static gort_waitgroup wg;
static void (*body)(struct counts *c, int iter);

static void worker(void *arg)
{
    struct counts *c = &results[(intptr_t)arg];
    /* Until MIGRATIONS migrations, or 20 s: how often a yield lands on
     * another thread depends on what else the machine runs. */
    int64_t end = gort_nanotime() + 20000 * MS;
    for (int i = 0; c->migrations < MIGRATIONS &&
                    ((i & 1023) != 0 || gort_nanotime() < end);
         i++)
        body(c, i);
    gort_waitgroup_done(&wg);
}

static void run_workers(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, WORKERS);
    for (intptr_t i = 0; i < WORKERS; i++)
        CHECK_GT(gort_go(worker, (void *)i), 0);
    gort_waitgroup_wait(&wg);
}

static struct counts run_case(void (*fn)(struct counts *, int))
{
    setenv("GORTMAXPROCS", PROCS, 1);
    body = fn;
    memset(results, 0, sizeof results);
    run_main(run_workers, NULL);
    struct counts sum = {0, 0, 0};
    for (int i = 0; i < WORKERS; i++) {
        CHECK_GE(results[i].migrations, MIGRATIONS);
        sum.migrations += results[i].migrations;
        sum.differ += results[i].differ;
        sum.same += results[i].same;
    }
    say("%d migrations: differed %d, same %d\n", sum.migrations, sum.differ,
        sum.same);
    return sum;
}

/* ---------------------------------------------------------------------------
 * errno
 * ------------------------------------------------------------------------- */

static void errno_body(struct counts *c, int iter)
{
    int before = tid();
    int v = 1000 + iter % 1000;
    errno = v;
    gort_gosched();
    int got = errno;
    if (tid() != before) {
        c->migrations++;
        if (got == v)
            c->same++;   /* correct: errno followed */
        else
            c->differ++; /* the old thread's, or garbage */
    }
}

/* errno = v; gort_gosched(); errno == v, for every migration (gort.h reads
 * errno through a function the compiler cannot assume constant). */
TEST(errno_follows)
{
    struct counts s = run_case(errno_body);
    CHECK_EQ(s.differ, 0);
    CHECK_EQ(s.same, s.migrations);
}

/* Every gort call that may switch, park or make system calls of its own
 * leaves errno as the program left it (or, after GORT_BLOCKING, as the
 * call set it), on every call, migrated or not.  The way to a switch is
 * where it went wrong: a contended scheduler lock's futex wait fails with
 * EAGAIN (the runtime's lock waits keep errno now).  Eight goroutines on
 * 4 Ps contend for the scheduler lock on most calls. */
#define KEPT_ITERS 50000

static gort_chan *kept_ch[WORKERS / 2];
static gort_mutex kept_mu;
static int kept_wrong[WORKERS];

static void kept_worker(void *arg)
{
    int w = (int)(intptr_t)arg;
    gort_chan *ch = kept_ch[w / 2];
    int v;
    for (int i = 0; i < KEPT_ITERS; i++) {
        v = 2000 + (i * WORKERS + w) % 1000;
        errno = v;
        int want = v;
        switch (i % 4) {
        case 0:
            gort_gosched();
            break;
        case 1: /* pairs: one sends, the other receives; both park */
            if (w % 2)
                gort_chan_send(ch, &i);
            else
                gort_chan_recv(ch, &(int){0});
            break;
        case 2:
            gort_mutex_lock(&kept_mu);
            gort_gosched(); /* held across a switch: others park */
            gort_mutex_unlock(&kept_mu);
            break;
        case 3:
            CHECK_EQ(GORT_BLOCKING(close(-1)), -1);
            want = EBADF;
            break;
        }
        int got = errno;
        if (got != want && kept_wrong[w]++ == 0)
            say("worker %d, call %d: errno %d, want %d\n", w, i % 4, got,
                want);
    }
    gort_waitgroup_done(&wg);
}

static void run_kept(void *arg)
{
    (void)arg;
    for (int i = 0; i < WORKERS / 2; i++)
        CHECK_EQ(gort_chan_make(&kept_ch[i], sizeof(int), 0), 0);
    gort_waitgroup_add(&wg, WORKERS);
    for (intptr_t i = 0; i < WORKERS; i++)
        CHECK_GT(gort_go(kept_worker, (void *)i), 0);
    gort_waitgroup_wait(&wg);
    for (int i = 0; i < WORKERS / 2; i++)
        CHECK_EQ(gort_chan_free(kept_ch[i]), 0);
}

/* No gort call that switches, parks or blocks changes errno (GORT_BLOCKING
 * leaves the call's).  Without asynchronous preemption: `errno = v` is a
 * call for the address and a store, and a preemption between the two
 * moves the goroutine to another thread with the old thread's address in
 * a register (the README's rule on thread-local addresses), which is not
 * what this case is about.  An emulator that delivers signals where a
 * call returns lands there often. */
TEST(errno_kept_by_gort_calls)
{
    setenv("GORTMAXPROCS", PROCS, 1);
    setenv("GORTDEBUG", "asyncpreemptoff=1", 1);
    memset(kept_wrong, 0, sizeof kept_wrong);
    run_main(run_kept, NULL);
    int wrong = 0;
    for (int i = 0; i < WORKERS; i++)
        wrong += kept_wrong[i];
    say("%d calls: errno changed by %d\n", WORKERS * KEPT_ITERS, wrong);
    CHECK_EQ(wrong, 0);
}

static void errno_addr_body(struct counts *c, int iter)
{
    (void)iter;
    gort_preempt_disable();
    int before = tid();
    int *p = &errno;
    gort_preempt_enable();
    gort_gosched();
    gort_preempt_disable();
    int after = tid();
    int *q = &errno;
    gort_preempt_enable();
    if (after != before) {
        c->migrations++;
        if (p != q)
            c->differ++;
        else
            c->same++;
    }
}

/* The address of errno taken before the call names another thread's errno
 * after a migration. */
TEST(errno_address_stale)
{
    struct counts s = run_case(errno_addr_body);
    CHECK_EQ(s.differ, s.migrations);
}

/* ---------------------------------------------------------------------------
 * __thread, pthread_self, thread-bound locks
 * ------------------------------------------------------------------------- */

static void tls_body(struct counts *c, int iter)
{
    (void)iter;
    gort_preempt_disable();
    int before = tid();
    int *p = tls_addr();
    gort_preempt_enable();
    gort_gosched();
    gort_preempt_disable();
    int after = tid();
    int *q = tls_addr();
    gort_preempt_enable();
    if (after != before) {
        c->migrations++;
        if (p != q)
            c->differ++;
        else
            c->same++;
    }
}

/* The address of a __thread variable taken before the call is the old thread's
 * after a migration. */
TEST(tls_address_stale)
{
    struct counts s = run_case(tls_body);
    CHECK_EQ(s.differ, s.migrations);
}

/* pthread_self() of the thread running now (glibc declares pthread_self
 * const: called in the same function after gort_gosched, the compiler may
 * reuse the value it had before, which names the previous thread). */
static __attribute__((noinline)) pthread_t self_now(void)
{
    pthread_t t = pthread_self();
    __asm__ __volatile__("" : "+r"(t));
    return t;
}

static int self_folded;

static void self_body(struct counts *c, int iter)
{
    (void)iter;
    gort_preempt_disable();
    int before = tid();
    pthread_t self = self_now();
    gort_preempt_enable();
    pthread_t plain = pthread_self();
    gort_gosched();
    pthread_t plain_after = pthread_self();
    gort_preempt_disable();
    int after = tid();
    pthread_t now = self_now();
    gort_preempt_enable();
    if (after != before) {
        c->migrations++;
        if (!pthread_equal(self, now))
            c->differ++;
        else
            c->same++;
        /* The two plain calls are one to the compiler, placed before or
         * after the switch as it likes. */
        if (pthread_equal(plain, plain_after))
            __atomic_add_fetch(&self_folded, 1, __ATOMIC_RELAXED);
    }
}

/* pthread_self() differs after a migration (read through a function of our
 * own: glibc declares pthread_self const, and the compiler may move a plain
 * call across gort_gosched either way). */
TEST(pthread_self_changes)
{
    struct counts s = run_case(self_body);
    say("two plain pthread_self() calls around the switch agreed after %d "
        "of the migrations (compiled as one call)\n", self_folded);
    CHECK_EQ(s.differ, s.migrations);
}

static pthread_mutex_t bound[WORKERS];

static void lock_body(struct counts *c, int iter)
{
    (void)iter;
    pthread_mutex_t *mu = &bound[c - results];
    gort_preempt_disable();
    int before = tid();
    CHECK_EQ(pthread_mutex_lock(mu), 0);
    gort_preempt_enable();
    gort_gosched();
    gort_preempt_disable();
    int after = tid();
    int r = pthread_mutex_unlock(mu);
    gort_preempt_enable();
    if (after == before) {
        CHECK_EQ(r, 0);
        return;
    }
    c->migrations++;
    if (r == EPERM) {
        c->differ++; /* owned by the old thread: it stays locked */
        /* Free it the only way there is: reinitialise it. */
        pthread_mutex_destroy(mu);
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
        pthread_mutex_init(mu, &a);
        pthread_mutexattr_destroy(&a);
    } else {
        c->same++;
    }
}

/* An error-checking pthread mutex locked before the call cannot be unlocked
 * after a migration (EPERM). */
TEST(thread_bound_lock)
{
    for (int i = 0; i < WORKERS; i++) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
        pthread_mutex_init(&bound[i], &a);
        pthread_mutexattr_destroy(&a);
    }
    struct counts s = run_case(lock_body);
    CHECK_EQ(s.differ, s.migrations);
}

/* ---------------------------------------------------------------------------
 * locked_keeps_thread
 * ------------------------------------------------------------------------- */

static void locked_body(struct counts *c, int iter)
{
    (void)iter;
    int before = tid();
    int *p = tls_addr();
    pthread_t self = pthread_self();
    errno = iter;
    gort_gosched();
    /* Wired: never another thread.  Count every call as a "migration" so
     * that the loop ends. */
    c->migrations++;
    if (tid() != before || p != tls_addr() ||
        !pthread_equal(self, pthread_self()) || errno != iter)
        c->differ++;
    else
        c->same++;
}

static void locked_worker(void *arg)
{
    gort_lock_os_thread();
    worker(arg);
    gort_unlock_os_thread();
}

static void run_locked(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, WORKERS);
    for (intptr_t i = 0; i < WORKERS; i++)
        CHECK_GT(gort_go(locked_worker, (void *)i), 0);
    gort_waitgroup_wait(&wg);
}

/* Under gort_lock_os_thread nothing changes: the thread id, pthread_self(),
 * the __thread address. */
TEST(locked_keeps_thread)
{
    setenv("GORTMAXPROCS", PROCS, 1);
    body = locked_body;
    memset(results, 0, sizeof results);
    run_main(run_locked, NULL);
    for (int i = 0; i < WORKERS; i++) {
        CHECK_EQ(results[i].differ, 0);
        CHECK_EQ(results[i].same, MIGRATIONS);
    }
}
