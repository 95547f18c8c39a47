/* SPDX-License-Identifier: MIT */
/*
 * test_ctx.c - the context switch alone (src/arch/<arch>.S): no scheduler,
 * no threads, just gort__ctx_make and gort__ctx_switch on mmap'd stacks.
 */
#include "internal.h"
#include "test.h"

#include <fenv.h>
#include <float.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Stacks: mmap'd with an inaccessible guard page below.
 * ---------------------------------------------------------------------- */

struct tstack {
    char *base; /* mapping, guard page first */
    size_t len;
    char *lo, *hi; /* usable [lo, hi) */
};

static void tstack_alloc(struct tstack *s, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) & ~(page - 1);
    s->len = size + page;
    s->base = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    CHECK(s->base != MAP_FAILED);
    CHECK(mprotect(s->base, page, PROT_NONE) == 0);
    s->lo = s->base + page;
    s->hi = s->base + s->len;
}

static void tstack_free(struct tstack *s)
{
    CHECK(munmap(s->base, s->len) == 0);
}

#define STACK_SIZE (256 * 1024)

/* Hide a value's origin from the optimiser (so that, e.g., the alignment
 * of a local's address is tested, not assumed). */
static inline uintptr_t launder(uintptr_t v)
{
    __asm__ volatile("" : "+r"(v));
    return v;
}

/* ------------------------------------------------------------------------
 * Assembly helpers.
 *
 * ctx_test_fill_switch(save, to, arg, regs) loads every callee-saved
 * register from regs[0..NREGS), calls gort__ctx_switch(save, to, arg) and
 * stores what the registers hold when it returns into regs[NREGS..2*NREGS).
 *
 * ctx_test_clobber_switch(save, to, arg) loads garbage (derived from arg)
 * into every callee-saved register and calls gort__ctx_switch.
 *
 * Both preserve the callee-saved registers for their own callers.
 *
 * ctx_test_caller_sp() returns the stack pointer of its caller at the call.
 * ---------------------------------------------------------------------- */

#define HIDDEN __attribute__((visibility("hidden")))
HIDDEN void *ctx_test_fill_switch(void **save, void *to, void *arg,
                                  uint64_t *regs);
HIDDEN void *ctx_test_clobber_switch(void **save, void *to, void *arg);
HIDDEN uintptr_t ctx_test_caller_sp(void);

#if defined(__x86_64__)
/* rbx, rbp, r12, r13, r14, r15 */
#define NREGS 6
#define NGPRS 6
__asm__(
    "        .text\n"
    "        .globl  ctx_test_fill_switch\n"
    "        .hidden ctx_test_fill_switch\n"
    "        .type   ctx_test_fill_switch, @function\n"
    "        .p2align 4\n"
    "ctx_test_fill_switch:\n"
    "        pushq   %rbp\n"
    "        pushq   %rbx\n"
    "        pushq   %r12\n"
    "        pushq   %r13\n"
    "        pushq   %r14\n"
    "        pushq   %r15\n"
    "        pushq   %rcx\n" /* regs; rsp is now 16-aligned for the call */
    "        movq    0(%rcx), %rbx\n"
    "        movq    8(%rcx), %rbp\n"
    "        movq    16(%rcx), %r12\n"
    "        movq    24(%rcx), %r13\n"
    "        movq    32(%rcx), %r14\n"
    "        movq    40(%rcx), %r15\n"
    "        call    gort__ctx_switch@PLT\n"
    "        popq    %rcx\n"
    "        movq    %rbx, 48(%rcx)\n"
    "        movq    %rbp, 56(%rcx)\n"
    "        movq    %r12, 64(%rcx)\n"
    "        movq    %r13, 72(%rcx)\n"
    "        movq    %r14, 80(%rcx)\n"
    "        movq    %r15, 88(%rcx)\n"
    "        popq    %r15\n"
    "        popq    %r14\n"
    "        popq    %r13\n"
    "        popq    %r12\n"
    "        popq    %rbx\n"
    "        popq    %rbp\n"
    "        ret\n"
    "        .size   ctx_test_fill_switch, .-ctx_test_fill_switch\n"
    "\n"
    "        .globl  ctx_test_clobber_switch\n"
    "        .hidden ctx_test_clobber_switch\n"
    "        .type   ctx_test_clobber_switch, @function\n"
    "        .p2align 4\n"
    "ctx_test_clobber_switch:\n"
    "        pushq   %rbp\n"
    "        pushq   %rbx\n"
    "        pushq   %r12\n"
    "        pushq   %r13\n"
    "        pushq   %r14\n"
    "        pushq   %r15\n"
    "        subq    $8, %rsp\n"
    "        movq    %rdx, %rbx\n"
    "        notq    %rbx\n"
    "        movq    %rbx, %rbp\n"
    "        rolq    $8, %rbp\n"
    "        movq    %rbx, %r12\n"
    "        rolq    $16, %r12\n"
    "        movq    %rbx, %r13\n"
    "        rolq    $24, %r13\n"
    "        movq    %rbx, %r14\n"
    "        rolq    $32, %r14\n"
    "        movq    %rbx, %r15\n"
    "        rolq    $40, %r15\n"
    "        call    gort__ctx_switch@PLT\n"
    "        addq    $8, %rsp\n"
    "        popq    %r15\n"
    "        popq    %r14\n"
    "        popq    %r13\n"
    "        popq    %r12\n"
    "        popq    %rbx\n"
    "        popq    %rbp\n"
    "        ret\n"
    "        .size   ctx_test_clobber_switch, .-ctx_test_clobber_switch\n"
    "\n"
    "        .globl  ctx_test_caller_sp\n"
    "        .hidden ctx_test_caller_sp\n"
    "        .type   ctx_test_caller_sp, @function\n"
    "ctx_test_caller_sp:\n"
    "        leaq    8(%rsp), %rax\n"
    "        ret\n"
    "        .size   ctx_test_caller_sp, .-ctx_test_caller_sp\n");
#elif defined(__aarch64__)
/* x19-x28, d8-d15, x29 */
#define NREGS 19
#define NGPRS 10
__asm__(
    "        .text\n"
    "        .globl  ctx_test_fill_switch\n"
    "        .hidden ctx_test_fill_switch\n"
    "        .type   ctx_test_fill_switch, %function\n"
    "        .p2align 2\n"
    "ctx_test_fill_switch:\n"
    "        stp     x29, x30, [sp, #-176]!\n"
    "        mov     x29, sp\n"
    "        stp     x19, x20, [sp, #16]\n"
    "        stp     x21, x22, [sp, #32]\n"
    "        stp     x23, x24, [sp, #48]\n"
    "        stp     x25, x26, [sp, #64]\n"
    "        stp     x27, x28, [sp, #80]\n"
    "        stp     d8, d9, [sp, #96]\n"
    "        stp     d10, d11, [sp, #112]\n"
    "        stp     d12, d13, [sp, #128]\n"
    "        stp     d14, d15, [sp, #144]\n"
    "        str     x3, [sp, #160]\n"
    "        ldp     x19, x20, [x3, #0]\n"
    "        ldp     x21, x22, [x3, #16]\n"
    "        ldp     x23, x24, [x3, #32]\n"
    "        ldp     x25, x26, [x3, #48]\n"
    "        ldp     x27, x28, [x3, #64]\n"
    "        ldp     d8, d9, [x3, #80]\n"
    "        ldp     d10, d11, [x3, #96]\n"
    "        ldp     d12, d13, [x3, #112]\n"
    "        ldp     d14, d15, [x3, #128]\n"
    "        ldr     x29, [x3, #144]\n"
    "        bl      gort__ctx_switch\n"
    "        ldr     x3, [sp, #160]\n"
    "        stp     x19, x20, [x3, #152]\n"
    "        stp     x21, x22, [x3, #168]\n"
    "        stp     x23, x24, [x3, #184]\n"
    "        stp     x25, x26, [x3, #200]\n"
    "        stp     x27, x28, [x3, #216]\n"
    "        stp     d8, d9, [x3, #232]\n"
    "        stp     d10, d11, [x3, #248]\n"
    "        stp     d12, d13, [x3, #264]\n"
    "        stp     d14, d15, [x3, #280]\n"
    "        str     x29, [x3, #296]\n"
    "        ldp     x19, x20, [sp, #16]\n"
    "        ldp     x21, x22, [sp, #32]\n"
    "        ldp     x23, x24, [sp, #48]\n"
    "        ldp     x25, x26, [sp, #64]\n"
    "        ldp     x27, x28, [sp, #80]\n"
    "        ldp     d8, d9, [sp, #96]\n"
    "        ldp     d10, d11, [sp, #112]\n"
    "        ldp     d12, d13, [sp, #128]\n"
    "        ldp     d14, d15, [sp, #144]\n"
    "        ldp     x29, x30, [sp], #176\n"
    "        ret\n"
    "        .size   ctx_test_fill_switch, .-ctx_test_fill_switch\n"
    "\n"
    "        .globl  ctx_test_clobber_switch\n"
    "        .hidden ctx_test_clobber_switch\n"
    "        .type   ctx_test_clobber_switch, %function\n"
    "        .p2align 2\n"
    "ctx_test_clobber_switch:\n"
    "        stp     x29, x30, [sp, #-160]!\n"
    "        mov     x29, sp\n"
    "        stp     x19, x20, [sp, #16]\n"
    "        stp     x21, x22, [sp, #32]\n"
    "        stp     x23, x24, [sp, #48]\n"
    "        stp     x25, x26, [sp, #64]\n"
    "        stp     x27, x28, [sp, #80]\n"
    "        stp     d8, d9, [sp, #96]\n"
    "        stp     d10, d11, [sp, #112]\n"
    "        stp     d12, d13, [sp, #128]\n"
    "        stp     d14, d15, [sp, #144]\n"
    "        mvn     x19, x2\n"
    "        ror     x20, x19, #4\n"
    "        ror     x21, x19, #8\n"
    "        ror     x22, x19, #12\n"
    "        ror     x23, x19, #16\n"
    "        ror     x24, x19, #20\n"
    "        ror     x25, x19, #24\n"
    "        ror     x26, x19, #28\n"
    "        ror     x27, x19, #32\n"
    "        ror     x28, x19, #36\n"
    "        fmov    d8, x20\n"
    "        fmov    d9, x21\n"
    "        fmov    d10, x22\n"
    "        fmov    d11, x23\n"
    "        fmov    d12, x24\n"
    "        fmov    d13, x25\n"
    "        fmov    d14, x26\n"
    "        fmov    d15, x27\n"
    "        ror     x29, x19, #40\n"
    "        bl      gort__ctx_switch\n"
    "        ldp     x19, x20, [sp, #16]\n"
    "        ldp     x21, x22, [sp, #32]\n"
    "        ldp     x23, x24, [sp, #48]\n"
    "        ldp     x25, x26, [sp, #64]\n"
    "        ldp     x27, x28, [sp, #80]\n"
    "        ldp     d8, d9, [sp, #96]\n"
    "        ldp     d10, d11, [sp, #112]\n"
    "        ldp     d12, d13, [sp, #128]\n"
    "        ldp     d14, d15, [sp, #144]\n"
    "        ldp     x29, x30, [sp], #160\n"
    "        ret\n"
    "        .size   ctx_test_clobber_switch, .-ctx_test_clobber_switch\n"
    "\n"
    "        .globl  ctx_test_caller_sp\n"
    "        .hidden ctx_test_caller_sp\n"
    "        .type   ctx_test_caller_sp, %function\n"
    "        .p2align 2\n"
    "ctx_test_caller_sp:\n"
    "        mov     x0, sp\n"
    "        ret\n"
    "        .size   ctx_test_caller_sp, .-ctx_test_caller_sp\n");
#else
#error "test_ctx.c: no assembly helpers for this architecture"
#endif

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------------
 * pingpong
 * ---------------------------------------------------------------------- */

#define PINGPONG_ROUNDS 1000000L

static struct {
    void *main_sp, *a_sp, *b_sp;
    long a_rounds, b_rounds;
} pp;

/* A sends 2i+1 to B and expects 2i+2 back; after the last round it hands
 * the final value plus one to the main context. */
static void pp_a(void *arg)
{
    CHECK_EQ((uintptr_t)arg, 1000);
    uintptr_t v = 0;
    for (long i = 0; i < PINGPONG_ROUNDS; i++) {
        v = (uintptr_t)gort__ctx_switch(&pp.a_sp, pp.b_sp,
                                        (void *)(uintptr_t)(2 * i + 1));
        CHECK_EQ(v, 2 * i + 2);
        pp.a_rounds++;
    }
    gort__ctx_switch(&pp.a_sp, pp.main_sp, (void *)(v + 1));
    CHECK(!"pp_a resumed after it finished");
}

static void pp_b(void *arg)
{
    uintptr_t v = (uintptr_t)arg;
    for (;;) {
        CHECK_EQ(v, 2 * pp.b_rounds + 1);
        pp.b_rounds++;
        v = (uintptr_t)gort__ctx_switch(&pp.b_sp, pp.a_sp, (void *)(v + 1));
    }
}

/* Two made contexts switch back and forth, passing incrementing values. */
TEST(pingpong)
{
    struct tstack sa, sb;
    tstack_alloc(&sa, STACK_SIZE);
    tstack_alloc(&sb, STACK_SIZE);
    pp.a_sp = gort__ctx_make(sa.hi, pp_a, NULL);
    pp.b_sp = gort__ctx_make(sb.hi, pp_b, NULL);
    CHECK((char *)pp.a_sp >= sa.lo && (char *)pp.a_sp < sa.hi);
    CHECK((char *)pp.b_sp >= sb.lo && (char *)pp.b_sp < sb.hi);

    int64_t t0 = test_now_ns();
    uintptr_t r = (uintptr_t)gort__ctx_switch(&pp.main_sp, pp.a_sp,
                                              (void *)(uintptr_t)1000);
    int64_t dt = test_now_ns() - t0;
    CHECK_EQ(r, 2 * PINGPONG_ROUNDS + 1);
    CHECK_EQ(pp.a_rounds, PINGPONG_ROUNDS);
    CHECK_EQ(pp.b_rounds, PINGPONG_ROUNDS);
    printf("%ld switches, %.1f ns/switch\n", 2 * PINGPONG_ROUNDS + 2,
           (double)dt / (double)(2 * PINGPONG_ROUNDS + 2));

    /* And the main context against a made one: B answers to whatever
     * context saved itself in pp.a_sp, so the main context poses as A. */
    for (long i = 0; i < 1000; i++) {
        uintptr_t v = (uintptr_t)(2 * pp.b_rounds + 1);
        r = (uintptr_t)gort__ctx_switch(&pp.a_sp, pp.b_sp, (void *)v);
        CHECK_EQ(r, v + 1);
    }
    CHECK_EQ(pp.b_rounds, PINGPONG_ROUNDS + 1000);
    tstack_free(&sa);
    tstack_free(&sb);
}

/* ------------------------------------------------------------------------
 * entry_arg
 * ---------------------------------------------------------------------- */

struct ea {
    void *main_sp, *sp;
    int started;
    void *first_arg;
    void *second;
};

static struct ea eas[3];

static void ea_entry(void *arg)
{
    /* arg points at the context's own record: find it. */
    struct ea *e = arg;
    CHECK(e == &eas[0] || e == &eas[1] || e == &eas[2]);
    e->started++;
    e->first_arg = arg;
    void *v =
        gort__ctx_switch(&e->sp, e->main_sp, (void *)((uintptr_t)arg ^ 1));
    e->second = v;
    gort__ctx_switch(&e->sp, e->main_sp, (void *)((uintptr_t)v + 7));
    CHECK(!"ea_entry resumed after it finished");
}

static void *null_main_sp, *null_sp, *null_arg;

static void null_entry(void *arg)
{
    null_arg = arg;
    gort__ctx_switch(&null_sp, null_main_sp, (void *)0x5a);
    CHECK(!"null_entry resumed after it finished");
}

/* The first switch's arg reaches entry; later args are the values of the
 * switch calls. */
TEST(entry_arg)
{
    struct tstack st[3];
    for (int i = 0; i < 3; i++) {
        tstack_alloc(&st[i], STACK_SIZE);
        eas[i].sp = gort__ctx_make(st[i].hi, ea_entry, NULL);
        CHECK((char *)eas[i].sp < st[i].hi);
        CHECK((char *)eas[i].sp >= st[i].hi - 512);
    }
    /* Making a context runs nothing. */
    for (int i = 0; i < 3; i++)
        CHECK_EQ(eas[i].started, 0);
    /* Start them out of order; each gets its own arg. */
    static const int order[3] = {2, 0, 1};
    for (int k = 0; k < 3; k++) {
        struct ea *e = &eas[order[k]];
        void *r = gort__ctx_switch(&e->main_sp, e->sp, e);
        CHECK_EQ(e->started, 1);
        CHECK(e->first_arg == e);
        CHECK(r == (void *)((uintptr_t)e ^ 1));
        for (int j = 0; j <= k; j++)
            CHECK_EQ(eas[order[j]].started, 1);
        for (int j = k + 1; j < 3; j++)
            CHECK_EQ(eas[order[j]].started, 0);
    }
    /* The next switch's arg is the value of the switch inside entry. */
    for (int i = 0; i < 3; i++) {
        uintptr_t v = 0x1000u * (uintptr_t)(i + 1);
        void *r = gort__ctx_switch(&eas[i].main_sp, eas[i].sp, (void *)v);
        CHECK(eas[i].second == (void *)v);
        CHECK(r == (void *)(v + 7));
        CHECK_EQ(eas[i].started, 1);
    }
    /* A NULL arg is passed as NULL. */
    struct tstack s0;
    tstack_alloc(&s0, STACK_SIZE);
    null_sp = gort__ctx_make(s0.hi, null_entry, NULL);
    null_arg = (void *)1;
    void *r = gort__ctx_switch(&null_main_sp, null_sp, NULL);
    CHECK(null_arg == NULL);
    CHECK(r == (void *)0x5a);
    for (int i = 0; i < 3; i++)
        tstack_free(&st[i]);
    tstack_free(&s0);
}

/* ------------------------------------------------------------------------
 * callee_saved
 * ---------------------------------------------------------------------- */

static struct {
    void *main_sp, *other_sp;
    uintptr_t seq;
    volatile double sink;
} cs;

/* Busy floating-point and integer code: uses every register it can. */
static GORT_NOINLINE double churn(uintptr_t v)
{
    volatile double seed = (double)(v & 1023) + 0.5;
    double a = seed, b = seed * 1.5, c = seed * 2.5, d = seed * 3.5,
           e = seed * 4.5, f = seed * 5.5, g = seed * 6.5, h = seed * 7.5,
           i = seed * 8.5, j = seed * 9.5, k = seed * 10.5, l = seed * 11.5,
           m = seed * 12.5, n = seed * 13.5, o = seed * 14.5, p = seed * 15.5;
    uint64_t x0 = v, x1 = ~v, x2 = v * 3, x3 = v * 5, x4 = v * 7, x5 = v * 11,
             x6 = v * 13, x7 = v * 17, x8 = v * 19, x9 = v * 23;
    for (int r = 0; r < 8; r++) {
        a = a * 1.0001 + p; b = b * 0.9999 + a; c = c * 1.0002 + b;
        d = d * 0.9998 + c; e = e * 1.0003 + d; f = f * 0.9997 + e;
        g = g * 1.0004 + f; h = h * 0.9996 + g; i = i * 1.0005 + h;
        j = j * 0.9995 + i; k = k * 1.0006 + j; l = l * 0.9994 + k;
        m = m * 1.0007 + l; n = n * 0.9993 + m; o = o * 1.0008 + n;
        p = p * 0.9992 + o;
        x0 += x9 ^ (x1 >> 3); x1 += x0 ^ (x2 << 5); x2 += x1 ^ (x3 >> 7);
        x3 += x2 ^ (x4 << 11); x4 += x3 ^ (x5 >> 13); x5 += x4 ^ (x6 << 17);
        x6 += x5 ^ (x7 >> 19); x7 += x6 ^ (x8 << 23); x8 += x7 ^ (x9 >> 29);
        x9 += x8 ^ (x0 << 31);
    }
    return a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p +
           (double)(x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7 ^ x8 ^ x9);
}

/* The other context: answers every switch with arg + 1, after running C
 * code that churns registers and then entering the switch with garbage in
 * every callee-saved register. */
static void cs_entry(void *arg)
{
    uintptr_t v = (uintptr_t)arg;
    for (;;) {
        cs.sink = churn(v);
        v = (uintptr_t)ctx_test_clobber_switch(&cs.other_sp, cs.main_sp,
                                               (void *)(v + 1));
    }
}

static void cs_round_trip_check(void *r)
{
    CHECK(r == (void *)(cs.seq + 1));
    cs.seq += 2;
}

/* Many integer and double locals live across a switch: the compiler keeps
 * them in callee-saved registers (x19-x28 and d8-d15 on AArch64; rbx, rbp,
 * r12-r15 on x86-64, the rest spilled). */
static volatile uint64_t cs_vin[12];
static volatile double cs_vdin[10];

static GORT_NOINLINE void cs_live_locals(void)
{
    uint64_t i0 = cs_vin[0] * 3 + 1, i1 = cs_vin[1] * 3 + 1,
             i2 = cs_vin[2] * 3 + 1, i3 = cs_vin[3] * 3 + 1,
             i4 = cs_vin[4] * 3 + 1, i5 = cs_vin[5] * 3 + 1,
             i6 = cs_vin[6] * 3 + 1, i7 = cs_vin[7] * 3 + 1,
             i8 = cs_vin[8] * 3 + 1, i9 = cs_vin[9] * 3 + 1,
             i10 = cs_vin[10] * 3 + 1, i11 = cs_vin[11] * 3 + 1;
    double d0 = cs_vdin[0] * 1.25, d1 = cs_vdin[1] * 1.25,
           d2 = cs_vdin[2] * 1.25, d3 = cs_vdin[3] * 1.25,
           d4 = cs_vdin[4] * 1.25, d5 = cs_vdin[5] * 1.25,
           d6 = cs_vdin[6] * 1.25, d7 = cs_vdin[7] * 1.25,
           d8 = cs_vdin[8] * 1.25, d9 = cs_vdin[9] * 1.25;
    void *r = gort__ctx_switch(&cs.main_sp, cs.other_sp, (void *)cs.seq);
    cs_round_trip_check(r);
    /* Re-read the inputs (volatile: the compiler cannot assume they are
     * unchanged, so the locals above had to survive the switch). */
    CHECK(i0 == cs_vin[0] * 3 + 1);
    CHECK(i1 == cs_vin[1] * 3 + 1);
    CHECK(i2 == cs_vin[2] * 3 + 1);
    CHECK(i3 == cs_vin[3] * 3 + 1);
    CHECK(i4 == cs_vin[4] * 3 + 1);
    CHECK(i5 == cs_vin[5] * 3 + 1);
    CHECK(i6 == cs_vin[6] * 3 + 1);
    CHECK(i7 == cs_vin[7] * 3 + 1);
    CHECK(i8 == cs_vin[8] * 3 + 1);
    CHECK(i9 == cs_vin[9] * 3 + 1);
    CHECK(i10 == cs_vin[10] * 3 + 1);
    CHECK(i11 == cs_vin[11] * 3 + 1);
    CHECK(d0 == cs_vdin[0] * 1.25);
    CHECK(d1 == cs_vdin[1] * 1.25);
    CHECK(d2 == cs_vdin[2] * 1.25);
    CHECK(d3 == cs_vdin[3] * 1.25);
    CHECK(d4 == cs_vdin[4] * 1.25);
    CHECK(d5 == cs_vdin[5] * 1.25);
    CHECK(d6 == cs_vdin[6] * 1.25);
    CHECK(d7 == cs_vdin[7] * 1.25);
    CHECK(d8 == cs_vdin[8] * 1.25);
    CHECK(d9 == cs_vdin[9] * 1.25);
}

/* Every callee-saved register (loaded from assembly, and as compiler-allocated
 * live locals, integer and double) survives a switch to a context that
 * clobbers them all. */
TEST(callee_saved)
{
    struct tstack s;
    tstack_alloc(&s, STACK_SIZE);
    cs.other_sp = gort__ctx_make(s.hi, cs_entry, NULL);
    cs.seq = 100;

    uint64_t seed = 42;
    for (int round = 0; round < 2000; round++) {
        /* Exact check: every callee-saved register, loaded in assembly. */
        uint64_t regs[2 * NREGS];
        for (int i = 0; i < NREGS; i++) {
            regs[i] = splitmix64(&seed);
            regs[NREGS + i] = ~regs[i];
        }
        void *r = ctx_test_fill_switch(&cs.main_sp, cs.other_sp,
                                       (void *)cs.seq, regs);
        cs_round_trip_check(r);
        for (int i = 0; i < NREGS; i++) {
            if (regs[NREGS + i] != regs[i]) {
                fprintf(stderr,
                        "round %d: callee-saved register #%d (%s) "
                        "was %#llx, came back %#llx\n",
                        round, i, i < NGPRS ? "integer" : "fp/fp-pointer",
                        (unsigned long long)regs[i],
                        (unsigned long long)regs[NREGS + i]);
                CHECK(regs[NREGS + i] == regs[i]);
            }
        }

        /* Compiler-allocated live locals. */
        for (int i = 0; i < 12; i++)
            cs_vin[i] = splitmix64(&seed);
        for (int i = 0; i < 10; i++)
            cs_vdin[i] = (double)(splitmix64(&seed) >> 11) * 0x1p-40;
        cs_live_locals();
    }
    tstack_free(&s);
}

/* ------------------------------------------------------------------------
 * fp_control
 * ---------------------------------------------------------------------- */

#if defined(__x86_64__)
#define FTZ_BIT 0x8000u /* MXCSR.FTZ */
static uint64_t fpctl_get(void)
{
    uint32_t m;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    return m;
}
static void fpctl_set(uint64_t v)
{
    uint32_t m = (uint32_t)v;
    __asm__ volatile("ldmxcsr %0" : : "m"(m));
}
#elif defined(__aarch64__)
#define FTZ_BIT (1u << 24) /* FPCR.FZ */
static uint64_t fpctl_get(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v));
    return v;
}
static void fpctl_set(uint64_t v)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(v));
}
#endif

static int ftz_get(void)
{
    return (fpctl_get() & FTZ_BIT) != 0;
}

static void ftz_set(int on)
{
    uint64_t v = fpctl_get();
    fpctl_set(on ? v | FTZ_BIT : v & ~(uint64_t)FTZ_BIT);
}

static const int fp_modes[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD,
                                FE_TOWARDZERO};

/* Which rounding mode the arithmetic actually uses: round 1 + 0.75 ulp and
 * -(1 + 0.75 ulp).  Returns the FE_* mode, or -1. */
static volatile double fp_one = 1.0, fp_eps = 0x1.8p-53;
static int probe_round(void)
{
    double a = fp_one + fp_eps, b = -fp_one - fp_eps;
    int a_up = a > 1.0, b_up = b < -1.0; /* rounded away from 1 / -1 */
    if (a_up && b_up)
        return FE_TONEAREST;
    if (a_up)
        return FE_UPWARD;
    if (b_up)
        return FE_DOWNWARD;
    return FE_TOWARDZERO;
}

#if defined(__x86_64__)
/* The same through the x87 unit (its own control word). */
static volatile long double fp_one_l = 1.0L, fp_eps_l = 0x1.8p-64L;
static int probe_round_x87(void)
{
    long double a = fp_one_l + fp_eps_l, b = -fp_one_l - fp_eps_l;
    int a_up = a > 1.0L, b_up = b < -1.0L;
    if (a_up && b_up)
        return FE_TONEAREST;
    if (a_up)
        return FE_UPWARD;
    if (b_up)
        return FE_DOWNWARD;
    return FE_TOWARDZERO;
}
#endif

/* Whether the arithmetic flushes a subnormal result to zero. */
static volatile double fp_min = DBL_MIN, fp_half = 0.5;
static int probe_ftz(void)
{
    return fp_min * fp_half == 0.0;
}

struct fpmode {
    int round, ftz;
};

static void fpmode_check(const char *who, struct fpmode m)
{
    int got = fegetround(), arith = probe_round(), ftz = ftz_get(),
        ftz_arith = probe_ftz();
    if (got != m.round || arith != m.round || ftz != m.ftz ||
        ftz_arith != m.ftz)
        fprintf(stderr,
                "%s: want round %#x ftz %d; fegetround %#x, arithmetic "
                "rounds %#x, ftz bit %d, arithmetic flushes %d\n",
                who, m.round, m.ftz, got, arith, ftz, ftz_arith);
    CHECK_EQ(got, m.round);
    CHECK_EQ(arith, m.round);
    CHECK_EQ(ftz, m.ftz);
    CHECK_EQ(ftz_arith, m.ftz);
#if defined(__x86_64__)
    CHECK_EQ(probe_round_x87(), m.round);
#endif
}

static void fpmode_set(struct fpmode m)
{
    CHECK_EQ(fesetround(m.round), 0);
    ftz_set(m.ftz);
}

#define FP_ROUNDS 20000

static struct {
    void *main_sp, *other_sp;
    struct fpmode main_m, other_m;
    uint64_t rng;
    int rounds;
} fps;

static struct fpmode fpmode_random(void)
{
    uint64_t r = splitmix64(&fps.rng);
    struct fpmode m = {fp_modes[r & 3], (int)((r >> 2) & 1)};
    return m;
}

static void fp_entry(void *arg)
{
    /* A new context starts with its creator's modes at gort__ctx_make. */
    struct fpmode inherited = {FE_UPWARD, 1};
    fpmode_check("new context", inherited);
    for (;;) {
        fps.other_m = fpmode_random();
        fpmode_set(fps.other_m);
        gort__ctx_switch(&fps.other_sp, fps.main_sp, NULL);
        fpmode_check("other context", fps.other_m);
        fps.rounds++;
    }
}

/* Rounding mode and flush-to-zero are per context, and a new context inherits
 * its creator's. */
TEST(fp_control)
{
    fenv_t saved;
    CHECK_EQ(fegetenv(&saved), 0);
    uint64_t saved_ctl = fpctl_get();

    struct tstack s;
    tstack_alloc(&s, STACK_SIZE);
    struct fpmode creator = {FE_UPWARD, 1};
    fpmode_set(creator);
    fpmode_check("creator", creator);
    fps.other_sp = gort__ctx_make(s.hi, fp_entry, NULL);
    fps.main_m.round = FE_TONEAREST;
    fps.main_m.ftz = 0;
    fpmode_set(fps.main_m);
    fps.rng = 7;

    for (int i = 0; i < FP_ROUNDS; i++) {
        gort__ctx_switch(&fps.main_sp, fps.other_sp, NULL);
        fpmode_check("main context", fps.main_m);
        fps.main_m = fpmode_random();
        fpmode_set(fps.main_m);
    }
    CHECK_EQ(fps.rounds, FP_ROUNDS - 1);

    fpctl_set(saved_ctl);
    CHECK_EQ(fesetenv(&saved), 0);
    tstack_free(&s);
}

/* ------------------------------------------------------------------------
 * stack_alignment
 * ---------------------------------------------------------------------- */

static struct {
    void *main_sp, *sp;
    uintptr_t buf, ld, caller_sp, nested_buf, nested_sp;
    uintptr_t fp, chain_end, chain_depth, chain_end_lr, entry_lr;
    char *lo, *hi;
} sa;

static GORT_NOINLINE void sa_nested(void)
{
    __attribute__((aligned(16))) volatile char buf[16];
    buf[0] = 1;
    sa.nested_buf = launder((uintptr_t)buf);
    sa.nested_sp = ctx_test_caller_sp();
}

static void sa_entry(void *arg)
{
    __attribute__((aligned(16))) volatile char buf[16];
    volatile long double ld = 1.0L;
    buf[0] = 1;
    sa.buf = launder((uintptr_t)buf);
    sa.ld = launder((uintptr_t)&ld);
    sa.caller_sp = ctx_test_caller_sp();
    sa_nested();

    /* Walk the frame-pointer chain: it must stay on this stack and end. */
    void **fp = (void **)launder((uintptr_t)__builtin_frame_address(0));
    sa.fp = (uintptr_t)fp;
    sa.entry_lr = (uintptr_t)fp[1];
    uintptr_t depth = 0;
    while (fp[0] != NULL) {
        void **next = fp[0];
        CHECK((char *)next > (char *)fp && (char *)next < sa.hi);
        fp = next;
        CHECK(++depth < 8);
    }
    sa.chain_end = (uintptr_t)fp;
    sa.chain_depth = depth;
    sa.chain_end_lr = (uintptr_t)fp[1];

    gort__ctx_switch(&sa.sp, sa.main_sp, arg);
    CHECK(!"sa_entry resumed after it finished");
}

/* The entry function runs on a 16-byte aligned stack with a frame chain that
 * ends, and ctx_make writes nothing at or above stack_top. */
TEST(stack_alignment)
{
    /* Every misalignment of stack_top; 64 canary bytes at and above it. */
    for (int off = 0; off < 16; off++) {
        struct tstack s;
        tstack_alloc(&s, STACK_SIZE);
        char *top = s.hi - 64 - off;
        memset(top, 0xa5, (size_t)(s.hi - top));
        sa.lo = s.lo;
        sa.hi = top;
        sa.sp = gort__ctx_make(top, sa_entry, NULL);
        CHECK((char *)sa.sp >= s.lo && (char *)sa.sp < top);
        CHECK((char *)sa.sp >= top - 512);
        void *r = gort__ctx_switch(&sa.main_sp, sa.sp, (void *)(uintptr_t)off);
        CHECK(r == (void *)(uintptr_t)off);

        CHECK_EQ(sa.buf & 15, 0);
        CHECK_EQ(sa.ld & 15, 0);
        CHECK_EQ(sa.nested_buf & 15, 0);
        /* At a call from C code the ABI wants sp 16-byte aligned. */
        CHECK_EQ(sa.caller_sp & 15, 0);
        CHECK_EQ(sa.nested_sp & 15, 0);
        CHECK(sa.buf >= (uintptr_t)s.lo && sa.buf < (uintptr_t)top);
        CHECK(sa.caller_sp >= (uintptr_t)s.lo &&
              sa.caller_sp < (uintptr_t)top);
        CHECK(sa.nested_sp < sa.caller_sp);
        /* The frame address is on this stack, above entry's locals. */
        CHECK(sa.fp >= (uintptr_t)s.lo && sa.fp < (uintptr_t)top);
        CHECK(sa.fp >= sa.caller_sp); /* AArch64 GCC: record at the bottom */
        CHECK(sa.fp - sa.caller_sp < 4096);
        CHECK(sa.entry_lr != 0); /* the return address into the trampoline */
#if defined(__aarch64__)
        /* entry's record -> the terminal record {fp 0, lr 0} */
        CHECK_EQ(sa.chain_depth, 1);
        CHECK_EQ(sa.chain_end_lr, 0);
        CHECK(sa.chain_end + 16 <= (uintptr_t)top);
        CHECK_EQ(sa.chain_end & 15, 0);
#else
        /* entry's saved rbp is the trampoline's, 0 */
        CHECK_EQ(sa.chain_depth, 0);
#endif
        /* Nothing written at or above stack_top. */
        for (char *p = top; p < s.hi; p++)
            CHECK_EQ((unsigned char)*p, 0xa5);
        tstack_free(&s);
    }
}
