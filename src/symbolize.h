/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h - names for code addresses (symbolize.c) and stack walks
 * (traceback.c), for goroutine dumps.
 *
 * A struct symcache lives for one dump, on the dumper's stack: it maps
 * what it needs (ELF files, symbol indexes) with mmap and unmaps it all in
 * gort__sym_fini.  Nothing here allocates with malloc or takes a gort
 * lock, so dumps work on fatal paths and in signal handlers.
 */
#ifndef GORT_SYMBOLIZE_H
#define GORT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects (the program, shared libraries) one dump can name; addresses in
 * further objects print without a name. */
#define GORT_SYM_MAXOBJ 32
/* PT_LOAD segments remembered per object. */
#define GORT_SYM_MAXSEG 8

/* A function symbol: its address relative to the object's load bias, its
 * size (0: unknown) and its name's offset in the string table. */
struct symidx {
    uintptr_t value;
    uint32_t size;
    uint32_t name;
};

/* One loaded object. */
struct symobj {
    uintptr_t bias;                 /* dlpi_addr: runtime = file vaddr + bias */
    uintptr_t lo[GORT_SYM_MAXSEG];  /* its PT_LOAD segments, runtime addresses */
    uintptr_t hi[GORT_SYM_MAXSEG];
    bool exec[GORT_SYM_MAXSEG];     /* the segment holds code */
    int nseg;
    const char *path;               /* as the loader has it; "" for the program */
    bool loaded;                    /* its symbols were read (or tried) */
    const unsigned char *file;      /* the ELF file, mapped read-only */
    size_t filesize;
    const char *strtab;             /* the symbol names, inside file */
    size_t strsize;
    struct symidx *idx;             /* function symbols by value (mmap) */
    size_t nidx;
    size_t idxbytes;
};

struct symcache {
    struct symobj obj[GORT_SYM_MAXOBJ];
    int nobj;
    int gortobj;      /* the object holding gort's code (shared library),
                         -1 when not found yet, -2 when gort is linked
                         statically (gort_lo/hi say where) */
    uintptr_t gort_lo, gort_hi;
    char exe[256];    /* the program's path, for printing */
};

/* What an address is. */
struct symres {
    const char *name;   /* the function, or NULL when unknown */
    uintptr_t start;    /* its first byte (runtime address) */
    const char *obj;    /* the object's path, or NULL when in none */
    uintptr_t objaddr;  /* the address minus the object's load bias: what
                           `addr2line -e OBJ` takes */
    bool gort;          /* in gort's own code */
};

void gort__sym_init(struct symcache *c);
void gort__sym_fini(struct symcache *c);
void gort__sym_lookup(struct symcache *c, uintptr_t addr, struct symres *r);
/* A name of gort's public API (gort_x, not gort__x). */
bool gort__sym_public(const char *name);
/* addr is a return address: in code, just after a call instruction. */
bool gort__sym_after_call(struct symcache *c, uintptr_t addr);
/* Whose code called into the C library, for a thread stopped at sp on a
 * stack ending at hi: the first return address in the maxwords words
 * from sp up that is not the C library's own. */
enum gort_caller { GORT_CALLER_UNKNOWN, GORT_CALLER_GORT, GORT_CALLER_PROGRAM };
/* addr is in gort's own code. */
bool gort__sym_in_gort(struct symcache *c, uintptr_t addr);
enum gort_caller gort__sym_caller(struct symcache *c, uintptr_t sp,
                                  uintptr_t hi, int maxwords);

/* ---------------------------------------------------------------------------
 * Stack walks (traceback.c).
 * ------------------------------------------------------------------------- */

/* Frames a backtrace shows at most (Go's _TracebackMaxFrames). */
#define GORT_TB_MAXFRAMES 100

/* Where the walk of one stack starts. */
struct tbstart {
    uintptr_t lo, hi;    /* the stack: every frame record read lies inside */
    uintptr_t plo, phi;  /* or inside this one: the goroutine's stack for
                            preemptions deep in its own (preempt.c), or 0 */
    uintptr_t pc;        /* the first frame's pc, or 0: start with the
                            caller recorded in the frame record at fp */
    uintptr_t fp;        /* the first frame's frame record */
    bool trap;           /* pc is where a signal interrupted the code, not
                            a return address */
    uintptr_t preemptctx;/* the goroutine's copy of its signal context at
                            an asynchronous preemption (a ucontext_t), or
                            0: where the walk meets the preemption trampoline it
                            continues in the interrupted code */
    uintptr_t leafret;   /* with trap: where the interrupted function
                            returns to if it has no frame record of its own
                            (a leaf or libc's syscall wrappers): the word
                            at sp on x86-64, the link register on aarch64;
                            0 when unknown (see leaf_caller in traceback.c) */
};

/* Walk the frame-pointer chain: up to max pcs (return addresses, or for
 * entries with traps[i] set, interrupted pcs).  Every record must lie in
 * [lo, hi), be aligned and lie above the previous one, so a corrupt chain
 * ends the walk and never faults.  *more is set when frames were left
 * over. */
int gort__unwind(const struct tbstart *s, uintptr_t *pcs, uint8_t *traps,
                 int max, bool *more);

#endif /* GORT_SYMBOLIZE_H */
