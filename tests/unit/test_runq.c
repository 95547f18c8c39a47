/* SPDX-License-Identifier: MIT */
/*
 * test_runq.c - the run queues alone (runq.c): the lock-free local ring,
 * runnext, the spill to the global queue, the global queue's batch take and
 * work stealing, on fake Gs and Ps, without starting the scheduler.
 *
 * Off the runtime gort__getm() is NULL, which gort__lock accepts; every case
 * resets gort__sched and sets gort__gomaxprocs (globrunqget divides by it).
 * Sizes derive from GORT_RUNQ_SIZE (RQ below), so the cases also hold for a
 * build with a shrunk ring (a power of two >= 4).
 */
#include "internal.h"
#include "test_util.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#define RQ GORT_RUNQ_SIZE

/* ------------------------------------------------------------------------
 * Fakes.
 * ---------------------------------------------------------------------- */

static struct p *newp(int32_t id)
{
    struct p *pp = calloc(1, sizeof *pp);
    CHECK(pp != NULL);
    pp->id = id;
    pp->status = P_RUNNING;
    return pp;
}

/* n Gs with goids base, base+1, ... */
static struct g *newgs(int n, int64_t base)
{
    struct g *gs = calloc((size_t)n, sizeof *gs);
    CHECK(gs != NULL);
    for (int i = 0; i < n; i++) {
        gs[i].goid = base + i;
        gs[i].atomicstatus = G_RUNNABLE;
    }
    return gs;
}

/* The library and this file must agree on struct p: the library may be
 * built with another GORT_RUNQ_SIZE than this file sees, and then runnext
 * and the slots are at other offsets. */
static void check_layout(void)
{
    struct p *pp = newp(99);
    struct g *gs = newgs(2, 1);
    gort__runqput(pp, &gs[0], true);
    gort__runqput(pp, &gs[1], false);
    if (pp->runnext != &gs[0] || pp->runq[0] != &gs[1] || pp->runqtail != 1) {
        fprintf(stderr, "test_runq: struct p layout differs from the "
                        "library's (built with another GORT_RUNQ_SIZE than "
                        "this test's %d?)\n", RQ);
        abort();
    }
    free(pp);
    free(gs);
}

/* A fresh scheduler state with procs Ps and no randomization. */
static void reset(int32_t procs)
{
    /* runq.c indexes slots by free-running uint32 counters mod RQ, which
     * wrap correctly only for a power of two, and runqgrab retries forever
     * on a full ring of odd size (ceil(RQ/2) > RQ/2). */
    if (RQ < 4 || (RQ & (RQ - 1)) != 0) {
        fprintf(stderr, "test_runq: GORT_RUNQ_SIZE=%d is not a power of two "
                        ">= 4, which runq.c needs\n", RQ);
        abort();
    }
    rt_sched_reset(); /* also frees the segments of the test before */
    rt_set_gomaxprocs(procs);
    rt_set_randomize(false);
    check_layout();
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static struct g *get(struct p *pp, bool *inherit)
{
    return gort__runqget(pp, inherit);
}

/* Get one G, checking it and its inherit_time (set to the opposite first,
 * so that a get that does not write it fails). */
static void expect_get(struct p *pp, struct g *want, bool want_inherit)
{
    bool inherit = !want_inherit;
    struct g *gp = gort__runqget(pp, &inherit);
    CHECK(gp == want);
    if (want)
        CHECK_EQ(inherit, want_inherit);
}

/* The global queue as an array (the timer-woken part, then the rest,
 * segment by segment), checking the segments' shape and runqsize.
 * Returns the count. */
static int global_list(struct g **out, int cap)
{
    int n = 0;
    const struct gsegq *qs[2] = {&gort__sched.runq_woken, &gort__sched.runq};
    for (int k = 0; k < 2; k++) {
        const struct gqseg *last = NULL;
        for (const struct gqseg *sg = qs[k]->head; sg; sg = sg->next) {
            /* Only the last segment may be empty. */
            CHECK(sg->head < sg->tail || (sg->head == sg->tail && !sg->next));
            CHECK_LE(sg->tail, GORT_GQSEG_N);
            for (uint32_t i = sg->head; i < sg->tail; i++) {
                CHECK_LT(n, cap);
                out[n++] = sg->g[i];
            }
            last = sg;
        }
        CHECK(qs[k]->tail == last);
    }
    CHECK_EQ(gort__sched.runqsize, n);
    return n;
}

static bool global_empty(void)
{
    struct g *none[1];
    return global_list(none, 0) == 0;
}

/* ------------------------------------------------------------------------
 * put_get_order
 * ---------------------------------------------------------------------- */

/* FIFO ring with inherit_time false; runnext first with inherit_time true, its
 * old G kicked to the ring tail (put 1..10 with next: 10,1,2,...,9); a full
 * ring does not spill; order holds across counter wrap-around. */
TEST(put_get_order)
{
    reset(1);
    struct p *pp = newp(0);
    struct g *gs = newgs(RQ + 1, 1);

    /* A ring filled to exactly RQ does not spill; gets are FIFO. */
    for (int i = 0; i < RQ; i++)
        gort__runqput(pp, &gs[i], false);
    CHECK_EQ(gort__runqlen(pp), RQ);
    CHECK_EQ(gort__sched.runqsize, 0);
    CHECK(global_empty());
    CHECK(pp->runnext == NULL);
    for (int i = 0; i < RQ; i++)
        expect_get(pp, &gs[i], false);
    expect_get(pp, NULL, false);
    CHECK_EQ(gort__runqlen(pp), 0);

    /* runnext: taken first with inherit_time; a new runnext kicks the old
     * one to the ring's tail, behind what is there. */
    gort__runqput(pp, &gs[0], false);  /* ring: 0 */
    gort__runqput(pp, &gs[1], true);   /* next: 1 */
    CHECK(pp->runnext == &gs[1]);
    CHECK_EQ(gort__runqlen(pp), 1);
    gort__runqput(pp, &gs[2], true);   /* next: 2, ring: 0 1 */
    CHECK(pp->runnext == &gs[2]);
    CHECK_EQ(gort__runqlen(pp), 2);
    gort__runqput(pp, &gs[3], false);  /* ring: 0 1 3 */
    CHECK(pp->runnext == &gs[2]);
    expect_get(pp, &gs[2], true);
    CHECK(pp->runnext == NULL);
    expect_get(pp, &gs[0], false);
    expect_get(pp, &gs[1], false);
    expect_get(pp, &gs[3], false);
    expect_get(pp, NULL, false);

    /* The runnext experiment: put 1..10 each with next; the last one runs
     * first, then the others in the order they were put (fewer if the
     * ring is smaller). */
    int last = imin(10, RQ);
    for (int i = 1; i <= last; i++)
        gort__runqput(pp, &gs[i], true);
    expect_get(pp, &gs[last], true);
    for (int i = 1; i < last; i++)
        expect_get(pp, &gs[i], false);
    expect_get(pp, NULL, false);
    CHECK_EQ(gort__sched.runqsize, 0);

    /* Free-running counters wrap around UINT32_MAX: order and capacity
     * are unchanged.  Check against a model FIFO over many cycles. */
    uint32_t starts[] = {UINT32_MAX - 3, UINT32_MAX - RQ / 2, UINT32_MAX};
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        pp->runqhead = pp->runqtail = starts[s];
        for (int i = 0; i < RQ; i++)
            gort__runqput(pp, &gs[i], false);
        CHECK_EQ(gort__runqlen(pp), RQ);
        CHECK_EQ(gort__sched.runqsize, 0);
        for (int i = 0; i < RQ; i++)
            expect_get(pp, &gs[i], false);
        expect_get(pp, NULL, false);

        /* Two puts, one get, until the ring is nearly full; then drain. */
        pp->runqhead = pp->runqtail = starts[s];
        int model[RQ + 1], mh = 0, mt = 0, next = 0;
        while (mt - mh < RQ - 1) {
            for (int k = 0; k < 2; k++) {
                int id = next++ % (RQ + 1);
                gort__runqput(pp, &gs[id], false);
                model[mt++ % (RQ + 1)] = id;
            }
            expect_get(pp, &gs[model[mh++ % (RQ + 1)]], false);
        }
        while (mh < mt)
            expect_get(pp, &gs[model[mh++ % (RQ + 1)]], false);
        expect_get(pp, NULL, false);
        CHECK_EQ(gort__sched.runqsize, 0);
    }
    free(pp);
    free(gs);
}

/* ------------------------------------------------------------------------
 * overflow_batch_129
 * ---------------------------------------------------------------------- */

/* Get gs[i] from pp's ring or runnext, marking it seen. */
static void expect_get_seen(struct p *pp, struct g *gs, char *seen, int i,
                            bool inherit)
{
    expect_get(pp, &gs[i], inherit);
    CHECK_EQ(seen[i], 0);
    seen[i] = 1;
}

/* Empty pp's ring and runnext and the global queue, checking that they
 * held each of gs[0..n) not yet seen exactly once, and nothing else. */
static void drain_all_once(struct p *pp, struct g *gs, int n, char *seen)
{
    bool inherit;
    struct g *gp;
    while ((gp = get(pp, &inherit)) || (gp = rt_globrunq_pop())) {
        CHECK(gp >= gs && gp < gs + n);
        CHECK_EQ(seen[gp - gs], 0);
        seen[gp - gs] = 1;
    }
    for (int i = 0; i < n; i++)
        CHECK_EQ(seen[i], 1);
    CHECK_EQ(gort__sched.runqsize, 0);
    memset(seen, 0, (size_t)n);
}

/* One full-ring spill starting from counters at `start`. */
static void overflow_round(uint32_t start)
{
    reset(1);
    struct p *pp = newp(0);
    pp->runqhead = pp->runqtail = start;
    int n = 2 * RQ + 2;
    struct g *gs = newgs(n, 1);
    struct g **glob = calloc((size_t)n, sizeof *glob);
    char *seen = calloc((size_t)n, 1);
    CHECK(glob != NULL && seen != NULL);

    for (int i = 0; i < RQ; i++)
        gort__runqput(pp, &gs[i], false);
    CHECK_EQ(gort__sched.runqsize, 0);
    /* One more: the oldest RQ/2 and the new G go, in one FIFO batch. */
    gort__runqput(pp, &gs[RQ], false);
    CHECK_EQ(gort__sched.runqsize, RQ / 2 + 1);
    CHECK_EQ(gort__runqlen(pp), RQ / 2);
    CHECK_EQ(pp->runqhead, start + RQ / 2);
    CHECK_EQ(pp->runqtail, start + RQ);
    CHECK_EQ(global_list(glob, n), RQ / 2 + 1);
    for (int i = 0; i < RQ / 2; i++)
        CHECK_EQ(glob[i]->goid, gs[i].goid);
    CHECK(glob[RQ / 2] == &gs[RQ]);

    /* Fill the ring again (RQ/2 more) and spill once more: the second
     * batch is the next RQ/2 oldest plus the new G, appended after the
     * first; the ring keeps the newest RQ/2. */
    for (int i = RQ + 1; i < RQ + 1 + RQ / 2; i++)
        gort__runqput(pp, &gs[i], false);
    CHECK_EQ(gort__runqlen(pp), RQ);
    CHECK_EQ(gort__sched.runqsize, RQ / 2 + 1);
    gort__runqput(pp, &gs[RQ + 1 + RQ / 2], false);
    CHECK_EQ(gort__runqlen(pp), RQ / 2);
    CHECK_EQ(global_list(glob, n), 2 * (RQ / 2 + 1));
    for (int i = 0; i < RQ / 2; i++)
        CHECK(glob[RQ / 2 + 1 + i] == &gs[RQ / 2 + i]);
    CHECK(glob[2 * (RQ / 2 + 1) - 1] == &gs[RQ + 1 + RQ / 2]);
    for (int i = 0; i < RQ / 2; i++)
        expect_get_seen(pp, gs, seen, RQ + 1 + i, false);
    expect_get(pp, NULL, false);
    drain_all_once(pp, gs, RQ + 2 + RQ / 2, seen);

    /* A put with next on a full ring kicks the old runnext, which spills
     * as the batch's last G; the new G stays in runnext. */
    rt_sched_reset();
    gort__runqput(pp, &gs[0], true);
    for (int i = 1; i <= RQ; i++)
        gort__runqput(pp, &gs[i], false);
    CHECK_EQ(gort__runqlen(pp), RQ);
    CHECK_EQ(gort__sched.runqsize, 0);
    gort__runqput(pp, &gs[RQ + 1], true);
    CHECK(pp->runnext == &gs[RQ + 1]);
    CHECK_EQ(gort__runqlen(pp), RQ / 2);
    CHECK_EQ(global_list(glob, n), RQ / 2 + 1);
    for (int i = 0; i < RQ / 2; i++)
        CHECK(glob[i] == &gs[1 + i]);
    CHECK(glob[RQ / 2] == &gs[0]);
    expect_get_seen(pp, gs, seen, RQ + 1, true);
    for (int i = 1 + RQ / 2; i <= RQ; i++)
        expect_get_seen(pp, gs, seen, i, false);
    expect_get(pp, NULL, false);
    drain_all_once(pp, gs, RQ + 2, seen);

    free(seen);
    free(glob);
    free(gs);
    free(pp);
}

/* A put on a full ring moves the oldest RQ/2 and the new G (129 with
 * 256 slots) to the global queue in one FIFO batch appended after what is
 * there; a kicked runnext spills the same way; randomized spills keep the same
 * set; nothing lost or duplicated. */
TEST(overflow_batch_129)
{
    overflow_round(0);
    overflow_round(UINT32_MAX - RQ / 4); /* head and tail wrap mid-test */
    overflow_round(UINT32_MAX - RQ);     /* the spill itself wraps */

    /* Randomized (GORTDEBUG=randomize=1): the batch may be shuffled but
     * holds the same Gs; the spill needs an M for fastrand. */
    reset(1);
    struct m fake_m;
    memset(&fake_m, 0, sizeof fake_m);
    fake_m.fastrand[0] = 0x9e3779b9u;
    fake_m.fastrand[1] = 0x7f4a7c15u;
    gort__setm(&fake_m);
    rt_set_randomize(true);
    struct p *pp = newp(0);
    struct g *gs = newgs(RQ + 1, 1);
    for (int i = 0; i < RQ; i++)
        gort__runqput(pp, &gs[i], false);
    gort__runqput(pp, &gs[RQ], false);
    CHECK_EQ(gort__sched.runqsize, RQ / 2 + 1);
    CHECK_EQ(gort__runqlen(pp), RQ / 2);
    struct g *glob[RQ / 2 + 1];
    CHECK_EQ(global_list(glob, RQ / 2 + 1), RQ / 2 + 1);
    char inbatch[RQ / 2 + 1];
    memset(inbatch, 0, sizeof inbatch);
    for (int i = 0; i <= RQ / 2; i++) {
        /* gs[0..RQ/2) and gs[RQ] */
        int k = glob[i] == &gs[RQ] ? RQ / 2 : (int)(glob[i] - gs);
        CHECK(k >= 0 && k <= RQ / 2);
        CHECK_EQ(inbatch[k], 0);
        inbatch[k] = 1;
    }
    rt_set_randomize(false);
    gort__setm(NULL);
    CHECK_EQ(fake_m.locks, 0);
    char seen[RQ + 1];
    memset(seen, 0, sizeof seen);
    drain_all_once(pp, gs, RQ + 1, seen);
    free(gs);
    free(pp);
}

/* ------------------------------------------------------------------------
 * runqempty_and_len
 * ---------------------------------------------------------------------- */

/* Length counts the ring only, emptiness also runnext, across wrap-around. */
TEST(runqempty_and_len)
{
    reset(1);
    uint32_t starts[] = {0, UINT32_MAX - 1};
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        struct p *pp = newp(0);
        pp->runqhead = pp->runqtail = starts[s];
        struct g *gs = newgs(RQ + 1, 1);
        CHECK(gort__runqempty(pp));
        CHECK_EQ(gort__runqlen(pp), 0);

        /* runnext alone: not empty, but not in the ring's length. */
        gort__runqput(pp, &gs[0], true);
        CHECK(!gort__runqempty(pp));
        CHECK_EQ(gort__runqlen(pp), 0);
        /* ring and runnext */
        gort__runqput(pp, &gs[1], false);
        CHECK(!gort__runqempty(pp));
        CHECK_EQ(gort__runqlen(pp), 1);
        /* ring alone */
        expect_get(pp, &gs[0], true);
        CHECK(!gort__runqempty(pp));
        CHECK_EQ(gort__runqlen(pp), 1);
        expect_get(pp, &gs[1], false);
        CHECK(gort__runqempty(pp));
        CHECK_EQ(gort__runqlen(pp), 0);

        /* Lengths 1..RQ, then back down. */
        for (int i = 0; i < RQ; i++) {
            gort__runqput(pp, &gs[i], false);
            CHECK_EQ(gort__runqlen(pp), i + 1);
            CHECK(!gort__runqempty(pp));
        }
        for (int i = RQ - 1; i >= 0; i--) {
            CHECK(!gort__runqempty(pp));
            expect_get(pp, &gs[RQ - 1 - i], false);
            CHECK_EQ(gort__runqlen(pp), i);
        }
        CHECK(gort__runqempty(pp));
        CHECK_EQ(gort__sched.runqsize, 0);
        free(gs);
        free(pp);
    }
}

/* ------------------------------------------------------------------------
 * globrunqget_batch
 * ---------------------------------------------------------------------- */

static struct g *globget(struct p *pp, int32_t max)
{
    gort__lock(&gort__sched.lock);
    struct g *gp = gort__globrunqget_locked(pp, max);
    gort__unlock(&gort__sched.lock);
    return gp;
}

/* len/gomaxprocs+1 taken (one returned, the rest into the ring in order),
 * capped by max, by the queue length and by half the ring. */
TEST(globrunqget_batch)
{
    reset(4);
    int ng = 4 * RQ + 100;
    struct g *gs = newgs(ng, 1);
    struct g **glob = calloc((size_t)ng, sizeof *glob);
    CHECK(glob != NULL);

    /* An empty queue gives nothing and leaves the ring alone. */
    struct p *p0 = newp(0);
    CHECK(globget(p0, 0) == NULL);
    CHECK(gort__runqempty(p0));

    gort__lock(&gort__sched.lock);
    for (int i = 0; i < 100; i++)
        gort__globrunqput_locked(&gs[i]);
    gort__unlock(&gort__sched.lock);
    CHECK_EQ(global_list(glob, ng), 100);
    for (int i = 0; i < 100; i++)
        CHECK(glob[i] == &gs[i]);

    /* 100 Gs, 4 Ps: 100/4+1 = 26 (at most half the ring): one returned,
     * the next 25 into the ring in order, the rest stay in order. */
    int take = imin(100 / 4 + 1, RQ / 2);
    struct p *p1 = newp(1);
    CHECK(globget(p1, 0) == &gs[0]);
    CHECK_EQ(gort__runqlen(p1), take - 1);
    CHECK(p1->runnext == NULL);
    CHECK_EQ(gort__sched.runqsize, 100 - take);
    for (int i = 1; i < take; i++)
        expect_get(p1, &gs[i], false);
    expect_get(p1, NULL, false);
    CHECK_EQ(global_list(glob, ng), 100 - take);
    CHECK(glob[0] == &gs[take]);
    int head = take;

    /* max caps the batch. */
    struct p *p2 = newp(2);
    int take3 = imin(3, RQ / 2);
    CHECK(globget(p2, 3) == &gs[head]);
    CHECK_EQ(gort__runqlen(p2), take3 - 1);
    for (int i = 1; i < take3; i++)
        expect_get(p2, &gs[head + i], false);
    expect_get(p2, NULL, false);
    head += take3;
    CHECK(globget(p2, 1) == &gs[head]);
    CHECK(gort__runqempty(p2));
    head++;
    CHECK_EQ(gort__sched.runqsize, 100 - head);

    /* The batch never exceeds the queue (n/1+1 > n). */
    rt_set_gomaxprocs(1);
    CHECK(globget(p2, 0) == &gs[head]);
    CHECK_EQ(gort__runqlen(p2), imin(100 - head, RQ / 2) - 1);
    while (gort__runqlen(p2) > 0)
        expect_get(p2, &gs[++head], false);
    head++;
    if (head < 100) { /* a ring of fewer than 2*(100-26-4) slots */
        while (globget(p2, 0)) {
            bool inherit;
            while (get(p2, &inherit))
                ;
        }
    } else {
        CHECK_EQ(head, 100);
        CHECK(global_empty());
    }
    CHECK_EQ(gort__sched.runqsize, 0);
    CHECK(globget(p2, 0) == NULL);

    /* Half the ring caps the batch: 4*RQ Gs, 1 P. */
    gort__lock(&gort__sched.lock);
    for (int i = 0; i < 4 * RQ; i++)
        gort__globrunqput_locked(&gs[100 + i]);
    gort__unlock(&gort__sched.lock);
    struct p *p3 = newp(3);
    CHECK(globget(p3, 0) == &gs[100]);
    CHECK_EQ(gort__runqlen(p3), RQ / 2 - 1);
    CHECK_EQ(gort__sched.runqsize, 4 * RQ - RQ / 2);
    /* A max above the cap does not lift it. */
    struct p *p4 = newp(4);
    CHECK(globget(p4, 4 * RQ) == &gs[100 + RQ / 2]);
    CHECK_EQ(gort__runqlen(p4), RQ / 2 - 1);
    for (int i = 1; i < RQ / 2; i++) {
        expect_get(p3, &gs[100 + i], false);
        expect_get(p4, &gs[100 + RQ / 2 + i], false);
    }
    CHECK_EQ(global_list(glob, ng), 4 * RQ - RQ);
    CHECK(glob[0] == &gs[100 + RQ]);

    /* puthead goes to the front. */
    gort__lock(&gort__sched.lock);
    gort__globrunqputhead_locked(&gs[0]);
    gort__unlock(&gort__sched.lock);
    CHECK(globget(p4, 1) == &gs[0]);

    free(p0);
    free(p1);
    free(p2);
    free(p3);
    free(p4);
    free(glob);
    free(gs);
}

/* ------------------------------------------------------------------------
 * global_segments
 * ---------------------------------------------------------------------- */

static int count_spare_segments(void)
{
    int n = 0;
    for (struct gqseg *sg = gort__sched.runq_woken.spare; sg; sg = sg->next)
        n++;
    for (struct gqseg *sg = gort__sched.runq.spare; sg; sg = sg->next)
        n++;
    return n;
}

/* The global queue's segments: order across segment boundaries at both
 * ends, the timer-woken part ahead of the rest, emptied segments kept and
 * reused rather than allocated again. */
TEST(global_segments)
{
    reset(1);
    const int N = GORT_GQSEG_N;
    int ng = 3 * N + 5;
    struct g *gs = newgs(ng + 8, 1);
    struct g **glob = calloc((size_t)ng + 8, sizeof *glob);
    CHECK(glob != NULL);

    gort__lock(&gort__sched.lock);
    for (int i = 0; i < ng; i++)
        gort__globrunqput_locked(&gs[i]);
    /* The head segment starts at slot 0: a put at the head needs a new
     * segment in front, the second one goes into its free slots. */
    gort__globrunqputhead_locked(&gs[ng]);
    gort__globrunqputhead_locked(&gs[ng + 1]);
    /* Gs woken by timers go ahead of all that, in their own order. */
    struct gqueue woken = {NULL, NULL};
    for (int i = ng + 2; i < ng + 5; i++)
        gort__gqueue_push(&woken, &gs[i]);
    gort__globrunqputwoken_locked(&woken, 3);
    CHECK(woken.head == NULL);
    gort__unlock(&gort__sched.lock);

    int n = global_list(glob, ng + 8);
    CHECK_EQ(n, ng + 5);
    int k = 0;
    for (int i = ng + 2; i < ng + 5; i++)
        CHECK(glob[k++] == &gs[i]);
    CHECK(glob[k++] == &gs[ng + 1]);
    CHECK(glob[k++] == &gs[ng]);
    for (int i = 0; i < ng; i++)
        CHECK(glob[k++] == &gs[i]);
    CHECK_EQ(count_spare_segments(), 0);

    gort__lock(&gort__sched.lock);
    CHECK(gort__globrunq_has_locked(&gs[ng - 1]));
    CHECK(gort__globrunq_has_locked(&gs[ng + 3]));
    CHECK(!gort__globrunq_has_locked(&gs[ng + 5]));
    gort__unlock(&gort__sched.lock);

    /* Taken one at a time, in that order.  Each queue keeps its last
     * segment, emptied; the others are kept spare: of runq's five (one
     * in front, four for the 3N+5 puts), four. */
    struct p *pp = newp(0);
    for (int i = 0; i < n; i++)
        CHECK(globget(pp, 1) == glob[i]);
    CHECK(globget(pp, 1) == NULL);
    CHECK_EQ(gort__sched.runqsize, 0);
    CHECK(global_empty());
    CHECK(gort__sched.runq.head != NULL &&
          gort__sched.runq.head == gort__sched.runq.tail);
    CHECK(gort__sched.runq_woken.head != NULL);
    int spare = count_spare_segments();
    CHECK_EQ(spare, 4);

    /* A queue between empty and one G keeps using its one segment. */
    struct gqseg *kept = gort__sched.runq.head;
    gort__lock(&gort__sched.lock);
    for (int i = 0; i < 3 * N; i++) {
        gort__globrunqput_locked(&gs[i]);
        CHECK(gort__globrunqget_locked(pp, 1) == &gs[i]);
    }
    gort__unlock(&gort__sched.lock);
    CHECK(gort__sched.runq.head == kept && gort__sched.runq.tail == kept);
    CHECK_EQ(count_spare_segments(), spare);

    /* A put at the head of an empty queue fills its segment from the top. */
    gort__lock(&gort__sched.lock);
    gort__globrunqputhead_locked(&gs[1]);
    gort__globrunqputhead_locked(&gs[0]);
    gort__unlock(&gort__sched.lock);
    CHECK(gort__sched.runq.head == kept && gort__sched.runq.tail == kept);
    CHECK(globget(pp, 1) == &gs[0]);
    CHECK(globget(pp, 1) == &gs[1]);

    /* Refilling uses the kept segment, then the spares. */
    gort__lock(&gort__sched.lock);
    for (int i = 0; i < 2 * N; i++)
        gort__globrunqput_locked(&gs[i]);
    gort__unlock(&gort__sched.lock);
    CHECK_EQ(count_spare_segments(), spare - 1);
    CHECK_EQ(global_list(glob, ng + 8), 2 * N);

    free(pp);
    free(glob);
    free(gs);
}

/* ------------------------------------------------------------------------
 * steal_half
 * ---------------------------------------------------------------------- */

/* The thief's ring would overflow: fatal (run in a child). */
TEST_HIDDEN(steal_overflow_child)
{
    reset(2);
    struct p *victim = newp(0), *thief = newp(1);
    struct g *gs = newgs(RQ + 10, 1);
    for (int i = 0; i < 10 && i < RQ; i++)
        gort__runqput(victim, &gs[i], false);
    for (int i = 0; i < RQ - 2; i++)
        gort__runqput(thief, &gs[10 + i], false);
    gort__runqsteal(thief, victim, false);
    fprintf(stderr, "steal did not fail: thief len %u\n",
            gort__runqlen(thief));
    exit(0);
}

/* A steal takes ceil(len/2) oldest Gs, returns the newest of them and appends
 * the rest to the thief's ring; runnext only with stealnext and an empty ring;
 * a steal that would overflow the thief is fatal. */
TEST(steal_half)
{
    reset(2);
    struct p *victim = newp(0), *thief = newp(1);
    struct g *gs = newgs(RQ + 20, 1);

    /* 10 Gs: the thief grabs the 5 oldest, runs the 5th, queues 4. */
    int nv = imin(10, RQ);
    for (int i = 0; i < nv; i++)
        gort__runqput(victim, &gs[i], false);
    int grab = nv - nv / 2;
    CHECK(gort__runqsteal(thief, victim, false) == &gs[grab - 1]);
    CHECK_EQ(gort__runqlen(victim), nv - grab);
    CHECK_EQ(gort__runqlen(thief), grab - 1);
    for (int i = 0; i < grab - 1; i++)
        expect_get(thief, &gs[i], false);
    expect_get(thief, NULL, false);
    for (int i = grab; i < nv; i++) /* the victim keeps the newest */
        expect_get(victim, &gs[i], false);
    expect_get(victim, NULL, false);

    /* Odd lengths round up: 5 -> 3, 2 -> 1, 1 -> 1 (with 8+ slots). */
    int len = imin(5, RQ);
    for (int i = 0; i < len; i++)
        gort__runqput(victim, &gs[i], false);
    int base = 0;
    while (len > 0) {
        int t = len - len / 2;
        if (RQ >= 8)
            CHECK_EQ(t, len == 5 ? 3 : 1);
        CHECK(gort__runqsteal(thief, victim, false) == &gs[base + t - 1]);
        CHECK_EQ(gort__runqlen(thief), t - 1);
        CHECK_EQ(gort__runqlen(victim), len - t);
        for (int i = 0; i < t - 1; i++)
            expect_get(thief, &gs[base + i], false);
        base += t;
        len -= t;
    }
    CHECK(gort__runqempty(victim));
    CHECK(gort__runqsteal(thief, victim, true) == NULL);
    CHECK(gort__runqempty(thief));

    /* Stolen Gs go behind what the thief has, across wrap-around. */
    thief->runqhead = thief->runqtail = UINT32_MAX - 1;
    victim->runqhead = victim->runqtail = UINT32_MAX - 4;
    int own = imin(3, RQ / 2 - 1);
    for (int i = 0; i < own; i++)
        gort__runqput(thief, &gs[RQ + i], false);
    for (int i = 0; i < 8 && i < RQ / 2; i++)
        gort__runqput(victim, &gs[i], false);
    nv = imin(8, RQ / 2);
    grab = nv - nv / 2;
    CHECK(gort__runqsteal(thief, victim, false) == &gs[grab - 1]);
    CHECK_EQ(gort__runqlen(thief), own + grab - 1);
    for (int i = 0; i < own; i++)
        expect_get(thief, &gs[RQ + i], false);
    for (int i = 0; i < grab - 1; i++)
        expect_get(thief, &gs[i], false);
    expect_get(thief, NULL, false);
    for (int i = grab; i < nv; i++)
        expect_get(victim, &gs[i], false);
    expect_get(victim, NULL, false);

    /* runnext: never while the ring has Gs (even with stealnext), and with
     * an empty ring only with stealnext; P_RUNNING and P_IDLE victims. */
    uint32_t statuses[] = {P_RUNNING, P_IDLE};
    for (int s = 0; s < 2; s++) {
        victim->status = statuses[s];
        gort__runqput(victim, &gs[0], false);
        gort__runqput(victim, &gs[1], true);
        CHECK(gort__runqsteal(thief, victim, true) == &gs[0]);
        CHECK(victim->runnext == &gs[1]);
        CHECK(gort__runqsteal(thief, victim, false) == NULL);
        CHECK(victim->runnext == &gs[1]);
        CHECK(gort__runqsteal(thief, victim, true) == &gs[1]);
        CHECK(victim->runnext == NULL);
        CHECK(gort__runqempty(victim));
        CHECK(gort__runqempty(thief));
        CHECK(gort__runqsteal(thief, victim, true) == NULL);
    }

    /* A steal the thief's ring cannot hold is fatal, not a silent loss.
     * (runqgrab has already written the thief's slots by then.) */
    if (RQ >= 8) {
        struct test_child r;
        test_run_child("steal_overflow_child", NULL, 30, &r);
        CHECK_EQ(r.signal, SIGABRT);
        CHECK_STR_CONTAINS(r.err,
                           "gort: fatal error: runqsteal: runq overflow");
        test_child_free(&r);
    }
    free(gs);
    free(victim);
    free(thief);
}

/* ------------------------------------------------------------------------
 * steal_stress
 *
 * Gs come from a pool and are recycled once consumed; each put gives the
 * G a fresh goid, and consumed[goid] counts how often that incarnation
 * ran.  The owner puts (with and without next) and gets on its P, taking
 * from the global queue when its ring is empty; each thief gets from its
 * own P, steals from the owner and the other thieves (the last of 4
 * passes with stealnext, as stealwork does) only when its ring is empty,
 * and takes from the global queue.  Owner-only calls are made only by
 * each P's owner thread.
 * ---------------------------------------------------------------------- */

#define MAX_THIEVES 4

struct stress {
    struct p *ps[1 + MAX_THIEVES]; /* ps[0] is the owner's */
    int nps;
    struct g *pool;
    uint32_t npool;
    uint8_t *busy;          /* atomic: 1 while the G is queued or running */
    uint8_t *consumed;      /* atomic: per goid */
    uint64_t maxids;
    uint32_t done;          /* atomic: the owner has stopped and drained */
};

struct thief {
    struct stress *st;
    int idx;                /* its P: st->ps[idx] */
    pthread_t thread;
    uint64_t rng;
    uint64_t consumed;      /* Gs it ran */
    uint64_t steals;        /* successful runqsteal calls */
    uint64_t from_global;   /* successful globrunqget calls */
    bool randomized;
};

/* Run gp: count its incarnation, then hand it back to the pool. */
static void consume(struct stress *st, struct g *gp)
{
    CHECK(gp >= st->pool && gp < st->pool + st->npool);
    uint32_t idx = (uint32_t)(gp - st->pool);
    CHECK_EQ(__atomic_load_n(&st->busy[idx], __ATOMIC_RELAXED), 1);
    int64_t id = gp->goid;
    CHECK(id >= 0 && (uint64_t)id < st->maxids);
    uint8_t old = __atomic_fetch_add(&st->consumed[id], 1, __ATOMIC_RELAXED);
    if (old != 0) {
        fprintf(stderr, "G goid %lld (pool slot %u) consumed twice\n",
                (long long)id, idx);
        abort();
    }
    /* Release: our reads of gp happen before the owner reuses it. */
    __atomic_store_n(&st->busy[idx], 0, __ATOMIC_RELEASE);
}

static struct g *globget_any(struct p *pp)
{
    if (__atomic_load_n(&gort__sched.runqsize, __ATOMIC_RELAXED) == 0)
        return NULL;
    return globget(pp, 0);
}

static void *thief_main(void *arg)
{
    struct thief *t = arg;
    struct stress *st = t->st;
    struct p *mine = st->ps[t->idx];
    struct m fake_m;
    if (t->randomized) {
        memset(&fake_m, 0, sizeof fake_m);
        fake_m.fastrand[0] = (uint32_t)t->rng | 1;
        fake_m.fastrand[1] = (uint32_t)(t->rng >> 32) | 1;
        gort__setm(&fake_m);
    }
    bool inherit;
    uint64_t idle = 0;
    while (!__atomic_load_n(&st->done, __ATOMIC_ACQUIRE)) {
        struct g *gp = gort__runqget(mine, &inherit);
        if (gp) {
            consume(st, gp);
            t->consumed++;
            continue;
        }
        /* Our ring is empty: steal, as stealwork does. */
        for (int pass = 0; pass < GORT_STEAL_TRIES && !gp; pass++) {
            bool last = pass == GORT_STEAL_TRIES - 1;
            int start = (int)(xorshift(&t->rng) % (uint64_t)st->nps);
            for (int k = 0; k < st->nps && !gp; k++) {
                int v = (start + k) % st->nps;
                if (v == t->idx)
                    continue;
                gp = gort__runqsteal(mine, st->ps[v], last);
                if (gp)
                    t->steals++;
            }
        }
        if (!gp && (gp = globget_any(mine)))
            t->from_global++;
        if (gp) {
            consume(st, gp);
            t->consumed++;
            idle = 0;
        } else if (++idle % 64 == 0) {
            sched_yield();
        }
    }
    /* The owner has stopped: run what we still hold. */
    struct g *gp;
    while ((gp = gort__runqget(mine, &inherit))) {
        consume(st, gp);
        t->consumed++;
    }
    if (t->randomized) {
        CHECK_EQ(fake_m.locks, 0);
        gort__setm(NULL);
    }
    return NULL;
}

/* A free pool G, or NULL if the next few are all in use. */
static struct g *pool_alloc(struct stress *st, uint32_t *cursor)
{
    for (int tries = 0; tries < 64; tries++) {
        uint32_t idx = (*cursor)++ % st->npool;
        /* Acquire: pairs with consume's release. */
        if (__atomic_load_n(&st->busy[idx], __ATOMIC_ACQUIRE) == 0) {
            __atomic_store_n(&st->busy[idx], 1, __ATOMIC_RELAXED);
            return &st->pool[idx];
        }
    }
    return NULL;
}

/* With randomized, also GORTDEBUG=randomize=1 (the owner and thieves get
 * fake Ms for fastrand), and the owner's P is P_SYSCALL instead of
 * P_RUNNING, so that thieves take runnext without the 3 us back-off and
 * race the owner's runqget and runqput for it far more often. */
static void stress_round(int nthieves, uint64_t ops, bool randomized,
                         uint64_t seed)
{
    reset(1 + nthieves);
    struct stress st;
    memset(&st, 0, sizeof st);
    st.nps = 1 + nthieves;
    for (int i = 0; i < st.nps; i++)
        st.ps[i] = newp(i);
    if (randomized)
        st.ps[0]->status = P_SYSCALL;
    st.npool = 64 * RQ < 4096 ? 4096 : 64 * RQ;
    st.pool = newgs((int)st.npool, -1);
    st.busy = calloc(st.npool, 1);
    st.maxids = ops + 1;
    st.consumed = calloc(st.maxids, 1);
    CHECK(st.busy && st.consumed);

    struct m owner_m;
    if (randomized) {
        memset(&owner_m, 0, sizeof owner_m);
        owner_m.fastrand[0] = (uint32_t)seed | 1;
        owner_m.fastrand[1] = (uint32_t)(seed >> 32) | 1;
        gort__setm(&owner_m);
        rt_set_randomize(true);
    }

    struct thief th[MAX_THIEVES];
    memset(th, 0, sizeof th);
    for (int i = 0; i < nthieves; i++) {
        th[i].st = &st;
        th[i].idx = 1 + i;
        th[i].rng = seed * 2654435761u + (uint64_t)i + 1;
        th[i].randomized = randomized;
        CHECK_EQ(pthread_create(&th[i].thread, NULL, thief_main, &th[i]), 0);
    }

    /* The owner: bursts of puts that fill the ring and spill to the
     * global queue; of gets; of random puts and gets that keep the ring
     * short (owner and thieves CAS head together); and of put-next/get
     * pairs that keep the ring empty and runnext busy (thieves take
     * runnext on their last pass). */
    struct p *pp = st.ps[0];
    uint64_t rng = seed | 1, produced = 0, owner_consumed = 0;
    uint64_t owner_global = 0, full_puts = 0;
    uint32_t cursor = 0;
    bool inherit;
    uint64_t op = 0;
    while (op < ops) {
        uint64_t r = xorshift(&rng);
        uint64_t burst = 1 + (r >> 8) % (3 * RQ);
        int kind = (int)(r & 7);
        for (uint64_t b = 0; b < burst && op < ops; b++, op++) {
            bool putting, next;
            if (kind < 3) {         /* put burst */
                putting = true;
                next = (xorshift(&rng) & 3) == 0;
            } else if (kind < 5) {  /* get burst */
                putting = false;
                next = false;
            } else if (kind < 6) {  /* random */
                uint64_t x = xorshift(&rng);
                putting = x & 1;
                next = (x & 6) == 0;
            } else {                /* put-next, get, put-next, get, ... */
                putting = (b & 1) == 0;
                next = true;
            }
            struct g *gp = putting ? pool_alloc(&st, &cursor) : NULL;
            if (gp) {
                gp->goid = (int64_t)produced++;
                if (gort__runqlen(pp) == RQ &&
                    (!next || load_relaxed(&pp->runnext)))
                    full_puts++;
                gort__runqput(pp, gp, next);
                continue;
            }
            gp = gort__runqget(pp, &inherit);
            if (!gp && (gp = globget_any(pp)))
                owner_global++;
            if (gp) {
                consume(&st, gp);
                owner_consumed++;
            }
        }
    }
    /* Stop producing; run what is left on our P, then let the thieves
     * drain theirs. */
    struct g *gp;
    while ((gp = gort__runqget(pp, &inherit))) {
        consume(&st, gp);
        owner_consumed++;
    }
    __atomic_store_n(&st.done, 1, __ATOMIC_RELEASE);
    uint64_t thief_consumed = 0, steals = 0, thief_global = 0;
    for (int i = 0; i < nthieves; i++) {
        CHECK_EQ(pthread_join(th[i].thread, NULL), 0);
        thief_consumed += th[i].consumed;
        steals += th[i].steals;
        thief_global += th[i].from_global;
    }
    if (randomized) {
        rt_set_randomize(false);
        CHECK_EQ(owner_m.locks, 0);
        gort__setm(NULL);
    }

    /* Whatever is left is on the global queue. */
    uint64_t global_left = 0;
    gort__lock(&gort__sched.lock);
    int32_t left = gort__sched.runqsize;
    while ((gp = rt_globrunq_pop_locked())) {
        consume(&st, gp);
        global_left++;
    }
    CHECK_EQ(gort__sched.runqsize, 0);
    gort__unlock(&gort__sched.lock);
    CHECK_EQ(left, (int64_t)global_left);
    for (int i = 0; i < st.nps; i++) {
        CHECK(gort__runqempty(st.ps[i]));
        CHECK(st.ps[i]->runnext == NULL);
    }

    /* Every incarnation ran exactly once. */
    for (uint64_t id = 0; id < produced; id++)
        if (st.consumed[id] != 1) {
            fprintf(stderr, "goid %llu consumed %u times\n",
                    (unsigned long long)id, st.consumed[id]);
            abort();
        }
    for (uint64_t id = produced; id < st.maxids; id++)
        CHECK_EQ(st.consumed[id], 0);
    CHECK_EQ(owner_consumed + thief_consumed + global_left, produced);
    for (uint32_t i = 0; i < st.npool; i++)
        CHECK_EQ(st.busy[i], 0);

    printf("steal_stress: %d thieves%s: %llu Gs; owner ran %llu (%llu via "
           "global), thieves %llu (%llu steals, %llu global takes), %llu "
           "left on global; %llu puts on a full ring\n",
           nthieves, randomized ? " randomized" : "",
           (unsigned long long)produced, (unsigned long long)owner_consumed,
           (unsigned long long)owner_global,
           (unsigned long long)thief_consumed, (unsigned long long)steals,
           (unsigned long long)thief_global,
           (unsigned long long)global_left, (unsigned long long)full_puts);
    fflush(stdout);
    /* The run must have exercised what it is meant to. */
    CHECK_GT(produced, ops / 4);
    CHECK_GT(steals, 0);
    CHECK_GT(full_puts, 0);

    for (int i = 0; i < st.nps; i++)
        free(st.ps[i]);
    free(st.pool);
    free(st.busy);
    free(st.consumed);
}

/* An owner thread puts and gets millions of Gs while 3, then 4 thief threads
 * steal from it and from each other and take from the global queue: every G
 * produced is consumed exactly once (the second round randomized, with runnext
 * stolen without back-off); GORT_TEST_SEED=n repeats a run's owner choices. */
TEST(steal_stress)
{
#ifdef GORT_TSAN
    uint64_t ops = 1000 * 1000; /* TSan is ~10x slower */
#else
    uint64_t ops = 2 * 1000 * 1000;
#endif
    if (test_long())
        ops *= 10;
    const char *s = getenv("GORT_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)test_now_ns();
    printf("steal_stress: seed %llu (GORT_TEST_SEED to repeat)\n",
           (unsigned long long)seed);
    stress_round(3, ops / 2, false, seed);
    stress_round(4, ops / 2, true, seed + 1);
}
