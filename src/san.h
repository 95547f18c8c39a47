/* SPDX-License-Identifier: MIT */
/*
 * san.h - AddressSanitizer and ThreadSanitizer in the program, found at
 * run time.  Implemented in san.c, which explains the design.
 *
 * One libgort serves programs built with and without the sanitizers: the
 * sanitizers' interfaces are declared weak, and gort__san says, from
 * before main() on, which of them the process has.  Everything here costs
 * an ordinary build one predictable branch on that word where it is used
 * (a context switch, a goroutine's start and exit, a public entry point).
 *
 * What each tool gets:
 *   ASAN      every stack switch is announced (start/finish_switch_fiber),
 *             and a goroutine's stack is unpoisoned before it is reused.
 *   TSAN      every goroutine runs on a fiber (kept by its G), started
 *             after its creator's past; the synchronisation that gort
 *             offers (channels, select, Mutex, RWMutex, WaitGroup, Once,
 *             Cond, timers, close of a polled descriptor, the end of the
 *             main goroutine) is announced as happens-before edges on the
 *             object's address (gort__san_acquire/release).
 *   TSAN_LIB  TSAN, and libgort itself is not instrumented (the usual
 *             case): gort's own code runs with ThreadSanitizer ignoring
 *             memory accesses (the libc functions it calls included), as
 *             ignore_noninstrumented_modules makes it do for a library;
 *             switches carry no happens-before of their own; a dead
 *             goroutine's stack gets fresh pages, so that the next
 *             goroutine on it does not race with the last one's frames.
 */
#ifndef GORT_SAN_H
#define GORT_SAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sanitizers' interfaces (sanitizer/common_interface_defs.h,
 * sanitizer/tsan_interface.h), weak: NULL when the tool is absent. */
void __sanitizer_start_switch_fiber(void **fake_stack_save,
                                    const void *bottom, size_t size)
    __attribute__((weak));
void __sanitizer_finish_switch_fiber(void *fake_stack_save,
                                     const void **bottom_old,
                                     size_t *size_old) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile *addr, size_t size)
    __attribute__((weak));
void __lsan_register_root_region(const void *p, size_t size)
    __attribute__((weak));
void *__tsan_get_current_fiber(void) __attribute__((weak));
void *__tsan_create_fiber(unsigned flags) __attribute__((weak));
void __tsan_destroy_fiber(void *fiber) __attribute__((weak));
void __tsan_switch_to_fiber(void *fiber, unsigned flags)
    __attribute__((weak));
void __tsan_set_fiber_name(void *fiber, const char *name)
    __attribute__((weak));
void __tsan_acquire(void *addr) __attribute__((weak));
void __tsan_release(void *addr) __attribute__((weak));
void __tsan_ignore_thread_begin(void) __attribute__((weak));
void __tsan_ignore_thread_end(void) __attribute__((weak));

enum {
    GORT_SAN_ASAN = 1,
    GORT_SAN_TSAN = 2,
    GORT_SAN_TSAN_LIB = 4,
};

/* GORT_SAN_* bits; written once by a constructor before main() and
 * threads exist, read-only afterwards (plain loads). */
__attribute__((visibility("hidden"))) extern uint32_t gort__san;
/* Non-zero when the process runs under Valgrind (RUNNING_ON_VALGRIND, 0
 * when gort was built without <valgrind/valgrind.h>); set with gort__san.
 * gort then avoids the system calls Valgrind does not know (it warns on
 * each) and asynchronous preemption (Valgrind keeps its own signal
 * frames). */
__attribute__((visibility("hidden"))) extern uint32_t gort__valgrind;

struct g;
struct gstack;

/* A context switch with the sanitizers told (the caller checked
 * gort__san); same contract as gort__ctx_switch.  dying: `from` never
 * runs again. */
__attribute__((visibility("hidden"))) void *
gort__san_switch(struct g *from, struct g *to, void *arg, int dying);
/* First thing on a new goroutine's stack: finish the switch that started
 * it (ASan), enter gort's ignored region (TSAN_LIB). */
__attribute__((visibility("hidden"))) void gort__san_gostart(void);
/* Call a function of the program from inside gort (a goroutine's body, a
 * deferred handler, a Once's function): ThreadSanitizer must watch it. */
__attribute__((visibility("hidden"))) void gort__san_call(void (*fn)(void *),
                                                          void *arg);
/* gp is about to run a new goroutine, started by the running one (TSAN:
 * gp's fiber, made if it has none, and the happens-before of gort_go,
 * which gostart acquires on gp). */
__attribute__((visibility("hidden"))) void gort__san_g_new(struct g *gp);
/* gp's goroutine has ended and gp no longer runs (its context is saved
 * for good): clean its stack for the next user, drop a stale fiber. */
__attribute__((visibility("hidden"))) void gort__san_g_dead(struct g *gp);
/* gort_main starts (AddressSanitizer: LeakSanitizer's view of goroutine
 * stacks at exit()). */
__attribute__((visibility("hidden"))) void gort__san_main_start(void);
/* At shutdown, for every G left: drop its fiber if ThreadSanitizer
 * allows (see san.c). */
__attribute__((visibility("hidden"))) void gort__san_g_teardown(struct g *gp);
/* A thread starts running gort: record its context as g0's fiber (g0 may
 * be NULL: a thread that never switches).  runtime_thread: one of gort's
 * own threads, which run only gort's code (TSAN_LIB: ignored for their
 * whole life); gort__san_thread_end(1) before such a thread exits. */
__attribute__((visibility("hidden"))) void
gort__san_thread_start(struct g *g0, int runtime_thread);
__attribute__((visibility("hidden"))) void
gort__san_thread_end(int runtime_thread);
/* Signals under ThreadSanitizer.  The sanitizer runs the handler of an
 * asynchronous signal only when the fiber that was running as it came
 * next enters an intercepted call: a goroutine that parks first keeps it
 * until it runs again (for good, if it waits for that very signal), and
 * a thread asleep in a futex, which gort calls directly, enters none.
 * While gort__san_sigwatch is set (signal.c: channels are notified of
 * signals; relaxed, a late sighting only delays a handler), a switch
 * blocks the asynchronous signals across it, running the outgoing
 * fiber's deferred handlers as it blocks them and letting what came
 * meanwhile in on the incoming one (gort__san_switch), and a note's sleep
 * wakes every 10 ms to run its thread's (Go's notesleep does the same
 * with cgo_yield).
 *
 * And the sanitizer makes a fiber's (or thread's) signal state at its
 * first call of an interceptor that may block, losing a signal that comes
 * meanwhile (the handler makes a second one, which the interrupted call
 * then replaces; LLVM has since made it a compare-and-swap).  So gort
 * makes it while the asynchronous signals are blocked: for a new thread
 * of gort's before minit unblocks them (os_linux.c), for M0 at
 * gort_main's start, for a fiber as a watched switch enters it.
 *
 * gort__san_yield is that call, a zero-length nanosleep through the
 * interceptor: it makes the signal state and runs the deferred handlers.
 * The caller checked gort__san. */
__attribute__((visibility("hidden"))) extern uint32_t gort__san_sigwatch;
__attribute__((visibility("hidden"))) void gort__san_yield(void);

/* A gort-hook call of gp's begins and ends (src/hook.c): with TSAN and
 * libgort instrumented, it runs on a fiber of its own (see san.c);
 * gort__san_hook_fiber says whether that is so. */
__attribute__((visibility("hidden"))) void gort__san_hook_enter(struct g *gp);
__attribute__((visibility("hidden"))) void gort__san_hook_leave(struct g *gp);
static inline bool gort__san_hook_fiber(void)
{
    return __builtin_expect((gort__san & (GORT_SAN_TSAN | GORT_SAN_TSAN_LIB)) ==
                                GORT_SAN_TSAN,
                            0);
}

/* TSAN_LIB: gort's own code runs with ThreadSanitizer ignoring memory
 * accesses.  Public entry points open the region with GORT_SAN_SCOPE()
 * (it closes when the function returns), or, on hot paths, branch once to
 * a variant that calls gort__san_enter/leave. */
static inline void gort__san_enter(void)
{
    if (gort__san & GORT_SAN_TSAN_LIB)
        __tsan_ignore_thread_begin();
}
static inline void gort__san_leave(void)
{
    if (gort__san & GORT_SAN_TSAN_LIB)
        __tsan_ignore_thread_end();
}
static inline uint32_t gort__san_scope_begin(void)
{
    uint32_t on = gort__san & GORT_SAN_TSAN_LIB;
    if (__builtin_expect(on != 0, 0))
        __tsan_ignore_thread_begin();
    return on;
}
static inline void gort__san_scope_end(const uint32_t *on)
{
    if (__builtin_expect(*on != 0, 0))
        __tsan_ignore_thread_end();
}
#define GORT_SAN_SCOPE()                                                       \
    __attribute__((cleanup(gort__san_scope_end), unused))                      \
    const uint32_t gort_san_scope_ = gort__san_scope_begin()

/* Call fn(arg), a function of the program, from inside gort. */
static inline void gort__san_callback(void (*fn)(void *), void *arg)
{
    if (__builtin_expect((gort__san & GORT_SAN_TSAN_LIB) != 0, 0))
        gort__san_call(fn, arg);
    else
        fn(arg);
}

/* Happens-before for ThreadSanitizer: every acquire of addr sees what
 * came before every earlier release of addr.  No-ops without TSAN. */
static inline void gort__san_acquire(const void *addr)
{
    if (__builtin_expect((gort__san & GORT_SAN_TSAN) != 0, 0))
        __tsan_acquire((void *)addr);
}
static inline void gort__san_release(const void *addr)
{
    if (__builtin_expect((gort__san & GORT_SAN_TSAN) != 0, 0))
        __tsan_release((void *)addr);
}
/* Both, under an object's lock: the operation is ordered after every
 * earlier one on the object and before every later one. */
static inline void gort__san_sync(const void *addr)
{
    if (__builtin_expect((gort__san & GORT_SAN_TSAN) != 0, 0)) {
        __tsan_acquire((void *)addr);
        __tsan_release((void *)addr);
    }
}

#endif /* GORT_SAN_H */
