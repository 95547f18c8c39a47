/* SPDX-License-Identifier: MIT */
/*
 * leak - goroutine leaks, found in a goroutine dump, and their fixes.
 *
 * A request handler starts two goroutines and waits at most 2 ms for an
 * answer.  query answers after 100 ms, too late: the handler has returned
 * on its timeout, nobody will ever receive from the unbuffered results
 * channel, and query blocks in its send forever.  watch waits on a done
 * channel for the end of the request, but the handler never closes it, so
 * watch blocks in its receive forever.  Each request leaks two goroutines:
 * the count grows by 2 per request and never comes back.  A goroutine dump
 * then shows where they are: every leaked goroutine is "[chan send]" in
 * query or "[chan receive]" in watch, created by handle_leaky, with the
 * channel it waits on.  The fixed handler gives results a buffer of one
 * (the late send completes and query returns) and closes done when it
 * returns (watch returns): the count comes back to where it was.  Mirrors
 * the Go program
 *
 *     func query(results chan<- int) {
 *         time.Sleep(100 * time.Millisecond) // answers after the handler gave up
 *         results <- 42
 *     }
 *
 *     func watch(done <-chan struct{}) {
 *         <-done // the request's clean-up, when the handler is done
 *     }
 *
 *     func handleLeaky() (int, error) {
 *         results := make(chan int) // unbuffered: query blocks once we leave
 *         done := make(chan struct{})
 *         go query(results)
 *         go watch(done) // nobody ever closes done
 *         select {
 *         case v := <-results:
 *             return v, nil
 *         case <-time.After(2 * time.Millisecond):
 *             return 0, errTimeout
 *         }
 *     }
 *
 *     func handleFixed() (int, error) {
 *         results := make(chan int, 1) // query's send always completes
 *         done := make(chan struct{})
 *         defer close(done) // watch returns with the handler
 *         ... the rest as handleLeaky ...
 *     }
 *
 *     func main() {
 *         fmt.Printf("goroutines at start: %d\n", runtime.NumGoroutine())
 *         timeouts, leaked := run("leaky", handleLeaky, 3, 3)
 *         pprof.Lookup("goroutine").WriteTo(os.Stdout, 1)
 *         _, fixedLeaked := run("fixed", handleFixed, 3, 3)
 *         ... the check line ...
 *     }
 *
 * where run serves 3 rounds of 3 requests, sleeps 150 ms after each round,
 * prints the goroutine count and returns how much it grew.  The goroutine
 * profile is gort_dump_goroutines_grouped, which groups goroutines by
 * identical backtrace, largest group first, as pprof's debug=1 text.
 * Output (addresses vary):
 *
 *     goroutines at start: 1
 *     leaky handler:
 *       after 3 requests (3 timed out): 7 goroutines
 *       after 6 requests (6 timed out): 13 goroutines
 *       after 9 requests (9 timed out): 19 goroutines
 *     goroutine profile: total 19
 *     9 @ 0x5616d3c96f19 0x5616d3c95939
 *     #	0x5616d3c96f18	gort_chan_send+0x108	/path/to/build/experiments/leak:0x4f18
 *     #	0x5616d3c95938	query+0x28	/path/to/build/experiments/leak:0x3938
 *
 *     9 @ 0x5616d3c972c6 0x5616d3c957fb
 *     #	0x5616d3c972c5	gort_chan_recv+0x185	/path/to/build/experiments/leak:0x52c5
 *     #	0x5616d3c957fa	watch+0xa	/path/to/build/experiments/leak:0x37fa
 *
 *     1 @ 0x5616d3c95d31
 *     #	0x5616d3c95d30	main_g+0x70	/path/to/build/experiments/leak:0x3d30
 *
 *     the leak: 9 goroutines in query, 9 in watch
 *     fixed handler:
 *       after 3 requests (3 timed out): 19 goroutines
 *       after 6 requests (6 timed out): 19 goroutines
 *       after 9 requests (9 timed out): 19 goroutines
 *     check: leaky handler: 18 goroutines leaked by 9 requests (want 18: query and watch per timed-out request, watch per answered one): ok
 *     check: the profile shows where: 9 goroutines in query's channel send (want 9, one per timed-out request), 9 in watch's channel receive (want 9, one per request), none of them elsewhere: ok
 *     check: fixed handler: 0 goroutines leaked by 9 requests (want 0), and the 18 leaked before are still there: 19 goroutines (want 19): ok
 *
 * Two stacks with counts that grow with the requests are the leak, and
 * their frames say where each goroutine is stuck: query in its send, watch
 * in its receive (`addr2line -e build/experiments/leak 0x3938` gives the
 * line; GORTTRACEBACK=system adds gort's own frames).  The fixed handler's
 * count stays at 19, not 1: nothing, in Go either, can end a goroutine
 * blocked forever, so the 18 leaked ones stay until the program exits.
 *
 * The check lines judge counts, not times.  The first asks the leaky
 * handler for exactly two leaked goroutines per timed-out request (one,
 * watch, should query have answered in time: a handler held up for the
 * whole of query's delay on a loaded machine); the second asks the
 * profile for every goroutine in query to be in gort_chan_send and one
 * per timed-out request, and every goroutine in watch to be in
 * gort_chan_recv and one per request; the third asks the fixed handler to
 * leak none while the leaked ones stay.  A count that is not the expected
 * one yet after the pause is polled for up to a second more, and so is a
 * profile that still finds a query asleep, so that a loaded machine does
 * not fail the checks; only the last profile taken is printed.  The exit
 * status is 1 when a check fails, 2 on bad flags.
 *
 * Flags: -short (the form `make test` runs: query answers after 40 ms
 * and the pause after a round is 60 ms, so that the run takes under half
 * a second; the handlers still wait 2 ms, twenty times less than query
 * takes).
 *
 * Go's garbage collector frees a channel once no goroutine can reach it.
 * Here main keeps every channel in a table: the fixed handler's channels
 * are freed once their goroutines have returned, the leaked ones stay
 * allocated (and reachable) until exit.
 *
 * The functions are static: dumps read the executable's own symbol table.
 * The experiments are built with -fno-optimize-sibling-calls: query and
 * watch end with their call into gort, which would otherwise be a jump
 * that leaves no frame of theirs on the stack.
 */
#include <errno.h>
#include <gort.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define ROUNDS 3
#define PER_ROUND 3
/* query answers 50 times later than the handlers wait (20 times in the
 * short form), so that a handler slowed down between starting query and
 * waiting (a loaded machine, a sanitizer build) still gives up first; the
 * pause after a round outlasts query, so that the dump finds every leaked
 * query in its send. */
static int64_t query_ns = 100 * 1000000LL;  /* query's answer time */
static int64_t settle_ns = 150 * 1000000LL; /* pause after a round */
#define TIMEOUT_NS (2 * 1000000LL)          /* the handlers' patience */

/* Two channels per request, both handlers. */
#define MAXCHANS (2 * 2 * ROUNDS * PER_ROUND)
static gort_chan *chans[MAXCHANS];
static int nchans;          /* main only */

static void need(int64_t err, const char *what)
{
    if (err < 0) {
        fprintf(stderr, "leak: %s: error %lld\n", what, (long long)err);
        exit(1);
    }
}

/* A new channel, recorded in chans. */
static gort_chan *makechan(size_t elemsize, size_t cap)
{
    gort_chan *c;
    need(gort_chan_make(&c, elemsize, cap), "gort_chan_make");
    if (nchans == MAXCHANS)
        need(-ENOSPC, "channel table");
    chans[nchans++] = c;
    return c;
}

static void query(void *arg)
{
    gort_chan *results = arg;
    gort_sleep(query_ns);
    int v = 42;
    gort_chan_send(results, &v);
}

static void watch(void *arg)
{
    gort_chan *done = arg;
    gort_chan_recv(done, NULL);
}

/* Wait for query's answer or the timeout: 0 with the answer in *v, or
 * -ETIMEDOUT. */
static int await(gort_chan *results, int *v)
{
    gort_chan *timeout = gort_after(TIMEOUT_NS);
    if (!timeout)
        need(-ENOMEM, "gort_after");
    gort_case cases[2] = {
        {.ch = results, .dir = GORT_CASE_RECV, .elem = v},
        {.ch = timeout, .dir = GORT_CASE_RECV, .elem = NULL},
    };
    int chosen = gort_select(cases, 2);
    need(chosen, "gort_select");
    need(gort_chan_free(timeout), "gort_chan_free(timeout)");
    return chosen == 0 ? 0 : -ETIMEDOUT;
}

static int handle_leaky(int *v)
{
    gort_chan *results = makechan(sizeof(int), 0);
    gort_chan *done = makechan(0, 0);
    need(gort_go(query, results), "gort_go");
    need(gort_go(watch, done), "gort_go");
    return await(results, v);
}

static int handle_fixed(int *v)
{
    gort_chan *results = makechan(sizeof(int), 1);
    gort_chan *done = makechan(0, 0);
    need(gort_go(query, results), "gort_go");
    need(gort_go(watch, done), "gort_go");
    int err = await(results, v);
    gort_chan_close(done); /* Go's defer close(done) */
    return err;
}

/*
 * Serve ROUNDS rounds of PER_ROUND requests, printing the goroutine count
 * after each; return how much the count grew and store the number of
 * requests that timed out in *timeouts.  A leaky request leaks query and
 * watch when it times out, watch alone when query answered in time; a
 * fixed one leaks nothing.  After the pause, a count that is not the
 * expected one yet is polled for up to a second more, so that a loaded
 * machine does not fail the check.
 */
static int64_t run(const char *name, int (*handle)(int *), bool leaks,
                   int *timeouts)
{
    printf("%s handler:\n", name);
    int64_t base = gort_numgoroutine(), g = base;
    *timeouts = 0;
    for (int r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < PER_ROUND; i++) {
            int v;
            *timeouts += handle(&v) == -ETIMEDOUT;
        }
        int64_t want = leaks ? base + r * PER_ROUND + *timeouts : base;
        gort_sleep(settle_ns);
        for (int t = 0; t < 1000 && gort_numgoroutine() != want; t++)
            gort_sleep(1000000);
        g = gort_numgoroutine();
        printf("  after %d requests (%d timed out): %lld goroutines\n",
               r * PER_ROUND, *timeouts, (long long)g);
    }
    return g - base;
}

/* Goroutines of a profile whose frames include a function, and how many
 * of those are stuck in a given gort call. */
struct where {
    int in_fn;   /* goroutines with fn among their frames */
    int stuck;   /* of those, with the gort call among their frames too */
};

/* Whether the frame line l (len bytes, "#\tpc\tname+0x...") is name's. */
static bool frame_is(const char *l, size_t len, const char *name)
{
    char want[64];
    snprintf(want, sizeof want, "\t%s+0x", name);
    return l[0] == '#' && memmem(l, len, want, strlen(want)) != NULL;
}

/* Sum, over the profile's groups ("COUNT @ pc ..." and their "#" frame
 * lines), the goroutines whose frames include fn, and those whose frames
 * include call as well. */
static struct where count_in(const char *profile, const char *fn,
                             const char *call)
{
    struct where w = {0, 0};
    int count = 0;
    bool has_fn = false, has_call = false;
    for (const char *l = profile;;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char *after;
        long n = strtol(l, &after, 10);
        bool header = after != l && strncmp(after, " @", 2) == 0;
        if (header || !*l) {   /* a group ends where the next begins */
            w.in_fn += has_fn ? count : 0;
            w.stuck += has_fn && has_call ? count : 0;
            count = header ? (int)n : 0;
            has_fn = has_call = false;
        } else {
            has_fn |= frame_is(l, len, fn);
            has_call |= frame_is(l, len, call);
        }
        if (!*l)
            return w;
        l += len + (end != NULL);
    }
}

/* The goroutine profile as text (malloc'd). */
static char *take_profile(void)
{
    FILE *f = tmpfile();
    if (!f)
        need(-errno, "tmpfile");
    int fd = fileno(f);
    need(gort_dump_goroutines_grouped(fd), "gort_dump_goroutines_grouped");
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = size < 0 ? NULL : malloc((size_t)size + 1);
    if (!text || pread(fd, text, (size_t)size, 0) != size)
        need(-EIO, "reading the profile back");
    text[size] = '\0';
    fclose(f);
    return text;
}

/* Print the goroutine profile; store where query's and watch's goroutines
 * are.  A query whose sleep has ended but that has not reached its send
 * yet (a loaded machine) would show asleep: the profile is taken again,
 * every 10 ms for up to a second, until every goroutine in query or watch
 * is in its channel operation, and the last one taken is printed. */
static void profile(struct where *q, struct where *w)
{
    char *text = NULL;
    for (int t = 0;; t++) {
        free(text);
        text = take_profile();
        *q = count_in(text, "query", "gort_chan_send");
        *w = count_in(text, "watch", "gort_chan_recv");
        if ((q->stuck == q->in_fn && w->stuck == w->in_fn) || t == 100)
            break;
        gort_sleep(10 * 1000000LL);
    }
    fputs(text, stdout);
    free(text);
    printf("the leak: %d goroutines in query, %d in watch\n", q->in_fn,
           w->in_fn);
}

static void main_g(void *arg)
{
    (void)arg;
    int64_t start = gort_numgoroutine();
    printf("goroutines at start: %lld\n", (long long)start);
    int timeouts, unused;
    int64_t leaked = run("leaky", handle_leaky, true, &timeouts);
    int nleaky = nchans;
    struct where q, w;
    profile(&q, &w);
    int64_t fixed_leaked = run("fixed", handle_fixed, false, &unused);
    int64_t left = gort_numgoroutine();
    for (int i = nleaky; i < nchans; i++)
        need(gort_chan_free(chans[i]), "gort_chan_free");

    int n = ROUNDS * PER_ROUND;
    int64_t want = 2 * timeouts + (n - timeouts);
    check(leaked == want,
          "leaky handler: %lld goroutines leaked by %d requests (want %lld: "
          "query and watch per timed-out request, watch per answered one)",
          (long long)leaked, n, (long long)want);
    int elsewhere = (q.in_fn - q.stuck) + (w.in_fn - w.stuck);
    check(q.stuck == timeouts && w.stuck == n && elsewhere == 0,
          "the profile shows where: %d goroutines in query's channel send "
          "(want %d, one per timed-out request), %d in watch's channel "
          "receive (want %d, one per request), %s",
          q.stuck, timeouts, w.stuck, n,
          elsewhere ? "some of them elsewhere" : "none of them elsewhere");
    check(fixed_leaked == 0 && left == start + leaked,
          "fixed handler: %lld goroutines leaked by %d requests (want 0), "
          "and the %lld leaked before are still there: %lld goroutines "
          "(want %lld)", (long long)fixed_leaked, n, (long long)leaked,
          (long long)left, (long long)(start + leaked));
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-short")) {
            query_ns = 40 * 1000000LL;
            settle_ns = 60 * 1000000LL;
        } else {
            fprintf(stderr, "usage: leak [-short]\n");
            return 2;
        }
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "leak: gort_main: error %d\n", err);
        return 1;
    }
    return failed ? 1 : 0;
}
