/* SPDX-License-Identifier: MIT */
/*
 * child.h - an experiment run in a child process whose stderr the parent
 * reads (header only).
 *
 * The experiments that read the runtime's own trace (GORTDEBUG's
 * schedtrace, printed on stderr) fork before any goroutine runs: the
 * child runs the work under gort_main and checks what it can see itself;
 * the parent passes the child's stderr on as it comes, reads it line by
 * line, and checks the trace.
 */
#ifndef GORT_EXPERIMENTS_CHILD_H
#define GORT_EXPERIMENTS_CHILD_H

#include <gort.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Fork a child that runs fn under gort_main with its stderr on a pipe and
 * exits 1 when one of its checks failed; copy what comes to our stderr
 * and hand each line to on_line.  prog names the program in messages.
 * Returns the child's wait status, or -1 when it could not be run. */
static inline int run_child(const char *prog, void (*fn)(void *),
                            void (*on_line)(const char *))
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        dup2(pfd[1], 2);
        close(pfd[0]);
        close(pfd[1]);
        int err = gort_main(fn, NULL);
        if (err < 0)
            fprintf(stderr, "%s: gort_main: error %d\n", prog, err);
        /* exit, not _exit: the sanitizers' checks at exit run. */
        exit(err < 0 || failed);
    }
    close(pfd[1]);
    char line[65536];
    size_t len = 0;
    char buf[16384];
    ssize_t k;
    while ((k = read(pfd[0], buf, sizeof buf)) != 0) {
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            break;
        for (ssize_t off = 0; off < k;) {
            ssize_t w = write(2, buf + off, (size_t)(k - off));
            if (w <= 0)
                break;
            off += w;
        }
        for (ssize_t i = 0; i < k; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line - 1)
                    line[len++] = buf[i];
                continue;
            }
            line[len] = '\0';
            on_line(line);
            len = 0;
        }
    }
    close(pfd[0]);
    int st;
    if (waitpid(pid, &st, 0) != pid) {
        fprintf(stderr, "%s: waitpid: %s\n", prog, strerror(errno));
        return -1;
    }
    return st;
}

/* Whether the child behind wait status st (-1: not run) never got to
 * judge its checks: it could not be run, died of a signal, or exited with
 * more than the 1 of a failed check.  Says which on a FAILED check line. */
static inline bool child_broke(int st)
{
    if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) <= 1)
        return false;
    if (st == -1)
        printf("check: the experiment could not be run: FAILED\n");
    else if (WIFSIGNALED(st))
        printf("check: the experiment's process died of signal %d: "
               "FAILED\n", WTERMSIG(st));
    else
        printf("check: the experiment's process exited with status %d: "
               "FAILED\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return true;
}

#endif /* GORT_EXPERIMENTS_CHILD_H */
