/* SPDX-License-Identifier: MIT */
/*
 * openssl.c - OpenSSL's TLS in blocking mode on both ends of hooked
 * sockets: an echo server and its clients, all goroutines of this
 * process, with plain socket/accept/connect and SSL_set_fd, SSL_accept,
 * SSL_connect, SSL_read and SSL_write.
 *
 *   hooklibs_openssl CERT KEY   (hooklibs.py makes the self-signed
 *                                certificate for localhost)
 *
 * The server listens on 127.0.0.1 (a free port) and echoes what each
 * connection sends; a connection whose first bytes are an HTTP GET gets a
 * minimal HTTP response instead, so that curl can check the server too.
 * 1000 client goroutines each connect, verify the certificate for
 * localhost, send "ping <i>\n" and wait in SSL_read for the echo.  The
 * server's goroutine for each connection reads the line and then waits at
 * a gate before echoing, so every client sits in SSL_read at once; once
 * all 1000 lines have arrived and the dump shows the 1000 clients (and
 * the acceptor) parked in the poller, the test samples the thread count
 * and opens the gate.
 *
 * Checks: while all are blocked the process has at most GOMAXPROCS + 4
 * threads and no echo has come; afterwards every client got exactly its
 * line.  Then the program prints "ready 127.0.0.1:<port>" and serves
 * outside clients (hooklibs.py runs `openssl s_client` and `curl
 * --cacert`) until its standard input ends, and checks that it served
 * both.
 */
#include "hooklibs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>

#define N 1000

static const char http_body[] = "hello from the gort TLS echo server\n";

static SSL_CTX *server_ctx, *client_ctx;
static struct sockaddr_in server_addr;
static int listen_fd;

static gort_waitgroup acceptor_wg; /* the acceptor */
static gort_waitgroup handlers_wg; /* the server's connections */
static gort_waitgroup clients_wg;  /* the client goroutines */
static gort_waitgroup gate;        /* 1 until every client is blocked */
static bool gate_open;             /* atomic */

static int arrived;       /* atomic: client lines the server holds */
static int echoed;        /* atomic: client reads that returned */
static int correct;       /* atomic: of those, with the client's own line */
static int http_served;   /* atomic: outside HTTP requests answered */
static int echo_external; /* atomic: outside connections echoed */

static void ssl_fail(const char *what)
{
    fprintf(stderr, "%s failed:\n", what);
    ERR_print_errors_fp(stderr);
    abort();
}

/* SSL_write of all n bytes (blocking mode writes whole records). */
static bool write_all(SSL *s, const void *buf, int n)
{
    return SSL_write(s, buf, n) == n;
}

/* One server connection: echo until the peer closes. */
static void handler(void *arg)
{
    int fd = (int)(intptr_t)arg;
    SSL *s = SSL_new(server_ctx);
    CHECK(s != NULL);
    CHECK_EQ(SSL_set_fd(s, fd), 1);
    if (SSL_accept(s) != 1) {
        /* An outside client may give up; ours never do. */
        fprintf(stderr, "server: SSL_accept failed:\n");
        ERR_print_errors_fp(stderr);
        goto out;
    }
    char buf[4096];
    bool first = true;
    int n;
    while ((n = SSL_read(s, buf, sizeof buf)) > 0) {
        if (first && n >= 4 && memcmp(buf, "GET ", 4) == 0) {
            /* curl's request (its head fits one record): answer, close. */
            char resp[256];
            int len = snprintf(resp, sizeof resp,
                               "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/plain\r\n"
                               "Content-Length: %zu\r\n"
                               "Connection: close\r\n\r\n%s",
                               sizeof http_body - 1, http_body);
            if (write_all(s, resp, len))
                HL_ATOMIC_INC(&http_served);
            break;
        }
        if (first && !HL_ATOMIC_LOAD(&gate_open)) {
            /* One of our clients: hold its echo until all are blocked. */
            HL_ATOMIC_INC(&arrived);
            gort_waitgroup_wait(&gate);
        } else if (first) {
            HL_ATOMIC_INC(&echo_external);
        }
        first = false;
        if (!write_all(s, buf, n))
            break;
    }
    SSL_shutdown(s); /* our close_notify; the peer's is not awaited */
out:
    SSL_free(s);
    close(fd);
    gort_waitgroup_done(&handlers_wg);
}

static void acceptor(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            /* EBADF: the main goroutine closed the listener. */
            CHECK_EQ(errno, EBADF);
            break;
        }
        gort_waitgroup_add(&handlers_wg, 1);
        CHECK_GT(gort_go(handler, (void *)(intptr_t)fd), 0);
    }
    gort_waitgroup_done(&acceptor_wg);
}

static void client(void *arg)
{
    int i = (int)(intptr_t)arg;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(fd, 0);
    CHECK_EQ(connect(fd, (struct sockaddr *)&server_addr, sizeof server_addr),
             0);
    SSL *s = SSL_new(client_ctx);
    CHECK(s != NULL);
    CHECK_EQ(SSL_set_fd(s, fd), 1);
    CHECK_EQ(SSL_set_tlsext_host_name(s, "localhost"), 1);
    CHECK_EQ(SSL_set1_host(s, "localhost"), 1);
    if (SSL_connect(s) != 1)
        ssl_fail("client: SSL_connect");
    CHECK_EQ(SSL_get_verify_result(s), X509_V_OK);

    char line[32], got[64];
    int len = snprintf(line, sizeof line, "ping %d\n", i);
    CHECK(write_all(s, line, len));
    int have = 0;
    while (have < len) {
        int n = SSL_read(s, got + have, (int)sizeof got - have);
        if (n <= 0)
            break;
        have += n;
    }
    HL_ATOMIC_INC(&echoed);
    if (have == len && memcmp(got, line, (size_t)len) == 0)
        HL_ATOMIC_INC(&correct);
    else
        fprintf(stderr, "client %d: echo '%.*s', want '%.*s'\n", i, have, got,
                len, line);
    SSL_shutdown(s);
    SSL_free(s);
    close(fd);
    gort_waitgroup_done(&clients_wg);
}

static void main_g(void *arg)
{
    (void)arg;
    gort_gomaxprocs(HL_PROCS);
    int64_t t0 = gort_nanotime();

    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE(listen_fd, 0);
    server_addr.sin_family = AF_INET;
    server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof server_addr;
    CHECK_EQ(bind(listen_fd, (struct sockaddr *)&server_addr, alen), 0);
    CHECK_EQ(listen(listen_fd, 4096), 0);
    CHECK_EQ(getsockname(listen_fd, (struct sockaddr *)&server_addr, &alen), 0);
    gort_waitgroup_add(&acceptor_wg, 1);
    CHECK_GT(gort_go(acceptor, NULL), 0);

    gort_waitgroup_add(&gate, 1);
    for (int i = 0; i < N; i++) {
        gort_waitgroup_add(&clients_wg, 1);
        CHECK_GT(gort_go(client, (void *)(intptr_t)i), 0);
    }
    /* Every line has reached the server, which holds the echoes ... */
    int64_t deadline = gort_nanotime() + 30000 * HL_MS;
    while (HL_ATOMIC_LOAD(&arrived) < N) {
        if (gort_nanotime() > deadline) {
            fprintf(stderr, "%d of %d lines arrived after 30 s\n",
                    HL_ATOMIC_LOAD(&arrived), N);
            CHECK(0);
        }
        gort_sleep(10 * HL_MS);
    }
    /* ... and every client is parked in SSL_read's read, the acceptor in
     * accept's wait. */
    int io_wait = hl_await_io_wait(N + 1);
    double t_blocked = hl_since(t0);
    int threads = hl_sample_threads();
    CHECK_EQ(HL_ATOMIC_LOAD(&echoed), 0);

    __atomic_store_n(&gate_open, true, __ATOMIC_RELEASE);
    gort_waitgroup_done(&gate);
    gort_waitgroup_wait(&clients_wg);
    CHECK_EQ(HL_ATOMIC_LOAD(&echoed), N);
    CHECK_EQ(HL_ATOMIC_LOAD(&correct), N);
    hl_report("openssl, SSL_read", N, io_wait, t_blocked, threads,
              hl_since(t0));

    /* Outside clients, until the driver closes our standard input. */
    say("ready 127.0.0.1:%d\n", ntohs(server_addr.sin_port));
    char b[256];
    ssize_t r;
    while ((r = read(0, b, sizeof b)) > 0)
        ;
    CHECK_EQ(r, 0);
    CHECK_EQ(close(listen_fd), 0); /* the acceptor's accept: EBADF */
    gort_waitgroup_wait(&acceptor_wg);
    gort_waitgroup_wait(&handlers_wg);
    say("external clients served: http %d, echo %d\n",
           HL_ATOMIC_LOAD(&http_served), HL_ATOMIC_LOAD(&echo_external));
    CHECK_GE(HL_ATOMIC_LOAD(&http_served), 1);
    CHECK_GE(HL_ATOMIC_LOAD(&echo_external), 1);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CERT KEY\n", argv[0]);
        return 2;
    }
    /* A peer that resets its connection must not kill the server: writes
     * to it fail with EPIPE instead. */
    signal(SIGPIPE, SIG_IGN);
    /* Both ends of every connection. */
    hl_raise_nofile(2 * N + 64);

    server_ctx = SSL_CTX_new(TLS_server_method());
    CHECK(server_ctx != NULL);
    if (SSL_CTX_use_certificate_chain_file(server_ctx, argv[1]) != 1 ||
        SSL_CTX_use_PrivateKey_file(server_ctx, argv[2], SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(server_ctx) != 1)
        ssl_fail("loading the certificate and key");
    client_ctx = SSL_CTX_new(TLS_client_method());
    CHECK(client_ctx != NULL);
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(client_ctx, argv[1], NULL) != 1)
        ssl_fail("loading the certificate as the clients' CA");

    CHECK_EQ(gort_main(main_g, NULL), 0);
    SSL_CTX_free(client_ctx);
    SSL_CTX_free(server_ctx);
    return 0;
}
