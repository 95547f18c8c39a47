/* SPDX-License-Identifier: MIT */
/*
 * arch.h - what the context switch (arch/x86_64.S, arch/aarch64.S)
 * offers: saving and resuming a context.
 */
#ifndef GORT_ARCH_H
#define GORT_ARCH_H

#include "defs.h"

GORT_HIDDEN void *gort__ctx_switch(void **save_sp, void *to_sp, void *arg);
GORT_HIDDEN void *gort__ctx_make(void *stack_top, void (*entry)(void *),
                                 const uint64_t *fpctl);
/* Save the FP control modes (rounding, flush-to-zero, exception masks) in
 * the form gort__ctx_make takes. */
GORT_HIDDEN void gort__fpctl_save(uint64_t *fpctl);

#endif /* GORT_ARCH_H */
