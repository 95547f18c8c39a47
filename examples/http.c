/* SPDX-License-Identifier: MIT */
/*
 * http - an HTTP/1.1 server with keep-alive, one goroutine per connection.
 *
 *   build/examples/http [-addr HOST:PORT] [-procs N] [-idle SECONDS]
 *
 * Routes: GET (or HEAD) / and /hello answer "Hello, World!\n"; /metrics
 * answers the scheduler's metrics in the Prometheus text format
 * (gort_metrics_prometheus); POST /echo answers with the request's body;
 * any other path is 404, and a method a path does not take is 405.
 *
 * Requests are parsed in place as they come (httpparse.c), several per
 * read when the client pipelines them, and framed strictly by RFC 9112, as
 * nginx frames them: a body comes by Content-Length or chunked
 * Transfer-Encoding (chunk extensions ignored, the trailer section read
 * and dropped) and is read and discarded, except for /echo.  A request
 * that breaks a rule gets its status and the connection is closed, since
 * after a framing error nobody knows where the next request starts:
 *   400  malformed request line; bare LF or bare CR line ends; a control
 *        character (NUL included) in the head; a header line without a
 *        colon, with whitespace before the colon, or folded (obs-fold);
 *        HTTP/1.1 without Host, or with two; a Content-Length that is not
 *        digits, or two Content-Length lines (even equal ones);
 *        Transfer-Encoding with Content-Length, in HTTP/1.0, or not ending
 *        in chunked; a malformed chunk;
 *   413  a body over 1 MiB;
 *   414  a request line over 8 KiB;
 *   431  a head (or a trailer section) over 16 KiB;
 *   501  a transfer coding other than chunked;
 *   505  an HTTP version other than 1.x.
 * "Expect: 100-continue" gets its 100 (Continue) before the body is read.
 * HTTP/1.0 closes after the response unless the client asks for
 * keep-alive; HTTP/1.1 keeps the connection unless asked to close.  Idle
 * connections close after -idle seconds (default 60).
 *
 *     curl -i http://127.0.0.1:8080/
 *     curl http://127.0.0.1:8080/metrics
 *     curl --data-binary @file http://127.0.0.1:8080/echo
 *     wrk -t2 -c100 -d3s http://127.0.0.1:8080/
 */
#include "httpparse.h"
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const char hello[] = "Hello, World!\n";

/* Appends s to the header being built at *p (the caller sized the
 * buffer for every part). */
static void put_str(char **p, const char *s)
{
    size_t n = strlen(s);
    memcpy(*p, s, n);
    *p += n;
}

/* Appends v in decimal. */
static void put_uint(char **p, unsigned long long v)
{
    char d[20];
    int i = 0;
    do
        d[i++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (i > 0)
        *(*p)++ = d[--i];
}

/* Write a whole response with a body of blen bytes of the given type and
 * the connection header line conn ("" when none is due); false if the
 * connection failed. */
static bool respond_typed(int fd, int status, const char *reason,
                          const char *type, const char *body, size_t blen,
                          bool head, const char *conn)
{
    /* Header and a small body go out in one write (one TCP segment, as
     * Go's buffered response writer sends them).  The header is put
     * together by hand: every request pays for it, and a format string
     * would be parsed anew each time. */
    char hdr[4096];
    if (strlen(reason) + strlen(type) + strlen(conn) > 400 || status < 100 ||
        status > 999)
        return false; /* cannot happen: fixed strings */
    char *p = hdr;
    put_str(&p, "HTTP/1.1 ");
    put_uint(&p, (unsigned)status);
    *p++ = ' ';
    put_str(&p, reason);
    put_str(&p, "\r\nContent-Type: ");
    put_str(&p, type);
    put_str(&p, "\r\nContent-Length: ");
    put_uint(&p, blen);
    put_str(&p, "\r\n");
    put_str(&p, conn);
    put_str(&p, "\r\n");
    size_t n = (size_t)(p - hdr);
    if (head)
        blen = 0;
    if (blen <= sizeof hdr - n) {
        if (blen)
            memcpy(hdr + n, body, blen);
        return gort_write(fd, hdr, n + blen) == (long)(n + blen);
    }
    return gort_write(fd, hdr, n) == (long)n &&
           gort_write(fd, body, blen) == (long)blen;
}

static bool respond(int fd, int status, const char *reason, const char *body,
                    bool head, const char *conn)
{
    return respond_typed(fd, status, reason, "text/plain; charset=utf-8",
                         body, body ? strlen(body) : 0, head, conn);
}

static const char conn_close[] = "Connection: close\r\n";

/* The reason phrase of an error status. */
static const char *reason_of(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Internal Server Error";
    }
}

/* Answer a request that cannot be served with status, saying why, and
 * close (the caller returns after this). */
static void respond_error(int fd, int status, const char *why)
{
    char body[128];
    snprintf(body, sizeof body, "%s\n", why ? why : reason_of(status));
    respond(fd, status, reason_of(status), body, false, conn_close);
}

/* GET /metrics: every metric in the Prometheus text format (0.0.4). */
static bool respond_metrics(int fd, bool head, const char *conn)
{
    char *text;
    size_t len;
    int err = gort_metrics_prometheus(&text, &len);
    if (err)
        return respond(fd, 500, "Internal Server Error",
                       "cannot read the metrics\n", head, conn);
    bool ok = respond_typed(fd, 200, "OK",
                            "text/plain; version=0.0.4; charset=utf-8", text,
                            len, head, conn);
    free(text);
    return ok;
}

/* ---------------------------------------------------------------------------
 * A connection.
 * ------------------------------------------------------------------------- */

struct conn {
    int fd;
    char *buf;          /* HTTP_MAX_HEAD bytes read from the client */
    size_t off, have;   /* buf[off..have): read, not yet parsed */
    char *body;         /* the body kept for POST /echo */
    size_t blen, bcap;
};

/* What a request asks for, decided from its head. */
enum route { R_HELLO, R_METRICS, R_ECHO, R_NOT_FOUND, R_BAD_METHOD };

static bool span_is(const char *p, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

static enum route route(const struct http_request *r, bool *head)
{
    const char *t = r->target;
    size_t tn = r->target_len;
    bool get = span_is(r->method, r->method_len, "GET");
    *head = span_is(r->method, r->method_len, "HEAD");
    if (span_is(r->method, r->method_len, "POST"))
        return span_is(t, tn, "/echo") ? R_ECHO : R_BAD_METHOD;
    if (!get && !*head)
        return R_BAD_METHOD;
    if (span_is(t, tn, "/") || span_is(t, tn, "/hello"))
        return R_HELLO;
    if (span_is(t, tn, "/metrics"))
        return R_METRICS;
    return span_is(t, tn, "/echo") ? R_BAD_METHOD : R_NOT_FOUND;
}

/* Move the unparsed bytes to the front and read more after them.  The
 * caller has fewer than HTTP_MAX_HEAD unparsed bytes (the parser fails a
 * head at that size).  False at end of file, on an error or the idle
 * deadline. */
static bool fill(struct conn *c)
{
    memmove(c->buf, c->buf + c->off, c->have - c->off);
    c->have -= c->off;
    c->off = 0;
    long n = server_read(c->fd, c->buf + c->have, HTTP_MAX_HEAD - c->have);
    if (n <= 0)
        return false;
    c->have += (size_t)n;
    return true;
}

/* Keep n more body bytes for /echo; false when out of memory.  The parser
 * bounds a body by HTTP_MAX_BODY. */
static bool keep_body(struct conn *c, const char *p, size_t n)
{
    if (c->blen + n > c->bcap) {
        size_t cap = c->bcap ? c->bcap : 4096;
        while (cap < c->blen + n)
            cap *= 2;
        char *nb = realloc(c->body, cap);
        if (!nb)
            return false;
        c->body = nb;
        c->bcap = cap;
    }
    memcpy(c->body + c->blen, p, n);
    c->blen += n;
    return true;
}

/* Read a body of `left` bytes, kept when keep is set.  0 when done, -1
 * when the connection failed, or a status to answer with. */
static int read_sized(struct conn *c, uint64_t left, bool keep)
{
    while (left > 0) {
        if (c->off == c->have && !fill(c))
            return -1;
        size_t avail = c->have - c->off;
        size_t take = left < avail ? (size_t)left : avail;
        if (keep && !keep_body(c, c->buf + c->off, take))
            return 500;
        c->off += take;
        left -= take;
    }
    return 0;
}

/* Read a chunked body, kept when keep is set.  0 when done, -1 when the
 * connection failed, or a status to answer with and *why. */
static int read_chunked(struct conn *c, bool keep, const char **why)
{
    struct http_chunked dec;
    http_chunked_init(&dec);
    while (!http_chunked_done(&dec)) {
        if (c->off == c->have && !fill(c))
            return -1;
        const char *data;
        size_t len;
        long r = http_chunked_decode(&dec, c->buf + c->off, c->have - c->off,
                                     &data, &len, why);
        if (r < 0)
            return (int)-r;
        c->off += (size_t)r;
        if (len && keep && !keep_body(c, data, len))
            return 500;
    }
    return 0;
}

/* Read the body the head announced: 0, -1 or a status, as read_sized. */
static int read_body(struct conn *c, const struct http_request *r, bool keep,
                     const char **why)
{
    c->blen = 0;
    *why = NULL;
    bool has_body = r->chunked || r->content_length > 0;
    /* A 100 (Continue) only when the client is still holding the body
     * back: once some of it came, it has stopped waiting. */
    if (has_body && r->expect_continue && r->minor >= 1 &&
        c->off == c->have) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (gort_write(c->fd, cont, sizeof cont - 1) != sizeof cont - 1)
            return -1;
    }
    if (r->chunked)
        return read_chunked(c, keep, why);
    return read_sized(c, r->content_length, keep);
}

/* Answer the request routed to rt. */
static bool respond_route(struct conn *c, enum route rt, bool head,
                          const char *conn)
{
    switch (rt) {
    case R_HELLO:
        return respond(c->fd, 200, "OK", hello, head, conn);
    case R_METRICS:
        return respond_metrics(c->fd, head, conn);
    case R_ECHO:
        return respond_typed(c->fd, 200, "OK", "application/octet-stream",
                             c->body, c->blen, false, conn);
    case R_NOT_FOUND:
        return respond(c->fd, 404, "Not Found", "not found\n", head, conn);
    default:
        return respond(c->fd, 405, "Method Not Allowed",
                       "method not allowed\n", false, conn);
    }
}

/* What follows a request. */
enum next {
    NEXT,     /* the connection carries on */
    CLOSE,    /* the server closes it after its response (linger) */
    GONE,     /* the client went away, idled, or a write failed */
};

/* Read, run and answer one request. */
static enum next serve_one(struct conn *c)
{
    struct http_request req;
    long hlen;
    while ((hlen = http_parse_request(c->buf + c->off, c->have - c->off,
                                      &req)) == 0)
        if (!fill(c))
            return GONE;
    if (hlen < 0) {
        respond_error(c->fd, (int)-hlen, req.error);
        return CLOSE;
    }
    c->off += (size_t)hlen;
    /* The head's bytes may move once the body is read: route first. */
    bool head;
    enum route rt = route(&req, &head);
    const char *conn = !req.keep_alive ? conn_close
                       : req.minor == 0 ? "Connection: keep-alive\r\n"
                                        : "";
    const char *why;
    int st = read_body(c, &req, rt == R_ECHO, &why);
    if (st < 0)
        return GONE;
    if (st > 0) {
        respond_error(c->fd, st, why);
        return CLOSE;
    }
    if (!respond_route(c, rt, head, conn))
        return GONE;
    return req.keep_alive ? NEXT : CLOSE;
}

/* How long, and how much, a closing connection is read (linger). */
#define LINGER_NS (2LL * 1000 * 1000 * 1000)
#define LINGER_BYTES (1024 * 1024)

/* Close as RFC 9112 9.6 asks: stop writing, then read and drop what the
 * client still sends until it closes too, for at most LINGER_NS and
 * LINGER_BYTES.  Closing with unread bytes in the socket makes the kernel
 * send a reset, and a reset may make the client's kernel drop the
 * response it has not read yet: the 400 would never be seen (nginx's
 * lingering_close).  The scaffolding closes the descriptor afterwards. */
static void linger(struct conn *c)
{
    gort_shutdown(c->fd, SHUT_WR);
    gort_fd_set_deadline(c->fd, 'r', gort_nanotime() + LINGER_NS);
    size_t total = 0;
    long n;
    while (total < LINGER_BYTES &&
           (n = gort_read(c->fd, c->buf, HTTP_MAX_HEAD)) > 0)
        total += (size_t)n;
}

static void serve(int fd)
{
    struct conn c = {.fd = fd, .buf = malloc(HTTP_MAX_HEAD)};
    enum next next = c.buf ? NEXT : GONE;
    while (next == NEXT)
        next = serve_one(&c);
    if (next == CLOSE)
        linger(&c);
    free(c.body);
    free(c.buf);
}

int main(int argc, char **argv)
{
    static const struct server s = {"http", "127.0.0.1:8080", serve, NULL};
    return server_main(&s, argc, argv);
}
