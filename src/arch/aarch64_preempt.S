/* SPDX-License-Identifier: MIT */
/*
 * aarch64_preempt.S - the asynchronous preemption trampoline for aarch64 (the
 * context switch is aarch64.S).
 *
 * void gort__async_preempt(void)  -- reached from the SIGURG handler
 * (preempt.c), never called: sp and x0 point at a copy of the kernel's
 * signal frame (siginfo, then the ucontext) on the G's stack.  Yields the
 * G (gort__async_preempt2), then resumes the interrupted code with
 * rt_sigreturn on the copy, which restores every register.  x19 is
 * callee-saved, so it survives the yield on any thread.
 */
#include "aarch64_bti.h"

        .text
        .globl  gort__async_preempt
        .hidden gort__async_preempt
        .type   gort__async_preempt, %function
        .p2align 4
gort__async_preempt:
        .cfi_startproc
        .cfi_undefined x30
        GORT_BTI_JC             /* aarch64_bti.h says why jc */
        mov     x19, x0
        bl      gort__async_preempt2
        /* The return address of that call: a stack walk that meets it
         * continues in the interrupted code (traceback.c). */
        .globl  gort__async_preempt_ret
        .hidden gort__async_preempt_ret
gort__async_preempt_ret:
        mov     sp, x19
        mov     x8, #139                /* __NR_rt_sigreturn */
        svc     #0
        brk     #0
        .cfi_endproc
        .size   gort__async_preempt, .-gort__async_preempt

        GORT_BTI_NOTE

        .section .note.GNU-stack,"",%progbits
