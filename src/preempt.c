/* SPDX-License-Identifier: MIT */
/*
 * preempt.c - asynchronous preemption with SIGURG.  Mirrors preempt.go,
 * preemptM and doSigPreempt (signal_unix.go).
 *
 * sysmon (and stop-the-world) send SIGURG to the thread of an M whose G
 * was asked to yield.  A signal with a handler that reaches a thread
 * asleep in nanosleep, poll, select, epoll_wait and a dozen other calls
 * makes the call return EINTR (SA_RESTART does not restart them), and the
 * program's code makes such calls itself, unwrapped.  So the signal is
 * not sent with tgkill, which delivers it whatever the thread is doing:
 * each M has a timer on its own thread's CPU-time clock (timer_create
 * with CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID to itself), and the
 * sender arms it to expire at the thread's next nanosecond of CPU time.
 * The kernel checks such timers only at a scheduler tick that finds the
 * thread running, and (where the kernel is built with
 * POSIX_CPU_TIMERS_TASK_WORK: x86-64 since Linux 5.10) fires them on the
 * thread's way back to user mode: the signal is raised and delivered
 * there, after any call it was in has returned.  A thread asleep in a
 * call uses no CPU time and gets nothing until it runs again.  The price
 * is the tick: the signal comes up to one tick (1-10 ms, CONFIG_HZ) after
 * it is asked for, where tgkill delivers it at once.
 *
 * Where /proc does not show the threads' calls (qemu-user: rawsys.c),
 * the signal is what finds a thread blocked in a call nobody wrapped, so
 * there it is sent at once with tgkill, and costs such calls an EINTR.
 * A Dekker handshake keeps tgkill out of wrapped calls (gort__urg_wait).
 *
 * The handler runs on the thread and looks at the interrupted context:
 *
 *   - a safe point: the PC is in the program's own code (the main
 *     executable's text, minus gort's own text, which the static library
 *     keeps in the section gort_text; or an object declared safe with
 *     gort_preempt_allow_object), the stack pointer is on the G's stack
 *     with room to spare, the G has not disabled preemption, the M holds
 *     no runtime lock and the G is running.  Code in libc or any other
 *     shared object may hold locks (malloc's, stdio's) that the next G on
 *     this thread would wait for forever, and gort's own code has windows
 *     in which the M and G disagree; neither is ever interrupted.
 *   - where the signal is sent with tgkill, a thread blocked in the
 *     kernel: the PC is at a system call instruction (the kernel rewinds
 *     a restartable call to it), in code that is not ours.  A call nobody
 *     wrapped (entersyscall) holds the P: the handler puts the G into the
 *     syscall state itself, from the thread, so that sysmon can hand the
 *     P away (retake).  No race with the thread coming back: the thread
 *     is running the handler.  When the call returns, the thread's next
 *     entry into gort (gort__getm) runs exitsyscall before it touches
 *     anything a P owns.
 *
 * A signal that finds no safe point is a miss: the CPU-time timer is
 * armed again from the handler (the next tick that finds the thread
 * running tries again); with tgkill, sysmon asks again in 10 ms.
 *
 * At a safe point the handler makes the thread, once the handler returns,
 * call gort__async_preempt (src/arch) on the G's stack: it copies the
 * whole signal context (every general register, the flags, and the
 * floating-point and vector state the kernel saved with XSAVE: SSE, AVX,
 * AVX-512; on aarch64 the FP/SIMD and SVE records) onto the G's stack below
 * the red zone, and points the PC at the trampoline with the stack pointer
 * below the copy.  The trampoline calls gort__async_preempt2, which yields
 * the G (G_PREEMPTED, then runnable on the global queue, as Go's
 * gopreempt_m).  When the G runs again, on whichever thread, the
 * trampoline resumes it with the rt_sigreturn system call on the copy:
 * the kernel restores every register, exactly as on a normal return from
 * a handler.  Before that the copy's signal mask and alternate signal
 * stack are replaced with the current thread's, which rt_sigreturn also
 * installs.
 *
 * Off under ThreadSanitizer (it defers asynchronous signals to its own safe
 * points and gives the handler a copy of the context, so the context
 * cannot be redirected) and under Valgrind (it keeps its own signal
 * frames), and with GORTDEBUG=asyncpreemptoff=1.
 *
 * Invariants:
 *   - gort code that makes a system call on a G's stack while the G is
 *     running holds m->locks (or is dying): the handler never mistakes it
 *     for an unwrapped blocking call.
 *   - Nothing is injected into, and no syscall marked in, a context whose
 *     saved signal mask blocks more than the runtime's threads do: such a
 *     thread is running a signal handler (the program's own, on the G's
 *     stack when it has no SA_ONSTACK), whose return must happen on this
 *     thread; a G moved to another M from inside it would finish the
 *     interrupted code there with this thread's registers (its M pointer,
 *     a half-done m->locks++).  A handler with SA_NODEFER and an empty
 *     sa_mask cannot be told from the program's code this way.
 *   - The handler only reads and writes its own thread's M and G, plus
 *     atomics; it takes sched.lock only through entersyscall when a
 *     stop-the-world waits, and never with m->locks held.
 */
#include "atomic.h"
#include "defs.h"
#include "lock_futex.h"
#include "mthread.h"
#include "os_linux.h"
#include "preempt.h"
#include "proc.h"
#include "rawsys.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "syscall.h"
#include "sysmon.h"

#include <errno.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* gort's own text in a program linked with the static library (the
 * section comes from cmake/gort_text.ld); absent in the shared library,
 * which is a shared object and so never a safe point anyway. */
extern const char __start_gort_text[] __attribute__((weak));
extern const char __stop_gort_text[] __attribute__((weak));

/* Stack the yield's own frames need below the copied context
 * (gort__async_preempt2 and what it calls before it switches to g0, and
 * after it comes back): a few hundred bytes (test_rawsys.deep_dump
 * measures them), with a wide margin; more under AddressSanitizer, whose
 * frames are larger. */
#if defined(GORT_ASAN)
#define PREEMPT_FRAMES (16 * 1024)
#else
#define PREEMPT_FRAMES (4 * 1024)
#endif

struct pcrange {
    uintptr_t lo, hi;
};
#define MAX_RANGES 64
struct ranges {
    struct pcrange r[MAX_RANGES];
    uint32_t n;                    /* atomic: entries published */
};
static struct ranges exe_ranges;   /* the executable's; set at init */
static struct ranges allowed;      /* gort_preempt_allow_object's; kept
                                      across gort_main calls */
static uintptr_t gort_text_lo, gort_text_hi;
static bool async_on;              /* set at init, read by the handler */
static struct sigaction old_urg;
static bool urg_installed;
/* Serialises gort_preempt_allow_object. */
static gort_lock ranges_lock = GORT_LOCK_INIT(LOCKRANK_PREEMPTRANGES);

static void add_range(struct ranges *rs, uintptr_t lo, uintptr_t hi)
{
    uint32_t n = load_relaxed(&rs->n);
    for (uint32_t i = 0; i < n; i++)
        if (rs->r[i].lo == lo && rs->r[i].hi == hi)
            return;
    if (n == MAX_RANGES)
        return;
    rs->r[n].lo = lo;
    rs->r[n].hi = hi;
    /* Release: the handler reads the count, then the entry. */
    store_rel(&rs->n, n + 1);
}

static bool in_ranges(struct ranges *rs, uintptr_t pc)
{
    uint32_t n = load_acq(&rs->n);
    for (uint32_t i = 0; i < n; i++)
        if (pc >= rs->r[i].lo && pc < rs->r[i].hi)
            return true;
    return false;
}

static int main_exe_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    /* The first object is the executable itself. */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            add_range(&exe_ranges, info->dlpi_addr + ph->p_vaddr,
                      info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
    }
    return 1; /* stop after the first */
}

struct find_obj {
    uintptr_t addr;
    bool found;
    bool is_gort;  /* the object holds gort itself: never safe */
};

static int allow_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find_obj *f = arg;
    bool hit = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->addr >= lo &&
            f->addr < lo + ph->p_memsz)
            hit = true;
    }
    if (!hit)
        return 0;
    f->found = true;
    uintptr_t self = (uintptr_t)gort_preempt_allow_object;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz)
            f->is_gort = true;
    }
    if (f->is_gort)
        return 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            add_range(&allowed, info->dlpi_addr + ph->p_vaddr,
                      info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
    }
    return 1;
}

int gort_preempt_allow_object(const void *addr)
{
    GORT_SAN_SCOPE();
    struct find_obj f = {(uintptr_t)addr, false, false};
    gort__lock(&ranges_lock);
    dl_iterate_phdr(allow_object, &f);
    gort__unlock(&ranges_lock);
    if (!f.found)
        return -ENOENT;
    /* The executable itself is already covered (minus gort's code); an
     * object with gort's own code in it (the shared library) is never. */
    return f.is_gort ? -EINVAL : 0;
}

static bool is_user_pc(uintptr_t pc)
{
    if (pc >= gort_text_lo && pc < gort_text_hi)
        return false;
    return in_ranges(&exe_ranges, pc) || in_ranges(&allowed, pc);
}

void gort_preempt_disable(void)
{
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (gp)
        gp->preemptoff++;
}

void gort_preempt_enable(void)
{
    GORT_SAN_SCOPE();
    struct m *mp = gort__getm();
    struct g *gp = mp ? mp->curg : NULL;
    if (!gp || gp->preemptoff == 0)
        return;
    gp->preemptoff--;
    gort__preempt_check();
}

bool gort__preempt_async_on(void)
{
    return async_on;
}

/* Arm mp's CPU-time timer to expire at its next nanosecond of CPU time.
 * Relative to the thread's clock now, so never already expired: the
 * kernel does not fire it from here, only from the thread's own tick. */
static void arm_cputimer(int32_t id)
{
    static const struct itimerspec soon = {.it_value = {0, 1}};
    syscall(SYS_timer_settime, id, 0, &soon, NULL);
}

void gort__preempt_thread_start(struct m *mp)
{
    store_relaxed(&mp->cputimer, -1);
    if (!async_on || load_relaxed(&gort__rawsys_mode) != RAWSYS_PROC)
        return;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGURG;
    ev.sigev_value.sival_ptr = mp; /* the handler knows its own */
    ev._sigev_un._tid = mp->procid;
    int id;
    /* The calling thread's clock: this is the M's thread. */
    if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &ev, &id) == 0)
        store_relaxed(&mp->cputimer, id);
}

void gort__preempt_thread_exit(struct m *mp)
{
    int32_t id = load_relaxed(&mp->cputimer);
    store_relaxed(&mp->cputimer, -1);
    /* A sender that read the id before may still arm it, or the timer of
     * a thread that takes the id next: an early signal to an M whose G
     * has not been asked to yield, which the handler ignores. */
    if (id >= 0)
        syscall(SYS_timer_delete, id);
}

/* Send the preemption signal to mp's thread: by its CPU-time timer,
 * never into a call (see the file comment).  Where it has none (qemu-user,
 * or the kernel refused one) at once, unless the thread is in a wrapped
 * system call (the handshake with entersyscall: gort__urg_wait). */
void gort__preempt_signal(struct m *mp)
{
    if (!async_on || mp->procid <= 0)
        return;
    int32_t id = load_relaxed(&mp->cputimer);
    if (id >= 0) {
        arm_cputimer(id);
        return;
    }
    /* Seq-cst exchange, then seq-cst load: the sender's half.  One signal
     * at a time: the handler clears urgpending. */
    if (xchg_seqcst(&mp->urgpending, 1))
        return;
    if (load_seqcst(&mp->insyscall) == 1) {
        store_relaxed(&mp->urgpending, 0);
        return;
    }
    syscall(SYS_tgkill, getpid(), mp->procid, SIGURG);
}

/* ---------------------------------------------------------------------------
 * Where the copied context goes.
 *
 * Below the interrupted stack pointer (past the red zone) when the G's
 * stack has room for the copy and the yield's frames; else at the top of
 * a stack of the G's own for preemptions (g->preemptstk, mapped the first
 * time it is needed, kept while the G struct lives), so that a G deep in
 * its stack is preempted like any other: only the kernel's signal frame
 * must fit, and it goes on the signal stack.  The trampoline's frames follow
 * the copy down whichever stack it is on.
 * ------------------------------------------------------------------------- */

#define REDZONE 128

/* A preemption stack: no guard page (its users are gort's own bounded
 * frames), so that neighbouring ones merge into one mapping.  A raw
 * system call: the handler is not the place for interceptors. */
static uintptr_t preemptstk_map(void)
{
    long r = syscall(SYS_mmap, NULL, (size_t)GORT_PREEMPT_STK,
                     PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return r < 0 && r > -4096 ? 0 : (uintptr_t)r;
}

void gort__preemptstk_free(struct g *gp)
{
    if (gort__preemptstk(gp)) {
        munmap((void *)gp->preemptstk, GORT_PREEMPT_STK);
        gp->preemptstk = 0;
    }
}

/* The top of the stack the copy (copy bytes) goes under, or 0. */
static uintptr_t copy_top(struct g *gp, uintptr_t sp, size_t copy)
{
    if (sp - gp->stack.lo > REDZONE + copy + PREEMPT_FRAMES)
        return sp - REDZONE;
    if (!gp->preemptstk)
        gp->preemptstk = preemptstk_map();
    return gp->preemptstk ? gp->preemptstk + GORT_PREEMPT_STK : 0;
}

/* ---------------------------------------------------------------------------
 * The architecture-specific half: where the PC and SP are, what a system
 * call instruction looks like, and how to redirect the context.
 * ------------------------------------------------------------------------- */

GORT_HIDDEN void gort__async_preempt(void); /* src/arch/<arch>.S */

#if defined(__x86_64__)

#define UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RSP])
#define UC_FP(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RBP])
/* The return address of a function without a frame record (libc's system
 * call wrappers): the word at sp, which is on the G's stack here. */
#define UC_LEAFRET(uc) (*(const uintptr_t *)UC_SP(uc))

static bool at_syscall_insn(uintptr_t pc)
{
    /* syscall is 0f 05; the kernel rewinds a call it will restart to it,
     * and one that returns EINTR leaves the PC just past it. */
    const unsigned char *p = (const unsigned char *)pc;
    if (p[0] == 0x0f && p[1] == 0x05)
        return true;
    return (pc & 4095) >= 2 && p[-2] == 0x0f && p[-1] == 0x05;
}

/* A byte copy the sanitizers do not look at (the handler writes below
 * the G's stack pointer, where stale shadow may remain). */
static void raw_copy(void *dst, const void *src, size_t n)
{
    __asm__ __volatile__("rep movsb"
                         : "+D"(dst), "+S"(src), "+c"(n)
                         :
                         : "memory");
}

/* Copy the context below the red zone and redirect it to the trampoline.
 * Returns false when it cannot (unknown FP state layout, no stack). */
static bool inject(ucontext_t *uc, struct g *gp)
{
    struct _libc_fpstate *fp = uc->uc_mcontext.fpregs;
    if (!fp)
        return false;
    /* The XSAVE frame's size: sw_reserved (bytes 464..511 of the FXSAVE
     * area) holds magic1 and the extended size when it is XSAVE. */
    const uint32_t *sw = (const uint32_t *)((const char *)fp + 464);
    size_t fpsize = 512;
    if (sw[0] == 0x46505853U /* FP_XSTATE_MAGIC1 */)
        fpsize = sw[1]; /* extended_size, including FP_XSTATE_MAGIC2 */
    if (fpsize < 512 || fpsize > 16384)
        return false;
    uintptr_t top = copy_top(gp, UC_SP(uc), fpsize + sizeof(ucontext_t) + 128);
    if (!top)
        return false;
    uintptr_t fpdst = (top - fpsize) & ~(uintptr_t)63;
    uintptr_t ucdst = (fpdst - sizeof(ucontext_t)) & ~(uintptr_t)63;
    raw_copy((void *)fpdst, fp, fpsize);
    raw_copy((void *)ucdst, uc, sizeof(ucontext_t));
    ((ucontext_t *)ucdst)->uc_mcontext.fpregs =
        (struct _libc_fpstate *)fpdst;
    /* The trampoline runs C code: give it the state the ABI promises at a call
     * (the copy keeps the real one).  Direction flag clear; x87 stack
     * empty (tag word and TOP as after FINIT; the kernel loads this on
     * return from the handler). */
    uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)0x400;
    fp->ftw = 0;
    fp->swd &= (uint16_t)~0x3800u;
    /* Resume in the trampoline with the copy at the stack pointer. */
    uc->uc_mcontext.gregs[REG_RSP] = (greg_t)ucdst;
    uc->uc_mcontext.gregs[REG_RDI] = (greg_t)ucdst;
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)gort__async_preempt;
    return true;
}

#elif defined(__aarch64__)

#include <asm/sigcontext.h>

#define UC_PC(uc) ((uintptr_t)(uc)->uc_mcontext.pc)
#define UC_SP(uc) ((uintptr_t)(uc)->uc_mcontext.sp)
#define UC_FP(uc) ((uintptr_t)(uc)->uc_mcontext.regs[29])
/* The return address of a function without a frame record: the link
 * register. */
#define UC_LEAFRET(uc) ((uintptr_t)(uc)->uc_mcontext.regs[30])

static bool at_syscall_insn(uintptr_t pc)
{
    /* svc #0 is d4000001: at it (restart) or just past it (EINTR). */
    const uint32_t *p = (const uint32_t *)pc;
    if (p[0] == 0xd4000001U)
        return true;
    return (pc & 4095) >= 4 && p[-1] == 0xd4000001U;
}

static void raw_copy(void *dst, const void *src, size_t n)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    while (n--)
        *d++ = *s++;
}

/* The kernel's frame is siginfo then ucontext (struct rt_sigframe); the
 * FP/SIMD (and SVE) records live inside the ucontext, so a copy is
 * complete, unless an extra_context record points outside it. */
static bool inject(ucontext_t *uc, siginfo_t *info, struct g *gp)
{
    const char *r = (const char *)uc->uc_mcontext.__reserved;
    const char *end = r + sizeof uc->uc_mcontext.__reserved;
    while (r + 8 <= end) {
        const struct _aarch64_ctx *h = (const struct _aarch64_ctx *)r;
        if (h->magic == 0)
            break;
        if (h->magic == EXTRA_MAGIC || h->size < 8)
            return false;
        r += h->size;
    }
    size_t fsize = sizeof(siginfo_t) + sizeof(ucontext_t);
    uintptr_t top = copy_top(gp, UC_SP(uc), fsize + 16);
    if (!top)
        return false;
    uintptr_t frame = (top - fsize) & ~(uintptr_t)15;
    raw_copy((void *)frame, info, sizeof(siginfo_t));
    raw_copy((void *)(frame + sizeof(siginfo_t)), uc, sizeof(ucontext_t));
    uc->uc_mcontext.sp = frame;
    uc->uc_mcontext.regs[0] = frame;
    uc->uc_mcontext.pc = (uintptr_t)gort__async_preempt;
    return true;
}

#else
#error "gort: asynchronous preemption needs a port to this processor"
#endif

/* Whether gp, found at a system call instruction outside gort (pc, sp),
 * has been blocked there since an earlier signal at least
 * GORT_RAWSYS_CONFIRM_NS ago: the same G, never switched out in between
 * (the M's execute count is unchanged), at the same instruction with the
 * same stack pointer.
 *
 * One sighting is not enough.  gort's own code calls libc (read(2) of a
 * non-blocking descriptor, a futex wake, epoll_ctl, close, clock_gettime
 * where there is no vDSO, as under qemu-user) with a P and no lock held; a
 * signal that lands inside such a call for a microsecond would turn the G
 * into a syscall behind the back of gort code that goes on using its P,
 * and two Ms would then run one P.  Nor is the same place enough: the
 * next goroutine on this M may run the same code on the same (reused)
 * stack, reaching the same instruction with the same stack pointer.  A G
 * still there, not switched out, several milliseconds later is blocked in
 * the kernel: gort's own calls there do not block, the program's may.
 * sysmon signals a G that keeps its P every 10 ms, so the second sighting
 * comes one round after the first. */
static bool rawsys_confirmed(struct m *mp, struct g *gp, uintptr_t pc,
                             uintptr_t sp)
{
    int64_t now = gort_nanotime();
    if (mp->rawsys.pc == pc && mp->rawsys.sp == sp && mp->rawsys.gp == gp &&
        mp->rawsys.nexecute == mp->nexecute) {
        if (now - mp->rawsys.when < GORT_RAWSYS_CONFIRM_NS)
            return false; /* too soon (a burst of stop-the-world signals) */
        mp->rawsys.pc = 0;
        return true;
    }
    mp->rawsys.pc = pc;
    mp->rawsys.sp = sp;
    mp->rawsys.gp = gp;
    mp->rawsys.nexecute = mp->nexecute;
    mp->rawsys.when = now;
    return false;
}

/* The signal found the G away from a safe point (in the C library, in
 * gort's own code): while the G is still asked to yield, its CPU-time
 * timer tries again at the next tick that finds the thread running. */
static void missed(struct m *mp, struct g *gp, uint32_t insys)
{
    int32_t id = load_relaxed(&mp->cputimer);
    if (id >= 0 && gp->preemptoff == 0 &&
        (load_relaxed(&gp->preempt) || insys == 2))
        arm_cputimer(id);
}

/* The signal landed on a G: preempt it, or mark it in a syscall.  Mirrors
 * doSigPreempt. */
static void do_sigpreempt(struct m *mp, ucontext_t *uc, siginfo_t *info)
{
    struct g *gp = mp->curg;
    if (!gp || gp->foreign)
        return;
    uintptr_t pc = UC_PC(uc), sp = UC_SP(uc);
    /* At any depth: the copy goes elsewhere when the stack is short
     * (copy_top).  Below lo it has overflowed: leave it to the guard. */
    bool on_gstack = sp > gp->stack.lo && sp <= gp->stack.hi;
    uint32_t insys = load_relaxed(&mp->insyscall);
    uint32_t st = gort__readgstatus(gp);
    /* A pending post_fn: the G has not finished the switch that brought
     * it here (a sanitizer's fiber call runs outside gort's text first). */
    if (!on_gstack || mp->locks || mp->post_fn || insys == 1 ||
        st != (insys == 2 ? G_SYSCALL : G_RUNNING) ||
        gort__sigmask_beyond_init(&uc->uc_sigmask)) {
        if (insys != 1)
            missed(mp, gp, insys);
        return;
    }
    if (!is_user_pc(pc)) {
        /* Not our code.  Blocked in the kernel in a call nobody wrapped,
         * holding the P: become a syscall so sysmon can hand the P off.
         * Only where /proc cannot show it (rawsys.c): a signal that finds
         * a thread in the kernel has already cost its call an EINTR. */
        if (insys == 0 && mp->p && gp->preemptoff == 0 &&
            load_relaxed(&gort__rawsys_mode) == RAWSYS_SIGNAL &&
            !(pc >= gort_text_lo && pc < gort_text_hi) &&
            at_syscall_insn(pc) && rawsys_confirmed(mp, gp, pc, sp)) {
            store_relaxed(&mp->syscallwhen, gort_nanotime());
            /* Dumps walk its stack from here while it blocks. */
            gp->syscallpc = pc;
            gp->syscallfp = UC_FP(uc);
            gp->syscalltrap = true;
            gp->syscallret = UC_LEAFRET(uc);
            gort__entersyscall_m(mp, gp, 2);
        }
        missed(mp, gp, insys);
        return;
    }
    if (gp->preemptoff || (!load_relaxed(&gp->preempt) && insys != 2))
        return;
#if defined(__x86_64__)
    bool ok = inject(uc, gp);
    (void)info;
#else
    bool ok = inject(uc, info, gp);
#endif
    if (!ok)
        missed(mp, gp, insys);
}

static void chain_urg(int sig, siginfo_t *info, void *uctx)
{
    if (old_urg.sa_flags & SA_SIGINFO) {
        if (old_urg.sa_sigaction)
            old_urg.sa_sigaction(sig, info, uctx);
    } else if (old_urg.sa_handler != SIG_DFL &&
               old_urg.sa_handler != SIG_IGN) {
        old_urg.sa_handler(sig);
    }
}

static void sigurg_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    struct m *mp = gort__getm_raw();
    /* Ours: this M's CPU-time timer, or tgkill from this process.  The
     * program's own SIGURG (out-of-band data, its own kill or timer) goes
     * to its handler too. */
    bool ours = info->si_code == SI_TIMER
                    ? info->si_value.sival_ptr == mp
                    : info->si_code == SI_TKILL && info->si_pid == getpid();
    if (mp && !mp->foreign && ours) {
        /* The sender may send again; a system call may begin
         * (gort__urg_wait).  Relaxed: this thread's own word. */
        store_relaxed(&mp->urgpending, 0);
        do_sigpreempt(mp, uctx, info);
    }
    chain_urg(sig, info, uctx);
    errno = saved_errno;
}

/* Called by the trampoline on the G's stack, with the copied context at ucopy.
 * Mirrors asyncPreempt2 and gopreempt_m. */
static struct g *preempt_m(struct g *gp)
{
    struct m *mp = gort__getm_raw();
    gort__casgstatus(gp, G_PREEMPTED, G_RUNNABLE);
    gort__dropg(mp);
    gort__lock(&gort__sched.lock);
    gort__globrunqput_locked(gp);
    gort__unlock(&gort__sched.lock);
    gort__wakep();
    return NULL;
}

GORT_HIDDEN void gort__async_preempt2(void *ucopy);
void gort__async_preempt2(void *ucopy)
{
    /* gort__getm finishes a signal-marked syscall first. */
    struct m *mp = gort__getm();
    struct g *gp = mp->curg;
#if defined(__x86_64__)
    ucontext_t *uc = ucopy;
#else
    ucontext_t *uc = (ucontext_t *)((char *)ucopy + sizeof(siginfo_t));
#endif
    store_relaxed(&gp->preempt, 0);
    if (mp->p) {
        store_relaxed(&mp->p->preempt, 0);
        gort__stat_add(&mp->p->npreemptasync, 1);
        /* The CPU-time timer fires up to a kernel tick after sysmon's
         * request, by which time sysmon may sleep for milliseconds: back
         * on short rounds, it times the next G's slice from its start. */
        gort__sysmon_kick();
    }
    /* Dumps walk on from the trampoline into the interrupted code through
     * it. */
    gp->preemptctx = (uintptr_t)uc;
    gort__casgstatus(gp, G_RUNNING, G_PREEMPTED);
    gort__mcall(preempt_m);
    gp->preemptctx = 0;
    /* Running again, maybe on another thread: the context must restore
     * this thread's signal mask and alternate stack. */
    mp = gort__getm_raw();
    pthread_sigmask(SIG_SETMASK, NULL, &uc->uc_sigmask);
    uc->uc_stack.ss_sp = mp->sigaltstack_mem;
    uc->uc_stack.ss_size = mp->sigaltstack_size;
    uc->uc_stack.ss_flags = mp->sigaltstack_mem ? 0 : SS_DISABLE;
}

int gort__preempt_init(void)
{
    store_relaxed(&exe_ranges.n, 0);
    gort_text_lo = (uintptr_t)__start_gort_text;
    gort_text_hi = (uintptr_t)__stop_gort_text;
    /* Off under ThreadSanitizer, in gort or in the program (see the file
     * comment), and under Valgrind. */
    async_on = !gort__debug.asyncpreemptoff && !gort__valgrind &&
               !(gort__san & GORT_SAN_TSAN);
    if (!async_on)
        return 0;
    dl_iterate_phdr(main_exe_ranges, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sigurg_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGURG, &sa, &old_urg) < 0)
        return -errno;
    urg_installed = true;
    /* M0's thread was set up before the mode was known. */
    gort__preempt_thread_start(gort__getm_raw());
    return 0;
}

void gort__preempt_fini(void)
{
    async_on = false;
    if (urg_installed) {
        /* A signal already sent is harmless to the restored handler:
         * the default action for SIGURG is to ignore it. */
        sigaction(SIGURG, &old_urg, NULL);
        urg_installed = false;
    }
}
