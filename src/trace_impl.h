/* SPDX-License-Identifier: MIT */
/*
 * trace_impl.h - what the execution tracer's two halves share: the
 * recorder (trace.c: hooks, buffers, sessions) and the writer
 * (trace_json.c: the thread that turns buffers into Chrome Trace Event
 * JSON).  Nothing outside those two files includes it.
 */
#ifndef GORT_TRACE_IMPL_H
#define GORT_TRACE_IMPL_H

#include "defs.h"
#include "lock_futex.h"
#include "sched.h"

/* ---------------------------------------------------------------------------
 * Records and buffers.
 * ------------------------------------------------------------------------- */

/* Event kinds, with what the fields hold ("g": the goroutine's id). */
enum {
    EV_NONE = 0,
    EV_GO_CREATE,   /* g, a1 fn, a2 flow id; on the creator's track */
    EV_GO_START,    /* g, a1 fn, a2 flow id (0: none) */
    EV_GO_STOP,     /* g, reason STOP_* (still runnable) */
    EV_GO_BLOCK,    /* g, reason its waitreason */
    EV_GO_END,      /* g */
    EV_GO_UNBLOCK,  /* g, a1 flow id, reason its waitreason */
    EV_GO_SYSCALL,  /* g: it enters a syscall (leaves its P) */
    EV_SYSCALL,     /* g, a1 begin; ts is the end; on m's track; reason 1:
                       still in it when tracing stopped */
    EV_PROC_START,  /* the P in p taken by m, a1 its kernel tid */
    EV_PROC_STOP,   /* the P in p released by m */
    EV_PROC_STEAL,  /* the P in p taken from its syscall; reason TRACE_STEAL_* */
    EV_STEAL,       /* the P in p stole Gs from P a1 */
    EV_PREEMPT,     /* sysmon asked the G on the P in p to yield */
    EV_STW,         /* a1 begin, a2 why (a static string), g gomaxprocs */
    EV_NETPOLL,     /* a1 goroutines made ready */
    EV_TIMERS,      /* a1 timers fired, a2 the P whose heap */
    EV_DROPPED,     /* a1 records lost, a2 when the first was lost; for
                       the P in p (or m's stream when p < 0) */
    EV_MINFO,       /* m's kernel tid in a1 (first record of an M buffer) */
    EV_SPIN,        /* a1 begin; ts is the end; m spun looking for work */
};

/* Why a running G stopped while still runnable. */
enum { STOP_YIELD = 1, STOP_PREEMPT, STOP_SIGNAL };

/* One event.  p is the P track it belongs to, or -1 for m's track. */
struct tev {
    int64_t ts;
    int64_t g;
    int64_t a1, a2;
    int32_t m;
    int16_t p;
    uint8_t kind;
    uint8_t reason;
};
_Static_assert(sizeof(struct tev) == 40, "trace records are 40 bytes");

#define TRACE_BUF_EVENTS 1024

struct gort__tracebuf {
    struct gort__tracebuf *next; /* in the free list or the queue */
    uint32_t n;                  /* records used */
    struct tev ev[TRACE_BUF_EVENTS];
};

/* Session states (gort__tr.state). */
enum { T_IDLE = 0, T_STARTING, T_RUNNING, T_STOPPING };

/* The session: the recorder's (trace.c) and the writer's (trace_json.c)
 * shared state. */
struct gort__trace_state {
    /* Read by every recording M, written only by start and stop: a line
     * of their own (the pool's fields below change all the time). */
    uint32_t state GORT_CACHELINE; /* T_*; changed by CAS */
    uint32_t session;        /* bumped by every start (g->traceseq tags) */
    int64_t t0;              /* when tracing started */
    int32_t nbufs;
    int fd;
    struct gort__tracebuf *mem;
    struct gort__tracew *w;
    /* The running stop-the-world (its stopper only). */
    int64_t stw_begin;
    const char *stw_why;
    /* The buffer lock: a leaf (sched.h).  Protects the lists below and
     * the foreign slot. */
    gort_spinlock lock GORT_CACHELINE;
    struct gort__tracebuf *free;
    int32_t nfree;           /* atomic: read without the lock as a hint */
    struct gort__tracebuf *qhead, *qtail;
    struct gort__tracebuf *fbuf; /* threads gort did not create */
    uint64_t fdropped;
    int64_t fdropts;
    /* The writer. */
    uint32_t wgen GORT_CACHELINE; /* futex word: bumped to wake it */
    uint32_t wstop;          /* atomic: all buffers are queued; finish */
    uint32_t began;          /* atomic: t0 is set (the writer samples) */
    int64_t stop_ts;         /* set before wstop (release) */
    uint64_t stop_dropped;   /* lost records no marker reported */
    int werr;                /* the writer's first error (-errno) */
    pthread_t thread;
    bool thread_started;
};
GORT_HIDDEN extern struct gort__trace_state gort__tr;

/* ---------------------------------------------------------------------------
 * The writer (trace_json.c), seen from the recorder.
 * ------------------------------------------------------------------------- */

struct gort__tracew;
/* A writer for one session (NULL when out of memory). */
GORT_HIDDEN struct gort__tracew *gort__tracew_new(void);
GORT_HIDDEN void gort__tracew_free(struct gort__tracew *w);
/* P p lost n records that no record reported, the first at since. */
GORT_HIDDEN void gort__tracew_lost(struct gort__tracew *w, int p, uint64_t n,
                                   int64_t since);
/* The writer's thread: converts queued buffers until gort__tr.wstop, then
 * finishes the file.  arg is the writer. */
GORT_HIDDEN void *gort__tracew_main(void *arg);

#endif
