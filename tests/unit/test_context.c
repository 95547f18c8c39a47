/* SPDX-License-Identifier: MIT */
/*
 * test_context.c - contexts (gort.h, "Contexts"): cancel, deadlines,
 * children cancelled with their parent, the done channel in a select,
 * the reasons, who frees what, and cancellation racing completion.
 */
#include "test_util.h"

#include <errno.h>

#define SECOND (1000 * MS)

/* Wait until main is the only goroutine: a deadline's timer runs as a
 * goroutine of its own, which holds its context until it ends, and one
 * still alive when main returns would be discarded with it. */
static void quiesce(void)
{
    int64_t end = gort_nanotime() + 10 * SECOND;
    while (gort_numgoroutine() > 1) {
        CHECK_LT(gort_nanotime(), end);
        gort_sleep(MS / 10);
    }
}

static bool closed_now(gort_chan *ch)
{
    bool ok = true;
    /* A closed channel gives its zero value at once, ok false. */
    return gort_chan_tryrecv(ch, NULL, &ok) && !ok;
}

static void basics_main(void *arg)
{
    (void)arg;
    gort_ctx *bg = gort_ctx_background();
    CHECK(bg != NULL);
    CHECK(gort_ctx_done(bg) == NULL);
    CHECK_EQ(gort_ctx_err(bg), 0);
    CHECK_EQ(gort_ctx_deadline(bg).at, 0);
    gort_ctx_cancel(bg); /* nothing happens */
    CHECK_EQ(gort_ctx_err(bg), 0);

    gort_ctx *c;
    CHECK_EQ(gort_ctx_with_cancel(NULL, &c), -EINVAL);
    CHECK_EQ(gort_ctx_with_cancel(bg, NULL), -EINVAL);
    CHECK_EQ(gort_ctx_err(NULL), -EINVAL);
    CHECK_EQ(gort_ctx_with_cancel(bg, &c), 0);
    CHECK_EQ(gort_ctx_err(c), 0);
    CHECK(!closed_now(gort_ctx_done(c)));
    gort_ctx_cancel(c);
    CHECK_EQ(gort_ctx_err(c), -ECANCELED);
    CHECK(closed_now(gort_ctx_done(c)));
    gort_ctx_cancel(c); /* twice: nothing more */
    CHECK_EQ(gort_ctx_err(c), -ECANCELED);
    gort_ctx_cancel_release(c);
}

/* Background is never done; a cancel context is done after its cancel
 * (the channel closed, -ECANCELED), a second cancel changes nothing; bad
 * arguments -EINVAL. */
TEST(cancel_basics)
{
    run_main(basics_main, NULL);
}

static void tree_main(void *arg)
{
    (void)arg;
    gort_ctx *root, *a, *b, *a1, *a2;
    CHECK_EQ(gort_ctx_with_cancel(gort_ctx_background(), &root), 0);
    CHECK_EQ(gort_ctx_with_cancel(root, &a), 0);
    CHECK_EQ(gort_ctx_with_cancel(root, &b), 0);
    CHECK_EQ(gort_ctx_with_cancel(a, &a1), 0);
    CHECK_EQ(gort_ctx_with_cancel(a, &a2), 0);
    /* A child's cancel leaves its parent and siblings. */
    gort_ctx_cancel(a2);
    CHECK_EQ(gort_ctx_err(a2), -ECANCELED);
    CHECK_EQ(gort_ctx_err(a), 0);
    CHECK_EQ(gort_ctx_err(a1), 0);
    /* A parent's reaches every descendant. */
    gort_ctx_cancel(root);
    CHECK_EQ(gort_ctx_err(a), -ECANCELED);
    CHECK_EQ(gort_ctx_err(b), -ECANCELED);
    CHECK_EQ(gort_ctx_err(a1), -ECANCELED);
    CHECK(closed_now(gort_ctx_done(a1)));
    /* A child of a cancelled context is born cancelled. */
    gort_ctx *late;
    CHECK_EQ(gort_ctx_with_cancel(a, &late), 0);
    CHECK_EQ(gort_ctx_err(late), -ECANCELED);
    /* Released in any order: a parent lives while its children do. */
    gort_ctx_cancel_release(root);
    gort_ctx_cancel_release(a);
    gort_ctx_cancel_release(late);
    gort_ctx_cancel_release(a2);
    gort_ctx_cancel_release(b);
    gort_ctx_cancel_release(a1);
}

/* A tree of contexts: a cancel reaches the descendants, never the
 * ancestors or siblings; a child made under a cancelled parent is
 * cancelled; releases in any order free everything (AddressSanitizer
 * checks the leaks). */
TEST(tree)
{
    run_main(tree_main, NULL);
}

static void deadline_main(void *arg)
{
    (void)arg;
    gort_ctx *c, *child, *later;
    int64_t t0 = gort_nanotime();
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                    gort_deadline_in(30 * MS), &c),
             0);
    CHECK_GE(gort_ctx_deadline(c).at, t0 + 30 * MS);
    /* A child asking for later keeps its parent's deadline. */
    CHECK_EQ(gort_ctx_with_deadline(c, gort_deadline_in(10 * SECOND), &later),
             0);
    CHECK_EQ(gort_ctx_deadline(later).at, gort_ctx_deadline(c).at);
    CHECK_EQ(gort_ctx_with_cancel(c, &child), 0);
    CHECK(!gort_chan_recv(gort_ctx_done(child), NULL)); /* closed */
    CHECK_GE(gort_nanotime() - t0, 30 * MS);
    CHECK_EQ(gort_ctx_err(c), -ETIMEDOUT);
    CHECK_EQ(gort_ctx_err(child), -ETIMEDOUT);
    /* The children are cancelled one after another (as Go's): wait for
     * this one's too. */
    CHECK(!gort_chan_recv(gort_ctx_done(later), NULL));
    CHECK_EQ(gort_ctx_err(later), -ETIMEDOUT);
    gort_ctx_cancel_release(child);
    gort_ctx_cancel_release(later);
    gort_ctx_cancel_release(c);
    /* A passed deadline: done at once. */
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                    gort_deadline_at(1), &c),
             0);
    CHECK_EQ(gort_ctx_err(c), -ETIMEDOUT);
    gort_ctx_cancel_release(c);
    /* Cancelled before its deadline: canceled, and the timer stopped
     * (the release frees at once). */
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                    gort_deadline_in(SECOND), &c),
             0);
    gort_ctx_cancel_release(c);
    /* No deadline at all. */
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                    gort_no_deadline(), &c),
             0);
    CHECK_EQ(gort_ctx_deadline(c).at, 0);
    gort_ctx_cancel_release(c);
    quiesce();
}

/* A deadline context is done with -ETIMEDOUT once its deadline passes,
 * its children with it (a child asking for a later deadline has its
 * parent's); a passed deadline is done at once; a cancel before the
 * deadline frees the timer too. */
TEST(deadline)
{
    run_main(deadline_main, NULL);
}

static gort_chan *work_ch;

static void worker(void *arg)
{
    gort_ctx *c = arg;
    int v = 0;
    /* Nothing ever comes: only the cancel ends the wait. */
    CHECK_EQ(gort_chan_recv_ctx(work_ch, &v, c), -ECANCELED);
    gort_ctx_release(c);
}

static void select_main(void *arg)
{
    (void)arg;
    work_ch = make_chan(sizeof(int), 0);
    gort_ctx *c;
    CHECK_EQ(gort_ctx_with_cancel(gort_ctx_background(), &c), 0);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    for (int i = 0; i < 10; i++) {
        gort_ctx_retain(c); /* each worker's own reference */
        CHECK_GT(gort_waitgroup_go(&wg, worker, c), 0);
    }
    gort_sleep(5 * MS);
    /* The maker's cancel and release: the workers' references keep it. */
    gort_ctx_cancel_release(c);
    gort_waitgroup_wait(&wg);
    /* A value first: taken. */
    gort_chan *b = make_chan(sizeof(int), 1);
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                    gort_deadline_in(20 * MS), &c),
             0);
    int v = 5, got = 0;
    CHECK_EQ(gort_chan_send_ctx(b, &v, c), 0);
    CHECK_EQ(gort_chan_recv_ctx(b, &got, c), 1);
    CHECK_EQ(got, 5);
    /* Full: the deadline. */
    CHECK_EQ(gort_chan_send_ctx(b, &v, c), 0);
    CHECK_EQ(gort_chan_send_ctx(b, &v, c), -ETIMEDOUT);
    gort_case cs[1] = {{.ch = b, .dir = GORT_CASE_SEND, .elem = &v}};
    CHECK_EQ(gort_select_ctx(cs, 1, c), -ETIMEDOUT);
    CHECK_EQ(gort_select_ctx(cs, -1, c), -EINVAL);
    gort_ctx_cancel_release(c);
    /* The background context: a plain select. */
    CHECK_EQ(gort_chan_recv_ctx(b, &got, gort_ctx_background()), 1);
    free_chan(b);
    free_chan(work_ch);
    quiesce();
}

/* Ten workers wait on a channel with the context, each holding its own
 * reference; the maker cancels and releases: every worker returns
 * -ECANCELED, the last release frees it.  A value that is there is
 * taken; a full channel waits for the deadline (-ETIMEDOUT). */
TEST(select_and_ownership)
{
    run_main(select_main, NULL);
}

#define RACES 300

static void racer(void *arg)
{
    gort_ctx *c = arg;
    int v = 1;
    int r = gort_chan_send_ctx(work_ch, &v, c);
    CHECK(r == 0 || r == -ECANCELED);
    gort_ctx_release(c);
}

static void race_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(4);
    work_ch = make_chan(sizeof(int), 0);
    int sent = 0, got = 0;
    for (int i = 0; i < RACES; i++) {
        gort_ctx *c;
        CHECK_EQ(gort_ctx_with_cancel(gort_ctx_background(), &c), 0);
        gort_ctx_retain(c);
        CHECK_GT(gort_go(racer, c), 0);
        if (i % 2)
            gort_gosched();
        /* The receive and the cancel race the send. */
        int v = 0;
        if (gort_chan_tryrecv(work_ch, &v, NULL))
            got++;
        gort_ctx_cancel_release(c);
        sent++;
    }
    /* Every racer ended (each released its reference); one still
     * blocked would keep waiting here. */
    gort_sleep(20 * MS);
    int v;
    CHECK(!gort_chan_tryrecv(work_ch, &v, NULL));
    CHECK_EQ(sent, RACES);
    CHECK_LE(got, RACES);
    free_chan(work_ch);
}

/* A send with a context racing its cancel and a receive, 300 times on 4
 * Ps: each send either delivers or returns -ECANCELED, no goroutine is
 * left waiting, every context is freed (AddressSanitizer, and
 * ThreadSanitizer for the races). */
TEST(cancel_races_completion)
{
    run_main(race_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Error groups.
 * ------------------------------------------------------------------------- */

static int eg_running, eg_most; /* atomic */

/* arg: 0 succeeds after a while; < 0 fails with it; 1 waits for the
 * group's context to be cancelled. */
struct eg_task {
    gort_ctx *ctx;
    int how;
};

static int eg_task(void *arg)
{
    struct eg_task *t = arg;
    int now = ATOMIC_INC(&eg_running);
    int most = ATOMIC_LOAD(&eg_most);
    while (now > most &&
           !__atomic_compare_exchange_n(&eg_most, &most, now, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    int r = 0;
    if (t->how == 1)
        r = gort_chan_recv(gort_ctx_done(t->ctx), NULL) ? -EIO
                                                         : gort_ctx_err(t->ctx);
    else if (t->how < 0)
        r = t->how;
    else
        gort_sleep(MS);
    ATOMIC_ADD(&eg_running, -1);
    return r;
}

static void errgroup_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    /* All succeed: 0, at most the limit at once. */
    gort_errgroup *g;
    gort_ctx *ctx;
    CHECK_EQ(gort_errgroup_make(NULL, NULL, &ctx), -EINVAL);
    CHECK_EQ(gort_errgroup_make(&g, NULL, &ctx), 0);
    CHECK_EQ(gort_errgroup_set_limit(g, 3), 0);
    struct eg_task ok = {ctx, 0};
    for (int i = 0; i < 20; i++)
        CHECK_GT(gort_errgroup_go(g, eg_task, &ok), 0);
    CHECK_EQ(gort_errgroup_wait(g), 0);
    CHECK_LE(ATOMIC_LOAD(&eg_most), 3);
    CHECK_GE(ATOMIC_LOAD(&eg_most), 1);
    /* Wait cancelled the group's context. */
    CHECK_EQ(gort_ctx_err(ctx), -ECANCELED);
    CHECK_EQ(gort_errgroup_go(NULL, eg_task, &ok), -EINVAL);
    CHECK_EQ(gort_errgroup_go(g, NULL, &ok), -EINVAL);
    CHECK_EQ(gort_errgroup_free(g), 0);

    /* One fails: its error, and the others waiting on the context are
     * cancelled (-ECANCELED, which the group keeps out: first error). */
    gort_ctx *parent;
    CHECK_EQ(gort_ctx_with_cancel(gort_ctx_background(), &parent), 0);
    CHECK_EQ(gort_errgroup_make(&g, parent, &ctx), 0);
    struct eg_task waits = {ctx, 1}, fails = {ctx, -EPIPE};
    for (int i = 0; i < 5; i++)
        CHECK_GT(gort_errgroup_go(g, eg_task, &waits), 0);
    gort_sleep(2 * MS);
    CHECK_GT(gort_errgroup_go(g, eg_task, &fails), 0);
    CHECK_EQ(gort_errgroup_wait(g), -EPIPE);
    CHECK_EQ(gort_ctx_err(ctx), -ECANCELED);
    /* The parent is not cancelled by its child group. */
    CHECK_EQ(gort_ctx_err(parent), 0);
    CHECK_EQ(gort_errgroup_free(g), 0);

    /* The parent's cancel reaches the group's goroutines. */
    CHECK_EQ(gort_errgroup_make(&g, parent, &ctx), 0);
    waits.ctx = ctx;
    for (int i = 0; i < 4; i++)
        CHECK_GT(gort_errgroup_go(g, eg_task, &waits), 0);
    gort_sleep(2 * MS);
    gort_ctx_cancel(parent);
    CHECK_EQ(gort_errgroup_wait(g), -ECANCELED);
    CHECK_EQ(gort_errgroup_free(g), 0);
    gort_ctx_cancel_release(parent);
    CHECK_EQ(gort_errgroup_free(NULL), 0);
    CHECK_EQ(gort_errgroup_wait(NULL), -EINVAL);
    CHECK_EQ(gort_errgroup_set_limit(NULL, 1), -EINVAL);
}

/* An error group: 20 tasks under a limit of 3 (never more at once) all
 * succeed (0, the group's context cancelled by the wait); one failing task
 * makes the wait return its error and cancels the others through the
 * group's context, not its parent; a parent's cancel reaches the group's
 * goroutines; bad arguments -EINVAL. */
TEST(errgroup)
{
    run_main(errgroup_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Weighted semaphores.
 * ------------------------------------------------------------------------- */

static gort_semaphore *sem;
static int sem_in, sem_most, sem_order[3], sem_next; /* atomic */

static void sem_user(void *arg)
{
    int w = (int)(intptr_t)arg;
    CHECK_EQ(gort_semaphore_acquire(sem, w, NULL), 0);
    int now = ATOMIC_ADD(&sem_in, w);
    int most = ATOMIC_LOAD(&sem_most);
    while (now > most &&
           !__atomic_compare_exchange_n(&sem_most, &most, now, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        ;
    gort_sleep(MS / 10);
    ATOMIC_ADD(&sem_in, -w);
    gort_semaphore_release(sem, w);
}

static void sem_ordered(void *arg)
{
    int id = (int)(intptr_t)arg;
    CHECK_EQ(gort_semaphore_acquire(sem, id == 0 ? 4 : 1, NULL), 0);
    sem_order[ATOMIC_INC(&sem_next) - 1] = id;
    gort_semaphore_release(sem, id == 0 ? 4 : 1);
}

static void sem_until_user(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_semaphore_acquire_until(sem, 4, gort_deadline_in(10 * SECOND)),
             0);
    ATOMIC_INC(&sem_next);
    gort_semaphore_release(sem, 4);
}

static void semaphore_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    CHECK_EQ(gort_semaphore_make(&sem, 0), -EINVAL);
    CHECK_EQ(gort_semaphore_make(NULL, 1), -EINVAL);
    CHECK_EQ(gort_semaphore_make(&sem, 4), 0);
    /* Units in use never exceed 4, with weights 1 to 3. */
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    for (int i = 0; i < 60; i++)
        CHECK_GT(gort_waitgroup_go(&wg, sem_user, (void *)(intptr_t)(1 + i % 3)),
                 0);
    gort_waitgroup_wait(&wg);
    CHECK_LE(ATOMIC_LOAD(&sem_most), 4);
    CHECK_GE(ATOMIC_LOAD(&sem_most), 2);
    /* try_acquire: free units and nobody waiting. */
    CHECK(gort_semaphore_try_acquire(sem, 3));
    CHECK(!gort_semaphore_try_acquire(sem, 2));
    CHECK(gort_semaphore_try_acquire(sem, 1));
    CHECK(!gort_semaphore_try_acquire(sem, 1));
    /* Arrival order: the large request (4) queued first is served before
     * two small ones behind it, though each small one would fit sooner. */
    CHECK_GT(gort_waitgroup_go(&wg, sem_ordered, (void *)(intptr_t)0), 0);
    gort_sleep(2 * MS);
    CHECK_GT(gort_waitgroup_go(&wg, sem_ordered, (void *)(intptr_t)1), 0);
    CHECK_GT(gort_waitgroup_go(&wg, sem_ordered, (void *)(intptr_t)2), 0);
    gort_sleep(2 * MS);
    CHECK_EQ(gort_semaphore_free(sem), -EBUSY); /* waiters */
    gort_semaphore_release(sem, 1); /* 1 free: the small ones still wait */
    gort_sleep(2 * MS);
    CHECK_EQ(ATOMIC_LOAD(&sem_next), 0);
    gort_semaphore_release(sem, 3);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(sem_order[0], 0);
    /* A context ends a wait with nothing taken. */
    CHECK(gort_semaphore_try_acquire(sem, 4));
    gort_ctx *c;
    CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                    gort_deadline_in(10 * MS), &c),
             0);
    CHECK_EQ(gort_semaphore_acquire(sem, 1, c), -ETIMEDOUT);
    /* More than it has: only the context. */
    CHECK_EQ(gort_semaphore_acquire(sem, 5, c), -ETIMEDOUT);
    gort_ctx_cancel_release(c);
    /* A deadline does as a context does: nothing taken, also for more
     * than it has; a passed one is a try. */
    int64_t t0 = gort_nanotime();
    CHECK_EQ(gort_semaphore_acquire_until(sem, 1, gort_deadline_in(10 * MS)),
             -ETIMEDOUT);
    CHECK_GE(gort_nanotime() - t0, 10 * MS);
    CHECK_EQ(gort_semaphore_acquire_until(sem, 5, gort_deadline_in(MS)),
             -ETIMEDOUT);
    CHECK_EQ(gort_semaphore_acquire_until(sem, 1, gort_deadline_in(0)),
             -ETIMEDOUT);
    gort_semaphore_release(sem, 4);
    CHECK_EQ(gort_semaphore_acquire_until(sem, 4, gort_deadline_in(0)), 0);
    gort_semaphore_release(sem, 4);
    /* Released before the deadline: taken. */
    CHECK(gort_semaphore_try_acquire(sem, 4));
    ATOMIC_STORE(&sem_next, 0);
    CHECK_GT(gort_waitgroup_go(&wg, sem_until_user, NULL), 0);
    gort_sleep(2 * MS);
    CHECK_EQ(ATOMIC_LOAD(&sem_next), 0); /* waits */
    gort_semaphore_release(sem, 4); /* the waiter of 4 gets them */
    gort_waitgroup_wait(&wg);
    CHECK_EQ(ATOMIC_LOAD(&sem_next), 1);
    CHECK_EQ(gort_semaphore_acquire_until(sem, 3, gort_deadline_in(SECOND)),
             0);
    gort_semaphore_release(sem, 3);
    CHECK_EQ(gort_semaphore_acquire_until(NULL, 1, gort_no_deadline()),
             -EINVAL);
    CHECK_EQ(gort_semaphore_acquire_until(sem, -1, gort_no_deadline()),
             -EINVAL);
    CHECK(gort_semaphore_try_acquire(sem, 4));
    gort_semaphore_release(sem, 4);
    CHECK_EQ(gort_semaphore_acquire(NULL, 1, NULL), -EINVAL);
    CHECK_EQ(gort_semaphore_acquire(sem, 0, NULL), -EINVAL);
    CHECK_EQ(gort_semaphore_free(sem), 0);
    CHECK_EQ(gort_semaphore_free(NULL), 0);
    quiesce();
}

/* A weighted semaphore of 4 units: 60 users of 1-3 units never hold more
 * than 4 at once; try_acquire takes only free units; a request of 4
 * queued first is served before two of 1 that came after it; a context's
 * deadline, or acquire_until's, ends a wait with nothing taken (also for
 * more units than exist); free refuses while goroutines wait; bad
 * arguments -EINVAL. */
TEST(semaphore)
{
    run_main(semaphore_main, NULL);
}

/* ---------------------------------------------------------------------------
 * A program that ends as deadlines fire.
 * ------------------------------------------------------------------------- */

#define FIRED_N 1
#define FIRED_RUNS 20

static void fired_exit_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    gort_ctx *c[FIRED_N];
    for (int i = 0; i < FIRED_N; i++)
        CHECK_EQ(gort_ctx_with_deadline(gort_ctx_background(),
                                        gort_deadline_in(50 * 1000), &c[i]),
                 0);
    for (int i = 0; i < FIRED_N; i++) {
        CHECK(!gort_chan_recv(gort_ctx_done(c[i]), NULL));
        CHECK_EQ(gort_ctx_err(c[i]), -ETIMEDOUT);
    }
    /* Released at once, and the program ends: each context is freed by
     * its cancel_release, not by its timer's goroutine, which the end
     * would discard before it got there. */
    for (int i = 0; i < FIRED_N; i++)
        gort_ctx_cancel_release(c[i]);
}

TEST_HIDDEN(fired_exit_child)
{
    CHECK_EQ(gort_main(fired_exit_main, NULL), 0);
    say("released\n");
}

/* A context whose deadline has just fired (its timer's goroutine on the
 * other P) is cancel-released and the program ends at once, 20 times:
 * each exits cleanly, and under the leak checker of the AddressSanitizer
 * build (which fails the child on a leak) no context is left behind (a
 * context whose last reference the timer's goroutine held would be lost
 * when the program's end discards that goroutine). */
TEST(fired_deadlines_then_exit)
{
    for (int i = 0; i < FIRED_RUNS; i++) {
        struct test_child r;
        test_run_child("fired_exit_child", NULL, 60, &r);
        if (r.exit_code != 0 || r.signal != 0)
            fprintf(stderr, "child: exit %d signal %d\n%s\n%s\n",
                    r.exit_code, r.signal, r.out, r.err);
        CHECK_EQ(r.signal, 0);
        CHECK_EQ(r.exit_code, 0);
        CHECK_STR_CONTAINS(r.out, "released\n");
        test_child_free(&r);
    }
}
