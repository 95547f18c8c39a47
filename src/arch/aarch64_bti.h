/* SPDX-License-Identifier: MIT */
/*
 * aarch64_bti.h - Branch Target Identification for gort's aarch64
 * assembly (included by aarch64.S and aarch64_preempt.S).
 *
 * With -mbranch-protection=bti (or =standard) every function that may be
 * reached indirectly starts with a landing pad (GORT_BTI_C: `hint #34` is
 * `bti c`, a NOP on cores without BTI), and every object is marked
 * BTI-compatible (GORT_BTI_NOTE): the linker keeps the marking only when
 * all of them have it.  The preemption trampoline starts with `bti jc`
 * (GORT_BTI_JC, `hint #38`): the signal handler points the interrupted PC
 * at it, and rt_sigreturn restores the interrupted PSTATE, whose branch
 * type is not zero when the signal came just before a landing pad ran;
 * `bti jc` accepts every branch type.
 */
#ifndef GORT_AARCH64_BTI_H
#define GORT_AARCH64_BTI_H

#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define GORT_BTI_C hint #34
#define GORT_BTI_JC hint #38
/* GNU property note: GNU_PROPERTY_AARCH64_FEATURE_1_AND = BTI.  (Not PAC:
 * the saved resume address is not signed.) */
#define GORT_BTI_NOTE \
        .pushsection .note.gnu.property, "a"; \
        .p2align 3; \
        .word 4;            /* name size ("GNU\0") */ \
        .word 16;           /* descriptor size */ \
        .word 5;            /* NT_GNU_PROPERTY_TYPE_0 */ \
        .asciz "GNU"; \
        .word 0xc0000000;   /* GNU_PROPERTY_AARCH64_FEATURE_1_AND */ \
        .word 4;            /* pr_datasz */ \
        .word 1;            /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI */ \
        .word 0;            /* padding to 8 */ \
        .popsection
#else
#define GORT_BTI_C
#define GORT_BTI_JC
#define GORT_BTI_NOTE
#endif

#endif /* GORT_AARCH64_BTI_H */
