/* SPDX-License-Identifier: MIT */
/*
 * httpparse.h - HTTP/1.1 request framing (RFC 9112), parsed in place.
 *
 * http_parse_request reads a request's head (the request line and the
 * header section) from the bytes a connection has received and says how
 * long it is, how long its body is, and whether the connection may carry
 * another request.  The http_chunked_* functions decode a chunked body as
 * its bytes arrive.  All are pure functions over the caller's buffer: no
 * I/O, no allocation, no global state; nothing is copied (the method and
 * target point into the buffer).
 *
 * Strictness, after RFC 9112 and nginx: every rule below is an error and
 * the caller answers with the status and closes the connection, since
 * after a framing error it cannot know where the next request starts.
 *
 *   400  a malformed request line; a line ending in a bare LF or a bare CR
 *        (RFC 9112 2.2 lets a server accept a bare LF; accepting it is how
 *        two servers in a chain come to disagree on where a request ends);
 *        a control character (NUL included) anywhere in the head; a header
 *        line without a colon, with an empty name, with whitespace before
 *        the colon (5.1), or starting with whitespace (obs-fold, 5.2, or
 *        whitespace before the first field, 2.2); HTTP/1.1 without Host, or
 *        more than one Host, or a Host with characters no authority has
 *        (3.2); a Content-Length that is not all digits, or more than one
 *        Content-Length line, even with the same value (6.3 lets a server
 *        accept identical values; like nginx we reject any duplicate: no
 *        client sends one, and an intermediary may have read another);
 *        Transfer-Encoding with Content-Length (6.3), in HTTP/1.0 (6.1),
 *        with chunked twice, with no coding, or with chunked not last
 *        (6.3); in a chunked body, a malformed chunk-size line, chunk data
 *        not followed by CRLF, a chunk-size line (extensions included) over
 *        HTTP_MAX_CHUNK_LINE, or a malformed trailer line (7.1).
 *   413  a body over HTTP_MAX_BODY bytes, declared by Content-Length or
 *        reached by the chunks.
 *   414  a request line over HTTP_MAX_LINE bytes, CRLF included.
 *   431  a head over HTTP_MAX_HEAD bytes, or a trailer section over it.
 *   501  a transfer coding other than chunked (6.1).
 *   505  an HTTP version other than 1.x.
 *
 * Invariants (checked by fuzz/fuzz_http.c):
 *   - Only the bytes given are read, in order, and a verdict is reached as
 *     soon as those bytes decide it: a head (or chunked body) that is
 *     accepted, or refused, from n bytes gets the same answer from any
 *     longer buffer that starts with them, and a prefix of it is merely
 *     incomplete.  So the answer never depends on how the bytes were split
 *     into reads.
 *   - A limit is an error as soon as the bytes in hand pass it, complete
 *     or not: the caller's buffer never needs more than HTTP_MAX_HEAD
 *     bytes for a head.
 */
#ifndef GORT_EXAMPLE_HTTPPARSE_H
#define GORT_EXAMPLE_HTTPPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The request line, CRLF included (RFC 9112 3 recommends supporting at
 * least 8000 octets; nginx's large_client_header_buffers are 8 KiB). */
#define HTTP_MAX_LINE (8 * 1024)
/* The head: empty lines before it, the request line and the header
 * section, its final CRLF included; also the limit of a trailer section. */
#define HTTP_MAX_HEAD (16 * 1024)
/* A request body, however it is framed. */
#define HTTP_MAX_BODY (1024 * 1024)
/* A chunk-size line with its extensions, CRLF excluded. */
#define HTTP_MAX_CHUNK_LINE 4096

/* A request head, as http_parse_request found it. */
struct http_request {
    const char *method;     /* the method token, in the caller's buffer */
    size_t method_len;
    const char *target;     /* the request target, in the caller's buffer */
    size_t target_len;
    int minor;              /* x of HTTP/1.x; 2-9 are read as 1.1 */
    bool keep_alive;        /* the connection may carry another request:
                               HTTP/1.1 unless "Connection: close", 1.0
                               only with "Connection: keep-alive" */
    bool chunked;           /* the body is chunked (http_chunked_*) */
    uint64_t content_length; /* the body's length when not chunked, 0
                                without Content-Length */
    bool expect_continue;   /* "Expect: 100-continue": the client waits
                               for a 100 (Continue) before it sends the
                               body (RFC 9110 10.1.1) */
    const char *error;      /* after an error: why, in a few words (a
                               static string) */
};

/*
 * Parse the request head at the start of buf[0..n).  Returns the head's
 * length (> 0), its final CRLF included, with *req filled in; 0 when the
 * bytes end before the head does and no limit is passed yet; or minus the
 * status to answer with (-400, -413, -414, -431, -501, -505), with
 * req->error set.  Empty lines (CRLF) before the request line are skipped
 * and counted in the length, as RFC 9112 2.2 asks.  On 0 the other fields
 * of *req are unspecified.
 */
long http_parse_request(const char *buf, size_t n, struct http_request *req);

/* Where a chunked body's decoder is.  Initialise with http_chunked_init;
 * the fields are the decoder's own. */
struct http_chunked {
    int state;          /* the part of the chunked grammar it is in */
    uint64_t left;      /* the chunk size being read, then its data bytes
                           still to come */
    uint64_t total;     /* data bytes of the body so far */
    size_t line;        /* bytes so far of the chunk-size line, or of the
                           trailer section */
};

void http_chunked_init(struct http_chunked *c);

/*
 * Decode the next bytes of a chunked body, buf[0..n), which continue
 * exactly where the previous call's consumed bytes ended.  Returns the
 * bytes consumed (<= n) and sets *data and *len to the chunk data among
 * them, if any (*len 0 otherwise); a call stops after one stretch of data,
 * so the caller calls again with the rest.  Returns minus a status (-400,
 * -413, -431) with *error set when the body is malformed or too large.
 * After the body's last byte (the CRLF that ends the trailer section) it
 * consumes nothing more: the bytes after it are the next request.
 */
long http_chunked_decode(struct http_chunked *c, const char *buf, size_t n,
                         const char **data, size_t *len, const char **error);

/* Whether the whole body, trailer section included, has been decoded. */
bool http_chunked_done(const struct http_chunked *c);

#endif
