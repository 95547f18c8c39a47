/* SPDX-License-Identifier: MIT */
/*
 * san_bugs.c - programs with one real bug each, built like san_clean.c.
 * The tool must report the bug (the tests check the report and the exit
 * status): a sanitizer that kept quiet here would make san_clean's
 * silence worthless.
 *
 *   race            two goroutines increment a plain int, no synchronisation
 *                   (run it with GORTMAXPROCS=1 too: goroutines that take
 *                   turns on one thread still race)
 *   race_after_chan the same, but each increment follows a channel
 *                   operation on a channel of its own, and the goroutines
 *                   are started together: the channels order nothing
 *   use_after_free  a goroutine reads a block another goroutine freed
 *   stack_overflow  a goroutine writes one element past a local array
 *   heap_overflow   a goroutine reads one byte past a malloc'd block
 *                   (Valgrind: an invalid read)
 *
 * Usage: san_bugs <bug>
 */
#include <gort.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bug;
static int shared; /* the raced-on variable */

struct racer {
    int id;
    gort_chan *own;
    gort_waitgroup *wg;
    int iters;
};

/* Each racer waits until the other has started, so that their increments
 * interleave (relaxed atomics: they order nothing). */
static int started[2];

static void racer(void *arg)
{
    struct racer *r = arg;
    __atomic_store_n(&started[r->id], 1, __ATOMIC_RELAXED);
    while (!__atomic_load_n(&started[1 - r->id], __ATOMIC_RELAXED))
        gort_gosched();
    for (int i = 0; i < r->iters; i++) {
        if (r->own) {
            int v = i;
            gort_chan_send(r->own, &v);
            gort_chan_recv(r->own, &v);
        }
        shared++; /* the race */
        if (i % 4 == 0)
            gort_gosched();
    }
    gort_waitgroup_done(r->wg);
}

static void race(bool with_chans)
{
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    struct racer r[2];
    for (int i = 0; i < 2; i++) {
        r[i].id = i;
        r[i].own = NULL;
        if (with_chans && gort_chan_make(&r[i].own, sizeof(int), 1) != 0)
            abort();
        r[i].wg = &wg;
        r[i].iters = 400;
    }
    gort_waitgroup_add(&wg, 2);
    gort_go(racer, &r[0]);
    gort_go(racer, &r[1]);
    gort_waitgroup_wait(&wg);
    printf("shared=%d\n", shared);
    for (int i = 0; i < 2; i++)
        gort_chan_free(r[i].own);
}

struct uaf {
    char *block;
    gort_chan *freed;
};

static void freer(void *arg)
{
    struct uaf *u = arg;
    free(u->block);
    gort_chan_send(u->freed, NULL);
}

static void use_after_free(void)
{
    struct uaf u;
    u.block = malloc(64);
    memset(u.block, 1, 64);
    if (gort_chan_make(&u.freed, 0, 0) != 0)
        abort();
    gort_go(freer, &u);
    gort_chan_recv(u.freed, NULL);
    volatile char c = u.block[10]; /* the bug */
    printf("read %d\n", c);
    gort_chan_free(u.freed);
}

static volatile int index_past = 16;

static void overflow_g(void *arg)
{
    gort_waitgroup *wg = arg;
    int cells[16];
    memset(cells, 0, sizeof cells);
    cells[index_past] = 1; /* the bug */
    printf("cell %d\n", cells[3]);
    gort_waitgroup_done(wg);
}

static void heap_g(void *arg)
{
    gort_waitgroup *wg = arg;
    char *p = malloc(24);
    memset(p, 0, 24);
    volatile char c = p[index_past + 8]; /* the bug: p[24] */
    printf("byte %d\n", c);
    free(p);
    gort_waitgroup_done(wg);
}

static void in_goroutine(void (*fn)(void *))
{
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 1);
    gort_go(fn, &wg);
    gort_waitgroup_wait(&wg);
}

static void main_g(void *arg)
{
    (void)arg;
    if (strcmp(bug, "race") == 0)
        race(false);
    else if (strcmp(bug, "race_after_chan") == 0)
        race(true);
    else if (strcmp(bug, "use_after_free") == 0)
        use_after_free();
    else if (strcmp(bug, "stack_overflow") == 0)
        in_goroutine(overflow_g);
    else if (strcmp(bug, "heap_overflow") == 0)
        in_goroutine(heap_g);
    else
        fprintf(stderr, "san_bugs: unknown bug '%s'\n", bug);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: san_bugs race|race_after_chan|"
                        "use_after_free|stack_overflow|heap_overflow\n");
        return 2;
    }
    bug = argv[1];
    return gort_main(main_g, NULL) == 0 ? 0 : 1;
}
