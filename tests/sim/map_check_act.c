/* SPDX-License-Identifier: MIT */
/*
 * map_check_act.c - check-then-act on a shared map.
 *
 * Two workers look up connections by key in a cache guarded by a mutex,
 * opening and inserting the connection when the key is missing.  The
 * lookup and the insert take the lock separately: when the other worker
 * inserts the same key between the two, the key ends up in the map twice
 * (two connections opened, one of them lost).  The end checks that every
 * key is there once.
 *
 * The fix: hold the lock from the lookup to the insert (or look up again
 * under the lock before inserting).
 */
#include "planted.h"

#define KEYS 60

static gort_mutex mu = GORT_MUTEX_INIT;
static int map_key[2 * KEYS];
static int map_len;
static int opened;
static gort_waitgroup wg;

static int find(int key)
{
    for (int i = 0; i < map_len; i++)
        if (map_key[i] == key)
            return i;
    return -1;
}

static void get_or_open(int key)
{
    gort_mutex_lock(&mu);
    int at = find(key);
    gort_mutex_unlock(&mu);
    if (at >= 0)
        return;
    /* BUG: the key may be inserted by the other worker from here on. */
    gort_mutex_lock(&mu);
    opened++;
    map_key[map_len++] = key;
    gort_mutex_unlock(&mu);
}

static void worker(void *arg)
{
    (void)arg;
    for (int k = 0; k < KEYS; k++)
        get_or_open(k);
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, 2);
    gort_go(worker, NULL);
    gort_go(worker, NULL);
    gort_waitgroup_wait(&wg);
    NOTE("%d entries, %d opened", map_len, opened);
    for (int k = 0; k < KEYS; k++) {
        int n = 0;
        for (int i = 0; i < map_len; i++)
            n += map_key[i] == k;
        BUG_IF_NOT(n == 1, "key %d is in the map %d times", k, n);
    }
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
