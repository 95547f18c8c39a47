/* SPDX-License-Identifier: MIT */
/*
 * hook_overhead - what gort-hook adds to a read(2) or write(2) that does
 * not block: a one-byte write and a one-byte read on a connected Unix
 * stream socket, SIZE times (default 200,000), in a goroutine, made three
 * ways:
 *
 *   hook   read and write by their names: gort-hook's (linked in),
 *          which ask the runtime whether a goroutine calls and try the
 *          call with MSG_DONTWAIT (docs/hooks.md);
 *   gort   gort_read and gort_write on a descriptor registered with the
 *          poller (gort_fd_register);
 *   libc   the C library's read and write, found in libc.so.6 itself.
 *
 * Nine rounds, each running the three in turn; a figure is the median
 * round's time per call (a write or a read), in ns: ns_per_call_hook,
 * ns_per_call_gort, ns_per_call_libc.  No Go peer: the comparison is
 * within the run (the target: hook within 1.1x of gort).
 */
#include <dlfcn.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define ROUNDS 9

static struct bench_opts opt;
static ssize_t (*libc_read)(int, void *, size_t);
static ssize_t (*libc_write)(int, const void *, size_t);

enum { HOOK, GORT, LIBC, NWAYS };

/* SIZE write-read pairs one way on sv; ns per call. */
static double round_of(int way, int sv[2])
{
    char c = 'x';
    int64_t t0 = bench_now_ns();
    for (int64_t i = 0; i < opt.n; i++) {
        switch (way) {
        case HOOK:
            if (write(sv[1], &c, 1) != 1 || read(sv[0], &c, 1) != 1)
                abort();
            break;
        case GORT:
            if (gort_write(sv[1], &c, 1) != 1 || gort_read(sv[0], &c, 1) != 1)
                abort();
            break;
        default:
            if (libc_write(sv[1], &c, 1) != 1 || libc_read(sv[0], &c, 1) != 1)
                abort();
        }
    }
    return (double)(bench_now_ns() - t0) / (double)(2 * opt.n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void main_g(void *arg)
{
    (void)arg;
    bench_set_procs(&opt);
    int sv[NWAYS][2];
    for (int w = 0; w < NWAYS; w++)
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv[w]) != 0)
            abort();
    if (gort_fd_register(sv[GORT][0]) != 0 ||
        gort_fd_register(sv[GORT][1]) != 0)
        abort();
    double ns[NWAYS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int w = 0; w < NWAYS; w++)
            ns[w][r] = round_of(w, sv[w]);
    static const char *names[NWAYS] = {"ns_per_call_hook", "ns_per_call_gort",
                                       "ns_per_call_libc"};
    for (int w = 0; w < NWAYS; w++) {
        qsort(ns[w], ROUNDS, sizeof ns[w][0], cmp_double);
        bench_result(&opt, names[w], ns[w][ROUNDS / 2], "ns");
    }
}

int main(int argc, char **argv)
{
    bench_parse(&opt, argc, argv, "hook_overhead", 1, 200000);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    libc_read = libc ? (ssize_t (*)(int, void *, size_t))dlsym(libc, "read")
                     : NULL;
    libc_write = libc ? (ssize_t (*)(int, const void *, size_t))dlsym(
                            libc, "write")
                      : NULL;
    if (!libc_read || !libc_write) {
        fprintf(stderr, "hook_overhead: libc.so.6's read and write not found\n");
        return 1;
    }
    return bench_run(&opt, main_g, NULL);
}
