/* SPDX-License-Identifier: MIT */
/*
 * loadgen - an open-loop load generator for request-reply servers, with
 * the servers' CPU time per request measured over the same window.
 *
 *   build/bench/loadgen -proto resp|http|echo -addr HOST:PORT
 *       [-conns 50] [-rate 1000] [-seconds 5] [-warmup 1]
 *       [-arrival even|poisson] [-procs 1] [-pids PID,...]
 *       [-idle] [-timeout 10] [-seed 1]
 *
 * Protocols, each reply checked in full (a wrong reply is an error, and an
 * error makes the run fail):
 *   resp  Redis protocol: SET key value and GET key in turn on each
 *         connection, every connection on a key of its own ("load:ID"),
 *         a SET first; a SET must answer +OK, a GET the 32-byte value of
 *         the connection's previous SET.
 *   http  HTTP/1.1 keep-alive "GET /" with a Host header; the answer must
 *         be 200 with a Content-Length body of "Hello, World!\n" (what
 *         examples/http, bench/go/http_wrk and bench/load.sh's nginx
 *         configuration answer), and must not close the connection.
 *   echo  64-byte messages, each carrying its connection and sequence
 *         number; the echo must come back byte for byte.
 *
 * Load.  -conns connections share -rate requests a second: each sends
 * every conns/rate seconds, from a random phase within the first interval
 * ("-arrival even", the default; the 50 phases spread the sends over the
 * interval), or with exponential gaps of that mean ("-arrival poisson",
 * so the connections together send a Poisson stream).  The load is open:
 * a request's latency runs from the time it was scheduled to be sent, not
 * from when it was sent, so a server that answers late delays the
 * requests behind it and they count that delay (no coordinated omission).
 * A connection has one request in flight at a time, so one that falls
 * behind sends its next request as soon as the reply comes, and catches
 * up if the server lets it.  -rate 0 is saturation: a closed loop where
 * each connection sends its next request as soon as its reply arrives,
 * and latency runs from the send.
 *
 * Window.  All connections connect first; then the schedule starts, the
 * first -warmup seconds are not counted, and the next -seconds are.  At
 * the window's two edges a meter thread (a plain thread, which gort's
 * scheduling cannot delay) reads the CPU time of the processes in -pids
 * (the server; for nginx its master and workers) and of this process.
 * The window is the time between those two readings: a request counts
 * when its reply arrives within it, the achieved rate is those replies
 * over its length, and the latencies are theirs.  The load goes on until
 * the second reading is taken, so the window is under load throughout;
 * requests in flight then are still read and checked, not counted.
 *
 * CPU time.  A process's CPU time is read from its CPU-time clock
 * (clock_getcpuclockid): the sum of utime and stime over all its threads,
 * exited ones included, the same total as fields 14 and 15 of
 * /proc/PID/stat, but in nanoseconds where /proc/PID/stat rounds to clock
 * ticks (10 ms here).  At 1,000 requests a second over 5 s a server
 * spending 15 us a request uses 75 ms, which ticks would give to +-27%.
 * The tick figures are read too and printed beside it as a check.
 *
 * Run-queue wait.  Also read at both edges: how long the processes'
 * threads were runnable but waiting for a CPU (/proc/PID/task/TID/
 * schedstat), printed as ms a second of the window (1,000: one thread
 * always waiting).  Client and server share the machine's CPUs; a server
 * that keeps more threads runnable than there are CPUs left makes them,
 * and the client, wait (docs/benchmarks.md).  Threads that exit within
 * the window are not counted.
 *
 * Idle mode (-idle).  The connections are opened at most 64 at a time,
 * each makes one request (so the server has served it and holds the
 * connection as a kept-alive one), and then they all stay open without
 * traffic; after -warmup seconds the servers' CPU time is measured over
 * -seconds and printed per second of wall time.  The pids alone, with
 * -proto none and no -addr, measure any process over such a window: the
 * CPU-accounting control of bench/load.sh.
 *
 * Output: one line on stdout of key=value fields, starting "LOAD", for
 * bench/load.sh; a readable summary and any errors on stderr.  Exit
 * status 0, 1 when any request failed or a reply was wrong, 2 for bad
 * flags.
 *
 * Why gort.  The generator is a gort program, one goroutine per
 * connection sleeping with gort_sleep until each send, with reads and
 * writes through gort's network poller.  Two of gort's behaviours would
 * distort the measurement, and both are turned off here rather than
 * written around with threads and epoll:
 *   - before it sleeps in epoll_wait, gort's poller polls for up to 50 us
 *     when goroutines wait on descriptors (GORTDEBUG=netpollspin).  A
 *     generator waiting for a reply would spin up to 50 us a request, on
 *     the two CPUs the server also runs on; loadgen sets netpollspin=0
 *     unless GORTDEBUG already names it.
 *   - the kernel may delay a timed sleep by the thread's timer slack
 *     (50 us by default), which would make sends late; loadgen sets the
 *     slack to 1 ns before gort_main, and gort's threads inherit it.
 * And -procs defaults to 1: the generator is one thread at a time, like
 * redis-benchmark, and leaves the other CPU to the server.  What lateness
 * remains (a sleeping thread's wake-up) is reported as late_p50/late_p99:
 * how long after its scheduled time each request of the window went out.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "bench.h"

#define MAX_PIDS 64
/* The most connections opening at once in -idle mode: below every
 * server's listen backlog (nginx and redis-server take 511), so that no
 * SYN is dropped and retried a second later. */
#define IDLE_OPENERS 64
#define RBUF 4096        /* the reply buffer: replies here are < 300 B */
#define VALSIZE 32       /* the resp value's length */
#define MSG 64           /* the echo message's length */
#define MAX_ERRORS_SHOWN 5

static const char http_body[] = "Hello, World!\n";

/* ---------------------------------------------------------------------------
 * Flags
 * ------------------------------------------------------------------------- */

struct proto;

static struct config {
    const struct proto *proto;
    const char *addr_str;      /* -addr as given: dialed, and the HTTP
                                  Host header */
    int conns;                 /* -conns */
    double rate;               /* -rate, requests a second; 0: saturation */
    double seconds, warmup;    /* -seconds, -warmup */
    bool poisson;              /* -arrival poisson */
    int procs;                 /* -procs: the generator's GOMAXPROCS */
    pid_t pids[MAX_PIDS];      /* -pids */
    int npids;
    bool idle;                 /* -idle */
    double timeout;            /* -timeout, seconds */
    uint64_t seed;             /* -seed */
} cfg = {
    .conns = 50, .rate = 1000, .seconds = 5, .warmup = 1, .procs = 1,
    .timeout = 10, .seed = 1,
};

static _Noreturn void usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: loadgen -proto resp|http|echo -addr HOST:PORT [-conns N]\n"
            "               [-rate R] [-seconds S] [-warmup S]\n"
            "               [-arrival even|poisson] [-procs N] [-pids PID,...]\n"
            "               [-idle] [-timeout S] [-seed N]\n"
            "       loadgen -proto none -pids PID,... [-seconds S] [-warmup S]\n"
            "  -rate 0 is saturation (closed loop); see bench/loadgen.c.\n");
    exit(status);
}

static _Noreturn void bad_flag(const char *flag, const char *val,
                               const char *want)
{
    fprintf(stderr, "loadgen: invalid value \"%s\" for flag %s (want %s)\n",
            val, flag, want);
    usage(2);
}

/* A number >= min (and an integer when integral), or bad_flag. */
static double num_flag(const char *flag, const char *val, double min,
                       bool integral)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !(v >= min) || v > 1e12 ||
        (integral && v != floor(v)))
        bad_flag(flag, val, integral ? "an integer in range" :
                 "a number in range");
    return v;
}

static void parse_pids(const char *val)
{
    const char *p = val;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v <= 0 || v > INT32_MAX || (*end && *end != ',') ||
            cfg.npids == MAX_PIDS)
            bad_flag("-pids", val, "process ids separated by commas");
        cfg.pids[cfg.npids++] = (pid_t)v;
        p = *end ? end + 1 : end;
    }
}

static const struct proto *proto_named(const char *name);

/* Go's flag syntax: -name value, -name=value, one or two dashes. */
static void parse_flags(int argc, char **argv)
{
    bool have_proto = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *name = arg + 1, *val;
        if (arg[0] != '-' || arg[1] == 0)
            usage(2);
        if (*name == '-')
            name++;
        char nbuf[32];
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        if (nlen >= sizeof nbuf)
            usage(2);
        memcpy(nbuf, name, nlen);
        nbuf[nlen] = 0;
        if (!strcmp(nbuf, "h") || !strcmp(nbuf, "help"))
            usage(0);
        if (!strcmp(nbuf, "idle")) {
            cfg.idle = !eq || strcmp(eq + 1, "false") != 0;
            continue;
        }
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            fprintf(stderr, "loadgen: flag needs an argument: %s\n", arg);
            usage(2);
        }
        if (!strcmp(nbuf, "proto")) {
            cfg.proto = proto_named(val);
            have_proto = true;
            if (!cfg.proto && strcmp(val, "none"))
                bad_flag("-proto", val, "resp, http, echo or none");
        } else if (!strcmp(nbuf, "addr")) {
            cfg.addr_str = val;
            if (gort_split_host_port(val, NULL, 0, NULL, 0) != 0)
                bad_flag("-addr", val, "HOST:PORT, [IPV6]:PORT for IPv6");
        } else if (!strcmp(nbuf, "conns")) {
            cfg.conns = (int)num_flag("-conns", val, 1, true);
        } else if (!strcmp(nbuf, "rate")) {
            cfg.rate = num_flag("-rate", val, 0, false);
        } else if (!strcmp(nbuf, "seconds")) {
            cfg.seconds = num_flag("-seconds", val, 0.001, false);
        } else if (!strcmp(nbuf, "warmup")) {
            cfg.warmup = num_flag("-warmup", val, 0, false);
        } else if (!strcmp(nbuf, "arrival")) {
            if (strcmp(val, "even") && strcmp(val, "poisson"))
                bad_flag("-arrival", val, "even or poisson");
            cfg.poisson = !strcmp(val, "poisson");
        } else if (!strcmp(nbuf, "procs")) {
            cfg.procs = (int)num_flag("-procs", val, 1, true);
        } else if (!strcmp(nbuf, "pids")) {
            parse_pids(val);
        } else if (!strcmp(nbuf, "timeout")) {
            cfg.timeout = num_flag("-timeout", val, 0.001, false);
        } else if (!strcmp(nbuf, "seed")) {
            cfg.seed = (uint64_t)num_flag("-seed", val, 0, true);
        } else {
            fprintf(stderr, "loadgen: flag provided but not defined: %s\n",
                    arg);
            usage(2);
        }
    }
    if (!have_proto) {
        fprintf(stderr, "loadgen: -proto is required\n");
        usage(2);
    }
    if (cfg.proto && !cfg.addr_str) {
        fprintf(stderr, "loadgen: -addr is required\n");
        usage(2);
    }
    if (!cfg.proto && cfg.npids == 0) {
        fprintf(stderr, "loadgen: -proto none measures -pids: give some\n");
        usage(2);
    }
    if (cfg.procs > GORT_MAX_PROCS)
        bad_flag("-procs", "(too many)", "at most 1024");
}

/* ---------------------------------------------------------------------------
 * Connections and their samples
 * ------------------------------------------------------------------------- */

/* A sample: when it was taken (a reply's arrival, or a send) and its
 * value, both in nanoseconds. */
struct sample {
    int64_t at, v;
};

/* A growable array of samples, owned by one connection. */
struct samples {
    struct sample *v;
    size_t n, cap;
};

struct conn {
    int id;             /* 0..conns-1 */
    int fd;             /* the socket; -1 before connect and after close */
    uint64_t rng;       /* xorshift64* state, for phase and gaps */
    struct samples lat; /* reply latencies, from the window's start on */
    struct samples late;/* send lateness, from the window's start on */
    size_t reqlen;      /* bytes of the request in req */
    size_t rlen;        /* bytes of the reply read so far */
    char req[256];      /* the request in flight */
    char val[VALSIZE + 1]; /* resp: the value of this connection's SET */
    char rbuf[RBUF];    /* the reply, as read */
    char why[176];      /* what was wrong with the reply */
};

static struct conn *conns;
static int64_t t0_ns, ws_ns, we_ns; /* schedule start, window start, end */
static atomic_bool metered;         /* the meter has read the window's end */
static int64_t io_deadline;         /* gort_nanotime of the reads' deadline */
static gort_chan *start_ch;         /* closed when t0_ns is set */
static gort_chan *stop_ch;          /* -idle: closed to close connections */
static gort_chan *open_tokens;      /* -idle: IDLE_OPENERS tokens */
static gort_waitgroup ready_wg = GORT_WAITGROUP_INIT; /* connected */
static gort_waitgroup done_wg = GORT_WAITGROUP_INIT;  /* finished */
static atomic_long nerrors;

static int64_t now_ns(void)
{
    return bench_now_ns();
}

static uint64_t rnd(struct conn *c)
{
    uint64_t x = c->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    return x * 0x2545f4914f6cdd1dULL;
}

/* Uniform in (0, 1]. */
static double rnd01(struct conn *c)
{
    return (double)((rnd(c) >> 11) + 1) / 9007199254740992.0;
}

static void push(struct samples *s, int64_t at, int64_t v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        struct sample *nv = realloc(s->v, cap * sizeof *nv);
        if (!nv) {
            fprintf(stderr, "loadgen: out of memory\n");
            exit(1);
        }
        s->v = nv;
        s->cap = cap;
    }
    s->v[s->n++] = (struct sample){at, v};
}

/* Count an error on connection c and show the first few. */
static void conn_error(struct conn *c, const char *what, const char *detail)
{
    long n = atomic_fetch_add_explicit(&nerrors, 1, memory_order_relaxed);
    if (n < MAX_ERRORS_SHOWN)
        fprintf(stderr, "loadgen: connection %d: %s%s%s\n", c->id, what,
                detail ? ": " : "", detail ? detail : "");
    else if (n == MAX_ERRORS_SHOWN)
        fprintf(stderr, "loadgen: (further errors are counted, not shown)\n");
}

/* ---------------------------------------------------------------------------
 * Protocols: build request seq into c->req; check the reply in c->rbuf.
 * ------------------------------------------------------------------------- */

enum { REPLY_MORE, REPLY_OK, REPLY_BAD };

struct proto {
    const char *name;
    void (*build)(struct conn *c, uint64_t seq);
    int (*check)(struct conn *c, uint64_t seq); /* sets c->why when BAD */
};

/* Quote up to 40 bytes of buf for an error message. */
static const char *quoted(char *out, size_t outn, const char *buf, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 40 && o + 5 < outn; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch >= 32 && ch < 127 && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, outn - o, "\\x%02x", ch);
    }
    out[o] = 0;
    return out;
}

static int bad(struct conn *c, const char *what)
{
    char q[100];
    snprintf(c->why, sizeof c->why, "%.50s: \"%s\"", what,
             quoted(q, sizeof q, c->rbuf, c->rlen));
    return REPLY_BAD;
}

/* resp: even seqs SET the connection's key to a fresh value, odd ones GET
 * it back. */
static void resp_build(struct conn *c, uint64_t seq)
{
    char key[16];
    snprintf(key, sizeof key, "load:%05d", c->id);
    if (seq % 2 == 0) {
        snprintf(c->val, sizeof c->val, "v%07d-%023" PRIu64, c->id, seq);
        c->reqlen = (size_t)snprintf(c->req, sizeof c->req,
                                     "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n"
                                     "$%d\r\n%s\r\n", strlen(key), key,
                                     VALSIZE, c->val);
    } else {
        c->reqlen = (size_t)snprintf(c->req, sizeof c->req,
                                     "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                                     strlen(key), key);
    }
}

/* The length of the RESP frame at the start of b (n bytes) in *len, or
 * REPLY_MORE / REPLY_BAD. */
static int resp_frame(const char *b, size_t n, size_t *len)
{
    const char *crlf = n ? memmem(b, n, "\r\n", 2) : NULL;
    if (!crlf)
        return n > 1024 ? REPLY_BAD : REPLY_MORE;
    size_t line = (size_t)(crlf - b) + 2;
    switch (b[0]) {
    case '+': case '-': case ':':
        *len = line;
        return REPLY_OK;
    case '$': {
        char *end;
        long blen = strtol(b + 1, &end, 10);
        if (end != crlf || blen < -1 || blen > 1 << 20)
            return REPLY_BAD;
        *len = blen < 0 ? line : line + (size_t)blen + 2;
        return n >= *len ? REPLY_OK : REPLY_MORE;
    }
    default:
        return REPLY_BAD;
    }
}

static int resp_check(struct conn *c, uint64_t seq)
{
    size_t len = 0;
    int st = resp_frame(c->rbuf, c->rlen, &len);
    if (st == REPLY_MORE)
        return st;
    if (st == REPLY_BAD)
        return bad(c, "not a RESP reply");
    if (len != c->rlen)
        return bad(c, "bytes after the reply");
    char want[64];
    int wn = seq % 2 == 0 ? snprintf(want, sizeof want, "+OK\r\n")
                          : snprintf(want, sizeof want, "$%d\r\n%s\r\n",
                                     VALSIZE, c->val);
    if ((size_t)wn != len || memcmp(want, c->rbuf, len) != 0)
        return bad(c, seq % 2 == 0 ? "SET did not answer +OK"
                                   : "GET did not answer the value SET");
    return REPLY_OK;
}

static void http_build(struct conn *c, uint64_t seq)
{
    (void)seq;
    c->reqlen = (size_t)snprintf(c->req, sizeof c->req,
                                 "GET / HTTP/1.1\r\nHost: %s\r\n\r\n",
                                 cfg.addr_str);
}

/* The value of header name (lower case, with its colon) in the head
 * [b, end), or NULL. */
static const char *header(const char *b, const char *end, const char *name,
                          const char **vend)
{
    size_t nl = strlen(name);
    const char *p = memmem(b, (size_t)(end - b), "\r\n", 2);
    while (p && p + 2 < end) {
        const char *line = p + 2;
        const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
        if (!eol)
            eol = end;
        if ((size_t)(eol - line) >= nl && !strncasecmp(line, name, nl)) {
            const char *v = line + nl;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            *vend = eol;
            return v;
        }
        p = eol < end ? eol : NULL;
    }
    return NULL;
}

static int http_check(struct conn *c, uint64_t seq)
{
    (void)seq;
    const char *b = c->rbuf;
    const char *hend = memmem(b, c->rlen, "\r\n\r\n", 4);
    if (!hend)
        return c->rlen >= RBUF / 2 ? bad(c, "no end of head") : REPLY_MORE;
    size_t head = (size_t)(hend - b) + 4;
    if (c->rlen < 13 || memcmp(b, "HTTP/1.1 200 ", 13) != 0)
        return bad(c, "status is not HTTP/1.1 200");
    const char *v, *vend;
    if (header(b, hend + 2, "transfer-encoding:", &vend))
        return bad(c, "a Transfer-Encoding where Content-Length was due");
    if ((v = header(b, hend + 2, "connection:", &vend)) &&
        memmem(v, (size_t)(vend - v), "close", 5))
        return bad(c, "the server closes the connection");
    if (!(v = header(b, hend + 2, "content-length:", &vend)))
        return bad(c, "no Content-Length");
    char *e;
    long clen = strtol(v, &e, 10);
    if (e == v || clen < 0 || clen > RBUF)
        return bad(c, "bad Content-Length");
    if (c->rlen < head + (size_t)clen)
        return REPLY_MORE;
    if (c->rlen > head + (size_t)clen)
        return bad(c, "bytes after the body");
    if ((size_t)clen != sizeof http_body - 1 ||
        memcmp(b + head, http_body, sizeof http_body - 1) != 0)
        return bad(c, "the body is not \"Hello, World!\\n\"");
    return REPLY_OK;
}

static void echo_build(struct conn *c, uint64_t seq)
{
    int n = snprintf(c->req, sizeof c->req, "conn %05d seq %012" PRIu64 " ",
                     c->id, seq);
    memset(c->req + n, 'x', (size_t)(MSG - n - 1));
    c->req[MSG - 1] = '\n';
    c->reqlen = MSG;
}

static int echo_check(struct conn *c, uint64_t seq)
{
    (void)seq;
    if (c->rlen < MSG)
        return REPLY_MORE;
    if (c->rlen > MSG)
        return bad(c, "more bytes than were sent");
    if (memcmp(c->rbuf, c->req, MSG) != 0)
        return bad(c, "the echo differs from the message");
    return REPLY_OK;
}

static const struct proto protos[] = {
    {"resp", resp_build, resp_check},
    {"http", http_build, http_check},
    {"echo", echo_build, echo_check},
};

static const struct proto *proto_named(const char *name)
{
    for (size_t i = 0; i < sizeof protos / sizeof protos[0]; i++)
        if (!strcmp(name, protos[i].name))
            return &protos[i];
    return NULL;
}

/* ---------------------------------------------------------------------------
 * One request-reply exchange
 * ------------------------------------------------------------------------- */

/* Send request seq (built already) and read its reply whole.  Returns 0,
 * or -1 after counting the error. */
static int exchange(struct conn *c, uint64_t seq)
{
    long r = gort_write(c->fd, c->req, c->reqlen);
    if (r != (long)c->reqlen) {
        conn_error(c, "write", r < 0 ? strerror((int)-r) : "short");
        return -1;
    }
    c->rlen = 0;
    for (;;) {
        r = gort_read(c->fd, c->rbuf + c->rlen, sizeof c->rbuf - c->rlen);
        if (r <= 0) {
            conn_error(c, "read", r == 0 ? "the server closed the connection"
                       : r == -ETIMEDOUT ? "no reply within -timeout"
                       : strerror((int)-r));
            return -1;
        }
        c->rlen += (size_t)r;
        int st = cfg.proto->check(c, seq);
        if (st == REPLY_OK)
            return 0;
        if (st == REPLY_BAD || c->rlen == sizeof c->rbuf) {
            if (st != REPLY_BAD)
                bad(c, "reply too long");
            conn_error(c, "wrong reply", c->why);
            return -1;
        }
    }
}

static int conn_open(struct conn *c)
{
    /* A TCP connection with TCP_NODELAY, as Go's net package and the
     * servers make them. */
    c->fd = gort_dial("tcp", cfg.addr_str,
                      gort_deadline_in((int64_t)(cfg.timeout * 1e9)));
    if (c->fd < 0) {
        conn_error(c, "dial", gort_strerror(c->fd));
        c->fd = -1;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The connection goroutines
 * ------------------------------------------------------------------------- */

/* The window is over and measured: the load may stop.  (Load goes on past
 * we_ns until the meter has read the window's end, so that the window is
 * under load throughout even when the meter wakes late.) */
static bool window_over(int64_t t)
{
    /* Acquire: pairs with the meter's release store; nothing else is
     * published through it. */
    return t >= we_ns && atomic_load_explicit(&metered, memory_order_acquire);
}

/* Open-loop schedule: request k is due at t0 + phase + k * interval
 * (even) or after exponential gaps (poisson). */
static void run_open(struct conn *c)
{
    double interval = 1e9 * cfg.conns / cfg.rate;
    double offset = rnd01(c) * interval; /* the phase: first due time */
    for (uint64_t k = 0;; k++) {
        int64_t due = t0_ns + (int64_t)offset;
        if (window_over(due))
            break;
        cfg.proto->build(c, k);
        int64_t now = now_ns();
        if (now < due) {
            gort_sleep(due - now);
            now = now_ns();
        }
        if (now >= ws_ns)
            push(&c->late, now, now - due);
        if (exchange(c, k) != 0)
            return;
        int64_t done = now_ns();
        if (done >= ws_ns)
            push(&c->lat, done, done - due);
        offset += cfg.poisson ? -log(rnd01(c)) * interval : interval;
    }
}

/* Closed loop: the next request goes as soon as the reply is in. */
static void run_closed(struct conn *c)
{
    for (uint64_t k = 0;; k++) {
        cfg.proto->build(c, k);
        int64_t sent = now_ns();
        if (window_over(sent))
            break;
        if (exchange(c, k) != 0)
            return;
        int64_t done = now_ns();
        if (done >= ws_ns)
            push(&c->lat, done, done - sent);
    }
}

static void conn_main(void *arg)
{
    struct conn *c = arg;
    bool ok = conn_open(c) == 0;
    gort_waitgroup_done(&ready_wg);
    gort_chan_recv(start_ch, NULL); /* closed once t0_ns is set */
    if (ok) {
        gort_fd_set_deadline(c->fd, 'r' + 'w', io_deadline);
        if (cfg.rate > 0)
            run_open(c);
        else
            run_closed(c);
        gort_close(c->fd);
    }
    gort_waitgroup_done(&done_wg);
}

/* -idle: open, one request, then wait for stop_ch. */
static void idle_conn_main(void *arg)
{
    struct conn *c = arg;
    char token;
    gort_chan_recv(open_tokens, &token);
    bool ok = conn_open(c) == 0;
    if (ok) {
        gort_fd_set_deadline(c->fd, 'r' + 'w',
                             gort_nanotime() + (int64_t)(cfg.timeout * 1e9));
        cfg.proto->build(c, 0);
        ok = exchange(c, 0) == 0;
        gort_fd_set_deadline(c->fd, 'r' + 'w', 0);
    }
    gort_chan_send(open_tokens, &token);
    gort_waitgroup_done(&ready_wg);
    gort_chan_recv(stop_ch, NULL);
    if (c->fd >= 0)
        gort_close(c->fd);
    gort_waitgroup_done(&done_wg);
}

/* ---------------------------------------------------------------------------
 * CPU time of processes
 * ------------------------------------------------------------------------- */

struct cpu {
    int64_t ns;    /* CPU-time clocks, summed: nanoseconds */
    long ticks;    /* utime + stime from /proc/PID/stat, summed */
    long rss_kb;   /* VmRSS, summed */
    int64_t wait;  /* ns its threads were runnable but not running (the
                      second field of /proc/PID/task/TID/schedstat),
                      summed over the threads alive now; -1 unknown */
};

/* utime + stime (fields 14 and 15) of /proc/PID/stat, or -1. */
static long stat_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* The command name (field 2) may hold spaces: start after its ')'. */
    char *p = strrchr(buf, ')');
    unsigned long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                     "%lu %lu", &ut, &st) != 2)
        return -1;
    return (long)(ut + st);
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* The time pid's threads have spent waiting for a CPU while runnable, ns,
 * or -1 when the kernel does not say (no schedstat files). */
static int64_t runq_wait(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int64_t sum = 0;
    bool any = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char file[320];
        unsigned long long run, wait;
        snprintf(file, sizeof file, "/proc/%d/task/%s/schedstat", (int)pid,
                 e->d_name);
        FILE *f = fopen(file, "r");
        if (!f)
            continue;
        if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
            sum += (int64_t)wait;
            any = true;
        }
        fclose(f);
    }
    closedir(d);
    return any ? sum : -1;
}

/* Read the CPU time of pids[0..n) into *c; false (with a message) when a
 * process is gone. */
static bool read_cpu(const pid_t *pids, int n, struct cpu *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < n; i++) {
        clockid_t clk;
        struct timespec ts;
        long t = stat_ticks(pids[i]);
        if (clock_getcpuclockid(pids[i], &clk) != 0 ||
            clock_gettime(clk, &ts) != 0 || t < 0) {
            fprintf(stderr, "loadgen: cannot read the CPU time of process "
                    "%d (gone?)\n", (int)pids[i]);
            return false;
        }
        c->ns += (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        c->ticks += t;
        c->rss_kb += rss_kb(pids[i]);
        int64_t w = runq_wait(pids[i]);
        c->wait = w < 0 || c->wait < 0 ? -1 : c->wait + w;
    }
    return true;
}

/* ---------------------------------------------------------------------------
 * The meter: a plain thread, so that gort's scheduling of the connections'
 * goroutines cannot delay its readings (a goroutine woken by its timer
 * waits its turn behind the runnable ones; at saturation, 50 of them).
 * ------------------------------------------------------------------------- */

static struct window {
    int64_t a, b;          /* when the two readings were taken */
    struct cpu srv0, srv1; /* the servers' CPU time at a and b */
    struct cpu me0, me1;   /* this process's */
    bool ok;               /* every process could be read both times */
} win;                     /* written by the meter, read after its join */

static void sleep_abs(int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Reads the CPU times at ws_ns and at we_ns; sets metered.  Makes no
 * gort call. */
static void *meter_main(void *arg)
{
    pid_t me = getpid();
    (void)arg;
    sleep_abs(ws_ns);
    win.a = now_ns();
    win.ok = read_cpu(cfg.pids, cfg.npids, &win.srv0) &&
             read_cpu(&me, 1, &win.me0);
    sleep_abs(we_ns);
    win.b = now_ns();
    win.ok = read_cpu(cfg.pids, cfg.npids, &win.srv1) &&
             read_cpu(&me, 1, &win.me1) && win.ok;
    /* Release: the load may stop once this is seen (window_over). */
    atomic_store_explicit(&metered, true, memory_order_release);
    return NULL;
}

static pthread_t meter_thread;

static void meter_start(void)
{
    int err = pthread_create(&meter_thread, NULL, meter_main, NULL);
    if (err) {
        fprintf(stderr, "loadgen: cannot start the meter: %s\n",
                strerror(err));
        exit(1);
    }
}

/* Wait for the meter (it may still be in its window: a blocking call). */
static void meter_join(void)
{
    GORT_BLOCKING(pthread_join(meter_thread, NULL));
    if (!win.ok)
        exit(1);
}

/* ---------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The nearest-rank percentile q (0..1] of sorted v[0..n), in us. */
static double pct_us(const int64_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t idx = (size_t)ceil(q * (double)n);
    idx = idx ? idx - 1 : 0;
    return (double)v[idx < n ? idx : n - 1] / 1e3;
}

/* The values of all connections' samples of one kind (off: the struct
 * samples member) taken within [a, b), sorted; *n their count. */
static int64_t *gather(size_t off, int64_t a, int64_t b, size_t *n)
{
    size_t total = 0, k = 0;
    for (int i = 0; i < cfg.conns; i++)
        total += ((struct samples *)((char *)&conns[i] + off))->n;
    int64_t *all = malloc((total ? total : 1) * sizeof *all);
    if (!all) {
        fprintf(stderr, "loadgen: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < cfg.conns; i++) {
        struct samples *s = (struct samples *)((char *)&conns[i] + off);
        for (size_t j = 0; j < s->n; j++)
            if (s->v[j].at >= a && s->v[j].at < b)
                all[k++] = s->v[j].v;
    }
    qsort(all, k, sizeof *all, cmp_i64);
    *n = k;
    return all;
}

static double tick_ns(void)
{
    return 1e9 / (double)sysconf(_SC_CLK_TCK);
}

/* Whether the servers' CPU time by clock (ms) and by /proc/PID/stat
 * ticks (ms_stat) agree: "ok", or "off" with a warning.  Each reading of
 * utime and stime truncates each to whole ticks, so a difference of two
 * readings may be off by up to two ticks a process either way; one tick
 * more allows for the moment between the clock's and the file's reads. */
static const char *cpu_check(double ms, double ms_stat)
{
    double tick_ms = tick_ns() / 1e6;
    double slack = (2.0 * cfg.npids + 1) * tick_ms;
    if (fabs(ms - ms_stat) <= slack)
        return "ok";
    fprintf(stderr, "loadgen: warning: the servers' CPU time is %.1f ms by "
            "their clocks but %.0f ms by /proc/PID/stat\n", ms, ms_stat);
    return "off";
}

static int finish_idle(void)
{
    double sec = (double)(win.b - win.a) / 1e9;
    double srv_ms = (double)(win.srv1.ns - win.srv0.ns) / 1e6;
    double srv_ms_stat = (double)(win.srv1.ticks - win.srv0.ticks) *
                         tick_ns() / 1e6;
    double me_ms = (double)(win.me1.ns - win.me0.ns) / 1e6;
    long errs = atomic_load(&nerrors);
    int held = cfg.proto ? cfg.conns - (int)errs : 0;
    printf("LOAD mode=idle proto=%s conns=%d held=%d errors=%ld "
           "seconds=%.3f server_cpu_ms=%.3f server_cpu_ms_per_s=%.4f "
           "server_cpu_ms_stat=%.0f cpu_check=%s server_rss_kb=%ld "
           "client_cpu_ms_per_s=%.4f\n",
           cfg.proto ? cfg.proto->name : "none", cfg.proto ? cfg.conns : 0,
           held, errs, sec, srv_ms, srv_ms / sec, srv_ms_stat,
           cpu_check(srv_ms, srv_ms_stat), win.srv1.rss_kb, me_ms / sec);
    fprintf(stderr, "loadgen: idle, %d connections held: server %.3f ms of "
            "CPU a second (%.1f ms in %.2f s; %.0f ms by /proc/PID/stat "
            "ticks), RSS %ld kB; this process %.3f ms a second\n",
            held, srv_ms / sec, srv_ms, sec, srv_ms_stat, win.srv1.rss_kb,
            me_ms / sec);
    return errs ? 1 : 0;
}

/* Run-queue wait between two readings, ms a second of wall time (1,000
 * is one thread always waiting for a CPU); -1 when unknown. */
static double wait_ms_per_s(const struct cpu *a, const struct cpu *b,
                            double sec)
{
    if (a->wait < 0 || b->wait < 0 || sec <= 0)
        return -1;
    double ms = (double)(b->wait - a->wait) / 1e6;
    return ms > 0 ? ms / sec : 0;
}

static int finish_load(void)
{
    size_t n, nl;
    int64_t *lat = gather(offsetof(struct conn, lat), win.a, win.b, &n);
    int64_t *late = gather(offsetof(struct conn, late), win.a, win.b, &nl);
    double sec = (double)(win.b - win.a) / 1e9;
    double srv_ms = (double)(win.srv1.ns - win.srv0.ns) / 1e6;
    double srv_ms_stat = (double)(win.srv1.ticks - win.srv0.ticks) *
                         tick_ns() / 1e6;
    double me_ms = (double)(win.me1.ns - win.me0.ns) / 1e6;
    double per = n ? 1e3 / (double)n : 0; /* ms -> us per request */
    double srv_wait = wait_ms_per_s(&win.srv0, &win.srv1, sec);
    double me_wait = wait_ms_per_s(&win.me0, &win.me1, sec);
    long errs = atomic_load(&nerrors);
    printf("LOAD mode=load proto=%s conns=%d rate=%.0f arrival=%s "
           "seconds=%.3f achieved_rps=%.1f requests=%zu errors=%ld "
           "p50_us=%.1f p99_us=%.1f max_us=%.1f late_p50_us=%.1f "
           "late_p99_us=%.1f late_max_us=%.1f server_cpu_ms=%.3f "
           "server_cpu_us_per_req=%.3f server_cpu_ms_stat=%.0f "
           "cpu_check=%s client_cpu_us_per_req=%.3f "
           "server_runq_wait_ms_per_s=%.1f client_runq_wait_ms_per_s=%.1f\n",
           cfg.proto->name, cfg.conns, cfg.rate,
           cfg.rate == 0 ? "closed" : cfg.poisson ? "poisson" : "even", sec,
           (double)n / sec, n, errs, pct_us(lat, n, 0.5),
           pct_us(lat, n, 0.99), pct_us(lat, n, 1.0), pct_us(late, nl, 0.5),
           pct_us(late, nl, 0.99), pct_us(late, nl, 1.0), srv_ms,
           srv_ms * per, srv_ms_stat, cpu_check(srv_ms, srv_ms_stat),
           me_ms * per, srv_wait, me_wait);
    fprintf(stderr, "loadgen: %s, %d connections, rate %s: %.0f requests/s "
            "(%zu in %.3f s), latency us p50 %.1f p99 %.1f max %.1f; "
            "sends late us p50 %.1f p99 %.1f; server CPU %.2f us a request "
            "(%.1f ms; %.0f ms by ticks), this process %.2f us; "
            "run-queue wait ms a second: server %.1f, this process %.1f; "
            "%ld errors\n",
            cfg.proto->name, cfg.conns,
            cfg.rate == 0 ? "saturation" : "open", (double)n / sec, n, sec,
            pct_us(lat, n, 0.5), pct_us(lat, n, 0.99), pct_us(lat, n, 1.0),
            pct_us(late, nl, 0.5), pct_us(late, nl, 0.99), srv_ms * per,
            srv_ms, srv_ms_stat, me_ms * per, srv_wait, me_wait, errs);
    free(lat);
    free(late);
    if (n == 0 && !errs) {
        fprintf(stderr, "loadgen: no reply arrived within the window\n");
        return 1;
    }
    return errs ? 1 : 0;
}

/* ---------------------------------------------------------------------------
 * Main
 * ------------------------------------------------------------------------- */

static int status;

/* The window starts warmup seconds after t. */
static void set_window(int64_t t)
{
    ws_ns = t + (int64_t)(cfg.warmup * 1e9);
    we_ns = ws_ns + (int64_t)(cfg.seconds * 1e9);
}

static void start_conns(void)
{
    conns = calloc((size_t)cfg.conns, sizeof *conns);
    if (!conns || gort_chan_make(&start_ch, 1, 0) != 0 ||
        gort_chan_make(&stop_ch, 1, 0) != 0 ||
        gort_chan_make(&open_tokens, 1, IDLE_OPENERS) != 0) {
        fprintf(stderr, "loadgen: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < IDLE_OPENERS; i++)
        gort_chan_send(open_tokens, &(char){0});
    gort_waitgroup_add(&ready_wg, cfg.conns);
    gort_waitgroup_add(&done_wg, cfg.conns);
    for (int i = 0; i < cfg.conns; i++) {
        struct conn *c = &conns[i];
        c->id = i;
        c->fd = -1;
        c->rng = (cfg.seed + 1) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(i + 1);
        rnd(c);
        if (gort_go(cfg.idle ? idle_conn_main : conn_main, c) < 0) {
            fprintf(stderr, "loadgen: cannot start a goroutine\n");
            exit(1);
        }
    }
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(cfg.procs);
    if (!cfg.proto) { /* -proto none: only the meter */
        set_window(now_ns());
        meter_start();
        meter_join();
        status = finish_idle();
        return;
    }
    start_conns();
    gort_waitgroup_wait(&ready_wg);
    if (cfg.idle) {
        set_window(now_ns());
        meter_start();
        meter_join();
        status = finish_idle();
        gort_chan_close(stop_ch);
        gort_waitgroup_wait(&done_wg);
        return;
    }
    /* The schedule starts 1 ms from now, once every goroutine has had
     * the start; the window follows the warm-up. */
    t0_ns = now_ns() + 1000000;
    set_window(t0_ns);
    io_deadline = gort_nanotime() + (we_ns - now_ns()) +
                  (int64_t)(cfg.timeout * 1e9);
    meter_start();
    gort_chan_close(start_ch);
    gort_waitgroup_wait(&done_wg);
    meter_join();
    status = finish_load();
}

/* Append netpollspin=0 to GORTDEBUG unless it sets netpollspin itself. */
static void no_poller_spin(void)
{
    const char *d = getenv("GORTDEBUG");
    if (d && strstr(d, "netpollspin"))
        return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s%snetpollspin=0", d ? d : "",
             d && *d ? "," : "");
    setenv("GORTDEBUG", buf, 1);
}

int main(int argc, char **argv)
{
    parse_flags(argc, argv);
    no_poller_spin();
    /* Timed sleeps end on time, not up to 50 us later (threads created
     * from here on inherit the slack). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    int rc = gort_main(main_g, NULL);
    if (rc < 0) {
        fprintf(stderr, "loadgen: gort_main: %s\n", strerror(-rc));
        return 1;
    }
    return status;
}
