/* SPDX-License-Identifier: MIT */
/*
 * soak.h - what the parts of the soak program share.
 *
 * The soak program (soak.c) runs a mix of workers, each exercising one area
 * of gort's public API in a loop with randomized parameters, all at once,
 * for a given time.  Every worker bumps its own progress counter once per
 * iteration; a watchdog on a plain thread fails the run when a counter
 * stops moving.  Every worker checks what it can (values received, sums,
 * results of computations, error returns, wake-up times) and fails the run
 * through soak_fail with a message naming itself and what differed.
 *
 * A worker is a goroutine (SOAK_GOROUTINE) or a thread gort did not create
 * (SOAK_THREAD), started from a table of kinds in soak.c.  Its body loops
 * while soak_running() and returns once it sees the stop; an iteration
 * must end by itself (no wait that only the stop could end), so that the
 * stop needs no wake-ups.
 *
 * Invariants:
 *   - A worker's iters grows only while its state is W_RUNNING; the
 *     watchdog judges only W_RUNNING workers.
 *   - Nothing here depends on the scheduler making progress: soak_fail,
 *     the statistics and the counters are plain atomics and write(2).
 */
#ifndef GORT_SOAK_H
#define GORT_SOAK_H

#include <gort.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Time units in nanoseconds. */
#define SOAK_US 1000LL
#define SOAK_MS (1000LL * SOAK_US)
#define SOAK_S (1000LL * SOAK_MS)

/* Sanitizer builds make every goroutine and switch many times dearer:
 * sizes shrink there.  ThreadSanitizer also gives every goroutine a fiber,
 * counted against its limit of 8128 threads, and turns asynchronous
 * preemption off. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SOAK_SANITIZED 1
#else
#define SOAK_SANITIZED 0
#endif
#if defined(__SANITIZE_THREAD__)
#define SOAK_TSAN 1
#else
#define SOAK_TSAN 0
#endif

/* Worker states (soak_worker.state). */
enum { W_IDLE, W_RUNNING, W_DONE };

/* How a worker runs. */
enum { SOAK_GOROUTINE, SOAK_THREAD };

struct soak_worker;
typedef void soak_body(struct soak_worker *w);

/*
 * A kind of worker: the area it exercises, how many run, and optional
 * hooks, which run in the main goroutine: init before any worker starts,
 * fini after every worker has returned and the goroutine count is back to
 * its start (checks that need the program quiet).
 */
struct soak_kind {
    const char *name;   /* "chan", "select", ...: also the -only word */
    int count;          /* workers of this kind */
    int how;            /* SOAK_GOROUTINE or SOAK_THREAD */
    soak_body *body;
    void (*init)(void);
    void (*fini)(void);
    const char *needs;  /* a kind that must run beside it, or NULL */
};

struct soak_worker {
    const struct soak_kind *kind;
    int index;          /* instance of its kind, from 0 */
    char name[24];      /* "chan/0": how reports name the worker */
    uint64_t rng;       /* xorshift state; the worker's own */
    /* Iterations done.  The worker adds with relaxed order and the
     * watchdog and status line read with relaxed order: the count is
     * only looked at for movement, nothing is published through it. */
    uint64_t iters;
    /* Steps inside an iteration (a value that crossed a channel, a
     * goroutine of a storm that ran), counted the same way: an iteration
     * that lasts long because the scheduler is busy, but that moves, is
     * no stall. */
    uint64_t steps;
    /* W_*.  The worker stores with release, the watchdog and main load
     * with acquire (W_DONE: everything the worker did is visible). */
    int state;
    /* Only the watchdog thread touches these two: the last count (iters
     * plus steps) it saw and when it saw the count change (its own
     * clock). */
    uint64_t seen;
    int64_t seen_at;
};

/* Command line settings; written before gort_main, read-only after. */
struct soak_opts {
    int64_t seconds;    /* -t */
    int procs;          /* -procs, 0: gort's default */
    uint64_t seed;      /* -seed */
    bool verbose;       /* -v */
    bool fixedprocs;    /* -fixedprocs: no gomaxprocs worker */
    int64_t stall_s;    /* -stall: seconds without progress that fail */
    size_t stack;       /* -stack: goroutine stack size in bytes */
    const char *only;   /* -only: comma-separated kinds, or NULL for all */
    const char *skip;   /* -skip: comma-separated kinds left out, or NULL */
    bool async_preempt; /* asynchronous preemption is expected to work */
};
extern struct soak_opts soak_opts;

/*
 * Lateness of wake-ups (timers, sleeps, deadlines): how many, the largest,
 * the sum, and counts in power-of-two buckets of microseconds (bucket i
 * holds [2^(i-1), 2^i) us, bucket 0 below 1 us).  Updated from any thread
 * with relaxed atomics: each figure is a statistic on its own.
 */
#define SOAK_LAT_BUCKETS 32
struct soak_lat {
    const char *name;
    uint64_t n;
    int64_t max;
    int64_t sum;
    uint64_t bucket[SOAK_LAT_BUCKETS];
};

/* Counters every part adds to (relaxed atomics: statistics only). */
struct soak_stats {
    uint64_t eintr_read;      /* raw read(2) that returned EINTR */
    uint64_t eintr_nanosleep; /* raw nanosleep(2) that returned EINTR */
    uint64_t eintr_poll;      /* raw poll(2) that returned EINTR */
    uint64_t eintr_wrapped;   /* the same calls inside GORT_BLOCKING or
                                 gort_entersyscall[block] */
    uint64_t spawned;         /* goroutines started by the workers */
    uint64_t procs_changes;   /* GOMAXPROCS changes */
    uint64_t net_bytes;       /* payload bytes verified over loopback */
    uint64_t net_timeouts;    /* deadlines that expired as intended */
    uint64_t deadline_missed; /* reads that got data after their deadline */
    int64_t deadline_missed_max; /* the latest such data, past the deadline */
    uint64_t threads_ended;   /* threads ended by a goroutine exiting locked */
    uint64_t preempt_chunks;  /* CPU chunks run with no call into gort */
    uint64_t traces;          /* execution traces started and stopped */
    int64_t trace_call_max;   /* the slowest gort_trace_start or _stop */
    int64_t stw_max;          /* the longest stop-the-world pause so far,
                                 the lower bound of its histogram bucket */
    int64_t goroutines;       /* the last sample of /sched/goroutines */
    int64_t runnable;         /* the last sample of .../runnable */
    int64_t goroutines_max;   /* the largest sample */
    uint64_t preempt_async;   /* the last samples of gort's metrics */
    uint64_t preempt_sync;
    uint64_t handoffs;
    uint64_t threads;
    struct soak_lat sleep, after, timer, afterfunc, select, deadline,
        rawsleep, yield;
};
extern struct soak_stats soak_stats;

/* Relaxed statistics updates. */
static inline void soak_count(uint64_t *c, uint64_t n)
{
    __atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static inline void soak_max(int64_t *m, int64_t v)
{
    int64_t cur = __atomic_load_n(m, __ATOMIC_RELAXED);
    while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, true,
                                                   __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}

void soak_lat_add(struct soak_lat *l, int64_t ns);

/* How long a wait that should end soon may last before it fails the run:
 * the stall time (-stall), so that a scheduler that holds a goroutine
 * back shows up as a stall of its worker rather than as a wrong result. */
static inline int64_t soak_patience(void)
{
    return soak_opts.stall_s * SOAK_S;
}

/* True until the run's time is up.  The main goroutine stores the stop
 * with release; workers load it with acquire. */
bool soak_running(void);

/* One iteration done. */
static inline void soak_progress(struct soak_worker *w)
{
    __atomic_add_fetch(&w->iters, 1, __ATOMIC_RELAXED);
}

/* One step of an iteration done; any goroutine of the worker's may call
 * it. */
static inline void soak_step(struct soak_worker *w)
{
    __atomic_add_fetch(&w->steps, 1, __ATOMIC_RELAXED);
}

/* xorshift64: the worker's next random number. */
static inline uint64_t soak_rand(struct soak_worker *w)
{
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return w->rng = x;
}

/* A random integer in [lo, hi]. */
static inline int64_t soak_between(struct soak_worker *w, int64_t lo,
                                   int64_t hi)
{
    return lo + (int64_t)(soak_rand(w) % (uint64_t)(hi - lo + 1));
}

/* True with probability 1/n. */
static inline bool soak_one_in(struct soak_worker *w, int n)
{
    return soak_rand(w) % (uint64_t)n == 0;
}

/* splitmix64: derives independent seeds from one. */
uint64_t soak_mix(uint64_t x);

/*
 * Report a failed check and end the process with status 1: "soak: FAIL
 * <worker>: <message>", the seed, and a dump of every goroutine.  w may be
 * NULL (the main goroutine).  Callable from any thread; the first failure
 * wins, later ones wait for the exit.
 */
_Noreturn void soak_fail(const struct soak_worker *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Report a failed check of the end of the run (main goroutine, workers
 * joined) like soak_fail, without ending the process: the other checks
 * and the summary still run, and the exit status is 1.
 */
void soak_check_failed(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Check that a gort call returning 0 or a negative errno returned 0. */
#define SOAK_OK(w, call)                                                       \
    do {                                                                       \
        long soak_r_ = (long)(call);                                           \
        if (soak_r_ != 0)                                                      \
            soak_fail((w), "%s returned %ld (%s:%d)", #call, soak_r_,          \
                      __FILE__, __LINE__);                                     \
    } while (0)

/* A new channel, or a failed run. */
gort_chan *soak_chan_make(struct soak_worker *w, size_t elemsize, size_t cap);
/* Free ch, which must have no waiter. */
void soak_chan_free(struct soak_worker *w, gort_chan *ch);
/* Start fn(arg) as a goroutine, or fail the run. */
void soak_go(struct soak_worker *w, void (*fn)(void *), void *arg);
/* calloc that fails the run when memory runs out. */
void *soak_alloc(struct soak_worker *w, size_t n);
/* Sleep ns in the gort_sleep way, in slices of at most 100 ms that end
 * early once the run is stopping. */
void soak_nap(int64_t ns);

/*
 * Goroutines that have locked their thread publish its id here while
 * locked (lockthread worker); soak_check_thread fails the run when the
 * calling goroutine finds itself on one of those threads, which would
 * mean gort ran it on a thread locked to another goroutine.
 */
#define SOAK_LOCKED_SLOTS 4
extern int soak_locked_tids[SOAK_LOCKED_SLOTS];
void soak_check_thread(struct soak_worker *w);

/* The worker bodies and hooks, by file. */
soak_body soak_chan, soak_select;                              /* soak_chan.c */
soak_body soak_mutex, soak_rwmutex, soak_cond, soak_once,
    soak_waitgroup;                                            /* soak_sync.c */
soak_body soak_sleep, soak_yield, soak_after, soak_timer,
    soak_afterfunc;                                            /* soak_time.c */
soak_body soak_spin, soak_vector, soak_recurse, soak_spawn,
    soak_gomaxprocs;                                           /* soak_cpu.c */
soak_body soak_pipe, soak_nanosleep, soak_poll, soak_files;   /* soak_sys.c */
soak_body soak_lockthread, soak_foreign, soak_observe;      /* soak_thread.c */
void soak_foreign_fini(void);
soak_body soak_server, soak_client, soak_deadline, soak_udp;   /* soak_net.c */
void soak_cpu_init(void);   /* reference results, before gort_main */
void soak_net_init(void);

/* Workers of the run with this body (after -only and -fixedprocs). */
int soak_workers_of(soak_body *body);

#endif /* GORT_SOAK_H */
