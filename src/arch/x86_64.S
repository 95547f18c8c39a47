/* SPDX-License-Identifier: MIT */
/*
 * x86_64.S - goroutine context switch for x86-64 System V.
 *
 * A saved context is a stack pointer.  At it and above it, on the suspended
 * stack:
 *
 *     sp+0   x87 control word (2 bytes, slot of 8)
 *     sp+8   MXCSR (4 bytes, slot of 8)
 *     sp+16  r15
 *     sp+24  r14
 *     sp+32  r13
 *     sp+40  r12
 *     sp+48  rbx
 *     sp+56  rbp
 *     sp+64  resume address
 *
 * Only the callee-saved registers and the floating-point control state are
 * saved: every caller of gort__ctx_switch is a C call site, so the compiler
 * already treats the other registers as clobbered.
 *
 * A context saved here is resumed with `ret`.  The return-stack predictor
 * then guesses the address this call to the switch returns to, which is
 * right whenever the two contexts switched from the same call site (a
 * goroutine parking on a channel handing over to another that parked
 * there too), and it keeps the return stack balanced: the caller's call
 * pushed one entry and `ret` pops it, so the resumed goroutine's own
 * returns are predicted too.  Resuming with `pop` + indirect `jmp` left
 * that entry behind, and every return after the switch missed
 * (docs/design.md has what that cost).
 * A fresh context's first resume goes to the trampoline, which no return
 * predictor can guess; it takes the indirect `jmp`, which the branch-target
 * predictor learns (a stream of new goroutines resumes there every time).
 *
 * void *gort__ctx_switch(void **save_sp, void *to_sp, void *arg)
 *     rdi = where to save this context's sp, rsi = the context to resume,
 *     rdx = value that gort__ctx_switch returns in the resumed context.
 *
 * void *gort__ctx_make(void *stack_top, void (*entry)(void *),
 *                      const uint64_t *fpctl)
 *     Builds a context on a fresh stack that, when first switched to,
 *     calls entry(arg) on a 16-byte aligned stack, with the FP control
 *     modes saved in fpctl by gort__fpctl_save (NULL: the current ones).
 *     Returns its sp.
 */
#include "x86_64_cet.h"

        .text

        .globl  gort__ctx_switch
        .hidden gort__ctx_switch
        .type   gort__ctx_switch, @function
        .p2align 4
gort__ctx_switch:
        .cfi_startproc
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset rbp, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset rbx, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r12, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r13, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r14, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r15, 0
        subq    $16, %rsp
        .cfi_adjust_cfa_offset 16
        stmxcsr 8(%rsp)
        fnstcw  (%rsp)
        movq    %rsp, (%rdi)
        /*
         * From here on rsp is the resumed context's, whose frame has the
         * same layout and is complete, so the CFI above describes it: an
         * unwinder stopping at any instruction below walks into the resumed
         * context.
         */
        movq    %rsi, %rsp
        ldmxcsr 8(%rsp)
        fldcw   (%rsp)
        addq    $16, %rsp
        .cfi_adjust_cfa_offset -16
        popq    %r15
        .cfi_adjust_cfa_offset -8
        .cfi_restore r15
        popq    %r14
        .cfi_adjust_cfa_offset -8
        .cfi_restore r14
        popq    %r13
        .cfi_adjust_cfa_offset -8
        .cfi_restore r13
        popq    %r12
        .cfi_adjust_cfa_offset -8
        .cfi_restore r12
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        .cfi_restore rbx
        popq    %rbp
        .cfi_adjust_cfa_offset -8
        .cfi_restore rbp
        movq    %rdx, %rax
        leaq    .Lctx_trampoline_resume(%rip), %rcx
        cmpq    %rcx, (%rsp)
        je      1f
        ret
1:      /* a fresh context: its first resume goes to the trampoline */
        popq    %rcx
        .cfi_adjust_cfa_offset -8
        .cfi_register rip, rcx  /* the resume address is now in rcx */
        jmpq    *%rcx
        .cfi_endproc
        .size   gort__ctx_switch, .-gort__ctx_switch

/*
 * First code of a new context, reached at .Lctx_trampoline_resume: rbx holds
 * entry, rax the switch argument.  The nop is never executed: it puts the
 * resume address minus one (where unwinders look up the frame of a return
 * address) inside this function's CFI, which says that the unwind ends here.
 * The resume address is the target of the switch's indirect `jmp`, so it
 * starts with endbr64 (x86_64_cet.h); the saved contexts' resume addresses
 * are reached by `ret` and need none.
 */
        .type   gort__ctx_trampoline, @function
        .p2align 4
gort__ctx_trampoline:
        .cfi_startproc
        .cfi_undefined rip      /* the bottom frame: unwinders stop here */
        nop
.Lctx_trampoline_resume:
        GORT_ENDBR
        movq    %rax, %rdi
        callq   *%rbx
        ud2                     /* entry must not return */
        .cfi_endproc
        .size   gort__ctx_trampoline, .-gort__ctx_trampoline

        .globl  gort__ctx_make
        .hidden gort__ctx_make
        .type   gort__ctx_make, @function
        .p2align 4
gort__ctx_make:
        .cfi_startproc
        movq    %rdi, %rax
        andq    $-16, %rax              /* align the top down to 16 */
        subq    $88, %rax               /* sp + 72 is 16-aligned at entry */
        leaq    .Lctx_trampoline_resume(%rip), %rcx
        movq    %rcx, 64(%rax)          /* resume address */
        movq    $0, 56(%rax)            /* rbp = 0 ends frame-pointer chains */
        movq    %rsi, 48(%rax)          /* rbx = entry */
        movq    $0, 40(%rax)
        movq    $0, 32(%rax)
        movq    $0, 24(%rax)
        movq    $0, 16(%rax)
        testq   %rdx, %rdx
        jz      1f
        movzwl  (%rdx), %ecx            /* FP modes saved by fpctl_save */
        movq    %rcx, (%rax)
        movl    4(%rdx), %ecx
        movq    %rcx, 8(%rax)
        ret
1:      stmxcsr 8(%rax)                 /* no fpctl: the current FP modes */
        fnstcw  (%rax)
        ret
        .cfi_endproc
        .size   gort__ctx_make, .-gort__ctx_make

/* void gort__fpctl_save(uint64_t *fpctl): the FP control modes in the
 * form gort__ctx_make takes: the x87 control word in bytes 0-1, MXCSR in
 * bytes 4-7. */
        .globl  gort__fpctl_save
        .hidden gort__fpctl_save
        .type   gort__fpctl_save, @function
        .p2align 4
gort__fpctl_save:
        .cfi_startproc
        movq    $0, (%rdi)
        fnstcw  (%rdi)
        stmxcsr 4(%rdi)
        ret
        .cfi_endproc
        .size   gort__fpctl_save, .-gort__fpctl_save

        GORT_CET_NOTE

        .section .note.GNU-stack,"",@progbits
