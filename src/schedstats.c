/* SPDX-License-Identifier: MIT */
/*
 * schedstats.c - what the scheduler records for the metrics as it runs:
 * the time histograms' buckets (Go's timeHistogram), the sampled
 * scheduling latencies and run times of goroutines (the tracking half of
 * casgstatus) and the stop-the-world pauses.  metrics.c reads them.
 *
 * Every bucket has one writer at a time (the P's owner, the stopper) and
 * is bumped with gort__stat_add (relaxed: readers on other threads sum
 * approximate counts).
 */
#include "atomic.h"
#include "defs.h"
#include "sched.h"
#include "schedstats.h"

#define TH_NSUB (1 << GORT_TIMEHIST_SUBBITS)
#define TH_NBUCKETS (GORT_TIMEHIST_MAXBIT - GORT_TIMEHIST_MINBIT + 1)

/* ---------------------------------------------------------------------------
 * Time histograms.  Mirrors timeHistogram.record (histogram.go).
 * ------------------------------------------------------------------------- */

/* Index into counts[] of a duration in nanoseconds.  The bucket is set by
 * the highest 1 bit (bit MINBIT for anything shorter), the sub-bucket by
 * the SUBBITS bits below it. */
static uint32_t timehist_index(int64_t ns)
{
    if (ns < 0)
        return 0; /* underflow: the clock went backwards */
    uint32_t len = ns ? 64 - (uint32_t)__builtin_clzll((uint64_t)ns) : 0;
    uint32_t bit, bucket;
    if (len < GORT_TIMEHIST_MINBIT) {
        bit = GORT_TIMEHIST_MINBIT;
        bucket = 0;
    } else {
        bit = len;
        bucket = len - GORT_TIMEHIST_MINBIT + 1;
    }
    if (bucket >= TH_NBUCKETS)
        return GORT_TIMEHIST_N - 1; /* overflow: 2^47 ns or more */
    uint32_t sub = (uint32_t)((uint64_t)ns >> (bit - 1 - GORT_TIMEHIST_SUBBITS)) %
                   TH_NSUB;
    return 1 + bucket * TH_NSUB + sub;
}

void gort__timehist_record(struct gort_timehist *h, int64_t ns)
{
    gort__stat_add(&h->counts[timehist_index(ns)], 1);
}

/* ---------------------------------------------------------------------------
 * Sampling /sched/latencies.  Mirrors the tracking half of casgstatus.
 * ------------------------------------------------------------------------- */

/* The clock of the samples: the CPU's counter, not gort_nanotime.  A
 * sampled round reads it twice, and clock_gettime through the vDSO
 * (kvm-clock in a virtual machine) costs a few times what rdtsc does,
 * which with Go's one round in 8 would be a large part of a yield's time
 * (docs/design.md has the figures).  Counter ticks become nanoseconds at
 * a rate measured against gort_nanotime (Go's ticksPerSecond does the
 * same for its profiling events); aarch64's counter states its own
 * frequency.
 * The counters of two CPUs may differ by a few tens of nanoseconds (a
 * wait that looks negative is recorded as 0), which a histogram whose
 * finest bucket is 64 ns hardly sees. */
#if defined(__x86_64__) && defined(__GNUC__)
static inline uint64_t track_ticks(void)
{
    return __builtin_ia32_rdtsc();
}
#elif defined(__aarch64__) && defined(__GNUC__)
static inline uint64_t track_ticks(void)
{
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
}
#else
static inline uint64_t track_ticks(void)
{
    return (uint64_t)gort_nanotime();
}
#endif

/* Nanoseconds per tick in 32.32 fixed point; 0 until measured.  The rate
 * is measured against the pair (calib_ticks, calib_ns) taken at the first
 * gort_main, once calib_settle_ns have passed; before that each sample
 * computes it afresh (a clock read more).  Written racily by whichever
 * sample settles it first, all with about the same value: relaxed. */
static uint64_t tick_mult;
static uint64_t calib_ticks;
static int64_t calib_ns;
static const int64_t calib_settle_ns = 10 * 1000 * 1000;

/* A (ticks, ns) pair read together: the clock read bracketed by two
 * counter reads, the tightest bracket of five kept, the counter taken at
 * its middle.  A thread descheduled between the two reads of one pair
 * would otherwise skew the rate, for good once it is settled. */
static void clock_pair(uint64_t *ticks, int64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = track_ticks();
        int64_t n = gort_nanotime();
        uint64_t t1 = track_ticks();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *ticks = t0 + (t1 - t0) / 2;
            *ns = n;
        }
    }
}

void gort__track_clock_init(void)
{
#if defined(__aarch64__) && defined(__GNUC__)
    uint64_t freq;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(freq));
    if (freq) {
        store_relaxed(&tick_mult,
                      (uint64_t)(((unsigned __int128)1000000000 << 32) /
                                 freq));
        return;
    }
#elif !(defined(__x86_64__) && defined(__GNUC__))
    store_relaxed(&tick_mult, (uint64_t)1 << 32); /* ticks are ns */
    return;
#endif
    if (load_relaxed(&calib_ns) != 0)
        return; /* measured from an earlier gort_main's pair */
    uint64_t t = 0;
    int64_t ns = 0;
    clock_pair(&t, &ns);
    store_relaxed(&calib_ticks, t);
    store_relaxed(&calib_ns, ns);
}

/* Nanoseconds in dt ticks. */
static int64_t ticks_to_ns(uint64_t dt)
{
    uint64_t mult = load_relaxed(&tick_mult);
    if (GORT_UNLIKELY(mult == 0)) {
        uint64_t t = 0;
        int64_t now = 0;
        clock_pair(&t, &now);
        int64_t ns = now - load_relaxed(&calib_ns);
        uint64_t ticks = t - load_relaxed(&calib_ticks);
        if (ns <= 0 || ticks == 0)
            return 0;
        mult = (uint64_t)(((unsigned __int128)ns << 32) / ticks);
        if (ns >= calib_settle_ns)
            store_relaxed(&tick_mult, mult);
    }
    unsigned __int128 v = ((unsigned __int128)dt * mult) >> 32;
    return v > (unsigned __int128)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* A tracked G (casgstatus set gp->tracking) becomes runnable or runs.
 * Its other transitions (into waiting, a syscall, preemption, death) need
 * nothing: a dead G's flag is reset when it is reused (gsetup). */
void gort__gtrack(struct g *gp, uint32_t oldval, uint32_t newval)
{
    if (newval == G_RUNNABLE) {
        gp->trackingstamp = (int64_t)track_ticks();
        return;
    }
    /* Running.  From a syscall straight back to running the wait was 0
     * (Go records that too). */
    int64_t d = 0;
    if (oldval == G_RUNNABLE) {
        int64_t dt = (int64_t)(track_ticks() - (uint64_t)gp->trackingstamp);
        d = dt > 0 ? ticks_to_ns((uint64_t)dt) : 0;
    }
    gp->tracking = false;
    /* The M making a G run holds the P it runs on; a foreign thread's
     * stand-in G has none and is not scheduled: not recorded. */
    struct m *mp = gort__getm_raw();
    struct p *pp = mp ? mp->p : NULL;
    if (pp)
        gort__timehist_record(&pp->latencies, d);
    /* Time the run too (p.runavg), in one timed round of 8: a rough
     * average needs few samples. */
    if (pp && (gp->trackingseq & 0x38) == 0) {
        pp->runstamp = track_ticks();
        pp->runstampg = gp;
        gp->runtiming = true;
    }
}

void gort__gtrack_ran(struct g *gp)
{
    gp->runtiming = false;
    /* The stamp is the P's (a G runs on one P from start to stop; the
     * struct g stays smaller): a moving average, 1/16 weight, kept by
     * that P. */
    struct m *mp = gort__getm_raw();
    struct p *pp = mp ? mp->p : NULL;
    if (!pp || pp->runstampg != gp)
        return;
    pp->runstampg = NULL;
    int64_t dt = (int64_t)(track_ticks() - pp->runstamp);
    if (dt <= 0)
        return;
    int64_t ran = ticks_to_ns((uint64_t)dt);
    pp->runavg += (ran - pp->runavg) / 16;
}

/* ---------------------------------------------------------------------------
 * Stop-the-world pauses.  All of gort's are "other" (no garbage
 * collector); the gc histograms exist, empty, as in a Go program that
 * never collected.
 * ------------------------------------------------------------------------- */

struct gort_timehist gort__stw_pauses_stopping, gort__stw_pauses_total;

void gort__stw_record_stopping(int64_t began, int64_t now)
{
    gort__timehist_record(&gort__stw_pauses_stopping, now - began);
}

void gort__stw_record_total(int64_t began, int64_t now)
{
    gort__timehist_record(&gort__stw_pauses_total, now - began);
}
