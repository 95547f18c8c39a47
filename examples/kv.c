/*
 * kv - an in-memory key-value server speaking the Redis protocol (RESP2),
 * one goroutine per connection.
 *
 *   build/examples/kv [-addr HOST:PORT] [-procs N] [-idle SECONDS]
 *
 * Commands: PING [msg], SET key value, GET key, DEL key..., INCR key,
 * EXISTS key..., MGET key..., plus QUIT.  Requests may be pipelined: the
 * replies to everything in one read go out in one write.  Inline commands
 * (a line of words, as typed into telnet) work too.
 *
 * Bad input never takes the server down:
 *   - an unknown command or wrong arguments: a RESP error, and the
 *     connection goes on;
 *   - a protocol error (not a number where one belongs, a bulk longer than
 *     1 MiB, more than 1024 arguments, a missing CRLF): "-ERR Protocol
 *     error: ..." and the connection is closed, as Redis does;
 *   - a frame that is merely incomplete waits for the rest, up to the idle
 *     deadline (-idle seconds, default 60).
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
 * Replies, gathered per batch of requests.
 * ------------------------------------------------------------------------- */

struct out {
    char *p;
    size_t n, cap;
    bool oom;
};

/* Room for n more bytes at o->p + o->n; false (and o->oom) when out of
 * memory. */
static bool reserve(struct out *o, size_t n)
{
    if (o->n + n <= o->cap)
        return true;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->n + n)
        cap *= 2;
    char *np = realloc(o->p, cap);
    if (!np) {
        o->oom = true;
        return false;
    }
    o->p = np;
    o->cap = cap;
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
        for (int i = 1; i < argc; i++)
            reply_get(o, &a[i]);
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

#define BUF_MAX (RESP_MAX_ARGS * 64 + 2 * RESP_MAX_BULK)

static void serve(int fd)
{
    size_t cap = 16384, have = 0;
    char *buf = malloc(cap);
    struct resp_arg *a = malloc(RESP_MAX_ARGS * sizeof *a);
    struct out o = {0};
    bool open = buf && a;
    while (open) {
        /* Every complete request in the buffer, replies gathered. */
        size_t off = 0;
        for (;;) {
            int argc = 0;
            const char *err = NULL;
            long used = resp_parse(buf + off, have - off, a, &argc, &err);
            if (used < 0) {
                char b[128];
                snprintf(b, sizeof b, "-ERR Protocol error: %s\r\n", err);
                puts_(&o, b);
                open = false;
                break;
            }
            if (used == 0)
                break;
            off += (size_t)used;
            if (!command(&o, a, argc)) {
                open = false;
                break;
            }
        }
        if (o.oom)
            break;
        if (o.n && gort_write(fd, o.p, o.n) != (long)o.n)
            break;
        o.n = 0;
        if (!open)
            break;
        memmove(buf, buf + off, have - off);
        have -= off;
        if (have == cap) {
            if (cap >= BUF_MAX)
                break; /* cannot happen with the parse limits */
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        long n = server_read(fd, buf + have, cap - have);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    free(o.p);
    free(a);
    free(buf);
}

int main(int argc, char **argv)
{
    static const struct server s = {"kv", "127.0.0.1:6380", serve};
    return server_main(&s, argc, argv);
}
