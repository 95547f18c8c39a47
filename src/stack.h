/* SPDX-License-Identifier: MIT */
/*
 * stack.h - what stack.c offers: goroutine stacks, their guards and
 * caches.
 */
#ifndef GORT_STACK_H
#define GORT_STACK_H

#include "defs.h"
#include "sched.h"

enum { STACK_GUARD_NONE = 0, STACK_GUARD_MADVISE, STACK_GUARD_MPROTECT,
       STACK_GUARD_CANARY };
GORT_HIDDEN extern size_t gort__stack_size;
GORT_HIDDEN int gort__stackinit(void);
GORT_HIDDEN void gort__stackfini(void);
/* sysmon: return the pages of stacks idle in the pool for
 * gort__debug.stackidle ms to the OS, a bounded batch per call.  Returns
 * how many stacks it trimmed; *next is when the next is due, or 0 when
 * no stack in the pool waits to be trimmed. */
GORT_HIDDEN int gort__stack_scavenge(int64_t now, int64_t *next);
/* Promise n stacks (mapping arenas as needed): 0 or -ENOMEM. */
GORT_HIDDEN int gort__stack_reserve(int32_t n);
GORT_HIDDEN void gort__stackunreserve(int32_t n);
/* For a G's first run on a P whose cache is empty: take a slot against
 * the G's reservation, and refill the cache with up to half its size from
 * the pool's unreserved slots, in one lock hold. */
GORT_HIDDEN void gort__stackcache_refill_reserved(struct stackcache *c,
                                                  struct gstack *st);
GORT_HIDDEN void gort__stackfree(struct gstack *st);
/* Take the hottest stack of a P's cache: 0, or -1 if it is empty. */
GORT_HIDDEN int gort__stackcache_get(struct stackcache *c, struct gstack *st);
/* Give a stack to the top of a P's cache; a full cache spills its coldest
 * half to the pool. */
GORT_HIDDEN void gort__stackcache_put(struct stackcache *c,
                                      const struct gstack *st);
/* Return every cached stack to the global pool. */
GORT_HIDDEN void gort__stackcache_flush(struct stackcache *c);
/* Give a stack's usable part fresh zero pages, keeping its guard (for
 * ThreadSanitizer, san.c).  Fatal if the kernel refuses. */
GORT_HIDDEN void gort__stack_renew(struct gstack *st);
/* Fatal if an unguarded stack's canary was overwritten. */
GORT_HIDDEN void gort__stack_check_canary(struct g *gp);
/* Whether the canary at the foot of a stack whose lowest address is lo is
 * intact.  Takes lo, not the G: sysmon reads another thread's G, whose
 * stack may be released (lo zeroed) between its checks and the read. */
GORT_HIDDEN bool gort__stack_canary_ok(uintptr_t lo);
/* Report the overflow of a G found running with its canary overwritten
 * (sysmon). */
GORT_HIDDEN GORT_NORETURN void gort__stack_overflow_running(struct g *gp);
static inline void gort__stack_check(struct g *gp)
{
    if (GORT_UNLIKELY(gp->stack.guard == STACK_GUARD_CANARY))
        gort__stack_check_canary(gp);
}
/* True when addr is in gp's guard region: a fault there is an overflow. */
GORT_HIDDEN bool gort__stack_is_guard(struct g *gp, uintptr_t addr);
GORT_HIDDEN const char *gort__stack_guard_name(int guard);

#endif /* GORT_STACK_H */
