/* SPDX-License-Identifier: MIT */
/*
 * replay.c - run a fuzz harness over files, without libFuzzer.
 *
 *   replay_<name> FILE|DIR...
 *
 * Every file named, and every regular file in a directory named, is passed
 * to LLVMFuzzerTestOneInput once.  This is how the corpora in fuzz/corpus/
 * are replayed by the ordinary test suite, with any compiler and under any
 * sanitizer: an input that once crashed a harness stays a test.  A harness
 * that finds a broken property aborts, which fails the test.  Exits 1 when
 * no input was found, so that a misplaced corpus cannot pass as empty.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

/* Read the whole file at path into a malloc'd buffer; NULL on failure. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Run one file; false when it cannot be read. */
static bool run_file(const char *path)
{
    size_t n;
    uint8_t *data = slurp(path, &n);
    if (!data) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return false;
    }
    /* A copy of exactly n bytes, so that AddressSanitizer sees a read
     * past the input as libFuzzer's own runs would. */
    uint8_t *exact = malloc(n ? n : 1);
    if (exact) {
        memcpy(exact, data, n);
        LLVMFuzzerTestOneInput(exact, n);
    }
    free(exact);
    free(data);
    return exact != NULL;
}

/* Run every regular file in dir; the number run, or -1 on failure. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long count = 0;
    struct dirent *e;
    char path[4096];
    while (count >= 0 && (e = readdir(d)) != NULL) {
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        count = run_file(path) ? count + 1 : -1;
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long n = stat(argv[i], &st) != 0 ? -1
                 : S_ISDIR(st.st_mode)   ? run_dir(argv[i])
                 : run_file(argv[i])     ? 1
                                         : -1;
        if (n < 0) {
            fprintf(stderr, "replay: cannot run %s\n", argv[i]);
            return 1;
        }
        total += n;
    }
    printf("replay: %ld inputs, no failure\n", total);
    return total > 0 ? 0 : 1;
}
