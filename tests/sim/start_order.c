/* SPDX-License-Identifier: MIT */
/*
 * start_order.c - an assumption that goroutines start in the order they
 * were created.
 *
 * The program starts the goroutine that loads the configuration, then
 * the servers that read it, believing the loader, started first, has
 * run by the time a server looks.  Nothing orders them: a server may run
 * first and find no configuration.
 *
 * The fix: make the servers wait for the configuration (a channel the
 * loader closes, a gort_once, or loading it before starting them).
 */
#include "planted.h"

#include <stdatomic.h>

#define SERVERS 2

struct config {
    int port;
};

static struct config the_config;
static _Atomic(struct config *) config;
static gort_mutex mu = GORT_MUTEX_INIT;
static int served;
static gort_waitgroup wg;

static void load_config(void *arg)
{
    (void)arg;
    the_config.port = 8080;
    atomic_store(&config, &the_config);
    gort_waitgroup_done(&wg);
}

static void server(void *arg)
{
    (void)arg;
    /* BUG: assumes load_config has run because it was started first. */
    struct config *c = atomic_load(&config);
    BUG_IF_NOT(c != NULL, "a server started before the configuration "
                          "was loaded");
    gort_mutex_lock(&mu);
    served += c->port == 8080;
    gort_mutex_unlock(&mu);
    gort_waitgroup_done(&wg);
}

static void run(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&wg, 1 + SERVERS);
    gort_go(load_config, NULL);
    for (int i = 0; i < SERVERS; i++)
        gort_go(server, NULL);
    gort_waitgroup_wait(&wg);
    NOTE("served=%d", served);
}

int main(void) { return gort_main(run, NULL) == 0 ? 0 : 1; }
