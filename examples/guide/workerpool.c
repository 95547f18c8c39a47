/* SPDX-License-Identifier: MIT */
/*
 * workerpool - docs/guide.md's worker pool, the Go idioms in C.
 *
 * A pool: jobs go to NWORKERS workers over a typed channel of struct job,
 * the results come back over a typed channel of struct result; the
 * workers are started with gort_waitgroup_go (Go's WaitGroup.Go), and a
 * closer goroutine closes the results channel once they are all done, so
 * that main's `for r := range results` loop ends.
 *
 * An error group: NTASKS tasks with a context and a limit of LIMIT at
 * once (errgroup.WithContext and SetLimit); a batch that succeeds, then
 * one whose task BAD fails, which cancels the group's context: the tasks
 * running see it and stop, and no task is started after it.
 *
 * Prints (always the same; tests/guide_test.sh compares it with
 * workerpool.expected):
 *
 *     pool: 4 workers, 100 jobs, 100 results, sum of squares 338350
 *     errgroup: 20 tasks, at most 3 at once, sum 210
 *     errgroup: first error: task 5: Invalid argument
 *     errgroup: the group's context: Operation canceled; task 20 never started
 *
 * and exits 0; on a failure it says what failed on stderr and exits 1.
 */
#include <gort.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define NWORKERS 4
#define NJOBS 100
#define NTASKS 20
#define LIMIT 3
#define BAD 5
/* Go's time.Millisecond: gort.h's, 64 bits wide. */
#define MS GORT_MILLISECOND

/* Say what failed on stderr; returns err. */
static int fail(const char *what, int err)
{
    fprintf(stderr, "workerpool: %s: %s\n", what, gort_strerror(err));
    return err;
}

/* ---------------------------------------------------------------------------
 * The pool.
 * ------------------------------------------------------------------------- */

struct job {
    int id;
    int n;
};

struct result {
    int id;
    long long square;
};

/* chan job and chan result: their calls take and give these types only. */
GORT_CHAN_OF(job_chan, struct job);
GORT_CHAN_OF(result_chan, struct result);

/* What the pool's goroutines share.  It lives in run_pool's frame, which
 * outlives them all (run_pool returns only after results is closed), so
 * each goroutine gets a pointer to it. */
struct pool {
    job_chan jobs;
    result_chan results;
    gort_waitgroup workers;
};

/* for j := range jobs { results <- result{j.id, j.n * j.n} } */
static void worker(void *arg)
{
    struct pool *p = arg;
    struct job j;
    while (job_chan_recv(p->jobs, &j))
        result_chan_send(p->results,
                         (struct result){j.id, (long long)j.n * j.n});
}

/* go func() { wg.Wait(); close(results) }() */
static void closer(void *arg)
{
    struct pool *p = arg;
    gort_waitgroup_wait(&p->workers);
    result_chan_close(p->results);
}

/* for i := 1; i <= NJOBS; i++ { jobs <- job{i, i} }; close(jobs) */
static void producer(void *arg)
{
    struct pool *p = arg;
    for (int i = 1; i <= NJOBS; i++)
        job_chan_send(p->jobs, (struct job){i, i});
    job_chan_close(p->jobs);
}

static int run_pool(void)
{
    struct pool p = {.workers = GORT_WAITGROUP_INIT};
    bool seen[NJOBS + 1] = {false};
    int count = 0, ferr;
    long long sum = 0;
    struct result r;
    int64_t id = 0;

    int err = job_chan_make(&p.jobs, 0);
    if (err < 0)
        return fail("make jobs", err);
    err = result_chan_make(&p.results, 0);
    if (err < 0) {
        fail("make results", err);
        goto free_jobs;
    }
    for (int w = 0; w < NWORKERS && id >= 0; w++)
        id = gort_waitgroup_go(&p.workers, worker, &p);
    if (id >= 0)
        id = gort_go(closer, &p);
    if (id < 0) {
        /* No closer: end the workers that did start, and wait for them. */
        err = fail("start", (int)id);
        job_chan_close(p.jobs);
        gort_waitgroup_wait(&p.workers);
        goto free_results;
    }
    id = gort_go(producer, &p);
    if (id < 0) {
        /* No producer: close jobs here; the workers end, the closer
         * closes results, and the loop below ends at once. */
        err = fail("start producer", (int)id);
        job_chan_close(p.jobs);
    }

    /* for r := range results { ... } */
    while (result_chan_recv(p.results, &r)) {
        if (r.id < 1 || r.id > NJOBS || seen[r.id] ||
            r.square != (long long)r.id * r.id) {
            fprintf(stderr, "workerpool: bad result: job %d -> %lld\n", r.id,
                    r.square);
            err = -EPROTO;
        } else {
            seen[r.id] = true;
        }
        count++;
        sum += r.square;
    }
    if (err == 0 && count != NJOBS)
        err = fail("results missing", -EPROTO);
    if (err == 0)
        printf("pool: %d workers, %d jobs, %d results, sum of squares %lld\n",
               NWORKERS, NJOBS, count, sum);

    /* Nobody waits on the channels any more: results is closed and
     * drained, and every worker saw jobs closed and returned. */
free_results:
    if ((ferr = result_chan_free(p.results)) < 0)
        err = err ? err : fail("free results", ferr);
free_jobs:
    if ((ferr = job_chan_free(p.jobs)) < 0)
        err = err ? err : fail("free jobs", ferr);
    return err;
}

/* ---------------------------------------------------------------------------
 * The error group.
 * ------------------------------------------------------------------------- */

/* What one batch's tasks share: in run_group's frame, which outlives
 * them (gort_errgroup_wait). */
struct batch {
    gort_ctx *ctx;      /* the group's: it owns it, until gort_errgroup_free */
    int bad;            /* the task that fails (0: none) */
    int ctx_err;        /* gort_ctx_err of ctx after the group's wait */
    atomic_int failed;  /* the task that returned an error of its own */
    atomic_int running; /* tasks running now */
    atomic_int peak;    /* the most that ever ran at once */
    atomic_int sum;     /* the ids of the tasks that did their work */
};

/* One task's argument: its own id, not the launching loop's variable. */
struct task {
    int id;
    struct batch *b;
};

/* func() error: 0 or a negative errno.  A task that finds the group's
 * context cancelled returns its reason, which the group ignores: only
 * the first error counts. */
static int task(void *arg)
{
    struct task *t = arg;
    struct batch *b = t->b;
    int now = atomic_fetch_add(&b->running, 1) + 1;
    int peak = atomic_load(&b->peak);
    while (now > peak && !atomic_compare_exchange_weak(&b->peak, &peak, now))
        ;
    int err = 0;
    if (t->id == b->bad) {
        atomic_store(&b->failed, t->id);
        err = -EINVAL;
    } else {
        /* select {
         * case <-ctx.Done(): return ctx.Err()
         * case <-time.After(2 * time.Millisecond):  // the work
         * } */
        gort_case done = {gort_ctx_done(b->ctx), GORT_CASE_RECV, NULL, false};
        int r = gort_select_until(&done, 1, gort_deadline_in(2 * MS));
        if (r == 0)
            err = gort_ctx_err(b->ctx);
        else if (r != -ETIMEDOUT)
            err = r; /* -ENOMEM: the goroutine's deadline timer */
        else
            atomic_fetch_add(&b->sum, t->id);
    }
    atomic_fetch_sub(&b->running, 1);
    return err;
}

/* Run NTASKS tasks, LIMIT at a time, task bad failing (0: none).  Returns
 * the group's first error; *started gets the tasks started. */
static int run_group(int bad, struct batch *b, int *started)
{
    struct task tasks[NTASKS];
    gort_errgroup *g;
    int err = gort_errgroup_make(&g, NULL, &b->ctx);
    if (err < 0)
        return fail("make errgroup", err);
    err = gort_errgroup_set_limit(g, LIMIT);
    if (err < 0) {
        gort_errgroup_free(g); /* no goroutine ran: it cannot be busy */
        return fail("set limit", err);
    }
    b->bad = bad;
    *started = 0;
    for (int i = 0; i < NTASKS; i++) {
        if (gort_ctx_err(b->ctx) != 0)
            break; /* a task failed: start no more */
        tasks[i] = (struct task){i + 1, b};
        int64_t id = gort_errgroup_go(g, task, &tasks[i]);
        if (id < 0) {
            fail("start task", (int)id);
            break;
        }
        ++*started;
    }
    err = gort_errgroup_wait(g);
    b->ctx_err = gort_ctx_err(b->ctx);
    int ferr = gort_errgroup_free(g); /* and the group's context with it */
    if (ferr < 0)
        fail("free errgroup", ferr);
    b->ctx = NULL;
    return err;
}

static int run_groups(void)
{
    /* A batch that succeeds: every task does its work. */
    struct batch ok = {0};
    int started;
    int err = run_group(0, &ok, &started);
    if (err < 0)
        return fail("first batch", err);
    if (started != NTASKS || ok.peak > LIMIT ||
        ok.sum != NTASKS * (NTASKS + 1) / 2) {
        fprintf(stderr, "workerpool: %d started, %d at once, sum %d\n", started,
                (int)ok.peak, (int)ok.sum);
        return -EPROTO;
    }
    printf("errgroup: %d tasks, at most %d at once, sum %d\n", started, LIMIT,
           (int)ok.sum);

    /* A batch whose task BAD fails: its error cancels the group's
     * context, and run_group starts no task after that. */
    struct batch bad = {0};
    err = run_group(BAD, &bad, &started);
    if (err != -EINVAL || bad.failed != BAD || started >= NTASKS ||
        bad.peak > LIMIT) {
        fprintf(stderr, "workerpool: second batch: %s, task %d, %d started\n",
                gort_strerror(err), (int)bad.failed, started);
        return -EPROTO;
    }
    printf("errgroup: first error: task %d: %s\n", (int)bad.failed,
           gort_strerror(err));
    printf("errgroup: the group's context: %s; task %d never started\n",
           gort_strerror(bad.ctx_err), NTASKS);
    return 0;
}

static int app(void *arg)
{
    (void)arg;
    int err = run_pool();
    if (err == 0)
        err = run_groups();
    return err == 0 ? 0 : 1;
}

int main(void)
{
    int status = gort_run(app, NULL);
    if (status < 0) {
        fprintf(stderr, "workerpool: gort_run: %s\n", gort_strerror(status));
        return 1;
    }
    return status;
}
