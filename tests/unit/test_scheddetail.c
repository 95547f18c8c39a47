/* SPDX-License-Identifier: MIT */
/*
 * test_scheddetail.c - the values schedtrace's detail lines show: each
 * field Go prints for a P, an M or a G carries gort's real value.
 *
 * One child process sets up each state that makes a field non-trivial
 * (dead goroutines, pending timers, a P in a system call, wired
 * goroutines), calls gort_schedtrace(1) there, and marks that trace with a
 * "== name ..." line first; each case reads the trace of its state.
 */
#include "internal.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

static void clean_env(void)
{
    unsetenv("GORTMAXPROCS");
    unsetenv("GORTDEBUG");
    unsetenv("GORTSTACKSIZE");
}

#define DETAIL_DEAD 8
static struct g *detail_dead[DETAIL_DEAD];
static int64_t detail_dead_goid[DETAIL_DEAD];
static gort_waitgroup detail_wg;
/* 1: in the syscall, 2: leave it.  Release stores and acquire loads: main
 * traces only after the goroutine's gort_entersyscall, and the goroutine
 * leaves only after the trace. */
static uint32_t detail_sys;
/* The wired goroutine: a release store, read with acquire by main. */
static struct g *detail_locked;
static gort_chan *detail_release;

static gort_chan *detail_all_made;

/* Each waits until all are made: one that exited sooner would give its G
 * to the next (main may move to another P meanwhile, where the next runs
 * and exits at once), leaving fewer Gs than goroutines. */
static void detail_exits(void *arg)
{
    int i = (int)(intptr_t)arg;
    detail_dead[i] = gort__getg();
    detail_dead_goid[i] = gort_goid();
    CHECK(!gort_chan_recv(detail_all_made, NULL)); /* closed */
    gort_waitgroup_done(&detail_wg);
}

/* Enters a system call and stays in it (without any gort call) until
 * main has traced. */
static void detail_syscall(void *arg)
{
    (void)arg;
    gort_entersyscall();
    __atomic_store_n(&detail_sys, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&detail_sys, __ATOMIC_ACQUIRE) != 2)
        ;
    gort_exitsyscall();
    gort_waitgroup_done(&detail_wg);
}

/* Wired to its thread, then parked: its M sleeps in stoplockedm. */
static void detail_wired(void *arg)
{
    (void)arg;
    gort_lock_os_thread();
    __atomic_store_n(&detail_locked, gort__getg(), __ATOMIC_RELEASE);
    int v;
    gort_chan_recv(detail_release, &v);
    gort_unlock_os_thread();
    gort_waitgroup_done(&detail_wg);
}

/* Wait (at most 5 s) until ok(arg) holds; false if it never did. */
static bool detail_wait(bool (*ok)(void *), void *arg)
{
    for (int i = 0; i < 5000; i++) {
        if (ok(arg))
            return true;
        gort_sleep(1000 * 1000);
    }
    return false;
}

static bool all_dead(void *arg)
{
    (void)arg;
    for (int i = 0; i < DETAIL_DEAD; i++)
        if (gort__readgstatus(detail_dead[i]) != G_DEAD)
            return false;
    return true;
}

static bool wired_asleep(void *arg)
{
    (void)arg;
    struct g *gp = __atomic_load_n(&detail_locked, __ATOMIC_ACQUIRE);
    if (!gp || gort__readgstatus(gp) != G_WAITING)
        return false;
    /* Relaxed: a poll of what schedtrace will print, as it reads it. */
    struct m *mp = __atomic_load_n(&gp->lockedm, __ATOMIC_RELAXED);
    return mp && __atomic_load_n(&mp->blocked, __ATOMIC_RELAXED);
}

static void detail_main(void *arg)
{
    (void)arg;
    /* Dead goroutines. */
    CHECK_EQ(gort_chan_make(&detail_all_made, 0, 0), 0);
    gort_waitgroup_add(&detail_wg, DETAIL_DEAD);
    for (int i = 0; i < DETAIL_DEAD; i++)
        gort_go(detail_exits, (void *)(intptr_t)i);
    gort_chan_close(detail_all_made);
    gort_waitgroup_wait(&detail_wg);
    gort_chan_free(detail_all_made);
    detail_wait(all_dead, NULL);
    fprintf(stderr, "== dead");
    for (int i = 0; i < DETAIL_DEAD; i++)
        fprintf(stderr, " %lld", (long long)detail_dead_goid[i]);
    fprintf(stderr, "\n");
    gort_schedtrace(1);

    /* Pending timers, started on main's P. */
    gort_timer *t[5];
    for (int i = 0; i < 5; i++)
        CHECK_EQ(gort_timer_make(&t[i], 3600LL * 1000 * 1000 * 1000, NULL,
                                 NULL),
                 0);
    fprintf(stderr, "== timers %lld\n", (long long)gort_goid());
    gort_schedtrace(1);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(gort_timer_free(t[i]), 0);

    /* A P in a system call, several rounds: each entry carries a new
     * sequence number in the P's status word. */
    for (int round = 0; round < 10; round++) {
        /* Relaxed: gort_go publishes it to the new goroutine. */
        __atomic_store_n(&detail_sys, 0, __ATOMIC_RELAXED);
        gort_waitgroup_add(&detail_wg, 1);
        gort_go(detail_syscall, NULL);
        while (__atomic_load_n(&detail_sys, __ATOMIC_ACQUIRE) != 1)
            gort_gosched();
        fprintf(stderr, "== syscall %d\n", round);
        gort_schedtrace(1);
        __atomic_store_n(&detail_sys, 2, __ATOMIC_RELEASE);
        gort_waitgroup_wait(&detail_wg);
    }

    /* A wired goroutine asleep, and main wired and running with
     * preemption off. */
    CHECK_EQ(gort_chan_make(&detail_release, sizeof(int), 0), 0);
    gort_waitgroup_add(&detail_wg, 1);
    gort_go(detail_wired, NULL);
    detail_wait(wired_asleep, NULL);
    gort_lock_os_thread();
    gort_preempt_disable();
    fprintf(stderr, "== locked %lld %lld\n", (long long)gort_goid(),
            (long long)detail_locked->goid);
    gort_schedtrace(1);
    gort_preempt_enable();
    gort_unlock_os_thread();
    int v = 1;
    gort_chan_send(detail_release, &v);
    gort_waitgroup_wait(&detail_wg);
    gort_chan_free(detail_release);
}

TEST_HIDDEN(detail_child)
{
    CHECK_EQ(gort_main(detail_main, NULL), 0);
}

/* The child's stderr, run once for all four cases. */
static char *detail_output(void)
{
    static struct test_child r;
    static bool ran;
    if (!ran) {
        clean_env();
        static const char *const env[] = {"GORTMAXPROCS=3", NULL};
        test_run_child("detail_child", env, 60, &r);
        if (r.exit_code != 0)
            fprintf(stderr, "child: exit %d signal %d\n--- stderr ---\n%s\n",
                    r.exit_code, r.signal, r.err);
        ran = true;
    }
    CHECK_EQ(r.exit_code, 0);
    return r.err;
}

/* The trace after the marker line that starts with "== " name (a copy,
 * malloc'd, up to the next marker), and the marker's arguments in
 * args[0..n) (returns how many). */
static char *detail_block(const char *name, long long *args, int max,
                          int *nargs)
{
    const char *out = detail_output();
    char mark[64];
    snprintf(mark, sizeof mark, "== %s", name);
    const char *s = strstr(out, mark);
    if (!s)
        fprintf(stderr, "no \"%s\" trace in:\n%s\n", mark, out);
    CHECK(s != NULL);
    s += strlen(mark);
    int n = 0;
    char *end;
    while (*s == ' ' && n < max) {
        args[n++] = strtoll(s, &end, 10);
        s = end;
    }
    if (nargs)
        *nargs = n;
    const char *e = strstr(s, "\n== ");
    size_t len = e ? (size_t)(e - s) + 1 : strlen(s);
    char *b = malloc(len + 1);
    CHECK(b != NULL);
    memcpy(b, s, len);
    b[len] = 0;
    return b;
}

/* The line of blk that starts with prefix, or NULL. */
static const char *detail_line(const char *blk, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *s = blk; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : s)
        if (strncmp(s, prefix, n) == 0)
            return s;
    return NULL;
}

/* The value of " key=" in line (up to its end): a number, -1 for nil,
 * -2 when the line has no such field. */
static long long detail_field(const char *line, const char *key)
{
    char k[32];
    snprintf(k, sizeof k, " %s=", key);
    const char *eol = strchr(line, '\n');
    const char *s = strstr(line, k);
    if (!s || (eol && s > eol))
        return -2;
    s += strlen(k);
    if (strncmp(s, "nil", 3) == 0)
        return -1;
    return strtoll(s, NULL, 10);
}

/* Dead goroutines show with the goid they had, as Go's do:
 * "G<goid>: status=6() m=nil lockedm=nil". */
TEST(dead_g_goids)
{
    long long goid[DETAIL_DEAD];
    int n;
    char *b = detail_block("dead", goid, DETAIL_DEAD, &n);
    CHECK_EQ(n, DETAIL_DEAD);
    for (int i = 0; i < n; i++) {
        char want[96];
        snprintf(want, sizeof want, "  G%lld: status=6() m=nil lockedm=nil\n",
                 goid[i]);
        CHECK(goid[i] > 0);
        CHECK_STR_CONTAINS(b, want);
    }
    /* No G is shown without its id. */
    CHECK(detail_line(b, "  G0:") == NULL);
    free(b);
}

/* timerslen counts the timers pending on the P: main's P after main
 * started five. */
TEST(timerslen)
{
    long long a[1] = {0};
    char *b = detail_block("timers", a, 1, NULL);
    char pre[32];
    snprintf(pre, sizeof pre, "  G%lld: status=2()", a[0]);
    const char *gl = detail_line(b, pre);
    CHECK(gl != NULL);
    long long m = detail_field(gl, "m");
    CHECK_GE(m, 0);
    snprintf(pre, sizeof pre, "  M%lld: ", m);
    const char *ml = detail_line(b, pre);
    CHECK(ml != NULL);
    long long p = detail_field(ml, "p");
    CHECK_GE(p, 0);
    snprintf(pre, sizeof pre, "  P%lld: ", p);
    const char *pl = detail_line(b, pre);
    CHECK(pl != NULL);
    CHECK_GE(detail_field(pl, "timerslen"), 5);
    free(b);
}

/* A P whose M is in a system call shows status=2 (Go's _Psyscall), not
 * its status word; its G shows status=3 (syscall).  Every status is one
 * of Go's five. */
TEST(p_syscall_status)
{
    int insyscall = 0;
    for (int round = 0; round < 10; round++) {
        char name[32];
        snprintf(name, sizeof name, "syscall %d\n", round);
        char *b = detail_block(name, NULL, 0, NULL);
        CHECK(strstr(b, " status=3() ") != NULL);
        bool two = false;
        for (int i = 0; i < 3; i++) {
            char pre[16];
            snprintf(pre, sizeof pre, "  P%d: ", i);
            const char *pl = detail_line(b, pre);
            CHECK(pl != NULL);
            long long st = detail_field(pl, "status");
            CHECK_GE(st, 0);
            CHECK_LE(st, 4);
            two |= st == 2;
        }
        insyscall += two;
        free(b);
    }
    /* sysmon takes a P from a long system call after 10 ms; main traces
     * at once, so all rounds but a very late one see status 2. */
    fprintf(stderr, "%d of 10 rounds saw a P in its syscall\n", insyscall);
    CHECK_GE(insyscall, 1);
}

/* lockedg/lockedm name the wired pair: the running main goroutine and
 * its M, and a parked wired goroutine and its sleeping M (blocked).
 * preemptoff names gort_preempt_disable on main's M, and only there. */
TEST(locked_ids)
{
    long long a[2] = {0, 0};
    int n;
    char *b = detail_block("locked", a, 2, &n);
    CHECK_EQ(n, 2);
    for (int k = 0; k < 2; k++) {
        char pre[32];
        snprintf(pre, sizeof pre, "  G%lld: ", a[k]);
        const char *gl = detail_line(b, pre);
        CHECK(gl != NULL);
        long long lm = detail_field(gl, "lockedm");
        CHECK_GE(lm, 0);
        snprintf(pre, sizeof pre, "  M%lld: ", lm);
        const char *ml = detail_line(b, pre);
        CHECK(ml != NULL);
        CHECK_EQ(detail_field(ml, "lockedg"), a[k]);
        if (k == 0) { /* main, running on its M */
            CHECK_EQ(detail_field(gl, "m"), lm);
            CHECK_EQ(detail_field(ml, "curg"), a[0]);
            CHECK_STR_CONTAINS(ml, " blocked=false ");
            CHECK_STR_CONTAINS(ml, " preemptoff=gort_preempt_disable ");
        } else { /* parked: its M sleeps without it */
            CHECK_STR_CONTAINS(gl, " status=4(");
            CHECK_EQ(detail_field(ml, "curg"), -1);
            CHECK_STR_CONTAINS(ml, " blocked=true ");
        }
    }
    /* Nothing else is wired. */
    int wired = 0;
    for (const char *s = strstr(b, " lockedg="); s;
         s = strstr(s + 1, " lockedg="))
        wired += strncmp(s, " lockedg=nil", 12) != 0;
    CHECK_EQ(wired, 2);
    int off = 0;
    for (const char *s = strstr(b, " preemptoff="); s;
         s = strstr(s + 1, " preemptoff="))
        off += s[12] != ' ';
    CHECK_EQ(off, 1);
    free(b);
}

/* blocked is true only for an M asleep on its note (Go's m.blocked, set
 * in notesleep): the wired goroutine's M above, but not sysmon, which has
 * no P and no G either but sleeps between rounds without a note while
 * main runs. */
TEST(m_blocked)
{
    long long a[2] = {0, 0};
    char *b = detail_block("locked", a, 2, NULL);
    int asleep = 0, awake = 0;
    for (const char *s = detail_line(b, "  M"); s;
         s = detail_line(strchr(s, '\n') + 1, "  M")) {
        if (detail_field(s, "p") != -1 || detail_field(s, "curg") != -1)
            continue;
        const char *eol = strchr(s, '\n');
        const char *bl = strstr(s, " blocked=true ");
        if (bl && bl < eol)
            asleep++;
        else
            awake++;
    }
    fprintf(stderr, "Ms without P or G: %d asleep on a note, %d not\n",
            asleep, awake);
    CHECK_GE(asleep, 1);
    CHECK_GE(awake, 1);
    free(b);
}
