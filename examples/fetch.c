/* SPDX-License-Identifier: MIT */
/*
 * fetch - many URLs at once with libcurl's easy API, unmodified, one
 * goroutine a transfer: curl_easy_perform connects, polls, reads and
 * writes itself, and gort-hook (linked in) parks the goroutine in each of
 * those calls instead of its thread (docs/hooks.md).
 *
 *     fetch [-procs N] [-repeat N] [-timeout SECONDS] URL...
 *
 * Every URL is fetched -repeat times (default 1), all transfers at once.
 * For each URL it prints the HTTP status, the bytes of the last body and
 * the slowest transfer's time; then the totals and the process's threads
 * at the peak (/proc/self/status).  Exits 1 if any transfer failed (curl
 * error or HTTP status 400 and above), 2 on bad flags.
 */
#include <gort.h>
#include <curl/curl.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

/* One transfer: its URL and, once done, what came back.  Each goroutine
 * writes its own; main reads them all after the WaitGroup. */
struct transfer {
    const char *url;
    long status;
    size_t bytes;
    double secs;
    bool failed;
};

static int procs, repeat = 1;
static long timeout_s = 30;
static const char **urls;
static int nurls;
static struct transfer *xfers;
static gort_waitgroup wg;
static int max_threads;

/* The body is counted, not kept. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    *(size_t *)arg += size * n;
    note_threads(&max_threads);
    return size * n;
}

static void transfer(void *arg)
{
    struct transfer *t = arg;
    CURL *c = curl_easy_init();
    CURLcode rc = CURLE_FAILED_INIT;
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, t->url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &t->bytes);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
        /* No signals: curl's alarm-based timeouts are for threads. */
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        rc = curl_easy_perform(c);
    }
    if (rc == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t->status);
        curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &t->secs);
    } else {
        fprintf(stderr, "fetch: %s: %s\n", t->url, curl_easy_strerror(rc));
    }
    t->failed = rc != CURLE_OK || t->status >= 400;
    curl_easy_cleanup(c);
    gort_waitgroup_done(&wg);
}

static int run_status;

static void main_g(void *arg)
{
    (void)arg;
    if (procs > 0)
        gort_gomaxprocs(procs);
    int n = nurls * repeat;
    for (int k = 0; k < n; k++) {
        xfers[k].url = urls[k % nurls];
        gort_waitgroup_add(&wg, 1);
        if (gort_go(transfer, &xfers[k]) < 0) {
            xfers[k].failed = true;
            gort_waitgroup_done(&wg);
        }
    }
    gort_waitgroup_wait(&wg);
    int failed = 0;
    for (int i = 0; i < nurls; i++) {
        /* Per URL: the last transfer's status and body, the slowest. */
        struct transfer *last = NULL;
        double slowest = 0;
        bool bad = false;
        for (int k = i; k < n; k += nurls) {
            last = &xfers[k];
            bad |= xfers[k].failed;
            if (xfers[k].secs > slowest)
                slowest = xfers[k].secs;
        }
        printf("%3ld %8zu bytes %7.1f ms  %s\n", last->status, last->bytes,
               slowest * 1e3, urls[i]);
        failed += bad;
    }
    printf("fetch: %d transfers on GOMAXPROCS %d, %d URLs failed, at most %d "
           "threads\n",
           n, gort_gomaxprocs(0), failed, max_threads);
    run_status = failed ? 1 : 0;
}

static long intflag(const char *name, const char *v, long min)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < min || x > 1000000) {
        fprintf(stderr, "fetch: %s wants an integer >= %ld, got %s\n", name,
                min, v);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    urls = calloc((size_t)argc, sizeof *urls);
    if (!urls)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-procs") && i + 1 < argc)
            procs = (int)intflag("-procs", argv[++i], 1);
        else if (!strcmp(argv[i], "-repeat") && i + 1 < argc)
            repeat = (int)intflag("-repeat", argv[++i], 1);
        else if (!strcmp(argv[i], "-timeout") && i + 1 < argc)
            timeout_s = intflag("-timeout", argv[++i], 1);
        else if (argv[i][0] == '-') {
            nurls = 0;
            break;
        } else
            urls[nurls++] = argv[i];
    }
    if (nurls == 0) {
        fprintf(stderr, "usage: fetch [-procs N] [-repeat N] "
                        "[-timeout SECONDS] URL...\n");
        return 2;
    }
    xfers = calloc((size_t)nurls * (size_t)repeat, sizeof *xfers);
    if (!xfers)
        return 1;
    /* Before any thread: curl_global_init is not thread-safe. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "fetch: curl_global_init failed\n");
        return 1;
    }
    int r = gort_main(main_g, NULL);
    curl_global_cleanup();
    free(xfers);
    free(urls);
    if (r < 0) {
        fprintf(stderr, "fetch: gort_main: %s\n", strerror(-r));
        return 1;
    }
    return run_status;
}
