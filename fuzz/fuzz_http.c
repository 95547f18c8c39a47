/* SPDX-License-Identifier: MIT */
/*
 * fuzz_http.c - libFuzzer harness for the HTTP request parser
 * (examples/httpparse.c).
 *
 * The input is what one client sends on a connection.  A model of http's
 * connection loop runs over it: parse a head, then take its body (by
 * Content-Length, or through the chunked decoder), then the next head
 * while the connection is kept alive, until an error, the end of the
 * input, or a request that closes the connection.  Every answer is
 * checked: an accepted head lies within the input, has no NUL, no bare LF
 * and no bare CR, and its method and target lie inside it; an error is one
 * of the statuses httpparse.h lists, with a reason; chunk data lie within
 * the bytes given and a body never passes HTTP_MAX_BODY.  Then the model
 * runs again over the same input split into reads of 1 to 64 bytes (sizes
 * drawn from the input): the requests, their bodies' bytes and the final
 * answer, with its reason, must be the same (httpparse.h's invariant).
 */
#include "fuzz.h"
#include "httpparse.h"

#include <string.h>

/* Where the model is in the stream. */
enum phase { HEAD, SIZED, CHUNKED, STOPPED };

/* The model's state, and what it saw. */
struct model {
    enum phase phase;
    bool keep;               /* the current request keeps the connection */
    uint64_t left;           /* bytes of a sized body still to come */
    struct http_chunked dec; /* the decoder of a chunked body */
    size_t consumed;         /* bytes taken from the stream */
    size_t requests;         /* heads accepted */
    long last;               /* 0, -status, or 1 when the connection closed
                                after a request that asked for it */
    const char *why;         /* the reason of an error */
    uint64_t digest;         /* of every head's fields and body byte */
};

static void check_head(const char *h, long len, const struct http_request *r)
{
    FUZZ_CHECK(len <= HTTP_MAX_HEAD);
    FUZZ_CHECK(r->method >= h && r->method_len >= 1 &&
               r->method + r->method_len <= h + len);
    FUZZ_CHECK(r->target >= h && r->target_len >= 1 &&
               r->target + r->target_len <= h + len);
    FUZZ_CHECK(r->minor >= 0 && r->minor <= 9);
    FUZZ_CHECK(r->content_length <= HTTP_MAX_BODY);
    FUZZ_CHECK(!r->chunked || r->content_length == 0);
    FUZZ_CHECK(r->error == NULL);
    for (long i = 0; i < len; i++) {
        FUZZ_CHECK(h[i] != '\0');
        if (h[i] == '\n')
            FUZZ_CHECK(i > 0 && h[i - 1] == '\r');
        if (h[i] == '\r')
            FUZZ_CHECK(i + 1 < len && h[i + 1] == '\n');
    }
}

static bool head_status(long st)
{
    return st == 400 || st == 413 || st == 414 || st == 431 || st == 501 ||
           st == 505;
}

/* The model has taken a whole request: on to the next head, or stop. */
static void request_done(struct model *m)
{
    m->phase = m->keep ? HEAD : STOPPED;
    if (!m->keep)
        m->last = 1;
}

static void stop(struct model *m, long status, const char *why)
{
    FUZZ_CHECK(why != NULL);
    m->phase = STOPPED;
    m->last = status;
    m->why = why;
}

/* One head at d[m->consumed..avail); false when the bytes ran out. */
static bool step_head(struct model *m, const char *d, size_t avail)
{
    struct http_request r;
    const char *h = d + m->consumed;
    long len = http_parse_request(h, avail - m->consumed, &r);
    FUZZ_CHECK(len <= (long)(avail - m->consumed));
    if (len == 0)
        return false;
    if (len < 0) {
        FUZZ_CHECK(head_status(-len));
        stop(m, len, r.error);
        return true;
    }
    check_head(h, len, &r);
    uint64_t g = fuzz_mix(m->digest, h, (size_t)len);
    g = fuzz_mix(g, &r.content_length, sizeof r.content_length);
    g = fuzz_mix(g, &r.chunked, sizeof r.chunked);
    m->digest = fuzz_mix(g, &r.keep_alive, sizeof r.keep_alive);
    m->consumed += (size_t)len;
    m->requests++;
    m->keep = r.keep_alive;
    m->left = r.content_length;
    if (r.chunked) {
        http_chunked_init(&m->dec);
        m->phase = CHUNKED;
    } else if (r.content_length > 0) {
        m->phase = SIZED;
    } else {
        request_done(m);
    }
    return true;
}

/* Body bytes at d[m->consumed..avail); false when the bytes ran out. */
static bool step_sized(struct model *m, const char *d, size_t avail)
{
    size_t have = avail - m->consumed;
    if (have == 0)
        return false;
    size_t take = m->left < have ? (size_t)m->left : have;
    m->digest = fuzz_mix(m->digest, d + m->consumed, take);
    m->consumed += take;
    m->left -= take;
    if (m->left == 0)
        request_done(m);
    return true;
}

/* Chunked bytes at d[m->consumed..avail); false when the bytes ran out. */
static bool step_chunked(struct model *m, const char *d, size_t avail)
{
    size_t have = avail - m->consumed;
    if (have == 0)
        return false;
    const char *b = d + m->consumed, *data = NULL, *why = NULL;
    size_t len = 0;
    long r = http_chunked_decode(&m->dec, b, have, &data, &len, &why);
    if (r < 0) {
        FUZZ_CHECK(r == -400 || r == -413 || r == -431);
        stop(m, r, why);
        return true;
    }
    FUZZ_CHECK((size_t)r <= have);
    FUZZ_CHECK(len == 0 || (data >= b && data + len <= b + r));
    FUZZ_CHECK(m->dec.total <= HTTP_MAX_BODY);
    /* Progress: bytes consumed, or the body just ended. */
    FUZZ_CHECK(r > 0 || http_chunked_done(&m->dec));
    m->digest = fuzz_mix(m->digest, data, len);
    m->consumed += (size_t)r;
    if (http_chunked_done(&m->dec))
        request_done(m);
    return true;
}

/* Run the model over d[..avail), as far as those bytes take it. */
static void advance(struct model *m, const char *d, size_t avail)
{
    bool going = true;
    while (going && m->phase != STOPPED) {
        switch (m->phase) {
        case HEAD:
            going = step_head(m, d, avail);
            break;
        case SIZED:
            going = step_sized(m, d, avail);
            break;
        default:
            going = step_chunked(m, d, avail);
            break;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data;
    struct model whole = {.digest = FUZZ_DIGEST_INIT};
    advance(&whole, d, size);

    struct model split = {.digest = FUZZ_DIGEST_INIT};
    uint64_t rng = fuzz_mix(FUZZ_DIGEST_INIT, data, size < 16 ? size : 16);
    size_t avail = 0;
    while (split.phase != STOPPED && avail < size) {
        size_t piece = fuzz_piece(&rng);
        avail = size - avail < piece ? size : avail + piece;
        advance(&split, d, avail);
    }
    FUZZ_CHECK(split.requests == whole.requests);
    /* An error in a chunked body leaves the bytes before it in the same
     * call unaccounted for, which depends on the split: compare the bytes
     * taken only when the model did not stop on an error. */
    FUZZ_CHECK(split.consumed == whole.consumed || whole.last < 0);
    FUZZ_CHECK(split.digest == whole.digest);
    FUZZ_CHECK(split.last == whole.last);
    FUZZ_CHECK(split.last >= 0 || strcmp(split.why, whole.why) == 0);
    return 0;
}
