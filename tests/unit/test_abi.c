/* SPDX-License-Identifier: MIT */
/*
 * test_abi.c - the version macros against gort_version(), and the layout
 * of every public struct of gort.h (docs/abi.md).
 *
 * Programs allocate the public structs themselves (a gort_mutex in their
 * own struct, a gort_case array on their stack), so each one's size,
 * alignment and field offsets are part of the shared library's ABI.  The
 * layout case pins them as docs/abi.md lists them: a change fails here in
 * the plain test suite, and tools/check_abi.sh (abidiff) then says whether
 * the SONAME must change.
 */
#include "test_util.h"

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

/* The version parts fit a byte each and the header's numbers are usable
 * in #if, as GORT_VERSION_HEX is documented to be. */
/* Fails the case naming both strings when they differ. */
#define CHECK_STR_SAME(a, b)                                            \
    do {                                                                \
        if (strcmp((a), (b)) != 0)                                      \
            fprintf(stderr, "%s is \"%s\", %s is \"%s\"\n", #a, (a),     \
                    #b, (b));                                           \
        CHECK(strcmp((a), (b)) == 0);                                   \
    } while (0)

#if GORT_VERSION_HEX != ((GORT_VERSION_MAJOR << 16) |                  \
                         (GORT_VERSION_MINOR << 8) | GORT_VERSION_PATCH)
#error "GORT_VERSION_HEX is not 0xMMmmpp"
#endif
#if GORT_VERSION_MAJOR > 255 || GORT_VERSION_MINOR > 255 ||             \
    GORT_VERSION_PATCH > 255
#error "a version part does not fit GORT_VERSION_HEX's byte"
#endif

/* The library this binary runs with is the header's version: the string,
 * and the same three numbers as the macros. */
TEST(version_string)
{
    const char *v = gort_version();
    CHECK(v != NULL);
    CHECK_STR_SAME(v, GORT_VERSION_STRING);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", GORT_VERSION_MAJOR,
             GORT_VERSION_MINOR, GORT_VERSION_PATCH);
    CHECK_STR_SAME(v, want);
    /* The same pointer every time: static storage. */
    CHECK(gort_version() == v);
}

/* GORT_VERSION_HEX is 0xMMmmpp of the library's own version string. */
TEST(version_hex)
{
    unsigned major, minor, patch;
    char rest;
    CHECK_EQ(sscanf(gort_version(), "%u.%u.%u%c", &major, &minor, &patch,
                    &rest), 3);
    CHECK_EQ((major << 16) | (minor << 8) | patch,
             (unsigned)GORT_VERSION_HEX);
    CHECK_EQ(GORT_VERSION_HEX >> 16, GORT_VERSION_MAJOR);
    CHECK_EQ((GORT_VERSION_HEX >> 8) & 0xff, GORT_VERSION_MINOR);
    CHECK_EQ(GORT_VERSION_HEX & 0xff, GORT_VERSION_PATCH);
}

#define LAYOUT(type, size, align)                                       \
    do {                                                                \
        CHECK_EQ(sizeof(type), (size_t)(size));                         \
        CHECK_EQ(alignof(type), (size_t)(align));                       \
    } while (0)
#define FIELD(type, field, off) CHECK_EQ(offsetof(type, field), (size_t)(off))

/* Each public struct's size, alignment and field offsets on the 64-bit
 * targets gort supports (x86-64, aarch64: LP64), as docs/abi.md lists
 * them.  A failure here is an ABI change: see docs/abi.md for what else
 * must change with it. */
TEST(struct_layout)
{
    CHECK_EQ(sizeof(void *), 8u);

    LAYOUT(gort_waitgroup, 16, 8);
    FIELD(gort_waitgroup, state, 0);
    FIELD(gort_waitgroup, sema, 8);

    LAYOUT(gort_case, 32, 8);
    FIELD(gort_case, ch, 0);
    FIELD(gort_case, dir, 8);
    FIELD(gort_case, elem, 16);
    FIELD(gort_case, ok, 24);

    LAYOUT(gort_mutex, 8, 4);
    FIELD(gort_mutex, state, 0);
    FIELD(gort_mutex, sema, 4);

    LAYOUT(gort_rwmutex, 24, 4);
    FIELD(gort_rwmutex, w, 0);
    FIELD(gort_rwmutex, writer_sem, 8);
    FIELD(gort_rwmutex, reader_sem, 12);
    FIELD(gort_rwmutex, reader_count, 16);
    FIELD(gort_rwmutex, reader_wait, 20);

    LAYOUT(gort_once, 12, 4);
    FIELD(gort_once, done, 0);
    FIELD(gort_once, m, 4);

    LAYOUT(gort_cond, 40, 8);
    FIELD(gort_cond, l, 0);
    FIELD(gort_cond, wait, 8);
    FIELD(gort_cond, notify, 12);
    FIELD(gort_cond, lock, 16);
    FIELD(gort_cond, head, 24);
    FIELD(gort_cond, tail, 32);

    LAYOUT(gort_metric_desc, 24, 8);
    FIELD(gort_metric_desc, name, 0);
    FIELD(gort_metric_desc, description, 8);
    FIELD(gort_metric_desc, kind, 16);
    FIELD(gort_metric_desc, cumulative, 20);

    LAYOUT(gort_histogram, 40, 8);
    FIELD(gort_histogram, counts, 0);
    FIELD(gort_histogram, cap, 8);
    FIELD(gort_histogram, n, 16);
    FIELD(gort_histogram, buckets, 24);
    FIELD(gort_histogram, total, 32);

    LAYOUT(gort_metric_sample, 72, 8);
    FIELD(gort_metric_sample, name, 0);
    FIELD(gort_metric_sample, kind, 8);
    FIELD(gort_metric_sample, u64, 16);
    FIELD(gort_metric_sample, f64, 24);
    FIELD(gort_metric_sample, hist, 32);

    /* The enums' values are part of the ABI too: programs compile them in. */
    CHECK_EQ(GORT_CASE_RECV, 1);
    CHECK_EQ(GORT_CASE_SEND, 2);
    CHECK_EQ(GORT_CASE_DEFAULT, 3);
    CHECK_EQ(GORT_METRIC_BAD, 0);
    CHECK_EQ(GORT_METRIC_UINT64, 1);
    CHECK_EQ(GORT_METRIC_FLOAT64, 2);
    CHECK_EQ(GORT_METRIC_HISTOGRAM, 3);
    CHECK_EQ(GORT_METRIC_HIST_BUCKETS, 162);
    CHECK_EQ(GORT_CHAN_MAX_ELEM, 65535);
}
