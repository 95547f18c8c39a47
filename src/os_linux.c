/* SPDX-License-Identifier: MIT */
/*
 * os_linux.c - threads, clocks and signals on Linux.
 *
 * Ms are pthreads created joinable with a modest stack (their g0 stack runs
 * only the scheduler and runtime code).  Every M gets an alternate signal
 * stack so that a goroutine stack overflow, which faults with the stack
 * pointer inside the guard page, can still be reported.  The size comes
 * from getauxval(AT_MINSIGSTKSZ) at run time: an AVX-512 signal frame is
 * about 3.4 KB and AMX machines need over 8 KB.
 *
 * The SIGSEGV/SIGBUS handler reports a fault in the running goroutine's
 * guard page as "stack overflow" naming the goroutine.  Any other
 * SIGSEGV, SIGBUS, SIGFPE or SIGILL the kernel raises on a thread of
 * gort's (one with an M that gort created) goes to the handler that was
 * installed before gort, if there was one; if not, it is reported as Go
 * reports a signal it cannot turn into a panic (sigpanic's throw and
 * dopanic_m in panic.go/signal_unix.go):
 *
 *   unexpected fault address 0x0          (SIGSEGV and SIGBUS)
 *   gort: fatal error: fault              ("unexpected signal" for the others)
 *   [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x55...]
 *
 *   goroutine 7 [running]:                the faulting goroutine, from
 *   crasher(...)                          the signal's context; then the
 *   ...                                   others, as GORTTRACEBACK says
 *
 * and the process then dies by that same signal: the default action is
 * restored and the handler returns, so the instruction faults again and
 * the shell reports the signal and the kernel writes a core.  A fault on
 * a thread without an M (the program's own threads), or one sent by
 * kill(2), goes to the earlier handler or the default action likewise.
 * A handler the program installs after gort_main started replaces ours
 * and is left in place when gort_main returns.
 *
 * SIGQUIT dumps every goroutine and exits with status 2, as in Go, unless
 * the program had a handler of its own (or ignored SIGQUIT) when
 * gort_main started; a handler it installs later replaces ours.
 *
 * Invariants:
 *   - Signal handlers call only async-signal-safe functions until they
 *     decide the process is dying.
 *   - gort__signals_install/restore bracket one gort_main.
 */
#include "atomic.h"
#include "fatal.h"
#include "libc.h"
#include "os_linux.h"
#include "san.h"
#include "sched.h"
#include "stack.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

/* g0 stacks of new Ms: the scheduler, the runtime's C code and the dump
 * printer run there; 256 KiB of address space, committed as touched. */
#define GORT_G0_STACK_SIZE (256 * 1024)

/* The synchronous signals gort reports, with Go's names for them
 * (sigtable), and the actions they had before gort installed its own. */
static const struct {
    int sig;
    const char *name;
} crash_sigs[] = {
    {SIGSEGV, "SIGSEGV: segmentation violation"},
    {SIGBUS, "SIGBUS: bus error"},
    {SIGFPE, "SIGFPE: floating-point exception"},
    {SIGILL, "SIGILL: illegal instruction"},
};
#define NCRASH (sizeof crash_sigs / sizeof crash_sigs[0])
static struct sigaction old_crash[NCRASH];
static bool signals_installed;
static bool quit_installed;  /* our SIGQUIT handler is in place */
static sigset_t initmask; /* the gort_main thread's mask at start */
/* Signals 1..64 of initmask, bit sig - 1 (the kernel's layout of a saved
 * mask): set before any handler that reads it is installed. */
static uint64_t initmask_bits;

bool gort__sigmask_beyond_init(const sigset_t *saved)
{
    /* Only the first 64 bits: a signal frame holds the kernel's 8-byte
     * mask, and what follows it in glibc's larger sigset_t is not a mask
     * at all. */
    uint64_t bits;
    memcpy(&bits, saved, sizeof bits);
    return (bits & ~initmask_bits) != 0;
}

int32_t gort__gettid(void)
{
    return (int32_t)syscall(SYS_gettid);
}

int64_t gort__nanotime_real(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The program's clock: the monotonic one, or in the simulation mode the
 * virtual one (docs/sim.md), which timers and deadlines follow too. */
int64_t gort_nanotime(void)
{
    if (gort__sim_on())
        return load_relaxed(&gort__sim.now); /* one M writes it */
    return gort__nanotime_real();
}

uint64_t gort__process_cputime(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gort__thread_cputime(int32_t tid)
{
    /* The clock id pthread_getcpuclockid makes from a thread id (the
     * scheduler's CPU clock of that thread); the caller's own by its
     * constant. */
    clockid_t c = tid == 0 ? CLOCK_THREAD_CPUTIME_ID
                           : (clockid_t)((~(uint32_t)tid << 3) | 6);
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void gort__osyield(void)
{
    sched_yield();
}

void gort__usleep(int64_t us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (gort__libc.nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Where a signal's ucontext keeps the interrupted registers. */
#if defined(__x86_64__)
#define UC_PC_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP])
#define UC_SP_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP])
#define UC_FP_OFF offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP])
#define UC_LR_OFF 0 /* none */
#elif defined(__aarch64__)
#define UC_PC_OFF offsetof(ucontext_t, uc_mcontext.pc)
#define UC_SP_OFF offsetof(ucontext_t, uc_mcontext.sp)
#define UC_FP_OFF offsetof(ucontext_t, uc_mcontext.regs[29])
#define UC_LR_OFF offsetof(ucontext_t, uc_mcontext.regs[30])
#else
#error "gort: signal contexts need a port to this processor"
#endif

/* One word of a stack being walked.  Not instrumented: it may lie in a
 * redzone AddressSanitizer poisoned, and its owner may be writing it (a
 * racy read by design). */
__attribute__((noinline, no_sanitize("address", "thread", "undefined")))
uintptr_t gort__peek(uintptr_t addr)
{
    return *(volatile const uintptr_t *)addr;
}

void gort__trap_from_ucontext(struct gort_trap *t, const void *uc)
{
    uintptr_t u = (uintptr_t)uc;
    t->pc = gort__peek(u + UC_PC_OFF);
    t->sp = gort__peek(u + UC_SP_OFF);
    t->fp = gort__peek(u + UC_FP_OFF);
    t->lr = UC_LR_OFF ? gort__peek(u + UC_LR_OFF) : 0;
}

int gort__newosproc(struct m *mp, void *(*start)(void *))
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr))
        return -ENOMEM;
    pthread_attr_setstacksize(&attr, GORT_G0_STACK_SIZE);
    /* Block all signals while the thread starts: it must not run a handler
     * before minit has set up its signal stack and TLS.  The new thread
     * inherits the mask and restores it in minit. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct m *self = gort__libc_begin();
    int err = pthread_create(&mp->thread, &attr, start, mp);
    gort__libc_end(self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    /* Release: publishes mp->thread to join_ms (boot.c), which may walk
     * allm while this thread is still here, after mp went on the list. */
    if (!err)
        store_rel(&mp->threadset, 1u);
    return err ? -err : 0;
}

static size_t sigaltstack_size(void)
{
    size_t min = (size_t)getauxval(AT_MINSIGSTKSZ);
    if (min < (size_t)MINSIGSTKSZ)
        min = (size_t)MINSIGSTKSZ;
    /* Room for the kernel frame plus the handler's own frames (it may
     * print and dump goroutines before aborting). */
    return (min + 64 * 1024 + 4095) & ~(size_t)4095;
}

void *gort__malloc(size_t n)
{
    struct m *mp = gort__libc_begin();
    void *p = malloc(n);
    gort__libc_end(mp);
    return p;
}

void *gort__calloc(size_t n, size_t size)
{
    struct m *mp = gort__libc_begin();
    void *p = calloc(n, size);
    gort__libc_end(mp);
    return p;
}

void *gort__realloc(void *p, size_t n)
{
    struct m *mp = gort__libc_begin();
    void *q = realloc(p, n);
    gort__libc_end(mp);
    return q;
}

void gort__free(void *p)
{
    if (!p)
        return;
    struct m *mp = gort__libc_begin();
    free(p);
    gort__libc_end(mp);
}

/* Per-thread set-up, on the new thread.  Mirrors minit (os_linux.go). */
int gort__minit(struct m *mp)
{
    /* Release: sysmon's crowd meter reads it with the M's other fields
     * (sysmon.c). */
    store_rel(&mp->procid, gort__gettid());
    size_t sz = sigaltstack_size();
    void *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return -ENOMEM;
    stack_t ss = {.ss_sp = mem, .ss_size = sz, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) < 0) {
        munmap(mem, sz);
        return -errno;
    }
    mp->sigaltstack_mem = mem;
    mp->sigaltstack_size = sz;
    /* Record the thread's stack bounds as the g0 "stack" (sanitizers). */
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            mp->g0->stack.lo = (uintptr_t)addr;
            mp->g0->stack.hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    if (!mp->is_m0) {
        /* Go's initSigmask: the runtime's threads block what the thread
         * that called gort_main blocked (so that a program reading
         * signals from a signalfd, or with sigwait, gets them), except
         * the signals the runtime itself needs. */
        sigset_t set = initmask;
        sigdelset(&set, SIGURG);
        sigdelset(&set, SIGSEGV);
        sigdelset(&set, SIGBUS);
        sigdelset(&set, SIGFPE);
        sigdelset(&set, SIGILL);
        /* ThreadSanitizer: the thread's signal state before any signal
         * can come (san.h). */
        if (gort__san & GORT_SAN_TSAN)
            gort__san_yield();
        pthread_sigmask(SIG_SETMASK, &set, NULL);
    }
    return 0;
}

/* Undo minit before the thread exits or gort_main returns. */
void gort__unminit(struct m *mp)
{
    if (!mp->sigaltstack_mem)
        return;
    stack_t ss = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    munmap(mp->sigaltstack_mem, mp->sigaltstack_size);
    mp->sigaltstack_mem = NULL;
}

static int crash_index(int sig)
{
    for (int i = 0; i < (int)NCRASH; i++)
        if (crash_sigs[i].sig == sig)
            return i;
    return 0;
}

/* Did the program handle sig itself before gort installed its handler? */
static bool had_handler(const struct sigaction *old)
{
    if (old->sa_flags & SA_SIGINFO)
        return old->sa_sigaction != NULL;
    return old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN;
}

/* Die by sig: its default action, then either the faulting instruction
 * runs again when the handler returns (a fault the kernel raised), or
 * the signal, raised again, is delivered when the handler returns and
 * unblocks it (one sent with kill(2): nothing would fault again). */
static void die_by(int sig, const siginfo_t *info)
{
    signal(sig, SIG_DFL);
    if (info->si_code <= 0)
        raise(sig);
}

/* Give the fault to whoever handled it before gort, or die by it. */
static void chain(int sig, siginfo_t *info, void *uctx)
{
    struct sigaction *old = &old_crash[crash_index(sig)];
    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction) {
            old->sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
        return;
    }
    die_by(sig, info);
}

/* Report a signal raised by a goroutine's (or gort's) own instruction on
 * a thread of gort's, as Go's sigpanic/dopanic_m word one that cannot
 * become a panic; the goroutine dump is the registered hook's, the one
 * SIGQUIT and the stack-overflow report use from their handlers. */
static void crash_report(int sig, const siginfo_t *info,
                         const struct gort_trap *t)
{
    gort__fatal_begin();
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (sig == SIGSEGV || sig == SIGBUS)
        gort__printf(2, "unexpected fault address 0x%lx\n"
                        "gort: fatal error: fault\n",
                     (unsigned long)addr);
    else
        gort__printf(2, "gort: fatal error: unexpected signal\n");
    gort__printf(2, "[signal %s code=0x%x addr=0x%lx pc=0x%lx]\n\n",
                 crash_sigs[crash_index(sig)].name, (unsigned)info->si_code,
                 (unsigned long)addr, (unsigned long)t->pc);
    gort__fatal_dump(2, t, false);
}

/* A goroutine's stack pointer this far below its stack is still taken
 * for its overflow: an unguarded (canary) stack overflows through the
 * stacks below it in its arena (8 MiB) until it faults. */
#define OVERFLOW_SP_SLACK ((uintptr_t)64 << 20)

/* Why the fault at addr, with the interrupted stack pointer sp, is gp's
 * stack overflow, or NULL: in its guard region; its stack pointer below
 * its stack (not on its thread's own stack, nor on its preemption stack);
 * or, on a canary-guarded stack, its canary overwritten (the fault is a
 * consequence of the overflow). */
static const char *overflow_kind(struct m *mp, struct g *gp, uintptr_t addr,
                                 uintptr_t sp)
{
    if (!gp || gp->foreign || !gp->stack.lo)
        return NULL;
    if (gort__stack_is_guard(gp, addr))
        return "in its guard";
    bool on_g0 = sp >= mp->g0->stack.lo && sp < mp->g0->stack.hi;
    uintptr_t pstk = gort__preemptstk(gp);
    bool on_pstk = pstk && sp >= pstk && sp < pstk + GORT_PREEMPT_STK;
    if (sp < gp->stack.lo && sp + OVERFLOW_SP_SLACK > gp->stack.lo &&
        !on_g0 && !on_pstk)
        return "with its stack pointer below its stack";
    if (gp->stack.guard == STACK_GUARD_CANARY &&
        !gort__stack_canary_ok(gp->stack.lo))
        return "after its canary was overwritten";
    return NULL;
}

/* SIGSEGV, SIGBUS, SIGFPE and SIGILL (see the top of the file). */
static void fault_handler(int sig, siginfo_t *info, void *uctx)
{
    struct m *mp = gort__getm_raw();
    struct g *gp = mp ? mp->curg : NULL;
    uintptr_t addr = (uintptr_t)info->si_addr;
    struct gort_trap t;
    gort__trap_from_ucontext(&t, uctx);
    const char *kind = mp && (sig == SIGSEGV || sig == SIGBUS)
                           ? overflow_kind(mp, gp, addr, t.sp)
                           : NULL;
    if (kind) {
        gort__printf(2, "gort: fatal error: stack overflow in goroutine %lld"
                        " (stack [%p, %p), %s guard, fault at %p %s; raise "
                        "GORTSTACKSIZE)\n\n",
                     (long long)gp->goid, (void *)gp->stack.lo,
                     (void *)gp->stack.hi,
                     gort__stack_guard_name(gp->stack.guard), (void *)addr,
                     kind);
        /* The overflowing goroutine's frames, from where it faulted. */
        gort__fatal_dump(2, &t, false);
        signal(SIGABRT, SIG_DFL);
        abort();
    }
    /* si_code > 0: the kernel raised it for this thread's instruction. */
    if (mp && !mp->foreign && info->si_code > 0 &&
        !had_handler(&old_crash[crash_index(sig)])) {
        crash_report(sig, info, &t);
        die_by(sig, info);
        return;
    }
    chain(sig, info, uctx);
}

/* Mirrors sighandler and fatalsignal (signal_unix.go) for SIGQUIT: the
 * signal's name, where it landed, every goroutine, exit status 2.  Go
 * also dumps the registers of the thread that took the signal; gort does
 * not (they belong to whichever thread the kernel picked). */
static void quit_handler(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    gort__fatal_begin();
    struct gort_trap t;
    gort__trap_from_ucontext(&t, uc);
    struct m *mp = gort__getm_raw();
    char mid[24] = "nil";
    if (mp)
        snprintf(mid, sizeof mid, "%lld", (long long)mp->id);
    gort__printf(2, "SIGQUIT: quit\nPC=0x%lx m=%s sigcode=%d\n\n",
                 (unsigned long)t.pc, mid, info->si_code);
    gort__fatal_dump(2, &t, false);
    _exit(2);
}

/* SIGABRT in the simulation mode (the program's abort(), a failed
 * assertion): the line that replays the run, then the default action.
 * gort's own fatal errors reset SIGABRT before they abort. */
static bool abrt_installed;
static void abrt_handler(int sig, siginfo_t *info, void *uc)
{
    (void)info;
    (void)uc;
    gort__sim_report();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Install h for sig unless the program has its own handler or ignores
 * sig: a program's choice wins, as os/signal.Notify does in Go.  One
 * installed later simply replaces ours.  True when installed. */
static bool install_over_default(int sig,
                                 void (*h)(int, siginfo_t *, void *))
{
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) ||
        cur.sa_handler != SIG_DFL)
        return false;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL) == 0;
}

/* Put back the default action for sig if *installed, unless the program
 * replaced our handler h meanwhile (then its handler stays). */
static void restore_default(int sig, void (*h)(int, siginfo_t *, void *),
                            bool *installed)
{
    if (!*installed)
        return;
    *installed = false;
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == h)
        signal(sig, SIG_DFL);
}

/* SIGPIPE, as in Go: a write to a broken pipe or socket on a descriptor
 * other than 1 and 2 fails with -EPIPE; on 1 and 2, and in the program's
 * own write(2) calls, the signal keeps its default action and ends the
 * process.  gort's write paths bracket the call (GORT_NOSIGPIPE) with a
 * flag of the writing thread: the kernel raises the signal on that thread
 * before the call returns, so the flag says whose write it was.
 *
 * An emulator may deliver it later: qemu-user has been seen to run the
 * handler a few instructions after the call returned, the flag cleared.
 * So a gort write that failed with EPIPE and saw no signal inside the
 * bracket leaves one owed on its thread, and the handler takes an owed
 * signal first.  The handler and the bracket's end run on one thread, so
 * plain thread variables do, and every order works out: a signal before
 * `owed` is raised is seen and the debt cancelled; one after is taken
 * from the debt.  On a kernel, which delivers within the call, nothing is
 * ever owed.
 *
 * Installed only while the action is the default: a program that ignores
 * SIGPIPE or handles it keeps its way. */
static __thread volatile uint32_t nosigpipe
    __attribute__((tls_model("initial-exec")));
static __thread volatile uint32_t sigpipe_seen
    __attribute__((tls_model("initial-exec")));
static __thread volatile uint32_t sigpipe_owed
    __attribute__((tls_model("initial-exec")));
static bool pipe_installed;

void gort__nosigpipe_begin(int fd)
{
    sigpipe_seen = 0;
    nosigpipe = fd > 2;
}

/* Whether a handler takes SIGPIPE now (pipe_handler, or signal.c's,
 * which absorbs too): only then can a signal still come that a debt
 * would pay for.  Ignored (by the program, or with gort_signal_ignore),
 * none comes, and a debt would later swallow a signal that is not one. */
static bool pipe_handled(void)
{
    struct sigaction cur;
    if (sigaction(SIGPIPE, NULL, &cur) != 0)
        return false;
    return (cur.sa_flags & SA_SIGINFO) ? cur.sa_sigaction != NULL
                                       : cur.sa_handler != SIG_DFL &&
                                             cur.sa_handler != SIG_IGN;
}

void gort__nosigpipe_end(int err)
{
    if (nosigpipe && err == EPIPE && !sigpipe_seen && pipe_handled()) {
        sigpipe_owed++; /* volatile: stays before the read of seen */
        if (sigpipe_seen)
            sigpipe_owed--; /* it came inside the bracket */
    }
    nosigpipe = 0;
}

bool gort__sigpipe_absorb(void)
{
    if (sigpipe_owed) {
        sigpipe_owed--;
        return true;
    }
    if (nosigpipe) {
        sigpipe_seen = 1;
        return true;
    }
    return false;
}

static void pipe_handler(int sig, siginfo_t *info, void *uctx)
{
    (void)info;
    (void)uctx;
    if (gort__sigpipe_absorb())
        return;
    /* Not gort's write: the default action, once this handler returns and
     * the signal is unblocked again. */
    signal(sig, SIG_DFL);
    raise(sig);
}

int gort__signals_install(void)
{
    pthread_sigmask(SIG_SETMASK, NULL, &initmask);
    memcpy(&initmask_bits, &initmask, sizeof initmask_bits);
    /* ThreadSanitizer: M0's signal state, before any handler of gort's
     * is in place (san.h). */
    if (gort__san & GORT_SAN_TSAN)
        gort__san_yield();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NCRASH; i++) {
        if (sigaction(crash_sigs[i].sig, &sa, &old_crash[i]) < 0) {
            int e = -errno;
            while (i-- > 0)
                sigaction(crash_sigs[i].sig, &old_crash[i], NULL);
            return e;
        }
    }
    quit_installed = install_over_default(SIGQUIT, quit_handler);
    pipe_installed = install_over_default(SIGPIPE, pipe_handler);
    signals_installed = true;
    return 0;
}

void gort__signals_sim(void)
{
    if (gort__sim_on() && signals_installed && !abrt_installed)
        abrt_installed = install_over_default(SIGABRT, abrt_handler);
}

void gort__signals_restore(void)
{
    if (!signals_installed)
        return;
    /* A handler the program installed over ours since stays. */
    for (size_t i = 0; i < NCRASH; i++) {
        struct sigaction cur;
        if (sigaction(crash_sigs[i].sig, NULL, &cur) == 0 &&
            (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fault_handler)
            sigaction(crash_sigs[i].sig, &old_crash[i], NULL);
    }
    restore_default(SIGQUIT, quit_handler, &quit_installed);
    restore_default(SIGPIPE, pipe_handler, &pipe_installed);
    restore_default(SIGABRT, abrt_handler, &abrt_installed);
    signals_installed = false;
}
