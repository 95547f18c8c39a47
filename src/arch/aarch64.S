/* SPDX-License-Identifier: MIT */
/*
 * aarch64.S - goroutine context switch for AArch64 (AAPCS64, Linux).
 *
 * A saved context is a stack pointer.  At it and above it, on the suspended
 * stack, is one 176-byte frame (sp stays 16-byte aligned throughout):
 *
 *     sp+0    x29 (fp)   \  an AAPCS64 frame record: a frame-pointer walk
 *     sp+8    x30 (lr)   /  of a suspended stack can start at its sp
 *     sp+16   x19
 *     sp+24   x20
 *     sp+32   x21
 *     sp+40   x22
 *     sp+48   x23
 *     sp+56   x24
 *     sp+64   x25
 *     sp+72   x26
 *     sp+80   x27
 *     sp+88   x28
 *     sp+96   d8
 *     sp+104  d9
 *     sp+112  d10
 *     sp+120  d11
 *     sp+128  d12
 *     sp+136  d13
 *     sp+144  d14
 *     sp+152  d15
 *     sp+160  FPCR (in a slot of 8)
 *     sp+168  padding (keeps the frame a multiple of 16)
 *
 * x30 is the resume address.  Only the callee-saved registers (x19-x29,
 * the low 64 bits of v8-v15) and the floating-point control register are
 * saved: every caller of gort__ctx_switch is a C call site, so the compiler
 * already treats the other registers as clobbered.  FPSR (the cumulative
 * exception flags) is status, not a mode, and is not saved.  FPCR is
 * written only when the resumed context's value differs, because MSR FPCR
 * is serialising on many cores (glibc's fesetround does the same).
 *
 * The switch ends with `ret` (to x30), not `br x30`.  Neither is predicted
 * well here (the return-stack entry pushed by our caller's `bl` belongs to
 * the other context), so prediction does not decide it; branch target
 * identification does: with BTI enabled, an indirect `br` must land on a
 * BTI landing pad, which a call's return address is not, while `ret` is
 * exempt.  `ret` also keeps the return stack balanced (our caller's `bl`
 * pushed one entry, `ret` pops one).
 *
 * void *gort__ctx_switch(void **save_sp, void *to_sp, void *arg)
 *     x0 = where to save this context's sp, x1 = the context to resume,
 *     x2 = value that gort__ctx_switch returns (in x0) in the resumed
 *     context.
 *
 * void *gort__ctx_make(void *stack_top, void (*entry)(void *),
 *                      const uint64_t *fpctl)
 *     Builds a context on a fresh stack that, when first switched to,
 *     calls entry(arg) on a 16-byte aligned stack, with x29 pointing at a
 *     terminal frame record {fp = 0, lr = 0} at the top of the stack, and
 *     with the FPCR saved in fpctl by gort__fpctl_save (NULL: the current
 *     FPCR).  Nothing is written at or above
 *     stack_top.  Returns its sp.
 */

#include "aarch64_bti.h"

        .text

        .globl  gort__ctx_switch
        .hidden gort__ctx_switch
        .type   gort__ctx_switch, %function
        .p2align 4
gort__ctx_switch:
        .cfi_startproc
        GORT_BTI_C
        stp     x29, x30, [sp, #-176]!
        .cfi_def_cfa_offset 176
        .cfi_offset x29, -176
        .cfi_offset x30, -168
        mov     x29, sp                 /* a frame record while we run */
        stp     x19, x20, [sp, #16]
        .cfi_offset x19, -160
        .cfi_offset x20, -152
        stp     x21, x22, [sp, #32]
        .cfi_offset x21, -144
        .cfi_offset x22, -136
        stp     x23, x24, [sp, #48]
        .cfi_offset x23, -128
        .cfi_offset x24, -120
        stp     x25, x26, [sp, #64]
        .cfi_offset x25, -112
        .cfi_offset x26, -104
        stp     x27, x28, [sp, #80]
        .cfi_offset x27, -96
        .cfi_offset x28, -88
        stp     d8, d9, [sp, #96]
        .cfi_offset d8, -80
        .cfi_offset d9, -72
        stp     d10, d11, [sp, #112]
        .cfi_offset d10, -64
        .cfi_offset d11, -56
        stp     d12, d13, [sp, #128]
        .cfi_offset d12, -48
        .cfi_offset d13, -40
        stp     d14, d15, [sp, #144]
        .cfi_offset d14, -32
        .cfi_offset d15, -24
        mrs     x9, fpcr
        str     x9, [sp, #160]
        mov     x10, sp
        str     x10, [x0]
        /*
         * From here on sp is the resumed context's, whose frame has the same
         * layout and is complete, so the CFI above describes it: an unwinder
         * stopping at any instruction below walks into the resumed context.
         */
        mov     sp, x1
        ldr     x10, [sp, #160]
        cmp     x9, x10
        b.eq    1f
        msr     fpcr, x10
1:
        ldp     d8, d9, [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        ldp     x19, x20, [sp, #16]
        ldp     x21, x22, [sp, #32]
        ldp     x23, x24, [sp, #48]
        ldp     x25, x26, [sp, #64]
        ldp     x27, x28, [sp, #80]
        ldp     x29, x30, [sp], #176
        .cfi_def_cfa_offset 0
        .cfi_restore x29
        .cfi_restore x30
        .cfi_restore x19
        .cfi_restore x20
        .cfi_restore x21
        .cfi_restore x22
        .cfi_restore x23
        .cfi_restore x24
        .cfi_restore x25
        .cfi_restore x26
        .cfi_restore x27
        .cfi_restore x28
        .cfi_restore d8
        .cfi_restore d9
        .cfi_restore d10
        .cfi_restore d11
        .cfi_restore d12
        .cfi_restore d13
        .cfi_restore d14
        .cfi_restore d15
        mov     x0, x2
        ret
        .cfi_endproc
        .size   gort__ctx_switch, .-gort__ctx_switch

/*
 * First code of a new context, reached by the `ret` of gort__ctx_switch at
 * .Lctx_trampoline_resume: x19 holds entry, x0 the switch argument, x29 the
 * terminal frame record, sp is 16-byte aligned.  Not a landing pad: only
 * `ret` ever reaches it.  The nop is never executed: it puts the resume
 * address minus one (where unwinders look up the frame of a return address)
 * inside this function's CFI, which says that the unwind ends here.
 */
        .type   gort__ctx_trampoline, %function
        .p2align 2
gort__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined x30      /* the bottom frame: unwinders stop here */
        nop
.Lctx_trampoline_resume:
        blr     x19             /* entry(arg) */
        brk     #0x3e8          /* entry must not return */
        .cfi_endproc
        .size   gort__ctx_trampoline, .-gort__ctx_trampoline

        .globl  gort__ctx_make
        .hidden gort__ctx_make
        .type   gort__ctx_make, %function
        .p2align 2
gort__ctx_make:
        .cfi_startproc
        GORT_BTI_C
        and     x9, x0, #-16            /* align the top down to 16 */
        stp     xzr, xzr, [x9, #-16]!   /* terminal frame record {0, 0} */
        sub     x0, x9, #176            /* the saved frame below it */
        adr     x10, .Lctx_trampoline_resume
        stp     x9, x10, [x0, #0]       /* x29 = the record, x30 = resume */
        stp     x1, xzr, [x0, #16]      /* x19 = entry, x20 */
        stp     xzr, xzr, [x0, #32]     /* x21, x22 */
        stp     xzr, xzr, [x0, #48]     /* x23, x24 */
        stp     xzr, xzr, [x0, #64]     /* x25, x26 */
        stp     xzr, xzr, [x0, #80]     /* x27, x28 */
        stp     xzr, xzr, [x0, #96]     /* d8, d9 */
        stp     xzr, xzr, [x0, #112]    /* d10, d11 */
        stp     xzr, xzr, [x0, #128]    /* d12, d13 */
        stp     xzr, xzr, [x0, #144]    /* d14, d15 */
        mrs     x11, fpcr               /* no fpctl: the current FP modes */
        cbz     x2, 1f
        ldr     x11, [x2]               /* FP modes saved by fpctl_save */
1:      stp     x11, xzr, [x0, #160]    /* FPCR, padding */
        ret
        .cfi_endproc
        .size   gort__ctx_make, .-gort__ctx_make

/* void gort__fpctl_save(uint64_t *fpctl): the FP control modes in the
 * form gort__ctx_make takes (FPCR). */
        .globl  gort__fpctl_save
        .hidden gort__fpctl_save
        .type   gort__fpctl_save, %function
        .p2align 2
gort__fpctl_save:
        .cfi_startproc
        GORT_BTI_C
        mrs     x1, fpcr
        str     x1, [x0]
        ret
        .cfi_endproc
        .size   gort__fpctl_save, .-gort__fpctl_save

        GORT_BTI_NOTE

        .section .note.GNU-stack,"",%progbits
