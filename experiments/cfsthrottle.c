/* SPDX-License-Identifier: MIT */
/*
 * cfsthrottle - a CPU quota of half a CPU, GOMAXPROCS forced to 8 and
 * GOMAXPROCS from gort's cgroup-aware default: how late a 1 ms ticker is.
 *
 * The program makes a cgroup with a CPU bandwidth limit of half a CPU
 * (cgroup v2: cpu.max "50000 100000"; on a machine whose cpu controller is
 * mounted as cgroup v1: cpu.cfs_quota_us 50000 per cpu.cfs_period_us
 * 100000; the kernel's CFS bandwidth control is the same either way) and
 * runs itself twice inside it, as a child: once with GORTMAXPROCS=8, once
 * with gort's default, which reads the cgroup's limit (src/env.c) and so
 * starts 1 P.  Each child runs W CPU-bound goroutines (default 4) and a
 * goroutine that ticks every millisecond and notes, per tick, how late it
 * woke against the tick's due time; it prints the 50th and 99th
 * percentiles.  The cgroup also gets the CPU weight of a nice 19 task,
 * so the experiment yields to everything else on the machine (which then
 * shows in the figures: judge them on an otherwise idle machine), and is
 * removed at the end.
 *
 * Why the default does better: with 8 Ps the CPU-bound goroutines run on
 * a thread each, as many at once as there are CPUs, spend the period's
 * 50 ms of quota in a fraction of the period and leave every thread of the cgroup, the ticker's too,
 * stopped by the kernel for the rest of it (CFS throttling).  With 1 P one
 * thread spends the quota, at most over 50 ms, so the throttled stretch
 * is shorter; the ticker meanwhile waits for the P behind the CPU-bound
 * goroutines, which sysmon preempts every 10 ms.  The 99th percentile
 * falls, the median may rise.  This is the lesson's "automaxprocs"
 * experiment, with gort's built-in cgroup-aware default in the role of
 * the library.
 *
 * Mirrors the Go program, run in such a cgroup with GOMAXPROCS=8 and then
 * without it (Go 1.25 also reads the limit; its default is at least 2):
 *
 *     for i := 0; i < 4; i++ { go func() { for { spin() } }() }
 *     t := time.NewTicker(time.Millisecond)
 *     due := time.Now()
 *     for i := 0; i < n; i++ {
 *         due = due.Add(time.Millisecond)
 *         now := <-t.C
 *         lateness = append(lateness, now.Sub(due))
 *     }
 *
 * and prints (figures from runs are in docs/experiments.md):
 *
 *     cgroup v1 /sys/fs/cgroup/cpu/gort-cfsthrottle-PID: cfs quota 50000us
 *     per 100000us (0.50 CPU), 4 CPU-bound goroutines, a 1 ms ticker for
 *     6000 ms:
 *       GOMAXPROCS=8 (forced):                 ticks N  p50 Tms  p99 Tms  max Tms
 *                                              quota used P%, throttled N times, Tms each
 *       GOMAXPROCS=1 (cgroup-aware default):   ticks N  p50 Tms  p99 Tms  max Tms
 *                                              quota used P%, throttled N times, Tms each
 *     check: the default is 1 P in the cgroup (want 1): ok
 *     check: p99 lateness with the default (Tms) < forced 8 (Tms): ok
 *
 * How to read it: "ticks" is how many ticks the ticker saw (a tick that
 * comes late swallows the ones it overlapped, as Go's ticker drops them);
 * lateness is the time from a tick's due time to when its goroutine ran.
 * "quota used" is the child's CPU time against the quota over its run;
 * "on N CPUs while running" is the child's CPU time over the time it was
 * not stopped (its run less the ticks later than 5 ms, which the ticker
 * saw the process stopped for); "throttled" comes from the cgroup's
 * cpu.stat: the periods in which the kernel stopped the cgroup, and the
 * time it was stopped per period, summed over the CPUs it was stopped on.
 * The p99 comparison is judged only when it can mean something: when both
 * children used at least 80% of their quota (otherwise the rest of the
 * machine, not the quota, held them back) and the forced run used at
 * least 1.5 CPUs while running (otherwise the machine did not let its
 * threads spend the quota in parallel, the effect shown here); the
 * program then says why it did not judge.
 *
 * The cgroup needs root and a writable cgroup mount with the cpu
 * controller.  Without them the program says what is missing and exits 77
 * (the skip status of ctest).  Flags: -ms N (how long each child ticks,
 * default 6000), -workers N (CPU-bound goroutines, default 4), -short (3000
 * ms: the form `make test` runs, which checks the default and prints the
 * p99s without judging them).  The runs are long enough for the 99th
 * percentile not to be a single tick: a rare tick that waited for the one P
 * across a throttled stretch (over 100 ms) does not decide it.  Exits 1
 * when a check fails, 2 on bad flags.
 */
#include <errno.h>
#include <fcntl.h>
#include <gort.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flags.h"

#define SKIP 77
#define QUOTA_US 50000
#define PERIOD_US 100000
#define FORCED_PROCS 8
#define MIN_USED 800 /* per mille of the quota: see main */
#define MIN_PARALLEL 1500 /* CPUs per mille: see main */
#define STOPPED_NS 5000000 /* a tick later than this: the process was stopped */

static int ms = 6000, workers = 4;
/* -short: the form make test runs, whose p99 is not judged (main). */
static bool short_form;

/* ---------------------------------------------------------------------------
 * The child: CPU-bound goroutines and a ticker.
 * ------------------------------------------------------------------------- */

/* Set by the ticker when done.  Relaxed: the burners only stop on it;
 * what they leave (sink) is not read, and the wait group orders the end. */
static uint32_t stop;
static int64_t *late;      /* the ticker's lateness samples (ns) */
static int nlate;
static gort_waitgroup wg;
static volatile uint64_t sink;

static void burner(void *arg)
{
    (void)arg;
    uint64_t s = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        for (int i = 0; i < 100000; i++)
            s += (uint64_t)i ^ (s >> 3);
    /* Relaxed: several goroutines store it; only that it is stored
     * matters (the loop must not be optimised away). */
    __atomic_store_n(&sink, s, __ATOMIC_RELAXED);
    gort_waitgroup_done(&wg);
}

static void ticker(void *arg)
{
    (void)arg;
    const int64_t tick = 1000000;
    int64_t t0 = gort_nanotime(), end = t0 + (int64_t)ms * 1000000;
    int64_t due = t0 + tick;
    for (;;) {
        int64_t now = gort_nanotime();
        if (due > now)
            gort_sleep(due - now);
        now = gort_nanotime();
        if (now >= end)
            break;
        late[nlate++] = now - due;
        /* The next tick still to come: missed ones are dropped. */
        due += ((now - due) / tick + 1) * tick;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    gort_waitgroup_done(&wg);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t pct(int q)
{
    if (nlate == 0)
        return 0;
    int i = (int)((int64_t)nlate * q / 100);
    return late[i < nlate ? i : nlate - 1];
}

/* The CPU time this process has used, in ns. */
static int64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static void child_main(void *arg)
{
    (void)arg;
    int64_t t0 = gort_nanotime(), c0 = cpu_ns();
    late = malloc(sizeof *late * ((size_t)ms + 16));
    if (!late)
        return;
    gort_waitgroup_add(&wg, workers + 1);
    for (int i = 0; i < workers; i++)
        gort_go(burner, NULL);
    gort_go(ticker, NULL);
    gort_waitgroup_wait(&wg);
    int64_t wall = gort_nanotime() - t0, cpu = cpu_ns() - c0;
    /* The stretches the ticker saw the process stopped: its late ticks
     * (a tick is late by about the time the kernel held the process; with
     * 1 P a tick may also wait for the P, which this counts as stopped
     * too, so only the forced run's figure is judged). */
    int64_t stopped = 0;
    for (int i = 0; i < nlate; i++)
        if (late[i] > STOPPED_NS)
            stopped += late[i];
    qsort(late, (size_t)nlate, sizeof *late, cmp64);
    /* One line for the parent: procs, ticks, p50, p99, max (ns), the
     * share of the quota used and the CPUs used while running (both per
     * mille). */
    int64_t running = wall - stopped;
    printf("%d %d %lld %lld %lld %lld %lld\n", gort_gomaxprocs(0), nlate,
           (long long)pct(50), (long long)pct(99),
           (long long)(nlate ? late[nlate - 1] : 0),
           (long long)(wall > 0 ? cpu * 1000 * PERIOD_US / QUOTA_US / wall
                                : 0),
           (long long)(running > 0 ? cpu * 1000 / running : 0));
    free(late);
}

/* ---------------------------------------------------------------------------
 * The parent: the cgroup.
 * ------------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n <= 1) {
            char *nb = realloc(b, cap *= 2);
            if (!nb)
                free(b);
            b = nb;
        }
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    return b;
}

static int write_file(const char *dir, const char *name, const char *val)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, val, strlen(val));
    int err = n < 0 ? -errno : 0;
    close(fd);
    return err;
}

/* Whether the space- or comma-separated list s (up to end) has word w. */
static bool has_word(const char *s, const char *end, const char *w)
{
    size_t n = strlen(w);
    while (s < end) {
        const char *e = s;
        while (e < end && *e != ',' && *e != ' ' && *e != '\n')
            e++;
        if ((size_t)(e - s) == n && strncmp(s, w, n) == 0)
            return true;
        s = e + 1;
    }
    return false;
}

/*
 * Our cgroup's directory for the given version: the path in
 * /proc/self/cgroup ("0::PATH" for v2, "ID:...cpu...:PATH" for v1), under
 * the mount point of the matching mount in /proc/self/mountinfo, less the
 * mount's root.  False when there is none.
 */
static bool cgroup_dir(int version, char *out, size_t outsz)
{
    char *cg = slurp("/proc/self/cgroup"), *mi = slurp("/proc/self/mountinfo");
    bool ok = false;
    char path[2048] = "";
    for (char *l = cg ? strtok(cg, "\n") : NULL; l && !path[0];
         l = strtok(NULL, "\n")) {
        char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        bool v2 = c1 - l == 1 && l[0] == '0' && c2 == c1 + 1;
        if (version == 2 ? v2 : !v2 && has_word(c1 + 1, c2, "cpu"))
            snprintf(path, sizeof path, "%s", c2 + 1);
    }
    for (char *l = mi && path[0] ? strtok(mi, "\n") : NULL; l && !ok;
         l = strtok(NULL, "\n")) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SRC SUPER */
        char *f[6], *save = NULL, *sep = strstr(l, " - ");
        if (!sep)
            continue;
        *sep = '\0';
        int nf = 0;
        for (char *t = strtok_r(l, " ", &save); t && nf < 6;
             t = strtok_r(NULL, " ", &save))
            f[nf++] = t;
        char *fs = strtok_r(sep + 3, " ", &save);
        strtok_r(NULL, " ", &save); /* the source */
        char *super = strtok_r(NULL, " ", &save);
        if (nf < 5 || !fs)
            continue;
        if (version == 2 ? strcmp(fs, "cgroup2") != 0
                         : strcmp(fs, "cgroup") != 0 || !super ||
                               !has_word(super, super + strlen(super), "cpu"))
            continue;
        const char *root = f[3], *rel = path;
        size_t n = strlen(root);
        if (strcmp(root, "/") != 0) {
            if (strncmp(root, path, n) != 0 || (path[n] && path[n] != '/'))
                continue;
            rel = path + n;
        }
        snprintf(out, outsz, "%s%s", f[4], strcmp(rel, "/") ? rel : "");
        ok = true;
    }
    free(cg);
    free(mi);
    return ok;
}

/* Make the experiment's cgroup under our own, limited to half a CPU with
 * the smallest weight.  Fills dir and a description; returns the version,
 * or 0 with why in `why`. */
static int make_cgroup(char *dir, size_t dirsz, char *desc, size_t descsz,
                       char *why, size_t whysz)
{
    char base[2048];
    char val[64];
    if (geteuid() != 0) {
        snprintf(why, whysz, "not running as root (creating a cgroup "
                             "needs it)");
        return 0;
    }
    /* v2, when its cpu controller is available to children of ours. */
    char v2why[4200] = "no cgroup v2 mount";
    if (cgroup_dir(2, base, sizeof base)) {
        snprintf(v2why, sizeof v2why, "cgroup v2 %s lists no cpu in "
                 "cgroup.controllers", base);
        char path[4096];
        snprintf(path, sizeof path, "%s/cgroup.controllers", base);
        char *c = slurp(path);
        bool cpu = c && has_word(c, c + strlen(c), "cpu");
        free(c);
        if (cpu) {
            snprintf(path, sizeof path, "%s/cgroup.subtree_control", base);
            c = slurp(path);
            bool on = c && has_word(c, c + strlen(c), "cpu");
            free(c);
            int err = 0;
            if (!on)
                on = (err = write_file(base, "cgroup.subtree_control",
                                       "+cpu")) == 0;
            snprintf(dir, dirsz, "%s/gort-cfsthrottle-%d", base, (int)getpid());
            if (!on)
                snprintf(v2why, sizeof v2why, "cannot enable cpu in %s/"
                         "cgroup.subtree_control: %s", base, strerror(-err));
            else if (mkdir(dir, 0755) != 0)
                snprintf(v2why, sizeof v2why, "cannot create %s: %s", dir,
                         strerror(errno));
            else {
                snprintf(val, sizeof val, "%d %d", QUOTA_US, PERIOD_US);
                if (write_file(dir, "cpu.max", val) == 0) {
                    write_file(dir, "cpu.weight", "1"); /* about nice 19 */
                    snprintf(desc, descsz, "cgroup v2 %s: cpu.max \"%s\"",
                             dir, val);
                    return 2;
                }
                snprintf(v2why, sizeof v2why, "cannot write %s/cpu.max",
                         dir);
                rmdir(dir);
            }
        }
    }
    if (cgroup_dir(1, base, sizeof base)) {
        snprintf(dir, dirsz, "%s/gort-cfsthrottle-%d", base, (int)getpid());
        if (mkdir(dir, 0755) != 0) {
            snprintf(why, whysz, "cannot create %s: %s", dir, strerror(errno));
            return 0;
        }
        snprintf(val, sizeof val, "%d", PERIOD_US);
        int err = write_file(dir, "cpu.cfs_period_us", val);
        snprintf(val, sizeof val, "%d", QUOTA_US);
        if (!err)
            err = write_file(dir, "cpu.cfs_quota_us", val);
        if (err) {
            snprintf(why, whysz, "cannot set the quota in %s: %s", dir,
                     strerror(-err));
            rmdir(dir);
            return 0;
        }
        write_file(dir, "cpu.shares", "15"); /* a nice 19 task's weight */
        snprintf(desc, descsz, "cgroup v1 %s: cfs quota %dus per %dus", dir,
                 QUOTA_US, PERIOD_US);
        return 1;
    }
    snprintf(why, whysz, "no cgroup with the cpu controller that this "
                         "process can create a child cgroup in (%s; no "
                         "cgroup v1 cpu hierarchy)", v2why);
    return 0;
}

/* Remove dir; its processes have exited, but the kernel may take a moment
 * to let go of them. */
static void remove_cgroup(const char *dir)
{
    for (int i = 0; i < 100; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return;
        if (errno != EBUSY)
            break;
        usleep(10000);
    }
    fprintf(stderr, "cfsthrottle: cannot remove %s: %s\n", dir,
            strerror(errno));
}

struct result {
    int procs, ticks;
    long long p50, p99, max, used; /* used: of the quota, per mille */
    long long par;                 /* CPUs used while not stopped, per
                                      mille */
    long long periods, throttled;  /* periods throttled, and for how long
                                      (ns) in all, from cpu.stat */
};

/* The cgroup's throttling so far (cpu.stat): periods throttled and the
 * time throttled in ns (v1 throttled_time, v2 throttled_usec). */
static void read_throttling(const char *dir, long long *periods,
                            long long *ns)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cpu.stat", dir);
    char *st = slurp(path);
    *periods = *ns = 0;
    for (char *l = st ? strtok(st, "\n") : NULL; l; l = strtok(NULL, "\n")) {
        long long v;
        if (sscanf(l, "nr_throttled %lld", &v) == 1)
            *periods = v;
        else if (sscanf(l, "throttled_time %lld", &v) == 1)
            *ns = v;
        else if (sscanf(l, "throttled_usec %lld", &v) == 1)
            *ns = v * 1000;
    }
    free(st);
}

/* Run ourselves as a child inside dir, with GORTMAXPROCS=procs (0: unset). */
static bool run_child(const char *self, const char *dir, int procs,
                      struct result *r)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return false;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        char v[32];
        snprintf(v, sizeof v, "%d", (int)getpid());
        int err = write_file(dir, "cgroup.procs", v);
        if (err) {
            fprintf(stderr, "cfsthrottle: cannot join %s: %s\n", dir,
                    strerror(-err));
            _exit(1);
        }
        if (procs) {
            snprintf(v, sizeof v, "%d", procs);
            setenv("GORTMAXPROCS", v, 1);
        } else
            unsetenv("GORTMAXPROCS");
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        char a1[32], a2[32];
        snprintf(a1, sizeof a1, "%d", ms);
        snprintf(a2, sizeof a2, "%d", workers);
        execl(self, self, "-child", a1, a2, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    long long n0, t0;
    read_throttling(dir, &n0, &t0);
    char buf[256] = "";
    size_t n = 0;
    ssize_t k;
    while (n < sizeof buf - 1 && (k = read(pfd[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = '\0';
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    read_throttling(dir, &r->periods, &r->throttled);
    r->periods -= n0;
    r->throttled -= t0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
           sscanf(buf, "%d %d %lld %lld %lld %lld %lld", &r->procs,
                  &r->ticks, &r->p50, &r->p99, &r->max, &r->used,
                  &r->par) == 7;
}

/* The mean throttled stretch, in ns. */
static long long stretch(const struct result *r)
{
    return r->periods ? r->throttled / r->periods : 0;
}

static void print_result(const char *label, const struct result *r)
{
    printf("  %-38s ticks %-5d p50 %.1fms  p99 %.1fms  max %.1fms\n"
           "  %-38s quota used %lld%%, on %.2f CPUs while running; "
           "throttled %lld times, %.1fms each\n",
           label, r->ticks, r->p50 / 1e6, r->p99 / 1e6, r->max / 1e6, "",
           r->used / 10, r->par / 1e3, r->periods, stretch(r) / 1e6);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "-child") == 0) {
        ms = intflag(argv[0], "-child MS", argv[2], 1);
        workers = intflag(argv[0], "-child WORKERS", argv[3], 0);
        return gort_main(child_main, NULL) ? 1 : 0;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-ms") == 0 && i + 1 < argc)
            ms = intflag(argv[0], "-ms", argv[++i], 100);
        else if (strcmp(argv[i], "-workers") == 0 && i + 1 < argc)
            workers = intflag(argv[0], "-workers", argv[++i], 1);
        else if (strcmp(argv[i], "-short") == 0) {
            ms = 3000;
            short_form = true;
        }
        else {
            fprintf(stderr,
                    "usage: %s [-ms N] [-workers N] [-short]\n"
                    "  (unknown or incomplete flag: %s)\n",
                    argv[0], argv[i]);
            return 2;
        }
    }
    if (ms > 600000) {
        fprintf(stderr, "%s: -ms wants at most 600000, got %d\n", argv[0], ms);
        return 2;
    }
    char dir[4096], desc[4200], why[4200];
    if (!make_cgroup(dir, sizeof dir, desc, sizeof desc, why, sizeof why)) {
        printf("cfsthrottle: skipped: %s\n", why);
        return SKIP;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        remove_cgroup(dir);
        printf("cfsthrottle: cannot find this program (/proc/self/exe)\n");
        return 1;
    }
    self[n] = '\0';

    printf("%s (%.2f CPU), %d CPU-bound goroutines, a 1 ms ticker for %d "
           "ms:\n",
           desc, (double)QUOTA_US / PERIOD_US, workers, ms);
    struct result forced, dflt;
    bool ok1 = run_child(self, dir, FORCED_PROCS, &forced);
    bool ok2 = ok1 && run_child(self, dir, 0, &dflt);
    remove_cgroup(dir);
    if (!ok1 || !ok2) {
        printf("check: a child run failed: FAILED\n");
        return 1;
    }
    char label[64];
    snprintf(label, sizeof label, "GOMAXPROCS=%d (forced):", forced.procs);
    print_result(label, &forced);
    snprintf(label, sizeof label, "GOMAXPROCS=%d (cgroup-aware default):",
             dflt.procs);
    print_result(label, &dflt);

    int want = (QUOTA_US + PERIOD_US - 1) / PERIOD_US;
    bool okp = dflt.procs == want && forced.procs == FORCED_PROCS;
    printf("check: the default is %d P in the cgroup (want %d): %s\n",
           dflt.procs, want, okp ? "ok" : "FAILED");
    /* The comparison means something only when the quota, not the rest of
     * the machine, held the children back. */
    if (dflt.used < MIN_USED || forced.used < MIN_USED) {
        printf("check: p99 lateness not judged: the children used %lld%% "
               "and %lld%% of their quota, under %d%%: the machine is too "
               "busy for the quota to be what limits them\n",
               forced.used / 10, dflt.used / 10, MIN_USED / 10);
        return okp ? 0 : 1;
    }
    if (short_form) {
        printf("check: p99 lateness not judged in the short form (%.1fms "
               "with the default, %.1fms forced): 3 s runs are a few "
               "throttled periods, too few for their 99th percentile\n",
               dflt.p99 / 1e6, forced.p99 / 1e6);
        return okp ? 0 : 1;
    }
    if (forced.par < MIN_PARALLEL) {
        printf("check: p99 lateness not judged: the forced run used %.2f "
               "CPUs while running, under %.2f: the machine did not let its "
               "threads spend the quota in parallel\n",
               forced.par / 1e3, MIN_PARALLEL / 1e3);
        return okp ? 0 : 1;
    }
    bool ok99 = dflt.p99 < forced.p99;
    printf("check: p99 lateness with the default (%.1fms) < forced %d "
           "(%.1fms): %s\n",
           dflt.p99 / 1e6, FORCED_PROCS, forced.p99 / 1e6,
           ok99 ? "ok" : "FAILED");
    return okp && ok99 ? 0 : 1;
}
