/* SPDX-License-Identifier: MIT */
/*
 * test_env.c - the settings parsers and the cgroup CPU limit (env.c).
 *
 * The parsers are called directly with stderr redirected to a temporary
 * file, so each case checks both the value returned and the exact message:
 * one line per bad value, naming it and what was expected.  The cgroup
 * reader is pointed at fake trees built in a mkdtemp directory with the
 * layout of the real one (proc/self/cgroup, proc/self/mountinfo,
 * sys/fs/cgroup/...), using real mountinfo line formats.  gort__read_env
 * runs in a child process with its own environment.
 */
#include "internal.h"
#include "test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * Helpers: stderr capture and fake trees.
 * ------------------------------------------------------------------------- */

static int cap_saved = -1;
static FILE *cap_file;

/* Send fd 2 to a temporary file until cap_end. */
static void cap_begin(void)
{
    fflush(stderr);
    cap_file = tmpfile();
    CHECK(cap_file != NULL);
    cap_saved = dup(2);
    CHECK(cap_saved >= 0);
    CHECK(dup2(fileno(cap_file), 2) == 2);
}

/* Restore fd 2 and return what was written to it (malloc'd). */
static char *cap_end(void)
{
    fflush(stderr);
    CHECK(dup2(cap_saved, 2) == 2);
    close(cap_saved);
    int fd = fileno(cap_file);
    off_t n = lseek(fd, 0, SEEK_END);
    CHECK(n >= 0);
    char *s = malloc((size_t)n + 1);
    CHECK(s != NULL);
    CHECK(pread(fd, s, (size_t)n, 0) == n);
    s[n] = '\0';
    fclose(cap_file);
    return s;
}

/* Check that out is exactly one line holding each of the given strings. */
static void check_one_line(const char *out, const char *a, const char *b,
                           const char *c)
{
    CHECK_EQ(count_lines(out), 1);
    CHECK(strncmp(out, "gort: ", 6) == 0);
    CHECK(out[strlen(out) - 1] == '\n');
    CHECK_STR_CONTAINS(out, a);
    if (b)
        CHECK_STR_CONTAINS(out, b);
    if (c)
        CHECK_STR_CONTAINS(out, c);
}

static char *tree_new(void)
{
    char tmpl[64];
    CHECK(mkdtemp(tmp_template(tmpl, sizeof tmpl, "gort_test_env_")) != NULL);
    return strdup(tmpl);
}

/* Write root/rel with the given content, creating parent directories. */
static void put(const char *root, const char *rel, const char *content)
{
    char path[4096];
    CHECK_LT(snprintf(path, sizeof path, "%s/%s", root, rel), (int)sizeof path);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        CHECK(mkdir(path, 0755) == 0 || access(path, F_OK) == 0);
        *p = '/';
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    size_t n = strlen(content);
    CHECK(write(fd, content, n) == (ssize_t)n);
    close(fd);
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void tree_free(char *root)
{
    CHECK(nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
    free(root);
}

/* The limit, compared with a tolerance (the values are exact in binary
 * floating point or nearly so). */
#define CHECK_LIMIT(root, want)                                                \
    do {                                                                       \
        double got_ = gort__cgroup_cpu_limit(root);                            \
        if (!(got_ > (want)-1e-9 && got_ < (want) + 1e-9)) {                   \
            fprintf(stderr, "%s:%d: limit %g, want %g\n", __FILE__, __LINE__,  \
                    got_, (double)(want));                                     \
            abort();                                                           \
        }                                                                      \
    } while (0)

static const char *const MI_V2 =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - "
    "cgroup2 cgroup2 rw,nsdelegate\n";
static const char *const MI_V1 =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "39 30 0:34 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory\n"
    "40 30 0:35 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup "
    "rw,cpu,cpuacct\n";

/* ---------------------------------------------------------------------------
 * GORTTRACEBACK.
 * ------------------------------------------------------------------------- */

/* GORTTRACEBACK: none, single, all and system (blanks around them ignored) and
 * unset parse silently; a bad value (empty, unknown, another case, a list) is
 * one line naming it and what is expected, and the default is kept. */
TEST(traceback)
{
    cap_begin();
    CHECK_EQ(gort__parse_traceback("none", TRACEBACK_ALL), TRACEBACK_NONE);
    CHECK_EQ(gort__parse_traceback("single", TRACEBACK_ALL), TRACEBACK_SINGLE);
    CHECK_EQ(gort__parse_traceback(" all\t", TRACEBACK_NONE), TRACEBACK_ALL);
    CHECK_EQ(gort__parse_traceback("system", TRACEBACK_ALL), TRACEBACK_SYSTEM);
    CHECK_EQ(gort__parse_traceback(NULL, TRACEBACK_SINGLE), TRACEBACK_SINGLE);
    char *out = cap_end();
    CHECK_EQ(strlen(out), 0);
    free(out);
    static const char *const bad[] = {"",  "crash", "ALL", "2",
                                      "all,system", "sys", "none x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cap_begin();
        CHECK_EQ(gort__parse_traceback(bad[i], TRACEBACK_ALL), TRACEBACK_ALL);
        out = cap_end();
        char want[128];
        snprintf(want, sizeof want, "GORTTRACEBACK=\"%s\"", bad[i]);
        check_one_line(out, want, "want none, single, all or system",
                       "; using all\n");
        free(out);
    }
}

/* ---------------------------------------------------------------------------
 * GORTMAXPROCS.
 * ------------------------------------------------------------------------- */

/* GORTMAXPROCS from 1 to 1024, with blanks and leading zeros, parses silently;
 * unset gives the default. */
TEST(maxprocs_valid)
{
    cap_begin();
    CHECK_EQ(gort__parse_maxprocs("1", 2), 1);
    CHECK_EQ(gort__parse_maxprocs("4", 2), 4);
    CHECK_EQ(gort__parse_maxprocs(" 8 ", 2), 8);
    CHECK_EQ(gort__parse_maxprocs("\t16", 2), 16);
    CHECK_EQ(gort__parse_maxprocs("007", 2), 7);
    CHECK_EQ(gort__parse_maxprocs("1024", 2), 1024);
    CHECK_EQ(gort__parse_maxprocs(NULL, 3), 3);
    char *out = cap_end();
    CHECK_EQ(strlen(out), 0);
    free(out);
}

/* A bad GORTMAXPROCS (not a number, 0, negative, over 1024, a sign, blank, two
 * numbers, an overflow) is one line naming it and the range, and the default
 * is used; the message exactly, and a control character in the value printed
 * as "?". */
TEST(maxprocs_bad)
{
    static const char *const bad[] = {"abc", "0",    "-3", "99999", "",
                                      "3x",  "1025", "+4", " ",     "4 4",
                                      "99999999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cap_begin();
        CHECK_EQ(gort__parse_maxprocs(bad[i], 2), 2);
        char *out = cap_end();
        char want[128];
        snprintf(want, sizeof want, "GORTMAXPROCS=\"%s\"", bad[i]);
        check_one_line(out, want, "want an integer from 1 to 1024",
                       "; using 2");
        free(out);
    }
    /* The example message, exactly. */
    cap_begin();
    gort__parse_maxprocs("abc", 2);
    char *out = cap_end();
    CHECK(strcmp(out, "gort: GORTMAXPROCS=\"abc\" is not a valid processor "
                      "count (want an integer from 1 to 1024); using 2\n") ==
          0);
    free(out);
    /* A control character cannot break the line. */
    cap_begin();
    CHECK_EQ(gort__parse_maxprocs("1\n2", 5), 5);
    out = cap_end();
    check_one_line(out, "GORTMAXPROCS=\"1?2\"", "using 5", NULL);
    free(out);
}

/* ---------------------------------------------------------------------------
 * GORTDEBUG.
 * ------------------------------------------------------------------------- */

static struct gort_debugvars dv_default(void)
{
    return (struct gort_debugvars){.stackguard = -1};
}

/* Every GORTDEBUG key is parsed (schedtrace, scheddetail, asyncpreemptoff,
 * randomize, stackguard in each policy, checkdeadoff, lockfence, netpollspin
 * up to a second, trace=path taken whole with the last one winning); NULL, ""
 * and "," change nothing; all silently. */
TEST(debug_keys)
{
    struct gort_debugvars dv = dv_default();
    cap_begin();
    dv.lockfence = 1;
    gort__parse_debug("schedtrace=1000,scheddetail=1,asyncpreemptoff=1,"
                      "randomize=1,stackguard=mprotect,checkdeadoff=1,"
                      "lockfence=0",
                      &dv);
    CHECK_EQ(dv.lockfence, 0);
    CHECK_EQ(dv.schedtrace, 1000);
    CHECK_EQ(dv.scheddetail, 1);
    CHECK_EQ(dv.asyncpreemptoff, 1);
    CHECK_EQ(dv.randomize, 1);
    CHECK_EQ(dv.stackguard, STACK_GUARD_MPROTECT);
    CHECK_EQ(dv.checkdeadoff, 1);

    /* A path: taken whole (blanks around it trimmed), the last wins. */
    gort__parse_debug("trace=/tmp/a.json, trace = /tmp/dir/b c.json ", &dv);
    CHECK(strcmp(dv.trace, "/tmp/dir/b c.json") == 0);

    gort__parse_debug("stackguard=madvise", &dv);
    CHECK_EQ(dv.stackguard, STACK_GUARD_MADVISE);
    gort__parse_debug("stackguard=canary", &dv);
    CHECK_EQ(dv.stackguard, STACK_GUARD_CANARY);
    gort__parse_debug("stackguard=auto", &dv);
    CHECK_EQ(dv.stackguard, -1);

    /* Microseconds, up to one second. */
    gort__parse_debug("netpollspin=0", &dv);
    CHECK_EQ(dv.netpollspin, 0);
    gort__parse_debug("netpollspin=1000000", &dv);
    CHECK_EQ(dv.netpollspin, 1000000);

    /* sysmon's idle rounds: from its shortest, 20 ms, to 10 s. */
    gort__parse_debug("sysmonidle=20", &dv);
    CHECK_EQ(dv.sysmonidle, 20);
    gort__parse_debug("sysmonidle=10000", &dv);
    CHECK_EQ(dv.sysmonidle, 10000);

    /* Back to 0, empty entries, blanks, the last value wins. */
    gort__parse_debug(",,scheddetail=0,, randomize = 0 ,schedtrace=0,"
                      "schedtrace=2147483647,",
                      &dv);
    CHECK_EQ(dv.scheddetail, 0);
    CHECK_EQ(dv.randomize, 0);
    CHECK_EQ(dv.schedtrace, 2147483647);

    /* NULL and "" change nothing. */
    struct gort_debugvars before = dv;
    gort__parse_debug(NULL, &dv);
    gort__parse_debug("", &dv);
    gort__parse_debug(",", &dv);
    CHECK(memcmp(&before, &dv, sizeof dv) == 0);
    char *out = cap_end();
    CHECK_EQ(strlen(out), 0);
    free(out);
}

/* Thousands of bad entries (4,000 unknown keys, long values): a few
 * lines in all, and the good entries among them still apply. */
TEST(debug_many_bad)
{
    size_t cap = 4000 * 40 + 64;
    char *s = malloc(cap);
    CHECK(s != NULL);
    size_t len = 0;
    for (int i = 0; i < 4000; i++)
        len += (size_t)snprintf(s + len, cap - len, "unknown%d=%0*d,", i,
                                i % 3 ? 1 : 20, i);
    snprintf(s + len, cap - len, "randomize=1");
    struct gort_debugvars dv = dv_default();
    cap_begin();
    gort__parse_debug(s, &dv);
    char *out = cap_end();
    CHECK_EQ(count_lines(out), 6);
    CHECK_LT(strlen(out), 3000);
    CHECK_STR_CONTAINS(out, "unknown setting \"unknown0\"");
    CHECK_STR_CONTAINS(out, "GORTDEBUG: 3995 more bad entries not shown");
    CHECK_EQ(dv.randomize, 1);
    free(out);
    free(s);
}

/* A bad GORTDEBUG entry (a bad value, an unknown key, a key without a value, a
 * trace path empty or too long, a number too large for an int32) is one line
 * naming it and what is expected, and is ignored, the value before kept; good
 * entries around bad ones still apply, and past the first five bad entries the
 * rest are only counted. */
TEST(debug_bad)
{
    struct gort_debugvars dv = dv_default();
    cap_begin();
    gort__parse_debug("schedtrace=x", &dv);
    char *out = cap_end();
    CHECK(strcmp(out, "gort: GORTDEBUG: schedtrace=\"x\" is not valid (want "
                      "a number of milliseconds >= 0); ignored\n") == 0);
    CHECK_EQ(dv.schedtrace, 0);
    free(out);

    /* Over a second: refused, the value before kept. */
    dv.netpollspin = 50;
    cap_begin();
    gort__parse_debug("netpollspin=1000001", &dv);
    out = cap_end();
    CHECK(strcmp(out, "gort: GORTDEBUG: netpollspin=\"1000001\" is not valid "
                      "(want a number of microseconds from 0 to 1000000); "
                      "ignored\n") == 0);
    CHECK_EQ(dv.netpollspin, 50);
    free(out);

    /* Below sysmon's shortest idle round, or over 10 s: refused. */
    dv.sysmonidle = 160;
    cap_begin();
    gort__parse_debug("sysmonidle=19,sysmonidle=10001", &dv);
    out = cap_end();
    CHECK(strcmp(out, "gort: GORTDEBUG: sysmonidle=\"19\" is not valid "
                      "(want a number of milliseconds from 20 to 10000); "
                      "ignored\n"
                      "gort: GORTDEBUG: sysmonidle=\"10001\" is not valid "
                      "(want a number of milliseconds from 20 to 10000); "
                      "ignored\n") == 0);
    CHECK_EQ(dv.sysmonidle, 160);
    free(out);

    cap_begin();
    gort__parse_debug("bogus=1", &dv);
    out = cap_end();
    check_one_line(out, "unknown setting \"bogus\"", "schedtrace",
                   "checkdeadoff");
    free(out);

    cap_begin();
    gort__parse_debug("scheddetail", &dv);
    out = cap_end();
    check_one_line(out, "\"scheddetail\"", "key=value", "ignored");
    CHECK_EQ(dv.scheddetail, 0);
    free(out);

    /* Good entries around bad ones still apply; the first five bad ones
     * are reported, then a count of the rest. */
    dv = dv_default();
    dv.checkdeadoff = 1;
    cap_begin();
    gort__parse_debug("schedtrace=10,foo=1,scheddetail,randomize=1,"
                      "stackguard=bogus,asyncpreemptoff=2,checkdeadoff=,"
                      "schedtrace=-5,scheddetail=1",
                      &dv);
    out = cap_end();
    CHECK_EQ(count_lines(out), 6);
    CHECK_STR_CONTAINS(out, "unknown setting \"foo\"");
    CHECK_STR_CONTAINS(out, "\"scheddetail\" has no value");
    CHECK_STR_CONTAINS(out, "stackguard=\"bogus\" is not valid (want auto, "
                            "madvise, mprotect or canary)");
    CHECK_STR_CONTAINS(out, "asyncpreemptoff=\"2\" is not valid (want 0 or 1)");
    CHECK_STR_CONTAINS(out, "checkdeadoff=\"\" is not valid");
    CHECK_STR_CONTAINS(out, "GORTDEBUG: 1 more bad entries not shown");
    CHECK_EQ(dv.schedtrace, 10);
    CHECK_EQ(dv.randomize, 1);
    CHECK_EQ(dv.scheddetail, 1);
    CHECK_EQ(dv.stackguard, -1);
    CHECK_EQ(dv.asyncpreemptoff, 0);
    CHECK_EQ(dv.checkdeadoff, 1);
    free(out);

    /* A trace path: empty, or too long for the buffer, is refused and the
     * previous one kept. */
    strcpy(dv.trace, "/tmp/kept.json");
    char longpath[GORT_TRACE_PATH_MAX + 16];
    memset(longpath, 'a', sizeof longpath);
    memcpy(longpath, "trace=", 6);
    longpath[sizeof longpath - 1] = 0;
    cap_begin();
    gort__parse_debug("trace=", &dv);
    gort__parse_debug(longpath, &dv);
    out = cap_end();
    CHECK_EQ(count_lines(out), 2);
    CHECK_STR_CONTAINS(out, "gort: GORTDEBUG: trace=\"\" is not valid (want a "
                            "file path, without commas, shorter than 1024 "
                            "bytes); ignored\n");
    CHECK_STR_CONTAINS(out, "trace=\"aaaa");
    CHECK(strcmp(dv.trace, "/tmp/kept.json") == 0);
    free(out);

    /* Too large for an int32. */
    cap_begin();
    gort__parse_debug("schedtrace=2147483648", &dv);
    out = cap_end();
    check_one_line(out, "schedtrace=\"2147483648\"", NULL, NULL);
    CHECK_EQ(dv.schedtrace, 10);
    free(out);
}

/* ---------------------------------------------------------------------------
 * GORTSTACKSIZE.
 * ------------------------------------------------------------------------- */

/* GORTSTACKSIZE in bytes, k and m (either case, blanks trimmed): rounded up to
 * whole pages from the 16 KiB minimum, up to 1 GiB; a bad or out-of-range
 * value is one line naming it, and the default is kept. */
TEST(stacksize)
{
    const size_t d = GORT_DEFAULT_STACK_SIZE;
    cap_begin();
    CHECK_EQ(gort__parse_stacksize("65536", d), 65536);
    CHECK_EQ(gort__parse_stacksize("64k", d), 65536);
    CHECK_EQ(gort__parse_stacksize("64K", d), 65536);
    CHECK_EQ(gort__parse_stacksize("1m", d), 1 << 20);
    CHECK_EQ(gort__parse_stacksize(" 2M ", d), 2 << 20);
    CHECK_EQ(gort__parse_stacksize("16384", d), GORT_MIN_STACK_SIZE);
    CHECK_EQ(gort__parse_stacksize("16k", d), GORT_MIN_STACK_SIZE);
    CHECK_EQ(gort__parse_stacksize("20000", d), 20480);
    CHECK_EQ(gort__parse_stacksize("16385", d), 20480);
    CHECK_EQ(gort__parse_stacksize("1024m", d), 1 << 30);
    CHECK_EQ(gort__parse_stacksize("1073741823", d), 1 << 30);
    CHECK_EQ(gort__parse_stacksize(NULL, d), d);
    char *out = cap_end();
    CHECK_EQ(strlen(out), 0);
    free(out);

    static const char *const bad[] = {
        "1000", "15k", "16383", "1025m", "1073741825", "2048M", "abc",
        "",     "k",   "12q",   "-64k",  "64 k",       "0x10000",
        "99999999999999999999m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cap_begin();
        CHECK_EQ(gort__parse_stacksize(bad[i], d), d);
        out = cap_end();
        char want[128], using[64];
        snprintf(want, sizeof want, "GORTSTACKSIZE=\"%s\"", bad[i]);
        snprintf(using, sizeof using, "; using %zu\n", d);
        check_one_line(out, want, "from 16384 to 1073741824", using);
        free(out);
    }
}

/* ---------------------------------------------------------------------------
 * cgroup CPU limit.
 * ------------------------------------------------------------------------- */

/* The cgroup v2 CPU limit from cpu.max on a fake tree: the tightest of the
 * cgroup and its ancestors up to the mount point, "max" for none; the default
 * GOMAXPROCS is the limit rounded up, capped by the CPUs. */
TEST(cgroup_v2)
{
    char *root = tree_new();
    put(root, "proc/self/cgroup", "0::/a/b\n");
    put(root, "proc/self/mountinfo", MI_V2);
    put(root, "sys/fs/cgroup/a/b/cpu.max", "150000 100000\n");
    CHECK_LIMIT(root, 1.5);
    CHECK_EQ(gort__default_procs(root, 4), 2);
    CHECK_EQ(gort__default_procs(root, 1), 1);

    /* A tighter ancestor wins. */
    put(root, "sys/fs/cgroup/a/cpu.max", "50000 100000\n");
    CHECK_LIMIT(root, 0.5);
    CHECK_EQ(gort__default_procs(root, 4), 1);

    /* The leaf may be unlimited while the ancestor is not. */
    put(root, "sys/fs/cgroup/a/b/cpu.max", "max 100000\n");
    CHECK_LIMIT(root, 0.5);

    /* No limit anywhere: ncpu.  Nothing above the mount point is read. */
    put(root, "sys/fs/cgroup/a/cpu.max", "max 100000\n");
    put(root, "sys/fs/cpu.max", "10000 100000\n");
    put(root, "cpu.max", "10000 100000\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    CHECK_EQ(gort__default_procs(root, 4), 4);

    /* The mount point itself counts (a cgroup namespace shows "/"). */
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "sys/fs/cgroup/cpu.max", "300000 100000");
    CHECK_LIMIT(root, 3.0);
    CHECK_EQ(gort__default_procs(root, 8), 3);
    tree_free(root);
}

/* The cgroup v1 CPU limit from cpu.cfs_quota_us and cpu.cfs_period_us, -1 for
 * none, the hierarchy root's files read too; on a hybrid host a v1 "cpu"
 * hierarchy wins over the v2 line. */
TEST(cgroup_v1)
{
    char *root = tree_new();
    put(root, "proc/self/cgroup",
        "12:memory:/grp\n3:cpu,cpuacct:/grp\n1:name=systemd:/grp\n");
    put(root, "proc/self/mountinfo", MI_V1);
    put(root, "sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_quota_us", "250000\n");
    put(root, "sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_period_us", "100000\n");
    CHECK_LIMIT(root, 2.5);
    CHECK_EQ(gort__default_procs(root, 8), 3);
    CHECK_EQ(gort__default_procs(root, 2), 2);

    /* -1: no limit here; the hierarchy root's files are read too. */
    put(root, "sys/fs/cgroup/cpu,cpuacct/grp/cpu.cfs_quota_us", "-1\n");
    put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    CHECK_EQ(gort__default_procs(root, 8), 8);
    put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "400000\n");
    CHECK_LIMIT(root, 4.0);

    /* Hybrid host: a v1 "cpu" hierarchy wins over the v2 line, in either
     * order; "cpuacct" or "cpuset" alone is not "cpu". */
    put(root, "proc/self/cgroup",
        "0::/other\n4:cpuset:/x\n5:cpuacct:/x\n3:cpu,cpuacct:/grp\n");
    put(root, "proc/self/mountinfo",
        "35 25 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
        "41 30 0:36 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
        "40 30 0:35 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup "
        "rw,cpu,cpuacct");
    put(root, "sys/fs/cgroup/unified/other/cpu.max", "100000 100000\n");
    CHECK_LIMIT(root, 4.0);
    tree_free(root);
}

/* A container that sees only its own sub-tree: paths are taken relative to the
 * mount's root, a cgroup outside it (or "..") has no limit, an escaped space
 * in the mount point is decoded, and of two mounts the one whose root covers
 * the cgroup is used. */
TEST(cgroup_mount_root)
{
    char *root = tree_new();
    /* A container that sees only its own sub-tree of a v1 hierarchy. */
    put(root, "proc/self/cgroup", "3:cpu,cpuacct:/docker/abc\n");
    put(root, "proc/self/mountinfo",
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "40 30 0:35 /docker/abc /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup "
        "rw,cpu,cpuacct\n");
    put(root, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "150000\n");
    put(root, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    CHECK_LIMIT(root, 1.5);

    /* A child of the mount root lives below the mount point. */
    put(root, "proc/self/cgroup", "3:cpu,cpuacct:/docker/abc/sub\n");
    put(root, "sys/fs/cgroup/cpu/sub/cpu.cfs_quota_us", "50000\n");
    put(root, "sys/fs/cgroup/cpu/sub/cpu.cfs_period_us", "100000\n");
    CHECK_LIMIT(root, 0.5);

    /* Outside the mount root, or only a string prefix of it: no limit. */
    put(root, "proc/self/cgroup", "3:cpu,cpuacct:/docker/abcd\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    put(root, "proc/self/cgroup", "3:cpu,cpuacct:/other\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);

    /* v2, with an escaped space in the mount point and two mounts: the one
     * whose root covers our path is used. */
    put(root, "proc/self/cgroup", "0::/kube/pod/c1\n");
    put(root, "proc/self/mountinfo",
        "50 25 0:30 /elsewhere /mnt/a rw - cgroup2 cgroup2 rw\n"
        "51 25 0:30 /kube/pod /sys/fs/cg\\040two rw - cgroup2 cgroup2 rw\n");
    put(root, "sys/fs/cg two/c1/cpu.max", "200000 100000\n");
    put(root, "sys/fs/cg two/cpu.max", "700000 100000\n");
    CHECK_LIMIT(root, 2.0);

    /* ".." means a cgroup outside our namespace: no limit. */
    put(root, "proc/self/cgroup", "0::/kube/pod/../..\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    tree_free(root);
}

/* A 256 KiB mountinfo line, a 1000-byte cgroup path and files without a final
 * newline are read correctly. */
TEST(cgroup_long_lines)
{
    char *root = tree_new();
    /* A 256 KiB mount line before ours, and no newline at the end. */
    size_t big = 256 * 1024;
    char *mi = malloc(big + 512);
    CHECK(mi != NULL);
    int n = sprintf(mi, "60 1 0:50 / /big rw - tmpfs tmpfs rw");
    memset(mi + n, 'x', big);
    strcpy(mi + n + big, "\n35 25 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 "
                         "rw");
    put(root, "proc/self/mountinfo", mi);
    free(mi);
    /* A long path, and no newline anywhere. */
    char cg[1200] = "0::/", rel[1300] = "sys/fs/cgroup/";
    for (int i = 0; i < 100; i++) {
        strcat(cg, "abcdefghi/");
        strcat(rel, "abcdefghi/");
    }
    cg[strlen(cg) - 1] = '\0';
    strcat(rel, "cpu.max");
    put(root, "proc/self/cgroup", cg);
    put(root, "sys/fs/cgroup/abcdefghi/cpu.max", "100000 100000");
    put(root, rel, "max 100000");
    CHECK_LIMIT(root, 1.0);
    tree_free(root);
}

/* Missing trees, garbage in every file, limits too large or with a zero
 * period: no crash, no limit (the default is the CPU count), no descriptor
 * left open. */
TEST(cgroup_missing)
{
    int fds = count_fds();
    char *root = tree_new();
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    CHECK_EQ(gort__default_procs(root, 4), 4);
    CHECK(gort__cgroup_cpu_limit("/nonexistent/gort/root") <= 0);

    /* Garbage in every file: no crash, no limit. */
    static const char *const cgroups[] = {
        "garbage", "", "\n\n", ":", "0:", "0::", "0::relative", "::::\n0::/a"};
    static const char *const mountinfos[] = {
        "junk\n\n- - -\n",
        "35 25 0:30 / /sys/fs/cgroup",
        "35 25 0:30 / /sys/fs/cgroup rw -",
        "35 25 0:30 / /sys/fs/cgroup rw - cgroup2",
        "35 25 0:30 / /sys/fs/\\04 rw - cgroup2 cgroup2 rw\n",
        "35 25 0:30 / /sys/fs/\\999 rw - cgroup2 cgroup2 rw\n",
        "35 25 0:30 / /sys/fs/cgroup rw - cgroup cgroup rw,cpuacct\n",
        ""};
    static const char *const maxes[] = {
        "abc def", "150000",  "0 100000", "100000 0", "-5 100000", " ",
        "max",     "1 2 3",   "150000 100000x", "99999999999999999999 1"};
    put(root, "sys/fs/cgroup/a/cpu.max", "x");
    for (size_t i = 0; i < sizeof cgroups / sizeof cgroups[0]; i++)
        for (size_t j = 0; j < sizeof mountinfos / sizeof mountinfos[0]; j++) {
            put(root, "proc/self/cgroup", cgroups[i]);
            put(root, "proc/self/mountinfo", mountinfos[j]);
            /* Even when a path and a mount are found, a/cpu.max is bad. */
            CHECK(gort__cgroup_cpu_limit(root) <= 0);
        }
    put(root, "proc/self/cgroup", "0::/a\n");
    put(root, "proc/self/mountinfo", MI_V2);
    for (size_t k = 0; k < sizeof maxes / sizeof maxes[0]; k++) {
        put(root, "sys/fs/cgroup/a/cpu.max", maxes[k]);
        CHECK(gort__cgroup_cpu_limit(root) <= 0);
        CHECK_EQ(gort__default_procs(root, 4), 4);
    }
    /* A limit file too large to be one. */
    char big[200];
    memset(big, '1', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    put(root, "sys/fs/cgroup/a/cpu.max", big);
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    /* v1 with a missing or zero period. */
    put(root, "proc/self/cgroup", "3:cpu:/g\n");
    put(root, "proc/self/mountinfo", MI_V1);
    put(root, "sys/fs/cgroup/cpu,cpuacct/g/cpu.cfs_quota_us", "50000\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    put(root, "sys/fs/cgroup/cpu,cpuacct/g/cpu.cfs_period_us", "0\n");
    CHECK(gort__cgroup_cpu_limit(root) <= 0);
    tree_free(root);
    CHECK_EQ(count_fds(), fds);
}

/* The default GOMAXPROCS: at least 1, at most GORT_MAX_PROCS, the cgroup limit
 * rounded up without overflowing for huge limits. */
TEST(default_procs)
{
    char *root = tree_new();
    CHECK_EQ(gort__default_procs(root, 0), 1);
    CHECK_EQ(gort__default_procs(root, -3), 1);
    CHECK_EQ(gort__default_procs(root, 5000), GORT_MAX_PROCS);
    put(root, "proc/self/cgroup", "0::/\n");
    put(root, "proc/self/mountinfo", MI_V2);
    /* A huge limit does not overflow; a tiny one still gives 1 P. */
    put(root, "sys/fs/cgroup/cpu.max", "17592186044416 1000\n");
    CHECK_EQ(gort__default_procs(root, 4), 4);
    CHECK_EQ(gort__default_procs(root, 5000), GORT_MAX_PROCS);
    put(root, "sys/fs/cgroup/cpu.max", "1 1000000\n");
    CHECK_EQ(gort__default_procs(root, 4), 1);
    put(root, "sys/fs/cgroup/cpu.max", "200000 100000\n");
    CHECK_EQ(gort__default_procs(root, 4), 2);
    put(root, "sys/fs/cgroup/cpu.max", "200001 100000\n");
    CHECK_EQ(gort__default_procs(root, 4), 3);
    tree_free(root);
}

/* The CPUs of this process's affinity mask, between 1 and the configured
 * count; the real machine's default GOMAXPROCS lies between 1 and them. */
TEST(affinity)
{
    int n = gort__affinity_cpus();
    CHECK_GE(n, 1);
    CHECK_LE(n, sysconf(_SC_NPROCESSORS_CONF));
    /* The real machine: whatever its cgroup says, a sane default. */
    int procs = gort__default_procs("", n);
    CHECK_GE(procs, 1);
    CHECK_LE(procs, n);
}

/* ---------------------------------------------------------------------------
 * gort__read_env, in a child with its own environment.
 * ------------------------------------------------------------------------- */

TEST_HIDDEN(read_env_child)
{
    const char *mode = getenv("GORT_TEST_ENV_MODE");
    CHECK(mode != NULL);
    bool good = strcmp(mode, "good") == 0;
    if (!good)
        unsetenv("GORTSTACKSIZE");
    rt_set_stack_size(77 * 4096);
    rt_set_schedtrace(99);
    gort__read_env();
    CHECK_EQ(gort__ncpu, gort__affinity_cpus());
    if (good) {
        CHECK_EQ(gort__gomaxprocs, 3);
        CHECK_EQ(gort__debug.schedtrace, 7);
        CHECK_EQ(gort__debug.stackguard, STACK_GUARD_CANARY);
        CHECK_EQ(gort__stack_size, 65536);
    } else {
        CHECK_EQ(gort__gomaxprocs, gort__default_procs("", gort__ncpu));
        CHECK_EQ(gort__debug.schedtrace, 0);
        CHECK_EQ(gort__debug.stackguard, -1);
        CHECK_EQ(gort__stack_size, 77 * 4096);
    }
    CHECK_EQ(gort__debug.scheddetail, 0);
    CHECK_EQ(gort__debug.randomize, 0);
}

/* gort__read_env in a child: valid GORTMAXPROCS, GORTDEBUG and
 * GORTSTACKSIZE are applied silently; a bad GORTMAXPROCS is one line and
 * the default, an empty GORTDEBUG resets the knobs and an unset
 * GORTSTACKSIZE keeps the size. */
TEST(read_env)
{
    static const char *const good[] = {
        "GORT_TEST_ENV_MODE=good", "GORTMAXPROCS=3",
        "GORTDEBUG=schedtrace=7,stackguard=canary", "GORTSTACKSIZE=64k", NULL};
    struct test_child r;
    test_run_child("read_env_child", good, 30, &r);
    if (r.exit_code != 0)
        fprintf(stderr, "child stderr:\n%s\n", r.err);
    CHECK_EQ(r.exit_code, 0);
    CHECK_EQ(strlen(r.err), 0);
    test_child_free(&r);

    static const char *const bad[] = {"GORT_TEST_ENV_MODE=bad",
                                      "GORTMAXPROCS=abc", "GORTDEBUG=", NULL};
    test_run_child("read_env_child", bad, 30, &r);
    if (r.exit_code != 0)
        fprintf(stderr, "child stderr:\n%s\n", r.err);
    CHECK_EQ(r.exit_code, 0);
    check_one_line(r.err, "GORTMAXPROCS=\"abc\"", "using ", NULL);
    test_child_free(&r);
}
