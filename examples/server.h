/*
 * server.h - the scaffolding the example servers share: flags, the
 * listening socket, a goroutine per connection, idle deadlines, accept
 * back-off on EMFILE, and a clean stop on SIGINT/SIGTERM.
 *
 * A server supplies serve(conn) and calls server_main.  serve runs on its
 * own goroutine for each connection; it reads with server_read (which arms
 * the idle deadline) and writes with gort_write, and returns when the
 * client is done or a call fails.  The scaffolding closes the descriptor.
 */
#ifndef GORT_EXAMPLE_SERVER_H
#define GORT_EXAMPLE_SERVER_H

#include <gort.h>

#include <stddef.h>
#include <stdint.h>

struct server {
    const char *name;          /* for log lines and usage */
    const char *default_addr;  /* e.g. "127.0.0.1:7007" */
    void (*serve)(int fd);     /* one connection, on its own goroutine */
};

/* Parse -addr HOST:PORT, -procs N, -idle SECONDS; listen; log
 * "<name>: listening on HOST:PORT (GOMAXPROCS N)"; serve until SIGINT or
 * SIGTERM; close everything and return 0 (2 for bad flags, 1 when it
 * cannot listen). */
int server_main(const struct server *s, int argc, char **argv);

/* gort_read with the idle deadline armed first. */
long server_read(int fd, void *buf, size_t n);

#endif
