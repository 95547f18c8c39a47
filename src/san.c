/* SPDX-License-Identifier: MIT */
/*
 * san.c - AddressSanitizer and ThreadSanitizer for programs that use
 * gort, with one libgort for every program.
 *
 * A program built with -fsanitize=address or -fsanitize=thread links the
 * same libgort as any other.  The sanitizers' interfaces are declared weak
 * (san.h): a program without them leaves them NULL, one with them
 * provides them, and a constructor records which are there in gort__san
 * before main() runs.  Every hook below is reached through one predictable
 * branch on that word; an ordinary program pays nothing else.
 *
 * AddressSanitizer keeps the bounds of the stack each thread runs on (for
 * __asan_handle_no_return, the fake stacks of detect_stack_use_after_return
 * and leak scanning).  A goroutine switch changes stacks behind its back,
 * so every switch is announced (__sanitizer_start_switch_fiber before,
 * __sanitizer_finish_switch_fiber after; a goroutine's first run finishes
 * the switch in gostart).  Frames that never returned (gort_goexit, a
 * goroutine discarded at shutdown) leave their redzones poisoned, so a
 * stack is unpoisoned before another goroutine uses it.  The sanitizer's
 * calls in a switch may make system calls (a fake stack is mapped or
 * unmapped); they run with m->locks raised, so that the preemption
 * signal does not take them for a blocking call of the program's own.
 * LeakSanitizer scans the stacks of threads, not of parked goroutines: a
 * program that calls exit() while goroutines hold the only pointers to
 * some blocks would see them reported.  So, when exit() is called inside
 * gort_main, an atexit handler (run before LeakSanitizer's check, which
 * was registered earlier) registers the live part of every goroutine's
 * stack as a root region.
 *
 * ThreadSanitizer needs more.  Its view of "a thread" (vector clock,
 * shadow call stack) must follow the goroutine, not the OS thread, and it
 * must see the happens-before that gort's synchronisation gives, which in
 * an uninstrumented library it cannot see:
 *
 *   - Each goroutine runs on a TSan fiber, and each M's g0 on its
 *     thread's own context.  A fiber is expensive (the runtime keeps a
 *     512 KiB shadow call stack in it: about 0.8 MiB resident and a few
 *     milliseconds to create here), so it belongs to the G, made for its
 *     first goroutine and kept for the next ones; gort_go releases on the
 *     G and the new goroutine acquires there before its body runs (Go's
 *     `go` statement: the creator's past happens before).  A goroutine
 *     that ended in gort_goexit leaves frames that never returned on the
 *     fiber's shadow call stack, so its G gets a fresh fiber next time.
 *     Switches use __tsan_switch_to_fiber without synchronisation: two
 *     goroutines that take turns on one thread are as unordered as two
 *     threads, so a race between them is found even with GORTMAXPROCS=1.
 *     The price of keeping fibers: a goroutine inherits, in the eyes of
 *     ThreadSanitizer, the past of the goroutines that ran before it on
 *     the same G, and a race with those goes unreported.
 *   - The synchronisation gort offers is announced on the object's
 *     address (gort__san_acquire/release/sync): every operation on a
 *     channel is ordered after the earlier ones on it (a little more than
 *     Go's memory model promises: two sends on one channel are ordered
 *     too); Mutex unlock -> lock; RWMutex writer unlock -> read lock and
 *     read unlock -> write lock; WaitGroup Done -> Wait's return; Once's
 *     function -> every gort_once_do return; Cond signal -> the woken
 *     Wait; timer make/reset -> its firing (its function's goroutine, its
 *     channel's value); gort_close of a polled descriptor -> the calls it
 *     interrupts; the main goroutine's end -> gort_main's return.  Data
 *     through pipes and sockets is ordered by ThreadSanitizer's own model
 *     of descriptors (write -> read), as gort calls libc's read/write.
 *   - gort's own code runs with ThreadSanitizer ignoring memory accesses
 *     (__tsan_ignore_thread_begin/end): its libc calls (malloc and free of
 *     runtime structures, memcpy of channel elements, clock_gettime, read)
 *     would otherwise be checked against a synchronisation it cannot see
 *     (the run queues, futexes and atomics of an uninstrumented library).
 *     This is what ThreadSanitizer does by itself for a shared library
 *     named in ignore_noninstrumented_modules; here it works for the
 *     static library too.  Public entry points open the region
 *     (GORT_SAN_SCOPE, or a branch to a variant on hot paths), gort's
 *     threads stay in it for their whole life, and calls back into the
 *     program (a goroutine's body, a deferred handler, a Once's function)
 *     leave it (gort__san_call).  Accesses gort makes on the program's
 *     behalf (copying a channel element, read(2) into a buffer) are
 *     therefore not checked.
 *   - A dead goroutine's stack gets fresh pages (mmap MAP_FIXED over its
 *     usable part; the guard below stays) before another goroutine runs
 *     on it: ThreadSanitizer forgets the accesses made to memory that is
 *     mapped again, and the next goroutine's frames, which nothing orders
 *     after the last one's, would otherwise race with them.  (Ordering
 *     the two goroutines instead would be cheaper, but would hide every
 *     real race between them: stacks are reused at once, LIFO.)
 *   - ThreadSanitizer refuses to end a fiber while its ignores are on.  A
 *     goroutine leaves the ignored region as its last switch begins, so
 *     its fiber can be destroyed or serve the next goroutine; goroutines
 *     discarded at shutdown while parked inside gort cannot, and their
 *     fibers are left to the ThreadSanitizer runtime (one per discarded
 *     goroutine).
 *   - Asynchronous preemption is off (preempt.c): ThreadSanitizer delays
 *     asynchronous signals to points of its own choosing.
 *
 * A libgort built with -DGORT_SANITIZE=thread (the test suite's TSan
 * build) is instrumented itself: ThreadSanitizer then sees gort's own
 * synchronisation and checks gort's own accesses, so there is no ignored
 * region and every switch synchronises the two fibers (gort's hand-off
 * work after a switch, on the next goroutine's fiber, depends on it).
 * gort-hook's calls need one thing more there.  The program's read or
 * poll reaches gort-hook through ThreadSanitizer's interceptor, which
 * takes it for a blocking call: until it returns, the calling fiber's
 * atomics are not modelled and the interceptors it reaches are passed
 * through (ignore_interceptors).  The hooked call runs the scheduler
 * (parking, readying, locks, new threads), whose happens-before lies in
 * exactly those, so it runs on a second fiber of the G's
 * (gort__san_hook_enter/leave), entered and left with synchronisation:
 * to the goroutine it is one stretch of its life.  The second fiber is
 * kept with the G, as the first is.
 *
 * Valgrind needs nothing at run time beyond what stack.c does: every
 * stack is registered (VALGRIND_STACK_REGISTER) while it is allocated, so
 * that Memcheck takes a switch of stacks for one and not for a huge frame.
 */
#include "arch.h"
#include "atomic.h"
#include "defs.h"
#include "libc.h"
#include "lock_futex.h"
#include "san.h"
#include "sched.h"
#include "stack.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

uint32_t gort__san;
uint32_t gort__valgrind;

/* Priority 101, the first one allowed: before any constructor of the
 * program that might start gort. */
__attribute__((constructor(101))) static void san_detect(void)
{
    uint32_t s = 0;
    if (__sanitizer_start_switch_fiber && __sanitizer_finish_switch_fiber &&
        __asan_unpoison_memory_region)
        s |= GORT_SAN_ASAN;
    if (__tsan_get_current_fiber && __tsan_create_fiber &&
        __tsan_destroy_fiber && __tsan_switch_to_fiber &&
        __tsan_set_fiber_name && __tsan_acquire && __tsan_release &&
        __tsan_ignore_thread_begin && __tsan_ignore_thread_end) {
        s |= GORT_SAN_TSAN;
#ifndef GORT_TSAN
        s |= GORT_SAN_TSAN_LIB;
#endif
    }
    gort__san = s;
    gort__valgrind = RUNNING_ON_VALGRIND ? 1 : 0;
}

uint32_t gort__san_sigwatch;

void gort__san_yield(void)
{
    /* A zero-length sleep: the interceptor of a call that may block both
     * makes the fiber's signal state and runs the deferred handlers. */
    int saved_errno = errno;
    struct timespec ts = {0, 0};
    gort__libc.nanosleep(&ts, NULL);
    errno = saved_errno;
}

/* Block the asynchronous signals (the faults stay open: blocked, they
 * would kill the process unreported), through the interceptor. */
static void block_async(sigset_t *old)
{
    sigset_t set;
    sigfillset(&set);
    sigdelset(&set, SIGSEGV);
    sigdelset(&set, SIGBUS);
    sigdelset(&set, SIGFPE);
    sigdelset(&set, SIGILL);
    sigdelset(&set, SIGTRAP);
    sigdelset(&set, SIGABRT);
    sigdelset(&set, SIGSYS);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void asan_finish_switch(void *fake_stack)
{
    struct m *mp = gort__getm_raw();
    mp->locks++;
    __sanitizer_finish_switch_fiber(fake_stack, NULL, NULL);
    mp->locks--;
}

/* __tsan_switch_to_fiber's flag: no happens-before between the fibers. */
#define TSAN_SWITCH_NO_SYNC 1u

void *gort__san_switch(struct g *from, struct g *to, void *arg, int dying)
{
    uint32_t san = gort__san;
    if (san & GORT_SAN_ASAN) {
        struct m *mp = gort__getm_raw();
        mp->locks++; /* not a blocking call of the program's (see above) */
        __sanitizer_start_switch_fiber(dying ? NULL : &from->asan_fake_stack,
                                       (const void *)to->stack.lo,
                                       to->stack.hi - to->stack.lo);
        mp->locks--;
    }
    /* Signals that came while from ran are handled before it leaves
     * (gort__san_sigwatch, san.h); none comes during the switch. */
    bool watch = (san & GORT_SAN_TSAN) && load_relaxed(&gort__san_sigwatch);
    sigset_t mask;
    struct m *mp = watch ? gort__getm_raw() : NULL;
    if (watch) {
        mp->locks++; /* handlers run here: not the program's own code */
        block_async(&mask);
    }
    if (san & GORT_SAN_TSAN) {
        GORT_ASSERT(to->tsan_fiber != NULL);
        if (san & GORT_SAN_TSAN_LIB) {
            /* A dying goroutine was inside gort (one level: gostart's or
             * gort_goexit's); its fiber is destroyed once it is off this
             * stack, which ThreadSanitizer allows only without ignores. */
            if (dying)
                __tsan_ignore_thread_end();
            __tsan_switch_to_fiber(to->tsan_fiber, TSAN_SWITCH_NO_SYNC);
        } else {
            __tsan_switch_to_fiber(to->tsan_fiber, 0);
        }
    }
    if (watch) {
        /* On to's fiber now: its signal state is made while nothing can
         * come (san.h), then what came meanwhile is handled there. */
        gort__san_yield();
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
        mp->locks--;
    }
    void *ret = gort__ctx_switch(&from->sched_sp, to->sched_sp, arg);
    /* Back on from's stack, maybe on another thread. */
    if (san & GORT_SAN_ASAN)
        asan_finish_switch(from->asan_fake_stack);
    return ret;
}

void gort__san_gostart(void)
{
    if (gort__san & GORT_SAN_ASAN)
        asan_finish_switch(NULL);
    gort__san_enter();
}

void gort__san_call(void (*fn)(void *), void *arg)
{
    gort__san_leave();
    fn(arg);
    gort__san_enter();
}

void gort__san_g_new(struct g *gp)
{
    if (!(gort__san & GORT_SAN_TSAN))
        return;
    if (!gp->tsan_fiber)
        gp->tsan_fiber = __tsan_create_fiber(0);
    /* Reports then name "goroutine N" (the name is copied). */
    char name[32];
    snprintf(name, sizeof name, "goroutine %lld", (long long)gp->goid);
    __tsan_set_fiber_name(gp->tsan_fiber, name);
    /* gort_go happens before the goroutine's body (gostart acquires). */
    __tsan_release(gp);
}

void gort__san_hook_enter(struct g *gp)
{
    if (!gp->tsan_hook_fiber) {
        gp->tsan_hook_fiber = __tsan_create_fiber(0);
        /* Named once: naming takes ThreadSanitizer's registry lock, which
         * a call from inside its own reporting (its symbolizer reads
         * files) would wait for forever. */
        __tsan_set_fiber_name(gp->tsan_hook_fiber, "gort-hook call");
    }
    /* The G runs on the second fiber until the call ends: a park inside
     * it resumes there.  The two swap places, the outer one kept in the
     * hook's slot until the call ends. */
    void *outer = gp->tsan_fiber;
    gp->tsan_fiber = gp->tsan_hook_fiber;
    gp->tsan_hook_fiber = outer;
    __tsan_switch_to_fiber(gp->tsan_fiber, 0);
}

void gort__san_hook_leave(struct g *gp)
{
    int e = errno; /* the call's result, whatever the switch does */
    void *hook = gp->tsan_fiber;
    gp->tsan_fiber = gp->tsan_hook_fiber;
    gp->tsan_hook_fiber = hook;
    __tsan_switch_to_fiber(gp->tsan_fiber, 0);
    errno = e;
}

void gort__san_g_dead(struct g *gp)
{
    uint32_t san = gort__san;
    if (san & GORT_SAN_ASAN)
        __asan_unpoison_memory_region((void *)gp->stack.lo,
                                      gp->stack.hi - gp->stack.lo);
    if ((san & GORT_SAN_TSAN) && gp->tsan_stale) {
        /* Its frames never returned: a fresh fiber next time. */
        __tsan_destroy_fiber(gp->tsan_fiber);
        gp->tsan_fiber = NULL;
        gp->tsan_stale = false;
    }
    if (san & GORT_SAN_TSAN_LIB) {
        gort__san_enter(); /* the remap is gort's business, not checked */
        gort__stack_renew(&gp->stack);
        gort__san_leave();
    }
}

void gort__san_g_teardown(struct g *gp)
{
    if (!(gort__san & GORT_SAN_TSAN))
        return;
    /* Inside a gort-hook call (discarded there: only with libgort
     * instrumented, no ignores on either fiber) the slot holds the outer
     * fiber; either way the one not running goes. */
    if (gp->tsan_hook_fiber)
        __tsan_destroy_fiber(gp->tsan_hook_fiber);
    gp->tsan_hook_fiber = NULL;
    /* The fiber shares its word with ASan's fake-stack slot. */
    if (!gp->tsan_fiber)
        return;
    /* A G that never ran, or that ended (the main goroutine), has no
     * ignores on; one discarded while parked inside gort has (see the
     * file comment). */
    if (!(gort__san & GORT_SAN_TSAN_LIB) || !gp->sched_sp ||
        gort__readgstatus(gp) == G_DEAD)
        __tsan_destroy_fiber(gp->tsan_fiber);
    gp->tsan_stale = false;
    gp->tsan_fiber = NULL;
}

void gort__san_thread_start(struct g *g0, int runtime_thread)
{
    if (!(gort__san & GORT_SAN_TSAN))
        return;
    if (g0)
        g0->tsan_fiber = __tsan_get_current_fiber();
    if (runtime_thread)
        gort__san_enter();
}

void gort__san_thread_end(int runtime_thread)
{
    if (runtime_thread)
        gort__san_leave();
}

/* exit() inside gort_main: give LeakSanitizer the live part of every
 * goroutine's stack (see the file comment).  A parked goroutine's context
 * is saved at sched_sp; for one running on another thread now the whole
 * usable stack is taken.  Stacks stay mapped while gort runs, so the
 * regions are readable whatever those goroutines do meanwhile. */
static void lsan_roots_at_exit(void)
{
    if (!load_acq(&gort__main_started))
        return;
    gort__lock(&gort__allglock);
    for (uint32_t i = 0; i < gort__allglen; i++) {
        struct g *gp = gort__allgs[i];
        uint32_t st = gort__readgstatus(gp);
        if (st == G_DEAD || st == G_IDLE || !gp->stack.lo || gp->foreign)
            continue;
        uintptr_t lo = gp->stack.lo;
        uintptr_t sp = (uintptr_t)gp->sched_sp;
        if ((st == G_WAITING || st == G_RUNNABLE) && sp > lo &&
            sp < gp->stack.hi)
            lo = sp;
        __lsan_register_root_region((const void *)lo, gp->stack.hi - lo);
        /* Preempted deep in its stack: its registers were copied to its
         * preemption stack (preempt.c), and may hold the only pointers. */
        if (gp->preemptstk)
            __lsan_register_root_region((const void *)gp->preemptstk,
                                        GORT_PREEMPT_STK);
    }
    gort__unlock(&gort__allglock);
}

void gort__san_main_start(void)
{
    static uint32_t registered;
    if (!(gort__san & GORT_SAN_ASAN) || !__lsan_register_root_region)
        return;
    /* Relaxed: gort_main runs one at a time; this only avoids a second
     * registration by a later gort_main. */
    if (load_relaxed(&registered))
        return;
    store_relaxed(&registered, 1);
    atexit(lsan_roots_at_exit);
}
