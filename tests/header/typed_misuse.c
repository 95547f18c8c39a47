/* SPDX-License-Identifier: MIT */
/*
 * typed_misuse.c - what a typed channel (GORT_CHAN_OF) refuses at compile
 * time.  header_check.sh compiles it once as it is, which must succeed,
 * and once with each -DMISUSE=N, which must fail (with -Werror: a pointer
 * of another type is a constraint violation that every compiler
 * diagnoses, an error by default in gcc 14 and clang 16).
 */
#include <gort.h>

struct job {
    int id;
    char name[60];
};
GORT_CHAN_OF(job_chan, struct job);
GORT_CHAN_OF(int_chan, int);

int typed_misuse(job_chan jobs, int_chan ints);
int typed_misuse(job_chan jobs, int_chan ints)
{
    struct job j = {1, "x"};
    int i = 0;
    long l = 0;
    (void)l;
#if MISUSE == 1 /* a pointer where the element goes */
    job_chan_send(jobs, &j);
#elif MISUSE == 2 /* receive into another type */
    int_chan_recv(ints, &l);
#elif MISUSE == 3 /* one typed channel for another */
    job_chan_send(ints, j);
#elif MISUSE == 4 /* a select case of another element type */
    gort_case c = int_chan_recv_case(ints, &j);
    (void)c;
#elif MISUSE == 5 /* the untyped pointer where the typed channel goes */
    int_chan_send(int_chan_raw(ints), i);
#elif MISUSE == 6 /* a struct sent on a channel of int */
    int_chan_send(ints, j);
#else
    job_chan_send(jobs, j);
    int_chan_send(ints, i);
    (void)job_chan_recv(jobs, &j);
    (void)int_chan_recv(ints, &i);
#endif
    return i + j.id;
}
