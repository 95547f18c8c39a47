/*
 * gort.h - the public interface of gort, Go's goroutine scheduler for C.
 *
 * A program hands its main function to gort_main(), which boots the runtime
 * on the calling thread, runs that function as the main goroutine and shuts
 * everything down when it returns.  Inside, gort_go() starts goroutines that
 * the runtime multiplexes over GOMAXPROCS processors (P) and as many OS
 * threads (M) as it needs, exactly as Go's runtime does.
 *
 * Conventions:
 *   - Functions that can fail at run time return 0 (or a non-negative value)
 *     on success and a negative errno on failure.  errno is never used to
 *     report errors.
 *   - Misuse that Go answers with a panic (for example a negative WaitGroup
 *     counter) is a fatal error: "gort: fatal error: <what>" on stderr, a
 *     dump of every goroutine, then abort().
 *   - Unless stated otherwise a function must be called from a goroutine,
 *     that is from code running under gort_main().
 *
 * Migration: a goroutine may resume on another OS thread after any call
 * into gort.  Do not keep the address of a __thread variable across such a
 * call; pin the goroutine with gort_lock_os_thread() when code depends on
 * thread identity.
 */
#ifndef GORT_H
#define GORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GORT_EXTERN __attribute__((visibility("default")))
#else
#define GORT_EXTERN
#endif

#define GORT_VERSION_MAJOR 0
#define GORT_VERSION_MINOR 1

/* ---------------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------------- */

/*
 * Boot the runtime on the calling thread (it becomes M0), run fn(arg) as the
 * main goroutine (goid 1) and return when it returns, after stopping every
 * thread the runtime started and freeing everything it allocated.  Other
 * goroutines still alive when main returns are discarded, as in Go.
 *
 * Returns 0, or a negative errno when the runtime could not start (-EBUSY if
 * called while a gort_main is already running, -ENOMEM, -EAGAIN).  May be
 * called again after it returns.
 *
 * Reads GORTMAXPROCS, GORTDEBUG and GORTSTACKSIZE from the environment; a
 * malformed value is reported on stderr and the default is used.
 */
GORT_EXTERN int gort_main(void (*fn)(void *), void *arg);

/* ---------------------------------------------------------------------------
 * Goroutines
 * ------------------------------------------------------------------------- */

/*
 * Start a goroutine running fn(arg).  The new goroutine goes into the
 * current P's runnext slot, so it usually runs next (Go's behaviour).
 * Returns its goroutine id (> 0), or -ENOMEM when no stack could be had.
 */
GORT_EXTERN int64_t gort_go(void (*fn)(void *), void *arg);

/* Yield the processor: the caller goes to the global run queue and another
 * goroutine runs.  Mirrors runtime.Gosched. */
GORT_EXTERN void gort_gosched(void);

/* The calling goroutine's id (main is 1), or 0 when called outside a
 * goroutine. */
GORT_EXTERN int64_t gort_goid(void);

/*
 * Register fn(arg) to run when the calling goroutine ends, by returning or
 * by gort_goexit().  Handlers run last-registered first, like Go's defer.
 * Returns 0 or -ENOMEM.
 */
GORT_EXTERN int gort_defer(void (*fn)(void *), void *arg);

/*
 * End the calling goroutine after running its deferred handlers.  In the
 * main goroutine the program goes on with the other goroutines; when none is
 * left this is the fatal error "no goroutines (main called runtime.Goexit) -
 * deadlock!", as in Go.  Mirrors runtime.Goexit.
 */
GORT_EXTERN _Noreturn void gort_goexit(void);

/*
 * Query or set GOMAXPROCS.  n <= 0 only returns the current value; n > 0
 * sets it (capped at GORT_MAX_PROCS) under stop-the-world and returns the
 * previous value.  Goroutines queued on removed processors move to the
 * global run queue.
 */
#define GORT_MAX_PROCS 1024
GORT_EXTERN int gort_gomaxprocs(int n);

/* Number of goroutines that exist now (runnable, running or waiting). */
GORT_EXTERN int64_t gort_numgoroutine(void);

/* Monotonic clock in nanoseconds.  Callable from any thread. */
GORT_EXTERN int64_t gort_nanotime(void);

/* ---------------------------------------------------------------------------
 * Settings (call before gort_main; they also have environment forms)
 * ------------------------------------------------------------------------- */

#define GORT_MIN_STACK_SIZE (16 * 1024)
#define GORT_DEFAULT_STACK_SIZE (64 * 1024)

/*
 * Usable virtual size of every goroutine stack (a guard region lies below
 * it and is not counted).  Pages are committed only when touched.  Returns 0, -EINVAL when size is below
 * GORT_MIN_STACK_SIZE or above 1 GiB, or -EBUSY while the runtime runs.
 * Environment: GORTSTACKSIZE=bytes (suffixes k, m).
 */
GORT_EXTERN int gort_set_stack_size(size_t size);

/*
 * Upper bound on OS threads the runtime may create (default 10000, as Go's
 * debug.SetMaxThreads).  Going past it is a fatal error.  Returns the
 * previous limit, or -EINVAL for n < 1.
 */
GORT_EXTERN int gort_set_max_threads(int n);

/* ---------------------------------------------------------------------------
 * Waiting: wait groups (the sync package proper comes with the channels)
 * ------------------------------------------------------------------------- */

/* A WaitGroup.  Zero-initialise it (GORT_WAITGROUP_INIT or memset). */
typedef struct gort_waitgroup {
    uint64_t state;  /* high 32 bits: counter, low 32 bits: waiters */
    uint32_t sema;   /* the address waiters park on */
} gort_waitgroup;
#define GORT_WAITGROUP_INIT {0, 0}

/* Add delta to the counter; a negative result is a fatal error. */
GORT_EXTERN void gort_waitgroup_add(gort_waitgroup *wg, int delta);
GORT_EXTERN void gort_waitgroup_done(gort_waitgroup *wg);
/* Park the calling goroutine until the counter is zero. */
GORT_EXTERN void gort_waitgroup_wait(gort_waitgroup *wg);

/* ---------------------------------------------------------------------------
 * Observability
 * ------------------------------------------------------------------------- */

/* Print one schedtrace line (and with detail, scheddetail's P, M and G
 * lines) to stderr now, in Go's formats. */
GORT_EXTERN void gort_schedtrace(int detail);

/* Per-P schedule counts, for experiments and tests: fills up to n entries
 * of ticks with each P's schedtick and returns the number of Ps. */
GORT_EXTERN int gort_sched_ticks(uint32_t *ticks, int n);

#ifdef __cplusplus
}
#endif

#endif /* GORT_H */
