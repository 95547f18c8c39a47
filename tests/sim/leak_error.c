/* SPDX-License-Identifier: MIT */
/*
 * leak_error.c - a goroutine leaked on the error path.
 *
 * fetch_all starts two fetchers that send their results on an
 * unbuffered channel and receives them; on the first error it returns
 * at once.  One fetcher succeeds and one fails.  When the failure comes
 * first, nobody receives the other result: that fetcher blocks in its
 * send for ever, a leaked goroutine (and whatever it holds).  The
 * program checks at the end that only the main goroutine is left.
 *
 * The fix: a channel with room for every result (capacity 2), or
 * receive all results before returning, or a cancel channel the fetchers
 * select on.
 */
#include "planted.h"

#define MS 1000000LL

struct result {
    int ok;
};

struct fetch {
    gort_chan *results;
    int ok; /* how this fetch ends */
};

static void fetcher(void *arg)
{
    struct fetch *f = arg;
    struct result r = {.ok = f->ok};
    gort_sleep(MS); /* the request */
    gort_chan_send(f->results, &r);
}

/* 0 when both fetches succeeded, -1 on the first error. */
static int fetch_all(gort_chan *results)
{
    static struct fetch good, bad;
    good = (struct fetch){results, 1};
    bad = (struct fetch){results, 0};
    gort_go(fetcher, &good);
    gort_go(fetcher, &bad);
    for (int i = 0; i < 2; i++) {
        struct result r;
        gort_chan_recv(results, &r);
        if (!r.ok)
            return -1; /* BUG: the other fetcher may still be sending */
    }
    return 0;
}

static void run(void *arg)
{
    (void)arg;
    gort_chan *results;
    if (gort_chan_make(&results, sizeof(struct result), 0) != 0)
        abort();
    int err = fetch_all(results);
    /* Give every goroutine time to finish, then look for leftovers. */
    gort_sleep(10 * MS);
    int64_t left = gort_numgoroutine();
    NOTE("fetch_all=%d goroutines=%lld", err, (long long)left);
    BUG_IF_NOT(left == 1, "%lld goroutines leaked", (long long)(left - 1));
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
