/* SPDX-License-Identifier: MIT */
/*
 * server.h - the scaffolding the example servers share: flags, the
 * listening socket, a goroutine per connection, idle deadlines, accept
 * back-off on EMFILE, and a clean stop on SIGINT/SIGTERM.
 *
 * A server supplies serve(conn) and calls server_main.  serve runs on its
 * own goroutine for each connection; it reads with server_read (which arms
 * the idle deadline) and writes with gort_write or server_write, and
 * returns when the client is done or a call fails.  The scaffolding closes
 * the descriptor, always from that goroutine, after serve returns.
 */
#ifndef GORT_EXAMPLE_SERVER_H
#define GORT_EXAMPLE_SERVER_H

#include <gort.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A flag of one server beyond the common ones: "NAME VALUE". */
struct server_flag {
    const char *name;             /* e.g. "-output-limit" */
    const char *value;            /* what VALUE is, for the usage line */
    const char *want;             /* what a bad VALUE should have been */
    bool (*set)(const char *value); /* false for a bad value */
};

struct server {
    const char *name;          /* for log lines and usage */
    const char *default_addr;  /* e.g. "127.0.0.1:7007" */
    void (*serve)(int fd);     /* one connection, on its own goroutine */
    const struct server_flag *flags; /* its own flags, ended by a zeroed
                                        entry; NULL for none */
};

/* Parse -addr HOST:PORT, -procs N, -idle SECONDS and the server's own
 * flags; listen (gort_listen "tcp": [::1]:PORT for IPv6, :PORT on every
 * address of both IP versions, a host name); log "<name>: listening on
 * HOST:PORT (GOMAXPROCS N)", an IPv6 host in brackets; serve until SIGINT
 * or SIGTERM; stop everything and return 0 (2 for bad flags, 1 when it
 * cannot listen). */
int server_main(const struct server *s, int argc, char **argv);

/* gort_read with the idle deadline armed first. */
long server_read(int fd, void *buf, size_t n);

/* gort_write with the idle deadline armed for writes first: the client
 * must take all n bytes within -idle seconds.  Returns n, fewer when the
 * deadline passed first, or a negative errno. */
long server_write(int fd, const void *buf, size_t n);

/* The peer of connection fd as "HOST:PORT" in buf (n bytes), for log
 * lines; "?" when it is not known. */
const char *server_peer(int fd, char *buf, size_t n);

#endif
