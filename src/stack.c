/* SPDX-License-Identifier: MIT */
/*
 * stack.c - goroutine stacks: arenas, guards, reuse and tool registration.
 *
 * C cannot grow a stack by copying it, so every G gets a fixed virtual
 * stack whose pages the kernel commits only when they are touched.  Stacks
 * are carved from arenas (8 MiB of many slots, MAP_NORESERVE so that
 * address space is not charged against the overcommit limit), which lie
 * in fenced regions of address space of their own (arena_space_locked:
 * what gcore can copy depends on it).  A slot is
 *
 *     base                lo                                     hi   top
 *     | guard (16 KiB)    | usable stack (gort__stack_size) ... |offs|
 *
 * where `offs`, 0..448 bytes in 64-byte steps, keeps the tops of all
 * stacks from aliasing the same cache sets.
 *
 * Guard policy, chosen once per gort_main (GORTDEBUG=stackguard=... forces
 * one, for tests):
 *   MADVISE   MADV_GUARD_INSTALL (Linux 6.13+) puts the guard into the page
 *             tables without splitting the arena's mapping: no map count
 *             cost, so a million guarded stacks fit a stock kernel.
 *   MPROTECT  mprotect(PROT_NONE) on older kernels.  Each guard splits the
 *             mapping in two, and vm.max_map_count (65530 by default) caps a
 *             process's mappings, so only a budget of a quarter of that
 *             limit is spent on guards; later stacks fall back to CANARY.
 *   CANARY    a known word at the lowest usable address, checked at every
 *             switch away from the G; overflow into the (unprotected)
 *             guard region is then reported at the next switch.
 * A fault inside a guard is reported by the SIGSEGV handler (os_linux.c)
 * as a stack overflow naming the goroutine.
 *
 * Mapping an arena only reserves address space: a goroutine reserves a
 * stack when it is created but takes one only when it first runs, and
 * most queued goroutines never take a fresh slot (they run on the hottest
 * free stack).  Slots are prepared PREP_BATCH at a time, one batch ahead
 * of carving (from gort__stack_reserve, on the creating goroutine's path),
 * or when carving reaches an unprepared one, in two syscalls:
 * process_madvise on ourselves installs the batch's guards, then commits
 * the batch's top pages with MADV_POPULATE_WRITE (in a virtual machine a
 * first-touch page fault costs several times a batched populate's share
 * of one: bench/pagetouch measures both, docs/design.md gives figures).
 * Where process_madvise refuses (kernels before 6.13), each fresh slot is
 * prepared on its own with madvise/mprotect.
 *
 * Free stacks sit in per-P caches (hot) and in the pool's free list, a
 * stack (LIFO: the bottom is the coldest).  sysmon returns the pages of
 * stacks that have stayed on the free list for GORTDEBUG=stackidle ms
 * (default 5 s) to the OS with MADV_DONTNEED, all but the top page, up
 * to 512 a second, coldest first (gort__stack_scavenge).  A trimmed
 * stack is reused last-resort-first like any other; its pages fault in
 * again as it is used.
 *
 * Invariants:
 *   - pool.lock guards everything in `pool` (lock order: 6, below allglock).
 *   - Every slot is registered with Valgrind while allocated.
 */
#include "atomic.h"
#include "fatal.h"
#include "libc.h"
#include "lock_futex.h"
#include "san.h"
#include "sched.h"
#include "stack.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define GORT_HAVE_VALGRIND 1
#endif
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define GUARD_SIZE (16 * 1024)
#define ARENA_TARGET (8u << 20) /* 8 MiB of address space per arena */
#define STACK_CANARY 0x60a7ca4a12d5e3b1ull

size_t gort__stack_size = GORT_DEFAULT_STACK_SIZE;

struct arena {
    uintptr_t base;
    size_t size;
    uint32_t nslots, used;
    uint32_t ready;  /* slots [0, ready) guarded and committed in bulk */
    bool bulk;       /* bulk preparation works for this arena */
    struct arena *next;     /* all arenas */
    struct arena *nextroom; /* arenas with slots not carved yet */
};

/* Address space reserved for arenas (see arena_space_locked). */
struct region {
    uintptr_t base;
    size_t size;
    struct region *next;
};

struct freeslot {
    uintptr_t base;
    uint8_t guard;
    bool trimmed;    /* pages below the top returned to the OS */
    int64_t since;   /* when it came to the free list (coarse clock) */
};

static struct {
    gort_lock lock;
    struct arena *arenas;    /* every arena, newest first */
    struct arena *room;      /* arenas with uncarved slots */
    struct region *regions;  /* every region, newest first */
    uintptr_t region_next;   /* where the newest region's next arena goes */
    uintptr_t region_end;
    struct freeslot *free;   /* slots handed back by gort__stackfree */
    size_t nfree, capfree;
    size_t slot;             /* GUARD_SIZE + usable size, page aligned */
    size_t usable;
    int mode;                /* STACK_GUARD_* for new slots */
    long mprotect_budget;    /* MPROTECT guards left before CANARY */
    int pidfd;               /* for process_madvise on ourselves, or -1 */
    bool madvise_ok;         /* MADV_GUARD_INSTALL guards (probed) */
    int64_t navail;          /* slots on the free list + slots not carved */
    int64_t nreserved;       /* promised to stackless Gs; <= navail */
} pool = {.lock = GORT_LOCK_INIT(LOCKRANK_STACKPOOL)};

const char *gort__stack_guard_name(int guard)
{
    switch (guard) {
    case STACK_GUARD_MADVISE: return "madvise";
    case STACK_GUARD_MPROTECT: return "mprotect";
    case STACK_GUARD_CANARY: return "canary";
    default: return "none";
    }
}

static long read_max_map_count(void)
{
    long v = 65530; /* the kernel's default, if /proc is unreadable */
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 65530;
        fclose(f);
    }
    return v;
}

/* Does MADV_GUARD_INSTALL really guard?  Some environments accept the
 * advice and do nothing (qemu-user passes it through as a no-op), which
 * would leave stacks unguarded.  Probe a guarded page with write(2) from
 * it into a pipe: the kernel must refuse with EFAULT. */
static bool madvise_guard_works(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *mem = mmap(NULL, page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return false;
    bool works = false;
    int fds[2];
    if (madvise(mem, page, MADV_GUARD_INSTALL) == 0 &&
        gort__libc.pipe2(fds, 0) == 0) {
        ssize_t r = gort__libc.write(fds[1], mem, 1);
        works = r < 0 && errno == EFAULT;
        gort__libc.close(fds[0]);
        gort__libc.close(fds[1]);
    }
    munmap(mem, page);
    return works;
}

int gort__stackinit(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t usable = gort__stack_size;
    /* AddressSanitizer's redzones roughly triple frame sizes, in gort
     * built with it and in a program built with it alike. */
    if (usable == GORT_DEFAULT_STACK_SIZE && (gort__san & GORT_SAN_ASAN))
        usable *= 4;
    usable = (usable + page - 1) & ~(page - 1);
    memset(&pool, 0, sizeof pool);
    gort__lock_init(&pool.lock, LOCKRANK_STACKPOOL);
    pool.usable = usable;
    pool.slot = GUARD_SIZE + usable;
    pool.mode = gort__debug.stackguard >= 0 ? gort__debug.stackguard
                                            : STACK_GUARD_MADVISE;
    pool.mprotect_budget = read_max_map_count() / 4;
    /* Not under Valgrind, which knows neither pidfd_open nor
     * process_madvise (and warns on each call): each slot is then
     * prepared on its own. */
    pool.pidfd = gort__valgrind ? -1
                                : (int)syscall(SYS_pidfd_open, getpid(), 0);
    pool.madvise_ok = madvise_guard_works();
    if (pool.mode == STACK_GUARD_MADVISE && !pool.madvise_ok)
        pool.mode = STACK_GUARD_MPROTECT;
    return 0;
}

/* Apply advice to many ranges in one process_madvise call (Linux 6.13+
 * accepts any advice for the calling process).  True if all were done. */
static bool madvise_batch(struct iovec *iov, size_t n, int advice)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += iov[i].iov_len;
    while (n > 0) {
        size_t chunk = n < 1024 ? n : 1024; /* UIO_MAXIOV */
        ssize_t r = syscall(SYS_process_madvise, pool.pidfd, iov, chunk,
                            advice, 0);
        if (r < 0)
            return false;
        size_t want = 0;
        for (size_t i = 0; i < chunk; i++)
            want += iov[i].iov_len;
        if ((size_t)r != want)
            return false;
        iov += chunk;
        n -= chunk;
    }
    return total > 0;
}

/* Slots prepared together when the first of them is carved. */
#define PREP_BATCH 32

/* An arena's lowest guard (map_arena_locked).  Under the MPROTECT policy
 * an mprotect one too, so that no guard region lies in a readable
 * mapping: gdb's cores then hold every stack (arena_space_locked). */
static void lowest_guard(uintptr_t base)
{
    if (pool.mode == STACK_GUARD_MPROTECT || !pool.madvise_ok ||
        madvise((void *)base, GUARD_SIZE, MADV_GUARD_INSTALL) != 0)
        mprotect((void *)base, GUARD_SIZE, PROT_NONE);
}

/* Guard the next PREP_BATCH slots of an arena and commit their top pages
 * with two syscalls in all, instead of two per stack (~2 us each here).
 * On failure (older kernel) the arena's slots are prepared one by one
 * instead.  pool.lock held. */
static void prepare_batch(struct arena *a)
{
    struct iovec iov[PREP_BATCH];
    uint32_t first = a->ready;
    uint32_t n = a->nslots - first < PREP_BATCH ? a->nslots - first
                                                : PREP_BATCH;
    for (uint32_t i = 0; i < n; i++) {
        iov[i].iov_base = (void *)(a->base + (size_t)(first + i) * pool.slot);
        iov[i].iov_len = GUARD_SIZE;
    }
    if (!madvise_batch(iov, n, MADV_GUARD_INSTALL)) {
        a->bulk = false;
        if (first == 0)
            lowest_guard(a->base);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t top = a->base + (size_t)(first + i + 1) * pool.slot - 4096;
        iov[i].iov_base = (void *)top;
        iov[i].iov_len = 4096;
    }
    /* A failed populate costs only page faults later. */
    madvise_batch(iov, n, MADV_POPULATE_WRITE);
    a->ready = first + n;
}

/* Install the guard of a fresh slot; may downgrade pool.mode.  Called
 * without pool.lock (it is a syscall); the mode races are benign: a
 * losing thread merely tries one more madvise. */
static uint8_t install_guard(uintptr_t base)
{
    int mode = load_relaxed(&pool.mode);
    if (mode == STACK_GUARD_MADVISE) {
        if (madvise((void *)base, GUARD_SIZE, MADV_GUARD_INSTALL) == 0)
            return STACK_GUARD_MADVISE;
        store_relaxed(&pool.mode, STACK_GUARD_MPROTECT);
        mode = STACK_GUARD_MPROTECT;
    }
    if (mode == STACK_GUARD_MPROTECT) {
        if (xadd_relaxed(&pool.mprotect_budget, -1) >= 0 &&
            mprotect((void *)base, GUARD_SIZE, PROT_NONE) == 0)
            return STACK_GUARD_MPROTECT;
        store_relaxed(&pool.mode, STACK_GUARD_CANARY);
    }
    return STACK_GUARD_CANARY;
}

/*
 * Address space for an arena of size bytes, readable and writable.
 *
 * Arenas are carved upward from regions of REGION_TARGET bytes reserved
 * PROT_NONE, from the region's second page; the carved arenas merge into
 * one mapping, and the region's first page and uncarved rest, PROT_NONE,
 * fence it.  So no other mapping (allgs' reservation, a malloc heap, a
 * signal stack) ever merges with an arena: the kernel merges neighbouring
 * anonymous mappings of the same protection and flags, and a mapping that
 * holds guard regions (MADV_GUARD_INSTALL) cannot be read whole through
 * /proc/PID/mem or ptrace, so gdb's gcore, which copies a core section per
 * mapping, drops every such mapping entirely: it must hold stacks only.
 * The cost is about two mappings per region, never per arena or stack.
 *
 * NULL when no address space could be had.  pool.lock held.
 */
#define REGION_TARGET ((size_t)1 << 30)
#define FENCE 4096
static void *arena_space_locked(size_t size)
{
    gort__lock_assert_held(&pool.lock);
    if (pool.region_end - pool.region_next < size + FENCE) {
        size_t rsize = size + 2 * FENCE > REGION_TARGET ? size + 2 * FENCE
                                                        : REGION_TARGET;
        struct region *rg = gort__malloc(sizeof *rg);
        if (!rg)
            return NULL;
        void *r = mmap(NULL, rsize, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) {
            gort__free(rg);
            return NULL;
        }
        rg->base = (uintptr_t)r;
        rg->size = rsize;
        rg->next = pool.regions;
        pool.regions = rg;
        pool.region_next = (uintptr_t)r + FENCE;
        pool.region_end = (uintptr_t)r + rsize;
    }
    void *mem = (void *)pool.region_next;
    if (mprotect(mem, size, PROT_READ | PROT_WRITE) != 0)
        return NULL;
    pool.region_next += size;
    return mem;
}

/* Map (and prepare) a new arena; its slots become available.  pool.lock
 * held. */
static int map_arena_locked(void)
{
    gort__lock_assert_held(&pool.lock);
    uint32_t n = (uint32_t)(ARENA_TARGET / pool.slot);
    if (n == 0)
        n = 1;
    size_t size = (size_t)n * pool.slot;
    struct arena *a = gort__malloc(sizeof *a);
    if (!a)
        return -ENOMEM;
    void *mem = arena_space_locked(size);
    if (!mem) {
        gort__free(a);
        return -ENOMEM;
    }
    bool bulk = pool.pidfd >= 0 && pool.mode == STACK_GUARD_MADVISE;
    /* The lowest slot's guard is a real one whatever the policy: a
     * canary-guarded stack that overflows without end runs down through
     * the stacks below it and faults here, where the fault handler names
     * it, instead of writing on into whatever lies below the arena.  In
     * bulk mode prepare_batch installs it with the first batch's. */
    if (!bulk)
        lowest_guard((uintptr_t)mem);
    a->base = (uintptr_t)mem;
    a->size = size;
    a->nslots = n;
    a->used = 0;
    a->ready = 0;
    a->bulk = bulk;
    a->next = pool.arenas;
    pool.arenas = a;
    /* Behind the arena being carved, which stays the one carved (and
     * prepared ahead) until it is full. */
    if (pool.room) {
        a->nextroom = pool.room->nextroom;
        pool.room->nextroom = a;
    } else {
        a->nextroom = NULL;
        pool.room = a;
    }
    pool.navail += n;
    return 0;
}

/* Take a fresh slot from an arena with room (there is one whenever
 * navail exceeds the free list), preparing the next batch of the arena's
 * slots when it reaches them.  Returns 1 if the slot was prepared in
 * bulk, 0 if it still needs its guard.  pool.lock held. */
static int carve_locked(uintptr_t *base)
{
    gort__lock_assert_held(&pool.lock);
    struct arena *a = pool.room;
    if (!a)
        gort__throw("stack pool: no slot although %lld are available",
                    (long long)pool.navail);
    if (a->bulk && a->used == a->ready)
        prepare_batch(a);
    int prepared = a->bulk && a->used < a->ready;
    *base = a->base + (size_t)a->used++ * pool.slot;
    if (a->used == a->nslots)
        pool.room = a->nextroom;
    return prepared;
}

static void fill(struct gstack *st, uintptr_t base, uint8_t guard)
{
    uintptr_t offs = ((base / pool.slot) % 8) * 64;
    st->base = base;
    st->lo = base + GUARD_SIZE;
    st->hi = base + pool.slot - offs;
    st->guard = guard;
    if (guard == STACK_GUARD_CANARY)
        *(uint64_t *)st->lo = STACK_CANARY;
#ifdef GORT_HAVE_VALGRIND
    st->valgrind_id = VALGRIND_STACK_REGISTER(st->lo, st->hi);
#endif
}

/* Keep the arena being carved prepared a batch ahead of its carving.
 * Called on the creating goroutine's path (gort_go), so that taking a
 * fresh slot when a goroutine first runs, which may be under sched.lock
 * (a direct hand-off from the global queue), seldom makes the system
 * calls itself; and never more than a batch ahead, so that queued
 * goroutines that will run on hot stacks commit nothing.  pool.lock
 * held. */
static void prepare_ahead_locked(void)
{
    gort__lock_assert_held(&pool.lock);
    struct arena *a = pool.room;
    if (a && a->bulk && a->ready < a->nslots &&
        a->ready < a->used + PREP_BATCH)
        prepare_batch(a);
}

int gort__stack_reserve(int32_t n)
{
    gort__lock(&pool.lock);
    while (pool.navail - pool.nreserved < n) {
        if (map_arena_locked() != 0) {
            gort__unlock(&pool.lock);
            return -ENOMEM;
        }
    }
    pool.nreserved += n;
    prepare_ahead_locked();
    gort__unlock(&pool.lock);
    return 0;
}

void gort__stackunreserve(int32_t n)
{
    gort__lock(&pool.lock);
    pool.nreserved -= n;
    gort__unlock(&pool.lock);
}

/* Take one slot (free list first, then carving); the caller has done the
 * accounting.  Carved slots that still need a guard come back with guard
 * STACK_GUARD_NONE.  pool.lock held. */
static struct freeslot take_slot_locked(void)
{
    gort__lock_assert_held(&pool.lock);
    struct freeslot fs;
    if (pool.nfree > 0)
        return pool.free[--pool.nfree];
    uintptr_t base;
    int prepared = carve_locked(&base);
    fs.base = base;
    fs.guard = prepared ? STACK_GUARD_MADVISE : STACK_GUARD_NONE;
    return fs;
}

/* A slot taken without its guard yet (older kernels): guard it now. */
static void ready_slot(struct gstack *st, struct freeslot fs)
{
    if (fs.guard == STACK_GUARD_NONE) {
        struct m *mp = gort__libc_begin();
        fs.guard = install_guard(fs.base);
        uintptr_t top_page = (fs.base + pool.slot - 1) & ~(uintptr_t)4095;
        madvise((void *)top_page, 4096, MADV_POPULATE_WRITE);
        gort__libc_end(mp);
    }
    fill(st, fs.base, fs.guard);
}

void gort__stackcache_refill_reserved(struct stackcache *c, struct gstack *st)
{
    struct freeslot got[GORT_STACKCACHE / 2];
    uint32_t want = GORT_STACKCACHE / 2;
    if (want > GORT_STACKCACHE - c->n + 1)
        want = GORT_STACKCACHE - c->n + 1;
    gort__lock(&pool.lock);
    if (pool.nreserved <= 0 || pool.navail <= 0)
        gort__throw("stackalloc: no reservation (reserved %lld, available "
                    "%lld)", (long long)pool.nreserved,
                    (long long)pool.navail);
    pool.nreserved--; /* ours, consumed */
    pool.navail--;
    got[0] = take_slot_locked();
    uint32_t k = 1;
    /* Extras for the cache only from slack: never a slot that another
     * goroutine's reservation counts on. */
    while (k < want && pool.navail > pool.nreserved) {
        pool.navail--;
        got[k++] = take_slot_locked();
    }
    gort__unlock(&pool.lock);
    ready_slot(st, got[0]);
    for (uint32_t i = 1; i < k; i++) {
        struct gstack extra;
        ready_slot(&extra, got[i]);
        gort__stackcache_put(c, &extra);
    }
}

/* Undo fill's registrations before a slot goes back to the free list. */
static void unfill(struct gstack *st)
{
#ifdef GORT_HAVE_VALGRIND
    VALGRIND_STACK_DEREGISTER(st->valgrind_id);
#endif
    if (gort__san & GORT_SAN_ASAN)
        __asan_unpoison_memory_region((void *)st->lo, st->hi - st->lo);
}

void gort__stack_renew(struct gstack *st)
{
    /* Over the usable part only: the guard below lo (an madvise guard in
     * the page tables, or an mprotect mapping) is not touched.  The new
     * mapping has the arena's flags, so the kernel merges it back into
     * the arena's: no mapping is added. */
    uintptr_t end = st->base + pool.slot;
    struct m *mp = gort__libc_begin();
    void *p = mmap((void *)st->lo, end - st->lo, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
                   -1, 0);
    gort__libc_end(mp);
    if (p == MAP_FAILED)
        gort__throw("stack: cannot map fresh pages over a stack (%s)",
                    strerror(errno));
    if (st->guard == STACK_GUARD_CANARY)
        *(uint64_t *)st->lo = STACK_CANARY;
}

/* Make room for n more entries on the free list.  pool.lock held. */
static bool free_reserve_locked(size_t n)
{
    gort__lock_assert_held(&pool.lock);
    if (pool.nfree + n <= pool.capfree)
        return true;
    size_t cap = pool.capfree ? pool.capfree : 64;
    while (cap < pool.nfree + n)
        cap *= 2;
    struct freeslot *nf = gort__realloc(pool.free, cap * sizeof *nf);
    if (!nf)
        return false;
    pool.free = nf;
    pool.capfree = cap;
    return true;
}

void gort__stackfree(struct gstack *st)
{
    if (!st->base)
        return;
    unfill(st);
    gort__lock(&pool.lock);
    if (free_reserve_locked(1)) {
        pool.free[pool.nfree].base = st->base;
        pool.free[pool.nfree].guard = st->guard;
        pool.free[pool.nfree].trimmed = false;
        pool.free[pool.nfree].since = load_relaxed(&gort__sched.coarsenow);
        pool.nfree++;
        pool.navail++;
    }
    /* else: the slot stays out of circulation; it is unmapped with its
     * arena at shutdown. */
    gort__unlock(&pool.lock);
    memset(st, 0, sizeof *st);
}

/* ---------------------------------------------------------------------------
 * Per-P stack caches and reservations.
 *
 * Creating a goroutine reserves a stack (so that gort_go can report
 * -ENOMEM) but does not take one: Ps reserve in batches from the pool's
 * count of available slots, mapping arenas as needed.  When the goroutine
 * first runs, it takes the top of the running P's cache: the stack the
 * last goroutine to exit on this P ran on, still in the CPU caches (its
 * reservation then returns to that P's batch).  Only when the cache is
 * empty does it take a slot from the pool.  A goroutine that exits gives
 * its stack back to the top of its P's cache; a full cache spills its
 * coldest half to the pool.  So a stream of short goroutines runs on a
 * handful of hot stacks however many are queued, and no stack moves
 * between caches and pool while a P's creations and exits balance.
 *
 * Invariant: pool.nreserved <= pool.navail (slots on the free list plus
 * slots not yet carved), so a reserved goroutine always finds a slot.
 * ------------------------------------------------------------------------- */

#define SC_MASK (GORT_STACKCACHE - 1)
#define SC_BATCH (GORT_STACKCACHE / 2)

/* Move the coldest half to the global pool, in one lock hold. */
static void sc_spill(struct stackcache *c)
{
    uint32_t n = c->n < SC_BATCH ? c->n : SC_BATCH;
    gort__lock(&pool.lock);
    if (!free_reserve_locked(n)) {
        /* No memory to grow the free list: free them one by one (each
         * kept out of circulation if that fails too). */
        gort__unlock(&pool.lock);
        for (uint32_t i = 0; i < n; i++) {
            gort__stackfree(&c->s[c->bottom]);
            c->bottom = (c->bottom + 1) & SC_MASK;
            c->n--;
        }
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        struct gstack *st = &c->s[c->bottom];
        unfill(st);
        pool.free[pool.nfree].base = st->base;
        pool.free[pool.nfree].guard = st->guard;
        pool.free[pool.nfree].trimmed = false;
        pool.free[pool.nfree].since = load_relaxed(&gort__sched.coarsenow);
        pool.nfree++;
        pool.navail++;
        c->bottom = (c->bottom + 1) & SC_MASK;
        c->n--;
    }
    gort__unlock(&pool.lock);
}

int gort__stackcache_get(struct stackcache *c, struct gstack *st)
{
    if (c->n == 0)
        return -1;
    c->n--;
    *st = c->s[(c->bottom + c->n) & SC_MASK];
    return 0;
}

void gort__stackcache_put(struct stackcache *c, const struct gstack *st)
{
    if (c->n == GORT_STACKCACHE)
        sc_spill(c);
    c->s[(c->bottom + c->n) & SC_MASK] = *st;
    c->n++;
}

void gort__stackcache_flush(struct stackcache *c)
{
    while (c->n > 0)
        sc_spill(c);
    c->bottom = 0;
}

/* At most SCAVENGE_MAX stacks a pass (a pass a second: about 1% of a CPU
 * at 10-20 us a madvise), the lock dropped every SCAVENGE_CHUNK so that
 * stack allocation never waits long behind it. */
#define SCAVENGE_MAX 512
#define SCAVENGE_CHUNK 16

int gort__stack_scavenge(int64_t now, int64_t *next)
{
    int64_t idle = (int64_t)gort__debug.stackidle * 1000000;
    int n = 0;
    size_t i = 0;
    *next = 0;
    while (n < SCAVENGE_MAX) {
        int chunk = 0;
        bool more = true;
        gort__lock(&pool.lock);
        /* The coldest first.  Under the lock: a slot being trimmed must
         * not be handed out.  The bottom of the list only changes by
         * appends above it, so i stays meaningful across chunks (a slot
         * taken meanwhile only makes us skip one). */
        for (; i < pool.nfree && chunk < SCAVENGE_CHUNK; i++) {
            struct freeslot *fs = &pool.free[i];
            if (fs->since + idle > now) {
                more = false; /* the ones above are younger still */
                *next = fs->since + idle;
                break;
            }
            if (fs->trimmed)
                continue;
            uintptr_t lo = fs->base + GUARD_SIZE;
            uintptr_t top = (fs->base + pool.slot - 1) & ~(uintptr_t)4095;
            if (top > lo)
                madvise((void *)lo, top - lo, MADV_DONTNEED);
            fs->trimmed = true;
            chunk++;
        }
        if (i >= pool.nfree)
            more = false;
        gort__unlock(&pool.lock);
        n += chunk;
        if (!more || chunk == 0)
            break;
    }
    /* Stopped at the batch's limit with more due: the next batch in a
     * second (the rate sysmon calls at). */
    if (n >= SCAVENGE_MAX)
        *next = now + 1000 * 1000 * 1000;
    return n;
}

void gort__stackfini(void)
{
    struct arena *a = pool.arenas;
    while (a) {
        struct arena *next = a->next;
        gort__free(a);
        a = next;
    }
    /* The arenas lie in the regions. */
    struct region *rg = pool.regions;
    while (rg) {
        struct region *next = rg->next;
        munmap((void *)rg->base, rg->size);
        gort__free(rg);
        rg = next;
    }
    gort__free(pool.free);
    if (pool.pidfd >= 0)
        gort__libc.close(pool.pidfd);
    memset(&pool, 0, sizeof pool);
    gort__lock_init(&pool.lock, LOCKRANK_STACKPOOL);
}

bool gort__stack_canary_ok(uintptr_t lo)
{
    return gort__peek(lo) == STACK_CANARY;
}

void gort__stack_check_canary(struct g *gp)
{
    if (!gort__stack_canary_ok(gp->stack.lo))
        gort__fatal("stack overflow in goroutine %lld (canary at %p "
                    "overwritten; raise GORTSTACKSIZE)",
                    (long long)gp->goid, (void *)gp->stack.lo);
}

void gort__stack_overflow_running(struct g *gp)
{
    gort__fatal("stack overflow in goroutine %lld (canary at %p "
                "overwritten, found while it runs; raise GORTSTACKSIZE)",
                (long long)gp->goid, (void *)gp->stack.lo);
}

bool gort__stack_is_guard(struct g *gp, uintptr_t addr)
{
    return gp->stack.base && addr >= gp->stack.base && addr < gp->stack.lo;
}

int gort_set_stack_size(size_t size)
{
    if (size < GORT_MIN_STACK_SIZE || size > ((size_t)1 << 30))
        return -EINVAL;
    if (load_relaxed(&gort__main_started))
        return -EBUSY;
    gort__stack_size = size;
    return 0;
}
