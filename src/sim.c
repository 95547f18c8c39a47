/* SPDX-License-Identifier: MIT */
/*
 * sim.c - what a program asks of the simulation mode (GORTDEBUG=sim=SEED,
 * docs/sim.md): whether it runs in it (gort_sim_active), and faults on
 * demand (gort_sim_fault), drawn from the seed so that a replay injects
 * the same ones.
 *
 * The faults' random state (gort__sim.faultrand) is its own, not the
 * scheduler's (an M's fastrand, which travels with the one P): a call
 * that injects nothing, or a run with simfault=0, leaves every
 * scheduling choice as it was, and the n-th call in the run (in the
 * order the seeded schedule gives the calls) always gets the n-th draw.
 * The state is touched only by a goroutine running on the M that holds
 * the one P, so one thread at a time; the P's hand-over between Ms
 * (sched.lock, a note) orders one holder's writes before the next
 * holder's reads, as for gort__sim.rand.
 *
 * A thread that is not running a goroutine (a thread gort did not
 * create, or a call before or after gort_main) gets no fault and draws
 * nothing: it runs when the kernel runs it, so its draws would not
 * replay, and they would race with the goroutines' draws.
 *
 * gort_sim_point is a preemption point in the program's own code: the
 * mode has no signal-based preemption (a signal lands when the kernel
 * decides), so a goroutine that calls no gort function would otherwise
 * never give way.  Every GORT_SIM_POINT_SPAN calls or fewer (a count
 * drawn from the seed, gort__sim.points) it becomes a point as a gort
 * call is: gort__preempt_check, where the strategy decides whether the
 * goroutine yields.  gort_simpoints.h makes every function entry of a
 * program compiled with -finstrument-functions such a call, which is
 * where Go's compiler puts its own preemption checks.
 */
#include "defs.h"
#include "preempt.h"
#include "sched.h"

bool gort_sim_active(void)
{
    return gort__sim_on();
}

/* One draw of the faults' stream (xorshift, as gort__fastrand). */
static uint32_t fault_rand(void)
{
    uint32_t s1 = gort__sim.faultrand[0], s0 = gort__sim.faultrand[1];
    s1 ^= s1 << 17;
    s1 = s1 ^ s0 ^ (s1 >> 7) ^ (s0 >> 16);
    gort__sim.faultrand[0] = s0;
    gort__sim.faultrand[1] = s1;
    return s0 + s1;
}

/* The mode's half of gort_sim_fault, out of line so that the normal
 * mode's call is one load and one branch. */
static GORT_NOINLINE bool sim_fault(void)
{
    int32_t ppm = gort__sim.faultppm;
    if (ppm <= 0)
        return false;
    /* Without making an M for a thread gort did not create (which
     * gort__getm would). */
    struct m *mp = gort__getm_noextra();
    if (!mp || !mp->p || !mp->curg || mp->curg->foreign)
        return false;
    /* A draw uniform in [0, 10^6), below the rate with chance ppm/10^6
     * (up to the 2^-32 bias of the multiply-shift). */
    uint32_t x = (uint32_t)(((uint64_t)fault_rand() * 1000000u) >> 32);
    return x < (uint32_t)ppm;
}

bool gort_sim_fault(void)
{
    if (!gort__sim_on())
        return false;
    return sim_fault();
}

/* The mode's half of gort_sim_point. */
static GORT_NOINLINE void sim_point(void)
{
    struct m *mp = gort__getm_noextra();
    if (!mp || !mp->p || mp->locks || !mp->curg || mp->curg->foreign ||
        mp->curg->preemptoff)
        return;
    /* On the goroutine's own stack: not a signal handler on the
     * alternate stack, not the scheduler's stack.  The frame's address,
     * not a local's (AddressSanitizer may keep locals elsewhere). */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    struct g *gp = mp->curg;
    if (sp <= gp->stack.lo || sp > gp->stack.hi)
        return;
    if (gort__sim.points > 1) {
        gort__sim.points--;
        return;
    }
    gort__sim.points = 1 + gort__fastrand() % GORT_SIM_POINT_SPAN;
    gort__preempt_check_m(mp);
}

void gort_sim_point(void)
{
    if (gort__sim_on())
        sim_point();
}
