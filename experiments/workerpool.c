/* SPDX-License-Identifier: MIT */
/*
 * workerpool - a fixed pool of workers fed through channels, with graceful
 * shutdown.
 *
 * Four worker goroutines (whatever the number of jobs) receive jobs from an
 * unbuffered jobs channel, square each job's number after a short pause
 * (standing for I/O) and send the result on an unbuffered results channel.
 * No goroutine is started per job: the workers are reused.  Shutdown is
 * graceful: the producer closes jobs when it has submitted everything (or
 * when its context is cancelled), each worker drains what is left and
 * returns, a WaitGroup tells a closer goroutine that all have returned, it
 * closes results, and main's receive loop ends.  Mirrors the Go program
 *
 *     func worker(id int, jobs <-chan job, results chan<- result,
 *         wg *sync.WaitGroup, work time.Duration) {
 *         defer wg.Done()
 *         for j := range jobs {
 *             time.Sleep(work)
 *             results <- result{j.id, id, j.n * j.n}
 *         }
 *     }
 *
 *     func main() {
 *         ... flags -workers, -jobs, -work-ms, -timeout-ms ...
 *         ctx := context.Background()
 *         if *timeoutMS > 0 {
 *             ctx, cancel = context.WithTimeout(ctx, timeout)
 *             defer cancel()
 *         }
 *         jobs, results := make(chan job), make(chan result)
 *         var wg sync.WaitGroup
 *         for w := 1; w <= *workers; w++ {
 *             wg.Add(1)
 *             go worker(w, jobs, results, &wg, work)
 *         }
 *         go func() {                      // the producer
 *             defer close(jobs)
 *             for i := 1; i <= *njobs; i++ {
 *                 select {
 *                 case jobs <- job{i, i}:
 *                     sent++
 *                 case <-ctx.Done():
 *                     return
 *                 }
 *             }
 *         }()
 *         go func() { wg.Wait(); close(results) }()
 *         fmt.Printf("%d workers, %d jobs, %d goroutines\n", ...,
 *             runtime.NumGoroutine())
 *         for r := range results {
 *             fmt.Printf("job %d -> %d (worker %d)\n", r.id, r.sq, r.worker)
 *             ...
 *         }
 *         ... per-worker counts, the cancellation, the check lines ...
 *     }
 *
 * and prints (the interleaving varies from run to run):
 *
 *     4 workers, 20 jobs, 7 goroutines
 *     job 1 -> 1 (worker 1)
 *     job 2 -> 4 (worker 2)
 *     ...
 *     job 20 -> 400 (worker 4)
 *     worker 1: 5 jobs
 *     ...
 *     worker 4: 5 jobs
 *     check: 20/20 jobs done exactly once, sum of squares 2870 (want 2870): ok
 *     check: no goroutine per job: 6 goroutines created for 20 jobs (want 6: 4 workers, the producer, the closer): ok
 *     check: graceful shutdown: 1 goroutine left once results was closed (want 1, main): ok
 *
 * The 7 goroutines are main, the 4 workers, the producer and the closer.
 * The checks say what the lesson asks of a pool: every submitted job
 * comes back exactly once with the right square; the goroutines created
 * while it ran (/sched/goroutines-created:goroutines, read before the pool
 * starts and after it has shut down) are the pool's own, however many jobs
 * there are (plus the goroutine a fired deadline's timer starts); and
 * after shutdown no goroutine but main is left: every worker saw jobs
 * closed, drained it and returned.  The count is polled for up to 5 s,
 * since a goroutine that has called gort_waitgroup_done, or closed a
 * channel, still counts until it has returned.
 *
 * With -timeout-ms the producer stops early, as on a cancelled context,
 * and a line "cancelled: S of N jobs submitted" comes before the checks;
 * every submitted job is still done, and none of the others.  A fourth
 * check then says whether the deadline cut the run short.  It is judged
 * only when the deadline comes at least a second before the last job
 * could possibly be submitted (job k waits for a worker to finish job
 * k - workers, so the last cannot go before (jobs - 1) / workers * work-ms
 * ms): a timer late by a second is beyond any machine this runs on, a
 * closer deadline may be missed by a loaded one.  `make test` runs the
 * short form both ways, as
 *
 *     workerpool -short
 *     workerpool -short -jobs 1000 -timeout-ms 20
 *
 * and the second prints, after a dozen or so jobs,
 *
 *     cancelled: 16 of 1000 jobs submitted
 *     check: 16/16 jobs done exactly once, sum of squares 1496 (want 1496): ok
 *     check: no goroutine per job: 7 goroutines created for 1000 jobs (want 7: 4 workers, the producer, the closer, the deadline's timer): ok
 *     check: graceful shutdown: 1 goroutine left once results was closed (want 1, main): ok
 *     check: the deadline (20 ms) stopped the producer: 16 of 1000 jobs submitted, the last could not have gone before 1245 ms: ok
 *
 * The exit status is 1 when a check fails, 2 on bad flags.
 *
 * Context: a nil channel never becomes ready in a select, so without a
 * timeout ctx.Done() is NULL, as Background's Done() is nil in Go.  With a
 * timeout, a function timer closes the done channel, as WithTimeout does
 * through time.AfterFunc.  The deferred cancel stops the timer and closes
 * done itself when the timer had not fired; when it had, it waits for the
 * timer's goroutine to close done, so that done is closed exactly once.
 *
 * Flags: -workers N (default 4), -jobs N (default 20), -work-ms MS
 * (default 5), -timeout-ms MS (default 0 = no cancellation), -short (the
 * form `make test` runs: the same as the defaults, which take tens of
 * milliseconds; the other flags still apply).
 */
#include <errno.h>
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flags.h"

struct job {
    int id;
    int n;
};

struct result {
    int id;
    int worker;
    long long sq;
};

static int nworkers = 4, njobs = 20, work_ms = 5, timeout_ms = 0;

static gort_chan *jobs, *results;
static gort_chan *done;     /* ctx.Done(): NULL when nothing cancels */
static gort_waitgroup wg;
static int sent;            /* producer writes; main reads after results is
                               closed, which happens after close(jobs) */

/* The timer's function: the context's deadline has passed. */
static void expire(void *arg)
{
    (void)arg;
    gort_chan_close(done);
}

/* defer cancel(): done ends up closed exactly once, and no goroutine
 * touches it after this returns.  True when the timer had fired (and
 * started expire's goroutine). */
static bool cancel(gort_timer *timer)
{
    if (gort_timer_stop(timer)) {
        gort_chan_close(done);      /* stopped before expire could start */
        return false;
    }
    gort_chan_recv(done, NULL);     /* returns once expire has closed it */
    return true;
}

static void worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct job j;
    while (gort_chan_recv(jobs, &j)) { /* false once jobs is closed and empty */
        gort_sleep((int64_t)work_ms * 1000000);
        struct result r = {j.id, id, (long long)j.n * j.n};
        gort_chan_send(results, &r);
    }
    gort_waitgroup_done(&wg);
}

static void producer(void *arg)
{
    (void)arg;
    for (int i = 1; i <= njobs; i++) {
        struct job j = {i, i};
        gort_case cases[2] = {
            {.ch = jobs, .dir = GORT_CASE_SEND, .elem = &j},
            {.ch = done, .dir = GORT_CASE_RECV, .elem = NULL},
        };
        int chosen = gort_select(cases, 2);
        if (chosen < 0) {
            fprintf(stderr, "workerpool: gort_select: error %d\n", chosen);
            abort();
        }
        if (chosen == 1)
            break;
        sent++;
    }
    gort_chan_close(jobs);
}

static void closer(void *arg)
{
    (void)arg;
    gort_waitgroup_wait(&wg);
    gort_chan_close(results);
}

static void need(int64_t err, const char *what)
{
    if (err < 0) {
        fprintf(stderr, "workerpool: %s: error %lld\n", what, (long long)err);
        exit(1);
    }
}

/* What main measured, for the check lines. */
struct tally {
    int once;            /* submitted jobs that came back exactly once */
    int bad;             /* results for no submitted job, or wrong */
    long long sum, want; /* the squares received, and those submitted */
};

/* Receive every result, then print the per-worker counts (and the
 * cancellation); the tally of what came back in *t. */
static void collect(struct tally *t)
{
    int *seen = calloc((size_t)njobs + 1, sizeof *seen);
    int *per_worker = calloc((size_t)nworkers + 1, sizeof *per_worker);
    if (!seen || !per_worker)
        need(-ENOMEM, "calloc");
    memset(t, 0, sizeof *t);
    struct result r;
    while (gort_chan_recv(results, &r)) {
        printf("job %d -> %lld (worker %d)\n", r.id, r.sq, r.worker);
        if (r.id < 1 || r.id > njobs || r.worker < 1 || r.worker > nworkers) {
            t->bad++;
            continue;
        }
        seen[r.id]++;
        per_worker[r.worker]++;
        t->sum += r.sq;
        if (r.sq != (long long)r.id * r.id)
            t->bad++;
    }
    for (int w = 1; w <= nworkers; w++)
        printf("worker %d: %d jobs\n", w, per_worker[w]);
    if (sent < njobs)
        printf("cancelled: %d of %d jobs submitted\n", sent, njobs);
    for (int i = 1; i <= sent; i++) {
        t->once += seen[i] == 1;
        t->want += (long long)i * i;
    }
    for (int i = sent + 1; i <= njobs; i++)
        t->bad += seen[i] != 0;
    free(seen);
    free(per_worker);
}

/* Goroutines created so far (/sched/goroutines-created:goroutines). */
static uint64_t created(void)
{
    gort_metric_sample s = {.kind = 0};
    need(gort_metric_read("/sched/goroutines-created:goroutines", &s),
         "gort_metric_read");
    return s.u64;
}

static void main_g(void *arg)
{
    (void)arg;
    gort_timer *timer = NULL;
    uint64_t created0 = created();
    need(gort_chan_make(&jobs, sizeof(struct job), 0), "gort_chan_make");
    need(gort_chan_make(&results, sizeof(struct result), 0), "gort_chan_make");
    if (timeout_ms > 0) {
        need(gort_chan_make(&done, 0, 0), "gort_chan_make");
        need(gort_timer_make(&timer, (int64_t)timeout_ms * 1000000, expire,
                             NULL), "gort_timer_make");
    }
    for (int w = 1; w <= nworkers; w++) {
        gort_waitgroup_add(&wg, 1);
        need(gort_go(worker, (void *)(intptr_t)w), "gort_go");
    }
    need(gort_go(producer, NULL), "gort_go");
    need(gort_go(closer, NULL), "gort_go");
    printf("%d workers, %d jobs, %lld goroutines\n", nworkers, njobs,
           (long long)gort_numgoroutine());
    struct tally t;
    collect(&t);

    bool fired = false;  /* the deadline's timer started its goroutine */
    if (timer) {
        fired = cancel(timer);
        need(gort_timer_free(timer), "gort_timer_free");
    }
    /* results is closed: every worker has called gort_waitgroup_done and
     * the closer has closed results, but each counts as a goroutine until
     * it has returned (and so does the timer's goroutine after closing
     * done).  Poll for up to 5 s: a loaded machine may take a while to run
     * them to their end. */
    int64_t left = gort_numgoroutine();
    for (int i = 0; i < 5000 && left != 1; i++) {
        gort_sleep(1000000);
        left = gort_numgoroutine();
    }
    uint64_t ncreated = created() - created0;
    uint64_t pool = (uint64_t)nworkers + 2 + fired;

    check(t.once == sent && t.sum == t.want && t.bad == 0,
          "%d/%d jobs done exactly once, sum of squares %lld (want %lld)",
          t.once, sent, t.sum, t.want);
    check(ncreated == pool,
          "no goroutine per job: %llu goroutines created for %d jobs "
          "(want %llu: %d workers, the producer, the closer%s)",
          (unsigned long long)ncreated, njobs, (unsigned long long)pool,
          nworkers, fired ? ", the deadline's timer" : "");
    check(left == 1,
          "graceful shutdown: %lld goroutine%s left once results was closed "
          "(want 1, main)", (long long)left, left == 1 ? "" : "s");
    if (timeout_ms > 0) {
        /* Job k goes to a worker that has finished job k - nworkers, each
         * taking at least work_ms: the last job cannot be submitted before
         * (njobs - 1) / nworkers * work_ms. */
        long long earliest =
            njobs > 0 ? (long long)(njobs - 1) / nworkers * work_ms : 0;
        if (timeout_ms + 1000LL <= earliest)
            check(sent < njobs,
                  "the deadline (%d ms) stopped the producer: %d of %d jobs "
                  "submitted, the last could not have gone before %lld ms",
                  timeout_ms, sent, njobs, earliest);
        else
            check(true,
                  "the deadline (%d ms) is not a second before the last "
                  "job could go (%lld ms): whether it stopped the producer "
                  "(%d of %d jobs submitted) is not judged",
                  timeout_ms, earliest, sent, njobs);
    }

    need(gort_chan_free(jobs), "gort_chan_free(jobs)");
    need(gort_chan_free(results), "gort_chan_free(results)");
    need(gort_chan_free(done), "gort_chan_free(done)");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-workers"))
            nworkers = intflag("workerpool", "-workers", v, 1);
        else if (!strcmp(argv[i], "-jobs"))
            njobs = intflag("workerpool", "-jobs", v, 0);
        else if (!strcmp(argv[i], "-work-ms"))
            work_ms = intflag("workerpool", "-work-ms", v, 0);
        else if (!strcmp(argv[i], "-timeout-ms"))
            timeout_ms = intflag("workerpool", "-timeout-ms", v, 0);
        else if (!strcmp(argv[i], "-short"))
            i--; /* takes no value; the defaults are already short */
        else {
            fprintf(stderr, "usage: workerpool [-workers N] [-jobs N] "
                            "[-work-ms MS] [-timeout-ms MS] [-short]\n");
            return 2;
        }
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "workerpool: gort_main: error %d\n", err);
        return 1;
    }
    return failed ? 1 : 0;
}
