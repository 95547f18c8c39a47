/* SPDX-License-Identifier: MIT */
/*
 * fileio - is io_uring worth it for regular-file reads from goroutines?
 *
 *   build/experiments/fileio [-reads N] [-short]
 *
 * (built when liburing and its header are installed).
 *
 * The lessons note that Go never registers regular files with its
 * network poller: to epoll a regular file is always ready, so a read of
 * one holds its thread, and gort reads them through the syscall path
 * (gort_pread and friends: the P moves on if the read lasts).  io_uring
 * is the alternative that would not hold a thread.  This program times
 * -reads 4 KiB reads (default 200,000) from a cached 1 MiB file three
 * ways: pread(2); one io_uring read per submit-and-wait (what a goroutine
 * blocking on its own read would do); and 16 reads per submit (only
 * possible when many reads are ready at once).  It uses no goroutines:
 * it measures the calls themselves.  Prints (figures from runs are in
 * docs/experiments.md and docs/design.md, "Regular files take the
 * syscall path, not io_uring"):
 *
 *     pread P us, io_uring one op a submit U us, 16 a submit B us per op
 *     check: pread and io_uring read the same bytes: 256 of 256 blocks as
 *       written, both ways: ok
 *     check: 200000 reads each way, every one whole (4096 bytes) and of its
 *       own block: ok
 *     check: 16 reads a submit (B us) cheaper per read than one a submit (U
 *       us): ok
 *
 * Every block of the file holds its own number and a pattern.  The first
 * check reads each block once with pread and once through io_uring,
 * untimed, and compares both with what was written.  The second counts,
 * in the timed loops, the reads that returned all 4096 bytes and whose
 * block number (the first 8 bytes, cheap to look at) is the one asked
 * for, and, for io_uring, that every submitted read completed exactly
 * once (each completion carries its read's tag).  The third is the
 * comparison the argument rests on: batching is where io_uring's gain
 * lies; it is a time, and judged only in the full form.  Whether one read
 * per submit beats pread depends on the machine and is not judged.
 *
 * Flags: -reads N (default 200000), -short (20,000 reads: the form
 * `make test` runs; the timing comparison is printed, not judged).  Exits
 * 1 when a check fails, 2 on bad flags, 77 when io_uring cannot be used
 * here (an old kernel, or io_uring disabled or filtered out by seccomp).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flags.h"

enum {
    BLOCK = 4096,
    NBLOCKS = 256, /* a 1 MiB file: cached after it is written */
    BATCH = 16,
};

static int nreads = 200000;
static bool short_form;
static int failed; /* a check line said FAILED */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Block b as written: its number in the first 8 bytes, then a pattern of
 * b and the offset. */
static void fill(unsigned char *buf, uint64_t b)
{
    memcpy(buf, &b, sizeof b);
    for (size_t i = sizeof b; i < BLOCK; i++)
        buf[i] = (unsigned char)(b * 131 + i * 7 + (i >> 8));
}

/* Whether buf holds block b's number (all a timed loop looks at). */
static bool is_block(const unsigned char *buf, uint64_t b)
{
    uint64_t got;
    memcpy(&got, buf, sizeof got);
    return got == b;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "fileio: %s: %s\n", what, strerror(err));
    exit(1);
}

static struct io_uring_cqe *wait_cqe(struct io_uring *r)
{
    struct io_uring_cqe *c;
    int err = io_uring_wait_cqe(r, &c);
    if (err < 0)
        die("io_uring_wait_cqe", -err);
    return c;
}

/* Read block b into buf through io_uring, one read a submit; return what
 * the read returned (bytes or -errno). */
static int uring_read1(struct io_uring *r, int fd, unsigned char *buf,
                       uint64_t b)
{
    struct io_uring_sqe *s = io_uring_get_sqe(r);
    io_uring_prep_read(s, fd, buf, BLOCK, b * BLOCK);
    io_uring_sqe_set_data64(s, b);
    int err = io_uring_submit_and_wait(r, 1);
    if (err < 0)
        die("io_uring_submit_and_wait", -err);
    struct io_uring_cqe *c = wait_cqe(r);
    int res = c->res;
    if (c->user_data != b)
        res = -EBADMSG; /* another read's completion */
    io_uring_cqe_seen(r, c);
    return res;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-reads") && i + 1 < argc) {
            nreads = intflag("fileio", "-reads", argv[++i], 1);
        } else if (!strcmp(argv[i], "-short")) {
            short_form = true;
            nreads = 20000;
        } else {
            fprintf(stderr, "usage: fileio [-reads N] [-short]\n");
            return 2;
        }
    }

    struct io_uring r;
    int err = io_uring_queue_init(64, &r, 0);
    if (err < 0) {
        printf("fileio: io_uring is not available here (%s): nothing to "
               "compare\n", strerror(-err));
        return 77;
    }
    const char *dir = getenv("TMPDIR");
    char path[4096];
    /* mkstemp's template: the name and six X's. */
    int n = snprintf(path, sizeof path, "%s/fileio", dir && *dir ? dir : "/tmp");
    if (n < 0 || (size_t)n + 7 > sizeof path)
        die("TMPDIR", ENAMETOOLONG);
    memset(path + n, 'X', 6);
    path[n + 6] = '\0';
    int fd = mkstemp(path);
    if (fd < 0)
        die(path, errno);
    unlink(path);

    static unsigned char want[BLOCK], buf[BATCH][BLOCK];
    for (uint64_t b = 0; b < NBLOCKS; b++) {
        fill(want, b);
        if (pwrite(fd, want, BLOCK, (off_t)(b * BLOCK)) != BLOCK)
            die("pwrite", errno ? errno : EIO);
    }

    /* The same bytes both ways: every block read once by each, untimed,
     * compared in full with what was written. */
    int same = 0;
    for (uint64_t b = 0; b < NBLOCKS; b++) {
        fill(want, b);
        memset(buf[0], 0, BLOCK);
        memset(buf[1], 0, BLOCK);
        bool ok = pread(fd, buf[0], BLOCK, (off_t)(b * BLOCK)) == BLOCK &&
                  uring_read1(&r, fd, buf[1], b) == BLOCK &&
                  memcmp(buf[0], want, BLOCK) == 0 &&
                  memcmp(buf[1], want, BLOCK) == 0;
        same += ok;
    }

    /* pread(2). */
    long whole_p = 0;
    double t = now();
    for (int i = 0; i < nreads; i++) {
        uint64_t b = (uint64_t)i % NBLOCKS;
        whole_p += pread(fd, buf[0], BLOCK, (off_t)(b * BLOCK)) == BLOCK &&
                   is_block(buf[0], b);
    }
    double tp = (now() - t) / nreads;

    /* io_uring, one read a submit: a goroutine waiting for its own. */
    long whole_u = 0;
    t = now();
    for (int i = 0; i < nreads; i++) {
        uint64_t b = (uint64_t)i % NBLOCKS;
        whole_u += uring_read1(&r, fd, buf[0], b) == BLOCK &&
                   is_block(buf[0], b);
    }
    double tu = (now() - t) / nreads;

    /* io_uring, 16 reads a submit, each into its own buffer; a
     * completion's user_data is its read's slot in the batch. */
    long whole_b = 0, strays = 0;
    t = now();
    for (int i = 0; i < nreads; i += BATCH) {
        int k = nreads - i < BATCH ? nreads - i : BATCH;
        for (int j = 0; j < k; j++) {
            struct io_uring_sqe *s = io_uring_get_sqe(&r);
            uint64_t b = (uint64_t)(i + j) % NBLOCKS;
            io_uring_prep_read(s, fd, buf[j], BLOCK, b * BLOCK);
            io_uring_sqe_set_data64(s, (uint64_t)j);
        }
        err = io_uring_submit_and_wait(&r, (unsigned)k);
        if (err < 0)
            die("io_uring_submit_and_wait", -err);
        unsigned done = 0;
        for (int j = 0; j < k; j++) {
            struct io_uring_cqe *c = wait_cqe(&r);
            uint64_t slot = c->user_data;
            if (slot < (uint64_t)k && !(done & 1u << slot)) {
                done |= 1u << slot;
                whole_b += c->res == BLOCK &&
                           is_block(buf[slot], (uint64_t)(i + (int)slot) %
                                                   NBLOCKS);
            } else {
                strays++;
            }
            io_uring_cqe_seen(&r, c);
        }
    }
    double tb = (now() - t) / nreads;
    io_uring_queue_exit(&r);
    close(fd);

    printf("pread %.2f us, io_uring one op a submit %.2f us, 16 a submit "
           "%.2f us per op\n", tp * 1e6, tu * 1e6, tb * 1e6);

    bool ok = same == NBLOCKS;
    printf("check: pread and io_uring read the same bytes: %d of %d blocks "
           "as written, both ways: %s\n", same, NBLOCKS, ok ? "ok" : "FAILED");
    failed |= !ok;
    ok = whole_p == nreads && whole_u == nreads && whole_b == nreads &&
         strays == 0;
    if (ok)
        printf("check: %d reads each way, every one whole (%d bytes) and of "
               "its own block: ok\n", nreads, BLOCK);
    else
        printf("check: %d reads each way, every one whole (%d bytes) and of "
               "its own block: pread %ld, one a submit %ld, %d a submit %ld "
               "(%ld stray completions): FAILED\n", nreads, BLOCK, whole_p,
               whole_u, BATCH, whole_b, strays);
    failed |= !ok;
    if (short_form) {
        ok = whole_u == nreads && whole_b == nreads;
        printf("check: %d reads a submit (%.2f us) against one a submit "
               "(%.2f us) not judged in the short form (too few reads on a "
               "shared machine); both io_uring loops completed every read: "
               "%s\n", BATCH, tb * 1e6, tu * 1e6, ok ? "ok" : "FAILED");
        failed |= !ok;
    } else {
        ok = tb < tu;
        printf("check: %d reads a submit (%.2f us) cheaper per read than one "
               "a submit (%.2f us): %s\n", BATCH, tb * 1e6, tu * 1e6,
               ok ? "ok" : "FAILED");
        failed |= !ok;
    }
    return failed;
}
