/* SPDX-License-Identifier: MIT */
/*
 * test_env_runtime.c - settings and schedtrace through the real
 * gort_main, in child processes with their own environment.
 *
 * The parent clears GORTMAXPROCS, GORTDEBUG and GORTSTACKSIZE from its own
 * environment first, so that only what a case sets reaches the child.
 */
#include "internal.h"
#include "test_util.h"

#include <errno.h>
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>

static void clean_env(void)
{
    unsetenv("GORTMAXPROCS");
    unsetenv("GORTDEBUG");
    unsetenv("GORTSTACKSIZE");
}

/* ---------------------------------------------------------------------------
 * The child: a small program that reports what it ran with.
 * ------------------------------------------------------------------------- */

static gort_waitgroup child_wg;
static int64_t child_ran;

static void child_worker(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&child_ran, 1, __ATOMIC_RELAXED);
    gort_waitgroup_done(&child_wg);
}

static void child_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&child_wg, 100);
    for (int i = 0; i < 100; i++)
        gort_go(child_worker, NULL);
    gort_waitgroup_wait(&child_wg);
    printf("gomaxprocs=%d ran=%lld stacksize=%zu\n", gort_gomaxprocs(0),
           (long long)child_ran, gort__stack_size);
}

TEST_HIDDEN(settings_child)
{
    CHECK_EQ(gort_main(child_main, NULL), 0);
}

/* Run the settings child with env; check it ran 100 goroutines with
 * `procs` Ps and the default stack size, and exited 0.  Returns stderr
 * (malloc'd). */
static char *run_settings(const char *const *env, int procs)
{
    clean_env();
    struct test_child r;
    test_run_child("settings_child", env, 60, &r);
    if (r.exit_code != 0)
        fprintf(stderr, "child: exit %d signal %d\n--- stdout ---\n%s\n"
                        "--- stderr ---\n%s\n",
                r.exit_code, r.signal, r.out, r.err);
    CHECK_EQ(r.exit_code, 0);
    char want[128];
    snprintf(want, sizeof want, "gomaxprocs=%d ran=100 stacksize=%d\n", procs,
             GORT_DEFAULT_STACK_SIZE);
    CHECK_STR_CONTAINS(r.out, want);
    free(r.out);
    return r.err;
}

/* The default GOMAXPROCS, computed as gort_main does. */
static int default_procs(void)
{
    return gort__default_procs("", gort__affinity_cpus());
}

/* A bad GORTMAXPROCS: one line naming the value, then the default. */
static void check_bad_maxprocs(const char *value)
{
    char var[64], named[64], using_[64];
    snprintf(var, sizeof var, "GORTMAXPROCS=%s", value);
    snprintf(named, sizeof named, "GORTMAXPROCS=\"%s\"", value);
    snprintf(using_, sizeof using_, "using %d\n", default_procs());
    const char *env[] = {var, NULL};
    char *err = run_settings(env, default_procs());
    CHECK_EQ(count_lines(err), 1);
    CHECK(strncmp(err, "gort: ", 6) == 0);
    CHECK_STR_CONTAINS(err, named);
    CHECK_STR_CONTAINS(err, "not a valid processor count");
    CHECK_STR_CONTAINS(err, using_);
    free(err);
}

/* GORTMAXPROCS=abc is reported on one stderr line naming the value, and the
 * program runs with the default (affinity CPUs capped by the cgroup). */
TEST(maxprocs_abc)
{
    check_bad_maxprocs("abc");
}

/* GORTMAXPROCS=0: reported, the default used, as for abc. */
TEST(maxprocs_zero)
{
    check_bad_maxprocs("0");
}

/* GORTMAXPROCS=-3: reported, the default used, as for abc. */
TEST(maxprocs_negative)
{
    check_bad_maxprocs("-3");
}

/* GORTMAXPROCS=99999: reported, the default used, as for abc. */
TEST(maxprocs_huge)
{
    check_bad_maxprocs("99999");
}

/* The control: GORTMAXPROCS=3 is used, silently. */
TEST(maxprocs_good)
{
    static const char *const env[] = {"GORTMAXPROCS=3", NULL};
    char *err = run_settings(env, 3);
    CHECK_EQ(strlen(err), 0);
    free(err);
}

/* GORTDEBUG=schedtrace=x: reported, program runs. */
TEST(debug_bad_schedtrace)
{
    static const char *const env[] = {"GORTDEBUG=schedtrace=x", NULL};
    char *err = run_settings(env, default_procs());
    CHECK_EQ(count_lines(err), 1);
    CHECK_STR_CONTAINS(err, "gort: GORTDEBUG: schedtrace=\"x\" is not valid");
    /* No SCHED lines: tracing stayed off. */
    CHECK(strstr(err, "SCHED") == NULL);
    free(err);
}

/* GORTSTACKSIZE=1k: reported, default size kept. */
TEST(stacksize_too_small)
{
    static const char *const env[] = {"GORTSTACKSIZE=1k", NULL};
    char *err = run_settings(env, default_procs());
    CHECK_EQ(count_lines(err), 1);
    CHECK_STR_CONTAINS(err, "gort: GORTSTACKSIZE=\"1k\" is not a valid stack "
                            "size");
    free(err);
}

/* ---------------------------------------------------------------------------
 * set_stack_size
 * ------------------------------------------------------------------------- */

static int busy_err;

static void set_stack_size_main(void *arg)
{
    (void)arg;
    busy_err = gort_set_stack_size(128 * 1024);
}

/* gort_set_stack_size bounds and -EBUSY. */
TEST(set_stack_size)
{
    CHECK_EQ(gort_set_stack_size(1024), -EINVAL);
    CHECK_EQ(gort_set_stack_size(GORT_MIN_STACK_SIZE - 1), -EINVAL);
    CHECK_EQ(gort_set_stack_size(((size_t)1 << 30) + 1), -EINVAL);
    CHECK_EQ(gort__stack_size, GORT_DEFAULT_STACK_SIZE);
    CHECK_EQ(gort_main(set_stack_size_main, NULL), 0);
    CHECK_EQ(busy_err, -EBUSY);
    CHECK_EQ(gort__stack_size, GORT_DEFAULT_STACK_SIZE);
    /* Between runs it may be set again. */
    CHECK_EQ(gort_set_stack_size(GORT_MIN_STACK_SIZE), 0);
    CHECK_EQ(gort__stack_size, GORT_MIN_STACK_SIZE);
    CHECK_EQ(gort_set_stack_size(GORT_DEFAULT_STACK_SIZE), 0);
}

/* ---------------------------------------------------------------------------
 * schedtrace_format, scheddetail_format
 * ------------------------------------------------------------------------- */

static gort_waitgroup busy_wg;

/* Busy for 100 ms, yielding every millisecond: under ThreadSanitizer
 * (no asynchronous preemption) main, preempted at a gort call if its
 * start took a time slice, would otherwise wait for both to end and never
 * be seen waiting. */
static void busy_100ms(void *arg)
{
    (void)arg;
    int64_t now = gort_nanotime(), end = now + 100 * 1000 * 1000;
    while (now < end) {
        int64_t slice = now + 1000 * 1000;
        while ((now = gort_nanotime()) < slice)
            ;
        gort_gosched();
    }
    gort_waitgroup_done(&busy_wg);
}

/* Keep two Ps busy for 100 ms while main waits. */
static void trace_main(void *arg)
{
    (void)arg;
    gort_waitgroup_add(&busy_wg, 2);
    gort_go(busy_100ms, NULL);
    gort_go(busy_100ms, NULL);
    gort_waitgroup_wait(&busy_wg);
}

TEST_HIDDEN(trace_child)
{
    CHECK_EQ(gort_main(trace_main, NULL), 0);
}

static void compile(regex_t *re, const char *pattern)
{
    int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[256];
        regerror(rc, re, msg, sizeof msg);
        fprintf(stderr, "regcomp(%s): %s\n", pattern, msg);
    }
    CHECK_EQ(rc, 0);
}

static bool matches(regex_t *re, const char *line)
{
    return regexec(re, line, 0, NULL, 0) == 0;
}

/* Split text into lines in place; returns the count (at most max).  A
 * last line without its newline counts, and fails the format checks. */
static int split_lines(char *text, char **lines, int max)
{
    int n = 0;
    for (char *s = text; *s && n < max;) {
        lines[n++] = s;
        char *nl = strchr(s, '\n');
        if (!nl)
            break;
        *nl = 0;
        s = nl + 1;
    }
    return n;
}

static void run_trace(const char *procs, const char *debug,
                      struct test_child *r)
{
    clean_env();
    const char *env[] = {procs, debug, NULL};
    test_run_child("trace_child", env, 60, r);
    if (r->exit_code != 0)
        fprintf(stderr, "child: exit %d signal %d\n--- stderr ---\n%s\n",
                r->exit_code, r->signal, r->err);
    CHECK_EQ(r->exit_code, 0);
}

#define SCHED_RE                                                               \
    "^SCHED [0-9]+ms: gomaxprocs=[0-9]+ idleprocs=[0-9]+ threads=[0-9]+ "      \
    "spinningthreads=[0-9]+ needspinning=[0-9]+ idlethreads=[0-9]+ "           \
    "runqueue=[0-9]+"

/* A SCHED line must match re; on failure show its start and its end. */
static void check_sched_line(regex_t *re, const char *line, int i)
{
    if (!matches(re, line)) {
        size_t len = strlen(line);
        fprintf(stderr, "line %d (%zu bytes) does not match: \"%.100s ... %s\"\n",
                i, len, line, line + (len > 60 ? len - 60 : 0));
    }
    CHECK(matches(re, line));
}

/* GORTDEBUG=schedtrace=10: Go's SCHED line format. */
TEST(schedtrace_format)
{
    struct test_child r;
    run_trace("GORTMAXPROCS=2", "GORTDEBUG=schedtrace=10", &r);
    regex_t re;
    compile(&re, SCHED_RE " \\[( [0-9]+)+ \\] schedticks=\\[ ([0-9]+ )+\\]$");
    static char *lines[100000];
    int n = split_lines(r.err, lines, 100000);
    int busy = 0;
    long last_ms = -1;
    for (int i = 0; i < n; i++) {
        check_sched_line(&re, lines[i], i);
        CHECK_STR_CONTAINS(lines[i], " gomaxprocs=2 ");
        /* Two entries in each list: one per P. */
        CHECK_STR_CONTAINS(lines[i], "runqueue=");
        long ms = atol(lines[i] + 6);
        CHECK_GE(ms, last_ms);
        last_ms = ms;
        busy += strstr(lines[i], " idleprocs=0 ") != NULL;
    }
    /* 100 ms at one line per 10 ms: about 10; 3 is safe on a loaded
     * machine.  And at least one while both Ps were busy. */
    fprintf(stderr, "%d SCHED lines, %d with both Ps busy\n", n, busy);
    CHECK_GE(n, 3);
    CHECK_GE(busy, 1);
    regfree(&re);
    test_child_free(&r);
}

/* Entries in the list that starts at the first "[" after key. */
static int list_len(const char *line, const char *key)
{
    const char *s = strstr(line, key);
    CHECK(s != NULL);
    s = strchr(s, '[');
    CHECK(s != NULL);
    int n = 0;
    for (s++; *s && *s != ']'; s++)
        n += s[0] == ' ' && s[1] >= '0' && s[1] <= '9';
    return n;
}

/* GORTDEBUG=schedtrace=10 with 300 Ps: the SCHED lines, of some 2 KB, stay
 * whole, one per line. */
TEST(schedtrace_many_procs)
{
    struct test_child r;
    run_trace("GORTMAXPROCS=300", "GORTDEBUG=schedtrace=10", &r);
    regex_t re;
    compile(&re, SCHED_RE " \\[( [0-9]+)+ \\] schedticks=\\[ ([0-9]+ )+\\]$");
    static char *lines[100000];
    int n = split_lines(r.err, lines, 100000);
    for (int i = 0; i < n; i++) {
        check_sched_line(&re, lines[i], i);
        CHECK_STR_CONTAINS(lines[i], " gomaxprocs=300 ");
        CHECK_EQ(list_len(lines[i], "runqueue="), 300);
        CHECK_EQ(list_len(lines[i], "schedticks="), 300);
    }
    CHECK_GE(n, 3);
    regfree(&re);
    test_child_free(&r);
}

/* GORTDEBUG=schedtrace=10,scheddetail=1: Go's SCHED, P, M and G lines. */
TEST(scheddetail_format)
{
    struct test_child r;
    run_trace("GORTMAXPROCS=2", "GORTDEBUG=schedtrace=10,scheddetail=1", &r);
    regex_t sched, p, m, g;
    compile(&sched, SCHED_RE " gcwaiting=(true|false) nmidlelocked=[0-9]+ "
                             "stopwait=[0-9]+ sysmonwait=(true|false)$");
    compile(&p, "^  P([0-9]+): status=[0-9]+ schedtick=[0-9]+ "
                "syscalltick=[0-9]+ m=([0-9]+|nil) runqsize=[0-9]+ "
                "gfreecnt=[0-9]+ timerslen=[0-9]+$");
    compile(&m, "^  M[0-9]+: p=([0-9]+|nil) curg=([0-9]+|nil) "
                "throwing=[0-9]+ preemptoff=[^ ]* "
                "locks=[0-9]+ dying=[0-9]+ spinning=(true|false) "
                "blocked=(true|false) lockedg=([0-9]+|nil)$");
    compile(&g, "^  G[0-9]+: status=[0-9]+\\([^)]*\\) m=([0-9]+|nil) "
                "lockedm=([0-9]+|nil)$");
    static char *lines[100000];
    int n = split_lines(r.err, lines, 100000);
    int blocks = 0, main_waiting = 0, max_ng = 0;
    for (int i = 0; i < n;) {
        /* A block: the SCHED line, then P0 and P1, then M lines, then G
         * lines, in that order. */
        if (!matches(&sched, lines[i]))
            fprintf(stderr, "line %d: want a SCHED line: \"%s\"\n", i,
                    lines[i]);
        CHECK(matches(&sched, lines[i]));
        CHECK_STR_CONTAINS(lines[i], " gomaxprocs=2 ");
        i++;
        for (int k = 0; k < 2; k++, i++) {
            CHECK_LT(i, n);
            char want[16];
            snprintf(want, sizeof want, "  P%d: ", k);
            if (!matches(&p, lines[i]) || strncmp(lines[i], want, 5) != 0)
                fprintf(stderr, "line %d: want a P%d line: \"%s\"\n", i, k,
                        lines[i]);
            CHECK(matches(&p, lines[i]));
            CHECK(strncmp(lines[i], want, strlen(want)) == 0);
        }
        int nm = 0, ng = 0;
        for (; i < n && matches(&m, lines[i]); i++)
            nm++;
        for (; i < n && matches(&g, lines[i]); i++) {
            ng++;
            main_waiting +=
                strncmp(lines[i], "  G1: status=4(sync.WaitGroup.Wait) ",
                        36) == 0;
        }
        if (i < n && !matches(&sched, lines[i]))
            fprintf(stderr, "line %d matches no format: \"%s\"\n", i,
                    lines[i]);
        /* M0 and sysmon at least; main at least. */
        CHECK_GE(nm, 2);
        CHECK_GE(ng, 1);
        max_ng = ng > max_ng ? ng : max_ng;
        blocks++;
    }
    fprintf(stderr, "%d blocks, %d with main waiting\n", blocks,
            main_waiting);
    CHECK_GE(blocks, 3);
    CHECK_GE(main_waiting, 1);
    CHECK_GE(max_ng, 3); /* main and the two busy goroutines */
    regfree(&sched);
    regfree(&p);
    regfree(&m);
    regfree(&g);
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * GOMAXPROCS follows the cgroup CPU limit while the program runs.
 *
 * The child reads its cgroup from a fake tree (gort__cgroup_root, named by
 * GORT_TEST_CGROUP_ROOT) whose cpu.max it rewrites while gort runs, and
 * prints each GOMAXPROCS it waited for.  GORT_TEST_MAXPROCS_SET=1 makes it
 * call gort_gomaxprocs(1) first, as a program choosing its own value.
 * ------------------------------------------------------------------------- */

static const char *cg_root_child;

static void cg_write(const char *content)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sys/fs/cgroup/app/cpu.max",
             cg_root_child);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK(fputs(content, f) >= 0);
    CHECK_EQ(fclose(f), 0);
}

/* Poll GOMAXPROCS for up to ms milliseconds; return it once it is want,
 * or the last value seen. */
static int cg_wait(int want, int ms)
{
    int got = gort_gomaxprocs(0);
    for (int i = 0; i < ms / 10 && got != want; i++) {
        gort_sleep(10 * 1000 * 1000);
        got = gort_gomaxprocs(0);
    }
    return got;
}

static uint64_t cg_updates(void)
{
    gort_metric_sample s = {.name = "/gort/sched/gomaxprocs-updates:events"};
    CHECK_EQ(gort_metric_read(s.name, &s), 0);
    return s.u64;
}

static void cg_child_main(void *arg)
{
    (void)arg;
    int ncpu = gort__affinity_cpus();
    int all = ncpu < GORT_MAX_PROCS ? ncpu : GORT_MAX_PROCS;
    const char *set = getenv("GORT_TEST_MAXPROCS_SET");
    if (set && strcmp(set, "1") == 0)
        gort_gomaxprocs(1);
    printf("start=%d ncpu=%d\n", gort_gomaxprocs(0), all);
    /* Unlimited: every CPU (sysmon reads the file within a second). */
    cg_write("max 100000\n");
    printf("nolimit=%d\n", cg_wait(all, 3000));
    /* Back to one CPU. */
    cg_write("100000 100000\n");
    printf("onecpu=%d\n", cg_wait(1, 3000));
    printf("updates=%llu\n", (unsigned long long)cg_updates());
}

TEST_HIDDEN(cgroup_follow_child)
{
    cg_root_child = getenv("GORT_TEST_CGROUP_ROOT");
    CHECK(cg_root_child != NULL);
    gort__cgroup_root = cg_root_child;
    CHECK_EQ(gort_main(cg_child_main, NULL), 0);
}

/* Run the child on a fake cgroup v2 tree whose cpu.max starts at one CPU;
 * returns its stdout (malloc'd).  extra: one more environment entry. */
static char *run_cgroup_child(const char *extra)
{
    clean_env();
    char tmpl[64];
    CHECK(mkdtemp(tmp_template(tmpl, sizeof tmpl, "gort_test_cg_")) != NULL);
    static const char *const files[][2] = {
        {"proc", NULL},
        {"proc/self", NULL},
        {"proc/self/cgroup", "0::/app\n"},
        {"proc/self/mountinfo",
         "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
         "35 25 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 "
         "cgroup2 rw\n"},
        {"sys", NULL},
        {"sys/fs", NULL},
        {"sys/fs/cgroup", NULL},
        {"sys/fs/cgroup/app", NULL},
        {"sys/fs/cgroup/app/cpu.max", "100000 100000\n"},
    };
    char path[4096];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpl, files[i][0]);
        if (files[i][1] == NULL) {
            CHECK_EQ(mkdir(path, 0755), 0);
            continue;
        }
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        CHECK(fputs(files[i][1], f) >= 0);
        CHECK_EQ(fclose(f), 0);
    }
    char rootvar[128];
    snprintf(rootvar, sizeof rootvar, "GORT_TEST_CGROUP_ROOT=%s", tmpl);
    const char *env[] = {rootvar, extra, NULL};
    struct test_child r;
    test_run_child("cgroup_follow_child", env, 60, &r);
    if (r.exit_code != 0)
        fprintf(stderr, "child: exit %d signal %d\n--- stdout ---\n%s\n"
                        "--- stderr ---\n%s\n",
                r.exit_code, r.signal, r.out, r.err);
    CHECK_EQ(r.exit_code, 0);
    fprintf(stderr, "%s", r.out);
    for (size_t i = sizeof files / sizeof files[0]; i-- > 0;) {
        snprintf(path, sizeof path, "%s/%s", tmpl, files[i][0]);
        CHECK_EQ(remove(path), 0);
    }
    CHECK_EQ(rmdir(tmpl), 0);
    free(r.err);
    return r.out;
}

/* The child's "key=N" value. */
static int cg_value(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    CHECK(p != NULL);
    return atoi(p + strlen(key));
}

/* GOMAXPROCS starts at the cgroup's one CPU, rises to every CPU when
 * cpu.max says "max", and falls back to one when the limit returns, each
 * within a few seconds; the metric counts both changes. */
TEST(maxprocs_follows_cgroup)
{
    char *out = run_cgroup_child(NULL);
    int ncpu = cg_value(out, "ncpu=");
    CHECK_EQ(cg_value(out, "start="), 1);
    CHECK_EQ(cg_value(out, "nolimit="), ncpu);
    CHECK_EQ(cg_value(out, "onecpu="), 1);
    CHECK_EQ(cg_value(out, "updates="), ncpu > 1 ? 2 : 0);
    free(out);
}

/* GORTMAXPROCS=1 is the program's choice: the cgroup's changes leave
 * GOMAXPROCS at 1 and nothing is counted. */
TEST(maxprocs_env_stays)
{
    char *out = run_cgroup_child("GORTMAXPROCS=1");
    CHECK_EQ(cg_value(out, "start="), 1);
    CHECK_EQ(cg_value(out, "nolimit="), 1);
    CHECK_EQ(cg_value(out, "onecpu="), 1);
    CHECK_EQ(cg_value(out, "updates="), 0);
    free(out);
}

/* gort_gomaxprocs(1) is the program's choice too. */
TEST(maxprocs_program_stays)
{
    char *out = run_cgroup_child("GORT_TEST_MAXPROCS_SET=1");
    CHECK_EQ(cg_value(out, "start="), 1);
    CHECK_EQ(cg_value(out, "nolimit="), 1);
    CHECK_EQ(cg_value(out, "updates="), 0);
    free(out);
}
