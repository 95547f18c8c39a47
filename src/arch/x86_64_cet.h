/* SPDX-License-Identifier: MIT */
/*
 * x86_64_cet.h - Control-flow Enforcement (CET) for gort's x86-64
 * assembly (included by x86_64.S and x86_64_preempt.S).
 *
 * Indirect branch tracking (IBT) requires every target of an indirect
 * `jmp` or `call` to start with `endbr64` (a NOP on processors without
 * CET, and on those with it while IBT is off).  The assembly has two
 * such targets: a fresh context's first resume, which gort__ctx_switch
 * reaches with `jmp *%rcx`, and the preemption trampoline, where the
 * SIGURG handler points the interrupted PC.  Both carry GORT_ENDBR, and
 * every assembler object says so in its GNU property note (GORT_CET_NOTE:
 * GNU_PROPERTY_X86_FEATURE_1_AND with the IBT bit).  The linker ANDs the
 * notes of all its inputs, so the library keeps the IBT bit when its C
 * objects have it too (-fcf-protection=branch).
 *
 * The note never has the SHSTK bit: a context switch changes stacks and
 * returns with `ret` on the new one, whose return address is not the one
 * on top of the thread's shadow stack (docs/design.md, "Control-flow
 * enforcement").
 */
#ifndef GORT_X86_64_CET_H
#define GORT_X86_64_CET_H

#define GORT_ENDBR endbr64

#define GORT_CET_NOTE \
        .pushsection .note.gnu.property, "a"; \
        .p2align 3; \
        .long 4;            /* name size ("GNU\0") */ \
        .long 16;           /* descriptor size */ \
        .long 5;            /* NT_GNU_PROPERTY_TYPE_0 */ \
        .asciz "GNU"; \
        .long 0xc0000002;   /* GNU_PROPERTY_X86_FEATURE_1_AND */ \
        .long 4;            /* pr_datasz */ \
        .long 1;            /* GNU_PROPERTY_X86_FEATURE_1_IBT */ \
        .long 0;            /* padding to 8 */ \
        .popsection

#endif /* GORT_X86_64_CET_H */
