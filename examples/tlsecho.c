/* SPDX-License-Identifier: MIT */
/*
 * tlsecho - a TLS echo server on OpenSSL, one goroutine per connection.
 *
 *   build/examples/tlsecho -cert FILE -key FILE [-addr HOST:PORT]
 *                          [-procs N] [-idle SECONDS]
 *
 * Listens on -addr (default 127.0.0.1:7443), does the TLS handshake with
 * the certificate and key given (PEM files), and writes back whatever each
 * client sends.  OpenSSL, unmodified, reads and writes the socket itself
 * (SSL_accept, SSL_read, SSL_write on a blocking-mode session); gort-hook,
 * linked in, parks the goroutine in each of those reads and writes
 * instead of its thread (docs/hooks.md).  A connection idle for -idle
 * seconds (default 60) is closed; SIGINT/SIGTERM stop it cleanly
 * (server.c).  Try it with
 *
 *   openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost \
 *       -keyout key.pem -out cert.pem -days 1
 *   build/examples/tlsecho -cert cert.pem -key key.pem &
 *   openssl s_client -connect 127.0.0.1:7443 -quiet
 */
#include "server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

static const char *cert_file, *key_file;
static SSL_CTX *ctx;
static double idle_s = 60;

static bool set_cert(const char *v)
{
    cert_file = v;
    return *v != '\0';
}

static bool set_key(const char *v)
{
    key_file = v;
    return *v != '\0';
}

static void serve(int fd)
{
    /* The idle limit as the socket's own timeouts: OpenSSL's reads and
     * writes are the C library's calls, which gort-hook bounds by them. */
    struct timeval tv = {(time_t)idle_s,
                         (suseconds_t)((idle_s - (time_t)idle_s) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    SSL *ssl = SSL_new(ctx);
    if (!ssl || !SSL_set_fd(ssl, fd) || SSL_accept(ssl) != 1) {
        SSL_free(ssl);
        return;
    }
    char buf[16384];
    for (;;) {
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0 || SSL_write(ssl, buf, n) != n)
            break;
    }
    SSL_shutdown(ssl);
    SSL_free(ssl);
}

int main(int argc, char **argv)
{
    static const struct server_flag flags[] = {
        {"-cert", "FILE", "a PEM certificate file", set_cert},
        {"-key", "FILE", "a PEM private key file", set_key},
        {0},
    };
    static const struct server s = {"tlsecho", "127.0.0.1:7443", serve,
                                    flags};
    /* The files first, to load them before anything listens (a missing
     * one is an error at once); server_main checks every flag after. */
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "-cert"))
            cert_file = argv[i + 1];
        else if (!strcmp(argv[i], "-key"))
            key_file = argv[i + 1];
        else if (!strcmp(argv[i], "-idle"))
            idle_s = atof(argv[i + 1]);
    }
    if (!cert_file || !key_file) {
        fprintf(stderr, "tlsecho: -cert FILE and -key FILE are needed\n");
        return 2;
    }
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "tlsecho: cannot use -cert %s -key %s:\n", cert_file,
                key_file);
        ERR_print_errors_fp(stderr);
        return 1;
    }
    int r = server_main(&s, argc, argv);
    SSL_CTX_free(ctx);
    return r;
}
