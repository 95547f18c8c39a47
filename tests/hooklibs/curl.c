/* SPDX-License-Identifier: MIT */
/*
 * curl.c - libcurl's easy API (curl_easy_perform) on goroutines under
 * gort-hook, against a real HTTP server.
 *
 *   hooklibs_curl nginx URL PID...   GET URL?i=<i>, want "nginx <i>\n"
 *   hooklibs_curl echo URL PID...    POST "goroutine <i>\n" to URL (gort's
 *                                    http example's /echo), want it back
 *
 * (hooklibs.py starts nginx or the http example and passes the PIDs of
 * the processes that serve: nginx's workers, or the example itself.)
 *
 * Neither server can be told to delay its answers, so the test freezes it:
 * it stops the serving processes with SIGSTOP before the clients start.
 * The kernel still completes their TCP handshakes into the listening
 * socket's backlog (4096 in both servers) and takes their requests into
 * the socket buffers, but nothing answers.  1000 goroutines each run
 * curl_easy_perform on a handle of their own; once every one has sent its
 * request (the debug callback sees it go out) and the dump shows 1000
 * goroutines parked in the poller (curl waits in poll(2)), the test
 * samples the thread count and resumes the server with SIGCONT.
 *
 * Checks: while all are blocked the process has at most GOMAXPROCS + 4
 * threads and no transfer has finished; afterwards every transfer got
 * status 200 and exactly its own body.
 */
#include "hooklibs.h"

#include <curl/curl.h>
#include <signal.h>

#define N 1000

static bool echo_mode;
static const char *base_url;
static gort_waitgroup wg;
static int sent;     /* atomic: requests that went out whole */
static int finished; /* atomic: curl_easy_perform calls that returned */
static int correct;  /* atomic: of those, 200 with this goroutine's body */

struct transfer {
    int i;
    char body[64]; /* what the server must answer */
    size_t body_len;
    size_t out;    /* request body bytes sent */
    bool counted;  /* counted in sent */
    char got[128]; /* what it answered */
    size_t got_len;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct transfer *t = arg;
    size_t len = size * n;
    if (len > sizeof t->got - t->got_len)
        return 0; /* far more than the answer: curl fails the transfer */
    memcpy(t->got + t->got_len, p, len);
    t->got_len += len;
    return len;
}

/* curl reports each request as it goes out: a GET when its head is
 * sent, a POST when its body is, whole. */
static int on_debug(CURL *h, curl_infotype type, char *data, size_t size,
                    void *arg)
{
    (void)h;
    (void)data;
    struct transfer *t = arg;
    if (type == CURLINFO_DATA_OUT)
        t->out += size;
    bool whole = echo_mode
                     ? (type == CURLINFO_DATA_OUT && t->out == t->body_len)
                     : type == CURLINFO_HEADER_OUT;
    if (whole && !t->counted) {
        t->counted = true;
        HL_ATOMIC_INC(&sent);
    }
    return 0;
}

static void client(void *arg)
{
    struct transfer *t = arg;
    char url[512];
    snprintf(t->body, sizeof t->body,
             echo_mode ? "goroutine %d\n" : "nginx %d\n", t->i);
    t->body_len = strlen(t->body);
    if (echo_mode)
        snprintf(url, sizeof url, "%s", base_url);
    else
        snprintf(url, sizeof url, "%s?i=%d", base_url, t->i);

    CURL *h = curl_easy_init();
    CHECK(h != NULL);
    curl_easy_setopt(h, CURLOPT_URL, url);
    /* No signals (curl's timeouts otherwise use alarm, process-wide) and
     * no proxy from the environment. */
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(h, CURLOPT_VERBOSE, 1L); /* for the debug callback */
    curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, on_debug);
    curl_easy_setopt(h, CURLOPT_DEBUGDATA, t);
    if (echo_mode) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, t->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)t->body_len);
    }
    CURLcode rc = curl_easy_perform(h);
    HL_ATOMIC_INC(&finished);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status == 200 && t->got_len == t->body_len &&
        memcmp(t->got, t->body, t->body_len) == 0)
        HL_ATOMIC_INC(&correct);
    else
        fprintf(stderr, "client %d: %s, status %ld, body '%.*s'\n", t->i,
                curl_easy_strerror(rc), status, (int)t->got_len, t->got);
    curl_easy_cleanup(h);
    gort_waitgroup_done(&wg);
}

static pid_t *pids;
static int npids;

/* The state letter of process pid (/proc/PID/stat), or 0. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* SIGSTOP or SIGCONT every serving process; after SIGSTOP, wait until
 * each is stopped. */
static void signal_servers(int sig)
{
    for (int k = 0; k < npids; k++)
        CHECK_EQ(kill(pids[k], sig), 0);
    if (sig != SIGSTOP)
        return;
    for (int k = 0; k < npids; k++)
        while (proc_state(pids[k]) != 'T')
            gort_sleep(HL_MS);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(HL_PROCS);
    int64_t t0 = gort_nanotime();
    static struct transfer ts[N];
    signal_servers(SIGSTOP);
    for (int i = 0; i < N; i++) {
        ts[i].i = i;
        gort_waitgroup_add(&wg, 1);
        CHECK_GT(gort_go(client, &ts[i]), 0);
    }

    /* Every request is in the frozen server's socket buffers ... */
    int64_t deadline = gort_nanotime() + 30000 * HL_MS;
    while (HL_ATOMIC_LOAD(&sent) < N) {
        if (gort_nanotime() > deadline) {
            fprintf(stderr, "%d of %d requests sent after 30 s\n",
                    HL_ATOMIC_LOAD(&sent), N);
            CHECK(0);
        }
        gort_sleep(10 * HL_MS);
    }
    /* ... and every client goroutine is parked in curl's poll. */
    int io_wait = hl_await_io_wait(N);
    double t_blocked = hl_since(t0);
    int threads = hl_sample_threads();
    CHECK_EQ(HL_ATOMIC_LOAD(&finished), 0);

    signal_servers(SIGCONT);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(HL_ATOMIC_LOAD(&finished), N);
    CHECK_EQ(HL_ATOMIC_LOAD(&correct), N);
    hl_report(echo_mode ? "libcurl, curl_easy_perform against gort's http"
                        : "libcurl, curl_easy_perform against nginx",
              N, io_wait, t_blocked, threads, hl_since(t0));
}

int main(int argc, char **argv)
{
    if (argc < 4 ||
        (strcmp(argv[1], "nginx") != 0 && strcmp(argv[1], "echo") != 0)) {
        fprintf(stderr, "usage: %s nginx|echo URL PID...\n", argv[0]);
        return 2;
    }
    echo_mode = strcmp(argv[1], "echo") == 0;
    base_url = argv[2];
    npids = argc - 3;
    pids = calloc((size_t)npids, sizeof *pids);
    CHECK(pids != NULL);
    for (int k = 0; k < npids; k++)
        pids[k] = (pid_t)atoi(argv[3 + k]);
    /* A socket per transfer, and curl's wake-up pair and gort-hook's
     * private epoll descriptor for the poll of each. */
    hl_raise_nofile(4 * N + 64);
    /* Not thread-safe: before any goroutine runs. */
    CHECK_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
    CHECK_EQ(gort_main(main_g, NULL), 0);
    curl_global_cleanup();
    return 0;
}
