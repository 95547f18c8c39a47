/* SPDX-License-Identifier: MIT */
/*
 * resp.h - the request side of the Redis protocol (RESP2), parsed in place.
 *
 * A request is either an array of bulk strings, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
 * or an inline command, a line of words as typed into telnet ("GET k\r\n").
 * resp_parse looks at the bytes a connection has received and says how
 * many the first request takes; its arguments point into those bytes, so
 * nothing is copied.  It is a pure function: no I/O, no allocation, no
 * global state, and the same bytes always give the same answer.
 *
 * Invariants:
 *   - A request that resp_parse accepts from n bytes is accepted, with the
 *     same length and arguments, from any longer buffer that starts with
 *     those n bytes; a prefix of it is incomplete (0), never an error.  So
 *     the answer never depends on how the bytes were split into reads.
 *   - The limits below are checked on the bytes themselves, whether the
 *     request is complete or not: a request that breaks one is an error as
 *     soon as the offending bytes are in the buffer.
 */
#ifndef GORT_EXAMPLE_RESP_H
#define GORT_EXAMPLE_RESP_H

#include <stddef.h>

/* At most this many arguments in one request (an array or an inline line);
 * Redis allows 1024*1024, far more than any command here needs. */
#define RESP_MAX_ARGS 1024
/* At most this many bytes in one bulk string (Redis: proto-max-bulk-len,
 * 512 MB; 1 MiB keeps a hostile client's buffer small). */
#define RESP_MAX_BULK (1024 * 1024)
/* At most this many bytes in an inline line, its CRLF excluded (Redis's
 * PROTO_INLINE_MAX_SIZE, 64 KiB). */
#define RESP_MAX_INLINE (64 * 1024)

/* One argument: n bytes at p, inside the parsed buffer. */
struct resp_arg {
    const char *p;
    size_t n;
};

/*
 * Parse the first request in buf[0..n).  Returns the bytes it takes (> 0)
 * and its arguments in a[0..*argc) (a holds RESP_MAX_ARGS entries; *argc
 * may be 0 for an empty array or a blank inline line, which the caller
 * skips); 0 when the bytes end before the request does; -1 for a protocol
 * error, with *err set to a static message in Redis's words ("invalid bulk
 * length", ...).  On 0 and -1, a and *argc are unspecified.
 */
long resp_parse(const char *buf, size_t n, struct resp_arg *a, int *argc,
                const char **err);

#endif
