/* SPDX-License-Identifier: MIT */
/*
 * httpparse.c - HTTP/1.1 request framing (httpparse.h).
 *
 * The grammar, from RFC 9112 (sections 2-7) and RFC 9110 (5.6):
 *
 *   head         = *( CRLF ) request-line *( field-line CRLF ) CRLF
 *   request-line = method SP request-target SP HTTP-version CRLF
 *   method       = token
 *   field-line   = field-name ":" OWS field-value OWS
 *   field-name   = token
 *   field-value  = *( VCHAR / obs-text / SP / HTAB ), CTLs excluded
 *   chunked-body = *chunk last-chunk trailer-section CRLF
 *   chunk        = chunk-size [ BWS ";" chunk-ext ] CRLF chunk-data CRLF
 *   chunk-size   = 1*HEXDIG
 *
 * The request target is taken as any run of visible bytes, obs-text
 * (0x80-0xff) included, as nginx takes it; routing compares it exactly.
 *
 * How it reads: one pass over the bytes, each byte classified by a table,
 * positions kept as offsets from the start of the buffer.  Every scan
 * stops at the first of three ends: the bytes in hand, the head limit and,
 * in the request line, the line limit.  Stopping at the bytes in hand
 * means "incomplete"; stopping at a limit is the limit's error.  Because
 * every rule is decided on bytes already seen, in order, a verdict never
 * changes when more bytes arrive (the invariant of httpparse.h).
 *
 * Alternative rejected: finding the end of the head first (searching for
 * CRLFCRLF) and then parsing it.  A head ended by bare LFs, or holding a
 * NUL, would never be found, and the connection would wait for the idle
 * timeout instead of getting its 400.
 */
#include "httpparse.h"

#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------------------
 * Bytes.
 * ------------------------------------------------------------------------- */

enum {
    C_TCHAR = 1,  /* token: ALPHA DIGIT ! # $ % & ' * + - . ^ _ ` | ~ */
    C_TARGET = 2, /* request target: VCHAR and obs-text */
    C_FIELD = 4,  /* field value: VCHAR, obs-text, SP and HTAB */
    C_HOST = 8,   /* Host: ALPHA DIGIT - . _ ~ ! $ & ' ( ) * + , ; = : [ ] % */
};

static const unsigned char cls[256] = {
     0,  0,  0,  0,  0,  0,  0,  0,  0,  4,  0,  0,  0,  0,  0,  0,  /* 0x00 */
     0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 0x10 */
     4, 15,  6,  7, 15, 15, 15, 15, 14, 14, 15, 15, 14, 15, 15,  6,  /* 0x20 */
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 14, 14,  6, 14,  6,  6,  /* 0x30 */
     6, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,  /* 0x40 */
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 14,  6, 14,  7, 15,  /* 0x50 */
     7, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,  /* 0x60 */
    15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,  6,  7,  6, 15,  0,  /* 0x70 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0x80 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0x90 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0xa0 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0xb0 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0xc0 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0xd0 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0xe0 */
     6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  6,  /* 0xf0 */
};

#define IS(c, k) ((cls[(unsigned char)(c)] & (k)) != 0)

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Whether name[0..n) is lit (lower case), in any case. */
static bool name_is(const char *name, size_t n, const char *lit)
{
    return n == strlen(lit) && strncasecmp(name, lit, n) == 0;
}

/* The next element of the comma-separated list v[*i..n), OWS trimmed, in
 * *e and *elen; empty elements are skipped (RFC 9110 5.6.1).  False at the
 * end of the list. */
static bool list_next(const char *v, size_t n, size_t *i, const char **e,
                      size_t *elen)
{
    while (*i < n) {
        size_t a = *i, z = a;
        while (z < n && v[z] != ',')
            z++;
        *i = z < n ? z + 1 : n;
        while (a < z && is_ows(v[a]))
            a++;
        while (z > a && is_ows(v[z - 1]))
            z--;
        if (z > a) {
            *e = v + a;
            *elen = z - a;
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------
 * The head.
 * ------------------------------------------------------------------------- */

/* What the scan of a head keeps from line to line. */
struct scan {
    const char *buf;
    size_t n;                 /* bytes in hand */
    size_t pos;               /* the next byte to read */
    struct http_request *req;
    int hosts;                /* Host lines */
    bool has_length;          /* a Content-Length line was seen */
    bool close, keep;         /* Connection: close, keep-alive */
    bool has_coding;          /* a Transfer-Encoding line was seen */
    int codings, chunked;     /* codings listed, and how many are chunked */
    bool last_chunked;        /* the last coding listed is chunked */
    bool unknown;             /* a coding other than chunked is listed */
};

/* Results of a step of the scan besides -status. */
enum { NEED_MORE = 0, LINE_DONE = 1, HEAD_DONE = 2 };

/* No line limit (a field line is bounded by the head limit only). */
#define NO_LIMIT ((size_t)-1)

static int fail(struct scan *s, int status, const char *why)
{
    s->req->error = why;
    return -status;
}

/* Where a scan must stop: the bytes in hand, the head limit or lim. */
static size_t stop_at(const struct scan *s, size_t lim)
{
    size_t stop = s->n < HTTP_MAX_HEAD ? s->n : HTTP_MAX_HEAD;
    return stop < lim ? stop : lim;
}

/* The scan needs byte i, which it may not read (i is its stop): the error
 * of the limit it reached, or NEED_MORE when the bytes ran out first. */
static int out_of_bytes(struct scan *s, size_t i, size_t line_lim)
{
    if (i >= line_lim)
        return fail(s, 414, "request line too long");
    if (i >= HTTP_MAX_HEAD)
        return fail(s, 431, "header section too large");
    return NEED_MORE;
}

/* The CRLF that ends a line starts at i (< stop): LINE_DONE with s->pos
 * past it. */
static int line_end(struct scan *s, size_t i, size_t stop)
{
    const char *b = s->buf;
    if (b[i] == '\n')
        return fail(s, 400, "bare LF");
    if (b[i] != '\r')
        return fail(s, 400, "control character in the head");
    if (i + 1 == stop)
        return out_of_bytes(s, i + 1, NO_LIMIT);
    if (b[i + 1] != '\n')
        return fail(s, 400, "bare CR");
    s->pos = i + 2;
    return LINE_DONE;
}

/* Empty lines before the request line are skipped (RFC 9112 2.2). */
static int skip_empty_lines(struct scan *s)
{
    size_t stop = stop_at(s, NO_LIMIT);
    int r = LINE_DONE;
    while (r == LINE_DONE && s->pos < stop && s->buf[s->pos] == '\r')
        r = line_end(s, s->pos, stop);
    if (r != LINE_DONE)
        return r;
    if (s->pos == stop)
        return out_of_bytes(s, s->pos, NO_LIMIT);
    return s->buf[s->pos] == '\n' ? fail(s, 400, "bare LF") : LINE_DONE;
}

/* The request line's part ended at byte c where a SP was due. */
static int line_error(struct scan *s, char c)
{
    if (c == '\n')
        return fail(s, 400, "bare LF");
    return fail(s, 400, IS(c, C_FIELD) || c == '\r'
                            ? "malformed request line"
                            : "control character in the request line");
}

/* "HTTP/1.x" CRLF at i. */
static int version(struct scan *s, size_t i, size_t stop, size_t line_lim)
{
    static const char want[] = "HTTP/1.x\r\n";
    for (int k = 0; k < 10; k++, i++) {
        if (i == stop)
            return out_of_bytes(s, i, line_lim);
        char c = s->buf[i];
        bool digit = c >= '0' && c <= '9';
        if (k == 5 && digit && c != '1')
            return fail(s, 505, "HTTP version not supported");
        if (k == 7 ? !digit : c != want[k])
            return line_error(s, c);
        if (k == 7)
            s->req->minor = c - '0';
    }
    s->pos = i;
    return LINE_DONE;
}

/* method SP request-target SP HTTP-version CRLF, at most HTTP_MAX_LINE
 * bytes. */
static int request_line(struct scan *s)
{
    const char *b = s->buf;
    size_t i = s->pos, line_lim = s->pos + HTTP_MAX_LINE;
    size_t stop = stop_at(s, line_lim);
    size_t m = i;
    while (i < stop && IS(b[i], C_TCHAR))
        i++;
    if (i == stop)
        return out_of_bytes(s, i, line_lim);
    if (b[i] != ' ' || i == m)
        return line_error(s, b[i]);
    s->req->method = b + m;
    s->req->method_len = i - m;
    size_t t = ++i;
    while (i < stop && IS(b[i], C_TARGET))
        i++;
    if (i == stop)
        return out_of_bytes(s, i, line_lim);
    if (b[i] != ' ' || i == t)
        return line_error(s, b[i]);
    s->req->target = b + t;
    s->req->target_len = i - t;
    return version(s, i + 1, stop, line_lim);
}

/* Host: at most one, and only the bytes of an authority (RFC 9112 3.2). */
static int field_host(struct scan *s, const char *v, size_t n)
{
    if (++s->hosts > 1)
        return fail(s, 400, "more than one Host");
    for (size_t i = 0; i < n; i++)
        if (!IS(v[i], C_HOST))
            return fail(s, 400, "invalid Host");
    return LINE_DONE;
}

/* Content-Length: one line, digits only (RFC 9112 6.3), at most
 * HTTP_MAX_BODY. */
static int field_length(struct scan *s, const char *v, size_t n)
{
    if (s->has_length)
        return fail(s, 400, "more than one Content-Length");
    s->has_length = true;
    uint64_t x = 0;
    bool big = false;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return fail(s, 400, "invalid Content-Length");
        x = big ? x : x * 10 + (uint64_t)(v[i] - '0');
        big = big || x > HTTP_MAX_BODY;
    }
    if (n == 0)
        return fail(s, 400, "invalid Content-Length");
    if (big)
        return fail(s, 413, "body too large");
    s->req->content_length = x;
    return LINE_DONE;
}

/* Transfer-Encoding: its codings are noted and judged at the end of the
 * head (finish), when Content-Length and the version are known. */
static int field_coding(struct scan *s, const char *v, size_t n)
{
    s->has_coding = true;
    size_t i = 0, elen;
    const char *e;
    while (list_next(v, n, &i, &e, &elen)) {
        bool ch = name_is(e, elen, "chunked");
        s->codings++;
        s->chunked += ch;
        s->unknown = s->unknown || !ch;
        s->last_chunked = ch;
    }
    return LINE_DONE;
}

/* Connection: the close and keep-alive options; others are ignored. */
static int field_connection(struct scan *s, const char *v, size_t n)
{
    size_t i = 0, elen;
    const char *e;
    while (list_next(v, n, &i, &e, &elen)) {
        s->close = s->close || name_is(e, elen, "close");
        s->keep = s->keep || name_is(e, elen, "keep-alive");
    }
    return LINE_DONE;
}

/* Expect: only 100-continue means anything (RFC 9110 10.1.1). */
static int field_expect(struct scan *s, const char *v, size_t n)
{
    s->req->expect_continue = s->req->expect_continue ||
                              name_is(v, n, "100-continue");
    return LINE_DONE;
}

/* Take in a field line's name[0..nlen) and value v[0..vlen). */
static int apply_field(struct scan *s, const char *name, size_t nlen,
                       const char *v, size_t vlen)
{
    if (name_is(name, nlen, "host"))
        return field_host(s, v, vlen);
    if (name_is(name, nlen, "content-length"))
        return field_length(s, v, vlen);
    if (name_is(name, nlen, "transfer-encoding"))
        return field_coding(s, v, vlen);
    if (name_is(name, nlen, "connection"))
        return field_connection(s, v, vlen);
    if (name_is(name, nlen, "expect"))
        return field_expect(s, v, vlen);
    return LINE_DONE;
}

/* A field name ended at byte c where the colon was due. */
static int name_error(struct scan *s, char c, bool empty)
{
    if (c == '\n')
        return fail(s, 400, "bare LF");
    if (is_ows(c))
        return fail(s, 400, "whitespace between field name and colon");
    if (c == '\r')
        return fail(s, 400, "header line without a colon");
    if (empty && c == ':')
        return fail(s, 400, "empty field name");
    return fail(s, 400, IS(c, C_FIELD) ? "invalid character in a field name"
                                       : "control character in the head");
}

/* A field line, or the CRLF that ends the head (HEAD_DONE). */
static int field_line(struct scan *s)
{
    const char *b = s->buf;
    size_t i = s->pos, stop = stop_at(s, NO_LIMIT);
    if (i == stop)
        return out_of_bytes(s, i, NO_LIMIT);
    if (b[i] == '\r') {
        int r = line_end(s, i, stop);
        return r == LINE_DONE ? HEAD_DONE : r;
    }
    if (is_ows(b[i]))
        return fail(s, 400, "obsolete line folding");
    size_t name = i;
    while (i < stop && IS(b[i], C_TCHAR))
        i++;
    if (i == stop)
        return out_of_bytes(s, i, NO_LIMIT);
    if (b[i] != ':' || i == name)
        return name_error(s, b[i], i == name);
    size_t nlen = i - name;
    for (i++; i < stop && is_ows(b[i]); i++)
        ;
    size_t v = i;
    while (i < stop && IS(b[i], C_FIELD))
        i++;
    if (i == stop)
        return out_of_bytes(s, i, NO_LIMIT);
    size_t ve = i;
    int r = line_end(s, i, stop);
    if (r != LINE_DONE)
        return r;
    while (ve > v && is_ows(b[ve - 1]))
        ve--;
    return apply_field(s, b + name, nlen, b + v, ve - v);
}

/* The checks that need the whole head; HEAD_DONE when it is good. */
static int finish(struct scan *s)
{
    struct http_request *r = s->req;
    r->keep_alive = r->minor >= 1 ? !s->close : s->keep && !s->close;
    if (r->minor >= 1 && s->hosts == 0)
        return fail(s, 400, "missing Host");
    if (!s->has_coding)
        return HEAD_DONE;
    if (r->minor == 0)
        return fail(s, 400, "Transfer-Encoding in HTTP/1.0");
    if (s->has_length)
        return fail(s, 400, "both Transfer-Encoding and Content-Length");
    if (s->codings == 0 || s->chunked > 1)
        return fail(s, 400, "malformed Transfer-Encoding");
    if (s->chunked == 1 && !s->last_chunked)
        return fail(s, 400, "chunked is not the last transfer coding");
    if (s->unknown)
        return fail(s, 501, "unsupported transfer coding");
    r->chunked = true;
    return HEAD_DONE;
}

long http_parse_request(const char *buf, size_t n, struct http_request *req)
{
    struct scan s = {.buf = buf, .n = n, .req = req};
    req->content_length = 0;
    req->chunked = false;
    req->keep_alive = false;
    req->expect_continue = false;
    req->error = NULL;
    int r = skip_empty_lines(&s);
    if (r == LINE_DONE)
        r = request_line(&s);
    while (r == LINE_DONE)
        r = field_line(&s);
    if (r == HEAD_DONE)
        r = finish(&s);
    return r == HEAD_DONE ? (long)s.pos : r;
}

/* ---------------------------------------------------------------------------
 * Chunked bodies: a state machine fed byte by byte, except chunk data,
 * which is handed back in stretches.
 * ------------------------------------------------------------------------- */

/* The decoder's states, in the order of the grammar.  Those up to CH_EXT
 * are inside a chunk-size line, those from CH_TRAILER on inside the trailer
 * section (each bounded, see chunk_count). */
enum {
    CH_SIZE,          /* the first hex digit of a chunk size */
    CH_SIZE_MORE,     /* more hex digits, or what ends them */
    CH_SIZE_WS,       /* whitespace after the size: a ';' is due */
    CH_EXT,           /* a chunk extension, ignored up to CR */
    CH_SIZE_LF,       /* the LF ending the chunk-size line */
    CH_DATA,          /* chunk data (left bytes of it) */
    CH_DATA_CR,       /* the CRLF after chunk data */
    CH_DATA_LF,
    CH_TRAILER,       /* a trailer line's start, or the final CRLF */
    CH_TRAILER_NAME,  /* a trailer field's name */
    CH_TRAILER_VALUE, /* its value */
    CH_TRAILER_LF,    /* the LF ending a trailer line */
    CH_END_LF,        /* the LF of the final CRLF */
    CH_DONE,
};

void http_chunked_init(struct http_chunked *c)
{
    *c = (struct http_chunked){.state = CH_SIZE};
}

bool http_chunked_done(const struct http_chunked *c)
{
    return c->state == CH_DONE;
}

static int hex_value(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch |= 0x20;
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static int chunk_fail(const char **error, int status, const char *why)
{
    *error = why;
    return -status;
}

/* Why byte ch cannot stand where the grammar wants something else. */
static int chunk_bad(const char **error, unsigned char ch, const char *why)
{
    if (ch == '\n')
        why = "bare LF";
    else if (!IS(ch, C_FIELD))
        why = "control character in a chunked body";
    return chunk_fail(error, 400, why);
}

/* Count a byte of a chunk-size line or of the trailer section against its
 * limit. */
static int chunk_count(struct http_chunked *c, const char **error)
{
    if (c->state <= CH_EXT && ++c->line > HTTP_MAX_CHUNK_LINE)
        return chunk_fail(error, 400, "chunk-size line too long");
    if (c->state >= CH_TRAILER && ++c->line > HTTP_MAX_HEAD)
        return chunk_fail(error, 431, "trailer section too large");
    return 0;
}

/* A byte of a chunk-size line: hex digits, then BWS ";" extension, or CR. */
static int size_byte(struct http_chunked *c, unsigned char ch,
                     const char **error)
{
    int d = hex_value(ch);
    if (d >= 0 && c->state != CH_SIZE_WS && c->state != CH_EXT) {
        /* left <= HTTP_MAX_BODY before, so this cannot overflow. */
        c->left = c->left * 16 + (uint64_t)d;
        if (c->left > HTTP_MAX_BODY - c->total)
            return chunk_fail(error, 413, "body too large");
        c->state = CH_SIZE_MORE;
        return 0;
    }
    if (c->state == CH_EXT && ch != '\r')
        return IS(ch, C_FIELD) ? 0 : chunk_bad(error, ch, "");
    if (c->state == CH_SIZE)
        return chunk_bad(error, ch, "malformed chunk size");
    if (ch == ';')
        c->state = CH_EXT;
    else if (is_ows((char)ch))
        c->state = CH_SIZE_WS;
    else if (ch == '\r' && c->state != CH_SIZE_WS)
        c->state = CH_SIZE_LF;
    else
        return chunk_bad(error, ch, "malformed chunk size");
    return 0;
}

/* The chunk-size line ended: its data follow, or the trailer section. */
static void size_done(struct http_chunked *c)
{
    c->line = 0;
    c->total += c->left;
    c->state = c->left ? CH_DATA : CH_TRAILER;
}

/* A byte of the trailer section: field lines, then CRLF. */
static int trailer_byte(struct http_chunked *c, unsigned char ch,
                        const char **error)
{
    switch (c->state) {
    case CH_TRAILER:
        if (ch == '\r')
            c->state = CH_END_LF;
        else if (IS(ch, C_TCHAR))
            c->state = CH_TRAILER_NAME;
        else
            return chunk_bad(error, ch, is_ows((char)ch)
                                            ? "obsolete line folding"
                                            : "malformed trailer field");
        return 0;
    case CH_TRAILER_NAME:
        if (ch == ':')
            c->state = CH_TRAILER_VALUE;
        else if (!IS(ch, C_TCHAR))
            return chunk_bad(error, ch, "malformed trailer field");
        return 0;
    case CH_TRAILER_VALUE:
        if (ch == '\r')
            c->state = CH_TRAILER_LF;
        else if (!IS(ch, C_FIELD))
            return chunk_bad(error, ch, "");
        return 0;
    default: /* CH_TRAILER_LF, CH_END_LF */
        if (ch != '\n')
            return chunk_fail(error, 400, "bare CR");
        c->state = c->state == CH_END_LF ? CH_DONE : CH_TRAILER;
        return 0;
    }
}

/* One byte outside chunk data. */
static int chunk_byte(struct http_chunked *c, unsigned char ch,
                      const char **error)
{
    int r = chunk_count(c, error);
    if (r < 0)
        return r;
    switch (c->state) {
    case CH_SIZE_LF:
        if (ch != '\n')
            return chunk_fail(error, 400, "bare CR");
        size_done(c);
        return 0;
    case CH_DATA_CR:
    case CH_DATA_LF:
        if (ch != (c->state == CH_DATA_CR ? '\r' : '\n'))
            return chunk_fail(error, 400, "chunk data not followed by CRLF");
        c->state = c->state == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
        return 0;
    default:
        if (c->state <= CH_EXT)
            return size_byte(c, ch, error);
        return trailer_byte(c, ch, error);
    }
}

long http_chunked_decode(struct http_chunked *c, const char *buf, size_t n,
                         const char **data, size_t *len, const char **error)
{
    *len = 0;
    size_t i = 0;
    while (i < n && c->state != CH_DONE) {
        if (c->state == CH_DATA) {
            size_t take = n - i < c->left ? n - i : (size_t)c->left;
            *data = buf + i;
            *len = take;
            c->left -= take;
            if (c->left == 0)
                c->state = CH_DATA_CR;
            return (long)(i + take);
        }
        int r = chunk_byte(c, (unsigned char)buf[i], error);
        if (r < 0)
            return r;
        i++;
    }
    return (long)i;
}
