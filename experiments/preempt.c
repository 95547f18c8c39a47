/* SPDX-License-Identifier: MIT */
/*
 * preempt - a tight loop without calls, and who gets the CPU back from it.
 *
 * A loop that calls nothing (no gort call, no library call) gives the
 * scheduler no point at which to switch goroutines cooperatively.  gort,
 * like Go since 1.14, interrupts such a goroutine with a signal once it has
 * run 10 ms and makes it yield at a safe point.  Three phases:
 *
 *   1. spin alone: the main goroutine runs the loop once, to calibrate it
 *      to about 300 ms, and prints how long it took.
 *   2. One P: main starts a goroutine running the loop and asks to sleep
 *      1 ms.  The spinner takes the only P as main parks; main's timer
 *      expires after 1 ms, but main can run again only when the spinner
 *      lets go of the P: after about 10 ms when it is preempted, after the
 *      whole loop when it is not.
 *   3. Two Ps: main starts two spinners (the second loops twice as long)
 *      and sleeps 20 ms, so that each spinner holds one P.  Once main is
 *      running again it changes GOMAXPROCS from 2 to 3, which stops the
 *      world: every P must be taken from its goroutine, so the change waits
 *      for the spinner still running on the other P.  With preemption that
 *      is a signal away; without it, it is the rest of that loop.
 *
 * Mirrors the Go program
 *
 *     func spin(n int) { // no calls, no allocation: no cooperative point
 *         s := 0
 *         for i := 0; i < n; i++ {
 *             s += i ^ (i >> 3)
 *         }
 *         sink = s
 *     }
 *
 *     func main() {
 *         ... spin alone, print how long it took ...
 *         runtime.GOMAXPROCS(1)
 *         done := make(chan struct{})
 *         go func() { spin(n); close(done) }()
 *         t := time.Now()
 *         time.Sleep(time.Millisecond)
 *         fmt.Printf("GOMAXPROCS=1: main asked for 1ms, woke after %v\n",
 *             time.Since(t))
 *         <-done
 *         runtime.GOMAXPROCS(2)
 *         go spinner(n); go spinner(2 * n)
 *         time.Sleep(20 * time.Millisecond)
 *         t = time.Now()
 *         runtime.GOMAXPROCS(3) // stop-the-world
 *         ... print how long the change took ...
 *     }
 *
 * and prints (times vary from run to run):
 *
 *     spin alone: 243.4ms
 *     GOMAXPROCS=1: main asked for 1ms, woke after 7.9ms
 *     GOMAXPROCS=2, two spinners: main asked for 20ms, woke after 20.8ms;
 *       GOMAXPROCS(3) (stop-the-world) took 288.1µs
 *
 * Run it again with asynchronous preemption off to see the difference:
 *
 *     $ GORTDEBUG=asyncpreemptoff=1 build/experiments/preempt
 *     spin alone: 300.6ms
 *     GOMAXPROCS=1: main asked for 1ms, woke after 298.7ms
 *     GOMAXPROCS=2, two spinners: main asked for 20ms, woke after 511.9ms;
 *       GOMAXPROCS(3) (stop-the-world) took 163ms
 *
 * On one P main now wakes only when the loop ends.  On two Ps it wakes
 * when the shorter spinner ends and frees a P, and the GOMAXPROCS change
 * then waits for the longer one to end.  (Two spinners on a 2-core machine
 * that runs other work as well get less than a core each, so their loops
 * take longer than "spin alone".)
 *
 * Flags: -spin-ms MS (the loop's calibrated length, default 300).
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"

static int spin_ms = 300;
static uint64_t iters;          /* the loop's length, calibrated by main */
static volatile uint64_t sink;  /* keeps the loop from being optimised away */
static gort_waitgroup wg;

/* The tight loop: no calls at all, only arithmetic on registers. */
static __attribute__((noinline)) void spin(uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; i++)
        s += i ^ (i >> 3);
    sink = s;
}

static void spinner(void *arg)
{
    spin((uint64_t)(uintptr_t)arg);
    gort_waitgroup_done(&wg);
}

/* A duration as Go prints it, to one decimal: 301ms, 11.4ms, 52µs, 740ns. */
static const char *dur(int64_t ns, char *buf, size_t len)
{
    static const struct { int64_t scale; const char *unit; } u[] = {
        {1000000000, "s"}, {1000000, "ms"}, {1000, "\xc2\xb5s"}, {1, "ns"},
    };
    int i = 0;
    while (i < 3 && ns < u[i].scale)
        i++;
    double v = (double)ns / (double)u[i].scale;
    snprintf(buf, len, "%.1f", v);
    size_t n = strlen(buf);
    if (n > 2 && !strcmp(buf + n - 2, ".0"))
        buf[n - 2] = '\0';
    snprintf(buf + strlen(buf), len - strlen(buf), "%s", u[i].unit);
    return buf;
}

/* Find how many iterations take spin_ms: double until the loop takes at
 * least 30 ms, then scale. */
static void calibrate(void)
{
    uint64_t n = 1 << 20;
    int64_t ns;
    for (;;) {
        int64_t t0 = gort_nanotime();
        spin(n);
        ns = gort_nanotime() - t0;
        if (ns >= 30 * 1000000LL || n >= (1ULL << 40))
            break;
        n *= 2;
    }
    iters = (uint64_t)((double)n * (double)spin_ms * 1e6 / (double)ns);
    if (iters == 0)
        iters = 1;
}

static void main_g(void *arg)
{
    (void)arg;
    char b1[32], b2[32];

    gort_gomaxprocs(1);
    calibrate();
    int64_t t0 = gort_nanotime();
    spin(iters);
    printf("spin alone: %s\n", dur(gort_nanotime() - t0, b1, sizeof b1));
    fflush(stdout);

    /* One P: the spinner goes into runnext and runs as soon as main parks. */
    gort_waitgroup_add(&wg, 1);
    gort_go(spinner, (void *)(uintptr_t)iters);
    t0 = gort_nanotime();
    gort_sleep(1000000);
    int64_t woke = gort_nanotime() - t0;
    printf("GOMAXPROCS=1: main asked for 1ms, woke after %s\n",
           dur(woke, b1, sizeof b1));
    fflush(stdout);
    gort_waitgroup_wait(&wg);

    /* Two Ps, two spinners: each ends up on its own P while main sleeps. */
    gort_gomaxprocs(2);
    gort_waitgroup_add(&wg, 2);
    gort_go(spinner, (void *)(uintptr_t)iters);
    gort_go(spinner, (void *)(uintptr_t)(2 * iters));
    t0 = gort_nanotime();
    gort_sleep(20 * 1000000LL);
    woke = gort_nanotime() - t0;
    int64_t t1 = gort_nanotime();
    gort_gomaxprocs(3);  /* stop-the-world, resize, start the world */
    int64_t took = gort_nanotime() - t1;
    printf("GOMAXPROCS=2, two spinners: main asked for 20ms, woke after %s;\n"
           "  GOMAXPROCS(3) (stop-the-world) took %s\n",
           dur(woke, b1, sizeof b1), dur(took, b2, sizeof b2));
    fflush(stdout);
    gort_waitgroup_wait(&wg);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-spin-ms"))
            spin_ms = intflag("preempt", "-spin-ms", v, 1);
        else {
            fprintf(stderr, "usage: preempt [-spin-ms MS]\n"
                            "  GORTDEBUG=asyncpreemptoff=1 turns preemption "
                            "by signal off\n");
            return 2;
        }
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "preempt: gort_main: error %d\n", err);
        return 1;
    }
    return 0;
}
