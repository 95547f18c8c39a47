/* SPDX-License-Identifier: MIT */
/*
 * layout.c - prints the layout of every public type of gort.h: the size
 * and alignment of each struct and enum, and the offset of each field.
 * These are the library's ABI.  tests/header/header_check.sh builds this
 * file as C99, C11 and every C++ standard with each compiler it finds
 * and requires the same output from all of them, equal to layout.expected
 * on LP64 targets (x86-64, aarch64): C and C++ programs, and programs
 * built against older and newer headers, then agree on every struct.
 * Compiles as C and as C++ (the script passes -x c++), so it uses only
 * what both languages share; __alignof__ is the one spelling of alignof
 * that gcc and clang accept in C99, C11 and C++.
 */
#include <gort.h>
#include <stddef.h>
#include <stdio.h>

#define TYPE(t) printf("%s size %zu align %zu\n", #t, sizeof(t), (size_t)__alignof__(t))
#define FIELD(t, f) printf("%s.%s offset %zu\n", #t, #f, offsetof(t, f))

int main(void)
{
    TYPE(gort_waitgroup);
    FIELD(gort_waitgroup, state);
    FIELD(gort_waitgroup, sema);

    TYPE(enum gort_case_dir);
    TYPE(gort_case);
    FIELD(gort_case, ch);
    FIELD(gort_case, dir);
    FIELD(gort_case, elem);
    FIELD(gort_case, ok);

    TYPE(gort_mutex);
    FIELD(gort_mutex, state);
    FIELD(gort_mutex, sema);

    TYPE(gort_rwmutex);
    FIELD(gort_rwmutex, w);
    FIELD(gort_rwmutex, writer_sem);
    FIELD(gort_rwmutex, reader_sem);
    FIELD(gort_rwmutex, reader_count);
    FIELD(gort_rwmutex, reader_wait);

    TYPE(gort_once);
    FIELD(gort_once, done);
    FIELD(gort_once, m);

    TYPE(gort_cond);
    FIELD(gort_cond, l);
    FIELD(gort_cond, wait);
    FIELD(gort_cond, notify);
    FIELD(gort_cond, lock);
    FIELD(gort_cond, head);
    FIELD(gort_cond, tail);

    TYPE(enum gort_metric_kind);
    TYPE(gort_metric_desc);
    FIELD(gort_metric_desc, name);
    FIELD(gort_metric_desc, description);
    FIELD(gort_metric_desc, kind);
    FIELD(gort_metric_desc, cumulative);

    TYPE(gort_histogram);
    FIELD(gort_histogram, counts);
    FIELD(gort_histogram, cap);
    FIELD(gort_histogram, n);
    FIELD(gort_histogram, buckets);
    FIELD(gort_histogram, total);

    TYPE(gort_metric_sample);
    FIELD(gort_metric_sample, name);
    FIELD(gort_metric_sample, kind);
    FIELD(gort_metric_sample, u64);
    FIELD(gort_metric_sample, f64);
    FIELD(gort_metric_sample, hist);
    return 0;
}
