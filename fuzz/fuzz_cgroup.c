/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cgroup.c - libFuzzer harness for gort's cgroup CPU limit reader
 * (gort__cgroup_cpu_limit, src/env.c).
 *
 * The reader takes a root directory and reads, below it,
 * proc/self/cgroup, proc/self/mountinfo and the limit files of the cgroup
 * they lead to (cpu.max for v2; cpu.cfs_quota_us and cpu.cfs_period_us
 * for v1), from the leaf up to the mount point.  The input is cut into
 * sections at lines holding only "--":
 *
 *   0  proc/self/cgroup          3  the leaf's cpu.cfs_quota_us
 *   1  proc/self/mountinfo       4  the leaf's cpu.cfs_period_us
 *   2  the leaf's cpu.max        5-7  the same three for its ancestors
 *
 * and written under a temporary root of this process.  So that the limit
 * files are found, the harness makes the directory of every cgroup path
 * under every mount point the input names (only plain paths: no "..", no
 * escapes, at most 64 directories), where the reader would look, and
 * writes a section's file only when the section is there.  It then checks
 * that the result is "no limit" (0) or a positive finite number of CPUs,
 * that the default GOMAXPROCS derived from it stays between 1 and the CPU
 * count, and that no descriptor is left open (AddressSanitizer's leak
 * checker sees the memory).
 */
#include "fuzz.h"
#include "../src/env.h"
#include "../src/sched.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSECTIONS 8
#define MAX_DIRS 64
#define MAX_PATH 512
/* Room for root + a mount point + a cgroup path + a file name. */
#define PATH_BUF (4 * MAX_PATH)

static char root[64];          /* the temporary root, made once */
static int ndirs;              /* directories made for this input */

struct section {
    const char *p;
    size_t n;
};

/* Cut data at "\n--\n" into at most NSECTIONS sections. */
static int cut(const char *d, size_t n, struct section *s)
{
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i + 4 <= n && k < NSECTIONS - 1; i++) {
        if (memcmp(d + i, "\n--\n", 4) != 0)
            continue;
        s[k++] = (struct section){d + start, i - start};
        start = i + 4;
        i += 3;
    }
    s[k++] = (struct section){d + start, n - start};
    return k;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

/* At exit: the temporary root goes, with everything in it. */
static void remove_root(void)
{
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    rmdir(root);
}

/* Empty the temporary root, making it first if need be: in /dev/shm
 * when there is one (a memory file system makes each run several times
 * faster), else in /tmp. */
static void reset_root(void)
{
    if (!root[0]) {
        struct stat st;
        bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
                   access("/dev/shm", W_OK) == 0;
        /* mkdtemp's template: the name and six X's. */
        int n = snprintf(root, sizeof root, "%s/gort-fuzz-cgroup.",
                         shm ? "/dev/shm" : "/tmp");
        FUZZ_CHECK(n > 0 && (size_t)n + 7 <= sizeof root);
        memset(root + n, 'X', 6);
        root[n + 6] = '\0';
        FUZZ_CHECK(mkdtemp(root) != NULL);
        atexit(remove_root);
    }
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *dir, const char *name,
                       const struct section *s)
{
    char path[PATH_BUF];
    int len = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= sizeof path)
        return; /* cannot happen: the root is short */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    ssize_t w = write(fd, s->p, s->n);
    (void)w; /* a short file is still a file to read */
    close(fd);
}

/* mkdir -p of root + path (which starts with '/'); false when a
 * directory cannot be made or the budget is spent. */
static bool make_dirs(const char *path)
{
    char full[PATH_BUF];
    int len = snprintf(full, sizeof full, "%s%s", root, path);
    for (int i = (int)strlen(root) + 1; i <= len; i++) {
        if (full[i] != '/' && full[i] != '\0')
            continue;
        char c = full[i];
        full[i] = '\0';
        if (mkdir(full, 0755) == 0 && ++ndirs > MAX_DIRS)
            return false;
        full[i] = c;
    }
    return true;
}

/* A path the harness is willing to make: absolute, plain bytes, no "..". */
static bool plain_path(const char *p, size_t n)
{
    if (n == 0 || n >= MAX_PATH / 2 || p[0] != '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789._,:@+=-/", p[i]) || p[i] == '\0')
            return false;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '.' && p[i + 1] == '.')
            return false;
    return true;
}

/* Write the limit files for the cgroup at mnt + rel: the leaf's, and the
 * ancestors' in every directory from mnt down to the leaf's parent. */
static void write_limits(const char *mnt, const char *rel,
                         const struct section *s, int ns)
{
    static const char *const files[3] = {"cpu.max", "cpu.cfs_quota_us",
                                         "cpu.cfs_period_us"};
    char dir[PATH_BUF];
    snprintf(dir, sizeof dir, "%s%s%s", root, mnt, rel);
    for (int f = 0; f < 3; f++)
        if (2 + f < ns)
            write_file(dir, files[f], &s[2 + f]);
    size_t base = strlen(root) + strlen(mnt);
    for (char *slash; (slash = strrchr(dir, '/')) && (size_t)(slash - dir) >= base;) {
        *slash = '\0';
        for (int f = 0; f < 3; f++)
            if (5 + f < ns)
                write_file(dir, files[f], &s[5 + f]);
    }
}

/* The n-th space-separated field of line[0..len), or false. */
static bool field(const char *line, size_t len, int nth, const char **f,
                  size_t *flen)
{
    size_t i = 0;
    for (int k = 0; i <= len; k++) {
        size_t j = i;
        while (j < len && line[j] != ' ')
            j++;
        if (k == nth) {
            *f = line + i;
            *flen = j - i;
            return true;
        }
        i = j + 1;
    }
    return false;
}

/* The next line of s from *at, or false at its end. */
static bool next_line(const struct section *s, size_t *at, const char **l,
                      size_t *len)
{
    if (*at >= s->n)
        return false;
    const char *nl = memchr(s->p + *at, '\n', s->n - *at);
    size_t end = nl ? (size_t)(nl - s->p) : s->n;
    *l = s->p + *at;
    *len = end - *at;
    *at = end + 1;
    return true;
}

/* Make the directories of cgroup path cg (a "ID:CONTROLLERS:PATH" line)
 * under every mount that mountinfo names, with their limit files. */
static void make_cgroup(const char *cg, size_t cglen, const struct section *s,
                        int ns)
{
    const char *c2 = memchr(cg, ':', cglen);
    c2 = c2 ? memchr(c2 + 1, ':', cglen - (size_t)(c2 + 1 - cg)) : NULL;
    if (!c2 || !plain_path(c2 + 1, cglen - (size_t)(c2 + 1 - cg)))
        return;
    char path[MAX_PATH], mroot[MAX_PATH], mnt[MAX_PATH];
    snprintf(path, sizeof path, "%.*s", (int)(cglen - (size_t)(c2 + 1 - cg)),
             c2 + 1);
    size_t at = 0, len, rl, ml;
    const char *line, *r, *m;
    while (ndirs <= MAX_DIRS && next_line(&s[1], &at, &line, &len)) {
        if (!field(line, len, 3, &r, &rl) || !field(line, len, 4, &m, &ml) ||
            !plain_path(r, rl) || !plain_path(m, ml))
            continue;
        snprintf(mroot, sizeof mroot, "%.*s", (int)rl, r);
        snprintf(mnt, sizeof mnt, "%.*s", (int)ml, m);
        const char *rel = strcmp(mroot, "/") == 0 ? path
                          : strncmp(path, mroot, rl) == 0 &&
                                    (path[rl] == '/' || path[rl] == '\0')
                              ? path + rl
                              : NULL;
        char full[PATH_BUF];
        snprintf(full, sizeof full, "%s%s", mnt, rel ? rel : "");
        if (rel && make_dirs(full))
            write_limits(mnt, rel, s, ns);
    }
}

/* The lowest descriptor number free now. */
static int lowest_free_fd(void)
{
    int fd = dup(0);
    if (fd >= 0)
        close(fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct section s[NSECTIONS];
    int ns = cut((const char *)data, size, s);
    reset_root();
    ndirs = 0;
    char dir[PATH_BUF];
    snprintf(dir, sizeof dir, "%s/proc/self", root);
    FUZZ_CHECK(make_dirs("/proc/self"));
    write_file(dir, "cgroup", &s[0]);
    if (ns > 1)
        write_file(dir, "mountinfo", &s[1]);
    size_t at = 0, len;
    const char *line;
    while (ns > 1 && next_line(&s[0], &at, &line, &len))
        make_cgroup(line, len, s, ns);

    int fd_before = lowest_free_fd();
    double limit = gort__cgroup_cpu_limit(root);
    FUZZ_CHECK(limit == 0 || (isfinite(limit) && limit > 0));
    int procs = gort__default_procs(root, 8);
    FUZZ_CHECK(procs >= 1 && procs <= 8);
    FUZZ_CHECK(lowest_free_fd() == fd_before);
    return 0;
}
