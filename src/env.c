/* SPDX-License-Identifier: MIT */
/*
 * env.c - settings from the environment, and the default GOMAXPROCS.
 *
 * gort reads five things once, at start-up, before any other thread exists
 * (gort__read_env, called by gort_main):
 *
 *   GORTDEBUG      comma-separated key=value pairs, like Go's GODEBUG
 *                  (schedtrace, scheddetail, asyncpreemptoff, randomize,
 *                  stackguard, checkdeadoff, stackidle, lockfence,
 *                  trace, netpollspin, netpollnap, sysmonidle,
 *                  cpucrowd, and the
 *                  simulation's sim, simstrategy, simpct, simfault) into
 *                  gort__debug (lockfence takes effect when the library is
 *                  loaded: lock_futex.c reads it then);
 *   GORTMAXPROCS   the number of Ps, like GOMAXPROCS;
 *   GORTSTACKSIZE  the virtual size of goroutine stacks (suffixes k, m);
 *   GORTTRACEBACK  what fatal errors and SIGQUIT print, like GOTRACEBACK;
 *   the machine    the CPUs in our affinity mask, capped by the cgroup CPU
 *                  limit, which makes the default GOMAXPROCS (read again
 *                  once a second while gort runs: step 4 below).
 *
 * Invariants:
 *   - Nothing here fails.  A bad setting is reported with one line on
 *     stderr, "gort: " and the bad value and what was expected, written
 *     with a single write(2) so that lines from several processes do not
 *     interleave, and the default is used.  A bad GORTDEBUG entry keeps its
 *     field's previous value and parsing goes on with the next entry.
 *   - The cgroup reader never crashes and never guesses: a file that is
 *     missing, unreadable, too large or malformed means "no limit here".
 *     Every fd opened is closed and every buffer freed before return.
 *   - Every path is prefixed with the `root` argument ("" for the real
 *     filesystem), so tests can point the reader at a fake tree.
 *   - Not async-signal-safe (malloc, snprintf).  Everything but
 *     gort__maxprocs_poll is single-threaded start-up code; that one runs
 *     on sysmon's thread only and reads what start-up left (the cgroup
 *     directory) without changing it.
 *
 * The cgroup CPU limit, and how it differs from Go 1.25
 * (src/internal/runtime/cgroup/cgroup_linux.go, runtime/cgroup_linux.go):
 *
 *   1. Which cgroup.  /proc/self/cgroup has lines "ID:CONTROLLERS:PATH".
 *      A v1 hierarchy whose controller list holds "cpu" wins; otherwise the
 *      v2 line "0::PATH".  This is Go's rule (hybrid hosts mount both).
 *   2. Where it is mounted.  /proc/self/mountinfo gives, per mount, the
 *      root of the mount inside the cgroup filesystem (field 4), the mount
 *      point (field 5) and, after the " - " separator, the filesystem type
 *      and the super options.  We take the first mount of the matching
 *      version ("cgroup2", or "cgroup" with "cpu" in its super options)
 *      whose root is PATH or one of its ancestors, and strip that root from
 *      PATH.  Go 1.25 appends PATH to the mount point without looking at
 *      the root, which finds nothing when a container bind-mounts only its
 *      own sub-tree (the root is then "/docker/ID", say, not "/"); see
 *      golang/go#76390.  A PATH outside every mount root, or one with a
 *      ".." component (a cgroup outside our cgroup namespace), means no
 *      limit.  Paths in mountinfo escape space, tab, newline and backslash
 *      as \ooo; we unescape them as Go does.
 *   3. Which limit.  v2: cpu.max, "max PERIOD" for none or "QUOTA PERIOD".
 *      v1: cpu.cfs_quota_us (-1 for none) and cpu.cfs_period_us.  The
 *      limit is QUOTA / PERIOD CPUs.  Go reads only the leaf cgroup and
 *      says so ("a parent cgroup may have a tighter limit").  We walk from
 *      the leaf up to the mount point and take the smallest limit, because
 *      the kernel enforces every ancestor's quota too (as the JDK does
 *      since JDK-8322420).  We never look above the mount point.
 *   4. When.  Steps 1 and 2 run once, at start-up: the directories of
 *      our cgroup and its ancestors are then fixed (Go keeps the limit
 *      files open and assumes the same).  Step 3 runs again once a second
 *      on sysmon's thread (gort__maxprocs_poll): a few small reads of
 *      cgroupfs files, with no lock held, so that GOMAXPROCS follows a
 *      limit that changes while the program runs, as Go 1.25 does.
 *   5. Rounding.  Go rounds the limit up and then to at least 2 ("a limit
 *      less than 2 is rounded up to 2"; its comment leaves the rationale
 *      as an open question).  gort rounds up to at least 1: a cgroup
 *      allowed less than one CPU gets one P, rather than two Ps that the
 *      kernel would throttle in turn.
 *
 * Alternative rejected: Go parses into a fixed ~70 KiB scratch buffer
 * because it runs before its allocator exists.  We run from ordinary C
 * code before the scheduler starts, so whole files are read into malloc'd
 * buffers (capped), which makes long lines and a missing final newline
 * simple cases rather than special ones.
 */
#include "atomic.h"
#include "env.h"
#include "fatal.h"
#include "libc.h"
#include "sched.h"
#include "stack.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The GORTDEBUG settings (gort__read_env fills them at start-up). */
struct gort_debugvars gort__debug;
/* The simulation mode's state (sched.h), from GORTDEBUG=sim. */
struct gort__simstate gort__sim;
/* GORTTRACEBACK: what fatal errors and SIGQUIT print. */
int32_t gort__traceback_level = TRACEBACK_ALL;
/* Where the cgroup files are read: "" for the real filesystem; tests set
 * a fake tree before gort_main. */
const char *gort__cgroup_root = "";
/* atomic: 1 when GORTMAXPROCS or gort_gomaxprocs(n > 0) chose GOMAXPROCS,
 * which then no longer follows the CPUs available. */
uint32_t gort__maxprocs_custom;
/* atomic: a GOMAXPROCS that the CPUs available call for and that a
 * goroutine is yet to apply (gort__maxprocs_apply), or 0. */
int32_t gort__maxprocs_want;
/* atomic: how many times GOMAXPROCS followed the CPUs available. */
uint64_t gort__maxprocs_updates;
/* The directory of our CPU cgroup, its cgroup version (0: none) and the
 * length of its mount point's prefix: found once by gort__read_env, read
 * by sysmon afterwards (gort__maxprocs_poll). */
static char *cg_dir;
static int cg_version;
static size_t cg_base;

/* The largest stack GORTSTACKSIZE accepts: 1 GiB, as gort_set_stack_size. */
#define MAX_STACK_SIZE ((uint64_t)1 << 30)
/* Stack sizes are rounded up to whole pages (4 KiB on every target). */
#define STACK_ROUND 4096
/* Go sizes its affinity buffer for 64 Ki CPUs (getproccount, os_linux.go). */
#define MAX_AFFINITY_CPUS (64 * 1024)
/* Caps on what we read: mountinfo can be megabytes on hosts with many
 * mounts; a limit file is a line of at most ~40 bytes (Go reads 64). */
#define MAX_TABLE_FILE (64u << 20)
#define MAX_LIMIT_FILE 64u
/* How much of a bad value a message shows. */
#define SHOW_MAX 64

/* ---------------------------------------------------------------------------
 * Messages.
 * ------------------------------------------------------------------------- */

/* Print "gort: <message>\n" on stderr with one write(2).  A message longer
 * than the buffer is cut, but still ends with a newline. */
__attribute__((format(printf, 1, 2))) static void report(const char *fmt, ...)
{
    char buf[512];
    size_t n = (size_t)snprintf(buf, sizeof buf, "gort: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += (size_t)m < sizeof buf - n - 1 ? (size_t)m : sizeof buf - n - 2;
    buf[n++] = '\n';
    struct m *mp = gort__libc_begin();
    ssize_t r = gort__libc.write(2, buf, n);
    gort__libc_end(mp);
    (void)r; /* Nothing sensible to do when stderr is gone. */
}

/* Copy s[0..n) into out for display: control characters become '?' so the
 * message stays on one line, and a long value is cut with "...". */
static const char *show(const char *s, size_t n, char out[SHOW_MAX + 4])
{
    size_t k = 0;
    for (; k < n && k < SHOW_MAX; k++) {
        unsigned char c = (unsigned char)s[k];
        out[k] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (k < n) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

/* ---------------------------------------------------------------------------
 * Small parsers on (pointer, length) slices.  We do not use strtol: it
 * skips leading space, accepts signs and "0x" depending on base, and
 * reports overflow only through errno.
 * ------------------------------------------------------------------------- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Drop blanks at both ends of the slice *s, *n. */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((*s)[*n - 1]))
        (*n)--;
}

/* Parse s[0..n) as a decimal number <= max: digits only, at least one.
 * False for anything else, including a value above max (so no overflow). */
static bool parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (d > max || v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool slice_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* ---------------------------------------------------------------------------
 * GORTMAXPROCS and GORTSTACKSIZE.
 * ------------------------------------------------------------------------- */

/*
 * GORTMAXPROCS: a decimal integer from 1 to GORT_MAX_PROCS, blanks around
 * it allowed.  NULL (unset) returns dflt silently; anything else that is
 * not such a number is reported and returns dflt.  Go's GOMAXPROCS ignores
 * a bad value silently; a typo should not go unnoticed, so we say so.
 */
int gort__parse_maxprocs(const char *s, int dflt)
{
    if (s == NULL)
        return dflt;
    const char *v = s;
    size_t n = strlen(s);
    trim(&v, &n);
    uint64_t x;
    if (parse_u64(v, n, GORT_MAX_PROCS, &x) && x >= 1)
        return (int)x;
    char shown[SHOW_MAX + 4];
    report("GORTMAXPROCS=\"%s\" is not a valid processor count (want an "
           "integer from 1 to %d); using %d",
           show(s, strlen(s), shown), GORT_MAX_PROCS, dflt);
    return dflt;
}

/* Whether s is a valid GORTMAXPROCS value, without a report: a valid one
 * is the program's choice (gort__read_env). */
bool gort__parse_maxprocs_ok(const char *s)
{
    const char *v = s;
    size_t n = strlen(s);
    trim(&v, &n);
    uint64_t x;
    return parse_u64(v, n, GORT_MAX_PROCS, &x) && x >= 1;
}

/* The value of a GORTSTACKSIZE string in bytes, rounded up to a page, or
 * false when it is malformed or out of range. */
static bool stacksize_value(const char *s, size_t *out)
{
    const char *v = s;
    size_t n = strlen(s);
    trim(&v, &n);
    uint64_t unit = 1;
    if (n > 0 && (v[n - 1] == 'k' || v[n - 1] == 'K'))
        unit = 1024;
    else if (n > 0 && (v[n - 1] == 'm' || v[n - 1] == 'M'))
        unit = 1024 * 1024;
    if (unit != 1)
        n--;
    uint64_t x;
    /* Bounding the digits by MAX/unit keeps x * unit from overflowing. */
    if (!parse_u64(v, n, MAX_STACK_SIZE / unit, &x))
        return false;
    x *= unit;
    if (x < GORT_MIN_STACK_SIZE)
        return false;
    /* MAX_STACK_SIZE is a multiple of STACK_ROUND: rounding stays <= it. */
    *out = (size_t)((x + STACK_ROUND - 1) / STACK_ROUND * STACK_ROUND);
    return true;
}

/*
 * GORTSTACKSIZE: bytes, with an optional suffix k/K (KiB) or m/M (MiB),
 * from GORT_MIN_STACK_SIZE to 1 GiB, rounded up to a multiple of 4096.
 * A bad value is reported and dflt returned.  NULL returns dflt silently.
 */
size_t gort__parse_stacksize(const char *s, size_t dflt)
{
    if (s == NULL)
        return dflt;
    size_t size;
    if (stacksize_value(s, &size))
        return size;
    char shown[SHOW_MAX + 4];
    report("GORTSTACKSIZE=\"%s\" is not a valid stack size (want bytes from "
           "%d to %llu, optionally with suffix k or m); using %zu",
           show(s, strlen(s), shown), GORT_MIN_STACK_SIZE,
           (unsigned long long)MAX_STACK_SIZE, dflt);
    return dflt;
}

/* ---------------------------------------------------------------------------
 * GORTTRACEBACK.
 * ------------------------------------------------------------------------- */

/*
 * GORTTRACEBACK: none, single, all or system (Go's GOTRACEBACK words;
 * blanks around allowed), what fatal errors and SIGQUIT print.  NULL
 * returns dflt silently; anything else is reported and returns dflt.
 * Go's numeric levels and "crash" are not taken: a fatal error in gort
 * always ends in abort() (a core dump where enabled).
 */
int32_t gort__parse_traceback(const char *s, int32_t dflt)
{
    static const char *const names[] = {
        [TRACEBACK_NONE] = "none",
        [TRACEBACK_SINGLE] = "single",
        [TRACEBACK_ALL] = "all",
        [TRACEBACK_SYSTEM] = "system",
    };
    if (s == NULL)
        return dflt;
    const char *v = s;
    size_t n = strlen(s);
    trim(&v, &n);
    for (int32_t i = 0; i < (int32_t)(sizeof names / sizeof names[0]); i++)
        if (slice_is(v, n, names[i]))
            return i;
    char shown[SHOW_MAX + 4];
    report("GORTTRACEBACK=\"%s\" is not a valid traceback level (want "
           "none, single, all or system); using %s",
           show(s, strlen(s), shown), names[dflt]);
    return dflt;
}

/* ---------------------------------------------------------------------------
 * GORTDEBUG.
 * ------------------------------------------------------------------------- */

/* How a GORTDEBUG value is read. */
enum dkind {
    D_MS,    /* milliseconds, 0 .. INT32_MAX */
    D_US,    /* microseconds, 0 .. 1,000,000 */
    D_BOOL,  /* 0 or 1 */
    D_GUARD, /* auto | madvise | mprotect | canary */
    D_PATH,  /* a file path: into the char array at the setting's offset */
    D_SEED,  /* sim=SEED: a uint64_t into simseed, and sim set to 1 */
    D_STRAT, /* random | pct */
    D_DEPTH, /* 1 .. 64 */
    D_PPM,   /* parts per million, 0 .. 1,000,000 */
    D_CROWD, /* 0, 1 or 2 */
    D_IDLE,  /* milliseconds, 20 .. 10,000 */
};

/* What each kind wants, for the message about a bad value. */
static const char *const dkind_want[] = {
    [D_MS] = "a number of milliseconds >= 0",
    [D_US] = "a number of microseconds from 0 to 1000000",
    [D_BOOL] = "0 or 1",
    [D_GUARD] = "auto, madvise, mprotect or canary",
    [D_PATH] = "a file path, without commas, shorter than 1024 bytes",
    [D_SEED] = "a seed from 0 to 18446744073709551615",
    [D_STRAT] = "random or pct",
    [D_DEPTH] = "a number of change points from 1 to 64",
    [D_PPM] = "a number of faults per million calls from 0 to 1000000",
    [D_CROWD] = "0 (two event loops), 1 (tried and measured) or 2 (one loop)",
    [D_IDLE] = "a number of milliseconds from 20 to 10000",
};

/* The settings, with the field of struct gort_debugvars each sets: an
 * int32_t, or for D_PATH a char array of GORT_TRACE_PATH_MAX. */
static const struct dsetting {
    const char *name;
    size_t off;
    enum dkind kind;
} dsettings[] = {
    {"schedtrace", offsetof(struct gort_debugvars, schedtrace), D_MS},
    {"scheddetail", offsetof(struct gort_debugvars, scheddetail), D_BOOL},
    {"asyncpreemptoff", offsetof(struct gort_debugvars, asyncpreemptoff),
     D_BOOL},
    {"randomize", offsetof(struct gort_debugvars, randomize), D_BOOL},
    {"hook", offsetof(struct gort_debugvars, hook), D_BOOL},
    {"stackguard", offsetof(struct gort_debugvars, stackguard), D_GUARD},
    {"checkdeadoff", offsetof(struct gort_debugvars, checkdeadoff), D_BOOL},
    {"stackidle", offsetof(struct gort_debugvars, stackidle), D_MS},
    {"lockfence", offsetof(struct gort_debugvars, lockfence), D_BOOL},
    {"trace", offsetof(struct gort_debugvars, trace), D_PATH},
    {"netpollspin", offsetof(struct gort_debugvars, netpollspin), D_US},
    {"netpollnap", offsetof(struct gort_debugvars, netpollnap), D_US},
    {"sysmonidle", offsetof(struct gort_debugvars, sysmonidle), D_IDLE},
    {"cpucrowd", offsetof(struct gort_debugvars, cpucrowd), D_CROWD},
    {"sim", offsetof(struct gort_debugvars, sim), D_SEED},
    {"simstrategy", offsetof(struct gort_debugvars, simstrategy), D_STRAT},
    {"simpct", offsetof(struct gort_debugvars, simpct), D_DEPTH},
    {"simfault", offsetof(struct gort_debugvars, simfault), D_PPM},
};
#define NDSETTINGS (sizeof dsettings / sizeof dsettings[0])

/* Parse the value v[0..n) of a setting of kind k into *out. */
static bool debug_value(enum dkind k, const char *v, size_t n, int32_t *out)
{
    static const struct {
        const char *name;
        int32_t guard;
    } guards[] = {{"auto", -1},
                  {"madvise", STACK_GUARD_MADVISE},
                  {"mprotect", STACK_GUARD_MPROTECT},
                  {"canary", STACK_GUARD_CANARY}};
    uint64_t x;
    switch (k) {
    case D_MS:
    case D_US:
    case D_PPM:
    case D_BOOL:
        if (!parse_u64(v, n,
                       k == D_MS     ? INT32_MAX
                       : k == D_BOOL ? 1
                                     : 1000000,
                       &x))
            return false;
        *out = (int32_t)x;
        return true;
    case D_GUARD:
        for (size_t i = 0; i < sizeof guards / sizeof guards[0]; i++)
            if (slice_is(v, n, guards[i].name)) {
                *out = guards[i].guard;
                return true;
            }
        return false;
    case D_CROWD:
        if (!parse_u64(v, n, 2, &x))
            return false;
        *out = (int32_t)x;
        return true;
    case D_IDLE:
        if (!parse_u64(v, n, 10000, &x) ||
            x < GORT_SYSMON_ALLIDLE_US / 1000)
            return false;
        *out = (int32_t)x;
        return true;
    case D_DEPTH:
        if (!parse_u64(v, n, 64, &x) || x == 0)
            return false;
        *out = (int32_t)x;
        return true;
    case D_STRAT:
        if (slice_is(v, n, "random") || slice_is(v, n, "pct")) {
            *out = slice_is(v, n, "pct") ? SIM_PCT : SIM_RANDOM;
            return true;
        }
        return false;
    case D_PATH:
    case D_SEED:
        return false; /* not an int32_t: see debug_entry */
    }
    return false;
}

/* One parse of a GORTDEBUG string: whether to report problems, and how
 * many it met.  At most DEBUG_REPORTS are reported, then one line counts
 * the rest: a value of thousands of bad entries says so in a few lines. */
#define DEBUG_REPORTS 5
struct dparse {
    bool quiet;
    int problems;
};

static void problem(struct dparse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void problem(struct dparse *p, const char *fmt, ...)
{
    if (p->quiet || ++p->problems > DEBUG_REPORTS)
        return;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    report("%s", msg);
}

/* Report an unknown key, listing the known ones from the table. */
static void debug_unknown(struct dparse *p, const char *key, size_t n)
{
    char known[256], shown[SHOW_MAX + 4];
    size_t len = 0;
    for (size_t i = 0; i < NDSETTINGS && len < sizeof known; i++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s",
                                i ? ", " : "", dsettings[i].name);
    problem(p, "GORTDEBUG: unknown setting \"%s\" (want one of %s); ignored",
            show(key, n, shown), known);
}

/* Apply one entry e[0..n) ("key=value") to *dv, or report why not. */
static void debug_entry(const char *e, size_t n, struct gort_debugvars *dv,
                        struct dparse *p)
{
    char shown[SHOW_MAX + 4], shown2[SHOW_MAX + 4];
    const char *eq = memchr(e, '=', n);
    if (eq == NULL) {
        problem(p, "GORTDEBUG: \"%s\" has no value (want key=value); "
                   "ignored",
                show(e, n, shown));
        return;
    }
    const char *key = e, *val = eq + 1;
    size_t klen = (size_t)(eq - e), vlen = n - klen - 1;
    trim(&key, &klen);
    trim(&val, &vlen);
    for (size_t i = 0; i < NDSETTINGS; i++) {
        const struct dsetting *ds = &dsettings[i];
        if (!slice_is(key, klen, ds->name))
            continue;
        int32_t v;
        uint64_t seed;
        if (ds->kind == D_SEED && parse_u64(val, vlen, UINT64_MAX, &seed)) {
            dv->simseed = seed;
            dv->sim = 1;
        } else if (ds->kind == D_PATH && vlen > 0 &&
                   vlen < GORT_TRACE_PATH_MAX) {
            char *dst = (char *)dv + ds->off;
            memcpy(dst, val, vlen);
            dst[vlen] = '\0';
        } else if (ds->kind != D_PATH && ds->kind != D_SEED &&
                   debug_value(ds->kind, val, vlen, &v))
            *(int32_t *)((char *)dv + ds->off) = v;
        else
            problem(p, "GORTDEBUG: %s=\"%s\" is not valid (want %s); ignored",
                    ds->name, show(val, vlen, shown2), dkind_want[ds->kind]);
        return;
    }
    debug_unknown(p, key, klen);
}

/*
 * GORTDEBUG: entries separated by commas, each key=value, blanks around the
 * key and the value allowed.  Entries apply left to right, so a key given
 * twice ends with its last valid value.  Empty entries are skipped.  The
 * caller sets the defaults in *dv; NULL s leaves them alone.
 */
static void parse_debug(const char *s, struct gort_debugvars *dv, bool quiet)
{
    if (s == NULL)
        return;
    struct dparse p = {quiet, 0};
    while (*s) {
        size_t n = strcspn(s, ",");
        const char *e = s;
        size_t elen = n;
        trim(&e, &elen);
        if (elen > 0)
            debug_entry(e, elen, dv, &p);
        s += n;
        if (*s == ',')
            s++;
    }
    if (!quiet && p.problems > DEBUG_REPORTS)
        report("GORTDEBUG: %d more bad entries not shown; ignored",
               p.problems - DEBUG_REPORTS);
}

void gort__parse_debug(const char *s, struct gort_debugvars *dv)
{
    parse_debug(s, dv, false);
}

void gort__parse_debug_quiet(const char *s, struct gort_debugvars *dv)
{
    parse_debug(s, dv, true);
}

/* ---------------------------------------------------------------------------
 * CPUs: affinity and cgroup limit.
 * ------------------------------------------------------------------------- */

/*
 * The CPUs in this thread's affinity mask, at least 1.  A mask for more
 * CPUs than the set can hold fails with EINVAL; rather than look at errno
 * we retry any failure with a set twice as large, up to 64 Ki CPUs, then
 * fall back to the online CPU count.  After runtime.getproccount
 * (os_linux.go), which asks once with a mask for 64 Ki CPUs.
 */
int gort__affinity_cpus(void)
{
    for (int ncpus = CPU_SETSIZE; ncpus <= MAX_AFFINITY_CPUS; ncpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(ncpus);
        if (set == NULL)
            break;
        size_t size = CPU_ALLOC_SIZE(ncpus);
        CPU_ZERO_S(size, set);
        int count = 0;
        if (sched_getaffinity(0, size, set) == 0)
            count = CPU_COUNT_S(size, set);
        CPU_FREE(set);
        if (count > 0)
            return count;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* a + b + c + d in a fresh malloc'd string, or NULL. */
static char *cat4(const char *a, const char *b, const char *c, const char *d)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c), ld = strlen(d);
    char *s = malloc(la + lb + lc + ld + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc);
    memcpy(s + la + lb + lc, d, ld + 1);
    return s;
}

/*
 * Read the whole file at path into a malloc'd, NUL-terminated buffer of
 * *lenp bytes.  NULL when it cannot be opened or read, or holds cap - 1
 * bytes or more.  Reads of procfs and cgroupfs files do not block, so they
 * are not interrupted by signals; any failed read gives up.
 */
static char *slurp(const char *path, size_t cap, size_t *lenp)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t len = 0, size = 0;
    char *buf = NULL;
    for (;;) {
        if (size - len < 2) { /* Room for one more byte and the NUL. */
            size_t nsize = size ? size * 2 : 4096;
            nsize = nsize < cap ? nsize : cap;
            char *nb = nsize > size ? realloc(buf, nsize) : NULL;
            if (nb == NULL)
                goto fail;
            buf = nb;
            size = nsize;
        }
        ssize_t got = gort__libc.read(fd, buf + len, size - len - 1);
        if (got < 0)
            goto fail;
        if (got == 0)
            break;
        len += (size_t)got;
    }
    gort__libc.close(fd);
    buf[len] = '\0';
    *lenp = len;
    return buf;
fail:
    free(buf);
    gort__libc.close(fd);
    return NULL;
}

/* Take the next line from *cur (ending at end) and NUL-terminate it in
 * place; a last line without a newline counts.  NULL at the end. */
static char *next_line(char **cur, char *end)
{
    char *line = *cur;
    if (line >= end)
        return NULL;
    char *nl = memchr(line, '\n', (size_t)(end - line));
    if (nl == NULL)
        nl = end;
    *nl = '\0';
    *cur = nl + 1;
    return line;
}

/* True when the comma-separated list holds exactly "cpu" as an item
 * ("cpu,cpuacct" does; "cpuacct" and "cpuset" do not).  Mirrors
 * containsCPU (cgroup_linux.go). */
static bool list_has_cpu(const char *list, size_t n)
{
    while (n > 0) {
        const char *comma = memchr(list, ',', n);
        size_t item = comma ? (size_t)(comma - list) : n;
        if (slice_is(list, item, "cpu"))
            return true;
        if (comma == NULL)
            break;
        n -= item + 1;
        list = comma + 1;
    }
    return false;
}

/*
 * Find our CPU cgroup in root/proc/self/cgroup: returns 1 or 2 (the
 * version) and a malloc'd copy of its path in *pathp, or 0 when there is
 * none or the file is malformed.  A v1 "cpu" hierarchy wins over v2.
 * Mirrors parseCPURelativePath (cgroup_linux.go).
 */
static int find_cgroup(const char *root, char **pathp)
{
    char *path = cat4(root, "/proc/self/cgroup", "", "");
    size_t len = 0;
    char *buf = path ? slurp(path, MAX_TABLE_FILE, &len) : NULL;
    free(path);
    if (buf == NULL)
        return 0;
    const char *v2 = NULL, *found = NULL;
    int version = 0;
    char *cur = buf, *line;
    while (version == 0 && (line = next_line(&cur, buf + len)) != NULL) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue; /* Not "ID:CONTROLLERS:PATH"; Go gives up, we skip. */
        if (c1 - line == 1 && line[0] == '0')
            v2 = c2 + 1; /* Keep looking: a v1 "cpu" line wins. */
        else if (list_has_cpu(c1 + 1, (size_t)(c2 - c1 - 1))) {
            found = c2 + 1;
            version = 1;
        }
    }
    if (version == 0 && v2 != NULL) {
        found = v2;
        version = 2;
    }
    *pathp = found ? strdup(found) : NULL;
    free(buf);
    return *pathp ? version : 0;
}

/* Undo mountinfo's escaping of s in place: "\ooo" (three octal digits) is
 * one byte.  False for a broken escape.  Mirrors unescapePath. */
static bool unescape(char *s)
{
    char *out = s;
    while (*s) {
        if (*s != '\\') {
            *out++ = *s++;
            continue;
        }
        unsigned v = 0;
        for (int i = 1; i <= 3; i++) {
            if (s[i] < '0' || s[i] > '7')
                return false;
            v = v * 8 + (unsigned)(s[i] - '0');
        }
        if (v == 0 || v > 0xff)
            return false;
        *out++ = (char)v;
        s += 4;
    }
    *out = '\0';
    return true;
}

/* How much of cgpath the mount root mroot covers: 0 for "/", strlen(mroot)
 * when mroot is cgpath or an ancestor of it, -1 when it is neither. */
static long root_covers(const char *mroot, const char *cgpath)
{
    if (strcmp(mroot, "/") == 0)
        return 0;
    size_t n = strlen(mroot);
    if (strncmp(mroot, cgpath, n) != 0 || (cgpath[n] != '/' && cgpath[n]))
        return -1;
    return (long)n;
}

/*
 * If the mountinfo line (modified in place) is a cgroup mount of the given
 * version whose root covers cgpath, set *mntp to its unescaped mount point
 * and return how much of cgpath its root covers; else -1.  Mirrors
 * parseCPUMount, plus the mount root.
 */
static long mount_match(char *line, int version, const char *cgpath,
                        char **mntp)
{
    char *save = NULL, *f[5];
    for (int i = 0; i < 5; i++)
        if ((f[i] = strtok_r(i ? NULL : line, " ", &save)) == NULL)
            return -1;
    char *t;
    while ((t = strtok_r(NULL, " ", &save)) != NULL && strcmp(t, "-") != 0)
        ; /* Skip the mount options and the optional fields. */
    if (t == NULL)
        return -1; /* No " - " separator: not a mountinfo line. */
    char *fstype = strtok_r(NULL, " ", &save);
    char *source = strtok_r(NULL, " ", &save);
    char *super = strtok_r(NULL, " ", &save);
    if (fstype == NULL)
        return -1;
    if (version == 2 && strcmp(fstype, "cgroup2") != 0)
        return -1;
    if (version == 1 && (strcmp(fstype, "cgroup") != 0 || source == NULL ||
                         super == NULL || !list_has_cpu(super, strlen(super))))
        return -1;
    if (!unescape(f[3]) || !unescape(f[4]))
        return -1;
    *mntp = f[4];
    return root_covers(f[3], cgpath);
}

/*
 * The directory of our cgroup: root + mount point + the part of cgpath
 * below the mount root, with no trailing slash.  Sets *basep to the length
 * of root + mount point, the highest directory the walk may visit.  NULL
 * when no mount fits or the path is unusable.
 */
static char *cgroup_dir(const char *root, int version, const char *cgpath,
                        size_t *basep)
{
    if (cgpath[0] != '/')
        return NULL;
    char *path = cat4(root, "/proc/self/mountinfo", "", "");
    size_t len = 0;
    char *buf = path ? slurp(path, MAX_TABLE_FILE, &len) : NULL;
    free(path);
    if (buf == NULL)
        return NULL;
    char *cur = buf, *line, *mnt = NULL, *dir = NULL;
    long skip = -1;
    while (skip < 0 && (line = next_line(&cur, buf + len)) != NULL)
        skip = mount_match(line, version, cgpath, &mnt);
    if (skip >= 0) {
        *basep = strlen(root) + strlen(mnt);
        dir = cat4(root, mnt, cgpath + skip, "");
    }
    free(buf);
    if (dir == NULL)
        return NULL;
    size_t n = strlen(dir);
    while (n > *basep && dir[n - 1] == '/')
        dir[--n] = '\0';
    /* A ".." would climb out of the mount; it means a cgroup outside our
     * cgroup namespace, whose files we cannot see anyway. */
    if (strstr(dir + *basep, "/../") || (n >= *basep + 3 &&
                                         strcmp(dir + n - 3, "/..") == 0)) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* Read dir + file as one number: non-negative decimal, or negative when
 * it starts with '-' (v1's -1 for "no limit").  False when malformed. */
static bool read_number(const char *dir, const char *file, int64_t *out)
{
    char *path = cat4(dir, file, "", "");
    size_t len = 0;
    char *buf = path ? slurp(path, MAX_LIMIT_FILE, &len) : NULL;
    free(path);
    if (buf == NULL)
        return false;
    const char *s = buf;
    trim(&s, &len);
    bool neg = len > 0 && s[0] == '-';
    uint64_t v;
    bool ok = parse_u64(s + neg, len - neg, INT64_MAX, &v);
    free(buf);
    if (ok)
        *out = neg ? -(int64_t)v : (int64_t)v;
    return ok;
}

/* The v2 limit in dir/cpu.max: QUOTA / PERIOD, or 0 for "max", a missing
 * or a malformed file.  Mirrors parseV2Limit. */
static double v2_limit(const char *dir)
{
    char *path = cat4(dir, "/cpu.max", "", "");
    size_t len = 0;
    char *buf = path ? slurp(path, MAX_LIMIT_FILE, &len) : NULL;
    free(path);
    if (buf == NULL)
        return 0;
    const char *s = buf;
    trim(&s, &len);
    const char *sp = memchr(s, ' ', len);
    double limit = 0;
    uint64_t quota, period;
    if (sp != NULL && !slice_is(s, (size_t)(sp - s), "max") &&
        parse_u64(s, (size_t)(sp - s), INT64_MAX, &quota) &&
        parse_u64(sp + 1, len - (size_t)(sp - s) - 1, INT64_MAX, &period) &&
        period > 0)
        limit = (double)quota / (double)period;
    free(buf);
    return limit;
}

/* The v1 limit in dir: cpu.cfs_quota_us / cpu.cfs_period_us, or 0 for a
 * negative quota (-1: no limit) or missing or malformed files. */
static double v1_limit(const char *dir)
{
    int64_t quota, period;
    if (!read_number(dir, "/cpu.cfs_quota_us", &quota) || quota <= 0)
        return 0;
    if (!read_number(dir, "/cpu.cfs_period_us", &period) || period <= 0)
        return 0;
    return (double)quota / (double)period;
}

/* Find the directory of our CPU cgroup under root (malloc'd, the length
 * of its mount point's prefix in *basep), or NULL; *versionp gets 1 or 2. */
static char *locate_cgroup(const char *root, int *versionp, size_t *basep)
{
    char *cgpath = NULL;
    int version = find_cgroup(root, &cgpath);
    if (version == 0)
        return NULL;
    char *dir = cgroup_dir(root, version, cgpath, basep);
    free(cgpath);
    *versionp = version;
    return dir;
}

/* The smallest limit from dir up to its mount point (base bytes of it),
 * or 0.  Truncates dir in place as it climbs. */
static double chain_limit(char *dir, int version, size_t base)
{
    double best = 0;
    for (;;) {
        double l = version == 2 ? v2_limit(dir) : v1_limit(dir);
        if (l > 0 && (best <= 0 || l < best))
            best = l;
        if (strlen(dir) <= base)
            break;
        /* The part below base starts with '/', so this finds one. */
        *strrchr(dir + base, '/') = '\0';
    }
    return best;
}

/*
 * The CPU limit of our cgroup under root: the smallest limit from the leaf
 * up to the mount point, or 0 when there is none.  See the file header.
 */
double gort__cgroup_cpu_limit(const char *root)
{
    int version = 0;
    size_t base = 0;
    char *dir = locate_cgroup(root, &version, &base);
    if (dir == NULL)
        return 0;
    double best = chain_limit(dir, version, base);
    free(dir);
    return best;
}

/* ncpu capped by limit (0: none) rounded up, within 1..GORT_MAX_PROCS. */
static int procs_for(int ncpu, double limit)
{
    int procs = ncpu;
    if (limit > 0) {
        /* Round up by hand: the library does not link libm. */
        int cap = limit >= GORT_MAX_PROCS ? GORT_MAX_PROCS : (int)limit;
        if (cap < GORT_MAX_PROCS && (double)cap < limit)
            cap++;
        if (cap < procs)
            procs = cap;
    }
    if (procs > GORT_MAX_PROCS)
        procs = GORT_MAX_PROCS;
    return procs < 1 ? 1 : procs;
}

/*
 * Default GOMAXPROCS: ncpu capped by the cgroup limit rounded up, at least
 * 1 (Go: at least 2; see the file header) and at most GORT_MAX_PROCS, the
 * size of the P tables.  Mirrors runtime.defaultGOMAXPROCS.
 */
int gort__default_procs(const char *root, int ncpu)
{
    return procs_for(ncpu, gort__cgroup_cpu_limit(root));
}

/*
 * The default GOMAXPROCS now: the CPUs in sysmon's affinity mask (which
 * its thread inherited from gort_main's, and which `taskset -a -p`
 * changes with the others) capped by the limit along the cgroup directory
 * found at start-up.  Reads a limit file or two per level: no mountinfo.
 */
static int default_procs_now(void)
{
    int ncpu = gort__affinity_cpus();
    if (cg_dir == NULL)
        return procs_for(ncpu, 0);
    size_t len = strlen(cg_dir);
    char *dir = malloc(len + 1);
    if (dir == NULL)
        return 0;
    memcpy(dir, cg_dir, len + 1);
    double limit = chain_limit(dir, cg_version, cg_base);
    free(dir);
    return procs_for(ncpu, limit);
}

/*
 * Once a second from sysmon, holding no lock: when GOMAXPROCS is not the
 * program's choice and the CPUs available now call for another value,
 * publish it in gort__maxprocs_want for a goroutine to apply (changing
 * GOMAXPROCS stops the world, which only a goroutine may do).  Mirrors
 * sysmonUpdateGOMAXPROCS (proc.go).  Returns the value published, or 0.
 */
int gort__maxprocs_poll(void)
{
    /* Acquire: pairs with the release stores that set the flag, so a
     * program's choice seen here is never undone by what we publish;
     * gort__maxprocs_apply checks the flag again under stop-the-world. */
    if (load_acq(&gort__maxprocs_custom)) {
        store_relaxed(&gort__maxprocs_want, 0); /* nothing to apply */
        return 0;
    }
    int procs = default_procs_now();
    if (procs <= 0)
        return 0;
    if (procs == load_relaxed(&gort__gomaxprocs)) {
        /* Back where it is before anyone applied the last value: withdraw
         * it.  Relaxed: a goroutine that takes the old value anyway only
         * changes GOMAXPROCS for a second, until the next poll. */
        store_relaxed(&gort__maxprocs_want, 0);
        return 0;
    }
    /* Release: the goroutine that takes the value with an acq-rel
     * exchange sees the reads that produced it. */
    store_rel(&gort__maxprocs_want, procs);
    return procs;
}

/*
 * GORTDEBUG=sim=SEED (docs/sim.md): one P, no preemption signals, no
 * poller spin (its bound is a time, and virtual time stands still while
 * the poller looks), the virtual clock at its epoch.  GOMAXPROCS counts as
 * the program's choice, so nothing resizes it.  Returns GOMAXPROCS.
 */
static int sim_setup(void)
{
    gort__sim.strategy = gort__debug.simstrategy;
    gort__sim.pctdepth = gort__debug.simpct ? gort__debug.simpct : 3;
    gort__sim.seed = gort__debug.simseed;
    gort__sim.faultppm = gort__debug.simfault;
    store_relaxed(&gort__sim.now, GORT_SIM_EPOCH);
    /* PCT's d-1 change points, uniform over its horizon, from the seed
     * alone (not from an M's random state, which scheduling consumes). */
    gort__sim.step = 0;
    uint64_t r = gort__sim_mix(gort__sim.seed);
    gort__sim.rand[0] = (uint32_t)(r | 1);
    gort__sim.rand[1] = (uint32_t)(r >> 32) | 0x9e3779b9u;
    /* gort_sim_fault's stream: another mix of the seed ("FLT"), so that
     * it is unrelated to the scheduler's.  Neither half may be 0. */
    r = gort__sim_mix(gort__sim.seed ^ 0x464c540000000000u);
    gort__sim.faultrand[0] = (uint32_t)r | 1u;
    gort__sim.faultrand[1] = (uint32_t)(r >> 32) | 0x9e3779b9u;
    uint64_t x = gort__sim.seed ^ 0x5043540000000000u; /* "PCT" */
    for (int32_t i = 0; i < 64; i++) {
        x = gort__sim_mix(x);
        gort__sim.change[i] = i < gort__sim.pctdepth - 1
                                  ? 1 + (int64_t)(x % GORT_SIM_PCT_STEPS)
                                  : -1;
    }
    store_relaxed(&gort__sim.on, 1u);
    gort__debug.asyncpreemptoff = 1;
    gort__debug.netpollspin = 0;
    gort__debug.netpollnap = 0;
    store_relaxed(&gort__maxprocs_custom, 1u);
    return 1;
}

/*
 * Read every setting from the environment.  Runs once in gort_main before
 * any other thread exists, so the plain stores cannot race; gomaxprocs is
 * stored with store_relaxed only because it is read atomically later.
 * gort__stack_size already holds the programmatic setting
 * (gort_set_stack_size), which GORTSTACKSIZE overrides only when set.
 */
void gort__read_env(void)
{
    store_relaxed(&gort__sim.on, 0u);
    gort__debug = (struct gort_debugvars){.stackguard = -1,
                                          .stackidle = GORT_STACK_IDLE_MS,
                                          .netpollspin = GORT_NETPOLL_SPIN_US,
                                          .netpollnap = GORT_NETPOLL_NAP_US,
                                          .sysmonidle = GORT_SYSMON_IDLE_MAX_MS,
                                          .cpucrowd = 1,
                                          .lockfence = 1,
                                          .hook = 1};
    gort__parse_debug(getenv("GORTDEBUG"), &gort__debug);
    gort__ncpu = gort__affinity_cpus();
    free(cg_dir);
    cg_version = 0;
    cg_base = 0;
    cg_dir = locate_cgroup(gort__cgroup_root, &cg_version, &cg_base);
    int dflt = gort__default_procs(gort__cgroup_root, gort__ncpu);
    const char *mp = getenv("GORTMAXPROCS");
    int procs = gort__parse_maxprocs(mp, dflt);
    /* A valid GORTMAXPROCS is the program's choice, even when it equals
     * the default (as GOMAXPROCS is in Go).  Relaxed stores: no other
     * thread exists yet; sysmon starts after this. */
    store_relaxed(&gort__maxprocs_custom,
                  mp != NULL && gort__parse_maxprocs_ok(mp) ? 1u : 0u);
    store_relaxed(&gort__maxprocs_want, 0);
    store_relaxed(&gort__maxprocs_updates, 0);
    if (gort__debug.sim)
        procs = sim_setup();
    store_relaxed(&gort__gomaxprocs, procs);
    const char *ss = getenv("GORTSTACKSIZE");
    if (ss != NULL)
        gort__stack_size = gort__parse_stacksize(ss, gort__stack_size);
    gort__traceback_level =
        gort__parse_traceback(getenv("GORTTRACEBACK"), TRACEBACK_ALL);
}
