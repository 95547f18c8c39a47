/* SPDX-License-Identifier: MIT */
/*
 * symbolize.c - names for code addresses, read from the ELF symbol tables
 * of the loaded objects, without malloc.
 *
 * dladdr knows only the dynamic symbol table, which holds exported
 * functions; static functions (most of gort's, and many of a program's)
 * are only in .symtab.  So for an address in a goroutine's backtrace:
 *
 *   1. the object holding it is found among the ones already seen, or with
 *      dl_iterate_phdr (its PT_LOAD segments contain the address);
 *   2. on the first lookup in an object its file is opened (the program
 *      through /proc/self/exe, which also works under qemu-user) and
 *      mapped read-only, and the function symbols of .symtab (.dynsym when
 *      the file is stripped) are copied into an anonymous mapping and
 *      sorted by address (heap sort: qsort may call malloc);
 *   3. the symbol is found by bisection: the last one starting at or below
 *      the address, if its size covers it.
 *
 * gort's own code, which dumps hide by default, is the section gort_text
 * when gort is linked statically (cmake/gort_text.ld puts it there), and
 * the object holding this file's code when it is the shared library.
 *
 * Why not libunwind or libbacktrace: both allocate, and frame pointers are
 * enough for the walk (traceback.c).  Line numbers would need DWARF
 * .debug_line; dumps print the object-relative address instead, which
 * `addr2line -e OBJECT ADDRESS` turns into a file and line.
 *
 * dl_iterate_phdr takes the dynamic loader's lock, which is recursive and
 * held by dlopen/dlclose only while they change the object list: a dump
 * that interrupts one on another thread waits for it, one that interrupts
 * it on its own thread proceeds.  open, fstat, mmap, munmap and readlink
 * are async-signal-safe.
 *
 * Invariants:
 *   - Every offset, size and index read from a file is checked against the
 *     mapping before use: a truncated, corrupt or replaced file gives no
 *     names, never a fault.
 *   - A name returned points into a mapping owned by the cache and stays
 *     valid until gort__sym_fini, which unmaps everything the cache mapped.
 */
#include "libc.h"
#include "sched.h"
#include "symbolize.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* gort's code in a program linked with the static library; absent (NULL)
 * in the shared library.  See cmake/gort_text.ld and preempt.c. */
extern const char __start_gort_text[] __attribute__((weak));
extern const char __stop_gort_text[] __attribute__((weak));

void gort__sym_init(struct symcache *c)
{
    memset(c, 0, sizeof *c);
    c->gortobj = -1;
    uintptr_t lo = (uintptr_t)__start_gort_text;
    uintptr_t hi = (uintptr_t)__stop_gort_text;
    if (lo && hi > lo) {
        c->gortobj = -2;
        c->gort_lo = lo;
        c->gort_hi = hi;
    }
    ssize_t n = readlink("/proc/self/exe", c->exe, sizeof c->exe - 1);
    if (n <= 0)
        strcpy(c->exe, "/proc/self/exe");
    else
        c->exe[n] = '\0';
}

void gort__sym_fini(struct symcache *c)
{
    for (int i = 0; i < c->nobj; i++) {
        struct symobj *o = &c->obj[i];
        if (o->idx)
            munmap(o->idx, o->idxbytes);
        if (o->file)
            munmap((void *)o->file, o->filesize);
    }
    c->nobj = 0;
}

bool gort__sym_public(const char *name)
{
    return name && strncmp(name, "gort_", 5) == 0 && name[5] != '_' &&
           name[5] != '\0';
}

/* ---------------------------------------------------------------------------
 * Finding the object.
 * ------------------------------------------------------------------------- */

static bool obj_has(const struct symobj *o, uintptr_t addr)
{
    for (int i = 0; i < o->nseg; i++)
        if (addr >= o->lo[i] && addr < o->hi[i])
            return true;
    return false;
}

struct find {
    uintptr_t addr;
    struct symobj *out;
    bool found;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find *f = arg;
    bool hit = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->addr >= lo &&
            f->addr < lo + ph->p_memsz)
            hit = true;
    }
    if (!hit)
        return 0;
    struct symobj *o = f->out;
    o->bias = info->dlpi_addr;
    o->path = info->dlpi_name ? info->dlpi_name : "";
    for (int i = 0; i < info->dlpi_phnum && o->nseg < GORT_SYM_MAXSEG; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        o->lo[o->nseg] = info->dlpi_addr + ph->p_vaddr;
        o->hi[o->nseg] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        o->exec[o->nseg] = (ph->p_flags & PF_X) != 0;
        o->nseg++;
    }
    f->found = true;
    return 1;
}

/* The object holding addr, or NULL. */
static struct symobj *find_obj(struct symcache *c, uintptr_t addr)
{
    for (int i = 0; i < c->nobj; i++)
        if (obj_has(&c->obj[i], addr))
            return &c->obj[i];
    if (c->nobj == GORT_SYM_MAXOBJ)
        return NULL;
    struct symobj *o = &c->obj[c->nobj];
    memset(o, 0, sizeof *o);
    struct find f = {addr, o, false};
    struct m *mp = gort__libc_begin();
    dl_iterate_phdr(find_cb, &f);
    gort__libc_end(mp);
    if (!f.found || !obj_has(o, addr))
        return NULL;
    c->nobj++;
    return o;
}

/* ---------------------------------------------------------------------------
 * Reading the symbols.
 * ------------------------------------------------------------------------- */

static void sift(struct symidx *a, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1].value > a[child].value)
            child++;
        if (a[root].value >= a[child].value)
            return;
        struct symidx t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void heapsort_syms(struct symidx *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(a, i, n);
    for (size_t end = n; end-- > 1;) {
        struct symidx t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift(a, 0, end);
    }
}

/* The section header i, or NULL when it lies outside the file. */
static const ElfW(Shdr) *section(const struct symobj *o, const ElfW(Ehdr) *eh,
                                 size_t i)
{
    if (i >= eh->e_shnum)
        return NULL;
    return (const ElfW(Shdr) *)(o->file + eh->e_shoff) + i;
}

static bool fits(const struct symobj *o, uint64_t off, uint64_t len)
{
    return off <= o->filesize && len <= o->filesize - off;
}

static bool is_func(const ElfW(Sym) *s)
{
    unsigned t = ELF64_ST_TYPE(s->st_info);
    return (t == STT_FUNC || t == STT_GNU_IFUNC) && s->st_shndx != SHN_UNDEF &&
           s->st_value != 0;
}

/* Index the function symbols of the table in section sh. */
static void index_syms(struct symobj *o, const ElfW(Ehdr) *eh,
                       const ElfW(Shdr) *sh)
{
    const ElfW(Shdr) *strsh = section(o, eh, sh->sh_link);
    if (!strsh || sh->sh_entsize != sizeof(ElfW(Sym)) ||
        !fits(o, sh->sh_offset, sh->sh_size) ||
        !fits(o, strsh->sh_offset, strsh->sh_size) || strsh->sh_size == 0 ||
        o->file[strsh->sh_offset + strsh->sh_size - 1] != '\0')
        return; /* names must end inside the table */
    const ElfW(Sym) *syms = (const ElfW(Sym) *)(o->file + sh->sh_offset);
    size_t nsyms = sh->sh_size / sizeof(ElfW(Sym));
    size_t n = 0;
    for (size_t i = 0; i < nsyms; i++)
        n += is_func(&syms[i]) && syms[i].st_name < strsh->sh_size;
    if (n == 0)
        return;
    size_t bytes = (n * sizeof(struct symidx) + 4095) & ~(size_t)4095;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return;
    struct symidx *idx = m;
    size_t k = 0;
    for (size_t i = 0; i < nsyms && k < n; i++) {
        const ElfW(Sym) *s = &syms[i];
        if (!is_func(s) || s->st_name >= strsh->sh_size)
            continue;
        idx[k].value = s->st_value;
        idx[k].size = s->st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)s->st_size;
        idx[k].name = s->st_name;
        k++;
    }
    heapsort_syms(idx, k);
    o->idx = idx;
    o->nidx = k;
    o->idxbytes = bytes;
    o->strtab = (const char *)o->file + strsh->sh_offset;
    o->strsize = strsh->sh_size;
}

/* Map the object's file and index its symbols (once per object). */
static void load_file(struct symobj *o);

static void load(struct symobj *o)
{
    struct m *mp = gort__libc_begin();
    load_file(o);
    gort__libc_end(mp);
}

static void load_file(struct symobj *o)
{
    o->loaded = true;
    const char *path = o->path[0] ? o->path : "/proc/self/exe";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)sizeof(ElfW(Ehdr))) {
        gort__libc.close(fd);
        return;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    gort__libc.close(fd);
    if (m == MAP_FAILED)
        return;
    o->file = m;
    o->filesize = (size_t)st.st_size;
    const ElfW(Ehdr) *eh = m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) ||
        !fits(o, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr))))
        return;
    const ElfW(Shdr) *dyn = NULL;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const ElfW(Shdr) *sh = section(o, eh, i);
        if (sh->sh_type == SHT_SYMTAB) {
            index_syms(o, eh, sh);
            if (o->idx)
                return;
        } else if (sh->sh_type == SHT_DYNSYM) {
            dyn = sh;
        }
    }
    if (dyn)
        index_syms(o, eh, dyn);
}

/* ---------------------------------------------------------------------------
 * Lookup.
 * ------------------------------------------------------------------------- */

static bool in_gort(struct symcache *c, const struct symobj *o, uintptr_t addr)
{
    if (c->gortobj == -2)
        return addr >= c->gort_lo && addr < c->gort_hi;
    if (c->gortobj == -1) {
        /* The shared library: the object holding this very function. */
        struct symobj *self = find_obj(c, (uintptr_t)gort__sym_lookup);
        if (!self)
            return false;
        c->gortobj = (int)(self - c->obj);
    }
    return o == &c->obj[c->gortobj];
}

void gort__sym_lookup(struct symcache *c, uintptr_t addr, struct symres *r)
{
    memset(r, 0, sizeof *r);
    if (c->gortobj == -2 && addr >= c->gort_lo && addr < c->gort_hi)
        r->gort = true;
    struct symobj *o = find_obj(c, addr);
    if (!o)
        return;
    r->obj = o->path[0] ? o->path : c->exe;
    r->objaddr = addr - o->bias;
    r->gort = in_gort(c, o, addr);
    if (!o->loaded)
        load(o);
    if (!o->idx)
        return;
    /* The last symbol starting at or below the address. */
    uintptr_t v = r->objaddr;
    size_t lo = 0, hi = o->nidx;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->idx[mid].value <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return;
    const struct symidx *s = &o->idx[lo - 1];
    if (s->size != 0 && v - s->value >= s->size)
        return; /* in a gap between functions (a PLT, padding) */
    r->name = o->strtab + s->name;
    r->start = s->value + o->bias;
}

/* The instruction before addr is a call: x86-64 call rel32 (e8), call
 * *disp32(%rip) (ff 15), call *%reg (ff d0+r, with or without a REX
 * prefix), call *disp8(%reg) (ff 50+r); aarch64 bl and blr. */
static bool call_before(const unsigned char *p)
{
#if defined(__x86_64__)
    return p[-5] == 0xe8 || (p[-6] == 0xff && p[-5] == 0x15) ||
           (p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0) ||
           (p[-3] == 0xff && (p[-2] & 0xf8) == 0x50);
#elif defined(__aarch64__)
    uint32_t insn;
    memcpy(&insn, p - 4, sizeof insn);
    return (insn & 0xfc000000U) == 0x94000000U ||
           (insn & 0xfffffc1fU) == 0xd63f0000U;
#else
    (void)p;
    return false;
#endif
}

/* The C library itself (its threads part included since glibc 2.34). */
static bool is_libc(const struct symobj *o)
{
    const char *base = strrchr(o->path, '/');
    base = base ? base + 1 : o->path;
    return strncmp(base, "libc.so", 7) == 0 ||
           strncmp(base, "libc-", 5) == 0 ||
           strncmp(base, "libpthread", 10) == 0;
}

bool gort__sym_in_gort(struct symcache *c, uintptr_t addr)
{
    struct symobj *o = find_obj(c, addr);
    return o && in_gort(c, o, addr);
}

enum gort_caller gort__sym_caller(struct symcache *c, uintptr_t sp,
                                  uintptr_t hi, int maxwords)
{
    const uintptr_t w = sizeof(uintptr_t);
    sp = (sp + w - 1) & ~(w - 1);
    for (int i = 0; i < maxwords && sp + w <= hi; i++, sp += w) {
        uintptr_t v = gort__peek(sp);
        if (v < 4096 || (v >= sp && v < hi))
            continue; /* small, or a stack address */
        struct symobj *o = find_obj(c, v);
        if (!o || is_libc(o) || !gort__sym_after_call(c, v))
            continue;
        return in_gort(c, o, v) ? GORT_CALLER_GORT : GORT_CALLER_PROGRAM;
    }
    return GORT_CALLER_UNKNOWN;
}

bool gort__sym_after_call(struct symcache *c, uintptr_t addr)
{
    struct symobj *o = find_obj(c, addr);
    if (!o)
        return false;
    for (int i = 0; i < o->nseg; i++)
        if (o->exec[i] && addr >= o->lo[i] + 8 && addr <= o->hi[i])
            return call_before((const unsigned char *)addr);
    return false;
}
