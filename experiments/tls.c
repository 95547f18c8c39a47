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
 * locked one 100) in the __thread variable, then 20 times in a row burns
 * a little CPU, yields (gort_gosched, even rounds) or sleeps 1 ms
 * (gort_sleep, odd rounds) and reads the variable and the thread id
 * (gettid) again.  The locked goroutine stays locked until the unlocked
 * ones are done, so that all of their reads fall while its thread is
 * wired to it.  Prints, for instance:
 *
 *     locked goroutine: stored 100 on thread 30310;
 *       after 10 yields and 10 sleeps it read 100 on thread 30310 every time
 *     unlocked goroutines: 6, each stored its own number; they ran on 5 threads;
 *       of 120 reads after a yield or a sleep, 98 found another value;
 *       for instance goroutine 1 stored 1 on thread 30313 and after sleep 1 read 5 on thread 30314
 *     check: the locked goroutine kept its thread and its value: 20 reads, 0 found another value, 1 thread (want 0 and 1): ok
 *     check: no unlocked goroutine ran on the locked goroutine's thread while it was locked: 0 of 126 reads there (want 0): ok
 *     check: without the lock the value did not follow: 98 of 120 reads found another value (want more than 0): ok
 *
 * (the counts and thread ids vary).  This is what the rule "do not keep
 * thread-local state across a gort call" is about, and what
 * gort_lock_os_thread is for (code that needs the thread: thread-local
 * state of a C library, signal masks, OpenGL contexts, setns).  Mirrors
 * the Go program that keeps a value with pthread_setspecific through cgo
 * and reads it back after runtime.Gosched and time.Sleep, with and
 * without runtime.LockOSThread.
 *
 * The checks: the locked goroutine read its own value on its own thread
 * after every yield and sleep; no other goroutine ran on that thread
 * while it was locked (each unlocked goroutine compares its thread id,
 * at its first store and after each yield or sleep, with the locked
 * thread's, published once the lock is taken); and the unlocked
 * goroutines found another value at least once.  The last is what the
 * lesson says may happen, and the run is built to make it happen: a
 * goroutine that yields lets another run on its thread and store that
 * goroutine's number there, a goroutine woken from its sleep resumes on
 * whichever thread holds a P then, and the locked goroutine's thread,
 * which holds a P whenever the locked goroutine runs, is one no other
 * goroutine may use, so that Ps keep changing threads.  The exit status is
 * 1 when a check fails, 2 on bad flags.
 *
 * Flags: -procs N (default 4), -n UNLOCKED (default 6, at most 64),
 * -rounds N (default 20), -short (the form `make test` runs: the same as
 * the defaults, which take tens of milliseconds).
 */
#include <gort.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
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
    int reads;                /* thread ids read (unlocked goroutines) */
    int intruded;             /* of those, the locked goroutine's thread */
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
static gort_waitgroup unlocked_wg; /* the unlocked goroutines' end, which
                                      the locked one waits for */
static long locked_tid; /* the locked goroutine's thread, once locked
                           (atomic) */
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

/* The calling goroutine's thread id, counted in r as a read on the
 * locked goroutine's thread when it is that thread.  The published id is
 * loaded before gettid: a nonzero value means the lock was taken before,
 * so a match means this goroutine runs on the thread while it is wired. */
static long read_tid(struct rec *r)
{
    long locked = __atomic_load_n(&locked_tid, __ATOMIC_ACQUIRE);
    long t = tid();
    r->reads++;
    r->intruded += locked != 0 && t == locked;
    return t;
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
    r->stored_tid = locked ? tid() : read_tid(r);
    if (locked)
        __atomic_store_n(&locked_tid, r->stored_tid, __ATOMIC_RELEASE);
    note_tid(r, r->stored_tid);
    long last = r->stored_tid;
    for (int k = 1; k <= rounds; k++) {
        burn();
        if (k % 2)
            gort_sleep(1000000);
        else
            gort_gosched();
        long v = tls_get(), t = locked ? tid() : read_tid(r);
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
    if (locked) {
        /* Stay wired until the others are done: every read they make
         * falls while the thread is this goroutine's alone. */
        gort_waitgroup_wait(&unlocked_wg);
        gort_unlock_os_thread();
    } else {
        gort_waitgroup_done(&unlocked_wg);
    }
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(procs);
    gort_waitgroup_add(&unlocked_wg, nunlocked);
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

    int changed = 0, reads = nunlocked * rounds, tidreads = 0, intruded = 0;
    static long tids[(MAXG + 1) * 64];  /* not on the goroutine's stack */
    int ntids = 0;
    struct rec *ex = NULL;
    int exid = 0;
    for (int i = 1; i <= nunlocked; i++) {
        struct rec *r = &recs[i];
        changed += r->changed;
        tidreads += r->reads;
        intruded += r->intruded;
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
    check(!l->changed && l->ntids == 1,
          "the locked goroutine kept its thread and its value: %d reads, %d "
          "found another value, %d thread%s (want 0 and 1)", rounds,
          l->changed, l->ntids, l->ntids == 1 ? "" : "s");
    check(intruded == 0,
          "no unlocked goroutine ran on the locked goroutine's thread while "
          "it was locked: %d of %d reads there (want 0)", intruded,
          tidreads);
    check(changed > 0,
          "without the lock the value did not follow: %d of %d reads found "
          "another value (want more than 0)", changed, reads);
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
        else if (!strcmp(argv[i], "-short"))
            i--; /* takes no value; the defaults are already short */
        else {
            fprintf(stderr, "usage: tls [-procs N] [-n UNLOCKED] "
                            "[-rounds N] [-short]\n");
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
