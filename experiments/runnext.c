/* SPDX-License-Identifier: MIT */
/*
 * runnext - the classic runnext experiment on Go's scheduler.
 *
 * With one P, main starts goroutines 1..10 and waits.  Each new goroutine
 * goes into runnext, kicking the previous one to the tail of the local
 * ring, so when main parks the newest (10) runs first and the rest run in
 * FIFO order:
 *
 *     run order: [10 1 2 3 4 5 6 7 8 9]
 *
 * Run with GORTDEBUG=randomize=1 to see the order shuffled, as Go's race
 * detector build does.
 */
#include <gort.h>
#include <stdio.h>

static int order[10];
static int norder;
static gort_waitgroup wg;

static void record(void *arg)
{
    int i = (int)(intptr_t)arg;
    int slot = __atomic_fetch_add(&norder, 1, __ATOMIC_RELAXED);
    order[slot] = i;
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(1);
    for (int i = 1; i <= 10; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(record, (void *)(intptr_t)i);
    }
    gort_waitgroup_wait(&wg); /* main parks; the only P picks the next G */
    printf("run order: [");
    for (int i = 0; i < norder; i++)
        printf(i ? " %d" : "%d", order[i]);
    printf("]\n");
}

int main(void)
{
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "runnext: gort_main: error %d\n", err);
        return 1;
    }
    return 0;
}
