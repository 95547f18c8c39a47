/*
 * http - an HTTP/1.1 server with keep-alive, one goroutine per connection.
 *
 *   build/examples/http [-addr HOST:PORT] [-procs N] [-idle SECONDS]
 *
 * Routes: GET (or HEAD) / and /hello answer "Hello, World!\n"; /metrics
 * answers the scheduler's metrics in the Prometheus text format
 * (gort_metrics_prometheus); anything else is 404, a method other than
 * GET/HEAD is 405.  Requests are parsed
 * as they come, several per read when the client pipelines them.  A
 * request body (Content-Length) is read and discarded; chunked bodies get
 * 501.  Header blocks over 16 KiB get 431 and bodies over 1 MiB 413, and
 * the connection is closed; a malformed request gets 400 and is closed.
 * HTTP/1.0 closes after the response unless the client asks for
 * keep-alive; HTTP/1.1 keeps the connection unless asked to close.  Idle
 * connections close after -idle seconds (default 60).
 *
 *     curl -i http://127.0.0.1:8080/
 *     curl http://127.0.0.1:8080/metrics
 *     wrk -t2 -c100 -d3s http://127.0.0.1:8080/
 */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HEADER (16 * 1024)
#define MAX_BODY (1024 * 1024)

static const char hello[] = "Hello, World!\n";

/* Write a whole response with a body of blen bytes of the given type;
 * false if the connection failed. */
static bool respond_typed(int fd, int status, const char *reason,
                          const char *type, const char *body, size_t blen,
                          bool head, bool keep)
{
    /* Header and a small body go out in one write (one TCP segment, as
     * Go's buffered response writer sends them). */
    char hdr[4096];
    int n = snprintf(hdr, 512,
                     "HTTP/1.1 %d %s\r\n"
                     "Content-Type: %s\r\n"
                     "Content-Length: %zu\r\n"
                     "%s"
                     "\r\n",
                     status, reason, type, blen,
                     keep ? "" : "Connection: close\r\n");
    if (n < 0 || n >= 512)
        return false; /* cannot happen: fixed strings */
    if (head)
        blen = 0;
    if (blen <= sizeof hdr - (size_t)n) {
        if (blen)
            memcpy(hdr + n, body, blen);
        return gort_write(fd, hdr, (size_t)n + blen) == (long)((size_t)n + blen);
    }
    return gort_write(fd, hdr, (size_t)n) == n &&
           gort_write(fd, body, blen) == (long)blen;
}

static bool respond(int fd, int status, const char *reason, const char *body,
                    bool head, bool keep)
{
    return respond_typed(fd, status, reason, "text/plain; charset=utf-8",
                         body, body ? strlen(body) : 0, head, keep);
}

/* GET /metrics: every metric in the Prometheus text format (0.0.4). */
static bool respond_metrics(int fd, bool head, bool keep)
{
    char *text;
    size_t len;
    int err = gort_metrics_prometheus(&text, &len);
    if (err)
        return respond(fd, 500, "Internal Server Error",
                       "cannot read the metrics\n", head, keep);
    bool ok = respond_typed(fd, 200, "OK",
                            "text/plain; version=0.0.4; charset=utf-8", text,
                            len, head, keep);
    free(text);
    return ok;
}

/* Find a header's value in the block [h, end); NULL if absent.  Sets
 * *len.  Names compare case-insensitively. */
static const char *header(const char *h, const char *end, const char *name,
                          size_t *len)
{
    size_t nl = strlen(name);
    while (h < end) {
        const char *eol = memchr(h, '\n', (size_t)(end - h));
        if (!eol)
            eol = end;
        if ((size_t)(eol - h) > nl && h[nl] == ':' &&
            !strncasecmp(h, name, nl)) {
            const char *v = h + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
                ve--;
            *len = (size_t)(ve - v);
            return v;
        }
        h = eol + 1;
    }
    return NULL;
}

static bool value_has(const char *v, size_t len, const char *token)
{
    size_t tl = strlen(token);
    for (size_t i = 0; i + tl <= len; i++)
        if (!strncasecmp(v + i, token, tl))
            return true;
    return false;
}

static void serve(int fd)
{
    char *buf = malloc(MAX_HEADER + 1);
    if (!buf)
        return;
    size_t have = 0;
    for (;;) {
        /* A whole header block? */
        char *end = NULL;
        if (have >= 4) {
            buf[have] = 0;
            end = strstr(buf, "\r\n\r\n");
        }
        if (!end) {
            if (have == MAX_HEADER) {
                respond(fd, 431, "Request Header Fields Too Large",
                        "header block too large\n", false, false);
                break;
            }
            long n = server_read(fd, buf + have, MAX_HEADER - have);
            if (n <= 0)
                break; /* closed, idle, or shutdown */
            have += (size_t)n;
            continue;
        }
        size_t hlen = (size_t)(end - buf) + 4;
        /* Request line: METHOD SP TARGET SP VERSION */
        char *eol = memchr(buf, '\r', hlen);
        char method[16], target[1024], version[16];
        char line[1100];
        size_t ll = (size_t)(eol - buf);
        if (ll >= sizeof line) {
            respond(fd, 414, "URI Too Long", "request line too long\n",
                    false, false);
            break;
        }
        memcpy(line, buf, ll);
        line[ll] = 0;
        if (sscanf(line, "%15s %1023s %15s", method, target, version) != 3 ||
            strncmp(version, "HTTP/1.", 7) || (version[7] != '0' &&
                                                version[7] != '1')) {
            respond(fd, 400, "Bad Request", "malformed request line\n",
                    false, false);
            break;
        }
        bool http11 = version[7] == '1';
        const char *hs = eol + 2, *he = end + 2;
        size_t vl;
        const char *conn = header(hs, he, "Connection", &vl);
        bool keep = http11 ? !(conn && value_has(conn, vl, "close"))
                           : (conn && value_has(conn, vl, "keep-alive"));
        const char *te = header(hs, he, "Transfer-Encoding", &vl);
        if (te) {
            respond(fd, 501, "Not Implemented",
                    "chunked request bodies are not supported\n", false,
                    false);
            break;
        }
        long long body = 0;
        const char *cl = header(hs, he, "Content-Length", &vl);
        if (cl) {
            char num[32];
            if (vl == 0 || vl >= sizeof num) {
                respond(fd, 400, "Bad Request", "bad Content-Length\n",
                        false, false);
                break;
            }
            memcpy(num, cl, vl);
            num[vl] = 0;
            char *e;
            body = strtoll(num, &e, 10);
            if (*e || body < 0) {
                respond(fd, 400, "Bad Request", "bad Content-Length\n",
                        false, false);
                break;
            }
            if (body > MAX_BODY) {
                respond(fd, 413, "Content Too Large", "body too large\n",
                        false, false);
                break;
            }
        }
        /* Consume the header block, then the body (discarded). */
        memmove(buf, buf + hlen, have - hlen);
        have -= hlen;
        while (body > 0) {
            if (have == 0) {
                long n = server_read(fd, buf, MAX_HEADER);
                if (n <= 0)
                    goto done;
                have = (size_t)n;
            }
            size_t take = (size_t)body < have ? (size_t)body : have;
            memmove(buf, buf + take, have - take);
            have -= take;
            body -= (long long)take;
        }
        bool head = !strcmp(method, "HEAD");
        bool ok;
        if (strcmp(method, "GET") && !head)
            ok = respond(fd, 405, "Method Not Allowed",
                         "only GET and HEAD\n", false, keep);
        else if (!strcmp(target, "/") || !strcmp(target, "/hello"))
            ok = respond(fd, 200, "OK", hello, head, keep);
        else if (!strcmp(target, "/metrics"))
            ok = respond_metrics(fd, head, keep);
        else
            ok = respond(fd, 404, "Not Found", "not found\n", head, keep);
        if (!ok || !keep)
            break;
    }
done:
    free(buf);
}

int main(int argc, char **argv)
{
    static const struct server s = {"http", "127.0.0.1:8080", serve, NULL};
    return server_main(&s, argc, argv);
}
