/* SPDX-License-Identifier: MIT */
/*
 * traceback.c - goroutine dumps with backtraces, in Go's formats.  Mirrors
 * goroutineheader, traceback1, printcreatedby and tracebackothers
 * (traceback.go), and the goroutine profile's debug=1 text (pprof).
 *
 * The full dump (gort_dump_goroutines, fatal errors, SIGQUIT):
 *
 *   goroutine 7 [chan receive, 3 minutes]:
 *   waiting on 0x5581b2c3e010
 *   gort_chan_recv(...)
 *   	/path/to/prog:0x2c4f1 +0x41
 *   worker(...)
 *   	/path/to/prog:0x1b2e3 +0x23
 *   created by start_workers in goroutine 1
 *   	/path/to/prog:0x1b40a +0x5a
 *
 * The header is Go's: the wait reason or status, ", N minutes" once the
 * goroutine has waited (or been in a syscall) a minute or more, ", locked
 * to thread" under LockOSThread.  "waiting on" (the channel, semaphore or
 * timer address) is gort's addition.  Each frame is the function, then the
 * object and the address in it that `addr2line -e OBJECT ADDRESS` turns
 * into a file and line (where Go prints file:line; the address is the call
 * instruction's, pc-1, as Go's funcline uses), and pc's offset in the
 * function.  At most 100 frames ("...additional frames elided...").
 *
 * Which frames: by default gort's own code is hidden except its public
 * functions (gort_chan_recv, not gort__park or chanrecv), as Go hides
 * runtime frames but exported runtime functions; a stack that would show
 * nothing shows everything.  GORTTRACEBACK=system shows every frame.
 *
 * Where each goroutine's stack walk starts (frame pointers, src/arch for
 * the saved layout):
 *   - the goroutine running on the dumping thread: the dumper's own frame,
 *     or the signal context when a signal handler dumps (SIGQUIT, a stack
 *     overflow), or its saved context when the thread is on g0;
 *   - parked and runnable goroutines: the context saved by the switch;
 *     one preempted asynchronously continues through the preemption trampoline
 *     into the interrupted code (its copied signal context);
 *   - a goroutine in a system call: the frame recorded by entersyscall
 *     (or the signal context that found an unwrapped call);
 *   - a goroutine running on another thread: none, as Go ("goroutine
 *     running on other thread; stack unavailable");
 *   - one that has not run yet: its start function.
 *
 * The grouped dump (gort_dump_goroutines_grouped) walks the same stacks
 * and prints each distinct one once, most frequent first, as Go's
 * goroutine profile with debug=1:
 *
 *   goroutine profile: total 104
 *   100 @ 0x55d0c1a2b3c4 0x55d0c1a2b000
 *   #	0x55d0c1a2b3c3	gort_chan_recv+0x185	/path/to/prog:0x2c4f1
 *   #	0x55d0c1a2afff	worker+0x23	/path/to/prog:0x1b2e3
 *
 * It groups by the frames shown, not by every pc as pprof does: gort's
 * internal frames differ with the path a goroutine took to park (a direct
 * hand-off or through g0) where Go's gopark has one call site, and would
 * split one leak into several groups.  GORTTRACEBACK=system groups by
 * every frame.
 *
 * Invariants:
 *   - No malloc and no gort lock: dumps run in fatal-error and signal
 *     paths.  Output is buffered on the stack and written with write(2);
 *     the grouped dump's tables are mmap'd and unmapped before it returns.
 *   - Other goroutines' fields and stacks are read without
 *     synchronisation, as Go's tracebackothers does: a goroutine may
 *     change while it is dumped.  G structures and stack arenas are never
 *     freed while the runtime runs, and every stack read is bounded to the
 *     goroutine's stack (gort__unwind), so a stale view prints stale
 *     frames, never faults.  The functions that make such reads are
 *     excluded from ThreadSanitizer, and the raw stack reads from
 *     AddressSanitizer (a word may sit in a poisoned redzone).
 */
#include "atomic.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "san.h"
#include "sched.h"
#include "symbolize.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* The return address of the preemption trampoline's call (src/arch). */
GORT_HIDDEN extern const char gort__async_preempt_ret[];

#define WORD sizeof(uintptr_t)

/* Where a saved context (src/arch) keeps the frame pointer and the resume
 * address, from its stack pointer. */
#if defined(__x86_64__)
#define CTX_FP_OFF 56
#define CTX_PC_OFF 64
#elif defined(__aarch64__)
#define CTX_FP_OFF 0
#define CTX_PC_OFF 8
#else
#error "gort: tracebacks need a port to this processor"
#endif

/* ---------------------------------------------------------------------------
 * Walking a stack.
 * ------------------------------------------------------------------------- */

#define peek gort__peek

/* A return address as a code address: without the pointer-authentication
 * code that aarch64's pac-ret keeps in the top bits. */
static uintptr_t strip_pc(uintptr_t pc)
{
#if defined(__aarch64__)
    return pc & (((uintptr_t)1 << 48) - 1);
#else
    return pc;
#endif
}

/* For a walk from a signal context on [lo, hi): the candidate return
 * address of a frameless interrupted function (tbstart.leafret). */
static uintptr_t leafret(const struct gort_trap *t, uintptr_t lo, uintptr_t hi)
{
#if defined(__aarch64__)
    (void)lo;
    (void)hi;
    return t->lr;
#else
    return t->sp >= lo && t->sp <= hi - WORD && t->sp % WORD == 0
               ? peek(t->sp)
               : 0;
#endif
}

/* [p, p + n) lies on the stack or on the preemption stack. */
static bool on_stacks(const struct tbstart *s, uintptr_t p, size_t n)
{
    return (p >= s->lo && p + n <= s->hi && p + n > p) ||
           (s->plo && p >= s->plo && p + n <= s->phi && p + n > p);
}

/* fp is a frame record of the stack above the previous one, `below`. */
static bool record_ok(const struct tbstart *s, uintptr_t fp, uintptr_t below)
{
    return fp > below && on_stacks(s, fp, 2 * WORD) && fp % WORD == 0;
}

int gort__unwind(const struct tbstart *s, uintptr_t *pcs, uint8_t *traps,
                 int max, bool *more)
{
    *more = false;
    if (s->hi <= s->lo || s->hi - s->lo < 2 * WORD)
        return 0;
    uintptr_t pc = s->pc, fp = s->fp, below = 0;
    bool trap = s->trap;
    uintptr_t pctx = s->preemptctx;
    if (pc == 0) {
        if (!record_ok(s, fp, 0))
            return 0;
        pc = strip_pc(peek(fp + WORD));
        below = fp;
        fp = peek(fp);
    }
    int n = 0;
    while (pc != 0) {
        if (pc == (uintptr_t)gort__async_preempt_ret && pctx) {
            /* The preemption trampoline called from the signal context copied
             * to pctx: go on in the interrupted code (once). */
            if (!on_stacks(s, pctx, sizeof(ucontext_t)))
                break;
            struct gort_trap t;
            gort__trap_from_ucontext(&t, (const void *)pctx);
            pctx = 0;
            pc = t.pc;
            fp = t.fp;
            trap = true;
            below = 0; /* from the preemption stack back to the G's */
            continue;
        }
        if (n == max) {
            *more = true;
            break;
        }
        pcs[n] = pc;
        traps[n] = trap;
        n++;
        trap = false;
        if (!record_ok(s, fp, below))
            break;
        uintptr_t next = peek(fp);
        pc = strip_pc(peek(fp + WORD));
        below = fp;
        fp = next;
    }
    return n;
}

/* ---------------------------------------------------------------------------
 * Output: buffered on the stack, written with write(2).
 * ------------------------------------------------------------------------- */

struct out {
    int fd;
    int err;        /* the first write error (negative errno), or 0 */
    size_t len;
    char buf[2048];
};

static void out_flush(struct out *o)
{
    size_t off = 0;
    struct m *mp = gort__libc_begin();
    while (off < o->len && o->err == 0) {
        ssize_t w = gort__libc.write(o->fd, o->buf + off, o->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            o->err = w < 0 ? -errno : -EIO;
        else
            off += (size_t)w;
    }
    gort__libc_end(mp);
    o->len = 0;
}

static void out_printf(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(struct out *o, const char *fmt, ...)
{
    for (int tries = 0; tries < 2; tries++) {
        size_t room = sizeof o->buf - o->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        if (o->len == 0) {
            o->len = sizeof o->buf - 1; /* longer than the buffer: cut */
            return;
        }
        out_flush(o);
    }
}

/* ---------------------------------------------------------------------------
 * Where a goroutine's stack is.
 * ------------------------------------------------------------------------- */

enum view {
    VIEW_WALK,      /* walk from tbstart */
    VIEW_ENTRY,     /* not started: its start function */
    VIEW_ELSEWHERE, /* running on another thread */
    VIEW_NONE,      /* no stack to show */
};

/* How far below its stack an overflowing goroutine's frames are still
 * walked (os_linux.c reports an overflow that far down). */
#define OVERFLOW_WALK ((uintptr_t)64 << 20)

/* The dumping thread's view of gp (status st).  me is the dumping
 * thread's M (or NULL), here a frame record on the dumping stack, trap the
 * signal context when a handler dumps. */
GORT_NO_TSAN static enum view locate(struct g *gp, uint32_t st, struct m *me,
                                     uintptr_t here,
                                     const struct gort_trap *trap,
                                     struct tbstart *s)
{
    memset(s, 0, sizeof *s);
    s->lo = gp->stack.lo;
    s->hi = gp->stack.hi;
    if (gp->preemptstk) {
        s->plo = gp->preemptstk;
        s->phi = gp->preemptstk + GORT_PREEMPT_STK;
    }
    /* Shares its word with the syscall record (struct g). */
    s->preemptctx = st == G_SYSCALL ? 0 : gp->preemptctx;
    bool mine = me && gp == me->curg;
    if (gp->foreign)
        return st == G_RUNNING && !mine ? VIEW_ELSEWHERE : VIEW_NONE;
    if (mine) {
        if (here >= s->lo && here < s->hi) {
            s->fp = here; /* this very stack */
            return VIEW_WALK;
        }
        /* In a syscall its recorded frame names the wrapper, which a
         * signal landing in libc's frameless syscall code would lose. */
        if (st == G_SYSCALL && gp->syscallpc)
            goto syscall;
        /* The signal landed on it.  A stack overflow faults with sp in
         * the guard below lo, its frame pointer still inside; one on an
         * unguarded (canary) stack may have run far below it, through
         * the stacks below in its arena: walk from its frame pointer
         * (the stack pointer itself may be in the page that faulted). */
        if (trap && trap->sp < s->lo && trap->sp + OVERFLOW_WALK > s->lo &&
            trap->fp >= trap->sp && trap->fp < s->lo)
            s->lo = trap->fp & ~(uintptr_t)(WORD - 1);
        if (trap && ((trap->sp >= s->lo && trap->sp < s->hi) ||
                     (trap->fp >= s->lo && trap->fp < s->hi))) {
            s->pc = trap->pc;
            s->fp = trap->fp;
            s->trap = true;
            s->leafret = leafret(trap, s->lo, s->hi);
            return VIEW_WALK;
        }
        /* Not running on its stack: switched out on this M (the dump
         * runs on g0), so its saved context is current. */
        if (st != G_SYSCALL)
            goto saved;
    }
    switch (st) {
    case G_SYSCALL:
        if (!gp->syscallpc)
            return VIEW_NONE;
    syscall:
        s->pc = strip_pc(gp->syscallpc);
        s->fp = gp->syscallfp;
        s->trap = gp->syscalltrap;
        s->leafret = s->trap ? gp->syscallret : 0;
        return VIEW_WALK;
    case G_RUNNABLE:
        if (!gp->sched_sp)
            return VIEW_ENTRY;
        goto saved;
    case G_WAITING:
        goto saved;
    case G_RUNNING:
    case G_PREEMPTED: /* still on its thread, saving its context */
        return VIEW_ELSEWHERE;
    default:
        return VIEW_NONE;
    }
saved:;
    uintptr_t sp = (uintptr_t)gp->sched_sp;
    if (!sp || !on_stacks(s, sp, CTX_PC_OFF + WORD))
        return VIEW_NONE;
    s->pc = strip_pc(peek(sp + CTX_PC_OFF));
    s->fp = peek(sp + CTX_FP_OFF);
    return VIEW_WALK;
}

/*
 * A signal that interrupts a function before it has made its frame record
 * (libc's system call wrappers never make one; any function in its
 * prologue) finds the frame pointer still at the caller's record, which
 * names the caller's caller: the caller itself would be missing.  Its
 * return address is then at sp (x86-64) or in the link register
 * (aarch64).  Take that candidate as the caller when it is a return
 * address (code just after a call), is not already the next frame, and
 * does not point back into the interrupted function (a stale link
 * register).  A function that did make its record rarely holds such a
 * value there; when it does, one extra frame shows.
 */
static int leaf_caller(struct symcache *c, const struct tbstart *s,
                       uintptr_t *pcs, uint8_t *traps, int n, int max)
{
    uintptr_t ret = strip_pc(s->leafret);
    if (!s->trap || !ret || n < 1 || !traps[0] || n == max ||
        (n > 1 && pcs[1] == ret) || !gort__sym_after_call(c, ret))
        return n;
    struct symres a, b;
    gort__sym_lookup(c, pcs[0], &a);
    gort__sym_lookup(c, ret - 1, &b);
    if (a.name && b.name && a.start == b.start)
        return n;
    memmove(pcs + 2, pcs + 1, (size_t)(n - 1) * sizeof *pcs);
    memmove(traps + 2, traps + 1, (size_t)(n - 1));
    pcs[1] = ret;
    traps[1] = 0;
    return n + 1;
}

/* ---------------------------------------------------------------------------
 * The full dump.
 * ------------------------------------------------------------------------- */

struct dumper {
    struct out o;
    struct symcache sc;
    struct m *me;
    uintptr_t here;
    const struct gort_trap *trap;
    int64_t now;
    bool system;        /* show gort's own frames */
    uintptr_t pcs[GORT_TB_MAXFRAMES];
    uint8_t traps[GORT_TB_MAXFRAMES];
};

static void dumper_init(struct dumper *d, int fd, uintptr_t here,
                        const struct gort_trap *trap, bool system)
{
    d->o.fd = fd;
    d->o.err = 0;
    d->o.len = 0;
    gort__sym_init(&d->sc);
    d->me = gort__getm_raw();
    d->here = here;
    d->trap = trap;
    d->now = gort_nanotime();
    d->system = system;
}

static int dumper_fini(struct dumper *d)
{
    out_flush(&d->o);
    gort__sym_fini(&d->sc);
    return d->o.err;
}

GORT_NO_TSAN static void header(struct dumper *d, struct g *gp, uint32_t st)
{
    const char *what = st == G_WAITING && gp->waitreason != WAIT_ZERO
                           ? gort__waitreason_name(gp->waitreason)
                           : gort__gstatus_name(st);
    int64_t since = st == G_WAITING || st == G_SYSCALL
                        ? load_relaxed(&gp->waitsince)
                        : 0;
    int64_t mins = since ? (d->now - since) / (60 * 1000000000LL) : 0;
    out_printf(&d->o, "goroutine %lld [%s", (long long)gp->goid, what);
    if (mins >= 1)
        out_printf(&d->o, ", %lld minutes", (long long)mins);
    if (load_relaxed(&gp->lockedm))
        out_printf(&d->o, ", locked to thread");
    out_printf(&d->o, "]:\n");
    const void *obj = load_relaxed(&gp->waitobj);
    if (st == G_WAITING && obj)
        out_printf(&d->o, "waiting on %p\n", obj);
}

/* How much of a symbol's name a frame shows.  In gort's own code, up to
 * a dot: what follows one names a part split off a function, by the
 * compiler (".cold", ".isra.0", ".part.0") or by gort (the general bodies
 * of gort_chan_send and gort_chan_recv, "gort_chan_send.full", which the
 * public function reaches by a jump), and the frame is the function's.
 * The program's symbols are shown whole (other languages' names may hold
 * dots). */
static int shown_len(const struct symres *r)
{
    size_t n = r->gort ? strcspn(r->name, ".") : strlen(r->name);
    return n < 200 ? (int)n : 200;
}

/* A frame: "func(...)", then "\tobject:address +offset".  exact: pc is
 * the instruction itself (an interrupted pc or a start function), not a
 * return address. */
static void frame(struct dumper *d, uintptr_t pc, bool exact)
{
    struct symres r;
    uintptr_t look = exact ? pc : pc - 1;
    gort__sym_lookup(&d->sc, look, &r);
    if (r.name)
        out_printf(&d->o, "%.*s(...)\n", shown_len(&r), r.name);
    else
        out_printf(&d->o, "?(...)\n");
    if (r.obj)
        out_printf(&d->o, "\t%.300s:0x%lx", r.obj, (unsigned long)r.objaddr);
    else
        out_printf(&d->o, "\t?:0x%lx", (unsigned long)look);
    if (r.name && pc > r.start)
        out_printf(&d->o, " +0x%lx", (unsigned long)(pc - r.start));
    out_printf(&d->o, "\n");
}

static bool shown(struct dumper *d, uintptr_t pc, bool exact)
{
    if (d->system)
        return true;
    struct symres r;
    gort__sym_lookup(&d->sc, exact ? pc : pc - 1, &r);
    return !r.gort || gort__sym_public(r.name);
}

/* Drop the frames a dump does not show, in place; a stack that would
 * show none keeps all (Go retries with runtime frames likewise).  Returns
 * the new count. */
static int filter(struct dumper *d, uintptr_t *pcs, uint8_t *traps, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += shown(d, pcs[i], traps[i]);
    if (k == 0 || k == n)
        return n;
    k = 0;
    for (int i = 0; i < n; i++) {
        if (!shown(d, pcs[i], traps[i]))
            continue;
        pcs[k] = pcs[i];
        traps[k] = traps[i];
        k++;
    }
    return k;
}

/* Mirrors printcreatedby: not for the main goroutine. */
GORT_NO_TSAN static void createdby(struct dumper *d, struct g *gp)
{
    uintptr_t pc = gp->gopc;
    if (gp->is_main || !pc)
        return;
    struct symres r;
    gort__sym_lookup(&d->sc, pc - 1, &r);
    if (r.name)
        out_printf(&d->o, "created by %.*s", shown_len(&r), r.name);
    else
        out_printf(&d->o, "created by ?");
    if (gp->parentgoid)
        out_printf(&d->o, " in goroutine %lld", (long long)gp->parentgoid);
    out_printf(&d->o, "\n");
    if (r.obj)
        out_printf(&d->o, "\t%.300s:0x%lx", r.obj, (unsigned long)r.objaddr);
    else
        out_printf(&d->o, "\t?:0x%lx", (unsigned long)(pc - 1));
    if (r.name && pc > r.start)
        out_printf(&d->o, " +0x%lx", (unsigned long)(pc - r.start));
    out_printf(&d->o, "\n");
}

/* gp's status as the dump shows it.  When the preemption signal found
 * this thread in a system call of the program's, its G stays in the
 * syscall state until it next enters gort through gort__getm, which a
 * fatal error does not: but it runs (the dump), and shows so. */
GORT_NO_TSAN static uint32_t status_of(struct dumper *d, struct g *gp)
{
    uint32_t st = gort__readgstatus(gp);
    if (st == G_SYSCALL && !d->trap && d->me && gp == d->me->curg &&
        load_relaxed(&d->me->insyscall) == 2)
        st = G_RUNNING;
    return st;
}

GORT_NO_TSAN static void dump_one(struct dumper *d, struct g *gp)
{
    uint32_t st = status_of(d, gp);
    if (st == G_DEAD || st == G_IDLE)
        return;
    header(d, gp, st);
    struct tbstart s;
    bool more;
    int n;
    switch (locate(gp, st, d->me, d->here, d->trap, &s)) {
    case VIEW_WALK:
        n = gort__unwind(&s, d->pcs, d->traps, GORT_TB_MAXFRAMES, &more);
        n = leaf_caller(&d->sc, &s, d->pcs, d->traps, n, GORT_TB_MAXFRAMES);
        n = filter(d, d->pcs, d->traps, n);
        for (int i = 0; i < n; i++)
            frame(d, d->pcs[i], d->traps[i]);
        if (more)
            out_printf(&d->o, "...additional frames elided...\n");
        break;
    case VIEW_ENTRY:
        frame(d, (uintptr_t)gp->fn, true);
        break;
    case VIEW_ELSEWHERE:
        out_printf(&d->o, "\tgoroutine running on other thread; stack "
                          "unavailable\n");
        break;
    case VIEW_NONE:
        out_printf(&d->o, "\tstack unavailable\n");
        break;
    }
    createdby(d, gp);
    out_printf(&d->o, "\n");
}

/* The running goroutine of this thread first, then (all) the others.
 * allgs is read without its lock: allgadd publishes entries before the
 * length, and a replaced array is kept until shutdown. */
GORT_NO_TSAN static void dump_gs(struct dumper *d, bool all)
{
    /* Acquire: pairs with allgadd's release of the length, so the array
     * loaded next holds at least that many initialised entries. */
    uint32_t n = load_acq(&gort__allglen);
    struct g **allgs = load_acq(&gort__allgs);
    struct g *cur = d->me ? d->me->curg : NULL;
    if (cur)
        dump_one(d, cur);
    if (!all)
        return;
    for (uint32_t i = 0; i < n; i++)
        if (allgs[i] != cur)
            dump_one(d, allgs[i]);
}

void gort__traceback_fatal(int fd, const struct gort_trap *trap,
                           bool runtime_frames)
{
    int32_t level = gort__traceback_level;
    if (level == TRACEBACK_NONE)
        return;
    struct dumper d;
    dumper_init(&d, fd, (uintptr_t)__builtin_frame_address(0), trap,
                runtime_frames || level == TRACEBACK_SYSTEM);
    dump_gs(&d, level != TRACEBACK_SINGLE);
    dumper_fini(&d);
}

/* An API dump's entry into gort.  A system call of the program's that the
 * preemption signal caught is over (this thread runs gort's code): finish
 * it, so the caller shows as running (gort__getm does that; other threads
 * get no M made for them).  Then keep the signal off this thread's G while
 * the dump makes system calls from gort's code (preempt.c's invariant). */
static struct m *dump_enter(void)
{
    struct m *mp = gort__getm_raw();
    /* Relaxed: only this thread's signal handler writes it. */
    if (mp && load_relaxed(&mp->insyscall) == 2)
        mp = gort__getm();
    if (mp)
        mp->locks++;
    return mp;
}

static void dump_leave(struct m *mp)
{
    if (mp)
        mp->locks--;
}

int gort_dump_goroutines(int fd)
{
    GORT_SAN_SCOPE();
    if (fd < 0)
        return -EBADF;
    struct m *mp = dump_enter();
    struct dumper d;
    dumper_init(&d, fd, (uintptr_t)__builtin_frame_address(0), NULL,
                gort__traceback_level == TRACEBACK_SYSTEM);
    dump_gs(&d, true);
    int err = dumper_fini(&d);
    dump_leave(mp);
    return err;
}

/* ---------------------------------------------------------------------------
 * The grouped dump.
 * ------------------------------------------------------------------------- */

/* One distinct stack and how many goroutines have it. */
struct group {
    uint64_t hash;
    uint32_t count;
    uint32_t first;    /* rank of its first goroutine: ties keep dump order */
    uint16_t n;        /* frames */
    uint8_t view;      /* enum view */
    uint8_t more;      /* frames were elided */
    uint8_t traps[GORT_TB_MAXFRAMES];
    uintptr_t pcs[GORT_TB_MAXFRAMES];
};

/* gp's stack into g (all but count and first); false for dead Gs. */
GORT_NO_TSAN static bool collect(struct dumper *d, struct g *gp,
                                 struct group *g)
{
    uint32_t st = status_of(d, gp);
    if (st == G_DEAD || st == G_IDLE)
        return false;
    struct tbstart s;
    bool more = false;
    g->view = (uint8_t)locate(gp, st, d->me, d->here, d->trap, &s);
    g->n = 0;
    if (g->view == VIEW_WALK) {
        int n = gort__unwind(&s, g->pcs, g->traps, GORT_TB_MAXFRAMES, &more);
        n = leaf_caller(&d->sc, &s, g->pcs, g->traps, n, GORT_TB_MAXFRAMES);
        g->n = (uint16_t)filter(d, g->pcs, g->traps, n);
    } else if (g->view == VIEW_ENTRY) {
        g->n = 1;
        g->pcs[0] = (uintptr_t)gp->fn;
        g->traps[0] = 1; /* the entry itself, as an exact pc */
    }
    g->more = more;
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    h = (h ^ g->view) * 1099511628211ULL;
    h = (h ^ g->more) * 1099511628211ULL;
    for (int i = 0; i < g->n; i++) {
        h = (h ^ g->pcs[i]) * 1099511628211ULL;
        h = (h ^ g->traps[i]) * 1099511628211ULL;
    }
    g->hash = h;
    return true;
}

static bool same_stack(const struct group *a, const struct group *b)
{
    return a->hash == b->hash && a->view == b->view && a->more == b->more &&
           a->n == b->n &&
           memcmp(a->pcs, b->pcs, a->n * sizeof a->pcs[0]) == 0 &&
           memcmp(a->traps, b->traps, a->n) == 0;
}

/* The table of distinct stacks: groups in an mmap'd array that grows by
 * mremap, found through an open-addressing index of group numbers + 1. */
struct groups {
    struct group *g;
    uint32_t n, cap;
    uint32_t *slot;
    uint32_t nslot;    /* a power of two, at least twice the Gs */
};

static void *map_anon(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void groups_free(struct groups *t)
{
    if (t->g)
        munmap(t->g, (size_t)t->cap * sizeof *t->g);
    if (t->slot)
        munmap(t->slot, (size_t)t->nslot * sizeof *t->slot);
}

/* Count g's stack; false when out of memory. */
static bool groups_add(struct groups *t, const struct group *g)
{
    uint32_t mask = t->nslot - 1;
    uint32_t i = (uint32_t)g->hash & mask;
    while (t->slot[i]) {
        struct group *e = &t->g[t->slot[i] - 1];
        if (same_stack(e, g)) {
            e->count++;
            return true;
        }
        i = (i + 1) & mask;
    }
    if (t->n == t->cap) {
        size_t old = (size_t)t->cap * sizeof *t->g;
        void *p = mremap(t->g, old, 2 * old, MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
            return false;
        t->g = p;
        t->cap *= 2;
    }
    t->g[t->n] = *g;
    t->g[t->n].count = 1;
    t->g[t->n].first = t->n;
    t->slot[i] = ++t->n;
    return true;
}

/* a goes before b: more goroutines first, then the one seen first. */
static bool before(const struct groups *t, uint32_t a, uint32_t b)
{
    const struct group *x = &t->g[a], *y = &t->g[b];
    return x->count > y->count || (x->count == y->count && x->first < y->first);
}

static void sift_order(const struct groups *t, uint32_t *o, uint32_t root,
                       uint32_t n)
{
    for (;;) {
        uint32_t child = 2 * root + 1;
        if (child >= n)
            return;
        /* A heap with the last in order on top, so the sort ends in
         * order. */
        if (child + 1 < n && before(t, o[child], o[child + 1]))
            child++;
        if (!before(t, o[root], o[child]))
            return;
        uint32_t x = o[root];
        o[root] = o[child];
        o[child] = x;
        root = child;
    }
}

/* The group numbers in print order, in t->slot (no longer needed as an
 * index, and at least as long). */
static uint32_t *groups_sort(struct groups *t)
{
    uint32_t *o = t->slot;
    for (uint32_t i = 0; i < t->n; i++)
        o[i] = i;
    for (uint32_t i = t->n / 2; i-- > 0;)
        sift_order(t, o, i, t->n);
    for (uint32_t end = t->n; end-- > 1;) {
        uint32_t x = o[0];
        o[0] = o[end];
        o[end] = x;
        sift_order(t, o, 0, end);
    }
    return o;
}

static void print_group(struct dumper *d, const struct group *g)
{
    out_printf(&d->o, "%u @", g->count);
    for (int i = 0; i < g->n; i++)
        out_printf(&d->o, " 0x%lx", (unsigned long)g->pcs[i]);
    out_printf(&d->o, "\n");
    for (int i = 0; i < g->n; i++) {
        uintptr_t look = g->traps[i] ? g->pcs[i] : g->pcs[i] - 1;
        struct symres r;
        gort__sym_lookup(&d->sc, look, &r);
        out_printf(&d->o, "#\t0x%lx\t%.*s+0x%lx\t%.300s:0x%lx\n",
                   (unsigned long)look, r.name ? shown_len(&r) : 1,
                   r.name ? r.name : "?",
                   (unsigned long)(r.name ? look - r.start : 0),
                   r.obj ? r.obj : "?",
                   (unsigned long)(r.obj ? r.objaddr : look));
    }
    if (g->more)
        out_printf(&d->o, "#\t...additional frames elided...\n");
    if (g->view == VIEW_ELSEWHERE)
        out_printf(&d->o, "#\tgoroutine running on other thread; stack "
                          "unavailable\n");
    else if (g->view == VIEW_NONE)
        out_printf(&d->o, "#\tstack unavailable\n");
    out_printf(&d->o, "\n");
}

/* Count every live G's stack into t (the running one first). */
GORT_NO_TSAN static bool group_gs(struct dumper *d, struct groups *t,
                                  struct g **allgs, uint32_t n,
                                  uint32_t *total)
{
    struct group tmp;
    struct g *cur = d->me ? d->me->curg : NULL;
    if (cur && collect(d, cur, &tmp)) {
        if (!groups_add(t, &tmp))
            return false;
        (*total)++;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (allgs[i] == cur || !collect(d, allgs[i], &tmp))
            continue;
        if (!groups_add(t, &tmp))
            return false;
        (*total)++;
    }
    return true;
}

int gort_dump_goroutines_grouped(int fd)
{
    GORT_SAN_SCOPE();
    if (fd < 0)
        return -EBADF;
    /* Acquire: as in dump_gs. */
    uint32_t n = load_acq(&gort__allglen);
    struct g **allgs = load_acq(&gort__allgs);
    struct groups t = {0};
    t.nslot = 64;
    while (t.nslot < 2 * (uint64_t)n + 2)
        t.nslot *= 2;
    t.cap = 16;
    t.slot = map_anon((size_t)t.nslot * sizeof *t.slot);
    t.g = map_anon((size_t)t.cap * sizeof *t.g);
    if (!t.slot || !t.g) {
        groups_free(&t);
        return -ENOMEM;
    }
    struct m *mp = dump_enter();
    struct dumper d;
    dumper_init(&d, fd, (uintptr_t)__builtin_frame_address(0), NULL,
                gort__traceback_level == TRACEBACK_SYSTEM);
    uint32_t total = 0;
    int err = 0;
    if (group_gs(&d, &t, allgs, n, &total)) {
        uint32_t *order = groups_sort(&t);
        out_printf(&d.o, "goroutine profile: total %u\n", total);
        for (uint32_t i = 0; i < t.n; i++)
            print_group(&d, &t.g[order[i]]);
    } else {
        err = -ENOMEM;
    }
    int werr = dumper_fini(&d);
    dump_leave(mp);
    groups_free(&t);
    return err ? err : werr;
}
