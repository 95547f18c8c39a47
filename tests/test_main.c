/* SPDX-License-Identifier: MIT */
/*
 * test_main.c - the runner behind test.h: registry, case dispatch and the
 * child-process helper for death tests.
 */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 256

static struct {
    const char *name;
    gort_test_fn fn;
    int hidden;
    const char *const *opts;
} tests[MAX_TESTS];
static int ntests;
static const char *self_path;

void gort_test_register(const char *name, gort_test_fn fn, int hidden,
                        const char *const *opts)
{
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "test.h: more than %d cases\n", MAX_TESTS);
        exit(2);
    }
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    tests[ntests].hidden = hidden;
    tests[ntests].opts = opts;
    ntests++;
}

/* The ctest cases, one a line: the name, then its options separated by
 * spaces; hidden cases left out (tests/list_cases.cmake reads this). */
static void list_cases(void)
{
    for (int i = 0; i < ntests; i++) {
        if (tests[i].hidden)
            continue;
        printf("%s", tests[i].name);
        for (const char *const *o = tests[i].opts; o && *o; o++)
            printf(" %s", *o);
        printf("\n");
    }
}

int64_t test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int test_long(void)
{
    const char *s = getenv("GORT_TEST_LONG");
    return s && strcmp(s, "1") == 0;
}

int test_procs_list(int procs[4])
{
    int cand[4] = {1, 2, 4, (int)sysconf(_SC_NPROCESSORS_ONLN)};
    int n = 0;
    for (int i = 0; i < 4; i++) {
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= procs[j] == cand[i];
        if (!dup && cand[i] > 0)
            procs[n++] = cand[i];
    }
    return n;
}

/* Read everything from two fds until both close or the deadline passes. */
static void drain(int fds[2], char *bufs[2], int64_t deadline)
{
    size_t len[2] = {0, 0}, cap[2] = {4096, 4096};
    bufs[0] = malloc(cap[0]);
    bufs[1] = malloc(cap[1]);
    int open_[2] = {1, 1};
    while (open_[0] || open_[1]) {
        struct pollfd pfd[2];
        int n = 0, map[2];
        for (int i = 0; i < 2; i++)
            if (open_[i]) {
                pfd[n].fd = fds[i];
                pfd[n].events = POLLIN;
                map[n++] = i;
            }
        int64_t left = (deadline - test_now_ns()) / 1000000;
        if (left <= 0)
            break;
        int r = poll(pfd, n, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (int k = 0; k < n; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            int i = map[k];
            if (cap[i] - len[i] < 2048) {
                cap[i] *= 2;
                bufs[i] = realloc(bufs[i], cap[i]);
            }
            ssize_t got = read(fds[i], bufs[i] + len[i], cap[i] - len[i] - 1);
            if (got <= 0)
                open_[i] = 0;
            else
                len[i] += (size_t)got;
        }
    }
    bufs[0][len[0]] = 0;
    bufs[1][len[1]] = 0;
}

void test_run_child(const char *name, const char *const *env, int timeout_s,
                    struct test_child *r)
{
    int outp[2], errp[2];
    if (pipe(outp) || pipe(errp)) {
        perror("pipe");
        abort();
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        abort();
    }
    if (pid == 0) {
        dup2(outp[1], 1);
        dup2(errp[1], 2);
        close(outp[0]);
        close(errp[0]);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        const char *emu = getenv("GORT_TEST_EMULATOR");
        if (emu && *emu) {
            /* "qemu-aarch64 -L /sysroot": split on spaces. */
            char buf[1024], *argv[32];
            int argc = 0;
            snprintf(buf, sizeof buf, "%s", emu);
            for (char *tok = strtok(buf, " "); tok && argc < 28;
                 tok = strtok(NULL, " "))
                argv[argc++] = tok;
            argv[argc++] = (char *)self_path;
            argv[argc++] = "--child";
            argv[argc++] = (char *)name;
            argv[argc] = NULL;
            execvp(argv[0], argv);
        } else {
            execl(self_path, self_path, "--child", name, (char *)NULL);
        }
        _exit(127);
    }
    close(outp[1]);
    close(errp[1]);
    int fds[2] = {errp[0], outp[0]};
    char *bufs[2];
    drain(fds, bufs, test_now_ns() + (int64_t)timeout_s * 1000000000);
    r->err = bufs[0];
    r->out = bufs[1];
    close(outp[0]);
    close(errp[0]);
    int status = 0;
    int64_t deadline = test_now_ns() + (int64_t)timeout_s * 1000000000;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (test_now_ns() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(1000);
    }
    r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

void test_child_free(struct test_child *r)
{
    free(r->err);
    free(r->out);
}

int main(int argc, char **argv)
{
    self_path = "/proc/self/exe";
    /* Resolve now: /proc/self/exe of the child would be itself anyway. */
    static char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n > 0) {
        path[n] = 0;
        self_path = path;
    }
    const char *name = NULL;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        list_cases();
        return 0;
    }
    if (argc == 2)
        name = argv[1];
    else if (argc == 3 && strcmp(argv[1], "--child") == 0)
        name = argv[2];
    if (!name) {
        fprintf(stderr, "usage: %s CASE | --list\n", argv[0]);
        return 2;
    }
    for (int i = 0; i < ntests; i++)
        if (strcmp(tests[i].name, name) == 0) {
            tests[i].fn();
            fflush(stdout);
            return 0;
        }
    fprintf(stderr, "%s: no case named '%s' (try --list)\n", argv[0], name);
    return 2;
}
