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
 *         ... per-worker counts, the cancellation, the check line ...
 *     }
 *
 * and prints what it prints (the interleaving varies from run to run):
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
 *
 * The 7 goroutines are main, the 4 workers, the producer and the closer.
 * With -timeout-ms the producer stops early, as on a cancelled context,
 * and a line "cancelled: S of N jobs submitted" comes before the check;
 * every submitted job is still done.  The exit status is 0 only when each
 * submitted job came back exactly once with the right square.
 *
 * Context: a nil channel never becomes ready in a select, so without a
 * timeout ctx.Done() is NULL, as Background's Done() is nil in Go.  With a
 * timeout, a function timer closes the done channel, as WithTimeout does
 * through time.AfterFunc.  The deferred cancel stops the timer and closes
 * done itself when the timer had not fired; when it had, it waits for the
 * timer's goroutine to close done, so that done is closed exactly once.
 *
 * Flags: -workers N (default 4), -jobs N (default 20), -work-ms MS
 * (default 5), -timeout-ms MS (default 0 = no cancellation).
 */
#include <errno.h>
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static int failed;          /* main only */

/* The timer's function: the context's deadline has passed. */
static void expire(void *arg)
{
    (void)arg;
    gort_chan_close(done);
}

/* defer cancel(): done ends up closed exactly once, and no goroutine
 * touches it after this returns. */
static void cancel(gort_timer *timer)
{
    if (gort_timer_stop(timer))
        gort_chan_close(done);      /* stopped before expire could start */
    else
        gort_chan_recv(done, NULL); /* returns once expire has closed it */
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

/* Receive every result, then print the per-worker counts and the check. */
static void collect(void)
{
    int *seen = calloc((size_t)njobs + 1, sizeof *seen);
    int *per_worker = calloc((size_t)nworkers + 1, sizeof *per_worker);
    if (!seen || !per_worker)
        need(-ENOMEM, "calloc");
    long long sum = 0, want = 0;
    int bad = 0, once = 0;
    struct result r;
    while (gort_chan_recv(results, &r)) {
        printf("job %d -> %lld (worker %d)\n", r.id, r.sq, r.worker);
        if (r.id < 1 || r.id > njobs || r.worker < 1 || r.worker > nworkers) {
            bad++;
            continue;
        }
        seen[r.id]++;
        per_worker[r.worker]++;
        sum += r.sq;
        if (r.sq != (long long)r.id * r.id)
            bad++;
    }
    for (int w = 1; w <= nworkers; w++)
        printf("worker %d: %d jobs\n", w, per_worker[w]);
    if (sent < njobs)
        printf("cancelled: %d of %d jobs submitted\n", sent, njobs);
    for (int i = 1; i <= sent; i++) {
        once += seen[i] == 1;
        want += (long long)i * i;
    }
    for (int i = sent + 1; i <= njobs; i++)
        bad += seen[i] != 0;
    bool ok = once == sent && sum == want && bad == 0;
    printf("check: %d/%d jobs done exactly once, sum of squares %lld "
           "(want %lld): %s\n", once, sent, sum, want, ok ? "ok" : "FAIL");
    failed = !ok;
    free(seen);
    free(per_worker);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_timer *timer = NULL;
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
    collect();

    if (timer) {
        cancel(timer);
        need(gort_timer_free(timer), "gort_timer_free");
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
        else {
            fprintf(stderr, "usage: workerpool [-workers N] [-jobs N] "
                            "[-work-ms MS] [-timeout-ms MS]\n");
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
