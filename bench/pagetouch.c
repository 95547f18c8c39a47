/* SPDX-License-Identifier: MIT */
/*
 * pagetouch - what the first write to a fresh page costs on this machine,
 * which decides the idle row's creation time (docs/benchmarks.md, "idle
 * creation").  Not a benchmark with a Go peer: a probe of the machine,
 * without gort.
 *
 * Each line maps PAGES fresh 4 KiB pages (default 20,000) of anonymous
 * memory, prepares them one way, then writes one byte to each from user
 * space and prints the time per page of both steps:
 *
 *   fault        nothing first: the write takes the page fault
 *   populate     madvise(MADV_POPULATE_WRITE) over the range first, which
 *                allocates and maps every page (what gort does for stacks)
 *   kernel-write read(2) from /dev/zero into the range first: the kernel
 *                itself writes every page through the same addresses
 *   hugepage     madvise(MADV_HUGEPAGE) first (transparent huge pages)
 *   again        populate, one write to each page, then the timed writes
 *                to pages already touched from user space
 *   2 threads    populate + writes, on two threads at once, each over its
 *                own PAGES pages (time per page of the wall clock)
 *
 * On a machine where the first user write after a populate costs about
 * what the second does, gort's creation cost is its instruction count; on
 * one where it costs as much as the fault (a hypervisor that fills its
 * own page tables on first use, as here), the pages touched decide it.
 *
 * Usage: pagetouch [PAGES]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define PAGE 4096L

enum prep { FAULT, POPULATE, KERNEL_WRITE, HUGEPAGE, AGAIN };

static long pages = 20000;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "pagetouch: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A fresh range of `pages` pages, 2 MiB aligned (for the huge-page case). */
static char *fresh(void)
{
    size_t len = (size_t)pages * PAGE + (2 << 20);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    return (char *)(((uintptr_t)p + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
}

static void prepare(char *p, enum prep how)
{
    size_t len = (size_t)pages * PAGE;
    switch (how) {
    case FAULT:
        break;
    case POPULATE:
    case AGAIN:
        if (madvise(p, len, MADV_POPULATE_WRITE) != 0)
            die("madvise(MADV_POPULATE_WRITE) (Linux 5.14 or later)");
        if (how == AGAIN)
            for (long i = 0; i < pages; i++)
                p[i * PAGE] = 1;
        break;
    case KERNEL_WRITE: {
        int fd = open("/dev/zero", O_RDONLY);
        if (fd < 0)
            die("/dev/zero");
        for (size_t off = 0; off < len;) {
            ssize_t r = read(fd, p + off, len - off);
            if (r <= 0)
                die("read /dev/zero");
            off += (size_t)r;
        }
        close(fd);
        break;
    }
    case HUGEPAGE:
        if (madvise(p, len, MADV_HUGEPAGE) != 0)
            die("madvise(MADV_HUGEPAGE)");
        break;
    }
}

static void touch(char *p)
{
    for (long i = 0; i < pages; i++)
        p[i * PAGE + 64] = 2;
}

static void one(const char *name, enum prep how)
{
    char *p = fresh();
    int64_t t0 = now_ns();
    prepare(p, how);
    int64_t t1 = now_ns();
    touch(p);
    int64_t t2 = now_ns();
    printf("%-13s prepare %6.2f us/page   user write %6.2f us/page\n", name,
           (double)(t1 - t0) / pages / 1e3, (double)(t2 - t1) / pages / 1e3);
}

static void *populate_and_touch(void *arg)
{
    char *p = arg;
    prepare(p, POPULATE);
    touch(p);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && (pages = atol(argv[1])) <= 0)) {
        fprintf(stderr, "usage: pagetouch [PAGES]  (PAGES > 0, default "
                        "20000)\n");
        return 2;
    }
    one("fault", FAULT);
    one("populate", POPULATE);
    one("kernel-write", KERNEL_WRITE);
    one("hugepage", HUGEPAGE);
    one("again", AGAIN);

    char *a = fresh(), *b = fresh();
    pthread_t ta, tb;
    int64_t t0 = now_ns();
    if (pthread_create(&ta, NULL, populate_and_touch, a) != 0 ||
        pthread_create(&tb, NULL, populate_and_touch, b) != 0) {
        fprintf(stderr, "pagetouch: pthread_create failed\n");
        return 1;
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("%-13s populate + user write %6.2f us/page of wall time\n",
           "2 threads", (double)(now_ns() - t0) / (2 * pages) / 1e3);
    return 0;
}
