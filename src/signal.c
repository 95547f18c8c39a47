/* SPDX-License-Identifier: MIT */
/*
 * signal.c - signals delivered to channels (gort.h's gort_signal_*).
 * Mirrors os/signal (signal.go, signal_unix.go) and the runtime's half of
 * it (sigqueue.go, sigenable/sigdisable/sigignore in signal_unix.go).
 *
 * A signal that some channel wants has notify_handler as its action.
 * The handler takes no lock and calls only async-signal-safe functions:
 * it ORs the signal's bit into `pending` and, when no wake-up is owed
 * already (`woken`), writes 1 to an eventfd.  The eventfd is registered
 * with the poller, and one goroutine, started by the first notify of a
 * gort_main, reads it: parked in IO wait, no thread blocked for it, like
 * any goroutine waiting on a socket.  Woken, it takes the whole mask and
 * try-sends the signal number to every channel that wants it, in
 * ascending signal order.  A channel with no room misses that signal (Go
 * does not block either); signals of one number that arrive before the
 * goroutine takes the mask are one delivery, as the kernel merges a
 * pending standard signal.  Any thread may take the signal, one of gort's
 * or not: the handler needs neither an M nor a G.
 *
 * The handshake between the handler and the goroutine:
 *
 *   handler                           goroutine (holding mu)
 *   OR pending                        woken = 0
 *   if xchg(woken, 1) == 0: write     take pending (xchg 0), deliver
 *
 * all sequentially consistent: a handler that finds woken set (so writes
 * nothing) comes before the goroutine's reset in their total order, and
 * its bit before the goroutine's exchange of the mask, which therefore
 * sees it; a handler that comes after the reset writes again.
 *
 * Stop (Go's Stop): the channel's signals, the last channel of a signal
 * gone, get back the action they had before gort took them (Go's Reset),
 * then the handlers that may have seen them wanted finish (`delivering`,
 * a Dekker pair with `wanted`: the handler counts itself in before it
 * reads wanted, Stop clears wanted before it reads the count, both
 * seq-cst), what they recorded is delivered, the channel included, and
 * only then does the channel leave the list.  Deliveries happen under mu,
 * the lock Stop holds for all of this: once Stop returns, nothing sends
 * on the channel any more, and the program may free it.
 *
 * A handler that finds its signal no longer wanted (it began before the
 * action was put back) does what the action put back would have done:
 * calls the handler the program had, or raises the signal again, which
 * the restored default or ignore then takes when the handler returns.
 *
 * gort's own uses of signals.  SIGQUIT: a notified SIGQUIT reaches the
 * channel and no longer dumps the goroutines (Go).  SIGPIPE: a gort
 * write's SIGPIPE is accounted for as os_linux.c's handler does, and
 * delivered too (Go delivers every SIGPIPE to a channel that wants it).
 * SIGURG: the action gort replaced (its preemption handler, which passes
 * the signal on to the program's) still runs, after the signal is
 * recorded, and every SIGURG is delivered, gort's preemption requests
 * included, as in Go.  Refused: the synchronous faults (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGTRAP), since a handler that returns from one runs the
 * faulting instruction again (and gort's crash handler reports the first
 * four); SIGKILL and SIGSTOP, which cannot be caught; the C library's own
 * signals (32 and 33 with glibc).
 *
 * Under ThreadSanitizer, which runs a handler only at an intercepted call
 * of the fiber or thread that took the signal, the first notify sets
 * gort__san_sigwatch: san.h says what the runtime then does so that no
 * handler waits for good.
 *
 * Invariants:
 *   - mu (a gort_mutex: callers are goroutines) guards the channel list,
 *     refs, held, ign and saved; every change of a disposition and every
 *     delivery happens under it.
 *   - A signal's bit in wanted is set before notify_handler becomes its
 *     action and cleared after another action replaced it.
 *   - sigfd and fwd[] are published (release) before the handler that
 *     reads them (acquire) is installed.
 */
#include "atomic.h"
#include "chan.h"
#include "defs.h"
#include "fatal.h"
#include "libc.h"
#include "os_linux.h"
#include "san.h"
#include "sched.h"
#include "signal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Signal numbers 1..64, bit sig - 1 of a mask. */
#define MAXSIG 64
static inline uint64_t sigbit(int sig)
{
    return (uint64_t)1 << (sig - 1);
}

/* The handler's view.  All atomic, seq-cst where the handshakes above
 * say so. */
static uint64_t wanted;     /* signals some channel wants */
static uint64_t pending;    /* arrived, not yet delivered */
static uint32_t woken;      /* the eventfd was written, not yet drained */
static uint32_t delivering; /* handlers between their look at wanted and
                               the end of their wake-up */
static int sigfd = -1;      /* the eventfd (release/acquire) */
/* The action gort replaced, for the handler: SIG_DFL, SIG_IGN or a
 * function, and whether it takes siginfo.  Release/acquire. */
static struct {
    uintptr_t fn;
    uint32_t info;
} fwd[MAXSIG + 1];

/* Under mu. */
struct reg {
    gort_chan *ch;
    uint64_t sigs; /* the signals it wants */
};
static gort_mutex mu = GORT_MUTEX_INIT;
static struct reg *regs;
static int nregs, capregs;
static int32_t refs[MAXSIG + 1]; /* channels that want each signal */
static uint64_t held;            /* gort changed the action: saved[] */
static uint64_t ign;             /* ... to SIG_IGN (gort_signal_ignore) */
static struct sigaction saved[MAXSIG + 1];
static bool started; /* the eventfd and the goroutine exist */

/* ---------------------------------------------------------------------------
 * The handler.
 * ------------------------------------------------------------------------- */

/* Do what the action gort replaced does with sig. */
static void forward(int sig, siginfo_t *info, void *uc)
{
    uintptr_t fn = load_acq(&fwd[sig].fn);
    if (fn == (uintptr_t)SIG_IGN)
        return;
    if (fn == (uintptr_t)SIG_DFL) {
        /* The default action is in place again (Stop restores it before
         * it clears wanted): raised again, it applies once this handler
         * returns and unblocks sig. */
        raise(sig);
        return;
    }
    if (load_relaxed(&fwd[sig].info))
        ((void (*)(int, siginfo_t *, void *))fn)(sig, info, uc);
    else
        ((void (*)(int))fn)(sig);
}

static void notify_handler(int sig, siginfo_t *info, void *uc)
{
    int saved_errno = errno;
    uint64_t bit = sigbit(sig);
    /* Seq-cst: the Dekker pair with release_locked's clear of wanted. */
    xadd_seqcst(&delivering, 1);
    bool want = (load_seqcst(&wanted) & bit) != 0;
    if (want) {
        or_seqcst(&pending, bit);
        if (xchg_seqcst(&woken, 1) == 0) {
            uint64_t one = 1;
            int fd = load_acq(&sigfd);
            if (fd >= 0)
                gort__libc.write(fd, &one, sizeof one);
        }
    }
    /* Release: what this handler recorded comes before a Stop that sees
     * the count drop. */
    xadd_seqcst(&delivering, -1);
    /* A gort write's own SIGPIPE: accounted for as os_linux.c's handler
     * does; unwanted, it goes no further (the write fails with -EPIPE). */
    bool absorbed = sig == SIGPIPE && gort__sigpipe_absorb();
    if (!want) {
        if (!absorbed)
            forward(sig, info, uc);
    } else if (sig == SIGURG) {
        /* gort's preemption handler (or whatever was there) still runs;
         * a default or ignore action is no action for SIGURG. */
        uintptr_t fn = load_acq(&fwd[sig].fn);
        if (fn != (uintptr_t)SIG_DFL && fn != (uintptr_t)SIG_IGN)
            forward(sig, info, uc);
    }
    errno = saved_errno;
}

/* ---------------------------------------------------------------------------
 * Dispositions.  Under mu.
 * ------------------------------------------------------------------------- */

/* Whether sig is one gort may hand to channels. */
static bool refused(int sig)
{
    switch (sig) {
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
        return true;
    }
    /* The C library's own (NPTL's cancellation and setxid signals). */
    return sig > 31 && sig < SIGRTMIN;
}

static bool valid(int sig)
{
    return sig >= 1 && sig <= MAXSIG && sig <= SIGRTMAX && !refused(sig);
}

/* The mask of sigs[0..n), every valid signal for n == 0; SIGURG is
 * refused (and left out of every signal) for ignore.  0, or -EINVAL. */
static int mask_of(const int *sigs, int n, bool for_ignore, uint64_t *m)
{
    *m = 0;
    if (n < 0 || (n > 0 && !sigs))
        return -EINVAL;
    if (n == 0) {
        for (int s = 1; s <= MAXSIG; s++)
            if (valid(s) && !(for_ignore && s == SIGURG))
                *m |= sigbit(s);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (!valid(sigs[i]) || (for_ignore && sigs[i] == SIGURG))
            return -EINVAL;
        *m |= sigbit(sigs[i]);
    }
    return 0;
}

/* Record the action sig has now, unless gort changed it already. */
static int hold_locked(int sig)
{
    if (held & sigbit(sig))
        return 0;
    if (sigaction(sig, NULL, &saved[sig]) != 0)
        return -errno;
    const struct sigaction *sa = &saved[sig];
    bool info = (sa->sa_flags & SA_SIGINFO) != 0;
    uintptr_t fn =
        info ? (uintptr_t)sa->sa_sigaction : (uintptr_t)sa->sa_handler;
    store_rel(&fwd[sig].info, (uint32_t)info);
    store_rel(&fwd[sig].fn, fn);
    held |= sigbit(sig);
    return 0;
}

/* The first channel wants sig: notify_handler becomes its action. */
static int take_locked(int sig)
{
    int err = hold_locked(sig);
    if (err)
        return err;
    or_seqcst(&wanted, sigbit(sig));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = notify_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0) {
        err = -errno;
        and_seqcst(&wanted, ~sigbit(sig));
        return err;
    }
    ign &= ~sigbit(sig);
    return 0;
}

/* Whether the action of sig is still the one gort set: a handler the
 * program installed over it since stays (as os_linux.c's do). */
static bool ours_locked(int sig)
{
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0)
        return false;
    if (cur.sa_flags & SA_SIGINFO)
        return cur.sa_sigaction == notify_handler;
    return (ign & sigbit(sig)) && cur.sa_handler == SIG_IGN;
}

/* No channel wants sig any more: give it the action it had before gort
 * took it (to_ignore false) or SIG_IGN, then clear wanted (the handlers
 * that still find it set deliver: Stop waits for them). */
static void release_locked(int sig, bool to_ignore)
{
    uint64_t bit = sigbit(sig);
    if (to_ignore) {
        if (hold_locked(sig) == 0 && signal(sig, SIG_IGN) != SIG_ERR)
            ign |= bit;
    } else if (held & bit) {
        if (ours_locked(sig))
            sigaction(sig, &saved[sig], NULL);
        held &= ~bit;
        ign &= ~bit;
    }
    and_seqcst(&wanted, ~bit);
}

/* ---------------------------------------------------------------------------
 * Channels and delivery.  Under mu.
 * ------------------------------------------------------------------------- */

static struct reg *find_locked(gort_chan *ch)
{
    for (int i = 0; i < nregs; i++)
        if (regs[i].ch == ch)
            return &regs[i];
    return NULL;
}

static void remove_locked(struct reg *r)
{
    *r = regs[--nregs];
}

/* Take every pending signal and try-send it to each channel that wants
 * it. */
static void deliver_locked(void)
{
    store_seqcst(&woken, 0);
    uint64_t p = xchg_seqcst(&pending, 0);
    while (p) {
        int sig = __builtin_ctzll(p) + 1;
        p &= p - 1;
        for (int i = 0; i < nregs; i++)
            if (regs[i].sigs & sigbit(sig))
                gort_chan_trysend(regs[i].ch, &sig);
    }
}

/* Wait for the handlers that may still record a signal whose wanted bit
 * was just cleared: a handler is a few instructions and a write. */
static void quiesce(void)
{
    /* Seq-cst: the other half of the pair in notify_handler. */
    while (load_seqcst(&delivering) != 0)
        gort__osyield();
}

/* The goroutine that hands the signals out. */
static void deliver_loop(void *arg)
{
    (void)arg;
    GORT_SAN_SCOPE();
    int fd = load_acq(&sigfd);
    for (;;) {
        uint64_t v;
        long r = gort_read(fd, &v, sizeof v);
        if (r < 0 && r != -EAGAIN && r != -EINTR)
            gort__throw("signal: read of the wake-up eventfd failed: %s",
                        strerror((int)-r));
        gort_mutex_lock(&mu);
        deliver_locked();
        gort_mutex_unlock(&mu);
    }
}

/* The eventfd and the goroutine, on the first notify of a gort_main. */
static int start_locked(void)
{
    if (started)
        return 0;
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
        return -errno;
    int err = gort_fd_register(fd);
    if (err) {
        gort__libc.close(fd);
        return err;
    }
    store_rel(&sigfd, fd);
    /* ThreadSanitizer: no fiber may keep a signal (san.h). */
    store_relaxed(&gort__san_sigwatch, 1);
    int64_t id = gort_go(deliver_loop, NULL);
    if (id < 0) {
        store_rel(&sigfd, -1);
        gort_close(fd);
        return (int)id;
    }
    started = true;
    return 0;
}

/* gort_signal_* need a goroutine (or a thread of the program's while
 * gort_main runs: mu parks it like one). */
static bool in_runtime(void)
{
    struct m *mp = gort__getm();
    return mp && mp->curg && load_acq(&gort__main_started);
}

/* ---------------------------------------------------------------------------
 * The API.
 * ------------------------------------------------------------------------- */

int gort_signal_notify(gort_chan *ch, const int *sigs, int n)
{
    GORT_SAN_SCOPE();
    if (!ch || ch->elemsize != sizeof(int))
        return -EINVAL;
    uint64_t m;
    int err = mask_of(sigs, n, false, &m);
    if (err)
        return err;
    if (!in_runtime())
        return -EPERM;
    gort_mutex_lock(&mu);
    err = start_locked();
    struct reg *r = err ? NULL : find_locked(ch);
    if (!err && !r) {
        if (nregs == capregs) {
            int cap = capregs ? 2 * capregs : 8;
            struct reg *nr = gort__realloc(regs, (size_t)cap * sizeof *nr);
            if (nr) {
                regs = nr;
                capregs = cap;
            }
        }
        if (nregs < capregs) {
            r = &regs[nregs++];
            r->ch = ch;
            r->sigs = 0;
        } else {
            err = -ENOMEM;
        }
    }
    if (r) {
        uint64_t add = m & ~r->sigs;
        while (add) {
            int sig = __builtin_ctzll(add) + 1;
            add &= add - 1;
            if (refs[sig] == 0 && (err = take_locked(sig)) != 0)
                break;
            refs[sig]++;
            r->sigs |= sigbit(sig);
        }
        if (r->sigs == 0)
            remove_locked(r);
    }
    gort_mutex_unlock(&mu);
    return err;
}

int gort_signal_stop(gort_chan *ch)
{
    GORT_SAN_SCOPE();
    if (!ch)
        return -EINVAL;
    if (!in_runtime())
        return -EPERM;
    gort_mutex_lock(&mu);
    struct reg *r = find_locked(ch);
    if (r) {
        uint64_t s = r->sigs;
        while (s) {
            int sig = __builtin_ctzll(s) + 1;
            s &= s - 1;
            if (--refs[sig] == 0)
                release_locked(sig, false);
        }
        /* What arrived before is still ch's (Go's Stop): the handlers
         * that saw it wanted finish, their signals go out, ch included,
         * and only then does ch leave. */
        quiesce();
        deliver_locked();
        remove_locked(r);
    }
    gort_mutex_unlock(&mu);
    return 0;
}

/* Ignore (to_ignore) or reset the signals of mask m: no channel gets
 * them any more. */
static void cancel(uint64_t m, bool to_ignore)
{
    gort_mutex_lock(&mu);
    while (m) {
        int sig = __builtin_ctzll(m) + 1;
        m &= m - 1;
        for (int i = 0; i < nregs;) {
            if (regs[i].sigs & sigbit(sig)) {
                regs[i].sigs &= ~sigbit(sig);
                refs[sig]--;
                if (regs[i].sigs == 0) {
                    remove_locked(&regs[i]);
                    continue;
                }
            }
            i++;
        }
        if (to_ignore || (held & sigbit(sig)))
            release_locked(sig, to_ignore);
    }
    gort_mutex_unlock(&mu);
}

/* gort_signal_ignore (to_ignore) and gort_signal_reset. */
static int ignore_or_reset(const int *sigs, int n, bool to_ignore)
{
    uint64_t m;
    int err = mask_of(sigs, n, to_ignore, &m);
    if (err)
        return err;
    if (!in_runtime())
        return -EPERM;
    cancel(m, to_ignore);
    return 0;
}

int gort_signal_ignore(const int *sigs, int n)
{
    GORT_SAN_SCOPE();
    return ignore_or_reset(sigs, n, true);
}

int gort_signal_reset(const int *sigs, int n)
{
    GORT_SAN_SCOPE();
    return ignore_or_reset(sigs, n, false);
}

int gort_signal_ignored(int sig)
{
    if (sig < 1 || sig > MAXSIG || sig > SIGRTMAX)
        return -EINVAL;
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) != 0)
        return -errno;
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN;
}

/* ---------------------------------------------------------------------------
 * Teardown.
 * ------------------------------------------------------------------------- */

void gort__signal_fini(void)
{
    /* No goroutine runs: mu is not needed (and may have been left held
     * by a goroutine discarded with the runtime). */
    uint64_t h = held;
    while (h) {
        int sig = __builtin_ctzll(h) + 1;
        h &= h - 1;
        if (ours_locked(sig))
            sigaction(sig, &saved[sig], NULL);
    }
    held = ign = 0;
    store_seqcst(&wanted, 0);
    quiesce();
    int fd = load_relaxed(&sigfd);
    store_rel(&sigfd, -1);
    if (started)
        gort__libc.close(fd);
    started = false;
    store_relaxed(&gort__san_sigwatch, 0);
    store_relaxed(&pending, 0);
    store_relaxed(&woken, 0);
    gort__free(regs);
    regs = NULL;
    nregs = capregs = 0;
    memset(refs, 0, sizeof refs);
    memset(&mu, 0, sizeof mu);
}
