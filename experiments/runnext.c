/* SPDX-License-Identifier: MIT */
/*
 * runnext - the classic runnext experiment on Go's scheduler.
 *
 * With one P, main starts goroutines 1..10 and waits.  Each new goroutine
 * goes into runnext, kicking the previous one to the tail of the local
 * ring, so when main parks the newest (10) runs first and the rest run in
 * FIFO order.  The program does this in three rounds, as the lesson runs
 * its program three times, and prints each round's order:
 *
 *     run order: [10 1 2 3 4 5 6 7 8 9]
 *     run order: [10 1 2 3 4 5 6 7 8 9]
 *     run order: [10 1 2 3 4 5 6 7 8 9]
 *     check: every goroutine ran exactly once in 3 of 3 rounds: ok
 *     check: the newest ran first and the rest in FIFO order
 *       ([10 1 2 3 4 5 6 7 8 9]) in 3 of 3 rounds: ok
 *
 * Mirrors the Go program
 *
 *     runtime.GOMAXPROCS(1)
 *     for i := 1; i <= 10; i++ {
 *         wg.Go(func() { mu.Lock(); order = append(order, i); mu.Unlock() })
 *     }
 *     wg.Wait() // main parks; the only P picks the next G
 *
 * Run with GORTDEBUG=randomize=1 to see the order shuffled, as Go's race
 * detector build does: a put skips runnext half the time.  The program
 * reads GORTDEBUG, and with randomize on it checks instead that some round
 * came out in another order than runnext's.  A round comes out in
 * runnext's order only when every goroutine after the first to take
 * runnext takes it too, and 10 does: a chance of 10 in 1024, so all of 3
 * rounds do about once in a million runs:
 *
 *     check: the order differed from runnext's ([10 1 2 3 4 5 6 7 8 9])
 *       in 3 of 3 rounds with randomize on (want at least 1): ok
 *
 * A round in which the runtime preempted a goroutine (main can be, while
 * it starts the ten, when its thread waits more than 10 ms for a CPU) is
 * shown, marked, and run again: the preempted goroutine goes to the
 * global queue and the order is then another one, which says nothing
 * about runnext.  The preemptions are read from
 * /gort/sched/preemptions/{async,sync}:events around the round.  At most
 * as many rounds as asked for are run again; past that a preempted round
 * is judged like the others (and its order may then fail the check).
 *
 * Flags: -rounds N (default 3), -short (the form `make test` runs; the
 * same as the full form, which takes milliseconds).  Exits 1 when a check
 * fails, 2 on bad flags.
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flags.h"

#define NG 10

static int order[NG];
static int norder;
static gort_waitgroup wg;
static int rounds = 3;

static void record(void *arg)
{
    int i = (int)(intptr_t)arg;
    int slot = __atomic_fetch_add(&norder, 1, __ATOMIC_RELAXED);
    if (slot < NG)
        order[slot] = i;
    gort_waitgroup_done(&wg);
}

/* Whether GORTDEBUG turns randomize on: as the runtime reads it, the last
 * valid randomize entry (0 or 1) wins and any other value is ignored. */
static bool randomize_on(void)
{
    const char *s = getenv("GORTDEBUG");
    bool on = false;
    for (const char *p = s; p && (p = strstr(p, "randomize")); p++) {
        if (p != s && p[-1] != ',' && p[-1] != ' ')
            continue;
        const char *v = p + strlen("randomize");
        while (*v == ' ')
            v++;
        if (*v++ != '=')
            continue;
        while (*v == ' ')
            v++;
        char *end;
        unsigned long x = strtoul(v, &end, 10);
        while (*end == ' ')
            end++;
        if (end != v && *v != '-' && *v != '+' && x <= 1 &&
            (*end == '\0' || *end == ','))
            on = x == 1;
    }
    return on;
}

/* Preemptions so far, async and sync. */
static uint64_t preemptions(void)
{
    gort_metric_sample s[2] = {
        {.name = "/gort/sched/preemptions/async:events"},
        {.name = "/gort/sched/preemptions/sync:events"},
    };
    if (gort_metrics_read(s, 2) != 0 || s[0].kind != GORT_METRIC_UINT64 ||
        s[1].kind != GORT_METRIC_UINT64) {
        printf("runnext: cannot read the preemption counters\n");
        exit(1);
    }
    return s[0].u64 + s[1].u64;
}

/* One round: start 1..NG and park until they have run.  Returns whether
 * a goroutine was preempted meanwhile. */
static bool round_(void)
{
    norder = 0;
    memset(order, 0, sizeof order);
    uint64_t p0 = preemptions();
    for (int i = 1; i <= NG; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(record, (void *)(intptr_t)i);
    }
    gort_waitgroup_wait(&wg); /* main parks; the only P picks the next G */
    return preemptions() != p0;
}

static void print_order(const char *note)
{
    printf("run order: [");
    for (int i = 0; i < norder && i < NG; i++)
        printf(i ? " %d" : "%d", order[i]);
    printf("]%s\n", note);
}

/* Each of 1..NG once. */
static bool each_once(void)
{
    bool seen[NG + 1] = {false};
    if (norder != NG)
        return false;
    for (int i = 0; i < NG; i++) {
        if (order[i] < 1 || order[i] > NG || seen[order[i]])
            return false;
        seen[order[i]] = true;
    }
    return true;
}

/* [NG 1 2 ... NG-1]: the newest from runnext, then the ring in FIFO. */
static bool runnext_order(void)
{
    if (norder != NG || order[0] != NG)
        return false;
    for (int i = 1; i < NG; i++)
        if (order[i] != i)
            return false;
    return true;
}

static void main_g(void *arg)
{
    (void)arg;
    bool random = randomize_on();
    gort_gomaxprocs(1);
    int judged = 0, once = 0, inorder = 0, retries = 0;
    while (judged < rounds) {
        bool preempted = round_();
        /* With randomize the order is shuffled anyway: no retries. */
        if (preempted && !random && retries < rounds) {
            retries++;
            print_order("  (a goroutine was preempted: not judged, run "
                        "again)");
            continue;
        }
        print_order("");
        judged++;
        once += each_once();
        inorder += runnext_order();
    }
    check(once == rounds,
          "every goroutine ran exactly once in %d of %d rounds", once,
          rounds);
    if (random)
        check(inorder < rounds,
              "the order differed from runnext's ([10 1 2 3 4 5 6 7 8 9]) in "
              "%d of %d rounds with randomize on (want at least 1)",
              rounds - inorder, rounds);
    else
        check(inorder == rounds,
              "the newest ran first and the rest in FIFO order "
              "([10 1 2 3 4 5 6 7 8 9]) in %d of %d rounds",
              inorder, rounds);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-rounds") == 0 && i + 1 < argc)
            rounds = intflag(argv[0], "-rounds", argv[++i], 1);
        else if (strcmp(argv[i], "-short") == 0)
            ; /* the full form is already short */
        else {
            fprintf(stderr,
                    "usage: %s [-rounds N] [-short]\n"
                    "  (unknown or incomplete flag: %s)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "runnext: gort_main: error %d\n", err);
        return 1;
    }
    return failed;
}
