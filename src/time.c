/*
 * time.c - timers: per-P 4-ary heaps run by the scheduler.  Mirrors
 * time.go (the heap, check/run, wakeNetPoller) and sleep.go.
 *
 * Every P has a heap of its timers, ordered by when, with the earliest
 * time mirrored in ts->minwhen so that schedulers can see without a lock
 * whether anything is due.  A timer goes on the heap of the P that starts
 * it.  Due timers are run by:
 *   - the P's own M at every trip through the scheduler (findrunnable)
 *     and before a direct G-to-G hand-off (pick_fast, proc.c);
 *   - any M on its last steal pass (the P's M may be busy or idle);
 *   - the M that parks as the "poller" until the earliest timer of all
 *     Ps when it has nothing else to do (proc.c, findrunnable_drop).
 * Adding a timer earlier than what the poller sleeps for wakes it
 * (wakenetpoller), or, with no poller, wakes a P.  An internal timer moved
 * later keeps its heap key (a lower bound) and is re-sifted when the key
 * comes due: a heap key never exceeds its timer's when.
 *
 * A timer's function runs with its heap's lock held, on an M that holds
 * a P (so readying a G or starting one works), and must not block.
 *
 * Stop and reset from any goroutine, on any P: t->mu serialises them;
 * removal happens under the lock of the heap the timer is in (t->ts),
 * which is also held while its function runs, so a stop that returns has
 * either removed the timer or seen its function complete.
 *
 * Lock order: timer mu, then a P's timers lock, then a channel lock (the
 * function of a channel timer sends), then sched.lock.
 */
#include "chan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * The 4-ary heap (siftupTimer / siftdownTimer in time.go).  ts->lock held.
 * ------------------------------------------------------------------------- */

static struct p *current_p(const char *who);
static void timer_add(struct p *pp, struct gtimer *t);
static bool timer_remove(struct gtimer *t);

static inline void heap_set(struct timers *ts, uint32_t i, struct timerwhen tw)
{
    ts->heap[i] = tw;
    tw.t->idx = (int32_t)i;
}

static void siftup(struct timers *ts, uint32_t i)
{
    struct timerwhen tw = ts->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 4;
        if (tw.when >= ts->heap[p].when)
            break;
        heap_set(ts, i, ts->heap[p]);
        i = p;
    }
    heap_set(ts, i, tw);
}

static void siftdown(struct timers *ts, uint32_t i)
{
    uint32_t n = ts->len;
    struct timerwhen tw = ts->heap[i];
    for (;;) {
        uint32_t c = i * 4 + 1, c3 = c + 2;
        if (c >= n)
            break;
        int64_t w = ts->heap[c].when;
        if (c + 1 < n && ts->heap[c + 1].when < w) {
            w = ts->heap[c + 1].when;
            c++;
        }
        if (c3 < n) {
            int64_t w3 = ts->heap[c3].when;
            if (c3 + 1 < n && ts->heap[c3 + 1].when < w3) {
                w3 = ts->heap[c3 + 1].when;
                c3++;
            }
            if (w3 < w) {
                w = w3;
                c = c3;
            }
        }
        if (w >= tw.when)
            break;
        heap_set(ts, i, ts->heap[c]);
        i = c;
    }
    heap_set(ts, i, tw);
}

static void update_minwhen(struct timers *ts)
{
    /* Seq-cst: the adder's side of the handshake with the poller (see
     * wakenetpoller); it also releases the heap to readers that then
     * take the lock.  Readers outside the lock only use it as a hint. */
    store_seqcst(&ts->minwhen, ts->len ? ts->heap[0].when : 0);
}

static void heap_add(struct timers *ts, struct gtimer *t)
{
    if (ts->len == ts->cap) {
        uint32_t ncap = ts->cap ? 2 * ts->cap : 64;
        struct timerwhen *nh = gort__realloc(ts->heap, ncap * sizeof *nh);
        if (!nh)
            gort__throw("out of memory growing a timer heap to %u", ncap);
        ts->heap = nh;
        ts->cap = ncap;
    }
    uint32_t i = ts->len++;
    heap_set(ts, i, (struct timerwhen){t->when, t});
    siftup(ts, i);
    /* Relaxed: t->ts is read without ts->lock only to find which lock to
     * take; the reader re-checks it under that lock. */
    store_relaxed(&t->ts, ts);
    update_minwhen(ts);
}

static void heap_delete(struct timers *ts, uint32_t i)
{
    struct gtimer *t = ts->heap[i].t;
    uint32_t last = --ts->len;
    if (i != last) {
        heap_set(ts, i, ts->heap[last]);
        /* The moved timer may belong above i or below it. */
        siftup(ts, i);
        siftdown(ts, i);
    }
    t->idx = -1;
    update_minwhen(ts);
}

/* ---------------------------------------------------------------------------
 * Running due timers.
 * ------------------------------------------------------------------------- */

/* Run pp's due timers.  now == 0: read the clock if anything is pending.
 * Returns the earliest remaining when (0: none).  The caller's M holds a
 * P (not necessarily pp).  Mirrors timers.check. */
/* Queue the Gs that sleep timers woke.  The first (the earliest
 * deadline) goes to runnext, so that it runs when the G now on this P
 * yields, within a time slice of its timer, not behind the work queued
 * here (a G already in runnext moves to the ring's tail; sysmon asks the
 * running G to yield when a timer is due).  The rest go to
 * the timer-woken region at the head of the global queue, in deadline
 * order: ahead of Gs that have not started or that yielded, behind
 * sleepers woken earlier.  Go readies each into runnext instead; with
 * thousands of sleepers that starves the ones pushed out of the ring
 * (Go's p99 lateness on 10,000 sleepers is tens of milliseconds). */
static void flush_woken(struct m *mp)
{
    int32_t n = mp->nwoken;
    if (n == 0)
        return;
    struct gqueue q = mp->woken;
    mp->woken.head = mp->woken.tail = NULL;
    mp->nwoken = 0;
    mp->locks++;
    struct g *first = gort__gqueue_pop(&q);
    if (n > 1) {
        gort__lock_m(mp, &gort__sched.lock);
        gort__globrunqputwoken_locked(&q, n - 1);
        gort__unlock_m(mp, &gort__sched.lock);
    }
    gort__runqput(mp->p, first, true);
    /* It will run from runnext, inheriting the time slice: count its
     * schedule here, or a stream of wake-ups would stop the ticks and
     * with them the 61-tick turn of the global queue (relaxed: sysmon
     * reads it). */
    store_relaxed(&mp->p->schedtick, mp->p->schedtick + 1);
    gort__wakep();
    mp->locks--;
}

int64_t gort__timers_check(struct p *pp, int64_t now)
{
    struct timers *ts = &pp->timers;
    /* Relaxed: a stale value only delays the check to the next one (and
     * an added timer earlier than the poller's sleep wakes it). */
    int64_t next = load_relaxed(&ts->minwhen);
    if (next == 0)
        return 0;
    if (now == 0)
        now = gort_nanotime();
    /* Relaxed: sysmon's hint (retake: a timer due since has not run). */
    store_relaxed(&ts->checked, now);
    if (now < next)
        return next;
    gort__lock(&ts->lock);
    int32_t fired = 0;
    while (ts->len > 0 && ts->heap[0].when <= now) {
        struct gtimer *t = ts->heap[0].t;
        if (t->when > now) {
            /* Moved later in place (gort__gtimer_reset): take its new
             * place in the heap now that it is at the top. */
            ts->heap[0].when = t->when;
            siftdown(ts, 0);
            update_minwhen(ts);
            continue;
        }
        heap_delete(ts, 0);
        fired++;
        if (t->selfonly) {
            /* Its G may run and return (freeing t) as soon as f readies
             * it: forget it first.  Nobody stops such a timer. */
            store_relaxed(&t->ts, NULL);
            t->f(t, now);
        } else {
            t->f(t, now);
            /* Release, the last touch of t here: a stopper that loads
             * NULL with acquire (timer_remove) may free t at once. */
            store_rel(&t->ts, NULL);
        }
    }
    next = ts->len ? ts->heap[0].when : 0;
    gort__unlock(&ts->lock);
    gort__trace_timers(pp, fired);
    flush_woken(gort__getm());
    return next;
}

/* The earliest timer of all Ps, 0 when there is none. */
int64_t gort__timers_earliest(void)
{
    int64_t min = 0;
    int32_t n = load_acq(&gort__gomaxprocs);
    for (int32_t i = 0; i < n; i++) {
        /* Seq-cst: after the poller's claim of sched.lastpoll (see
         * wakenetpoller). */
        int64_t w = load_seqcst(&gort__allp_load()[i]->timers.minwhen);
        if (w != 0 && (min == 0 || w < min))
            min = w;
    }
    return min;
}

/* Some P has a timer (checkdead: a sleeper will wake). */
bool gort__timers_any(void)
{
    for (int32_t i = 0; i < gort__gomaxprocs; i++)
        if (load_relaxed(&gort__allp_load()[i]->timers.minwhen) != 0)
            return true;
    return false;
}

/* ---------------------------------------------------------------------------
 * The poller: the one M that sleeps until the next timer.  Mirrors the
 * blocking netpoll of findRunnable with netpollBreak as the wake-up.
 * sched.lastpoll == 0 while an M sleeps there; sched.pollgen changes to
 * wake it.
 * ------------------------------------------------------------------------- */

void gort__poller_wake_futex(void)
{
    /* Seq-cst: the sleeper compares pollgen in the futex call; a change
     * before it sleeps makes the sleep return at once. */
    xadd_seqcst(&gort__sched.pollgen, 1);
    gort__futexwake(&gort__sched.pollgen, 1);
}

void gort__poller_wake(void)
{
    /* Once the network poller exists the poller sleeps in epoll; before,
     * on the futex (netpoll.c switches it over when it starts). */
    if (gort__netpoll_inited())
        gort__netpoll_break();
    else
        gort__poller_wake_futex();
}

/* A timer at `when` was added: make sure some M will run it in time.
 * Mirrors wakeNetPoller. */
void gort__wakenetpoller(int64_t when)
{
    /* Seq-cst: the added timer's minwhen store (update_minwhen) before
     * this read of lastpoll, against the poller's lastpoll exchange
     * before its read of minwhen (gort__timers_earliest): one of us sees
     * the other. */
    if (load_seqcst(&gort__sched.lastpoll) == 0) {
        int64_t until = load_seqcst(&gort__sched.polluntil);
        if (until == 0 || until > when)
            gort__poller_wake();
    } else {
        gort__wakep();
    }
}

/*
 * Before the poller sleeps in epoll_wait, it may poll without blocking for
 * up to GORTDEBUG=netpollspin microseconds (default 50), when goroutines
 * wait on descriptors, every P is idle and the sleep would be longer.  In
 * a request-reply exchange under heavy load the next request often comes
 * within that, and then neither does the poller's thread sleep nor does
 * the sender pay to wake it (a futex or epoll wake-up and the thread's
 * switch back in).  Every P idle: no thread of ours wants a CPU, and the
 * spin stops as soon as one does.
 *
 * The spin pays only when work comes within it.  Each idle spell ends
 * after a gap (until the first event or break); a spin of up to L would
 * have cost min(gap, L) of CPU and, when the gap was within L, saved a
 * sleep and a wake-up: the CPU the poller's thread spends to block in
 * epoll_wait and be woken, which the poller measures on every 16th spell
 * that sleeps (its thread's CPU clock around the call: far less than the
 * wake-up's latency).  spinpay keeps moving averages of the cost and the
 * gain (1/16 weight each) and the poller spins while the gain outweighs
 * the cost: by a quarter more to start spinning, a quarter less to stop,
 * so that it does not flap.  A spell spent asleep shows its gap only with
 * the wake-up's own latency added, so it counts only when it is plainly
 * beyond L (a miss either way); and while not spinning, a spell now and
 * then spins anyway, to see the gaps as they are, and counts for a quarter
 * (it stands for many).  A probe that misses costs L, so the probes back
 * off while they miss: the next comes twice as many spells later after a
 * miss, half as many after a hit, between 64 and 1,024.  At partial load,
 * where most probes miss, they cost about L/1,024 a request; when the
 * gaps shorten, the probes come every 64th spell again within a few
 * thousand spells (a few dozen milliseconds at the rates that need the
 * spin).  So the poller spins only where requests follow each other by
 * less than a sleep costs, under a client that never pauses; at partial
 * load it stops within a few dozen requests.  Only the poller M (one at a
 * time: sched.lastpoll's claim, which orders one poller's updates before
 * the next one's) touches spinpay.
 */
/* The gain of a hit until a sleep has been measured. */
#define SPIN_GAIN_NS (10 * 1000)
/* A slept spell whose gap is this much beyond L was beyond it anyway. */
#define SPIN_WAKE_SLACK_NS (200 * 1000)
/* One slept spell in this many has its CPU measured. */
#define SPIN_SAMPLE_EVERY 16
/* Spells between probes while not spinning: doubled after a probe that
 * misses, halved after one that hits, within these bounds. */
#define SPIN_PROBE_FIRST 64
#define SPIN_PROBE_MOST 1024
static struct {
    int64_t cost, gain;   /* ns, moving averages over idle spells */
    int64_t sleepcpu;     /* ns, a sleep's CPU (0: not measured yet) */
    bool off;             /* not spinning: the gain fell behind */
    uint32_t spells;      /* idle spells since the last probe, while off */
    uint32_t probe_every; /* spells between probes (0: the first) */
    uint32_t slept;       /* spells that slept, for the samples */
} spinpay;

void gort__spinpay_record(int64_t gap, int64_t spin, bool probe)
{
    int64_t saved = spinpay.sleepcpu ? spinpay.sleepcpu : SPIN_GAIN_NS;
    bool hit = gap <= spin;
    int64_t cost = hit ? gap : spin;
    int64_t gain = hit ? saved : 0;
    int shift = probe ? 2 : 4;
    spinpay.cost += (cost - spinpay.cost) / (1 << shift);
    spinpay.gain += (gain - spinpay.gain) / (1 << shift);
    if (spinpay.off)
        spinpay.off = 4 * spinpay.gain <= 5 * spinpay.cost;
    else
        spinpay.off = 4 * spinpay.gain < 3 * spinpay.cost;
    uint32_t every = spinpay.probe_every ? spinpay.probe_every
                                         : SPIN_PROBE_FIRST;
    if (probe && hit && every > SPIN_PROBE_FIRST)
        spinpay.probe_every = every / 2;
    else if (probe && !hit && every < SPIN_PROBE_MOST)
        spinpay.probe_every = every * 2;
}

void gort__spinpay_sleepcpu(int64_t cpu)
{
    if (spinpay.sleepcpu == 0)
        spinpay.sleepcpu = cpu;
    else
        spinpay.sleepcpu += (cpu - spinpay.sleepcpu) / 8;
}

int gort__spinpay_spin(void)
{
    if (!spinpay.off)
        return SPINPAY_SPIN;
    uint32_t every = spinpay.probe_every ? spinpay.probe_every
                                         : SPIN_PROBE_FIRST;
    if (++spinpay.spells < every)
        return SPINPAY_SLEEP;
    spinpay.spells = 0;
    return SPINPAY_PROBE;
}

bool gort__spinpay_counts(bool spun, int64_t gap, int64_t spin)
{
    return spun || gap > spin + SPIN_WAKE_SLACK_NS;
}

void gort__spinpay_reset(void)
{
    memset(&spinpay, 0, sizeof spinpay);
}

/* The spin limit in ns (0: none).  Relaxed: a setting that a test changes
 * while the runtime runs; a stale value costs one spin more or less. */
static int64_t spin_limit(void)
{
    return (int64_t)load_relaxed(&gort__debug.netpollspin) * 1000;
}

/* Spin if it pays (*probe: a probe of the gaps).  Returns true when the
 * spin got an event (*n Gs readied, 0 for a break). */
static bool netpoll_spin(int64_t until, struct gqueue *q, int32_t *n,
                         bool *probe)
{
    /* gort__netpoll_spin checks that every P is idle. */
    int64_t spin = spin_limit();
    if (spin == 0 || gort__netpoll_waiters() == 0)
        return false;
    int how = gort__spinpay_spin();
    *probe = how == SPINPAY_PROBE;
    if (how == SPINPAY_SLEEP)
        return false;
    int64_t end = gort_nanotime() + spin;
    if (until != 0 && until <= end)
        return false;
    int32_t r = gort__netpoll_spin(end, q);
    if (r < 0)
        return false;
    *n = r;
    return true;
}

/* Sleep as the poller until `until` or a break.  The caller holds no P
 * and has claimed sched.lastpoll. */
int32_t gort__netpoll_sleep(int64_t until, struct gqueue *q)
{
    q->head = q->tail = NULL;
    uint32_t gen = load_seqcst(&gort__sched.pollgen);
    /* polluntil 0 would read as "unknown"; a poller with no timer sleeps
     * until woken: publish a far deadline instead. */
    store_seqcst(&gort__sched.polluntil, until ? until : INT64_MAX);
    /* Timers added before we published polluntil may be earlier. */
    int64_t again = gort__timers_earliest();
    if (again != 0 && (until == 0 || again < until))
        until = again;
    int32_t n = 0;
    if (gort__netpoll_inited()) {
        int64_t began = gort_nanotime();
        bool eligible = gort__netpoll_waiters() > 0, probe = false;
        bool spun = netpoll_spin(until, q, &n, &probe);
        if (!spun) {
            /* -1: no timer, sleep until an event or a break.  A deadline
             * that has already passed (a slow thread got here late) polls
             * without sleeping: it must never read as "no deadline". */
            int64_t delay = -1;
            if (until != 0) {
                delay = until - gort_nanotime();
                if (delay < 0)
                    delay = 0;
            }
            /* Every 16th sleep: what it costs this thread in CPU, the
             * gain of a spin that would have avoided it.  Counted only
             * when the thread was off the CPU for a while (it slept). */
            bool sample = eligible && spin_limit() != 0 &&
                          ++spinpay.slept % SPIN_SAMPLE_EVERY == 0;
            int64_t c0 = sample ? (int64_t)gort__thread_cputime(0) : 0;
            int64_t w0 = sample ? gort_nanotime() : 0;
            n = gort__netpoll(delay, q);
            if (c0 > 0) {
                int64_t cpu = (int64_t)gort__thread_cputime(0) - c0;
                int64_t wall = gort_nanotime() - w0;
                if (cpu >= 0 && wall > 2 * cpu + 2000)
                    gort__spinpay_sleepcpu(cpu);
            }
        }
        /* The gap: until the event or the break (a break leaves no G but
         * ends the wait early), or none when the sleep simply ran out. */
        int64_t now = gort_nanotime(), gap = now - began, lim = spin_limit();
        bool ended = spun || n > 0 || until == 0 || now < until;
        if (!ended)
            gap = INT64_MAX;
        if (eligible && gort__spinpay_counts(spun, gap, lim))
            gort__spinpay_record(gap, lim, probe);
        if (spun)
            goto done;
    } else if (until != 0) {
        int64_t delay = until - gort_nanotime();
        if (delay > 0)
            gort__futexsleep(&gort__sched.pollgen, gen, delay);
    } else {
        gort__futexsleep(&gort__sched.pollgen, gen, -1);
    }
done:
    store_seqcst(&gort__sched.polluntil, 0);
    return n;
}

/* Internal timers for other parts of the runtime (netpoll deadlines):
 * (re)start t at when on the current P, or stop it. */
void gort__gtimer_reset(struct gtimer *t, int64_t when)
{
    struct p *pp = current_p("gtimer_reset");
    gort__lock(&t->mu);
    /* Moving a pending timer later (an idle deadline pushed on at every
     * request) only records the new time: the heap keeps the old one, a
     * lower bound, and gort__timers_check re-sifts the timer when that
     * comes due (Go's timerModified, for the later-only case).  Relaxed
     * load: a hint, re-checked under the heap's lock. */
    struct timers *ts = load_relaxed(&t->ts);
    if (ts) {
        gort__lock(&ts->lock);
        bool later = load_relaxed(&t->ts) == ts && when >= t->when;
        if (later)
            t->when = when;
        gort__unlock(&ts->lock);
        if (later) {
            gort__unlock(&t->mu);
            return;
        }
    }
    timer_remove(t);
    t->when = when;
    timer_add(pp, t);
    gort__unlock(&t->mu);
}

bool gort__gtimer_stop(struct gtimer *t)
{
    gort__lock(&t->mu);
    bool pending = timer_remove(t);
    gort__unlock(&t->mu);
    return pending;
}

/* ---------------------------------------------------------------------------
 * Starting, stopping, resetting.
 * ------------------------------------------------------------------------- */

static struct p *current_p(const char *who)
{
    struct m *mp = gort__need_goroutine(who);
    if (!mp->p) /* a thread gort did not create: no P for its timers */
        gort__fatal_no_goroutine(who);
    return mp->p;
}

/* Put t (not in any heap) on pp's heap at t->when. */
static void timer_add(struct p *pp, struct gtimer *t)
{
    struct timers *ts = &pp->timers;
    /* Read before the unlock: once it is released the timer may fire, and
     * a sleeper's timer (on its stack) be gone. */
    int64_t when = t->when;
    gort__lock(&ts->lock);
    heap_add(ts, t);
    gort__unlock(&ts->lock);
    gort__wakenetpoller(when);
}

/* Take t off its heap if it is on one.  t->mu held.  True when it was
 * pending.  Returns only once a running function of t has finished. */
static bool timer_remove(struct gtimer *t)
{
    for (;;) {
        /* Acquire: pairs with the release in gort__timers_check, so a
         * function that ran on another M is over before we go on (and
         * our caller may free t). */
        struct timers *ts = load_acq(&t->ts);
        if (!ts)
            return false;
        gort__lock(&ts->lock);
        if (load_relaxed(&t->ts) != ts) {
            gort__unlock(&ts->lock);
            continue;
        }
        /* Under the lock, t->ts == ts means it is on the heap: a
         * running function clears t->ts before the lock is released. */
        heap_delete(ts, (uint32_t)t->idx);
        store_relaxed(&t->ts, NULL);
        gort__unlock(&ts->lock);
        return true;
    }
}

/* Move every timer of a removed P to pp (procresize, world stopped).
 * The two heaps' locks are taken in address order, as two locks of one
 * rank must be (runtime.h).  Mirrors moveTimers. */
void gort__timers_move(struct p *from, struct p *to)
{
    struct timers *src = &from->timers, *dst = &to->timers;
    bool srcfirst = (uintptr_t)src < (uintptr_t)dst;
    struct timers *first = srcfirst ? src : dst;
    struct timers *second = srcfirst ? dst : src;
    gort__lock(&first->lock);
    gort__lock(&second->lock);
    for (uint32_t i = 0; i < src->len; i++) {
        struct gtimer *t = src->heap[i].t;
        heap_add(dst, t);
    }
    src->len = 0;
    update_minwhen(src);
    gort__unlock(&second->lock);
    gort__unlock(&first->lock);
}

/* Forget every pending timer at shutdown: their owners may still stop or
 * free them afterwards, which must find them stopped. */
void gort__timers_fini(struct p *pp)
{
    struct timers *ts = &pp->timers;
    for (uint32_t i = 0; i < ts->len; i++) {
        store_relaxed(&ts->heap[i].t->ts, NULL);
        ts->heap[i].t->idx = -1;
    }
    gort__free(ts->heap);
    memset(ts, 0, sizeof *ts);
    gort__lock_init(&ts->lock, LOCKRANK_TIMERS);
}

/* ---------------------------------------------------------------------------
 * Sleep.  The timer lives on the sleeper's stack and is started by the
 * park's unlock function, once the G is parked: it cannot fire earlier.
 * ------------------------------------------------------------------------- */

/* Make the sleeper runnable; it is queued after the heap's lock is
 * released, with the others due now (flush_woken). */
static void sleep_fire(struct gtimer *t, int64_t now)
{
    (void)now;
    struct m *mp = gort__getm();
    struct g *gp = t->arg;
    gort__casgstatus(gp, G_WAITING, G_RUNNABLE);
    gort__gqueue_push(&mp->woken, gp);
    mp->nwoken++;
}

static bool sleep_commit(struct m *mp, struct g *gp, void *arg)
{
    (void)gp;
    timer_add(mp->p, arg);
    return true;
}

static inline __attribute__((always_inline)) void sleep_common(int64_t ns)
{
    gort__preempt_check();
    if (ns <= 0)
        return;
    struct g *gp = gort__need_goroutine("gort_sleep")->curg;
    struct gtimer t;
    memset(&t, 0, sizeof t);
    gort__lock_init(&t.mu, LOCKRANK_TIMER);
    t.idx = -1;
    t.f = sleep_fire;
    t.arg = gp;
    t.selfonly = true;
    int64_t now = gort_nanotime();
    t.when = now + ns < now ? INT64_MAX : now + ns;
    gp->waitobj = NULL;
    gort__park(sleep_commit, &t, WAIT_SLEEP);
}

static GORT_NOINLINE void sleep_san(int64_t ns)
{
    GORT_SAN_SCOPE();
    sleep_common(ns);
}

void gort_sleep(int64_t ns)
{
    if (GORT_UNLIKELY(gort__san & GORT_SAN_TSAN)) {
        sleep_san(ns);
        return;
    }
    sleep_common(ns);
}

/* ---------------------------------------------------------------------------
 * User timers: channel timers (NewTimer, After) and function timers
 * (AfterFunc).
 * ------------------------------------------------------------------------- */

struct gort_timer {
    struct gtimer t;
    struct gort_chan *ch;  /* channel timers: cap 1, int64_t */
    void (*fn)(void *);    /* function timers */
    void *arg;
};

/* ThreadSanitizer (san.c): making or resetting a timer happens before
 * its firing: the value on its channel, its function's goroutine. */
static void chan_fire(struct gtimer *t, int64_t now)
{
    struct gort_timer *ut = (struct gort_timer *)t;
    gort__san_acquire(ut);
    /* Non-blocking, as Go's sendTime: a value nobody took is dropped. */
    gort__chansend(gort__getm(), ut->ch, &now, false,
                   gort__san & GORT_SAN_TSAN);
}

static void func_fire(struct gtimer *t, int64_t now)
{
    (void)now;
    struct gort_timer *ut = (struct gort_timer *)t;
    gort__san_acquire(ut);
    if (gort__newproc_sys(ut->fn, ut->arg) < 0)
        gort__throw("timer: out of memory starting its function");
}

static int64_t deadline(int64_t ns)
{
    int64_t now = gort_nanotime();
    if (ns < 0)
        ns = 0;
    return now + ns < now ? INT64_MAX : now + ns;
}

/* Empty a channel timer's buffer: after stop or reset, no stale value.
 * True when a value was there: the timer fired but nobody received it,
 * which counts as not fired (Go 1.23's synchronous timer channels). */
static bool chan_drain(struct gort_timer *ut)
{
    if (!ut->ch)
        return false;
    bool had = false;
    gort__spinlock(&ut->ch->lock);
    if (ut->ch->qcount > 0) {
        gort__chan_bufrecv(ut->ch, NULL);
        had = true;
    }
    gort__spinunlock(&ut->ch->lock);
    return had;
}

int gort_timer_make(gort_timer **tp, int64_t ns, void (*fn)(void *),
                    void *arg)
{
    GORT_SAN_SCOPE();
    if (!tp)
        return -EINVAL;
    struct m *mp = gort__getm();
    if (!mp || !mp->p || !mp->curg)
        return -EPERM;
    struct gort_timer *ut = gort__calloc(1, sizeof *ut);
    if (!ut)
        return -ENOMEM;
    if (!fn) {
        int r = gort__chan_alloc(&ut->ch, sizeof(int64_t), 1);
        if (r < 0) {
            gort__free(ut);
            return r;
        }
        ut->ch->timer = ut;
        ut->ch->timer_owned = true;
        ut->t.f = chan_fire;
    } else {
        ut->t.f = func_fire;
        ut->fn = fn;
        ut->arg = arg;
    }
    gort__lock_init(&ut->t.mu, LOCKRANK_TIMER);
    ut->t.idx = -1;
    ut->t.when = deadline(ns);
    gort__san_release(ut);
    gort__lock(&ut->t.mu);
    timer_add(current_p("gort_timer_make"), &ut->t);
    gort__unlock(&ut->t.mu);
    *tp = ut;
    return 0;
}

gort_chan *gort_timer_chan(gort_timer *t)
{
    return t ? t->ch : NULL;
}

bool gort_timer_stop(gort_timer *ut)
{
    GORT_SAN_SCOPE();
    if (!ut)
        return false;
    gort__lock(&ut->t.mu);
    bool pending = timer_remove(&ut->t);
    pending |= chan_drain(ut);
    gort__unlock(&ut->t.mu);
    gort__preempt_check();
    return pending;
}

bool gort_timer_reset(gort_timer *ut, int64_t ns)
{
    GORT_SAN_SCOPE();
    if (!ut)
        return false;
    current_p("gort_timer_reset"); /* fatal outside a goroutine */
    gort__san_release(ut);
    gort__lock(&ut->t.mu);
    bool pending = timer_remove(&ut->t);
    pending |= chan_drain(ut);
    ut->t.when = deadline(ns);
    /* Our P again: taking locks never moves a goroutine. */
    timer_add(current_p("gort_timer_reset"), &ut->t);
    gort__unlock(&ut->t.mu);
    gort__preempt_check();
    return pending;
}

/* Stop ut; free it (and its channel) unless goroutines wait on the
 * channel. */
static int timer_free(struct gort_timer *ut)
{
    if (ut->ch) {
        gort__spinlock(&ut->ch->lock);
        bool busy = ut->ch->recvq.first || ut->ch->sendq.first;
        gort__spinunlock(&ut->ch->lock);
        if (busy)
            return -EBUSY;
    }
    gort__lock(&ut->t.mu);
    timer_remove(&ut->t);
    gort__unlock(&ut->t.mu);
    if (ut->ch)
        gort__free(ut->ch);
    gort__free(ut);
    return 0;
}

int gort_timer_free(gort_timer *ut)
{
    GORT_SAN_SCOPE();
    return ut ? timer_free(ut) : 0;
}

gort_chan *gort_after(int64_t ns)
{
    GORT_SAN_SCOPE();
    gort_timer *ut;
    if (gort_timer_make(&ut, ns, NULL, NULL) < 0)
        return NULL;
    ut->ch->timer_owned = false; /* the channel owns the timer */
    return ut->ch;
}

int gort__timer_free_chan(struct gort_chan *c)
{
    return timer_free(c->timer);
}
