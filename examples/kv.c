/* SPDX-License-Identifier: MIT */
/*
 * kv - an in-memory key-value server speaking the Redis protocol (RESP2),
 * one goroutine per connection.
 *
 *   build/examples/kv [-addr HOST:PORT] [-procs N] [-idle SECONDS]
 *                     [-output-limit BYTES]
 *
 * Commands: PING [msg], SET key value, GET key, DEL key..., INCR key,
 * EXISTS key..., MGET key..., plus QUIT.  Requests may be pipelined: the
 * replies to the requests of one read go out together, or in 64 KiB steps
 * when they are large.  Inline commands (a line of words, as typed into
 * telnet) work too.  The protocol is parsed in resp.c.
 *
 * Bad input never takes the server down:
 *   - an unknown command or wrong arguments: a RESP error, and the
 *     connection goes on;
 *   - a protocol error (not a number where one belongs, a bulk longer than
 *     1 MiB, more than 1024 arguments, an inline line over 64 KiB, a
 *     missing CRLF): "-ERR Protocol error: ..." and the connection is
 *     closed, as Redis does;
 *   - a frame that is merely incomplete waits for the rest, up to the idle
 *     deadline (-idle seconds, default 60); a single request over 2 MiB +
 *     64 KiB closes the connection with a log line;
 *   - a client whose replies pile up unread past -output-limit bytes
 *     (default 32 MiB; k and m suffixes; 0 for none) is closed with a log
 *     line, as redis-server's client-output-buffer-limit does, and one that
 *     takes none of its pending replies for -idle seconds is closed too
 *     (see "Replies" below).
 *
 *     redis-cli -p 6380 SET a 1
 *     redis-benchmark -p 6380 -t set,get,incr -n 20000 -q
 *
 * The store is a hash table split into 64 shards, each under a gort_mutex.
 */
#include "resp.h"
#include "server.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define NSHARDS 64

/* ---------------------------------------------------------------------------
 * The store.
 * ------------------------------------------------------------------------- */

struct entry {
    struct entry *next;
    uint64_t hash;
    size_t klen, vlen, vcap; /* vcap: bytes allocated at val */
    char *val;
    char key[];
};

static struct shard {
    gort_mutex mu;
    struct entry **b;
    size_t nb, n;
} shards[NSHARDS];

/* 8 bytes at a time, each word mixed by a multiply and a rotation, then a
 * final avalanche (the shard is the top 6 bits, the bucket the bottom). */
static uint64_t hash(const char *k, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h = (h << 29) | (h >> 35);
        k += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, k, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static struct shard *shard_of(uint64_t h)
{
    return &shards[h >> 58];
}

/* Find the entry for key; shard locked.  *pp is the link pointing to it
 * (for deletion). */
static struct entry *find(struct shard *s, uint64_t h, const char *k,
                          size_t n, struct entry ***pp)
{
    if (!s->nb)
        return NULL;
    struct entry **p = &s->b[h & (s->nb - 1)];
    for (; *p; p = &(*p)->next)
        if ((*p)->hash == h && (*p)->klen == n && !memcmp((*p)->key, k, n)) {
            if (pp)
                *pp = p;
            return *p;
        }
    return NULL;
}

static bool grow(struct shard *s)
{
    size_t nb = s->nb ? s->nb * 2 : 64;
    struct entry **b = calloc(nb, sizeof *b);
    if (!b)
        return false;
    for (size_t i = 0; i < s->nb; i++)
        for (struct entry *e = s->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    free(s->b);
    s->b = b;
    s->nb = nb;
    return true;
}

/* Set key to val (copied) in its shard s, locked; false when out of
 * memory. */
static bool store_set_locked(struct shard *s, uint64_t h, const char *k,
                             size_t kn, const char *v, size_t vn)
{
    struct entry *e = find(s, h, k, kn, NULL);
    if (e && vn <= e->vcap && e->vcap <= 2 * vn + 64) {
        /* Overwritten in place when it fits without wasting much. */
        memcpy(e->val, v, vn);
        e->vlen = vn;
        return true;
    }
    char *nv = malloc(vn ? vn : 1);
    if (!nv)
        return false;
    memcpy(nv, v, vn);
    if (e) {
        free(e->val);
        e->val = nv;
        e->vlen = e->vcap = vn;
        return true;
    }
    if ((s->n + 1 > s->nb * 2 && !grow(s)) ||
        !(e = malloc(sizeof *e + kn))) {
        free(nv);
        return false;
    }
    e->hash = h;
    e->klen = kn;
    memcpy(e->key, k, kn);
    e->val = nv;
    e->vlen = e->vcap = vn;
    e->next = s->b[h & (s->nb - 1)];
    s->b[h & (s->nb - 1)] = e;
    s->n++;
    return true;
}

static bool store_set(const char *k, size_t kn, const char *v, size_t vn)
{
    uint64_t h = hash(k, kn);
    struct shard *s = shard_of(h);
    gort_mutex_lock(&s->mu);
    bool ok = store_set_locked(s, h, k, kn, v, vn);
    gort_mutex_unlock(&s->mu);
    return ok;
}

/* ---------------------------------------------------------------------------
 * Replies: gathered, pushed to the socket as they pile up, and bounded.
 *
 * Replies go into a per-connection buffer.  Once 64 KiB are pending, and
 * after the last request in hand, they are pushed with send(2) and
 * MSG_DONTWAIT, which takes what the socket has room for and never waits;
 * the rest stays pending.  While requests already read remain, the
 * goroutine goes on running them (a pipelining client gets its replies
 * streamed); when none remain, it waits for the client to take every
 * pending byte before it reads more (server_write, at most -idle seconds).
 * A connection whose pending output would pass -output-limit is closed at
 * once, with a log line, as redis-server closes a client past its
 * client-output-buffer-limit hard limit.  So a client that pipelines
 * requests and never reads costs at most the limit, and waiting on a
 * client never blocks the thread.
 * ------------------------------------------------------------------------- */

/* Once this much output is pending, it is pushed to the socket before
 * more is made. */
#define PUSH_AT (64 * 1024)
/* A buffer larger than this is freed once everything in it is written, so
 * that one large reply does not hold memory for the connection's life. */
#define OUT_KEEP (256 * 1024)

/* The most pending output per connection; 0 for no limit (-output-limit).
 * redis-server applies no limit to ordinary clients by default
 * (client-output-buffer-limit normal 0 0 0), which lets a client that does
 * not read grow the server without bound; 32 MiB is its hard limit for
 * pub/sub clients, room for 32 of the largest replies (a value is at most
 * 1 MiB), far more than a client that reads its replies leaves pending. */
static size_t output_limit = 32u << 20;

struct out {
    int fd;           /* the connection */
    char *p;          /* replies; p[head..n) are not written yet */
    size_t head, n, cap;
    bool oom;         /* an allocation failed: the connection ends */
    bool over;        /* the limit was passed: the connection ends */
    bool broken;      /* a write failed: the connection ends */
};

static size_t pending(const struct out *o)
{
    return o->n - o->head;
}

/* False once the connection is to end for its output. */
static bool out_ok(const struct out *o)
{
    return !o->oom && !o->over && !o->broken;
}

/* Room for k more bytes at o->p + o->n; false (and o->oom or o->over, after
 * which nothing more is added) when out of memory or past the limit.
 * Written bytes are dropped from the front when they are at least half the
 * buffer (so each byte moves at most once on average), or when the buffer
 * would otherwise grow past the limit: with a limit, the buffer never
 * holds more than the limit. */
static bool reserve(struct out *o, size_t k)
{
    if (!out_ok(o))
        return false;
    if (output_limit && pending(o) + k > output_limit) {
        o->over = true;
        return false;
    }
    if (o->n + k <= o->cap)
        return true;
    size_t most = output_limit ? output_limit : SIZE_MAX;
    if (o->head > 0 && (o->head >= o->cap / 2 || o->n + k > most)) {
        memmove(o->p, o->p + o->head, pending(o));
        o->n -= o->head;
        o->head = 0;
        if (o->n + k <= o->cap)
            return true;
    }
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->n + k)
        cap *= 2;
    if (cap > most)
        cap = most; /* pending + k <= the limit: it fits */
    char *np = realloc(o->p, cap);
    if (!np) {
        o->oom = true;
        return false;
    }
    o->p = np;
    o->cap = cap;
    return true;
}

/* send(2) of buf[0..n) without waiting: the bytes the socket took, 0 when
 * it has no room, or -1 when the connection failed.  MSG_DONTWAIT never
 * blocks, so the call needs no gort wrapper; preemption is held off around
 * it so that errno is read on the thread that made the call. */
static long send_now(int fd, const void *buf, size_t n)
{
    gort_preempt_disable();
    ssize_t r;
    do
        r = send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    bool full = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    gort_preempt_enable();
    return r >= 0 ? (long)r : full ? 0 : -1;
}

/* The buffer is empty: free it if it grew large. */
static void out_reset(struct out *o)
{
    o->head = o->n = 0;
    if (o->cap > OUT_KEEP) {
        free(o->p);
        o->p = NULL;
        o->cap = 0;
    }
}

/* Push what the socket takes now; false (and o->broken) when the
 * connection failed. */
static bool out_push(struct out *o)
{
    while (pending(o) > 0) {
        long r = send_now(o->fd, o->p + o->head, pending(o));
        if (r < 0) {
            o->broken = true;
            return false;
        }
        if (r == 0)
            return true;
        o->head += (size_t)r;
    }
    out_reset(o);
    return true;
}

/* Push once PUSH_AT bytes are pending. */
static void out_push_some(struct out *o)
{
    if (pending(o) >= PUSH_AT)
        out_push(o);
}

/* Write everything pending, waiting up to -idle seconds for the client to
 * take it (a timer is armed only when the socket is full).  Sets *stalled
 * when the client took too long.  False when it did or the connection
 * failed. */
static bool out_flush(struct out *o, bool *stalled)
{
    if (!out_push(o))
        return false;
    if (pending(o) == 0)
        return true;
    long r = server_write(o->fd, o->p + o->head, pending(o));
    if (r != (long)pending(o)) {
        *stalled = r >= 0 || r == -ETIMEDOUT;
        return false;
    }
    out_reset(o);
    return true;
}

static void put(struct out *o, const void *d, size_t n)
{
    if (!reserve(o, n))
        return;
    memcpy(o->p + o->n, d, n);
    o->n += n;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* v in decimal into b (at least 20 bytes); returns the length. */
static size_t fmt_u64(char *b, uint64_t v)
{
    char t[20];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        b[i] = t[n - 1 - i];
    return n;
}

/* A line "<c><v>\r\n": ":42", "$5", "*3". */
static void put_line(struct out *o, char c, long long v)
{
    if (!reserve(o, 24))
        return;
    char *b = o->p + o->n;
    size_t n = 0;
    b[n++] = c;
    if (v < 0) {
        b[n++] = '-';
        n += fmt_u64(b + n, 0 - (uint64_t)v);
    } else {
        n += fmt_u64(b + n, (uint64_t)v);
    }
    b[n++] = '\r';
    b[n++] = '\n';
    o->n += n;
}

static void put_int(struct out *o, long long v)
{
    put_line(o, ':', v);
}

static void put_bulk(struct out *o, const char *d, size_t n)
{
    if (!reserve(o, 24 + n + 2))
        return;
    put_line(o, '$', (long long)n);
    memcpy(o->p + o->n, d, n);
    memcpy(o->p + o->n + n, "\r\n", 2);
    o->n += n + 2;
}

/* ---------------------------------------------------------------------------
 * Commands.
 * ------------------------------------------------------------------------- */

/* Whether a is name (upper case, letters only), in any case.  c & 0xdf
 * folds a lower-case letter onto its upper case and keeps every other
 * byte off the letters, so only the two cases of each letter match. */
static bool is(const struct resp_arg *a, const char *name)
{
    size_t i = 0;
    for (; i < a->n; i++) {
        unsigned char c = (unsigned char)a->p[i];
        if (!name[i] || (c & 0xdf) != (unsigned char)name[i])
            return false;
    }
    return !name[i];
}

static void wrong_args(struct out *o, const struct resp_arg *cmd)
{
    char b[128];
    snprintf(b, sizeof b,
             "-ERR wrong number of arguments for '%.*s' command\r\n",
             (int)(cmd->n > 32 ? 32 : cmd->n), cmd->p);
    puts_(o, b);
}

/* The value of key as a bulk reply, or the null bulk. */
static void reply_get(struct out *o, const struct resp_arg *key)
{
    uint64_t h = hash(key->p, key->n);
    struct shard *s = shard_of(h);
    gort_mutex_lock(&s->mu);
    struct entry *e = find(s, h, key->p, key->n, NULL);
    if (e)
        put_bulk(o, e->val, e->vlen);
    else
        puts_(o, "$-1\r\n");
    gort_mutex_unlock(&s->mu);
}

/* Run one command.  Returns false for QUIT. */
static bool command(struct out *o, struct resp_arg *a, int argc)
{
    if (argc == 0)
        return true;
    if (is(&a[0], "PING")) {
        if (argc == 1)
            puts_(o, "+PONG\r\n");
        else if (argc == 2)
            put_bulk(o, a[1].p, a[1].n);
        else
            wrong_args(o, &a[0]);
    } else if (is(&a[0], "SET")) {
        if (argc != 3)
            wrong_args(o, &a[0]);
        else if (store_set(a[1].p, a[1].n, a[2].p, a[2].n))
            puts_(o, "+OK\r\n");
        else
            puts_(o, "-ERR out of memory\r\n");
    } else if (is(&a[0], "GET")) {
        if (argc != 2)
            wrong_args(o, &a[0]);
        else
            reply_get(o, &a[1]);
    } else if (is(&a[0], "MGET")) {
        if (argc < 2) {
            wrong_args(o, &a[0]);
            return true;
        }
        put_line(o, '*', argc - 1);
        for (int i = 1; i < argc; i++) {
            reply_get(o, &a[i]);
            out_push_some(o);
        }
    } else if (is(&a[0], "DEL") || is(&a[0], "EXISTS")) {
        if (argc < 2) {
            wrong_args(o, &a[0]);
            return true;
        }
        bool del = is(&a[0], "DEL");
        long long n = 0;
        for (int i = 1; i < argc; i++) {
            uint64_t h = hash(a[i].p, a[i].n);
            struct shard *s = shard_of(h);
            gort_mutex_lock(&s->mu);
            struct entry **pp;
            struct entry *e = find(s, h, a[i].p, a[i].n, &pp);
            if (e) {
                n++;
                if (del) {
                    *pp = e->next;
                    s->n--;
                    free(e->val);
                    free(e);
                }
            }
            gort_mutex_unlock(&s->mu);
        }
        put_int(o, n);
    } else if (is(&a[0], "INCR")) {
        if (argc != 2) {
            wrong_args(o, &a[0]);
            return true;
        }
        uint64_t h = hash(a[1].p, a[1].n);
        struct shard *s = shard_of(h);
        gort_mutex_lock(&s->mu);
        struct entry *e = find(s, h, a[1].p, a[1].n, NULL);
        long long v = 0;
        bool ok = true;
        if (e) {
            char num[32];
            char *end;
            ok = e->vlen > 0 && e->vlen < sizeof num;
            if (ok) {
                memcpy(num, e->val, e->vlen);
                num[e->vlen] = 0;
                errno = 0;
                v = strtoll(num, &end, 10);
                ok = !*end && errno == 0 && num[0] != ' ';
            }
        }
        if (!ok) {
            gort_mutex_unlock(&s->mu);
            puts_(o, "-ERR value is not an integer or out of range\r\n");
            return true;
        }
        if (v == LLONG_MAX) {
            gort_mutex_unlock(&s->mu);
            puts_(o, "-ERR increment or decrement would overflow\r\n");
            return true;
        }
        v++;
        char num[32];
        int k = snprintf(num, sizeof num, "%lld", v);
        /* Under the same lock hold as the read: concurrent INCRs of one
         * key lose nothing. */
        bool set = store_set_locked(s, h, a[1].p, a[1].n, num, (size_t)k);
        gort_mutex_unlock(&s->mu);
        if (set)
            put_int(o, v);
        else
            puts_(o, "-ERR out of memory\r\n");
    } else if (is(&a[0], "QUIT")) {
        puts_(o, "+OK\r\n");
        return false;
    } else if (is(&a[0], "CONFIG") || is(&a[0], "COMMAND") ||
               is(&a[0], "CLIENT")) {
        /* What redis-cli and redis-benchmark ask on connecting: nothing
         * to configure here, an empty answer. */
        puts_(o, "*0\r\n");
    } else {
        char b[128];
        snprintf(b, sizeof b, "-ERR unknown command '%.*s'\r\n",
                 (int)(a[0].n > 32 ? 32 : a[0].n), a[0].p);
        puts_(o, b);
    }
    return true;
}

/* ---------------------------------------------------------------------------
 * A connection.
 * ------------------------------------------------------------------------- */

/* The read buffer grows to hold one request: a SET of a 1 MiB key and a
 * 1 MiB value fits.  A longer request closes the connection, as Redis
 * closes a client past its query buffer limit. */
#define BUF_MAX (RESP_MAX_ARGS * 64 + 2 * RESP_MAX_BULK)

struct conn {
    int fd;
    char *buf;            /* requests read and not yet run: buf[0..have) */
    size_t have, cap;
    struct resp_arg *a;   /* the arguments of the request being run */
    struct out o;         /* the replies */
};

/* What to do after running the requests in hand. */
enum next {
    READ_MORE,   /* flush the replies, then read */
    LAST_WORDS,  /* flush the replies, then close (QUIT, protocol error) */
    DROP,        /* close now (limit passed, out of memory, write failed) */
};

static void protocol_error(struct out *o, const char *err)
{
    char b[128];
    snprintf(b, sizeof b, "-ERR Protocol error: %s\r\n", err);
    puts_(o, b);
}

/* Run every complete request in the read buffer, pushing replies out as
 * they pile up, and drop what was run from the buffer. */
static enum next run_requests(struct conn *c)
{
    size_t off = 0;
    enum next next = READ_MORE;
    while (next == READ_MORE) {
        int argc = 0;
        const char *err = NULL;
        long used = resp_parse(c->buf + off, c->have - off, c->a, &argc, &err);
        if (used == 0)
            break;
        if (used < 0) {
            protocol_error(&c->o, err);
            next = LAST_WORDS;
        } else {
            off += (size_t)used;
            if (!command(&c->o, c->a, argc))
                next = LAST_WORDS;
        }
        out_push_some(&c->o);
        if (!out_ok(&c->o))
            next = DROP;
    }
    memmove(c->buf, c->buf + off, c->have - off);
    c->have -= off;
    return next;
}

/* Read more requests, growing the buffer when a request fills it.  False
 * at end of file, on an error or the idle deadline, or for a request
 * longer than BUF_MAX. */
static bool read_more(struct conn *c)
{
    if (c->have == c->cap) {
        char nb[64];
        char *grown = c->cap < BUF_MAX ? realloc(c->buf, c->cap * 2) : NULL;
        if (!grown) {
            fprintf(stderr, "kv: closing connection from %s: a request "
                            "over %zu bytes\n",
                    server_peer(c->fd, nb, sizeof nb), c->cap);
            return false;
        }
        c->buf = grown;
        c->cap *= 2;
    }
    long n = server_read(c->fd, c->buf + c->have, c->cap - c->have);
    if (n <= 0)
        return false;
    c->have += (size_t)n;
    return true;
}

/* One log line for a connection closed for its output. */
static void log_dropped(const struct conn *c, bool stalled)
{
    char nb[64];
    if (c->o.over)
        fprintf(stderr, "kv: closing connection from %s: its pending "
                        "output would pass the output limit of %zu bytes\n",
                server_peer(c->fd, nb, sizeof nb), output_limit);
    else if (stalled)
        fprintf(stderr, "kv: closing connection from %s: it did not read "
                        "its replies within the idle timeout\n",
                server_peer(c->fd, nb, sizeof nb));
}

static void serve(int fd)
{
    struct conn c = {.fd = fd, .cap = 16384, .o = {.fd = fd}};
    c.buf = malloc(c.cap);
    c.a = malloc(RESP_MAX_ARGS * sizeof *c.a);
    bool stalled = false;
    enum next next = c.buf && c.a ? READ_MORE : DROP;
    while (next == READ_MORE) {
        next = run_requests(&c);
        if (next != DROP && !out_flush(&c.o, &stalled))
            next = DROP;
        if (next == READ_MORE && !read_more(&c))
            next = DROP;
    }
    log_dropped(&c, stalled);
    free(c.o.p);
    free(c.a);
    free(c.buf);
}

/* -output-limit BYTES: decimal, with an optional suffix k (KiB) or m
 * (MiB); 0 for no limit. */
static bool set_output_limit(const char *v)
{
    const char *p = v;
    uint64_t x = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        x = x * 10 + (uint64_t)(*p - '0');
        if (x > ((uint64_t)1 << 40))
            return false;
    }
    uint64_t unit = 1;
    if (*p == 'k' || *p == 'K')
        unit = 1024;
    else if (*p == 'm' || *p == 'M')
        unit = 1024 * 1024;
    p += unit != 1;
    if (p == v || *p || (unit != 1 && p - 1 == v))
        return false;
    output_limit = (size_t)(x * unit);
    return true;
}

int main(int argc, char **argv)
{
    static const struct server_flag flags[] = {
        {"-output-limit", "BYTES",
         "bytes (suffix k or m for KiB or MiB), 0 for no limit",
         set_output_limit},
        {0},
    };
    static const struct server s = {"kv", "127.0.0.1:6380", serve, flags};
    return server_main(&s, argc, argv);
}
