/* SPDX-License-Identifier: MIT */
/*
 * resp.c - the RESP2 request parser (resp.h).
 *
 * The grammar, as redis-server reads it (networking.c,
 * processMultibulkBuffer and processInlineBuffer):
 *
 *   request   = multibulk / inline
 *   multibulk = "*" number CRLF *( "$" number CRLF <that many bytes> CRLF )
 *   inline    = *( word / SP / HTAB ) [CR] LF      (not starting with "*")
 *   number    = ["-"] 1*19DIGIT
 *
 * A negative or zero array length is an empty request; a negative bulk
 * length is an error (Redis reads "$-1" only in replies).
 *
 * Every check looks only at bytes already in the buffer, in order, and
 * "incomplete" is answered only when the bytes run out: that is what makes
 * a request's fate independent of how its bytes were split into reads (the
 * invariant in resp.h, which fuzz/fuzz_resp.c checks).
 */
#include "resp.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

/*
 * A decimal number ending at CRLF, at p (p <= end): 0 with the value in *v
 * and *next past the CRLF; 1 when the bytes end first; -1 when it is
 * malformed (no digits, a byte that is neither digit nor CR, no LF after
 * the CR, or more than 20 bytes before the CR, which no value that fits in
 * a long long needs).
 */
static int number(const char *p, const char *end, long long *v,
                  const char **next)
{
    const char *q = p, *lim = end - p > 21 ? p + 21 : end;
    bool neg = q < lim && *q == '-';
    q += neg;
    long long x = 0;
    for (; q < lim && *q >= '0' && *q <= '9'; q++) {
        if (x > (LLONG_MAX - 9) / 10)
            return -1;
        x = x * 10 + (*q - '0');
    }
    if (q == lim) /* no CR yet: wait for more, unless 21 bytes came */
        return lim == end ? 1 : -1;
    if (*q != '\r' || q == p + neg)
        return -1;
    if (q + 1 >= end)
        return 1;
    if (q[1] != '\n')
        return -1;
    *v = neg ? -x : x;
    *next = q + 2;
    return 0;
}

/* Split the line [p, le) into words at spaces and tabs.  The number of
 * words, or -1 when there are more than RESP_MAX_ARGS. */
static int split_words(const char *p, const char *le, struct resp_arg *a)
{
    int c = 0;
    while (p < le) {
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        if (p == le)
            break;
        const char *w = p;
        while (p < le && *p != ' ' && *p != '\t')
            p++;
        if (c == RESP_MAX_ARGS)
            return -1;
        a[c].p = w;
        a[c].n = (size_t)(p - w);
        c++;
    }
    return c;
}

/* An inline request: words up to LF, at most RESP_MAX_INLINE bytes before
 * the LF whether or not it has come yet. */
static long parse_inline(const char *buf, size_t n, struct resp_arg *a,
                         int *argc, const char **err)
{
    size_t look = n < RESP_MAX_INLINE + 1 ? n : RESP_MAX_INLINE + 1;
    const char *lf = memchr(buf, '\n', look);
    if (!lf) {
        if (n > RESP_MAX_INLINE) {
            *err = "too big inline request";
            return -1;
        }
        return 0;
    }
    const char *le = lf > buf && lf[-1] == '\r' ? lf - 1 : lf;
    int c = split_words(buf, le, a);
    if (c < 0) {
        *err = "too many arguments";
        return -1;
    }
    *argc = c;
    return (long)(lf + 1 - buf);
}

/* One bulk string at *pp: 0 with it in *arg and *pp past its CRLF, 1 when
 * incomplete, -1 with *err when malformed. */
static int parse_bulk(const char **pp, const char *end, struct resp_arg *arg,
                      const char **err)
{
    const char *p = *pp, *next;
    if (p >= end)
        return 1;
    if (*p != '$') {
        *err = "expected '$'";
        return -1;
    }
    long long len;
    int r = number(p + 1, end, &len, &next);
    if (r == 1)
        return 1;
    if (r < 0 || len < 0 || len > RESP_MAX_BULK) {
        *err = "invalid bulk length";
        return -1;
    }
    p = next;
    if (end - p < len + 2)
        return 1;
    if (p[len] != '\r' || p[len + 1] != '\n') {
        *err = "bulk not followed by CRLF";
        return -1;
    }
    arg->p = p;
    arg->n = (size_t)len;
    *pp = p + len + 2;
    return 0;
}

/* A multibulk request: "*count" CRLF, then count bulk strings. */
static long parse_multibulk(const char *buf, size_t n, struct resp_arg *a,
                            int *argc, const char **err)
{
    const char *end = buf + n, *p;
    long long count;
    int r = number(buf + 1, end, &count, &p);
    if (r == 1)
        return 0;
    if (r < 0 || count > RESP_MAX_ARGS) {
        *err = r < 0 ? "invalid multibulk length" : "too many arguments";
        return -1;
    }
    int c = 0;
    for (long long i = 0; i < count; i++, c++) {
        r = parse_bulk(&p, end, &a[c], err);
        if (r != 0)
            return r > 0 ? 0 : -1;
    }
    *argc = c;
    return (long)(p - buf);
}

long resp_parse(const char *buf, size_t n, struct resp_arg *a, int *argc,
                const char **err)
{
    if (n == 0)
        return 0;
    if (buf[0] == '*')
        return parse_multibulk(buf, n, a, argc, err);
    return parse_inline(buf, n, a, argc, err);
}
