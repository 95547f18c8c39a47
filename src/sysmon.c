/* SPDX-License-Identifier: MIT */
/*
 * sysmon.c - the system monitor: a thread without a P that watches the
 * scheduler.  Mirrors sysmon and retake (proc.go).
 *
 * It sleeps 20 us between rounds; after 50 rounds in which it had nothing
 * to do it doubles the sleep, up to 10 ms.  A round of 10 ms that finds
 * every P idle is followed by one of 20 ms, and each further such round
 * in a row by one twice as long, up to GORTDEBUG=sysmonidle (160 ms):
 * there is no G to watch at that moment, and a server at partial load,
 * whose Ps are idle nearly always, would otherwise pay a timed wake-up
 * (costly in a virtual machine: docs/design.md) a hundred times a second.
 * The idle rounds stay at 20 ms for a second after a round retook a P or
 * asked a G to yield, and while a hooked park waits for its re-arm.  So a
 * G that takes a P just after such a round is asked to yield within
 * sysmonidle + 10 ms in a program whose Gs have not run long lately, and
 * within 30 ms in one whose Gs have (within 20 when the round found a P
 * running).  When nothing has been scheduled for 40 ms of rounds at their
 * longest (or the world is stopped) it sleeps until acquirep or
 * startTheWorld wakes it, unless schedtrace output is due.
 * A syscall entered while work waits on its P puts it back on 20 us
 * rounds at once (gort__sysmon_kick).  Its thread has a timer slack of
 * 1 ns: with the default 50 us, a 20 us sleep lasts several times as
 * long, and every syscall hand-off would wait that long.
 * Each round it
 *   - looks at the thread of a G that has held its P for 10 ms (the same
 *     schedtick for forcePreemptNS), or for 1 ms since its P last looked
 *     for due timers when one came due after that look, through /proc
 *     (rawsys.c): asleep in a system call nobody wrapped, its P is handed
 *     off; running the program's code, the G is asked to yield at its
 *     next runtime call and the thread gets the preemption signal
 *     (preempt.c);
 *   - retakes a P left in a syscall for a whole round when work waits, or
 *     for 10 ms regardless, and hands it to another M (handoffp);
 *   - signals threads put into a syscall that way that have not come
 *     back to gort for 10 ms, once they run the program's code again;
 *   - once a second, returns the pages of stacks long idle in the pool to
 *     the OS (stack.c);
 *   - once a second, re-reads the CPUs available (affinity mask, cgroup
 *     CPU limit: env.c) unless the program chose GOMAXPROCS, and when they
 *     call for another GOMAXPROCS asks a running goroutine to apply it
 *     (Go 1.25's sysmonUpdateGOMAXPROCS); it holds no lock while it
 *     reads the files;
 *   - prints the schedtrace line when GORTDEBUG=schedtrace=MS is due.
 *
 * Invariants:
 *   - sysmon holds no P and never runs Gs; its M is counted in
 *     sched.nmsys so that deadlock detection ignores it, except while
 *     it holds goroutines its network poll readied (then it counts as
 *     running until they are queued).
 *   - sched.sysmonwait is set only by sysmon and cleared by exactly one
 *     exchange (sysmon's or a waker's); the one who clears it owns the
 *     matching note wake-up.
 */
#include "atomic.h"
#include "defs.h"
#include "env.h"
#include "fatal.h"
#include "lock_futex.h"
#include "mthread.h"
#include "netpoll.h"
#include "netpoll_epoll.h"
#include "os_linux.h"
#include "preempt.h"
#include "proc.h"
#include "rawsys.h"
#include "runq.h"
#include "san.h"
#include "sched.h"
#include "stack.h"
#include "sysmon.h"
#include "tracehooks.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>

static pthread_t sysmon_thread;
static bool sysmon_running;
static uint32_t sysmon_stopping; /* atomic: gort_main is shutting down */
/* sysmon sleeps on this futex word between rounds; a bump ends the sleep
 * (to stop it, or to shorten a long sleep). */
static uint32_t sysmon_gen;
/* atomic: 1 while sysmon sleeps longer than its shortest round */
static uint32_t sysmon_long;

void gort__sysmon_kick(void)
{
    /* Relaxed first look: most syscalls find sysmon on short rounds.  The
     * exchange lets one kicker pay for the wake-up. */
    if (load_relaxed(&sysmon_long) && xchg_acqrel(&sysmon_long, 0)) {
        xadd_acqrel(&sysmon_gen, 1);
        gort__futexwake(&sysmon_gen, 1);
    }
}

void gort__sysmon_wake(void)
{
    /* Whoever turns sysmonwait from 1 to 0 owns the wake-up.  Seq-cst
     * load: the waker's side of deep_sleep's handshake. */
    if (load_seqcst(&gort__sched.sysmonwait) &&
        xchg_acqrel(&gort__sched.sysmonwait, 0))
        gort__notewakeup(&gort__sched.sysmonnote);
}

/* Sleep until a P becomes busy, or for timeout ns (the stack scavenger's
 * next batch is due then), or for good (timeout < 0: nothing to do until
 * a P is taken).
 *
 * Dekker handshake with the wakers, all sequentially consistent: we
 * publish sysmonwait, then read npidle and sysmon_stopping; a waker
 * changes npidle (acquirep's pidleget) or sysmon_stopping, then reads
 * sysmonwait.  Either we see its change and do not sleep, or it sees
 * sysmonwait and wakes us. */
static void deep_sleep(int64_t timeout)
{
    struct m *self = gort__getm_raw();
    xchg_seqcst(&gort__sched.sysmonwait, 1);
    if (load_seqcst(&sysmon_stopping) ||
        (load_seqcst(&gort__sched.npidle) != load_relaxed(&gort__gomaxprocs) &&
         !load_seqcst(&gort__sched.gcwaiting))) {
        if (xchg_acqrel(&gort__sched.sysmonwait, 0))
            return;
        /* A waker cleared it and will wake the note: take that wake-up. */
    } else if (timeout >= 0 &&
               !gort__m_notetsleep(self, &gort__sched.sysmonnote, timeout) &&
               xchg_acqrel(&gort__sched.sysmonwait, 0)) {
        return; /* timed out and nobody is waking us */
    }
    gort__m_notesleep(self, &gort__sched.sysmonnote);
    gort__noteclear(&gort__sched.sysmonnote);
}

/* Ask the G running on pp to yield.  Reads are racy: G and M structures
 * are never freed while the runtime runs, so a stale pointer only makes
 * us flag a G that already moved on (it clears the flag when it next
 * runs).  Mirrors preemptone (proc.go). */
void gort__preempt_request(struct p *pp)
{
    /* Acquire: pairs with acquirep's store-release of pp->m. */
    struct m *mp = load_acq(&pp->m);
    struct g *gp = mp ? load_acq(&mp->curg) : NULL; /* pairs: execute_prep */
    /* On the P too: if gp parks before it looks, the G that inherits its
     * time slice through runnext must yield instead (Go's pp.preempt). */
    store_relaxed(&pp->preempt, 1);
    gort__trace_preempt_request(pp);
    if (gp) {
        store_relaxed(&gp->preempt, 1);
        gort__preempt_signal(mp);
    }
}

/* A GOMAXPROCS change waits for a goroutine to apply it (env.c,
 * gort__maxprocs_poll): every P asks each G it starts, on a new slice or
 * the inherited one, to look at its first preemption check
 * (gort__preempt_yield), and the G running on the first running P is
 * asked now, without a signal.  Asked
 * again every round until one has applied it, which clears the Ps'
 * flags. */
static void maxprocs_ask(void)
{
    bool asked = false;
    gort__lock(&gort__allplock);
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++) {
        struct p *pp = gort__allp[i];
        store_relaxed(&pp->maxprocs_ask, 1);
        /* And the G that inherits a slice (runnext: a timer's or a
         * channel's wake-up), which takes its request from the P. */
        store_relaxed(&pp->preempt, 1);
        if (asked)
            continue;
        /* Acquire: pairs with acquirep's store-release of pp->m. */
        struct m *mp = load_acq(&pp->m);
        struct g *gp = mp ? load_acq(&mp->curg) : NULL;
        if (gort__pstatus(load_acq(&pp->status)) == P_RUNNING && gp) {
            store_relaxed(&gp->preempt, 1);
            asked = true;
        }
    }
    gort__unlock(&gort__allplock);
}

/* How soon sysmon looks again at a P whose thread's inspection did not
 * decide: a sleep not yet long enough, or another inspector at work.
 * Each look costs a few microseconds of system calls. */
#define RELOOK_NS (100 * 1000)

/* pp's G has run for 10 ms.  If its thread sleeps in a system call
 * nobody wrapped, hand the P off once it has slept long enough; else ask
 * the G to yield and signal it. */
static void held_too_long(struct p *pp, int64_t now)
{
    enum rawsys_result r =
        gort__rawsys_inspect(pp, now, GORT_RAWSYS_SLEPT_NS);
    int64_t again = GORT_FORCE_PREEMPT_NS; /* ask again in another 10 ms */
    switch (r) {
    case RAWSYS_HANDEDOFF:
        return;
    case RAWSYS_BLOCKED:
    case RAWSYS_BUSY:
        again = RELOOK_NS;
        break;
    default:
        break;
    }
    if (r != RAWSYS_BLOCKED)
        gort__preempt_request(pp);
    store_relaxed(&pp->sysmon_schedwhen, now - GORT_FORCE_PREEMPT_NS + again);
}

/* A G running on a canary-guarded stack (stack.c) is checked every round,
 * so that an overflow that does not fault is reported within a round even
 * if the G never switches.  Racy reads of another thread's G: the status
 * and curg checked around the read of lo make sure the stack is the
 * running G's.  lo is read once and the canary read there: the G may exit
 * and release its stack (lo zeroed) at any moment, while the memory stays
 * mapped until shutdown, so a stale lo reads a harmless word. */
GORT_NO_TSAN GORT_NOINLINE static void check_running_canary(struct p *pp)
{
    struct m *mp = load_acq(&pp->m);
    struct g *gp = mp ? load_acq(&mp->curg) : NULL;
    if (!gp || gp->stack.guard != STACK_GUARD_CANARY)
        return;
    /* Relaxed: one read the compiler may not repeat; the checks around
     * it give the ordering. */
    uintptr_t lo = load_relaxed(&gp->stack.lo);
    if (!lo || gort__readgstatus(gp) != G_RUNNING ||
        load_acq(&mp->curg) != gp || gort__stack_canary_ok(lo))
        return;
    /* Still the running G on that stack after the read: it overflowed. */
    if (gp->stack.lo == lo && gort__readgstatus(gp) == G_RUNNING &&
        load_acq(&mp->curg) == gp)
        gort__stack_overflow_running(gp);
}

/* One pass over the Ps.  Returns how many it retook or asked to yield.
 * Mirrors retake (proc.go). */
static int retake(int64_t now, int64_t *wake)
{
    struct m *self = gort__getm_raw(); /* sysmon's M: counts hand-offs */
    struct p *handoff[64], *held[64];
    int nhandoff = 0, nheld = 0, n_acted = 0;
    gort__lock(&gort__allplock);
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++) {
        struct p *pp = gort__allp[i];
        /* Acquire: pairs with entersyscall's seq-cst store of the word. */
        uint32_t w = load_acq(&pp->status);
        if (gort__pstatus(w) == P_SYSCALL) {
            uint32_t t = load_relaxed(&pp->syscalltick);
            if (pp->sysmon_syscalltick != t) {
                pp->sysmon_syscalltick = t;
                pp->sysmon_syscallwhen = now;
                /* New to us, but if work waited on the P when it began and
                 * it has lasted a round already, hand it off now. */
                int64_t began = load_relaxed(&pp->syscallwhen);
                if (began == 0 ||
                    began + GORT_SYSMON_MIN_US * 1000 > now ||
                    gort__runqempty(pp))
                    continue;
            }
            /* Nothing waits for it and some M is free to take new work:
             * let the syscall keep its P, up to 10 ms. */
            if (gort__runqempty(pp) &&
                load_relaxed(&gort__sched.nmspinning) +
                        load_relaxed(&gort__sched.npidle) > 0 &&
                pp->sysmon_syscallwhen + GORT_FORCE_PREEMPT_NS > now)
                continue;
            if (nhandoff == 64)
                continue; /* next round */
            /* Count sysmon as a running M until the P is handed over
             * (Go's incidlelocked(-1) around the CAS): the M we take it
             * from may leave its syscall, find no P and go idle before
             * handoffp starts an M, and checkdead must not see every M
             * idle with a G queued.  Seq-cst: before the CAS, which the
             * M's own CAS must follow to fail. */
            xadd_seqcst(&gort__sched.nretaking, 1);
            /* Acq-rel: the winner of this CAS owns the P (against
             * exitsyscall's and stop-the-world's CAS). */
            if (cas_acqrel(&pp->status, w, P_IDLE)) {
                gort__trace_procsteal(pp, TRACE_STEAL_SYSMON);
                handoff[nhandoff++] = pp;
                gort__stat_add(&self->nhandoffs, 1);
                n_acted++;
            } else {
                xadd_seqcst(&gort__sched.nretaking, -1);
            }
            continue;
        }
        if (w != P_RUNNING)
            continue;
        check_running_canary(pp);
        uint32_t t = load_relaxed(&pp->schedtick);
        /* schedwhen 0: sysmon has not looked at this P yet (a new P, or
         * a G still on its first slice of tick 0): start the clock. */
        int64_t when = load_relaxed(&pp->sysmon_schedwhen);
        /* A timer of this P that came due after the P last looked for
         * due timers: only a schedule of this P runs it, so the G is
         * asked to yield now, not at the end of its 10 ms (a timer-woken
         * G then runs from runnext: time.c, flush_woken).  Not a G that
         * has run less than GORT_TIMER_PREEMPT_RUN_NS since that look (it
         * began after it): it will yield soon, and on a P overloaded with
         * timer-woken Gs each would be preempted in turn, to the global
         * queue's tail.  Once per timer: the signal takes up to a kernel
         * tick to come (preempt.c). */
        int64_t tw = load_relaxed(&pp->timers.minwhen);
        int64_t checked = load_relaxed(&pp->timers.checked);
        bool timer_due = tw != 0 && tw <= now && checked < tw &&
                         checked + GORT_TIMER_PREEMPT_RUN_NS <= now &&
                         pp->sysmon_duewhen != tw;
        if (pp->sysmon_schedtick != t || when == 0) {
            pp->sysmon_schedtick = t;
            store_relaxed(&pp->sysmon_schedwhen, now);
            when = now;
        }
        if ((when + GORT_FORCE_PREEMPT_NS <= now || timer_due) &&
            nheld < 64) {
            if (timer_due)
                pp->sysmon_duewhen = tw;
            held[nheld++] = pp;
            n_acted++;
            continue;
        }
        /* Wake for this P's earliest timer (or, when it is due, for the
         * moment the G has run long enough to be asked to yield for it):
         * only a schedule of this P runs it.  Not for the end of its time
         * slice: the rounds find that as Go's do, up to a round late, and
         * a hog preempted on the dot loses its turn sooner to no one's
         * gain (docs/design.md, "sysmon's deep sleep"). */
        int64_t tnext = tw > now ? tw
                        : checked < tw ? checked + GORT_TIMER_PREEMPT_RUN_NS
                                       : 0;
        if (tw != 0 && tnext > now && (*wake == 0 || tnext < *wake))
            *wake = tnext;
    }
    gort__unlock(&gort__allplock);
    /* handoffp takes sched.lock, which ranks above allplock. */
    for (int i = 0; i < nhandoff; i++) {
        gort__handoffp(handoff[i]);
        xadd_seqcst(&gort__sched.nretaking, -1);
    }
    /* Ps are never freed, and the inspection checks that the P still has
     * the M and G it looks at. */
    for (int i = 0; i < nheld; i++)
        held_too_long(held[i], now);
    return n_acted;
}

/* Threads put into a syscall while blocked in the kernel (rawsys.c, or
 * the preemption signal) that have not come back to gort for 10 ms:
 * signal them, so that a thread running the program's code again comes
 * back (where the signal comes by the thread's CPU-time timer, a thread
 * still asleep gets nothing: the timer fires only once it runs,
 * preempt.c).  Ms are never freed while the runtime runs, so walking allm
 * racily is safe. */
static void resignal_marked(int64_t now)
{
    for (struct m *mp = load_acq(&gort__allm); mp; mp = mp->alllink) {
        if (load_relaxed(&mp->insyscall) != 2)
            continue;
        int64_t when = load_relaxed(&mp->syscallwhen);
        if (when + GORT_FORCE_PREEMPT_NS <= now) {
            store_relaxed(&mp->syscallwhen, now);
            gort__preempt_signal(mp);
        }
    }
}

/* A sum of every P's scheduling and syscall ticks and of the goroutines
 * the poller readied: it moves whenever any goroutine was scheduled,
 * entered a syscall or was woken by its descriptor since the last look
 * (a G readied into runnext runs in the slice it inherits, without a
 * tick). */
static uint64_t activity(void)
{
    uint64_t sum = gort__netpoll_wakeups();
    gort__lock(&gort__allplock);
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++)
        sum += load_relaxed(&gort__allp[i]->schedtick) +
               load_relaxed(&gort__allp[i]->syscalltick);
    gort__unlock(&gort__allplock);
    return sum;
}

/* sysmon deep-sleeps only after this long at rounds at their longest in
 * which nothing was scheduled at all.  A server at partial load has every
 * P idle between requests most of the time; deep-sleeping there would
 * have every request's P wake sysmon (a futex wake and a thread's wake-up
 * each). */
#define QUIET_NS (40 * 1000 * 1000)

/* How often gort-hook's parked goroutines are checked for a registration
 * gone stale (netpoll.h, gort__fd_check_hooked): a park is re-armed after
 * 10-40 ms, or up to 180 when it began during a long idle round (the
 * first check then comes up to 160 ms later, the next within 20). */
#define HOOK_CHECK_NS (10 * 1000 * 1000)

/* ---------------------------------------------------------------------------
 * The crowd meter.
 *
 * gort runs GOMAXPROCS Ps as if each had a CPU to itself.  When other
 * processes take the CPUs (a load generator beside a server, other
 * services on the host), a second P running a second event loop adds a
 * runnable thread where every CPU is taken: the kernel time-slices it
 * against ours and theirs, each wake-up of an M waits for a CPU, and the
 * work is done in smaller, dearer batches.  Whether one loop then gets
 * more done than two depends on the server: one that needs less than a
 * CPU does more with one, one that needs more than a CPU does less.  So
 * the meter does not guess; it tries.
 *
 * Time is cut into windows of at least GORT_CROWD_WINDOW_NS with at
 * least GORT_CROWD_MIN_WAKEUPS descriptor wake-ups (goroutines the poller
 * readied, all Ms); one that has not had them after GORT_CROWD_MAX_NS is
 * a light load, and everything is forgotten.  A window run with two
 * loops (the default) reads the time this process's Ms spent runnable
 * but waiting for a CPU (schedstat's second field): at or over
 * GORT_CROWD_WAIT_PERMILLE thousandths of the window, trials start.  A
 * trial is a window run in the mode not favored (one loop: sched.crowded
 * set, see proc.c, crowded_short and poll_nap_ok); the first window
 * after each change of mode settles and is not measured.  Each trial's
 * wake-ups a second are compared with the favored mode's windows on
 * either side of it (bracketing cancels the drift of a load that
 * changes, larger on a shared machine than the difference sought), and
 * a moving average of those ratios (a quarter weight a trial) decides:
 * the other mode is favored once it does a thirty-second more, after at
 * least GORT_CROWD_TRIALS trials since the last change.  Trials come one
 * window in GORT_CROWD_TRIAL_EVERY; each that the favored mode wins
 * doubles the gap, up to GORT_CROWD_TRIAL_MAX, and each that it loses
 * halves it.  With two loops favored, trials run only while their
 * windows wait for CPUs.
 *
 * It measures only while it can matter: cpucrowd=1 (the default),
 * 2 Ps or more, goroutines waiting on descriptors, and a round that
 * finds a P running (a reading opens a /proc file per M, which an idle
 * server should not pay; a window with idle rounds in it just lasts
 * longer).  cpucrowd=2 keeps one loop always, cpucrowd=0 never.
 * ------------------------------------------------------------------------- */

static struct gort__crowd crowd; /* sysmon's */
static int64_t crowd_began;      /* the window's start; 0: none */
static uint64_t crowd_wake0;     /* the descriptor wake-ups then */

/* What the Ms waited for a CPU since the last reading, ns. */
static int64_t crowd_read(void)
{
    int64_t sum = 0;
    int n = 0;
    for (struct m *mp = load_acq(&gort__allm); mp && n < 64;
         mp = mp->alllink) {
        /* Acquire: the M's thread stores its id once, as it starts, with
         * a release after its foreign flag. */
        int32_t tid = load_acq(&mp->procid);
        if (tid <= 0 || mp->foreign)
            continue;
        n++;
        int64_t w = gort__thread_runq_wait(tid);
        if (w < 0)
            continue;
        if (mp->runqwait != 0 && w > mp->runqwait)
            sum += w - mp->runqwait;
        mp->runqwait = w;
    }
    return sum;
}

void gort__crowd_step(struct gort__crowd *c, int64_t wait, int64_t window,
                      uint64_t wakeups)
{
    bool one = c->one;
    if (window <= 0) {
        *c = (struct gort__crowd){0};
        return;
    }
    if (c->settle) {
        c->settle = false; /* the mode's first window: not measured */
        return;
    }
    int64_t rate = (int64_t)(wakeups * 1000000000u / (uint64_t)window);
    if (one != c->favor) {
        /* A trial window: compared once the favored mode is back. */
        c->tried = rate;
        c->one = c->favor;
        c->settle = true;
        return;
    }
    if (!one)
        c->crowded =
            wait * 1000 >= (int64_t)GORT_CROWD_WAIT_PERMILLE * window;
    uint32_t every = c->every ? c->every : GORT_CROWD_TRIAL_EVERY;
    if (c->tried != 0 && c->last != 0) {
        /* The trial against the favored windows on either side of it. */
        int64_t ratio = c->tried * 2048 / (c->last + rate);
        c->gain = c->gain ? c->gain + (ratio - c->gain) / 4 : ratio;
        /* Trials back off while the favored mode wins them. */
        every = ratio < 1024 ? 2 * every : every / 2;
        if (every > GORT_CROWD_TRIAL_MAX)
            every = GORT_CROWD_TRIAL_MAX;
        if (every < GORT_CROWD_TRIAL_EVERY)
            every = GORT_CROWD_TRIAL_EVERY;
        if (++c->tries >= GORT_CROWD_TRIALS && 32 * c->gain >= 33 * 1024) {
            /* The other mode does a thirty-second more: it is favored,
             * and the one it replaces must do as much to come back. */
            c->favor = !c->favor;
            c->gain = 1024 * 1024 / c->gain;
            every = GORT_CROWD_TRIAL_EVERY;
            c->n = 0;
            c->tries = 0;
        }
        c->tried = 0;
    }
    c->every = every;
    c->last = rate;
    if (c->favor != one) {
        c->one = c->favor;
        c->last = 0;
    } else if ((c->favor || c->crowded) && (c->gain == 0 || ++c->n >= every)) {
        /* The first trial at once, then one window in `every`; with two
         * loops favored, only while they wait for CPUs. */
        c->n = 0;
        c->one = !c->favor;
    }
    c->settle = c->one != one;
}

bool gort__crowd_on(const struct gort__crowd *c)
{
    return c->one;
}

/* Whether the meter is at work: its windows wait for CPUs, or it runs or
 * favors one loop.  Its trials compare windows a sysmon round or so
 * long, so the rounds stay short meanwhile (sysmon's idle rounds would
 * stretch a window over many of the load's changes). */
static bool crowd_busy(void)
{
    return crowd.crowded || crowd.one || crowd.favor;
}

/* Start the meter over, with no window open; crowded: the hint the Ms
 * get meanwhile (GORTDEBUG=cpucrowd=2 keeps one loop). */
static void crowd_reset(bool crowded)
{
    crowd = (struct gort__crowd){0};
    crowd_began = 0;
    /* Relaxed: a hint, read where Ms choose how to find work. */
    store_relaxed(&gort__sched.crowded, crowded ? 1u : 0u);
}

static void crowd_meter(int64_t now)
{
    /* Relaxed: a knob tests change while sysmon runs. */
    int32_t mode = load_relaxed(&gort__debug.cpucrowd);
    int32_t procs = load_relaxed(&gort__gomaxprocs);
    if (mode != 1 || procs < 2 || gort__netpoll_waiters() == 0 ||
        gort__sim_on()) {
        crowd_reset(mode == 2);
        return;
    }
    if (load_relaxed(&gort__sched.npidle) >= procs) {
        /* Every P idle: the window goes on.  But one that has gone
         * GORT_CROWD_MAX_NS without its wake-ups is a light load here
         * too (as below): a process idle at nearly every round would
         * otherwise never close it, and crowd_busy would keep its
         * rounds short. */
        if (crowd_began != 0 && now - crowd_began >= GORT_CROWD_MAX_NS &&
            gort__netpoll_wakeups() - crowd_wake0 < GORT_CROWD_MIN_WAKEUPS)
            crowd_reset(false);
        return;
    }
    if (crowd_began == 0) {
        crowd_read(); /* the Ms' waits so far: the window's start */
        crowd_began = now;
        crowd_wake0 = gort__netpoll_wakeups();
        return;
    }
    int64_t window = now - crowd_began;
    if (window < GORT_CROWD_WINDOW_NS)
        return;
    uint64_t wakeups = gort__netpoll_wakeups();
    uint64_t dw = wakeups - crowd_wake0;
    if (dw < GORT_CROWD_MIN_WAKEUPS && window < GORT_CROWD_MAX_NS)
        return;
    if (dw < GORT_CROWD_MIN_WAKEUPS) {
        crowd_read();
        crowd = (struct gort__crowd){0}; /* a light load */
    } else {
        gort__crowd_step(&crowd, crowd_read(), window, dw);
    }
    crowd_began = now;
    crowd_wake0 = wakeups;
    /* Relaxed: as in crowd_reset. */
    store_relaxed(&gort__sched.crowded, gort__crowd_on(&crowd) ? 1u : 0u);
}

static void *sysmon(void *arg)
{
    struct m *mp = arg;
    gort__setm(mp);
    mp->procid = gort__gettid();
    /* Named for top -H, /proc and debuggers (best effort). */
    pthread_setname_np(pthread_self(), "gort-sysmon");
    if (GORT_UNLIKELY(gort__san))
        gort__san_thread_start(NULL, 1); /* runs only gort's code */
    /* Precise short sleeps (see the file comment).  Best effort. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    int64_t delay_us = GORT_SYSMON_MIN_US, lasttrace = 0, lastscavenge = 0;
    int64_t lastmaxprocs = gort_nanotime(), lastcheck = 0;
    uint32_t idle = 0;
    uint64_t lastactivity = 0;
    int64_t lastround = 0, quiet_since = 0; /* 0: not quiet */
    /* The next round after one that finds every P idle, and when a round
     * last retook a P or asked a G to yield (0: never). */
    int64_t allidle_us = GORT_SYSMON_ALLIDLE_US, lastacted = 0;
    bool hookwait = false; /* a hooked park waits for its re-arm */
    int64_t wake = 0; /* the next P deadline retake saw (0: none) */
    bool quick = false; /* one short round, then the rounds as they were */
    bool sawidle = false; /* the last round found every P idle */
    for (;;) {
        if (idle == 0)
            delay_us = GORT_SYSMON_MIN_US;
        else if (idle > GORT_SYSMON_IDLE_ROUNDS)
            delay_us *= 2;
        if (delay_us > GORT_SYSMON_MAX_US)
            delay_us = GORT_SYSMON_MAX_US;
        int64_t sleep_us = quick ? GORT_SYSMON_MIN_US : delay_us;
        if (sawidle && !quick && delay_us >= GORT_SYSMON_MAX_US &&
            !crowd_busy()) {
            /* No G to watch now: each such round in a row sleeps twice
             * as long as the last, up to sysmonidle, unless the rounds
             * have had to act lately or the crowd meter is at work
             * ("sysmon's idle rounds" in docs/design.md). */
            sleep_us = allidle_us;
            int64_t most =
                (int64_t)load_relaxed(&gort__debug.sysmonidle) * 1000;
            allidle_us = 2 * allidle_us < most ? 2 * allidle_us : most;
            if (allidle_us < GORT_SYSMON_ALLIDLE_US)
                allidle_us = GORT_SYSMON_ALLIDLE_US;
        }
        quick = false;
        /* Not past a due schedtrace line. */
        if (gort__debug.schedtrace > 0) {
            int64_t until =
                (lasttrace + (int64_t)gort__debug.schedtrace * 1000000 -
                 gort_nanotime()) / 1000;
            if (until < sleep_us)
                sleep_us = until < GORT_SYSMON_MIN_US ? GORT_SYSMON_MIN_US
                                                       : until;
        }
        /* Not past a running P's timer: a backed-off sysmon would
         * otherwise let it wait up to a whole round. */
        if (wake != 0) {
            int64_t until = (wake - gort_nanotime()) / 1000 + 1;
            if (until < sleep_us)
                sleep_us = until < GORT_SYSMON_MIN_US ? GORT_SYSMON_MIN_US
                                                       : until;
            wake = 0;
        }
        uint32_t gen = load_acq(&sysmon_gen);
        bool longsleep = sleep_us > GORT_SYSMON_MIN_US;
        if (longsleep)
            store_seqcst(&sysmon_long, 1);
        if (!load_seqcst(&sysmon_stopping))
            gort__futexsleep(&sysmon_gen, gen, sleep_us * 1000);
        if (longsleep && !xchg_acqrel(&sysmon_long, 0))
            idle = 0; /* kicked: short rounds again */
        if (load_acq(&sysmon_stopping))
            break;
        int64_t now = gort_nanotime();
        /* Relaxed: parking Gs read it as an approximate clock. */
        store_relaxed(&gort__sched.coarsenow, now);
        /* Every P idle: sleep until one is taken, but only once the
         * quiet has lasted (QUIET_ROUNDS rounds at their longest without
         * a single schedule).  A server on few Ps is idle for a moment
         * between every batch of requests; a deep sleep there would cost
         * a wake-up (acquirep) per batch, and the woken sysmon preempts
         * the thread that just took the P.  A stopped world sleeps at
         * once (startTheWorld wakes it). */
        uint64_t act = activity();
        bool allidle = load_relaxed(&gort__sched.npidle) ==
                       load_relaxed(&gort__gomaxprocs);
        sawidle = allidle;
        if (delay_us >= GORT_SYSMON_MAX_US && allidle && act == lastactivity) {
            if (quiet_since == 0)
                quiet_since = lastround; /* nothing scheduled since */
        } else {
            quiet_since = 0;
        }
        lastactivity = act;
        lastround = now;
        if (gort__debug.schedtrace <= 0 &&
            (load_relaxed(&gort__sched.gcwaiting) ||
             (quiet_since != 0 && now - quiet_since >= QUIET_NS))) {
            /* Trim what is due now; sleep until the next is due, or for
             * good: an idle process has no thread waking up. */
            int64_t due;
            lastscavenge = now;
            gort__stack_scavenge(now, &due);
            /* Every parked G has been parked for the quiet rounds: check
             * gort-hook's now, as no round comes before one runs again. */
            gort__fd_check_hooked(true);
            hookwait = false;
            deep_sleep(due ? (due > now ? due - now : 0) : -1);
            now = gort_nanotime();
            store_relaxed(&gort__sched.coarsenow, now);
            if (due && due <= now) {
                lastscavenge = now;
                gort__stack_scavenge(now, &due);
            }
            /* The rounds stay as long as they were: a busy P is watched
             * every 10 ms, which is what preemption needs, and a syscall
             * with work waiting kicks sysmon back to short rounds
             * (gort__sysmon_kick).  Restarting at 20 us here would wake
             * sysmon ~100 times for every deep sleep.  But the first
             * round comes at once, so that the P taken now is first seen
             * now: a G that keeps it is then asked to yield after 10 ms,
             * not after up to 20. */
            quick = true;
            quiet_since = 0;
            lastround = now;
            if (load_relaxed(&sysmon_stopping))
                break;
            continue;
        }
        if (retake(now, &wake) > 0) {
            idle = 0;
            lastacted = now;
        } else {
            idle++;
        }
        resignal_marked(now);
        crowd_meter(now);
        /* Poll the network if nobody has for 10 ms (Go's sysmon). */
        int64_t last = load_seqcst(&gort__sched.lastpoll);
        if (gort__netpoll_waiters() > 0 && last != 0 &&
            last + 10 * 1000 * 1000 < now &&
            cas_acqrel(&gort__sched.lastpoll, last, now)) {
            /* Count sysmon as a running M while it holds what it polled
             * (Go's incidlelocked(-1) around injectglist): from the moment
             * netpoll takes a G from its descriptor (runnable, no longer a
             * poll waiter) until it is queued and an M started for it, the
             * last M may find no work, stop and run checkdead, which must
             * not see every M idle with a G in our hands.  Under
             * sched.lock, as checkdead reads the count. */
            gort__lock(&gort__sched.lock);
            gort__sched.nmsys--;
            gort__unlock(&gort__sched.lock);
            struct gqueue q;
            int32_t n = gort__netpoll(0, &q);
            if (n > 0) {
                gort__injectglist(&q, n);
                idle = 0;
            }
            gort__lock(&gort__sched.lock);
            gort__sched.nmsys++;
            gort__unlock(&gort__sched.lock);
        }
        if (lastcheck + HOOK_CHECK_NS <= now) {
            lastcheck = now;
            hookwait = gort__fd_check_hooked(false);
        }
        /* Idle rounds lengthen only while nothing called for a closer
         * watch: no P retaken nor G asked to yield for a while (a program
         * with long-running Gs keeps its 30 ms bound on the first one
         * after an idle spell), no hooked park waiting for its re-arm,
         * the crowd meter at rest. */
        if (hookwait || crowd_busy() ||
            (lastacted != 0 && now - lastacted < GORT_SYSMON_CALM_NS))
            allidle_us = GORT_SYSMON_ALLIDLE_US;
        if (lastscavenge + 1000000000 <= now) {
            int64_t due;
            lastscavenge = now;
            gort__stack_scavenge(now, &due);
        }
        if (lastmaxprocs + 1000000000 <= now) {
            lastmaxprocs = now;
            gort__maxprocs_poll();
        }
        /* Relaxed: written once a change; a late sighting waits a round. */
        if (GORT_UNLIKELY(load_relaxed(&gort__maxprocs_want) > 0))
            maxprocs_ask();
        if (gort__debug.schedtrace > 0 &&
            lasttrace + (int64_t)gort__debug.schedtrace * 1000000 <= now) {
            lasttrace = now;
            gort__schedtrace(gort__debug.scheddetail > 0);
        }
    }
    gort__setm(NULL);
    if (GORT_UNLIKELY(gort__san))
        gort__san_thread_end(1);
    return NULL;
}

int gort__sysmon_start(void)
{
    struct m *mp = gort__allocm_sys();
    if (!mp)
        return -ENOMEM;
    store_relaxed(&sysmon_stopping, 0);
    int err = gort__newosproc(mp, sysmon);
    if (err)
        return err;
    sysmon_thread = mp->thread;
    mp->thread = 0; /* joined here, not with the other Ms */
    sysmon_running = true;
    return 0;
}

void gort__sysmon_stop(void)
{
    if (!sysmon_running)
        return;
    store_seqcst(&sysmon_stopping, 1); /* deep_sleep's handshake */
    xadd_acqrel(&sysmon_gen, 1);
    gort__futexwake(&sysmon_gen, 1);
    gort__sysmon_wake();
    pthread_join(sysmon_thread, NULL);
    sysmon_running = false;
}
