/* SPDX-License-Identifier: MIT */
/*
 * soak_cpu.c - computation, stacks, goroutine churn and GOMAXPROCS under
 * the soak.
 *
 *   spin        integer chunks of about 20 ms with no call at all (not to
 *               gort, not to libc): only the preemption signal can take
 *               their P.  Each chunk's result must equal the one computed
 *               before gort_main started, on a thread gort never touched.
 *   vector      the same with floating-point vectors (eight 32-byte
 *               vectors live across the loop; on x86-64 also an AVX2+FMA
 *               version when the CPU has it): every bit of the result must
 *               match, so a register the preemption lost shows.  A chunk in
 *               ten runs between gort_preempt_disable and _enable.
 *   recurse     recursion down to most of the goroutine stack (256-byte
 *               frames filled with a pattern, checked on the way back), a
 *               yield, sleep or long computation at the bottom; in the
 *               worker itself or in a new goroutine
 *   spawn       storms of 100 to 5000 short goroutines: plain, yielding,
 *               sleeping, starting a child, or ending by gort_goexit from a
 *               nested call after three gort_defer handlers (which must run
 *               last registered first); each must run once and its
 *               gort_goid must be the id gort_go returned
 *   gomaxprocs  sets GOMAXPROCS to 1..4 every 0.1-2 s (not with
 *               -fixedprocs): the previous value must be the one it set
 *
 * Without asynchronous preemption (ThreadSanitizer, asyncpreemptoff=1) the
 * CPU workers yield between chunks, or they would hold their P for good.
 */
#include "soak.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------
 * Reference results, computed before gort_main.
 * ------------------------------------------------------------------------- */

#define CPU_SETS 4      /* parameter sets; each chunk picks one */
#define VEC_WORDS 32    /* doubles in the vector state: 8 vectors of 4 */
#define CHUNK_NS (20 * SOAK_MS) /* two preemption periods of 10 ms */

enum { VEC_GENERIC, VEC_AVX2, VEC_VARIANTS };

static struct {
    uint64_t spin_seed[CPU_SETS];
    uint64_t spin_ref[CPU_SETS];
    uint64_t spin_n;            /* iterations per spin chunk */
    double vec_seed[CPU_SETS][VEC_WORDS];
    double vec_ref[VEC_VARIANTS][CPU_SETS][VEC_WORDS];
    uint64_t vec_n;             /* iterations per vector chunk */
    bool avx2;                  /* the CPU runs the AVX2+FMA variant */
} cpu;

/* A chain of integer operations the compiler cannot shorten: four
 * accumulators in registers for n steps. */
__attribute__((noinline)) static uint64_t spin_chunk(uint64_t seed,
                                                     uint64_t n)
{
    uint64_t a = seed | 1, b = seed * 3 + 1, c = ~seed, d = seed ^ 0x1234;
    for (uint64_t i = 0; i < n; i++) {
        a ^= a << 13;
        a ^= a >> 7;
        a ^= a << 17;
        b += a * (c | 1);
        c ^= b >> 11 | b << 53;
        d += c ^ i;
    }
    return a ^ b ^ c ^ d;
}

typedef double v4d __attribute__((vector_size(32)));

/* Eight vectors each pulled toward its neighbour and a constant: bounded,
 * and every lane changes at every step.  The same body is compiled for
 * each instruction set; a variant is compared only with itself. */
#define VEC_BODY                                                               \
    v4d x[8];                                                                  \
    memcpy(x, seed, sizeof x);                                                 \
    const v4d c = {0.999, 0.998, 0.997, 0.996}, e = {1e-3, 2e-3, 3e-3, 4e-3}, \
              k = {0.5, 0.25, 0.125, 0.0625};                                  \
    for (uint64_t i = 0; i < n; i++) {                                         \
        v4d first = x[0];                                                      \
        x[0] = x[0] * c + x[1] * e + k;                                        \
        x[1] = x[1] * c + x[2] * e - k;                                        \
        x[2] = x[2] * c + x[3] * e + k;                                        \
        x[3] = x[3] * c + x[4] * e - k;                                        \
        x[4] = x[4] * c + x[5] * e + k;                                        \
        x[5] = x[5] * c + x[6] * e - k;                                        \
        x[6] = x[6] * c + x[7] * e + k;                                        \
        x[7] = x[7] * c + first * e - k;                                       \
    }                                                                          \
    memcpy(out, x, sizeof x);

__attribute__((noinline)) static void vec_generic(const double *seed,
                                                  uint64_t n, double *out)
{
    VEC_BODY
}

#if defined(__x86_64__)
__attribute__((noinline, target("avx2,fma"))) static void
vec_avx2(const double *seed, uint64_t n, double *out)
{
    VEC_BODY
}
#endif

static void vec_chunk(int variant, const double *seed, uint64_t n,
                      double *out)
{
#if defined(__x86_64__)
    if (variant == VEC_AVX2) {
        vec_avx2(seed, n, out);
        return;
    }
#endif
    vec_generic(seed, n, out);
}

static int64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SOAK_S + ts.tv_nsec;
}

/* Iterations of f that take about CHUNK_NS here. */
static uint64_t calibrate(void (*f)(uint64_t n))
{
    uint64_t n = 1 << 16;
    for (;;) {
        int64_t t0 = clock_ns();
        f(n);
        int64_t ns = clock_ns() - t0;
        if (ns >= 2 * SOAK_MS || n >= (1ULL << 34))
            return n * (uint64_t)CHUNK_NS / (uint64_t)(ns > 0 ? ns : 1) + 1;
        n *= 4;
    }
}

static uint64_t spin_sink;
static void spin_probe(uint64_t n)
{
    __atomic_store_n(&spin_sink, spin_chunk(n, n), __ATOMIC_RELAXED);
}

static void vec_probe(uint64_t n)
{
    double out[VEC_WORDS];
    vec_generic(cpu.vec_seed[0], n, out);
    __atomic_store_n(&spin_sink, (uint64_t)out[0], __ATOMIC_RELAXED);
}

void soak_cpu_init(void)
{
    uint64_t s = soak_mix(soak_opts.seed ^ 0xc0ffee);
    for (int i = 0; i < CPU_SETS; i++) {
        cpu.spin_seed[i] = s = soak_mix(s);
        for (int j = 0; j < VEC_WORDS; j++)
            cpu.vec_seed[i][j] =
                (double)((s = soak_mix(s)) % 2001) / 1000.0 - 1.0;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    cpu.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    cpu.spin_n = calibrate(spin_probe);
    cpu.vec_n = calibrate(vec_probe);
    for (int i = 0; i < CPU_SETS; i++) {
        cpu.spin_ref[i] = spin_chunk(cpu.spin_seed[i], cpu.spin_n);
        for (int v = 0; v < VEC_VARIANTS; v++)
            if (v == VEC_GENERIC || cpu.avx2)
                vec_chunk(v, cpu.vec_seed[i], cpu.vec_n, cpu.vec_ref[v][i]);
    }
}

/* After a chunk: count it, and yield when nothing else would take the P. */
static void chunk_done(struct soak_worker *w)
{
    soak_count(&soak_stats.preempt_chunks, 1);
    soak_progress(w);
    if (!soak_opts.async_preempt)
        gort_gosched();
}

/* ---------------------------------------------------------------------------
 * spin, vector
 * ------------------------------------------------------------------------- */

void soak_spin(struct soak_worker *w)
{
    while (soak_running()) {
        int set = (int)(soak_rand(w) % CPU_SETS);
        uint64_t got = spin_chunk(cpu.spin_seed[set], cpu.spin_n);
        if (got != cpu.spin_ref[set])
            soak_fail(w, "integer chunk %d (%llu steps) gave %#llx, want "
                         "%#llx",
                      set, (unsigned long long)cpu.spin_n,
                      (unsigned long long)got,
                      (unsigned long long)cpu.spin_ref[set]);
        chunk_done(w);
    }
}

static void vec_check(struct soak_worker *w, int variant, int set,
                      const double *got, bool nopreempt)
{
    const double *want = cpu.vec_ref[variant][set];
    for (int j = 0; j < VEC_WORDS; j++)
        if (memcmp(&got[j], &want[j], sizeof got[j]) != 0)
            soak_fail(w, "vector chunk %d (%s%s) word %d is %.17g, want "
                         "%.17g",
                      set, variant == VEC_AVX2 ? "AVX2+FMA" : "generic",
                      nopreempt ? ", preemption disabled" : "", j, got[j],
                      want[j]);
}

void soak_vector(struct soak_worker *w)
{
    double out[VEC_WORDS];
    while (soak_running()) {
        int set = (int)(soak_rand(w) % CPU_SETS);
        int variant = cpu.avx2 && soak_one_in(w, 2) ? VEC_AVX2 : VEC_GENERIC;
        bool nopreempt = soak_one_in(w, 10);
        if (nopreempt)
            gort_preempt_disable();
        vec_chunk(variant, cpu.vec_seed[set], cpu.vec_n, out);
        if (nopreempt)
            gort_preempt_enable();
        vec_check(w, variant, set, out, nopreempt);
        chunk_done(w);
    }
}

/* ---------------------------------------------------------------------------
 * recurse
 * ------------------------------------------------------------------------- */

#define REC_WORDS 32 /* 256 bytes of pattern per frame */
/* Stack left unused below the deepest frame: what gort's calls at the
 * bottom need, more under the sanitizers' larger frames. */
#define REC_RESERVE ((SOAK_SANITIZED ? 24 : 16) * 1024)

struct rec_ctx {
    struct soak_worker *w;
    uintptr_t top;      /* frame address where the recursion started */
    size_t target;      /* bytes of stack to use below top */
    uint64_t salt;
    int bottom_action;  /* what to do at the bottom */
    int depth;          /* the deepest level reached */
    gort_chan *done;    /* a child goroutine reports here */
};

static uint64_t rec_word(const struct rec_ctx *c, int depth, int i)
{
    uint64_t at = (uint64_t)depth << 20 | (uint64_t)i;
    return c->salt ^ at * 0x9e3779b97f4a7c15ULL;
}

/* At the deepest frame: switch away, sleep, or compute for longer than a
 * preemption period (preemption is deferred there: too little stack left
 * for the signal's frames, so it lands higher up on the way back). */
static void rec_bottom(struct rec_ctx *c)
{
    switch (c->bottom_action) {
    case 0:
        gort_gosched();
        break;
    case 1:
        gort_sleep((int64_t)(c->salt % SOAK_MS));
        break;
    case 2:
        __atomic_store_n(&spin_sink, spin_chunk(c->salt, cpu.spin_n / 2),
                         __ATOMIC_RELAXED);
        break;
    default:
        break;
    }
}

__attribute__((noinline)) static uint64_t rec_down(struct rec_ctx *c,
                                                   int depth)
{
    volatile uint64_t frame[REC_WORDS];
    for (int i = 0; i < REC_WORDS; i++)
        frame[i] = rec_word(c, depth, i);
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uint64_t below;
    if (c->top - fp < c->target) {
        below = rec_down(c, depth + 1);
    } else {
        c->depth = depth;
        rec_bottom(c);
        below = 0;
    }
    uint64_t sum = below;
    for (int i = 0; i < REC_WORDS; i++) {
        if (frame[i] != rec_word(c, depth, i))
            soak_fail(c->w, "frame %d of %d, word %d: %#llx, want %#llx "
                            "(%zu bytes of stack in use)",
                      depth, c->depth, i, (unsigned long long)frame[i],
                      (unsigned long long)rec_word(c, depth, i),
                      (size_t)(c->top - fp));
        sum += frame[i];
    }
    return sum;
}

/* The sum rec_down must return for depths 0..c->depth. */
static uint64_t rec_sum(const struct rec_ctx *c)
{
    uint64_t sum = 0;
    for (int d = 0; d <= c->depth; d++)
        for (int i = 0; i < REC_WORDS; i++)
            sum += rec_word(c, d, i);
    return sum;
}

__attribute__((noinline)) static void rec_run(struct rec_ctx *c)
{
    c->top = (uintptr_t)__builtin_frame_address(0);
    uint64_t got = rec_down(c, 0);
    if (got != rec_sum(c))
        soak_fail(c->w, "recursion to depth %d returned %#llx, want %#llx",
                  c->depth, (unsigned long long)got,
                  (unsigned long long)rec_sum(c));
}

static void rec_child(void *arg)
{
    struct rec_ctx *c = arg;
    rec_run(c);
    gort_chan_send(c->done, NULL);
}

void soak_recurse(struct soak_worker *w)
{
    size_t usable = soak_opts.stack - REC_RESERVE;
    struct rec_ctx c = {.w = w};
    c.done = soak_chan_make(w, 0, 0);
    while (soak_running()) {
        c.target = usable * (size_t)soak_between(w, 40, 100) / 100;
        c.salt = soak_rand(w);
        c.bottom_action = (int)(soak_rand(w) % 4);
        if (soak_one_in(w, 2)) {
            rec_run(&c);
        } else {
            soak_go(w, rec_child, &c);
            gort_chan_recv(c.done, NULL);
        }
        soak_progress(w);
    }
    soak_chan_free(w, c.done);
}

/* ---------------------------------------------------------------------------
 * spawn
 * ------------------------------------------------------------------------- */

#define SPAWN_MAX (SOAK_TSAN ? 300 : SOAK_SANITIZED ? 2000 : 5000)

enum { SP_PLAIN, SP_YIELD, SP_SLEEP, SP_CHILD, SP_GOEXIT, SP_KINDS };

struct storm;

struct storm_g {
    struct storm *s;
    int kind;          /* SP_* */
    int64_t id_ret;    /* what gort_go returned, written by the spawner */
    int64_t id_seen;   /* gort_goid() inside, written by the goroutine */
    int order[3];      /* the defer handlers, in the order they ran */
    int norder;
};

struct storm {
    struct soak_worker *w;
    int64_t ran;       /* goroutines that ran (relaxed atomics) */
    gort_waitgroup wg;
};

static void storm_leaf(void *arg)
{
    struct storm *s = arg;
    soak_check_thread(s->w);
    __atomic_add_fetch(&s->ran, 1, __ATOMIC_RELAXED);
    soak_step(s->w);
    gort_waitgroup_done(&s->wg);
}

/* The defer handlers: each records itself; the last to run (registered
 * first) checks the order and ends the goroutine's part. */
static void defer_note(struct storm_g *g, int which)
{
    if (g->norder < 3)
        g->order[g->norder] = which;
    g->norder++;
}

static void defer_3(void *arg) { defer_note(arg, 3); }
static void defer_2(void *arg) { defer_note(arg, 2); }

static void defer_1(void *arg)
{
    struct storm_g *g = arg;
    defer_note(g, 1);
    if (g->norder != 3 || g->order[0] != 3 || g->order[1] != 2 ||
        g->order[2] != 1)
        soak_fail(g->s->w, "defer handlers ran %d times, in the order %d %d "
                           "%d (want 3 2 1)",
                  g->norder, g->order[0], g->order[1], g->order[2]);
    storm_leaf(g->s);
}

/* gort_goexit from two calls down, so that it unwinds through frames. */
__attribute__((noinline)) static void storm_exit_inner(struct storm_g *g)
{
    g->norder = 0;
    gort_goexit();
}

__attribute__((noinline)) static void storm_exit_outer(struct storm_g *g)
{
    storm_exit_inner(g);
    soak_fail(g->s->w, "gort_goexit returned");
}

static void storm_g(void *arg)
{
    struct storm_g *g = arg;
    g->id_seen = gort_goid();
    switch (g->kind) {
    case SP_YIELD:
        gort_gosched();
        break;
    case SP_SLEEP:
        gort_sleep((int64_t)((uintptr_t)g % SOAK_MS));
        break;
    case SP_CHILD:
        gort_waitgroup_add(&g->s->wg, 1);
        soak_go(g->s->w, storm_leaf, g->s);
        break;
    case SP_GOEXIT:
        if (gort_defer(defer_1, g) || gort_defer(defer_2, g) ||
            gort_defer(defer_3, g))
            soak_fail(g->s->w, "gort_defer failed");
        storm_exit_outer(g);
    }
    storm_leaf(g->s);
}

static void storm_check(struct soak_worker *w, struct storm *s,
                        struct storm_g *gs, int n)
{
    int64_t want = n;
    for (int i = 0; i < n; i++) {
        want += gs[i].kind == SP_CHILD;
        if (gs[i].id_seen != gs[i].id_ret)
            soak_fail(w, "goroutine %d of a storm: gort_goid %lld, gort_go "
                         "returned %lld",
                      i, (long long)gs[i].id_seen, (long long)gs[i].id_ret);
    }
    if (s->ran != want)
        soak_fail(w, "%lld goroutines of a storm ran, want %lld",
                  (long long)s->ran, (long long)want);
}

void soak_spawn(struct soak_worker *w)
{
    struct storm_g *gs = soak_alloc(w, sizeof *gs * SPAWN_MAX);
    struct storm s = {.w = w};
    while (soak_running()) {
        int n = (int)soak_between(w, 100, SPAWN_MAX);
        s.ran = 0;
        memset(gs, 0, sizeof *gs * (size_t)n);
        gort_waitgroup_add(&s.wg, n);
        for (int i = 0; i < n; i++) {
            gs[i].s = &s;
            gs[i].kind = (int)(soak_rand(w) % SP_KINDS);
            gs[i].id_ret = gort_go(storm_g, &gs[i]);
            if (gs[i].id_ret <= 0)
                soak_fail(w, "gort_go returned %lld", (long long)gs[i].id_ret);
        }
        soak_count(&soak_stats.spawned, (uint64_t)n);
        gort_waitgroup_wait(&s.wg);
        storm_check(w, &s, gs, n);
        soak_progress(w);
    }
    free(gs);
}

/* ---------------------------------------------------------------------------
 * gomaxprocs
 * ------------------------------------------------------------------------- */

void soak_gomaxprocs(struct soak_worker *w)
{
    int cur = gort_gomaxprocs(0);
    while (soak_running()) {
        soak_nap(soak_between(w, 100 * SOAK_MS, 2 * SOAK_S));
        int n = (int)soak_between(w, 1, 4);
        int prev = gort_gomaxprocs(n);
        if (prev != cur)
            soak_fail(w, "gort_gomaxprocs(%d) returned %d, the value set "
                         "before was %d",
                      n, prev, cur);
        int now = gort_gomaxprocs(0);
        if (now != n)
            soak_fail(w, "GOMAXPROCS is %d right after it was set to %d",
                      now, n);
        cur = n;
        soak_count(&soak_stats.procs_changes, 1);
        soak_progress(w);
    }
}
