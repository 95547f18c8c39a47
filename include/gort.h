/* SPDX-License-Identifier: MIT */
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
 *     that is from code running under gort_main().  While it runs, a
 *     thread gort did not make counts as a goroutine but holds no
 *     processor, so it cannot sleep or wait with a deadline.  Outside a
 *     goroutine, a channel send or receive (the try forms too), a select,
 *     a sleep, a wait, a lock that is held, and the calls marked "Fatal
 *     outside a goroutine" are the fatal error "<function>: not called
 *     from a goroutine", naming the call or the one it is made of (what
 *     stdio still buffers is written out first); the other calls say
 *     what they do there, or work there.
 *
 * Migration: a goroutine may resume on another OS thread after any call
 * into gort (and, through preemption, anywhere in its own code).  errno
 * follows the goroutine: gort saves and restores it at every switch, and
 * this header makes `errno` read the current thread's (see below).  What
 * does not follow it: the address of a __thread variable kept across such
 * a call, pthread_self() and the thread id, and anything bound to the
 * thread, such as a pthread mutex locked before the call and unlocked
 * after it.  Pin the goroutine with gort_lock_os_thread() when code
 * depends on thread identity.
 */
#ifndef GORT_H
#define GORT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions gort exports: default visibility, as the library
 * is built with -fvisibility=hidden; empty for compilers without GNU C's
 * attributes. */
#if defined(__GNUC__)
#define GORT_EXTERN __attribute__((visibility("default")))
#else
#define GORT_EXTERN
#endif

/* Marks the static inline functions a macro of this header defines in
 * the caller's file (GORT_CHAN_OF), which may use only some of them. */
#if defined(__GNUC__)
#define GORT_MAYBE_UNUSED __attribute__((unused))
#else
#define GORT_MAYBE_UNUSED
#endif

/*
 * This header is C99 and C11, and C++11 and later (tests/header checks
 * each with gcc and clang under -Wpedantic), so it spells what C11 and
 * C++ name differently through macros.  GORT_NORETURN marks a function
 * that never returns: [[noreturn]] in C++, _Noreturn in C11, GNU C's
 * attribute in C99, nothing for other compilers.  It comes first in a
 * declaration, where C++ requires its attribute.
 */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define GORT_NORETURN [[noreturn]]
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define GORT_NORETURN _Noreturn
#elif defined(__GNUC__)
#define GORT_NORETURN __attribute__((noreturn))
#else
#define GORT_NORETURN
#endif

/*
 * errno, the current thread's.  The C library declares the function behind
 * errno (__errno_location) constant, so a compiler may compute errno's
 * address once and use it after a call into gort; when the goroutine has
 * moved to another thread meanwhile, that address is the previous
 * thread's errno.  gort_errno_location is an ordinary function, called
 * afresh at every use.  Define GORT_NO_ERRNO_OVERRIDE before including
 * this header to keep the C library's definition.  Any thread.
 */
GORT_EXTERN int *gort_errno_location(void);
#if !defined(GORT_NO_ERRNO_OVERRIDE)
#undef errno
#define errno (*gort_errno_location())
#endif

/*
 * The version of this header.  These three lines are the project's one
 * record of its version: CMakeLists.txt reads them for project(), the
 * shared library's file name and the CMake and pkg-config packages.
 * GORT_VERSION_HEX is 0xMMmmpp (major, minor, patch, one byte each), so
 * versions compare as integers, also in #if.  docs/abi.md says when each
 * number changes and how the shared library's SONAME follows the ABI
 * rather than this version.
 */
#define GORT_VERSION_MAJOR 0
#define GORT_VERSION_MINOR 1
#define GORT_VERSION_PATCH 0
#define GORT__VERSION_STR(x) #x
#define GORT__VERSION_XSTR(x) GORT__VERSION_STR(x)
#define GORT_VERSION_STRING                                       \
    GORT__VERSION_XSTR(GORT_VERSION_MAJOR) "."                    \
    GORT__VERSION_XSTR(GORT_VERSION_MINOR) "."                    \
    GORT__VERSION_XSTR(GORT_VERSION_PATCH)
#define GORT_VERSION_HEX                                          \
    ((GORT_VERSION_MAJOR << 16) | (GORT_VERSION_MINOR << 8) |     \
     GORT_VERSION_PATCH)

/* The version of the library the program runs with, "MAJOR.MINOR.PATCH"
 * (static storage).  It differs from GORT_VERSION_STRING when the program
 * was compiled against another version's header than the shared library
 * it loaded.  Any thread, also outside gort_main. */
GORT_EXTERN const char *gort_version(void);

/* ---------------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------------- */

/*
 * Boot the runtime on the calling thread (it becomes M0), run fn(arg) as the
 * main goroutine (goid 1) and return when it returns, after stopping every
 * thread the runtime started and freeing everything it allocated.  Other
 * goroutines still alive when main returns are discarded, as in Go.
 *
 * Returns 0, or a negative errno when the runtime could not start (-EINVAL
 * for fn NULL, -EBUSY if called while a gort_main is already running,
 * also from its goroutines, -ENOMEM, -EAGAIN).  May be called again after
 * it returns.
 *
 * Reads GORTMAXPROCS, GORTDEBUG and GORTSTACKSIZE from the environment; a
 * malformed value is reported on stderr and the default is used.
 */
GORT_EXTERN int gort_main(void (*fn)(void *), void *arg);
/* gort_main for a main goroutine that returns an exit status (0-255):
 * returns fn's return value once fn returns and the runtime is down, or
 * gort_main's negative errno when the runtime could not start (-EINVAL
 * for fn NULL).  `return gort_run(app, NULL);` from main() is Go's exit
 * status from a program whose main returned normally or called os.Exit
 * at its end. */
GORT_EXTERN int gort_run(int (*fn)(void *), void *arg);

/* ---------------------------------------------------------------------------
 * Errors.  Every gort call that fails returns a negative number: -errno,
 * or for a name resolution (gort_getaddrinfo) GORT_EAI(getaddrinfo's
 * EAI_* code), a number below -GORT_EAI_BASE that no errno value reaches.
 * ------------------------------------------------------------------------- */

/* Below every -errno: the name resolution errors start past it. */
#define GORT_EAI_BASE 10000
/* The gort error for getaddrinfo's code eai (EAI_NONAME and the rest). */
#define GORT_EAI(eai) (-GORT_EAI_BASE - ((eai) < 0 ? -(eai) : (eai)))

/* What err, a gort call's negative return (or an errno value), means:
 * strerror's text for an errno, gai_strerror's for a GORT_EAI code,
 * "success" for 0, "unknown error" for a number neither knows.  A static
 * string, safe from any thread. */
GORT_EXTERN const char *gort_strerror(int err);

/* ---------------------------------------------------------------------------
 * Goroutines
 * ------------------------------------------------------------------------- */

/*
 * Start a goroutine running fn(arg).  The new goroutine goes into the
 * current P's runnext slot, so it usually runs next (Go's behaviour).
 * Returns its goroutine id (> 0); -EINVAL when fn is NULL; -EPERM when
 * no gort_main runs (before it starts or after it returns); -ENOMEM when
 * no stack could be had.  From a thread gort did not make, while
 * gort_main runs, the goroutine goes to the global queue.
 */
GORT_EXTERN int64_t gort_go(void (*fn)(void *), void *arg);

/* Yield the processor: the caller goes to the global run queue and another
 * goroutine runs.  Mirrors runtime.Gosched.  With GOMAXPROCS 1 the global
 * queue's first goroutine runs next and the caller goes to the tail of the
 * P's own queue instead (docs/design.md says why).  Outside a goroutine
 * (or on a thread gort did not make) it yields the thread (sched_yield). */
GORT_EXTERN void gort_gosched(void);

/* The calling goroutine's id (main is 1), or 0 when called outside
 * gort_main.  A thread gort did not make gets, while gort_main runs, the
 * id of the goroutine that stands for it. */
GORT_EXTERN int64_t gort_goid(void);

/*
 * Register fn(arg) to run when the calling goroutine ends, by returning or
 * by gort_goexit().  Handlers run last-registered first, like Go's defer.
 * Returns 0; -EINVAL for fn NULL; -EPERM outside a goroutine (on a thread
 * gort did not make too, which never ends as one); -ENOMEM.
 */
GORT_EXTERN int gort_defer(void (*fn)(void *), void *arg);

/*
 * End the calling goroutine after running its deferred handlers.  In the
 * main goroutine the program goes on with the other goroutines; when none is
 * left this is the fatal error "no goroutines (main called runtime.Goexit) -
 * deadlock!", as in Go.  Mirrors runtime.Goexit.  Fatal outside a
 * goroutine, on a thread gort did not make too.
 */
GORT_NORETURN GORT_EXTERN void gort_goexit(void);

/*
 * Query or set GOMAXPROCS.  n <= 0 only returns the current value; n > 0
 * sets it (capped at GORT_MAX_PROCS) under stop-the-world and returns the
 * previous value.  Goroutines queued on removed processors move to the
 * global run queue.  Only a goroutine can set it: called from any other
 * thread (one gort did not make too) it sets nothing and returns the
 * current value (0 outside gort_main; GORTMAXPROCS in the environment
 * sets the starting value).
 * Left to its default, GOMAXPROCS follows the CPUs available (affinity
 * mask, cgroup CPU limit), re-read once a second, as in Go 1.25; once
 * GORTMAXPROCS or a call with n > 0 set it, it no longer does.
 * In the simulation mode (GORTDEBUG=sim=SEED, docs/sim.md) it stays 1: a
 * call sets nothing and returns 1.
 */
#define GORT_MAX_PROCS 1024
GORT_EXTERN int gort_gomaxprocs(int n);

/* Number of goroutines that exist now (runnable, running or waiting; the
 * goroutines that stand for threads gort did not make too); 0 outside
 * gort_main.  Any thread. */
GORT_EXTERN int64_t gort_numgoroutine(void);

/* Monotonic clock in nanoseconds.  Callable from any thread. */
GORT_EXTERN int64_t gort_nanotime(void);

/* ---------------------------------------------------------------------------
 * Settings (call before gort_main; they also have environment forms)
 * ------------------------------------------------------------------------- */

/* The smallest stack size gort_set_stack_size accepts, and the size of
 * every goroutine stack unless gort_set_stack_size or GORTSTACKSIZE sets
 * another (four times as much when AddressSanitizer is on, whose redzones
 * enlarge every frame). */
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
 * debug.SetMaxThreads).  Going past it is a fatal error ("thread
 * exhaustion"; at once when n is below the threads gort_main runs now).
 * Returns the previous limit, or -EINVAL for n < 1 (the limit unchanged).
 * Any thread, also outside gort_main.
 */
GORT_EXTERN int gort_set_max_threads(int n);

/* Durations in nanoseconds, 64 bits wide (Go's time.Nanosecond ...
 * time.Hour): 10 * GORT_SECOND does not overflow an int. */
#define GORT_NANOSECOND ((int64_t)1)
#define GORT_MICROSECOND ((int64_t)1000)
#define GORT_MILLISECOND ((int64_t)1000000)
#define GORT_SECOND ((int64_t)1000000000)
#define GORT_MINUTE (60 * GORT_SECOND)
#define GORT_HOUR (60 * GORT_MINUTE)

/* ---------------------------------------------------------------------------
 * Deadlines.  Every blocking call that can give up takes one: a point in
 * time on gort_nanotime()'s clock after which it returns -ETIMEDOUT.  It
 * has a type of its own, so that a duration (an int64_t) cannot be passed
 * where a deadline is meant; make one with gort_deadline_in (ns from now,
 * Go's time.Now().Add), gort_deadline_at (an absolute gort_nanotime()
 * value) or gort_no_deadline (wait for ever).  A deadline that has passed
 * turns the call into a try: it does what it can without waiting.
 * ------------------------------------------------------------------------- */

/* A deadline: made by the three functions below, read by no one else. */
typedef struct gort_deadline {
    int64_t at; /* gort_nanotime() value; 0: none; INT64_MAX: none either */
} gort_deadline;

/* No deadline: the call waits as long as it takes. */
static inline gort_deadline gort_no_deadline(void)
{
    gort_deadline d;
    d.at = 0;
    return d;
}

/* The deadline at t, an absolute gort_nanotime() value (t <= 0: passed
 * long ago). */
static inline gort_deadline gort_deadline_at(int64_t t)
{
    gort_deadline d;
    d.at = t > 0 ? t : 1;
    return d;
}

/* The deadline ns nanoseconds from now (ns <= 0: now, already passed;
 * one too far to represent: none). */
static inline gort_deadline gort_deadline_in(int64_t ns)
{
    int64_t now = gort_nanotime();
    gort_deadline d;
    d.at = ns <= 0 ? now : ns > INT64_MAX - now ? INT64_MAX : now + ns;
    return d;
}

/* ---------------------------------------------------------------------------
 * Waiting: wait groups
 * ------------------------------------------------------------------------- */

/* A WaitGroup.  Zero-initialise it (GORT_WAITGROUP_INIT or memset). */
typedef struct gort_waitgroup {
    uint64_t state;  /* high 32 bits: counter, low 32 bits: waiters */
    uint32_t sema;   /* the address waiters park on */
} gort_waitgroup;
#define GORT_WAITGROUP_INIT {0, 0}

/* Add delta to the counter.  Fatal: a negative result ("sync: negative
 * WaitGroup counter"), and an Add from zero that races a Wait being
 * released ("sync: WaitGroup misuse: Add called concurrently with
 * Wait"). */
GORT_EXTERN void gort_waitgroup_add(gort_waitgroup *wg, int delta);
/* Decrement the counter by one: gort_waitgroup_add(wg, -1). */
GORT_EXTERN void gort_waitgroup_done(gort_waitgroup *wg);
/* Park the calling goroutine until the counter is zero (at once when it
 * is).  Fatal: the counter raised again before this Wait returned ("sync:
 * WaitGroup is reused before previous Wait has returned"). */
GORT_EXTERN void gort_waitgroup_wait(gort_waitgroup *wg);
/* gort_waitgroup_wait until d: 0 when the counter reached zero, or
 * -ETIMEDOUT when d passed first (a passed deadline: at once, unless the
 * counter is zero); gort_no_deadline waits as gort_waitgroup_wait.
 * -EINVAL for wg NULL.  -ENOMEM when the goroutine's deadline timer
 * cannot be made (its first wait with a deadline). */
GORT_EXTERN int gort_waitgroup_wait_until(gort_waitgroup *wg,
                                          gort_deadline d);
/* Add one to the counter and start fn(arg) in a goroutine that calls
 * gort_waitgroup_done when fn returns or ends it with gort_goexit (Go's
 * WaitGroup.Go).  Returns the goroutine's id, or as gort_go (the counter
 * then unchanged); -EINVAL for wg or fn NULL; -ENOMEM. */
GORT_EXTERN int64_t gort_waitgroup_go(gort_waitgroup *wg, void (*fn)(void *),
                                      void *arg);

/* ---------------------------------------------------------------------------
 * Channels.  Mirrors Go's chan (chan.go).
 *
 * A channel carries elements of one fixed size, copied in and out by
 * value.  cap 0 makes an unbuffered channel: a send completes only when a
 * receiver takes the value.  A NULL channel is Go's nil channel: send and
 * receive block forever, close is a fatal error.
 * ------------------------------------------------------------------------- */

/* A channel (opaque): made by gort_chan_make, gort_after or
 * gort_timer_make, freed by gort_chan_free (a timer's, with its timer). */
typedef struct gort_chan gort_chan;

/* Largest element size (Go's limit too: 1<<16 - 1 bytes). */
#define GORT_CHAN_MAX_ELEM 65535

/*
 * Make a channel of elements of elemsize bytes (0 is allowed: a signal
 * channel) with cap buffered slots.  Returns 0 and stores it in *chp;
 * -EINVAL when chp is NULL, elemsize > GORT_CHAN_MAX_ELEM, cap >
 * UINT32_MAX or elemsize * cap does not fit in memory (*chp untouched);
 * -ENOMEM.  May be called from any thread.
 */
GORT_EXTERN int gort_chan_make(gort_chan **chp, size_t elemsize, size_t cap);

/*
 * Free a channel.  Returns 0; -EBUSY (and frees nothing) while goroutines
 * are blocked on it in send, receive or select.  A channel made by
 * gort_after() stops its timer and frees it too.  The channel of a timer
 * made with gort_timer_make belongs to the timer: -EPERM here, free the
 * timer instead.  NULL: 0.
 */
GORT_EXTERN int gort_chan_free(gort_chan *ch);

/* Send the elemsize bytes at elem, blocking until a receiver or a buffer
 * slot takes them.  Fatal errors, as Go panics: send on a closed channel
 * (also when it is closed while the sender waits). */
GORT_EXTERN void gort_chan_send(gort_chan *ch, const void *elem);

/* Receive into elem (NULL: discard the value), blocking until a value is
 * there or the channel is closed.  Returns true for a value sent, false
 * when the channel is closed and drained (elem then holds zero bytes). */
GORT_EXTERN bool gort_chan_recv(gort_chan *ch, void *elem);

/* Non-blocking forms (a select with a default case).  trysend returns
 * true when the value was sent (false for a NULL channel); on a closed
 * channel it is fatal, as gort_chan_send.  tryrecv returns true when a
 * receive happened and then stores in *ok (may be NULL) whether it was a
 * value (true) or the closed, drained channel (false); false for a NULL
 * channel. */
GORT_EXTERN bool gort_chan_trysend(gort_chan *ch, const void *elem);
GORT_EXTERN bool gort_chan_tryrecv(gort_chan *ch, void *elem, bool *ok);

/* Close: receivers drain the buffer, then get ok == false; blocked
 * senders fail fatally.  Fatal: close of a nil or closed channel. */
GORT_EXTERN void gort_chan_close(gort_chan *ch);

/* Buffered elements now, and the capacity (0 for NULL).  Any thread. */
GORT_EXTERN size_t gort_chan_len(gort_chan *ch);
GORT_EXTERN size_t gort_chan_cap(gort_chan *ch);
/* The element size ch was made with (0 for NULL).  Any thread. */
GORT_EXTERN size_t gort_chan_elemsize(gort_chan *ch);

/* gort_chan_send and gort_chan_recv told the size of the caller's
 * element, which must be the channel's: on a mismatch they return -EINVAL
 * and move nothing (a NULL channel, Go's nil one, blocks for ever as the
 * unchecked calls do, whatever the size).  Send returns 0; receive 1 for a
 * value, 0 for the closed and drained channel (elem zeroed), and elem may
 * be NULL to discard the value (the size is then not checked).  Use them
 * through GORT_CHAN_SEND and GORT_CHAN_RECV, which pass sizeof *ptr. */
GORT_EXTERN int gort_chan_send_checked(gort_chan *ch, const void *elem,
                                       size_t size);
GORT_EXTERN int gort_chan_recv_checked(gort_chan *ch, void *elem,
                                       size_t size);
#define GORT_CHAN_SEND(ch, ptr) gort_chan_send_checked((ch), (ptr), sizeof *(ptr))
#define GORT_CHAN_RECV(ch, ptr) gort_chan_recv_checked((ch), (ptr), sizeof *(ptr))

/*
 * Typed channels.  GORT_CHAN_OF(name, T), at file scope, declares `name`,
 * a channel of T (a struct holding one gort_chan pointer; zeroed, it is
 * Go's nil channel), and functions on it that take and give T, so that
 * sending or receiving another type is a compile error:
 *
 *     GORT_CHAN_OF(job_chan, struct job)
 *     job_chan jobs;
 *     job_chan_make(&jobs, 16);
 *     job_chan_send(jobs, (struct job){.id = 1});
 *     struct job j;
 *     while (job_chan_recv(jobs, &j)) ...
 *
 * Each function is the untyped call of the same name with sizeof(T) and
 * the element's address filled in, and returns what that call returns:
 * name_make (0, -EINVAL, -ENOMEM: gort_chan_make), name_free, name_send,
 * name_recv (T * may be NULL), name_trysend, name_tryrecv, name_send_until,
 * name_recv_until, name_send_ctx, name_recv_ctx, name_close, name_len,
 * name_cap; name_recv_case and name_send_case build a gort_case for
 * gort_select (the element pointer must stay valid until it returns),
 * name_raw gives the gort_chan, and name_wrap makes a typed channel of a
 * gort_chan made elsewhere (a timer's, a context's done channel): 0, or
 * -EINVAL (nothing stored) when its element size is not sizeof(T).  T is any complete object type but an
 * array (wrap one in a struct); values are passed by value, as in Go.
 * The functions are static inline: a typed call costs what the untyped
 * one does.
 */
#define GORT_CHAN_OF(name, T)                                                  \
    typedef struct name {                                                      \
        gort_chan *ch;                                                         \
    } name;                                                                    \
    static inline GORT_MAYBE_UNUSED int name##_make(name *c, size_t cap)       \
    {                                                                          \
        return gort_chan_make(&c->ch, sizeof(T), cap);                         \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED int name##_free(name c)                    \
    {                                                                          \
        return gort_chan_free(c.ch);                                           \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED gort_chan *name##_raw(name c)              \
    {                                                                          \
        return c.ch;                                                           \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED int name##_wrap(name *c, gort_chan *ch)    \
    {                                                                          \
        if (ch && gort_chan_elemsize(ch) != sizeof(T))                         \
            return -EINVAL;                                                    \
        c->ch = ch;                                                            \
        return 0;                                                              \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED void name##_send(name c, T v)              \
    {                                                                          \
        gort_chan_send(c.ch, &v);                                              \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED bool name##_recv(name c, T *v)             \
    {                                                                          \
        return gort_chan_recv(c.ch, v);                                        \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED bool name##_trysend(name c, T v)           \
    {                                                                          \
        return gort_chan_trysend(c.ch, &v);                                    \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED bool name##_tryrecv(name c, T *v,          \
                                                        bool *ok)              \
    {                                                                          \
        return gort_chan_tryrecv(c.ch, v, ok);                                 \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED int name##_send_until(name c, T v,         \
                                                          gort_deadline d)     \
    {                                                                          \
        return gort_chan_send_until(c.ch, &v, d);                              \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED int name##_recv_until(name c, T *v,        \
                                                          gort_deadline d)     \
    {                                                                          \
        return gort_chan_recv_until(c.ch, v, d);                               \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED int name##_send_ctx(name c, T v,           \
                                                        gort_ctx *x)           \
    {                                                                          \
        return gort_chan_send_ctx(c.ch, &v, x);                                \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED int name##_recv_ctx(name c, T *v,          \
                                                        gort_ctx *x)           \
    {                                                                          \
        return gort_chan_recv_ctx(c.ch, v, x);                                 \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED void name##_close(name c)                  \
    {                                                                          \
        gort_chan_close(c.ch);                                                 \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED size_t name##_len(name c)                  \
    {                                                                          \
        return gort_chan_len(c.ch);                                            \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED size_t name##_cap(name c)                  \
    {                                                                          \
        return gort_chan_cap(c.ch);                                            \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED gort_case name##_recv_case(name c, T *v)   \
    {                                                                          \
        gort_case k = {c.ch, GORT_CASE_RECV, v, false};                        \
        return k;                                                              \
    }                                                                          \
    static inline GORT_MAYBE_UNUSED gort_case name##_send_case(name c,         \
                                                               const T *v)     \
    {                                                                          \
        gort_case k = {c.ch, GORT_CASE_SEND, (void *)v, false};                \
        return k;                                                              \
    }                                                                          \
    struct name

/* ---------------------------------------------------------------------------
 * Contexts.  Go's context package: a context is cancelled by its maker,
 * by its deadline or with its parent, and says so on a channel closed
 * then (gort_ctx_done) and by its reason (gort_ctx_err).
 *
 * Who frees what: making a context gives the caller one reference, which
 * gort_ctx_cancel_release gives back (Go's cancel function: call it when
 * the work is done, as Go's `defer cancel()`; it also cancels).  A
 * goroutine that keeps a context past its maker's cancel takes a
 * reference of its own (gort_ctx_retain) and gives it back
 * (gort_ctx_release).  A child keeps its parent.  The last reference
 * frees the context.  Calls other than gort_ctx_done, gort_ctx_err and
 * gort_ctx_deadline are for goroutines.
 * ------------------------------------------------------------------------- */

/* A context (opaque, Go's context.Context). */
typedef struct gort_ctx gort_ctx;
/* The root: never cancelled, no deadline, nothing to free (Go's
 * context.Background). */
GORT_EXTERN gort_ctx *gort_ctx_background(void);
/* A child of parent that gort_ctx_cancel cancels (context.WithCancel):
 * 0 and *ctxp; -EINVAL for parent or ctxp NULL; -ENOMEM.  A child of a
 * cancelled parent is cancelled at once, with the parent's reason.
 * Fatal outside a goroutine. */
GORT_EXTERN int gort_ctx_with_cancel(gort_ctx *parent, gort_ctx **ctxp);
/* A child that is also cancelled, with -ETIMEDOUT, once d passes
 * (context.WithDeadline; gort_deadline_in for WithTimeout; d passed
 * already: cancelled at once, and 0).  Its deadline is the earlier of d
 * and its parent's.  As gort_ctx_with_cancel; when its timer cannot be
 * made, -ENOMEM, or -EPERM on a thread gort did not make, which has no
 * timers (*ctxp is then cancelled, with -ECANCELED, and still to be
 * released). */
GORT_EXTERN int gort_ctx_with_deadline(gort_ctx *parent, gort_deadline d,
                                       gort_ctx **ctxp);
/* Cancel ctx and its children (reason -ECANCELED), unless done already
 * (NULL: nothing). */
GORT_EXTERN void gort_ctx_cancel(gort_ctx *ctx);
/* Cancel ctx and give back the maker's reference (Go's cancel func;
 * NULL: nothing).  When ctx's deadline has just fired, it first waits
 * (yielding) for the firing's cancellation to finish, so that the context
 * is freed here, by the maker, and not left to a goroutine that a
 * program's end would discard. */
GORT_EXTERN void gort_ctx_cancel_release(gort_ctx *ctx);
/* Take a reference / give one back (the last frees the context; NULL
 * and the background: nothing). */
GORT_EXTERN void gort_ctx_retain(gort_ctx *ctx);
GORT_EXTERN void gort_ctx_release(gort_ctx *ctx);
/* A channel closed when ctx is cancelled, for a select's receive case
 * (Go's Done); NULL, never ready, for the background context (and for
 * ctx NULL). */
GORT_EXTERN gort_chan *gort_ctx_done(gort_ctx *ctx);
/* 0 while ctx runs; once cancelled, why: -ECANCELED (Go's Canceled) or
 * -ETIMEDOUT (DeadlineExceeded).  -EINVAL for NULL. */
GORT_EXTERN int gort_ctx_err(gort_ctx *ctx);
/* ctx's deadline (gort_no_deadline: none, and for ctx NULL). */
GORT_EXTERN gort_deadline gort_ctx_deadline(gort_ctx *ctx);

/* An error group (golang.org/x/sync/errgroup): goroutines started
 * together and waited for together, the first error one of them returns
 * cancelling the group's context. */
typedef struct gort_errgroup gort_errgroup;
/* Make a group whose context is a child of parent (NULL: the background),
 * stored in *ctxp unless ctxp is NULL (errgroup.WithContext); the group
 * owns that context until gort_errgroup_free.  0, -EINVAL for gp NULL,
 * -ENOMEM.  Fatal outside a goroutine. */
GORT_EXTERN int gort_errgroup_make(gort_errgroup **gp, gort_ctx *parent,
                                   gort_ctx **ctxp);
/* At most n goroutines of the group at once, n <= 0: no limit (SetLimit).
 * 0; -EBUSY while goroutines of the group run; -EINVAL for g NULL;
 * -ENOMEM (the limit unchanged). */
GORT_EXTERN int gort_errgroup_set_limit(gort_errgroup *g, int n);
/* Start fn(arg) in a goroutine of the group, waiting first while the
 * limit is reached (Go).  fn returns 0 or a negative error; the first
 * error cancels the group's context (-ECANCELED).  Returns the
 * goroutine's id, -EINVAL for g or fn NULL, -ENOMEM, or as gort_go. */
GORT_EXTERN int64_t gort_errgroup_go(gort_errgroup *g, int (*fn)(void *),
                                     void *arg);
/* Wait for every goroutine of the group, then cancel its context; the
 * first error (0: none) (Wait).  -EINVAL for NULL. */
GORT_EXTERN int gort_errgroup_wait(gort_errgroup *g);
/* Free the group and its context, after its wait: 0, or -EBUSY while
 * goroutines of the group run (nothing freed).  NULL: 0. */
GORT_EXTERN int gort_errgroup_free(gort_errgroup *g);

/* A weighted semaphore (golang.org/x/sync/semaphore): n units, taken and
 * given back in any amounts, waiters served in arrival order (a large
 * request is not passed by smaller ones behind it). */
typedef struct gort_semaphore gort_semaphore;
/* Make one of n units: 0, -EINVAL for sp NULL or n <= 0, -ENOMEM.  Any
 * thread. */
GORT_EXTERN int gort_semaphore_make(gort_semaphore **sp, int64_t n);
/* Take n units, waiting until they are free or ctx (NULL: the
 * background) is cancelled: 0, or gort_ctx_err(ctx) with nothing taken.
 * More units than the semaphore has wait for ctx alone (Go's).  -EINVAL
 * for s NULL or n <= 0; -ENOMEM when it would wait (nothing taken). */
GORT_EXTERN int gort_semaphore_acquire(gort_semaphore *s, int64_t n,
                                       gort_ctx *ctx);
/* gort_semaphore_acquire until d instead of a context: 0, or -ETIMEDOUT
 * with nothing taken (units granted as d passes are kept); more units
 * than the semaphore has wait until d, then -ETIMEDOUT.  -EINVAL for s
 * NULL or n <= 0; -ENOMEM when it would wait (nothing taken). */
GORT_EXTERN int gort_semaphore_acquire_until(gort_semaphore *s, int64_t n,
                                             gort_deadline d);
/* Take n units if they are free and nobody waits: true, else false
 * (also for s NULL or n <= 0). */
GORT_EXTERN bool gort_semaphore_try_acquire(gort_semaphore *s, int64_t n);
/* Give back n units, serving the waiters that now fit (s NULL or n <= 0:
 * nothing).  Fatal: giving back more than was taken ("semaphore:
 * released more than held"). */
GORT_EXTERN void gort_semaphore_release(gort_semaphore *s, int64_t n);
/* Free it: 0, or -EBUSY while goroutines wait on it (nothing freed).
 * NULL: 0. */
GORT_EXTERN int gort_semaphore_free(gort_semaphore *s);

/* ---------------------------------------------------------------------------
 * select.  Mirrors Go's select statement (select.go).
 * ------------------------------------------------------------------------- */

/* What a select case does: its gort_case's dir. */
enum gort_case_dir {
    GORT_CASE_RECV = 1,    /* receive from ch into elem (NULL: discard) */
    GORT_CASE_SEND = 2,    /* send the value at elem on ch */
    GORT_CASE_DEFAULT = 3, /* taken when no other case is ready */
};

/* One case of gort_select: the channel, what to do on it and the element
 * to send from or receive into.  gort_select sets ok in the receive case
 * it takes. */
typedef struct gort_case {
    gort_chan *ch;  /* NULL: a case that is never ready, as in Go */
    int dir;        /* enum gort_case_dir */
    void *elem;
    bool ok;        /* out, receive cases: true for a value, false for
                       the closed channel */
} gort_case;

/* Wait until one case can proceed, do it and return its index.  Ready
 * cases are chosen uniformly at random.  With a default case, return its
 * index at once when no other case is ready.  No cases at all (or only
 * NULL channels and no default) blocks forever, as Go's `select {}`.
 * Returns -EINVAL (touching nothing) when ncases < 0 or > 65536, cases is
 * NULL with ncases > 0, a dir is unknown, or there are two defaults;
 * -ENOMEM (more than 8 cases need memory).  Fatal: a send case taken on
 * a closed channel ("send on closed channel"). */
GORT_EXTERN int gort_select(gort_case *cases, int ncases);
/* gort_select until d: the index of the case taken, or -ETIMEDOUT when
 * none could proceed by then (a passed deadline: none could at once).
 * With a default case d does not matter: it is gort_select.  Only NULL
 * channels and no default wait until d.  Nothing is allocated for the
 * deadline (the goroutine keeps one timer for all its waits), so it is
 * the way to write Go's select with `case <-time.After(...)` in a loop.
 * -EINVAL as gort_select (ncases up to 65535); -ENOMEM when the
 * goroutine's timer cannot be made, on its first wait with a deadline,
 * or as gort_select. */
GORT_EXTERN int gort_select_until(gort_case *cases, int ncases,
                                  gort_deadline d);
/* Send on ch until d: 0 when sent, -ETIMEDOUT, -ENOMEM as
 * gort_select_until.  Sending on a closed channel is fatal, as
 * gort_chan_send. */
GORT_EXTERN int gort_chan_send_until(gort_chan *ch, const void *elem,
                                     gort_deadline d);
/* Receive from ch until d: 1 with a value in elem (NULL: discarded), 0
 * when ch is closed and drained (elem zeroed), -ETIMEDOUT, -ENOMEM as
 * gort_select_until. */
GORT_EXTERN int gort_chan_recv_until(gort_chan *ch, void *elem,
                                     gort_deadline d);
/* gort_select until ctx (NULL: the background) is cancelled: the index of
 * the case taken, or gort_ctx_err(ctx) (-ECANCELED, -ETIMEDOUT) when ctx
 * was cancelled first; -EINVAL as gort_select (ncases up to 65535),
 * -ENOMEM. */
GORT_EXTERN int gort_select_ctx(gort_case *cases, int ncases, gort_ctx *ctx);
/* Send on ch until ctx is cancelled: 0, or gort_ctx_err(ctx).  Sending
 * on a closed channel is fatal, as gort_chan_send. */
GORT_EXTERN int gort_chan_send_ctx(gort_chan *ch, const void *elem,
                                   gort_ctx *ctx);
/* Receive from ch until ctx is cancelled: 1 (a value), 0 (closed), or
 * gort_ctx_err(ctx). */
GORT_EXTERN int gort_chan_recv_ctx(gort_chan *ch, void *elem, gort_ctx *ctx);

/* ---------------------------------------------------------------------------
 * Time.  Mirrors Go's time.Sleep, time.After, time.NewTimer, time.AfterFunc
 * (time.go): per-P timer heaps run by the scheduler.
 * ------------------------------------------------------------------------- */

/* Park the calling goroutine for at least ns nanoseconds (ns <= 0: return
 * at once, from any thread). */
GORT_EXTERN void gort_sleep(int64_t ns);
/* Park the calling goroutine until d has passed (gort_no_deadline: return
 * at once): gort_sleep, whose name the fatal error outside a goroutine
 * gives. */
GORT_EXTERN void gort_sleep_until(gort_deadline d);

/* A channel (cap 1, element int64_t) that receives gort_nanotime() once,
 * ns from now.  The caller owns it: gort_chan_free stops the timer and
 * frees both.  NULL when out of memory, or outside a goroutine (on a
 * thread gort did not make too: no timers there). */
GORT_EXTERN gort_chan *gort_after(int64_t ns);

/* A timer (opaque, Go's *time.Timer): made by gort_timer_make, freed by
 * gort_timer_free. */
typedef struct gort_timer gort_timer;

/*
 * Make a timer that fires ns from now.  With fn, firing starts a goroutine
 * running fn(arg) (time.AfterFunc); with fn NULL, firing sends
 * gort_nanotime() on the timer's channel (time.NewTimer), cap 1.
 * Returns 0 and stores the timer in *tp, -EINVAL for tp NULL, -EPERM
 * outside a goroutine (on a thread gort did not make too), -ENOMEM.
 */
GORT_EXTERN int gort_timer_make(gort_timer **tp, int64_t ns,
                                void (*fn)(void *), void *arg);
/* Make a ticker (Go's time.NewTicker): a channel timer whose channel
 * (gort_timer_chan, cap 1) receives gort_nanotime() every ns from now on;
 * a tick the receiver is not ready for is dropped, as Go's.  Stop it with
 * gort_timer_stop, free it with gort_timer_free.  Returns 0, -EINVAL for
 * tp NULL or ns <= 0, -ENOMEM, -EPERM outside a goroutine (on a thread
 * gort did not make too). */
GORT_EXTERN int gort_ticker_make(gort_timer **tp, int64_t ns);
/* Tick every ns from now on (time.Ticker.Reset; a stopped ticker starts
 * again), the channel emptied.  0, or -EINVAL for t NULL or not a channel
 * timer, or ns <= 0.  Fatal outside a goroutine (on a thread gort did not
 * make too). */
GORT_EXTERN int gort_ticker_reset(gort_timer *t, int64_t ns);
/* The channel of a timer made without fn; NULL for a function timer (and
 * for t NULL). */
GORT_EXTERN gort_chan *gort_timer_chan(gort_timer *t);
/* Stop the timer.  True when this call stopped it before it fired.  For a
 * channel timer no stale value can be received afterwards, and a value
 * sent but not yet received is discarded and counts as not fired: true
 * (Go 1.23's synchronous timer channels).  False for t NULL. */
GORT_EXTERN bool gort_timer_stop(gort_timer *t);
/* Make it fire ns from now.  True when it was still pending (for a
 * channel timer: or fired and not received; that value is discarded);
 * false for t NULL.  Fatal outside a goroutine (on a thread gort did not
 * make too). */
GORT_EXTERN bool gort_timer_reset(gort_timer *t, int64_t ns);
/* Stop and free the timer (and its channel).  A function already started
 * keeps running.  Returns 0, or -EBUSY when goroutines are still blocked on
 * its channel (nothing is freed then).  NULL: 0. */
GORT_EXTERN int gort_timer_free(gort_timer *t);

/* ---------------------------------------------------------------------------
 * sync: Mutex, RWMutex, Once, Cond.  Mirrors Go's sync package.  All are
 * zero-initialised (the _INIT macros or memset) and must not be copied
 * once used.  They park goroutines, never threads.
 * ------------------------------------------------------------------------- */

/* A mutual exclusion lock (Go's sync.Mutex); GORT_MUTEX_INIT, or zeroed
 * memory, is an unlocked one.  Not tied to a goroutine: another goroutine
 * may unlock it. */
typedef struct gort_mutex {
    int32_t state;  /* locked, woken, starving bits and the waiter count */
    uint32_t sema;
} gort_mutex;
#define GORT_MUTEX_INIT {0, 0}

/* Lock: spin briefly when that can pay, then park.  A waiter that has
 * waited over 1 ms switches the mutex to starvation mode, in which the
 * lock is handed to waiters in FIFO order (sync/mutex.go).  A free mutex
 * is taken from any thread; one that must be waited for needs a
 * goroutine (the fatal error names gort_mutex_lock). */
GORT_EXTERN void gort_mutex_lock(gort_mutex *m);
/* Lock m if it is free, without waiting: true when the caller now holds
 * it. */
GORT_EXTERN bool gort_mutex_trylock(gort_mutex *m);
/* gort_mutex_lock until d: 0 with the mutex held, or -ETIMEDOUT when d
 * passed first (a passed deadline: a try).  A waiter that gives up leaves
 * a small record in its place in the queue, which takes the wake-up or
 * hand-off that was coming to it and passes the mutex on, so giving up
 * never stalls the other waiters.  -ENOMEM (nothing held) when that
 * record or the goroutine's deadline timer cannot be made; -EINVAL for m
 * NULL.  gort_no_deadline waits as gort_mutex_lock. */
GORT_EXTERN int gort_mutex_lock_until(gort_mutex *m, gort_deadline d);
/* Fatal: "sync: unlock of unlocked mutex". */
GORT_EXTERN void gort_mutex_unlock(gort_mutex *m);

/* A reader/writer lock (Go's sync.RWMutex): held by any number of readers
 * or by one writer.  GORT_RWMUTEX_INIT, or zeroed memory, is an unlocked
 * one. */
typedef struct gort_rwmutex {
    gort_mutex w;          /* held by the writer */
    uint32_t writer_sem;   /* the writer waits for readers to finish */
    uint32_t reader_sem;   /* readers wait for the writer */
    int32_t reader_count;  /* readers; minus 1<<30 while a writer waits */
    int32_t reader_wait;   /* readers the writer still waits for */
} gort_rwmutex;
#define GORT_RWMUTEX_INIT {GORT_MUTEX_INIT, 0, 0, 0, 0}

/* Lock for reading: park while a writer holds the lock or waits for it
 * (a waiting writer blocks new readers, so writers are not starved). */
GORT_EXTERN void gort_rwmutex_rlock(gort_rwmutex *rw);
/* Lock for reading without waiting: true when the caller now holds a read
 * lock, false when a writer holds the lock or waits for it. */
GORT_EXTERN bool gort_rwmutex_tryrlock(gort_rwmutex *rw);
/* Undo one read lock; the last reader out lets a waiting writer in.
 * Fatal: "sync: RUnlock of unlocked RWMutex". */
GORT_EXTERN void gort_rwmutex_runlock(gort_rwmutex *rw);
/* Lock for writing: park until no writer and no reader holds the lock. */
GORT_EXTERN void gort_rwmutex_lock(gort_rwmutex *rw);
/* Lock for writing without waiting: true when the caller now holds the
 * write lock. */
GORT_EXTERN bool gort_rwmutex_trylock(gort_rwmutex *rw);
/* Undo the write lock, letting in the readers that waited for it.  Fatal:
 * "sync: Unlock of unlocked RWMutex". */
GORT_EXTERN void gort_rwmutex_unlock(gort_rwmutex *rw);

/* Go's sync.Once, for gort_once_do; GORT_ONCE_INIT, or zeroed memory, is
 * one that has not run. */
typedef struct gort_once {
    uint32_t done;
    gort_mutex m;
} gort_once;
#define GORT_ONCE_INIT {0, GORT_MUTEX_INIT}

/* Run fn(arg) exactly once over all calls on o; every caller returns
 * after it has completed.  fn must return: if it ends its goroutine with
 * gort_goexit, later calls block for good (C has no deferred unlock). */
GORT_EXTERN void gort_once_do(gort_once *o, void (*fn)(void *), void *arg);

/* A condition variable (Go's sync.Cond) whose waiters hold the mutex l:
 * GORT_COND_INIT(&mutex) makes one, as does zeroed memory with l set. */
typedef struct gort_cond {
    gort_mutex *l;     /* held around wait and (usually) signal */
    uint32_t wait;     /* notify list: next ticket to hand a waiter */
    uint32_t notify;   /* next ticket to wake */
    uint32_t lock;     /* runtime lock of the list */
    void *head, *tail; /* waiters, in ticket order */
} gort_cond;
#define GORT_COND_INIT(mutexp) {(mutexp), 0, 0, 0, NULL, NULL}

/* Atomically unlock c->l and park until signalled, then lock c->l again. */
GORT_EXTERN void gort_cond_wait(gort_cond *c);
/* gort_cond_wait until d: 0 when signalled, -ETIMEDOUT when d passed
 * first; either way c->l is held again on return.  A passed deadline
 * returns -ETIMEDOUT at once, without unlocking.  A waiter that times out
 * takes no signal: a signal that would have been its goes to the next
 * waiter.  -ENOMEM (c->l still held, nothing waited) when the
 * goroutine's deadline timer or the record a timed-out waiter may leave
 * cannot be made.  -EINVAL for c NULL or a cond without its mutex.
 * gort_no_deadline waits as gort_cond_wait. */
GORT_EXTERN int gort_cond_wait_until(gort_cond *c, gort_deadline d);
/* Wake one waiter, the one that has waited longest; none waiting, do
 * nothing.  The caller may hold c->l but need not. */
GORT_EXTERN void gort_cond_signal(gort_cond *c);
/* Wake every waiter. */
GORT_EXTERN void gort_cond_broadcast(gort_cond *c);

/* ---------------------------------------------------------------------------
 * Threads, system calls and preemption
 * ------------------------------------------------------------------------- */

/*
 * Wire the calling goroutine to the OS thread it runs on: until as many
 * gort_unlock_os_thread() calls, it runs only on this thread and no other
 * goroutine runs there.  Calls nest (Go's LockOSThread).  A goroutine that
 * exits while locked takes its thread with it.  The main goroutine, locked,
 * runs on the thread that called gort_main().  Outside a goroutine, and
 * on a thread gort did not make (its own thread already), it does
 * nothing.
 */
GORT_EXTERN void gort_lock_os_thread(void);
/* Undo one gort_lock_os_thread(); no-op when the goroutine is not locked. */
GORT_EXTERN void gort_unlock_os_thread(void);

/*
 * Tell the scheduler that the calling goroutine is about to make a call
 * that may block its thread (a system call, a blocking library call), and
 * that it is back.  Between the two the goroutine must not call gort.
 *
 *   gort_entersyscall       the processor (P) stays with the thread for a
 *                           quick return; the system monitor hands it to
 *                           another thread when the call lasts (Go's
 *                           entersyscall).
 *   gort_entersyscallblock  for calls known to block: the P is handed off
 *                           at once (Go's entersyscallblock).
 *   gort_exitsyscall        takes the old P back, or another idle one, or
 *                           queues the goroutine until one is free.
 *
 * Outside a goroutine (a thread gort does not run) all three do nothing.
 */
GORT_EXTERN void gort_entersyscall(void);
GORT_EXTERN void gort_entersyscallblock(void);
GORT_EXTERN void gort_exitsyscall(void);

/* Evaluate expr (a call that may block) between gort_entersyscall() and
 * gort_exitsyscall(); its value is the value of expr.  GNU C. */
#define GORT_BLOCKING(expr)                                                   \
    __extension__({                                                           \
        gort_entersyscall();                                                  \
        __typeof__(expr) gort_blocking_r_ = (expr);                           \
        gort_exitsyscall();                                                   \
        gort_blocking_r_;                                                     \
    })

/*
 * Blocking calls through the syscall path.  Each returns what the libc
 * call returns on success and a negative errno on failure (errno is left
 * as the call set it).  Interrupted calls (EINTR) are retried.
 * gort_getaddrinfo returns 0, a name resolution error as GORT_EAI(its
 * EAI_* code), or a negative errno (EAI_SYSTEM's errno, -ENOMEM for
 * EAI_MEMORY); gort_strerror names each.  gort_nanosleep sleeps on the
 * monotonic clock, all of req however often a signal comes (*rem, when
 * rem is not NULL, is then zeroed): 0, -EFAULT for req NULL, -EINVAL for
 * a negative or unnormalised req.  Any thread: outside a goroutine they
 * are the plain calls.
 */
struct timespec;
struct addrinfo;
struct pollfd;
GORT_EXTERN long gort_read(int fd, void *buf, size_t n);
GORT_EXTERN long gort_write(int fd, const void *buf, size_t n);
GORT_EXTERN long gort_pread(int fd, void *buf, size_t n, int64_t off);
GORT_EXTERN long gort_pwrite(int fd, const void *buf, size_t n, int64_t off);
GORT_EXTERN int gort_open(const char *path, int flags, ...);
GORT_EXTERN int gort_close(int fd);
GORT_EXTERN int gort_fsync(int fd);
GORT_EXTERN int gort_nanosleep(const struct timespec *req,
                               struct timespec *rem);
GORT_EXTERN int gort_getaddrinfo(const char *node, const char *service,
                                 const struct addrinfo *hints,
                                 struct addrinfo **res);
GORT_EXTERN int gort_waitpid(int pid, int *status, int options);
GORT_EXTERN int gort_poll(struct pollfd *fds, unsigned long nfds,
                          int timeout_ms);

/* ---------------------------------------------------------------------------
 * Network and pipe I/O through the network poller
 *
 * A descriptor the poller knows is non-blocking; a goroutine whose call
 * would block parks (wait reason "IO wait") and no thread waits for it.
 * gort_read, gort_write and gort_close above take this path by themselves
 * for such descriptors; gort_write writes all of the buffer, or, stopped
 * part way by an error or a deadline, returns the count it wrote (fewer
 * than asked), the next call then returning the error.  Errors are
 * negative errnos; a goroutine parked on a descriptor that gort_close
 * closes returns -EBADF, one whose deadline passes -ETIMEDOUT.
 * ------------------------------------------------------------------------- */

struct sockaddr;
struct iovec;

/* Hand fd (a socket, pipe, eventfd, tty...) to the poller; it is made
 * non-blocking.  0; -EEXIST if it already is; -EPERM outside gort_main;
 * -EBADF for a negative or closed fd; -ENOMEM; the poller's error for a
 * descriptor it cannot watch (epoll_ctl's -EPERM for a regular file). */
GORT_EXTERN int gort_fd_register(int fd);
/* socket(2) / pipe2(2), registered.  Return the fd / 0, or -errno:
 * the call's, or gort_fd_register's (-EPERM outside gort_main; nothing
 * is left open). */
GORT_EXTERN int gort_socket(int domain, int type, int protocol);
GORT_EXTERN int gort_pipe(int fds[2]);
/* accept4(2) on a registered listening socket; the new fd is registered.
 * addrlen may be NULL with addr.  The fd, or -errno: -EBADF for an fd
 * not registered. */
GORT_EXTERN int gort_accept(int fd, struct sockaddr *addr, unsigned *addrlen);
/* connect(2), waiting at most timeout_ns (<= 0: no limit) for the
 * connection: 0, -ETIMEDOUT or the connection's error; -EBADF for an fd
 * not registered. */
GORT_EXTERN int gort_connect(int fd, const struct sockaddr *addr,
                             unsigned addrlen, int64_t timeout_ns);
/* gort_connect with a deadline: 0, -ETIMEDOUT when d passed before the
 * connection was made (a passed deadline: unless it connects at once),
 * or the connection's error; gort_no_deadline waits as long as it takes.
 * The descriptor's write deadline is cleared afterwards when d is set. */
GORT_EXTERN int gort_connect_until(int fd, const struct sockaddr *addr,
                                   unsigned addrlen, gort_deadline d);
/* readv(2), writev(2), sendto(2), recvfrom(2) (fromlen may be NULL with
 * from) and shutdown(2): a goroutine whose call would block parks until
 * the descriptor is ready.  Return the byte count or 0, or -errno;
 * gort_readv and gort_writev on an unregistered fd take the syscall path,
 * gort_sendto and gort_recvfrom return -EBADF for one. */
GORT_EXTERN long gort_readv(int fd, const struct iovec *iov, int iovcnt);
GORT_EXTERN long gort_writev(int fd, const struct iovec *iov, int iovcnt);
GORT_EXTERN long gort_sendto(int fd, const void *buf, size_t n, int flags,
                             const struct sockaddr *to, unsigned tolen);
GORT_EXTERN long gort_recvfrom(int fd, void *buf, size_t n, int flags,
                               struct sockaddr *from, unsigned *fromlen);
GORT_EXTERN int gort_shutdown(int fd, int how);
/* Deadline for reads ('r'), writes ('w') or both ('r' + 'w') on a
 * registered fd: an absolute gort_nanotime() value, or 0 for none.  Calls
 * in that direction that are still waiting when it passes (or that start
 * after it) return -ETIMEDOUT; a later deadline re-arms them (Go's
 * SetReadDeadline/SetWriteDeadline).  0; -EBADF for an unregistered (or
 * closed) fd, -EINVAL for a bad mode or a negative time, -EPERM outside
 * a goroutine (on a thread gort did not make too: no timers there). */
GORT_EXTERN int gort_fd_set_deadline(int fd, int mode, int64_t when);
/* The directions of gort_fd_deadline, or'ed. */
enum gort_fd_dir {
    GORT_FD_READ = 1,
    GORT_FD_WRITE = 2,
};
/* gort_fd_set_deadline with gort.h's deadline type: the deadline of the
 * reads (GORT_FD_READ), the writes (GORT_FD_WRITE) or both on a
 * registered fd; gort_no_deadline clears it.  -EINVAL for dirs 0 or
 * other bits, and as gort_fd_set_deadline. */
GORT_EXTERN int gort_fd_deadline(int fd, unsigned dirs, gort_deadline d);

/* ---------------------------------------------------------------------------
 * Signals delivered to channels.  Mirrors Go's os/signal: Notify, Stop,
 * Ignore, Reset and Ignored.
 *
 * A notified signal no longer does what it did (end the process, run the
 * program's handler): its number, an int, is sent on every channel that
 * asked for it, by a goroutine of gort's woken through the network
 * poller.  Sends never block: a channel with no room misses the signal,
 * so give it a buffer (1 is enough for one signal, as in Go), and a
 * signal that arrives again before it was handed out is one delivery, as
 * the kernel merges a pending signal.  Any thread may take the signal,
 * gort's or not; do not block it in every thread.  Do not close a
 * channel that is still notified (the send is fatal, as Go's panic):
 * gort_signal_stop it first.
 *
 * Refused everywhere (-EINVAL): numbers outside 1..SIGRTMAX, SIGKILL and
 * SIGSTOP (they cannot be caught), the synchronous faults SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL and SIGTRAP (gort's crash handler reports
 * them; a handler that returns would run the faulting instruction
 * again), and the C library's own signals (32 and 33 with glibc).
 * gort's own signals: a notified SIGQUIT no longer dumps the goroutines
 * (Go); SIGURG, gort's preemption signal, may be notified (its handler
 * still runs, and the channel gets gort's preemption requests too, as in
 * Go: expect spurious SIGURG) but not ignored.
 *
 * gort_main's end puts back every action these calls changed and
 * forgets every channel.  Call them from a goroutine; outside gort_main
 * they return -EPERM.
 * ------------------------------------------------------------------------- */

/*
 * Send the signals sigs[0..n) to ch (Go's signal.Notify); n == 0: every
 * signal that may be notified (sigs is then not read).  ch's elements
 * are ints (made with gort_chan_make(&ch, sizeof(int), cap)).  Calling
 * again adds signals; several channels may want one signal, each gets it.
 * A signal's action before the first channel wanted it comes back with
 * gort_signal_stop of the last one, or gort_signal_reset.  A SIGHUP or
 * SIGINT ignored before (nohup) is caught from now on, as in Go.
 *
 * Returns 0; -EINVAL for ch NULL, an element size other than sizeof(int),
 * n < 0, sigs NULL with n > 0, or a refused signal among them (nothing
 * is changed then); -EPERM outside gort_main; -ENOMEM, or eventfd(2)'s
 * -errno, when the first call of a gort_main cannot set up delivery.
 */
GORT_EXTERN int gort_signal_notify(gort_chan *ch, const int *sigs, int n);

/* gort_signal_notify(ch, the signals listed, their count): at least
 * one; GORT_SIGNAL_NOTIFY(ch, SIGINT, SIGTERM). */
#if defined(__cplusplus)
#define GORT_SIGNAL_NOTIFY(ch, ...)                                           \
    ([&]() -> int {                                                           \
        const int gort_sigs_[] = {__VA_ARGS__};                               \
        return gort_signal_notify(                                            \
            (ch), gort_sigs_, (int)(sizeof gort_sigs_ / sizeof(int)));        \
    }())
#else
#define GORT_SIGNAL_NOTIFY(ch, ...)                                           \
    gort_signal_notify((ch), (const int[]){__VA_ARGS__},                      \
                       (int)(sizeof((const int[]){__VA_ARGS__}) /             \
                             sizeof(int)))
#endif

/*
 * Send nothing more to ch (Go's signal.Stop); a signal no channel wants
 * any more gets back the action it had before gort took it, unless the
 * program has installed a handler of its own over gort's since.  A
 * signal that arrived before the call is still delivered to ch.  When it
 * returns no send to ch is in progress or to come: ch may be freed.
 * Returns 0 (also when ch was not notified); -EINVAL for ch NULL; -EPERM
 * outside gort_main.
 */
GORT_EXTERN int gort_signal_stop(gort_chan *ch);

/*
 * Ignore the signals sigs[0..n) (Go's signal.Ignore): channels no longer
 * get them and their action is SIG_IGN; n == 0: every signal that may be
 * notified but SIGURG.  Returns 0; -EINVAL for n < 0, sigs NULL with
 * n > 0, a refused signal or SIGURG among them (nothing is changed);
 * -EPERM outside gort_main.
 */
GORT_EXTERN int gort_signal_ignore(const int *sigs, int n);

/*
 * Undo gort_signal_notify and gort_signal_ignore for sigs[0..n) (Go's
 * signal.Reset): channels no longer get them, and each gets back the
 * action it had before gort took it; n == 0: every signal.  Returns 0;
 * -EINVAL as gort_signal_ignore (SIGURG allowed); -EPERM outside
 * gort_main.
 */
GORT_EXTERN int gort_signal_reset(const int *sigs, int n);

/* Whether sig's action is SIG_IGN now (Go's signal.Ignored): 1 or 0;
 * -EINVAL for a number outside 1..SIGRTMAX.  Any thread, any time. */
GORT_EXTERN int gort_signal_ignored(int sig);

/*
 * Asynchronous preemption.  A goroutine that runs 10 ms without calling
 * gort is interrupted with SIGURG and made to yield, but only at a safe
 * point: its code is in the program itself (not in gort, libc or another
 * shared object, which may hold locks), it has not disabled preemption,
 * and its thread holds no runtime lock.  Every register survives; the
 * goroutine may resume on another thread (see Migration above).
 * GORTDEBUG=asyncpreemptoff=1 turns it off.
 *
 * gort_preempt_disable/enable nest; between them the goroutine is never
 * preempted asynchronously and keeps its P even in an unwrapped blocking
 * call (it still yields at gort calls, and gives the P up in wrapped
 * ones).  Outside a goroutine they do nothing; an enable without a
 * disable does nothing.
 */
GORT_EXTERN void gort_preempt_disable(void);
GORT_EXTERN void gort_preempt_enable(void);
/* Declare the shared object that contains addr (a function of a library
 * that takes no locks and keeps no thread state, e.g. a math library) safe
 * for asynchronous preemption.  Returns 0, -ENOENT when addr is in no
 * loaded object, or -EINVAL for the object that holds gort itself (the
 * program, when linked with the static library: its own code is already
 * safe, gort's never is).  Callable before gort_main; it lasts for the
 * process. */
GORT_EXTERN int gort_preempt_allow_object(const void *addr);

/* ---------------------------------------------------------------------------
 * Networks: listening and dialing by address.  Mirrors Go's net.Listen,
 * net.ListenPacket and net.Dial over the descriptor calls above.
 *
 * A network is "tcp", "tcp4" (IPv4 only), "tcp6" (IPv6 only), "udp",
 * "udp4", "udp6", "unix" (a stream socket), "unixpacket" (SOCK_SEQPACKET)
 * or "unixgram" (SOCK_DGRAM); any other name is -EINVAL.  An address of
 * the IP networks is "host:port" as gort_split_host_port reads it: the
 * host a name, an IPv4 address or a bracketed IPv6 one ("[::1]:80",
 * "[fe80::1%eth0]:80"), the port a number or a service name of
 * /etc/services ("http").  Names resolve through gort_getaddrinfo, numbers
 * at once.  An address of the Unix networks is a path, or with a leading
 * '@' a name in Linux's abstract namespace.  The descriptors are
 * gort_socket's: non-blocking, close-on-exec, known to the poller (close
 * them with gort_close).  Call these two from a goroutine.
 * ------------------------------------------------------------------------- */

/* Split hostport, "host:port", "[host]:port" or "[host%zone]:port", into
 * its host (brackets removed; empty for ":port") and port (Go's
 * net.SplitHostPort, the same cases refused), stored NUL-terminated in
 * host (hostlen bytes) and port (portlen bytes); either may be NULL to
 * leave that part out.  Returns 0; -EINVAL for hostport NULL or
 * malformed: no port ("h", "[::1]"), too many colons ("::1:80", an IPv6
 * address without brackets), a '[' without its ']', or a '[' or ']'
 * anywhere else; -ERANGE, storing nothing, when a part does not fit its
 * buffer.  Any thread. */
GORT_EXTERN int gort_split_host_port(const char *hostport, char *host,
                                     size_t hostlen, char *port,
                                     size_t portlen);
/* Join host and port into "host:port" in buf (n bytes, NUL-terminated),
 * bracketing a host that contains a colon (an IPv6 address: "[::1]:80";
 * Go's net.JoinHostPort).  Returns the length written (without the NUL);
 * -EINVAL for host or port NULL, or buf NULL with n > 0; -ERANGE when it
 * does not fit (buf is then "" if n > 0).  Any thread. */
GORT_EXTERN int gort_join_host_port(const char *host, const char *port,
                                    char *buf, size_t n);
/*
 * A socket listening on address (Go's net.Listen; for "udp*" and "unixgram",
 * net.ListenPacket): for "tcp*", "unix" and "unixpacket" a listening socket
 * (SO_REUSEADDR, the largest backlog the kernel allows) for gort_accept; for
 * "udp*" (SO_BROADCAST on) and "unixgram" a bound datagram socket for
 * gort_recvfrom and gort_sendto.  An empty host (":8080"), 0.0.0.0 or [::] is
 * every address: for "tcp" and "udp" one IPv6 socket that takes IPv4 too
 * (IPV6_V6ONLY off; an IPv4 socket on 0.0.0.0 where the machine has no IPv6);
 * "tcp4"/"udp4" listen on IPv4 alone, "tcp6"/"udp6" on IPv6 alone
 * (IPV6_V6ONLY on).  Port 0 or empty (an empty address is ":0") picks a free
 * port: getsockname(2) tells which.  A host name listens on one of its
 * addresses, the first IPv4 one if it has any, else the first (Go's).  A Unix
 * path is created by the bind and left behind when the socket is closed: the
 * caller removes it.
 *
 * Returns the descriptor; -EINVAL for network or address NULL, an
 * unknown network, a malformed address (gort_split_host_port's cases, a
 * port number over 65535, an empty Unix path); -ENAMETOOLONG for a Unix
 * path longer than sun_path (108 bytes); a GORT_EAI code when the host or
 * the service does not resolve, GORT_EAI(EAI_ADDRFAMILY) when the host
 * has no address of the network's IP version; otherwise the -errno of
 * socket(2), setsockopt(2), bind(2) or listen(2) (-EADDRINUSE,
 * -EADDRNOTAVAIL, -EACCES, -EPERM outside gort_main...).  No descriptor
 * stays open on an error.
 */
GORT_EXTERN int gort_listen(const char *network, const char *address);
/*
 * A socket connected to address (Go's net.Dial with a deadline): for "tcp*" a
 * TCP connection with TCP_NODELAY, for "udp*" a connected datagram socket
 * (SO_BROADCAST on, as Go sets it), for the Unix networks a socket connected
 * to the path.  The host resolves to a list of addresses (for "tcp4"/"udp4"
 * its IPv4 ones, for "tcp6"/"udp6" its IPv6 ones; an empty host is this
 * machine, 127.0.0.1, or ::1 for "tcp6"/"udp6"), which are tried in turn
 * (Go's dialSerial): the first connection is returned.  d (gort_no_deadline:
 * none) bounds the whole call, a name lookup included; each attempt gets an
 * equal share of the time left for the addresses still to try, at least 2 s
 * (all of it when less is left), so that one address that does not answer
 * does not take all the time (Go's partialDeadline).
 *
 * Returns the descriptor; when every address fails, the first one's
 * error (-ECONNREFUSED, -ENETUNREACH, -ETIMEDOUT when its share of the
 * time ran out...); -ETIMEDOUT when d has passed before the first
 * attempt (nothing is connected) or during the lookup; -EINVAL for
 * network or address NULL or empty, an unknown network or a malformed
 * address (as gort_listen); -ENAMETOOLONG, a GORT_EAI code and
 * GORT_EAI(EAI_ADDRFAMILY) as gort_listen; the -errno of socket(2);
 * -EPERM outside gort_main.  No descriptor stays open on an error.
 */
GORT_EXTERN int gort_dial(const char *network, const char *address,
                          gort_deadline d);

/* ---------------------------------------------------------------------------
 * Observability
 * ------------------------------------------------------------------------- */

/* Print one schedtrace line (and with detail, scheddetail's P, M and G
 * lines) to stderr now, in Go's formats.  Outside gort_main: nothing.
 * Any thread. */
GORT_EXTERN void gort_schedtrace(int detail);

/* Per-P schedule counts, for experiments and tests: fills up to n entries
 * of ticks (none when ticks is NULL or n <= 0) with each P's schedtick
 * and returns the number of Ps; 0 outside gort_main.  Any thread. */
GORT_EXTERN int gort_sched_ticks(uint32_t *ticks, int n);

/* Write every goroutine to fd in Go's traceback format: the header
 * "goroutine N [status or wait reason, M minutes]:", for a goroutine
 * blocked on a channel, mutex or timer the object's address ("waiting on
 * 0x..."), its backtrace (a "function(...)" line, then a tab,
 * "object:address +offset" where `addr2line -e object address` gives the
 * file and line), and "created by function in goroutine N".  The calling
 * goroutine comes first; goroutines running on other threads show no
 * frames.  gort's internal frames are left out unless
 * GORTTRACEBACK=system.  Frame pointers are walked: build with
 * -fno-omit-frame-pointer for complete backtraces.  Callable from any
 * thread, without allocating.  Returns 0, -EBADF for a negative fd, or
 * the negative errno of a failed write. */
GORT_EXTERN int gort_dump_goroutines(int fd);

/* Write the goroutines grouped by identical backtrace, largest group
 * first, as Go's goroutine profile with debug=1 (pprof): "goroutine
 * profile: total N", then per distinct stack "COUNT @ pc pc ..." and one
 * "#\tpc\tfunction+offset\tobject:address" line per frame (the frames
 * gort_dump_goroutines shows), then a blank line.  The way to find a
 * goroutine leak: one stack with a count that keeps growing.  Returns 0,
 * -EBADF, -ENOMEM when its tables cannot be mapped, or the negative errno
 * of a failed write. */
GORT_EXTERN int gort_dump_goroutines_grouped(int fd);

/* ---------------------------------------------------------------------------
 * Metrics.  Mirrors Go's runtime/metrics: the scheduler metrics under Go's
 * names and meanings (/sched/...), and gort's own under /gort/sched/....
 * A name is a path and a unit, "/sched/goroutines:goroutines".
 * ------------------------------------------------------------------------- */

/* The kind of a metric's value, which says the gort_metric_sample field
 * that holds it (Go's metrics.ValueKind). */
enum gort_metric_kind {
    GORT_METRIC_BAD = 0,       /* no such metric (Go's KindBad) */
    GORT_METRIC_UINT64 = 1,    /* value in u64 */
    GORT_METRIC_FLOAT64 = 2,   /* value in f64 */
    GORT_METRIC_HISTOGRAM = 3, /* value in hist (Go's KindFloat64Histogram) */
};

/* A metric as gort_metrics_all lists it (Go's metrics.Description). */
typedef struct gort_metric_desc {
    const char *name;        /* "/sched/latencies:seconds" */
    const char *description; /* one or more English sentences */
    int kind;                /* enum gort_metric_kind */
    bool cumulative;         /* only ever grows (each bucket, for a
                                histogram): a rate makes sense */
} gort_metric_desc;

/* Every metric, sorted by name; *n gets the count (n may be NULL).  The
 * table is static: callable at any time, from any thread. */
GORT_EXTERN const gort_metric_desc *gort_metrics_all(size_t *n);

/* The time histograms (every histogram gort has) have this many buckets:
 * Go's timeHistogram layout, 160 buckets from 0 to 2^47 ns (four per power
 * of two from 2^9 ns up) plus one for negative durations and one for
 * longer ones. */
#define GORT_METRIC_HIST_BUCKETS 162

/*
 * A histogram.  Bucket i counts samples in [buckets[i], buckets[i+1])
 * seconds; buckets[0] is -infinity and buckets[n] +infinity.
 *
 * Memory: the caller owns counts (or leaves it NULL); gort owns buckets
 * (static, valid for the whole process, never to be freed).  Reading
 * writes min(cap, n) counts, like snprintf: n says how many there are, so
 * an array of GORT_METRIC_HIST_BUCKETS always suffices.  Nothing is
 * allocated, so nothing can leak.
 */
typedef struct gort_histogram {
    uint64_t *counts;      /* in: where to put the counts, or NULL */
    size_t cap;            /* in: entries counts can hold */
    size_t n;              /* out: buckets of this histogram */
    const double *buckets; /* out: the n + 1 boundaries, in seconds */
    uint64_t total;        /* out: all samples (the sum of the counts) */
} gort_histogram;

/* One metric to read (Go's metrics.Sample): the caller sets name (and, for
 * a histogram, hist.counts and hist.cap); gort_metrics_read and
 * gort_metric_read fill in the kind and the value. */
typedef struct gort_metric_sample {
    const char *name; /* in: the metric's name */
    int kind;         /* out: enum gort_metric_kind; GORT_METRIC_BAD for an
                         unknown (or NULL) name */
    uint64_t u64;     /* out, GORT_METRIC_UINT64 */
    double f64;       /* out, GORT_METRIC_FLOAT64 */
    gort_histogram hist; /* in/out, GORT_METRIC_HISTOGRAM */
} gort_metric_sample;

/*
 * Read the metrics named in samples[0..n) (Go's metrics.Read): each
 * sample's kind and value are filled in; an unknown name gets
 * GORT_METRIC_BAD and the others are still read.  Cheap enough to call
 * every second: the cost depends on GOMAXPROCS and the number of threads,
 * not on the number of goroutines (docs/design.md, "Metrics").
 *
 * Returns 0; -EINVAL when samples is NULL with n > 0; -EPERM when no
 * gort_main is running (every kind is then GORT_METRIC_BAD).  Callable
 * from any thread while gort_main runs.
 */
GORT_EXTERN int gort_metrics_read(gort_metric_sample *samples, size_t n);

/* One metric: fills *s for `name` (s->hist's counts and cap are used as
 * given).  Returns 0, -ENOENT for an unknown (or NULL) name (s->kind is
 * then GORT_METRIC_BAD), -EINVAL for s NULL, -EPERM outside gort_main. */
GORT_EXTERN int gort_metric_read(const char *name, gort_metric_sample *s);

/*
 * Every metric in the Prometheus text exposition format (version 0.0.4),
 * with names mapped as the Prometheus Go client maps Go's:
 * "/sched/goroutines-created:goroutines" becomes
 * go_sched_goroutines_created_goroutines_total (path and unit joined with
 * "_", "-" turned into "_", "_total" for cumulative counts), gort's own
 * /gort/... metrics get the prefix gort_ instead of go_.  Histograms are
 * written as _bucket lines (le is the bucket's upper bound, the next
 * double below it since Go's buckets exclude it) and _count; Go's
 * histograms keep no sum, so there is no _sum line.
 *
 * gort_metrics_prometheus stores a malloc'd, NUL-terminated text in *text
 * (free it with free()) and its length in *len (len may be NULL); returns
 * 0, -EINVAL for text NULL, -ENOMEM, or -EPERM outside gort_main.
 * gort_metrics_write_prometheus writes it all to fd (with gort_write, so a
 * goroutine writing to a socket parks rather than blocks); returns the
 * bytes written, -EPERM outside gort_main, -ENOMEM, or the negative errno
 * of a failed write (-EIO for a write of 0 bytes).
 */
GORT_EXTERN int gort_metrics_prometheus(char **text, size_t *len);
GORT_EXTERN long gort_metrics_write_prometheus(int fd);
/* ---------------------------------------------------------------------------
 * Execution trace
 * ------------------------------------------------------------------------- */

/*
 * Record what the scheduler does into the file at path, as Chrome Trace
 * Event JSON (open it in Perfetto, chrome://tracing or the bundled
 * tools/traceview.html): a track per P with a slice for each stretch a
 * goroutine ran ("G12 worker": its id and start function, and why it
 * stopped), a track per thread (M) with the P it held and its syscalls,
 * instants for goroutine creation and wake-up (with arrows to where the
 * goroutine next ran), work stealing, preemption, Ps retaken from
 * syscalls, the network poller and timers, stop-the-world slices, and
 * counters of runnable goroutines and threads; nanosecond timestamps.
 * Starting and stopping stop the world briefly.  Memory is bounded (a
 * fixed pool of buffers); when the file cannot be written fast enough,
 * events are dropped and counted ("dropped_events" in the metadata).
 * Environment: GORTDEBUG=trace=path traces a whole gort_main.
 *
 * Call from a goroutine.  Returns 0; -EINVAL when path is NULL or empty;
 * -EPERM when not called from a goroutine (on a thread gort did not make
 * too); -EBUSY when a trace is already running, or being started or
 * stopped (path is left alone); the -errno of open(2) (-ENOENT, -EISDIR,
 * -EACCES...: nothing is created); -ENOMEM or -EAGAIN.
 */
GORT_EXTERN int gort_trace_start(const char *path);

/*
 * Stop the trace: every event recorded so far is written, goroutines
 * still running end their slices at the stop time, and the file is
 * closed.  A trace still running when gort_main returns is stopped then.
 * Returns 0; -EINVAL when no trace is running; -EBUSY while another
 * goroutine is starting or stopping one; -EPERM when not called from a
 * goroutine (on a thread gort did not make too); the -errno of a failed
 * write (the trace is stopped all the same, the file incomplete).
 */
GORT_EXTERN int gort_trace_stop(void);

/* ---------------------------------------------------------------------------
 * Simulation mode.  GORTDEBUG=sim=SEED runs the program under a seeded,
 * replayable scheduler on a virtual clock (docs/sim.md).
 * ------------------------------------------------------------------------- */

/*
 * Whether the program runs in the simulation mode (GORTDEBUG=sim=SEED):
 * one thread runs the goroutines in an order drawn from the seed, and
 * gort_nanotime, sleeps and deadlines follow a virtual clock.  False
 * before gort_main and after it returns.  Callable from any thread.
 */
GORT_EXTERN bool gort_sim_active(void);

/*
 * Whether to inject a fault here: in the simulation mode, true with the
 * chance GORTDEBUG=simfault=N gives (N faults per million calls, 0 to
 * 1000000; default 0, never), drawn from the seed, so that a replay with
 * the same seed injects the same faults at the same calls.  The faults
 * have their own random state: the draws change no scheduling choice
 * (what the program does with a fault may).  Outside the mode always
 * false, at the cost of one load.  Call from a goroutine; on a thread
 * that is not running one (a thread gort did not create) it returns false
 * and draws nothing, since such a thread runs when the kernel runs it and
 * its draws could not be replayed.  Typical use: before a call whose
 * failure the program must survive, take the error path as if the call
 * had failed (docs/sim.md has an example).
 */
GORT_EXTERN bool gort_sim_fault(void);

/*
 * A preemption point for the simulation mode, in the program's own code
 * (the mode has no signal-based preemption): after a number of calls
 * drawn from the seed, 1 to 16, the call is a point as a gort call is,
 * where the strategy may make the goroutine yield.  For loops that call
 * no gort function; gort_simpoints.h makes every function entry of code
 * compiled with -finstrument-functions call it.  Outside the mode, off a
 * goroutine's stack (a signal handler on the alternate stack, a thread
 * gort did not create) or with preemption disabled it does nothing, at
 * the cost of one load outside the mode.
 */
GORT_EXTERN void gort_sim_point(void);

#ifdef __cplusplus
}
#endif

#endif /* GORT_H */
