/* SPDX-License-Identifier: MIT */
/*
 * rawsys.c - goroutines in system calls nobody wrapped: found without
 * interrupting them, and never interrupted by the preemption signal.
 *
 * A goroutine that calls read(2), nanosleep(2) or poll(2) itself, without
 * gort_entersyscall or GORT_BLOCKING, keeps its P while the call blocks.
 * Go never meets this (every system call goes through its wrappers); gort
 * must, because the program's code and its libraries call libc directly.
 * A signal cannot be used to look: a signal with a handler makes
 * nanosleep, poll, select, epoll_wait and a dozen others return EINTR,
 * and SA_RESTART does not restart them.  So the inspector (sysmon, or a
 * stop-the-world waiting for the P) asks the kernel instead:
 *
 *   /proc/self/task/TID/syscall   "running" while the thread is runnable,
 *                                 else the number, arguments, stack
 *                                 pointer and PC of the call it sleeps in
 *                                 (-1 when it sleeps outside one: a page
 *                                 fault);
 *   /proc/self/task/TID/schedstat its third field counts the times the
 *                                 thread was switched in;
 *   the thread's CPU clock        (clock_gettime of its clockid): how much
 *                                 it ran, to the nanosecond.
 *
 * Taking the P of a sleeping thread.  The inspector hands the P off only
 * when it can show that the thread has not run since before it took it:
 *
 *   1. see the G (on its P for 10 ms) asleep in a system call outside
 *      gort's code, with no runtime lock held, and remember the call and
 *      the switch count (read before the call: a switch-in after it
 *      counts);
 *   2. decide that the thread sleeps in calls: the same call with the same
 *      switch count GORT_RAWSYS_SLEPT_NS later (one long sleep), or asleep
 *      again now after a window of that length in which it ran less than
 *      a quarter of the time (many short sleeps);
 *   3. claim: rawmark INTENT, then the thread's fast M slot
 *      (gort__tls_mfast) from the M to NULL, so that its next entry into
 *      gort takes gort__getm_slow;
 *   4. see the same call and switch count as when it was last seen asleep
 *      (the call read first, the count after): it has not run since
 *      before the claim, so it has not passed gort__getm since;
 *   5. commit: rawmark INTENT -> COMMITTING by CAS, the G goes to
 *      G_SYSCALL and its P is handed off (gort_entersyscallblock's work,
 *      on its behalf), then rawmark DONE.
 *
 * The thread, at its next entry into gort (gort__rawsys_back, from
 * gort__getm_slow, before anything touches a P): an INTENT it cancels by
 * CAS to NONE (it was running, so the commit's CAS fails and the P stays
 * its own); COMMITTING it waits out; DONE it finishes with exitsyscall,
 * which takes a P again or parks the G.  Until then it runs the program's
 * code without a P, as after gort_entersyscall.
 *
 * What keeps the PC test honest: gort's own code that calls into libc
 * with a P holds m->locks when the call may sleep (gort__libc_begin), and
 * the inspector takes nothing from a thread with m->locks set.
 *
 * The preemption signal never interrupts a call either, but that is
 * preempt.c's doing: where /proc shows the threads' calls, it comes from
 * the thread's own CPU-time timer, which fires only while the thread runs.
 *
 * Where /proc does not show the thread's own calls (under qemu-user it
 * shows the emulator's, under Valgrind its core's), the signal looks
 * instead: it is sent at once by tgkill, and preempt.c marks a thread it
 * finds in the kernel (rawsys_confirmed), with the EINTRs that come with
 * it.
 * Under ThreadSanitizer too (it would take the inspector's changes to a
 * sleeping thread's G for races), where there is no signal either.
 *
 * Invariants:
 *   - One inspector per M at a time: rawbusy, taken by CAS; rawseen is
 *     the inspector's.
 *   - *mfastp is written by an inspector only under rawbusy with rawexit
 *     clear: the thread's TLS lives until it sets rawexit and
 *     waits out rawbusy (gort__rawsys_thread_exit).
 *   - The commit runs only while the thread is asleep, and the thread
 *     touches no P, G or M state until it sees DONE.
 */
#include "atomic.h"
#include "defs.h"
#include "libc.h"
#include "mthread.h"
#include "os_linux.h"
#include "procresize.h"
#include "rawsys.h"
#include "san.h"
#include "sched.h"
#include "symbolize.h"
#include "tracehooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

uint32_t gort__rawsys_mode = RAWSYS_SIGNAL;
/* A G that has kept its P this long since the inspector first saw it
 * there loses the P at the next call it is seen asleep in, however short
 * (its calls may be too short for step 2 to decide). */
#define HELD_MAX_NS (40 * 1000 * 1000)
/* How far above a sleeping call's stack pointer its caller's return
 * address is looked for (programs_call): the C library's frames between
 * are a few hundred bytes at most, stdio's included. */
#define CALLER_WORDS 512

/* ---------------------------------------------------------------------------
 * Reading the kernel's view of a thread.
 * ------------------------------------------------------------------------- */

enum obs_state {
    OBS_GONE,    /* the file could not be read (the thread ended) */
    OBS_RUNNING, /* runnable: on a CPU or waiting for one */
    OBS_SYSCALL, /* asleep in system call nr */
    OBS_OTHER,   /* asleep, not in a system call (a page fault) */
};

struct obs {
    enum obs_state state;
    long nr;
    uintptr_t sp, pc;
};

/* Read /proc/self/task/tid/leaf into buf (NUL-terminated); the length,
 * or -1. */
static ssize_t read_task_file(int32_t tid, const char *leaf, char *buf,
                              size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, leaf);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r;
    do
        r = pread(fd, buf, n - 1, 0);
    while (r < 0 && errno == EINTR);
    gort__libc.close(fd);
    if (r < 0)
        return -1;
    buf[r] = '\0';
    return r;
}

/* Parse a line of /proc/.../syscall. */
static void parse_syscall(const char *s, struct obs *o)
{
    memset(o, 0, sizeof *o);
    if (strncmp(s, "running", 7) == 0) {
        o->state = OBS_RUNNING;
        return;
    }
    char *end;
    o->nr = strtol(s, &end, 10);
    if (end == s) {
        o->state = OBS_GONE;
        return;
    }
    /* "nr a1 .. a6 sp pc", or "-1 sp pc" outside a system call. */
    int skip = o->nr < 0 ? 0 : 6;
    unsigned long long v[8] = {0};
    int n = 0;
    for (s = end; n < skip + 2; n++) {
        v[n] = strtoull(s, &end, 16);
        if (end == s)
            break;
        s = end;
    }
    if (n < skip + 2) {
        o->state = OBS_GONE;
        return;
    }
    o->sp = (uintptr_t)v[skip];
    o->pc = (uintptr_t)v[skip + 1];
    o->state = o->nr < 0 ? OBS_OTHER : OBS_SYSCALL;
}

static void observe(int32_t tid, struct obs *o)
{
    char buf[256];
    if (read_task_file(tid, "syscall", buf, sizeof buf) < 0) {
        memset(o, 0, sizeof *o);
        o->state = OBS_GONE;
    } else {
        parse_syscall(buf, o);
    }
}

int64_t gort__thread_runq_wait(int32_t tid)
{
    char buf[256];
    unsigned long long run, wait;
    if (read_task_file(tid, "schedstat", buf, sizeof buf) <= 0 ||
        sscanf(buf, "%llu %llu", &run, &wait) != 2)
        return -1;
    return (int64_t)wait;
}

/* Times the thread was switched in; false if unknown.  schedstat's third
 * field, or the sum of the context switch counts in status (a switch-out
 * for every switch-in but the current one) where schedstat is missing. */
static bool switches(int32_t tid, uint64_t *out)
{
    char buf[1024];
    if (read_task_file(tid, "schedstat", buf, sizeof buf) > 0) {
        unsigned long long run, wait, count;
        if (sscanf(buf, "%llu %llu %llu", &run, &wait, &count) == 3) {
            *out = count;
            return true;
        }
    }
    if (read_task_file(tid, "status", buf, sizeof buf) <= 0)
        return false;
    /* The voluntary line comes first, then "nonvoluntary_...", which
     * also contains the shorter name. */
    const char *v = strstr(buf, "voluntary_ctxt_switches:");
    const char *nv = strstr(buf, "nonvoluntary_ctxt_switches:");
    if (!v || !nv)
        return false;
    *out = strtoull(v + 24, NULL, 10) + strtoull(nv + 27, NULL, 10);
    return true;
}

static bool same_call(const struct obs *a, const struct obs *b)
{
    return a->state == OBS_SYSCALL && b->state == OBS_SYSCALL &&
           a->nr == b->nr && a->sp == b->sp && a->pc == b->pc;
}

/* The call at o was made by the program's code (or a library it uses),
 * not by gort's: its PC is not gort's, and the first return address
 * above it outside the C library is not gort's either. */
static bool programs_call(struct g *gp, const struct obs *o)
{
    struct symcache *c = gort__malloc(sizeof *c);
    if (!c)
        return false;
    gort__sym_init(c);
    bool prog = !gort__sym_in_gort(c, o->pc) &&
                gort__sym_caller(c, o->sp, gp->stack.hi, CALLER_WORDS) ==
                    GORT_CALLER_PROGRAM;
    gort__sym_fini(c);
    gort__free(c);
    return prog;
}

/* ---------------------------------------------------------------------------
 * Start-up and threads.
 * ------------------------------------------------------------------------- */

/* Our own call, seen through /proc/thread-self/syscall, must be the
 * pread64 we made, at a PC inside an object the dynamic linker knows.
 * Under qemu-user the number is the host's (or the file is missing);
 * under Valgrind the PC is in its core, outside the program. */
static bool proc_shows_own_calls(void)
{
    int fd = open("/proc/thread-self/syscall", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[256];
    ssize_t r = syscall(SYS_pread64, fd, buf, sizeof buf - 1, 0);
    gort__libc.close(fd);
    if (r <= 0)
        return false;
    buf[r] = '\0';
    struct obs o;
    parse_syscall(buf, &o);
    Dl_info info;
    return o.state == OBS_SYSCALL && o.nr == SYS_pread64 &&
           dladdr((void *)o.pc, &info) != 0 && info.dli_fname != NULL;
}

void gort__rawsys_init(void)
{
    /* ThreadSanitizer cannot know that the thread slept while the
     * inspector changed its G, M and P (nothing it sees orders the two):
     * under it, as under Valgrind, nothing is taken from a thread. */
    bool proc = !gort__valgrind && !(gort__san & GORT_SAN_TSAN) &&
                proc_shows_own_calls() && gort__thread_cputime(gort__gettid()) != 0;
    store_relaxed(&gort__rawsys_mode, proc ? RAWSYS_PROC : RAWSYS_SIGNAL);
}

void gort__rawsys_thread_start(struct m *mp, struct m **mfast)
{
    mp->mfastp = mfast;
    store_seqcst(&mp->rawexit, 0);
}

void gort__rawsys_thread_exit(struct m *mp)
{
    /* Seq-cst, then rawbusy seq-cst: an inspector that took rawbusy
     * before this store is waited out; one that takes it after sees
     * rawexit and lets go (rawsys_lock). */
    store_seqcst(&mp->rawexit, 1);
    while (load_seqcst(&mp->rawbusy))
        gort__osyield();
}

/* From gort__getm_slow, on the M's own thread, before anything touches
 * the P: settle an inspector's claim. */
void gort__rawsys_back(struct m *mp)
{
    uint32_t mk = load_acq(&mp->rawmark);
    if (mk == RAWMARK_INTENT &&
        cas_acqrel(&mp->rawmark, RAWMARK_INTENT, RAWMARK_NONE))
        return; /* we were running after all: the P is still ours */
    /* Acquire: pairs with the commit's release of DONE, after which the
     * G's, M's and P's states as the inspector left them are visible. */
    while ((mk = load_acq(&mp->rawmark)) == RAWMARK_COMMITTING ||
           mk == RAWMARK_INTENT)
        gort__cpu_relax();
    /* DONE: the caller finds insyscall 2 and runs exitsyscall. */
    if (mk == RAWMARK_DONE)
        store_relaxed(&mp->rawmark, RAWMARK_NONE);
}

/* ---------------------------------------------------------------------------
 * The inspector's side.
 * ------------------------------------------------------------------------- */

/* Take the M for inspection, unless another inspector has it or its
 * thread is ending. */
static bool rawsys_lock(struct m *mp)
{
    /* Seq-cst: the inspector's half of the handshake with rawexit. */
    if (!cas_seqcst(&mp->rawbusy, 0, 1))
        return false;
    if (load_seqcst(&mp->rawexit)) {
        store_seqcst(&mp->rawbusy, 0);
        return false;
    }
    return true;
}

static void rawsys_unlock(struct m *mp)
{
    store_seqcst(&mp->rawbusy, 0);
}

/* Is a word a return address into code?  Used only to find a frame
 * record for dumps. */
static bool code_addr(uintptr_t pc)
{
    Dl_info info;
    return pc > 4096 && dladdr((void *)pc, &info) != 0 &&
           info.dli_fname != NULL;
}

/* The first plausible frame record at or above sp on gp's stack: a word
 * pointing higher up the stack (or 0, the end of the chain) followed by
 * a return address.  The libc function asleep in the call may have made
 * no record of its own; its caller's is the one wanted.  For dumps. */
GORT_NO_TSAN GORT_NOINLINE static uintptr_t find_frame(struct g *gp, uintptr_t sp)
{
    uintptr_t lo = gp->stack.lo, hi = gp->stack.hi, w = sizeof(uintptr_t);
    if (sp < lo || sp >= hi - 2 * w)
        return 0;
    uintptr_t end = hi - 2 * w;
    if (end - sp > 8192)
        end = sp + 8192;
    for (uintptr_t f = (sp + w - 1) & ~(w - 1); f <= end; f += w) {
        uintptr_t next = gort__peek(f);
        uintptr_t ret = gort__peek(f + w);
        if ((next == 0 || (next > f && next < hi && next % w == 0)) &&
            code_addr(ret))
            return f;
    }
    return 0;
}

/* Put the sleeping thread's G into G_SYSCALL and hand its P off, on its
 * behalf (its gort_entersyscallblock).  The thread is asleep and waits
 * for rawmark DONE before it touches any of this. */
static void commit(struct m *self, struct m *mp, struct p *pp, struct g *gp,
                   const struct obs *o, int64_t now)
{
    gp->waitsince = load_relaxed(&gort__sched.coarsenow);
    /* For dumps: where it sleeps, and how it got there. */
    gp->syscallpc = o->pc;
    gp->syscallfp = find_frame(gp, o->sp);
    gp->syscalltrap = true;
#if defined(__x86_64__)
    gp->syscallret = o->sp >= gp->stack.lo && o->sp < gp->stack.hi
                         ? gort__peek(o->sp)
                         : 0;
#else
    gp->syscallret = 0; /* the link register is not in /proc */
#endif
    gort__trace_syscall_marked(mp, gp);
    gort__casgstatus_t(gp, G_RUNNING, G_SYSCALL, GT_OFF);
    store_relaxed(&pp->syscalltick, pp->syscalltick + 1);
    mp->oldp = NULL; /* handed off now: exitsyscall looks for any P */
    store_relaxed(&mp->syscallwhen, now);
    /* Seq-cst: the preemption signal's handshake reads it (urgpending). */
    store_seqcst(&mp->insyscall, 2);
    gort__releasep(mp);
    gort__stat_add(&self->nhandoffs, 1);
    gort__trace_procsteal(pp, TRACE_STEAL_SYSMON);
    gort__handoffp(pp);
}

/* The M's count of Gs run (relaxed: its owner writes it). */
static uint32_t nexecute_of(struct m *mp)
{
    return load_relaxed(&mp->nexecute);
}

/* Whether the M's state allows taking its P: its G runs on pp, outside
 * any runtime lock, not in a call it wrapped, not a foreign thread's, not
 * with preemption disabled.  Racy reads, made stable by the thread being
 * asleep (checked by the caller before and after). */
GORT_NO_TSAN GORT_NOINLINE static bool takeable(struct m *mp, struct p *pp, struct g *gp)
{
    return mp->p == pp && load_relaxed(&pp->m) == mp &&
           load_relaxed(&mp->curg) == gp && !gp->foreign &&
           mp->locks == 0 && gp->preemptoff == 0 &&
           load_relaxed(&mp->insyscall) == 0 &&
           load_relaxed(&mp->rawmark) == RAWMARK_NONE &&
           load_acq(&pp->status) == P_RUNNING &&
           gort__readgstatus(gp) == G_RUNNING;
}

/* Steps 3-5 of the file comment; o and count are the last sighting.
 * True when the P was handed off. */
static bool claim_and_commit(struct m *self, struct m *mp, struct p *pp,
                             struct g *gp, const struct obs *o,
                             uint64_t count, int64_t now)
{
    store_seqcst(&mp->rawmark, RAWMARK_INTENT);
    struct m *expect = mp;
    /* Seq-cst: ordered before the /proc reads below (the thread, if it
     * wakes after them, sees NULL and takes gort__getm_slow).  Already
     * NULL: an earlier claim was withdrawn while the thread slept, or it
     * woke without entering gort since; it takes the slow path anyway. */
    bool cleared =
        cas_seqcst_seen(mp->mfastp, &expect, NULL) || expect == NULL;
    struct obs again;
    uint64_t c2 = 0;
    if (cleared) {
        observe(mp->procid, &again);
        cleared = same_call(o, &again) && switches(mp->procid, &c2) &&
                  c2 == count;
    }
    if (!cleared || !cas_acqrel(&mp->rawmark, RAWMARK_INTENT,
                                RAWMARK_COMMITTING)) {
        /* It ran: withdraw the claim unless it already did. */
        cas_acqrel(&mp->rawmark, RAWMARK_INTENT, RAWMARK_NONE);
        return false;
    }
    commit(self, mp, pp, gp, o, now);
    /* Release: the thread's acquire in gort__rawsys_back sees it all. */
    store_rel(&mp->rawmark, RAWMARK_DONE);
    return true;
}

/* Step 2 for a thread seen asleep in o now (count switch-ins, exec CPU
 * time): has it slept long enough to lose its P? */
static bool slept_enough(const struct gort__rawseen *s, const struct obs *o,
                         uint64_t count, uint64_t exec, int64_t now,
                         int64_t slept_ns)
{
    struct obs prev = {OBS_SYSCALL, s->nr, s->sp, s->pc};
    if (s->when != 0 && same_call(&prev, o) && s->switches == count &&
        now - s->when >= slept_ns)
        return true; /* one long sleep */
    int64_t span = now - s->when0;
    return s->when0 != 0 && span >= slept_ns && exec >= s->exec0 &&
           (int64_t)(exec - s->exec0) < span / 4; /* short sleeps */
}

/* A new G on the M, or a first look: start the windows. */
static void rawseen_reset(struct m *mp, struct g *gp, uint64_t exec,
                          int64_t now)
{
    struct gort__rawseen *s = &mp->rawseen;
    memset(s, 0, sizeof *s);
    s->since = now;
    s->gp = gp;
    s->nexecute = nexecute_of(mp);
    s->when0 = now;
    s->exec0 = exec;
}

enum rawsys_result gort__rawsys_inspect(struct p *pp, int64_t now,
                                        int64_t slept_ns)
{
    if (load_relaxed(&gort__rawsys_mode) != RAWSYS_PROC)
        return RAWSYS_UNKNOWN;
    struct m *mp = load_acq(&pp->m);
    struct g *gp = mp ? load_acq(&mp->curg) : NULL;
    if (!gp || mp->foreign || mp->procid <= 0 || !mp->mfastp)
        return RAWSYS_SKIP;
    if (!rawsys_lock(mp))
        return RAWSYS_BUSY;
    struct gort__rawseen *s = &mp->rawseen;
    uint64_t exec = gort__thread_cputime(mp->procid);
    if (s->gp != gp || s->nexecute != nexecute_of(mp))
        rawseen_reset(mp, gp, exec, now);
    enum rawsys_result res = RAWSYS_SKIP;
    uint64_t count;
    struct obs o;
    if (!switches(mp->procid, &count)) {
        rawsys_unlock(mp);
        return RAWSYS_SKIP;
    }
    observe(mp->procid, &o); /* after the count: see the file comment */
    if (o.state == OBS_RUNNING) {
        /* The window for "slept most of the time" (step 2) slides: a
         * thread seen running after one has passed starts another. */
        if (now - s->when0 >= slept_ns) {
            s->when0 = now;
            s->exec0 = exec;
        }
        res = RAWSYS_RUNNING;
    } else if (o.state == OBS_SYSCALL && takeable(mp, pp, gp)) {
        res = RAWSYS_BLOCKED;
        if (slept_enough(s, &o, count, exec, now, slept_ns) ||
            now - s->since >= HELD_MAX_NS) {
            s->when = 0;
            if (programs_call(gp, &o) &&
                claim_and_commit(gort__getm_raw(), mp, pp, gp, &o, count,
                                 now))
                res = RAWSYS_HANDEDOFF;
        } else {
            struct obs prev = {OBS_SYSCALL, s->nr, s->sp, s->pc};
            if (s->when == 0 || !same_call(&prev, &o) ||
                s->switches != count) {
                s->nr = o.nr;
                s->sp = o.sp;
                s->pc = o.pc;
                s->switches = count;
                s->when = now;
            }
        }
    }
    rawsys_unlock(mp);
    return res;
}
