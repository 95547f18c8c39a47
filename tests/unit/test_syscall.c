/* SPDX-License-Identifier: MIT */
/*
 * test_syscall.c - goroutines in blocking system calls: the P is handed to
 * another thread so that the other goroutines keep running.
 *
 * The unwrapped call is found through /proc (rawsys.c), except under
 * ThreadSanitizer and Valgrind, where gort falls back to the preemption
 * signal, which is off there too: unwrapped_raw_read is skipped there (it
 * would hold the only P for good).
 */
#include "test_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#if defined(__SANITIZE_THREAD__)
#define SC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SC_TSAN 1
#endif
#endif
#ifndef SC_TSAN
#define SC_TSAN 0
#endif

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define ON_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#else
#define ON_VALGRIND() 0
#endif

static bool under_emulator(void)
{
    const char *emu = getenv("GORT_TEST_EMULATOR");
    return emu && *emu;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t median(const int64_t *v, int n)
{
    int64_t tmp[64];
    CHECK(n > 0 && n <= 64);
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_i64);
    return tmp[n / 2];
}

static void make_pipe(int fds[2])
{
    CHECK_EQ(pipe2(fds, O_CLOEXEC), 0);
}

static void close_pipe(int fds[2])
{
    close(fds[0]);
    close(fds[1]);
}

/* Run child case `name`, print its output, require a clean exit and an
 * "ok" line. */
static void run_child_ok(const char *name, const char *const *env)
{
    struct test_child r;
    test_run_child(name, env, 100, &r);
    fprintf(stderr, "--- child %s: exit %d signal %d\n--- stdout ---\n%s"
                    "--- stderr ---\n%s--------------\n",
            name, r.exit_code, r.signal, r.out, r.err);
    CHECK_EQ(r.signal, 0);
    CHECK_EQ(r.exit_code, 0);
    CHECK_STR_CONTAINS(r.out, "\nok\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * handoff_read_pipe, handoff_entersyscallblock (children, GORTMAXPROCS=1)
 *
 * One round: B is started first, then A, so that A runs first (runnext)
 * and B waits in the local queue behind it ("local").  In the "global"
 * variant B first yields to the global queue.  A records the time just
 * before its read and raises a flag; B, once it runs, waits for the flag
 * (yielding) and records the time: with one P, B can run while A is in
 * its read only if the P was handed to another thread.
 * ------------------------------------------------------------------------- */

enum { HO_GORT_READ, HO_ENTERSYSCALLBLOCK };

struct ho_round {
    int how;
    bool global;
    int fds[2];
    int flag;
    int64_t t_a, t_b;
    long got;
    char buf[8];
    gort_waitgroup wg;
};

static void ho_reader(void *arg)
{
    struct ho_round *h = arg;
    char buf[8] = {0};
    long r;
    ATOMIC_STORE(&h->t_a, gort_nanotime());
    ATOMIC_STORE(&h->flag, 1);
    if (h->how == HO_GORT_READ) {
        r = gort_read(h->fds[0], buf, 5);
    } else {
        gort_entersyscallblock();
        ssize_t n = read(h->fds[0], buf, 5);
        int e = errno;
        gort_exitsyscall();
        r = n < 0 ? -e : n;
    }
    h->got = r;
    memcpy(h->buf, buf, sizeof buf);
    gort_waitgroup_done(&h->wg);
}

static void ho_other(void *arg)
{
    struct ho_round *h = arg;
    if (h->global)
        gort_gosched(); /* to the global queue: A runs first */
    while (!ATOMIC_LOAD(&h->flag))
        gort_gosched();
    ATOMIC_STORE(&h->t_b, gort_nanotime());
    CHECK_EQ(gort_write(h->fds[1], "hello", 5), 5);
    gort_waitgroup_done(&h->wg);
}

#define HO_ROUNDS 7

static void ho_main(void *arg)
{
    int how = (int)(intptr_t)arg;
    CHECK_EQ(gort_gomaxprocs(0), 1);
    for (int variant = 0; variant < 2; variant++) {
        bool global = variant == 1;
        int64_t lat[HO_ROUNDS];
        for (int i = 0; i < HO_ROUNDS; i++) {
            static struct ho_round h;
            memset(&h, 0, sizeof h);
            h.how = how;
            h.global = global;
            make_pipe(h.fds);
            gort_waitgroup_add(&h.wg, 2);
            /* Settle on a fresh slice.  local: B, then A (runnext): A
             * runs first with B in the local queue.  global: A, then B
             * (runnext): B runs first and yields to the global queue. */
            gort_sleep(MS);
            if (!global) {
                CHECK_GT(gort_go(ho_other, &h), 1);
                CHECK_GT(gort_go(ho_reader, &h), 1);
            } else {
                CHECK_GT(gort_go(ho_reader, &h), 1);
                CHECK_GT(gort_go(ho_other, &h), 1);
            }
            gort_waitgroup_wait(&h.wg);
            CHECK_EQ(h.got, 5);
            CHECK(memcmp(h.buf, "hello", 5) == 0);
            lat[i] = h.t_b - h.t_a;
            CHECK_GT(lat[i], 0);
            close_pipe(h.fds);
        }
        say("%s, B %s: latencies (us):", how == HO_GORT_READ
                                             ? "gort_read"
                                             : "entersyscallblock",
            global ? "on the global queue" : "in the local queue");
        for (int i = 0; i < HO_ROUNDS; i++)
            say(" %lld", (long long)(lat[i] / 1000));
        int64_t med = median(lat, HO_ROUNDS);
        say("; median %lld\n", (long long)(med / 1000));
        /* The hand-off is prompt: at once for entersyscallblock; for
         * entersyscall with work queued behind, sysmon is kicked onto
         * short rounds.  Work on the global queue only meets sysmon's
         * lazy retake (its sleep is at most 10 ms, two rounds). */
        int64_t bound = (how == HO_GORT_READ && global) ? 50 * MS : 5 * MS;
        if (under_emulator())
            bound *= 10;
        if (med >= bound)
            say("median hand-off latency %lld us, want < %lld us\n",
                (long long)(med / 1000), (long long)(bound / 1000));
        CHECK_LT(med, bound);
    }
    say("ok\n");
}

TEST_HIDDEN(handoff_read_pipe_child)
{
    CHECK_EQ(gort_main(ho_main, (void *)(intptr_t)HO_GORT_READ), 0);
}

/* GORTMAXPROCS=1 (child): goroutine A blocks in gort_read on an empty pipe;
 * goroutine B, queued behind it, runs within 5 ms (median of 7 rounds,
 * measured from just before A's read); then B writes and A gets the data.
 * Also with B on the global queue (behind sysmon's lazy hand-off: median
 * within 50 ms). */
TEST(handoff_read_pipe)
{
    static const char *const env[] = {"GORTMAXPROCS=1", "GORTDEBUG=", NULL};
    run_child_ok("handoff_read_pipe_child", env);
}

TEST_HIDDEN(handoff_entersyscallblock_child)
{
    CHECK_EQ(gort_main(ho_main, (void *)(intptr_t)HO_ENTERSYSCALLBLOCK), 0);
}

/* handoff_read_pipe with gort_entersyscallblock(), a raw read(),
 * gort_exitsyscall(): 5 ms either way. */
TEST(handoff_entersyscallblock)
{
    static const char *const env[] = {"GORTMAXPROCS=1", "GORTDEBUG=", NULL};
    run_child_ok("handoff_entersyscallblock_child", env);
}

/* ---------------------------------------------------------------------------
 * blocking_macro
 * ------------------------------------------------------------------------- */

static int bm_fds[2];
static int bm_evals;

static int bm_count(int v)
{
    bm_evals++;
    return v;
}

/* The checks that hold inside and outside goroutines. */
static void bm_basics(void)
{
    int fds[2];
    make_pipe(fds);
    ssize_t w = GORT_BLOCKING(write(fds[1], "abcdef", 6));
    CHECK_EQ(w, 6);
    char buf[16] = {0};
    ssize_t r = GORT_BLOCKING(read(fds[0], buf, sizeof buf));
    CHECK_EQ(r, 6);
    CHECK(memcmp(buf, "abcdef", 6) == 0);
    /* The type is expr's: a pointer stays a pointer, a 64-bit value keeps
     * its high bits. */
    const char *p = GORT_BLOCKING((const char *)memchr(buf, 'd', 6));
    CHECK(p == buf + 3);
    int64_t big = GORT_BLOCKING((int64_t)1 << 40);
    CHECK_EQ(big, (int64_t)1 << 40);
    CHECK_EQ(_Generic(GORT_BLOCKING((short)1), short: 1, default: 0), 1);
    /* Evaluated exactly once. */
    bm_evals = 0;
    CHECK_EQ(GORT_BLOCKING(bm_count(42)), 42);
    CHECK_EQ(bm_evals, 1);
    /* errno as the call left it. */
    errno = 0;
    ssize_t bad = GORT_BLOCKING(read(-1, buf, 1));
    int e = errno;
    CHECK_EQ(bad, -1);
    CHECK_EQ(e, EBADF);
    close_pipe(fds);
}

static void *bm_thread(void *arg)
{
    (void)arg;
    bm_basics();
    return NULL;
}

static int64_t bm_sleep_start;

static void bm_writer(void *arg)
{
    gort_waitgroup *wg = arg;
    ATOMIC_STORE(&bm_sleep_start, gort_nanotime());
    gort_sleep(20 * MS);
    CHECK_EQ(gort_write(bm_fds[1], "later", 5), 5);
    gort_waitgroup_done(wg);
}

static void bm_main(void *arg)
{
    (void)arg;
    bm_basics();
    /* From a thread gort does not know, while the runtime runs. */
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, bm_thread, NULL), 0);
    CHECK_EQ(GORT_BLOCKING(pthread_join(t, NULL)), 0);
    /* On one P, a GORT_BLOCKING read that blocks must let the writer run:
     * without the hand-off this never returns (the watchdog says so). */
    gort_gomaxprocs(1);
    make_pipe(bm_fds);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 1);
    CHECK_GT(gort_go(bm_writer, &wg), 1);
    char buf[8] = {0};
    int64_t t0 = gort_nanotime();
    ssize_t r = GORT_BLOCKING(read(bm_fds[0], buf, 5));
    int64_t now = gort_nanotime(), waited = now - t0;
    CHECK_EQ(r, 5);
    CHECK(memcmp(buf, "later", 5) == 0);
    /* The data came after the writer's whole sleep (the writer may have
     * started before t0, so that is the bound, not t0). */
    CHECK_GE(now - ATOMIC_LOAD(&bm_sleep_start), 20 * MS);
    gort_waitgroup_wait(&wg);
    close_pipe(bm_fds);
    fprintf(stderr, "blocking read on 1 P returned after %.1f ms\n",
            (double)waited / 1e6);
}

/* GORT_BLOCKING(expr) has expr's value and type, evaluates it once, keeps
 * errno, works outside goroutines, and on 1 P a GORT_BLOCKING(read()) on an
 * empty pipe lets the writer run. */
TEST(blocking_macro)
{
    bm_basics(); /* before gort_main: a no-op bracket */
    struct watchdog wd;
    watchdog_arm(&wd, 30, "blocking_macro (GORT_BLOCKING held the only P?)");
    run_main(bm_main, NULL);
    watchdog_disarm(&wd);
    bm_basics(); /* and after */
}

/* ---------------------------------------------------------------------------
 * unwrapped_raw_read
 * ------------------------------------------------------------------------- */

static int ur_fds[2];
static int ur_flag;
static int64_t ur_t_read, ur_t_other;
static gort_chan *ur_to_main, *ur_to_reader;
static gort_waitgroup ur_wg;

static void ur_reader(void *arg)
{
    (void)arg;
    char buf[8] = {0};
    ATOMIC_STORE(&ur_t_read, gort_nanotime());
    ATOMIC_STORE(&ur_flag, 1);
    ssize_t n = read(ur_fds[0], buf, 5); /* raw: no wrapper, no bracket */
    /* Back from the kernel: plain code first, then gort again. */
    CHECK_EQ(n, 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    int64_t v = 0;
    for (int i = 0; i < 5; i++)
        v = v * 256 + (unsigned char)buf[i];
    send_i64(ur_to_main, v);
    for (int i = 0; i < 10; i++) {
        gort_sleep(MS / 2);
        CHECK_EQ(recv_i64(ur_to_reader), i);
        send_i64(ur_to_main, i + 1000);
        gort_gosched();
    }
    gort_waitgroup_done(&ur_wg);
}

static void ur_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(1);
    make_pipe(ur_fds);
    ur_to_main = make_chan(sizeof(int64_t), 0);
    ur_to_reader = make_chan(sizeof(int64_t), 0);
    gort_waitgroup_add(&ur_wg, 1);
    CHECK_GT(gort_go(ur_reader, NULL), 1);
    /* Yield until the reader has run up to its read: main runs again only
     * once the P has left the reader's thread. */
    while (!ATOMIC_LOAD(&ur_flag))
        gort_gosched();
    ur_t_other = gort_nanotime();
    int64_t lat = ur_t_other - ATOMIC_LOAD(&ur_t_read);
    fprintf(stderr, "main ran %.1f ms after the reader entered read(2)\n",
            (double)lat / 1e6);
    int64_t bound = (SANITIZED || under_emulator()) ? 500 * MS : 100 * MS;
    CHECK_LT(lat, bound);
    /* Let it block for real for a while, then feed it. */
    gort_sleep(20 * MS);
    CHECK_EQ(gort_write(ur_fds[1], "hello", 5), 5);
    CHECK_EQ(recv_i64(ur_to_main), 0x68656c6c6fLL); /* "hello" */
    for (int i = 0; i < 10; i++) {
        send_i64(ur_to_reader, i);
        CHECK_EQ(recv_i64(ur_to_main), i + 1000);
    }
    gort_waitgroup_wait(&ur_wg);
    free_chan(ur_to_main);
    free_chan(ur_to_reader);
    close_pipe(ur_fds);
}

/* 1 P: a goroutine blocks in a raw read(2) that nobody wrapped; another
 * goroutine still runs within 100 ms (the preemption signal finds the thread
 * in the kernel); then the reader gets its data and goes on with channel
 * operations and sleeps. */
TEST(unwrapped_raw_read)
{
    if (SC_TSAN || ON_VALGRIND()) {
        fprintf(stderr, "unwrapped_raw_read: skipped (under %s nothing finds "
                        "an unwrapped blocking call)\n",
                SC_TSAN ? "ThreadSanitizer" : "Valgrind");
        return;
    }
    struct watchdog wd;
    watchdog_arm(&wd, 30, "unwrapped_raw_read (the raw read kept the P?)");
    run_main(ur_main, NULL);
    watchdog_disarm(&wd);
}

/* ---------------------------------------------------------------------------
 * threads_100_blocking
 * ------------------------------------------------------------------------- */

#define TB_N 100

static int tb_fds[TB_N][2];
static int tb_entered;
static int64_t tb_got;
static gort_waitgroup tb_wg;

static void tb_reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    char c = 0;
    ATOMIC_INC(&tb_entered);
    CHECK_EQ(gort_read(tb_fds[i][0], &c, 1), 1);
    CHECK_EQ(c, (char)i);
    ATOMIC_ADD(&tb_got, i + 1);
    gort_waitgroup_done(&tb_wg);
}

/* Start TB_N readers, wait until they all block, return the thread count
 * then, release them and wait. */
static int tb_round(int round)
{
    tb_entered = 0;
    tb_got = 0;
    for (int i = 0; i < TB_N; i++)
        make_pipe(tb_fds[i]);
    gort_waitgroup_add(&tb_wg, TB_N);
    for (int i = 0; i < TB_N; i++)
        CHECK_GT(gort_go(tb_reader, (void *)(intptr_t)i), 1);
    int64_t deadline = gort_nanotime() + 30000 * MS;
    while (ATOMIC_LOAD(&tb_entered) < TB_N) {
        CHECK_LT(gort_nanotime(), deadline);
        gort_sleep(MS);
    }
    /* Every reader is in (or at) its read, each on a thread of its own;
     * give the last ones a moment and take the peak. */
    int peak = 0;
    for (int k = 0; k < 20; k++) {
        int n = count_threads();
        if (n > peak)
            peak = n;
        gort_sleep(5 * MS);
    }
    fprintf(stderr, "round %d: %d threads with %d goroutines in gort_read\n",
            round, peak, TB_N);
    for (int i = 0; i < TB_N; i++) {
        char c = (char)i;
        CHECK_EQ(gort_write(tb_fds[i][1], &c, 1), 1);
    }
    gort_waitgroup_wait(&tb_wg);
    CHECK_EQ(ATOMIC_LOAD(&tb_got), TB_N * (TB_N + 1) / 2);
    for (int i = 0; i < TB_N; i++)
        close_pipe(tb_fds[i]);
    return peak;
}

static void tb_main(void *arg)
{
    (void)arg;
    int procs = gort_gomaxprocs(0);
    int base = count_threads();
    int peak1 = tb_round(1);
    gort_sleep(50 * MS);
    int after = count_threads();
    int peak2 = tb_round(2);
    fprintf(stderr, "threads: %d at start, peak %d, %d between rounds, "
                    "peak %d in round 2 (procs %d)\n",
            base, peak1, after, peak2, procs);
    CHECK_GE(peak1, 90);
    CHECK_LE(peak1, TB_N + procs + 10);
    /* The threads of round 1 serve round 2. */
    CHECK_LE(peak2, peak1 + 10);
}

/* 100 goroutines in gort_read on 100 empty pipes make about 100 threads
 * (90 .. 100 + procs + 10); 100 more after those finished reuse them (at
 * most 10 more threads). */
TEST(threads_100_blocking)
{
    struct watchdog wd;
    watchdog_arm(&wd, 60, "threads_100_blocking");
    run_main(tb_main, NULL);
    watchdog_disarm(&wd);
}

/* ---------------------------------------------------------------------------
 * thread_limit (child)
 * ------------------------------------------------------------------------- */

static int tl_fds[2];

static void tl_reader(void *arg)
{
    (void)arg;
    char c;
    gort_read(tl_fds[0], &c, 1);
}

static void tl_main(void *arg)
{
    (void)arg;
    make_pipe(tl_fds);
    say("starting\n"); /* before: main may yield at a gort_go */
    for (int i = 0; i < 50; i++)
        CHECK_GT(gort_go(tl_reader, NULL), 1);
    gort_sleep(20000 * MS);
    say("all done\n"); /* never: the 21st thread is fatal */
}

TEST_HIDDEN(thread_limit_child)
{
    CHECK_EQ(gort_set_max_threads(20), 10000);
    gort_main(tl_main, NULL);
    say("returned\n");
}

/* gort_set_max_threads(20) and 50 goroutines in blocking reads: "thread
 * exhaustion" (child). */
TEST(thread_limit)
{
    struct test_child r;
    run_death("thread_limit_child", NULL, &r);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.out, "starting\n");
    CHECK(strstr(r.out, "all done") == NULL);
    CHECK_STR_CONTAINS(r.err, "gort: program exceeds 20-thread limit\n");
    CHECK_STR_CONTAINS(r.err, "gort: fatal error: thread exhaustion\n");
    test_child_free(&r);
}

/* ---------------------------------------------------------------------------
 * wrappers
 * ------------------------------------------------------------------------- */

static int wr_pipe[2];

static void wr_late_writer(void *arg)
{
    gort_waitgroup *wg = arg;
    gort_sleep(20 * MS);
    CHECK_EQ(gort_write(wr_pipe[1], "p", 1), 1);
    gort_waitgroup_done(wg);
}

static void wr_files(void)
{
    char dir[64];
    CHECK(mkdtemp(tmp_template(dir, sizeof dir, "gort-wrappers-")) != NULL);
    char path[256], missing[256];
    snprintf(path, sizeof path, "%s/file", dir);
    snprintf(missing, sizeof missing, "%s/missing", dir);

    int fd = gort_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK_GE(fd, 0);
    struct stat st;
    CHECK_EQ(fstat(fd, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0600);
    CHECK_EQ(gort_write(fd, "hello world", 11), 11);
    CHECK_EQ(gort_pwrite(fd, "WORLD", 5, 6), 5);
    char buf[64] = {0};
    CHECK_EQ(gort_pread(fd, buf, sizeof buf, 0), 11);
    CHECK(memcmp(buf, "hello WORLD", 11) == 0);
    CHECK_EQ(gort_pread(fd, buf, 5, 2), 5);
    CHECK(memcmp(buf, "llo W", 5) == 0);
    CHECK_EQ(gort_pread(fd, buf, 5, 1000), 0); /* past the end */
    CHECK_EQ(gort_fsync(fd), 0);
    /* The file offset is after the write: read sees EOF, then from 0. */
    CHECK_EQ(gort_read(fd, buf, sizeof buf), 0);
    CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(gort_read(fd, buf, sizeof buf), 11);
    CHECK(memcmp(buf, "hello WORLD", 11) == 0);
    CHECK_EQ(gort_close(fd), 0);
    CHECK_EQ(gort_close(fd), -EBADF);

    fd = gort_open(path, O_RDONLY | O_CLOEXEC); /* no mode argument */
    CHECK_GE(fd, 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ(gort_read(fd, buf, 5), 5);
    CHECK(memcmp(buf, "hello", 5) == 0);
    CHECK_EQ(gort_write(fd, "x", 1), -EBADF); /* opened read-only */
    CHECK_EQ(gort_close(fd), 0);

    CHECK_EQ(gort_open(missing, O_RDONLY), -ENOENT);
    CHECK_EQ(gort_open(path, O_RDWR | O_CREAT | O_EXCL, 0600), -EEXIST);

    /* Errors come back as -errno, and errno is the call's. */
    errno = 0;
    CHECK_EQ(gort_read(-1, buf, 1), -EBADF);
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(gort_write(-1, buf, 1), -EBADF);
    CHECK_EQ(gort_pread(-1, buf, 1, 0), -EBADF);
    CHECK_EQ(gort_pwrite(-1, buf, 1, 0), -EBADF);
    CHECK_EQ(gort_fsync(-1), -EBADF);
    CHECK_EQ(gort_close(-1), -EBADF);
    int p[2];
    make_pipe(p);
    CHECK_EQ(gort_pread(p[0], buf, 1, 0), -ESPIPE);
    close_pipe(p);

    CHECK_EQ(unlink(path), 0);
    CHECK_EQ(rmdir(dir), 0);
}

static void wr_sleep_wait(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    int64_t t0 = gort_nanotime();
    CHECK_EQ(gort_nanosleep(&ts, NULL), 0);
    CHECK_GE(gort_nanotime() - t0, 20 * MS);
    struct timespec rem = {7, 7};
    CHECK_EQ(gort_nanosleep(&ts, &rem), 0);
    struct timespec bad = {0, 2000 * 1000 * 1000L};
    CHECK_EQ(gort_nanosleep(&bad, NULL), -EINVAL);

    pid_t pid = fork();
    CHECK_GE(pid, 0);
    if (pid == 0) {
        struct timespec d = {0, 20 * 1000 * 1000};
        nanosleep(&d, NULL);
        _exit(7);
    }
    int status = 0;
    CHECK_EQ(gort_waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 7);
    CHECK_EQ(gort_waitpid(pid, &status, 0), -ECHILD);
    CHECK_EQ(gort_waitpid(-1, &status, WNOHANG), -ECHILD);
}

static void wr_poll(void)
{
    make_pipe(wr_pipe);
    struct pollfd pfd = {wr_pipe[0], POLLIN, 0};
    CHECK_EQ(gort_poll(&pfd, 1, 0), 0);
    CHECK_EQ(gort_poll(&pfd, 1, 10), 0); /* times out */
    CHECK_EQ(gort_write(wr_pipe[1], "q", 1), 1);
    CHECK_EQ(gort_poll(&pfd, 1, 0), 1);
    CHECK(pfd.revents & POLLIN);
    char c;
    CHECK_EQ(gort_read(wr_pipe[0], &c, 1), 1);
    CHECK_EQ(c, 'q');
    /* Blocking on one P: the writer must get the P meanwhile. */
    int old = gort_gomaxprocs(1);
    gort_waitgroup wg = GORT_WAITGROUP_INIT;
    gort_waitgroup_add(&wg, 1);
    CHECK_GT(gort_go(wr_late_writer, &wg), 1);
    pfd.revents = 0;
    int64_t t0 = gort_nanotime();
    CHECK_EQ(gort_poll(&pfd, 1, 20000), 1);
    CHECK(pfd.revents & POLLIN);
    CHECK_LT(gort_nanotime() - t0, 15000 * MS);
    gort_waitgroup_wait(&wg);
    CHECK_EQ(gort_read(wr_pipe[0], &c, 1), 1);
    CHECK_EQ(c, 'p');
    gort_gomaxprocs(old);
    /* A negative fd is ignored. */
    struct pollfd none = {-1, POLLIN, 0};
    CHECK_EQ(gort_poll(&none, 1, 0), 0);
    close_pipe(wr_pipe);
}

static void wr_getaddrinfo(void)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    CHECK_EQ(gort_getaddrinfo("localhost", "80", &hints, &res), 0);
    CHECK(res != NULL);
    int loopbacks = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            struct sockaddr_in *sin = (struct sockaddr_in *)a->ai_addr;
            CHECK_EQ(ntohs(sin->sin_port), 80);
            loopbacks += (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)a->ai_addr;
            CHECK_EQ(ntohs(s6->sin6_port), 80);
            loopbacks += IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
        }
    }
    CHECK_GT(loopbacks, 0);
    freeaddrinfo(res);

    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_family = AF_INET;
    res = NULL;
    CHECK_EQ(gort_getaddrinfo("127.0.0.1", "8080", &hints, &res), 0);
    CHECK(res != NULL && res->ai_family == AF_INET);
    CHECK_EQ(ntohs(((struct sockaddr_in *)res->ai_addr)->sin_port), 8080);
    freeaddrinfo(res);
    /* getaddrinfo's codes as gort's own, apart from every -errno, each
     * named by gort_strerror as gai_strerror names it. */
    int r = gort_getaddrinfo(NULL, NULL, &hints, &res);
    CHECK_EQ(r, GORT_EAI(EAI_NONAME));
    CHECK_LT(r, -GORT_EAI_BASE);
    CHECK(strcmp(gort_strerror(r), gai_strerror(EAI_NONAME)) == 0);
    CHECK_EQ(gort_getaddrinfo("not-a-number", "1", &hints, &res),
             GORT_EAI(EAI_NONAME));
    hints.ai_flags = 0x7fff0000; /* no such flag */
    r = gort_getaddrinfo("127.0.0.1", "1", &hints, &res);
    CHECK_EQ(r, GORT_EAI(EAI_BADFLAGS));
    CHECK(strcmp(gort_strerror(r), gai_strerror(EAI_BADFLAGS)) == 0);
}

static void wr_main(void *arg)
{
    (void)arg;
    wr_files();
    wr_sleep_wait();
    wr_poll();
    wr_getaddrinfo();
}

/* Every gort_* wrapper: values and data, and -errno for failures. */
TEST(wrappers)
{
    struct watchdog wd;
    watchdog_arm(&wd, 60, "wrappers");
    run_main(wr_main, NULL);
    watchdog_disarm(&wd);
}

/* ---------------------------------------------------------------------------
 * wrappers_eintr
 * ------------------------------------------------------------------------- */

static int we_stop;
static int we_signals;

static void we_handler(int sig)
{
    (void)sig;
    __atomic_add_fetch(&we_signals, 1, __ATOMIC_RELAXED);
}

static pthread_t we_target;

static void *we_spammer(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&we_stop, __ATOMIC_ACQUIRE)) {
        pthread_kill(we_target, SIGUSR1);
        usleep(1000);
    }
    return NULL;
}

static void we_main(void *arg)
{
    (void)arg;
    /* Locked: the spammer signals this thread, and the calls run on it. */
    gort_lock_os_thread();
    we_target = pthread_self();
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, we_spammer, NULL), 0);
    for (int i = 0; i < 10; i++) {
        struct timespec ts = {0, 20 * 1000 * 1000}, rem = {1, 1};
        int64_t t0 = gort_nanotime();
        CHECK_EQ(gort_nanosleep(&ts, &rem), 0);
        CHECK_GE(gort_nanotime() - t0, 20 * 1000 * 1000);
        CHECK_EQ(rem.tv_sec, 0);
        CHECK_EQ(rem.tv_nsec, 0);
        t0 = gort_nanotime();
        CHECK_EQ(gort_poll(NULL, 0, 20), 0);
        CHECK_GE(gort_nanotime() - t0, 20 * 1000 * 1000);
        CHECK_LT(gort_nanotime() - t0, 2000LL * 1000 * 1000);
    }
    struct timespec bad = {0, 1000000000L};
    CHECK_EQ(gort_nanosleep(&bad, NULL), -EINVAL);
    CHECK_EQ(gort_nanosleep(NULL, NULL), -EFAULT);
    __atomic_store_n(&we_stop, 1, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_join(th, NULL), 0);
    gort_unlock_os_thread();
}

/* gort_nanosleep and gort_poll retry a call a signal of the program's own
 * interrupted (a SIGUSR1 every millisecond from a plain thread, with a
 * handler), and still end on time. */
TEST(wrappers_eintr)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = we_handler;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0); /* no SA_RESTART */
    run_main(we_main, NULL);
    say("%d signals during the calls\n", we_signals);
    CHECK_GT(we_signals, 50);
}

/* ---------------------------------------------------------------------------
 * wrappers_eintr_read
 * ------------------------------------------------------------------------- */

static int wei_fds[2];

/* we_signals when the writer was started. */
static int wei_before;

/* Writes once at least 10 signals have landed on the reader since it was
 * started (or after 5 s): a fixed delay holds too few on a busy
 * machine. */
static void *wei_writer(void *arg)
{
    (void)arg;
    for (int i = 0;
         i < 5000 &&
         __atomic_load_n(&we_signals, __ATOMIC_RELAXED) - wei_before < 10;
         i++)
        usleep(1000);
    int64_t v = 4242;
    CHECK_EQ(write(wei_fds[1], &v, sizeof v), (ssize_t)sizeof v);
    return NULL;
}

static void wei_main(void *arg)
{
    (void)arg;
    gort_lock_os_thread();
    we_target = pthread_self();
    CHECK_EQ(pipe(wei_fds), 0); /* blocking, not the poller's */
    pthread_t spam, wr;
    __atomic_store_n(&we_stop, 0, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_create(&spam, NULL, we_spammer, NULL), 0);

    /* The control: the same call made raw is interrupted. */
    int64_t got = 0;
    errno = 0;
    CHECK_EQ(GORT_BLOCKING(read(wei_fds[0], &got, sizeof got)), -1);
    CHECK_EQ(errno, EINTR);

    for (int i = 0; i < 3; i++) {
        got = 0;
        int before = wei_before =
            __atomic_load_n(&we_signals, __ATOMIC_RELAXED);
        CHECK_EQ(pthread_create(&wr, NULL, wei_writer, NULL), 0);
        CHECK_EQ(gort_read(wei_fds[0], &got, sizeof got), (long)sizeof got);
        CHECK_EQ(got, 4242);
        /* Signals did land while it waited (one a millisecond). */
        CHECK_GT(__atomic_load_n(&we_signals, __ATOMIC_RELAXED) - before, 5);
        CHECK_EQ(pthread_join(wr, NULL), 0);
    }

    /* gort_readv the same way. */
    got = 0;
    struct iovec iov = {&got, sizeof got};
    int before_v = wei_before = __atomic_load_n(&we_signals, __ATOMIC_RELAXED);
    CHECK_EQ(pthread_create(&wr, NULL, wei_writer, NULL), 0);
    CHECK_EQ(gort_readv(wei_fds[0], &iov, 1), (long)sizeof got);
    CHECK_EQ(got, 4242);
    CHECK_GT(__atomic_load_n(&we_signals, __ATOMIC_RELAXED) - before_v, 5);
    CHECK_EQ(pthread_join(wr, NULL), 0);

    /* gort_waitpid on a child that takes 40 ms to exit. */
    int before = __atomic_load_n(&we_signals, __ATOMIC_RELAXED);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        usleep(40 * 1000);
        _exit(7);
    }
    int status = 0;
    CHECK_EQ(gort_waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 7);
    CHECK_GT(__atomic_load_n(&we_signals, __ATOMIC_RELAXED) - before, 5);

    __atomic_store_n(&we_stop, 1, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_join(spam, NULL), 0);
    close(wei_fds[0]);
    close(wei_fds[1]);
    gort_unlock_os_thread();
}

/* gort_read and gort_readv on a blocking pipe and gort_waitpid finish
 * their calls while a signal of the program's own, whose handler is
 * installed without SA_RESTART, interrupts them every millisecond; the
 * same read made raw fails with EINTR, which shows the signals do reach
 * the call. */
TEST(wrappers_eintr_read)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = we_handler;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0); /* no SA_RESTART */
    struct watchdog wd;
    watchdog_arm(&wd, 60, "wrappers_eintr_read");
    run_main(wei_main, NULL);
    watchdog_disarm(&wd);
    say("%d signals during the calls\n", we_signals);
}

/* ---------------------------------------------------------------------------
 * syscall_on_many_ps
 * ------------------------------------------------------------------------- */

#define SM_ITERS 2000
#define SM_OWN 8
#define SM_PAIRS 4
#define SM_PINGS 5000

static int64_t sm_own_sum, sm_cross_sum, sm_pings;
static int sm_cross_fds[SM_PAIRS][2];
static gort_chan *sm_ping[SM_PAIRS][2];
static gort_waitgroup sm_wg;

static void sm_own(void *arg)
{
    int k = (int)(intptr_t)arg;
    int fds[2];
    make_pipe(fds);
    int64_t sum = 0;
    for (int i = 0; i < SM_ITERS; i++) {
        int64_t v = (int64_t)k * 1000000 + i, got = -1;
        CHECK_EQ(gort_write(fds[1], &v, sizeof v), (long)sizeof v);
        CHECK_EQ(gort_read(fds[0], &got, sizeof got), (long)sizeof got);
        CHECK_EQ(got, v);
        sum += got;
    }
    close_pipe(fds);
    ATOMIC_ADD(&sm_own_sum, sum);
    gort_waitgroup_done(&sm_wg);
}

static void sm_cross_writer(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < SM_ITERS; i++) {
        int64_t v = (int64_t)k * 1000000 + i;
        CHECK_EQ(gort_write(sm_cross_fds[k][1], &v, sizeof v),
                 (long)sizeof v);
        if (i % 64 == 0)
            gort_sleep(MS / 10); /* so that the reader blocks now and then */
    }
    gort_waitgroup_done(&sm_wg);
}

static void sm_cross_reader(void *arg)
{
    int k = (int)(intptr_t)arg;
    int64_t sum = 0;
    for (int i = 0; i < SM_ITERS; i++) {
        int64_t got = -1;
        CHECK_EQ(gort_read(sm_cross_fds[k][0], &got, sizeof got),
                 (long)sizeof got);
        CHECK_EQ(got, (int64_t)k * 1000000 + i); /* in order */
        sum += got;
    }
    ATOMIC_ADD(&sm_cross_sum, sum);
    gort_waitgroup_done(&sm_wg);
}

static void sm_pinger(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < SM_PINGS; i++) {
        send_i64(sm_ping[k][0], i);
        CHECK_EQ(recv_i64(sm_ping[k][1]), i + 1);
    }
    gort_waitgroup_done(&sm_wg);
}

static void sm_ponger(void *arg)
{
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < SM_PINGS; i++) {
        int64_t v = recv_i64(sm_ping[k][0]);
        CHECK_EQ(v, i);
        send_i64(sm_ping[k][1], v + 1);
        ATOMIC_INC(&sm_pings);
    }
    gort_waitgroup_done(&sm_wg);
}

static void sm_main(void *arg)
{
    (void)arg;
    gort_gomaxprocs(2);
    for (int k = 0; k < SM_PAIRS; k++) {
        make_pipe(sm_cross_fds[k]);
        sm_ping[k][0] = make_chan(sizeof(int64_t), 0);
        sm_ping[k][1] = make_chan(sizeof(int64_t), 0);
    }
    gort_waitgroup_add(&sm_wg, SM_OWN + 4 * SM_PAIRS);
    for (int k = 0; k < SM_PAIRS; k++) {
        CHECK_GT(gort_go(sm_cross_reader, (void *)(intptr_t)k), 1);
        CHECK_GT(gort_go(sm_ponger, (void *)(intptr_t)k), 1);
    }
    for (int k = 0; k < SM_OWN; k++)
        CHECK_GT(gort_go(sm_own, (void *)(intptr_t)k), 1);
    for (int k = 0; k < SM_PAIRS; k++) {
        CHECK_GT(gort_go(sm_cross_writer, (void *)(intptr_t)k), 1);
        CHECK_GT(gort_go(sm_pinger, (void *)(intptr_t)k), 1);
    }
    gort_waitgroup_wait(&sm_wg);
    int64_t per = (int64_t)SM_ITERS * (SM_ITERS - 1) / 2;
    int64_t want_own = 0, want_cross = 0;
    for (int k = 0; k < SM_OWN; k++)
        want_own += (int64_t)k * 1000000 * SM_ITERS + per;
    for (int k = 0; k < SM_PAIRS; k++)
        want_cross += (int64_t)k * 1000000 * SM_ITERS + per;
    CHECK_EQ(sm_own_sum, want_own);
    CHECK_EQ(sm_cross_sum, want_cross);
    CHECK_EQ(sm_pings, (int64_t)SM_PAIRS * SM_PINGS);
    for (int k = 0; k < SM_PAIRS; k++) {
        close_pipe(sm_cross_fds[k]);
        free_chan(sm_ping[k][0]);
        free_chan(sm_ping[k][1]);
    }
}

/* 2 Ps: 8 goroutines doing 2000 gort_write + gort_read on their own pipes,
 * 4 writer/reader pairs across pipes, 4 channel ping-pong pairs: everything
 * completes, sums exact. */
TEST(syscall_on_many_ps)
{
    struct watchdog wd;
    watchdog_arm(&wd, 100, "syscall_on_many_ps");
    int64_t t0 = test_now_ns();
    run_main(sm_main, NULL);
    watchdog_disarm(&wd);
    fprintf(stderr, "done in %.2f s\n", (double)(test_now_ns() - t0) / 1e9);
}
