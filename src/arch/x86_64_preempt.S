/* SPDX-License-Identifier: MIT */
/*
 * x86_64_preempt.S - the asynchronous preemption trampoline for x86-64 (the
 * context switch is x86_64.S).
 *
 * void gort__async_preempt(void)  -- reached from the SIGURG handler
 * (preempt.c), never called: rsp and rdi point at a copy of the signal
 * context on the G's stack.  Yields the G (gort__async_preempt2), then
 * resumes the interrupted code with rt_sigreturn on the copy, which
 * restores every register.  rbx is callee-saved, so it survives the yield
 * even if the G comes back on another thread.  It starts with endbr64, as
 * the target of a transfer that is no call (x86_64_cet.h).
 */
#include "x86_64_cet.h"

        .text
        .globl  gort__async_preempt
        .hidden gort__async_preempt
        .type   gort__async_preempt, @function
        .p2align 4
gort__async_preempt:
        .cfi_startproc
        .cfi_undefined rip
        GORT_ENDBR
        movq    %rdi, %rbx
        call    gort__async_preempt2
        /* The return address of that call: a stack walk that meets it
         * continues in the interrupted code (traceback.c). */
        .globl  gort__async_preempt_ret
        .hidden gort__async_preempt_ret
gort__async_preempt_ret:
        movq    %rbx, %rsp
        movl    $15, %eax               /* __NR_rt_sigreturn */
        syscall
        ud2
        .cfi_endproc
        .size   gort__async_preempt, .-gort__async_preempt

        GORT_CET_NOTE

        .section .note.GNU-stack,"",@progbits
