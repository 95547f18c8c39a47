/* SPDX-License-Identifier: MIT */
/*
 * atomic.h - the only door to atomic operations in gort.
 *
 * Every shared word that is accessed concurrently goes through one of these
 * helpers, so that the memory order of each access is written at the call
 * site (its name says it) and ThreadSanitizer sees every access as atomic.
 * They are thin wrappers over the GCC/Clang __atomic builtins, which work on
 * plain integer and pointer types of 1, 2, 4 and 8 bytes.
 *
 * Naming, after Go's runtime/internal/atomic and musl's atomic.h:
 *   load_relaxed / load_acq            plain or acquire load
 *   store_relaxed / store_rel          plain or release store
 *   cas_relaxed / cas_acq / cas_rel / cas_acqrel
 *                                      compare-and-swap, strong, with the
 *                                      order applied on success (failure
 *                                      is relaxed, or acquire for _acq*)
 *   xadd_acqrel / xadd_relaxed         fetch-and-add, returning the NEW value
 *   xchg_acqrel                        exchange, returning the old value
 *
 * Invariant: no code outside this header uses __atomic_* or <stdatomic.h>.
 */
#ifndef GORT_ATOMIC_H
#define GORT_ATOMIC_H

#define load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define load_acq(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define store_rel(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

#define cas_relaxed(p, old, new_)                                              \
    gort__cas_impl((p), (old), (new_), __ATOMIC_RELAXED, __ATOMIC_RELAXED)
#define cas_acq(p, old, new_)                                                  \
    gort__cas_impl((p), (old), (new_), __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)
#define cas_rel(p, old, new_)                                                  \
    gort__cas_impl((p), (old), (new_), __ATOMIC_RELEASE, __ATOMIC_RELAXED)
#define cas_acqrel(p, old, new_)                                               \
    gort__cas_impl((p), (old), (new_), __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)

/* Strong CAS on *p from old to new_; true when it took place.  A statement
 * expression so that old may be an rvalue. */
#define gort__cas_impl(p, old, new_, so, fo)                                   \
    __extension__({                                                            \
        __typeof__(*(p)) gort__expected = (old);                               \
        __atomic_compare_exchange_n((p), &gort__expected, (new_), 0, (so),     \
                                    (fo));                                     \
    })

#define xadd_acqrel(p, d) __atomic_add_fetch((p), (d), __ATOMIC_ACQ_REL)
#define xadd_relaxed(p, d) __atomic_add_fetch((p), (d), __ATOMIC_RELAXED)
#define xchg_acqrel(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define or_relaxed(p, v) __atomic_or_fetch((p), (v), __ATOMIC_RELAXED)
#define and_relaxed(p, v) __atomic_and_fetch((p), (v), __ATOMIC_RELAXED)

/* Sequentially consistent forms, for the rare Dekker-style handshakes
 * (each use names the other side).  No bare fences: ThreadSanitizer does
 * not model them. */
#define load_seqcst(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define xadd_seqcst(p, d) __atomic_add_fetch((p), (d), __ATOMIC_SEQ_CST)
#define xchg_seqcst(p, v) __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define store_seqcst(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define or_seqcst(p, v) __atomic_or_fetch((p), (v), __ATOMIC_SEQ_CST)
#define and_seqcst(p, v) __atomic_and_fetch((p), (v), __ATOMIC_SEQ_CST)
#define cas_seqcst(p, old, new_)                                               \
    gort__cas_impl((p), (old), (new_), __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
/* A seq-cst CAS from *expp to new_ that, when it fails, leaves the value
 * it found in *expp. */
#define cas_seqcst_seen(p, expp, new_)                                         \
    __atomic_compare_exchange_n((p), (expp), (new_), 0, __ATOMIC_SEQ_CST,     \
                                __ATOMIC_SEQ_CST)

/* A compiler-only barrier: keeps the compiler from moving memory accesses
 * across it, orders nothing between processors (a signal fence). */
#define compiler_barrier() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Spin-wait hint: PAUSE on x86-64, YIELD on aarch64.  Mirrors procyield. */
static inline void gort__cpu_relax(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __asm__ __volatile__("" ::: "memory");
#endif
}

#endif /* GORT_ATOMIC_H */
