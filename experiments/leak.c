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
 *         pprof.Lookup("goroutine").WriteTo(os.Stdout, 2)
 *         _, fixedLeaked := run("fixed", handleFixed, 3, 3)
 *         ... the check line ...
 *     }
 *
 * where run serves 3 rounds of 3 requests, sleeps 150 ms after each round,
 * prints the goroutine count and returns how much it grew.  Output
 * (goroutine ids, addresses and the order of the dump vary):
 *
 *     goroutines at start: 1
 *     leaky handler:
 *       after 3 requests (3 timed out): 7 goroutines
 *       after 6 requests (6 timed out): 13 goroutines
 *       after 9 requests (9 timed out): 19 goroutines
 *     goroutine 1 [running]:
 *     main goroutine running 0x... (main_g+0x0)
 *
 *     goroutine 2 [chan send]:
 *     waiting on 0x...   (its results channel)
 *     started as 0x... (query+0x0), created at 0x... (handle_leaky+0x48)
 *
 *     goroutine 3 [chan receive]:
 *     waiting on 0x...   (its done channel)
 *     started as 0x... (watch+0x0), created at 0x... (handle_leaky+0x73)
 *     ...                        (18 leaked goroutines in all)
 *     the dump grouped by wait and function:
 *       9 [chan send] query
 *       9 [chan receive] watch
 *       1 [running] main_g
 *     fixed handler:
 *       after 3 requests (3 timed out): 19 goroutines
 *       after 6 requests (6 timed out): 19 goroutines
 *       after 9 requests (9 timed out): 19 goroutines
 *     check: leaky handler: 18 goroutines leaked by 9 requests; fixed handler: none: ok
 *
 * The grouped lines are what `go tool pprof` shows for a goroutine
 * profile: many goroutines parked at the same place are the leak.  The
 * fixed handler's count stays at 19, not 1: nothing, in Go either, can end
 * a goroutine blocked forever, so the 18 leaked ones stay until the program
 * exits.  The exit status is 0 only when the leaky handler leaked exactly
 * its two goroutines per timed-out request (one, watch, should query have
 * answered in time) and the fixed handler none.
 *
 * Go's garbage collector frees a channel once no goroutine can reach it.
 * Here main keeps every channel in a table: the fixed handler's channels
 * are freed once their goroutines have returned, the leaked ones stay
 * allocated (and reachable) until exit.
 *
 * The dump names functions through the dynamic symbol table, so the
 * program is linked with its symbols exported, and the goroutine functions
 * (main_g included) and the handlers that start them are not static.
 */
#include <errno.h>
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 3
#define PER_ROUND 3
/* query answers 50 times later than the handlers wait, so that a handler
 * slowed down between starting query and waiting (a loaded machine, a
 * sanitizer build) still gives up first; the pause after a round outlasts
 * query, so that the dump finds every leaked query in its send. */
#define QUERY_NS (100 * 1000000LL)  /* query's answer time: 100 ms */
#define TIMEOUT_NS (2 * 1000000LL)  /* the handlers' patience: 2 ms */
#define SETTLE_NS (150 * 1000000LL) /* pause after a round: 150 ms */

/* Two channels per request, both handlers. */
#define MAXCHANS (2 * 2 * ROUNDS * PER_ROUND)
static gort_chan *chans[MAXCHANS];
static int nchans;          /* main only */
static int failed;          /* main only */

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

void query(void *arg)
{
    gort_chan *results = arg;
    gort_sleep(QUERY_NS);
    int v = 42;
    gort_chan_send(results, &v);
}

void watch(void *arg)
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

int handle_leaky(int *v)
{
    gort_chan *results = makechan(sizeof(int), 0);
    gort_chan *done = makechan(0, 0);
    need(gort_go(query, results), "gort_go");
    need(gort_go(watch, done), "gort_go");
    return await(results, v);
}

int handle_fixed(int *v)
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
        gort_sleep(SETTLE_NS);
        for (int t = 0; t < 1000 && gort_numgoroutine() != want; t++)
            gort_sleep(1000000);
        g = gort_numgoroutine();
        printf("  after %d requests (%d timed out): %lld goroutines\n",
               r * PER_ROUND, *timeouts, (long long)g);
    }
    return g - base;
}

/* One group of the dump: goroutines with the same wait and function. */
struct group {
    char what[64];
    char fn[64];
    int n;
};

/* Copy the text between open and close (exclusive) after *s into buf. */
static bool between(const char *s, char open, const char *close, char *buf,
                    size_t len)
{
    const char *a = strchr(s, open);
    if (!a)
        return false;
    a++;
    size_t n = strcspn(a, close);
    if (n >= len)
        n = len - 1;
    memcpy(buf, a, n);
    buf[n] = '\0';
    return true;
}

/*
 * Dump every goroutine into a temporary file and count them by wait reason
 * (the bracket of "goroutine N [chan send]:", without ", M minutes") and
 * start function (the name in the parentheses of the "started as" or
 * "main goroutine running" line that follows), most frequent first.
 */
static void dump_grouped(void)
{
    FILE *f = tmpfile();
    if (!f)
        need(-errno, "tmpfile");
    gort_dump_goroutines(fileno(f));
    rewind(f);
    struct group groups[16];
    int ngroups = 0;
    char line[512], what[64] = "";
    bool header = false;
    while (fgets(line, sizeof line, f)) {
        char fn[64];
        if (!strncmp(line, "goroutine ", 10)) {
            header = between(line, '[', ",]", what, sizeof what);
            continue;
        }
        if (!header || (strncmp(line, "started as ", 11) &&
                        strncmp(line, "main goroutine ", 15)) ||
            !between(line, '(', "+)", fn, sizeof fn))
            continue;
        header = false;
        int i = 0;
        while (i < ngroups && (strcmp(groups[i].what, what) ||
                               strcmp(groups[i].fn, fn)))
            i++;
        if (i == ngroups && ngroups < 16) {
            snprintf(groups[i].what, sizeof groups[i].what, "%s", what);
            snprintf(groups[i].fn, sizeof groups[i].fn, "%s", fn);
            groups[i].n = 0;
            ngroups++;
        }
        if (i < ngroups)
            groups[i].n++;
    }
    fclose(f);
    printf("the dump grouped by wait and function:\n");
    for (int printed = 0; printed < ngroups; printed++) {
        int best = -1;
        for (int i = 0; i < ngroups; i++)
            if (groups[i].n > 0 && (best < 0 || groups[i].n > groups[best].n))
                best = i;
        printf("  %d [%s] %s\n", groups[best].n, groups[best].what,
               groups[best].fn);
        groups[best].n = -groups[best].n;
    }
}

void main_g(void *arg)
{
    (void)arg;
    printf("goroutines at start: %lld\n", (long long)gort_numgoroutine());
    int timeouts, unused;
    int64_t leaked = run("leaky", handle_leaky, true, &timeouts);
    int nleaky = nchans;
    fflush(stdout);
    gort_dump_goroutines(1);
    dump_grouped();
    int64_t fixed_leaked = run("fixed", handle_fixed, false, &unused);
    for (int i = nleaky; i < nchans; i++)
        need(gort_chan_free(chans[i]), "gort_chan_free");
    /* query and watch per timed-out request, watch per answered one */
    int n = ROUNDS * PER_ROUND;
    if (leaked != 2 * timeouts + (n - timeouts) || fixed_leaked != 0) {
        printf("check: FAIL\n");
        failed = 1;
        return;
    }
    printf("check: leaky handler: %lld goroutines leaked by %d requests; "
           "fixed handler: none: ok\n", (long long)leaked, n);
}

int main(void)
{
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "leak: gort_main: error %d\n", err);
        return 1;
    }
    return failed ? 1 : 0;
}
