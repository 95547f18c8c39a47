/* SPDX-License-Identifier: MIT */
/*
 * tls - thread-local storage seen from goroutines, with and without
 * gort_lock_os_thread.
 *
 * A __thread variable belongs to an OS thread, not to a goroutine.  A
 * goroutine may resume on another thread after any call into gort, and then
 * it reads that thread's copy: whatever the goroutine that ran there last
 * stored, or 0 on a thread where nobody stored anything.  Wiring the
 * goroutine to its thread with gort_lock_os_thread keeps it on the thread
 * whose copy it set (and keeps every other goroutine off that thread).
 *
 * GOMAXPROCS=4 (on any number of cores).  One locked goroutine and six
 * unlocked ones run at the same time.  Each stores its own number (the
 * locked one 100) in the __thread variable, then 20 times in a row burns a little CPU, yields
 * (gort_gosched, even rounds) or sleeps 1 ms (gort_sleep, odd rounds) and
 * reads the variable and the thread id (gettid) again.  Prints, for
 * instance:
 *
 *     locked goroutine: stored 100 on thread 16430;
 *       after 10 yields and 10 sleeps it read 100 on thread 16430 every time
 *     unlocked goroutines: 6, each stored its own number; they ran on 6 threads;
 *       of 120 reads after a yield or a sleep, 101 found another value;
 *       for instance goroutine 1 stored 1 on thread 16434 and after sleep 1 read 2 on thread 16436
 *     check: the locked goroutine kept its thread and its value: ok
 *
 * (the counts and thread ids vary).  This is what the rule "do not keep
 * thread-local state across a gort call" is about, and what
 * gort_lock_os_thread is for (code that needs the thread: thread-local
 * state of a C library, signal masks, OpenGL contexts, setns).  Mirrors
 * the Go program that keeps a value with pthread_setspecific through cgo
 * and reads it back after runtime.Gosched and time.Sleep, with and
 * without runtime.LockOSThread.  The exit status is 1 when the locked
 * goroutine saw its thread or its value change.
 *
 * Flags: -procs N (default 4), -n UNLOCKED (default 6), -rounds N
 * (default 20).
 */
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flags.h"

#define MAXG 64

static int procs = 4, nunlocked = 6, rounds = 20;

static __thread long tls_value;

/*
 * Every access goes through a function the compiler may neither inline nor
 * analyse: within one function a compiler may compute the address of a
 * __thread variable once and keep it across calls (the thread pointer
 * does not change in a program without goroutines), which would hide the
 * very change this program shows.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define OPAQUE __attribute__((noinline, noipa))
#else
#define OPAQUE __attribute__((noinline, optnone))
#endif

static OPAQUE long tls_get(void) { return tls_value; }
static OPAQUE void tls_set(long v) { tls_value = v; }
static OPAQUE long tid(void) { return (long)syscall(SYS_gettid); }

struct rec {
    long stored, stored_tid;  /* what it stored, and on which thread */
    int changed;              /* reads that found another value */
    int moved;                /* reads on another thread than the last */
    long tids[64];            /* the distinct threads it ran on */
    int ntids;
    /* the first read that found another value */
    int first_round;          /* 0: none */
    long first_value, first_tid;
};

static struct rec recs[MAXG + 1];  /* [0] the locked goroutine */
static gort_waitgroup wg;
static volatile uint64_t sink;

/* About 50 µs of CPU, so that the Ps stay busy and goroutines get stolen. */
static void burn(void)
{
    uint64_t s = 0;
    int64_t end = gort_nanotime() + 50000;
    while (gort_nanotime() < end)
        for (int i = 0; i < 200; i++)
            s += (uint64_t)i ^ ((uint64_t)i >> 3);
    /* Relaxed: several goroutines store it; only that it is stored
     * matters (the loop must not be optimised away). */
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
}

static void note_tid(struct rec *r, long t)
{
    for (int i = 0; i < r->ntids; i++)
        if (r->tids[i] == t)
            return;
    if (r->ntids < 64)
        r->tids[r->ntids++] = t;
}

static void worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    struct rec *r = &recs[id];
    bool locked = id == 0;
    long want = locked ? 100 : id;

    if (locked)
        gort_lock_os_thread();
    tls_set(want);
    r->stored = want;
    r->stored_tid = tid();
    note_tid(r, r->stored_tid);
    long last = r->stored_tid;
    for (int k = 1; k <= rounds; k++) {
        burn();
        if (k % 2)
            gort_sleep(1000000);
        else
            gort_gosched();
        long v = tls_get(), t = tid();
        note_tid(r, t);
        r->moved += t != last;
        last = t;
        if (v != want) {
            r->changed++;
            if (!r->first_round) {
                r->first_round = k;
                r->first_value = v;
                r->first_tid = t;
            }
            tls_set(want);  /* store it again on this thread */
        }
    }
    if (locked)
        gort_unlock_os_thread();
    gort_waitgroup_done(&wg);
}

static int failed;

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    gort_waitgroup_add(&wg, nunlocked + 1);
    for (int i = 0; i <= nunlocked; i++)
        gort_go(worker, (void *)(intptr_t)i);
    gort_waitgroup_wait(&wg);

    int nsleeps = (rounds + 1) / 2, nyields = rounds / 2;
    struct rec *l = &recs[0];
    printf("locked goroutine: stored %ld on thread %ld;\n  after %d yields "
           "and %d sleeps ", l->stored, l->stored_tid, nyields, nsleeps);
    if (!l->changed && l->ntids == 1)
        printf("it read %ld on thread %ld every time\n", l->stored,
               l->stored_tid);
    else
        printf("it read another value %d times and ran on %d threads\n",
               l->changed, l->ntids);

    int changed = 0, reads = nunlocked * rounds;
    static long tids[(MAXG + 1) * 64];  /* not on the goroutine's stack */
    int ntids = 0;
    struct rec *ex = NULL;
    int exid = 0;
    for (int i = 1; i <= nunlocked; i++) {
        struct rec *r = &recs[i];
        changed += r->changed;
        if (r->changed && !ex) {
            ex = r;
            exid = i;
        }
        for (int j = 0; j < r->ntids; j++) {
            int k = 0;
            while (k < ntids && tids[k] != r->tids[j])
                k++;
            if (k == ntids)
                tids[ntids++] = r->tids[j];
        }
    }
    printf("unlocked goroutines: %d, each stored its own number; they ran "
           "on %d threads;\n  of %d reads after a yield or a sleep, %d found "
           "another value", nunlocked, ntids, reads, changed);
    if (ex)
        printf(";\n  for instance goroutine %d stored %ld on thread %ld and "
               "after %s %d read %ld on thread %ld\n", exid, ex->stored,
               ex->stored_tid, ex->first_round % 2 ? "sleep" : "yield",
               ex->first_round, ex->first_value, ex->first_tid);
    else
        printf("\n  (no goroutine changed thread this time: run it again)\n");
    failed = l->changed || l->ntids != 1;
    printf("check: the locked goroutine kept its thread and its value: %s\n",
           failed ? "FAIL" : "ok");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-procs"))
            procs = intflag("tls", "-procs", v, 1);
        else if (!strcmp(argv[i], "-n"))
            nunlocked = intflag("tls", "-n", v, 1);
        else if (!strcmp(argv[i], "-rounds"))
            rounds = intflag("tls", "-rounds", v, 1);
        else {
            fprintf(stderr, "usage: tls [-procs N] [-n UNLOCKED] "
                            "[-rounds N]\n");
            return 2;
        }
    }
    if (nunlocked > MAXG) {
        fprintf(stderr, "tls: -n wants at most %d\n", MAXG);
        return 2;
    }
    int err = gort_main(main_g, NULL);
    if (err < 0) {
        fprintf(stderr, "tls: gort_main: error %d\n", err);
        return 1;
    }
    return failed ? 1 : 0;
}
