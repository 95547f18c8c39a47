/* SPDX-License-Identifier: MIT */
/*
 * echo - a TCP echo server, one goroutine per connection.
 *
 *   build/examples/echo [-addr HOST:PORT] [-procs N] [-idle SECONDS]
 *
 * Listens on -addr (default 127.0.0.1:7007), logs one line when it does,
 * and writes back whatever each client sends.  A connection idle for
 * -idle seconds (default 60) is closed; SIGINT/SIGTERM stop it cleanly
 * (server.c).  All the waiting is in the network poller: ten thousand
 * idle clients cost ten thousand parked goroutines and a handful of
 * threads.
 */
#include "server.h"

static void serve(int fd)
{
    char buf[16384];
    for (;;) {
        long n = server_read(fd, buf, sizeof buf);
        if (n <= 0)
            return; /* EOF, error, idle deadline, or shutdown */
        if (gort_write(fd, buf, (size_t)n) != n)
            return;
    }
}

int main(int argc, char **argv)
{
    static const struct server s = {"echo", "127.0.0.1:7007", serve, NULL};
    return server_main(&s, argc, argv);
}
