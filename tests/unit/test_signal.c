/* SPDX-License-Identifier: MIT */
/*
 * test_signal.c - signals delivered to channels (gort.h, "Signals
 * delivered to channels"): raise, kill from a child process and signals
 * taken by threads gort does not know reach the notified channels; several
 * signals and several channels; a full channel misses signals; stop ends
 * deliveries and gives the signal back its earlier action, also under a
 * storm of signals from another thread with the channel freed at once;
 * ignore, reset and ignored; SIGQUIT, SIGURG and SIGPIPE, which gort uses
 * itself; bad arguments; a child process that waits for SIGINT and exits
 * cleanly on it; no descriptor left behind, and every action put back when
 * gort_main returns with channels still notified.
 */
#include "test_util.h"

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECOND (1000 * MS)

/* Receive a signal number from ch within 10 s: the number, or -1 on
 * timeout. */
static int recv_sig(gort_chan *ch)
{
    int sig = 0;
    int r = gort_chan_recv_until(ch, &sig, gort_deadline_in(10 * SECOND));
    return r == 1 ? sig : -1;
}

/* Whether ch holds a value now (taking it). */
static bool has_value(gort_chan *ch)
{
    int sig;
    return gort_chan_tryrecv(ch, &sig, NULL);
}

/* After a value of a delivery round reached one channel: wait for the
 * round to end.  Rounds run under the lock every gort_signal_* call
 * takes, so any call waits for it; resetting a signal nobody uses changes
 * nothing. */
static void round_done(void)
{
    CHECK_EQ(gort_signal_reset((const int[]){SIGXFSZ}, 1), 0);
}

/* The program's own handler, counting. */
static int handled[65];

static void count_handler(int sig)
{
    __atomic_add_fetch(&handled[sig], 1, __ATOMIC_RELAXED);
}

static int handled_count(int sig)
{
    return __atomic_load_n(&handled[sig], __ATOMIC_RELAXED);
}

static void install_counter(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}

/* The action of sig now is the plain handler h (SIG_DFL, SIG_IGN or a
 * function). */
static bool action_is(int sig, void (*h)(int))
{
    struct sigaction cur;
    CHECK_EQ(sigaction(sig, NULL, &cur), 0);
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == h;
}

/* The signals the cases use get their default action, whatever the
 * process inherited (a shell starts background jobs with SIGINT and
 * SIGQUIT ignored).  Before gort_main, which installs its SIGQUIT
 * handler only over the default. */
static void defaults(void)
{
    static const int sigs[] = {SIGUSR1, SIGUSR2, SIGINT,  SIGTERM,
                               SIGQUIT, SIGCHLD, SIGPIPE, SIGWINCH};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        CHECK(signal(sigs[i], SIG_DFL) != SIG_ERR);
}

/* Every action of signals 1..64 (those sigaction can name). */
struct actions {
    struct sigaction sa[65];
    bool ok[65];
};

static void snapshot(struct actions *a)
{
    for (int s = 1; s <= 64; s++)
        a->ok[s] = sigaction(s, NULL, &a->sa[s]) == 0;
}

/* The signal whose action differs from a's, or 0. */
static int changed_since(const struct actions *a)
{
    struct actions now;
    snapshot(&now);
    for (int s = 1; s <= 64; s++) {
        if (now.ok[s] != a->ok[s])
            return s;
        if (!now.ok[s])
            continue;
        const struct sigaction *x = &a->sa[s], *y = &now.sa[s];
        if ((x->sa_flags & SA_SIGINFO) != (y->sa_flags & SA_SIGINFO))
            return s;
        if ((x->sa_flags & SA_SIGINFO) ? x->sa_sigaction != y->sa_sigaction
                                       : x->sa_handler != y->sa_handler)
            return s;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Delivery.
 * ------------------------------------------------------------------------- */

static void raise_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 4);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR1);
    CHECK_EQ(kill(getpid(), SIGUSR1), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR1);
    /* Signals of one number that arrive before they are handed out are
     * one delivery (the round may come between, so one or two). */
    CHECK_EQ(gort_signal_stop(ch), 0);
    CHECK_EQ(gort_signal_notify(ch, (const int[]){SIGUSR1}, 1), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR1);
    round_done();
    size_t more = gort_chan_len(ch);
    CHECK_LE(more, 1);
    CHECK_EQ(gort_signal_stop(ch), 0);
    free_chan(ch);
}

/* raise(SIGUSR1) and kill(getpid(), SIGUSR1) reach a notified channel;
 * two raised before delivery are one or two values, never more. */
TEST(raise_delivered)
{
    defaults();
    run_main(raise_main, NULL);
    /* Back to the default action (a raise now would end the process). */
    CHECK(action_is(SIGUSR1, SIG_DFL));
}

static void several_main(void *arg)
{
    (void)arg;
    gort_chan *a = make_chan(sizeof(int), 8);
    gort_chan *b = make_chan(sizeof(int), 8);
    gort_chan *c = make_chan(sizeof(int), 64);
    install_counter(SIGUSR1);
    install_counter(SIGUSR2);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(a, SIGUSR1, SIGUSR2), 0);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(b, SIGUSR2), 0);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(c, SIGWINCH), 0);
    /* SIGUSR1: a only. */
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(recv_sig(a), SIGUSR1);
    round_done();
    CHECK(!has_value(b));
    CHECK(!has_value(c));
    /* SIGUSR2: a and b. */
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(recv_sig(a), SIGUSR2);
    CHECK_EQ(recv_sig(b), SIGUSR2);
    round_done();
    CHECK(!has_value(a));
    CHECK(!has_value(c));
    /* Notify again adds: b now takes SIGUSR1 as well, once each. */
    CHECK_EQ(GORT_SIGNAL_NOTIFY(b, SIGUSR1, SIGUSR2), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(recv_sig(b), SIGUSR1);
    CHECK_EQ(recv_sig(a), SIGUSR1);
    round_done();
    CHECK(!has_value(a));
    CHECK(!has_value(b));
    /* Two signals pending in one round come out in ascending order. */
    CHECK_EQ(GORT_SIGNAL_NOTIFY(c, SIGUSR2, SIGUSR1), 0);
    gort_preempt_disable();
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    /* Both become pending on this thread, then arrive together. */
    pthread_sigmask(SIG_BLOCK, &set, &old);
    raise(SIGUSR2);
    raise(SIGUSR1);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    gort_preempt_enable();
    int first = recv_sig(c), second = recv_sig(c);
    CHECK((first == SIGUSR1 && second == SIGUSR2) ||
          (first == SIGUSR2 && second == SIGUSR1));
    CHECK_EQ(recv_sig(a), first);
    CHECK_EQ(recv_sig(a), second);
    CHECK_EQ(recv_sig(b), first);
    CHECK_EQ(recv_sig(b), second);
    round_done();
    CHECK(!has_value(a));
    CHECK(!has_value(b));
    CHECK(!has_value(c));
    /* Stopping a leaves b and c getting them; the program's handler is
     * not called while any channel wants the signal. */
    CHECK_EQ(gort_signal_stop(a), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(recv_sig(b), SIGUSR2);
    CHECK_EQ(recv_sig(c), SIGUSR2);
    round_done();
    CHECK(!has_value(a));
    CHECK_EQ(handled_count(SIGUSR1), 0);
    CHECK_EQ(handled_count(SIGUSR2), 0);
    /* Every channel stopped: the program's handler has them again. */
    CHECK_EQ(gort_signal_stop(b), 0);
    CHECK_EQ(gort_signal_stop(c), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(handled_count(SIGUSR2), 1);
    CHECK(action_is(SIGUSR2, count_handler));
    free_chan(a);
    free_chan(b);
    free_chan(c);
}

/* Three channels over SIGUSR1, SIGUSR2 and SIGWINCH: each gets what it
 * asked for and nothing else; notifying again adds signals; two pending
 * at once both come; after the last stop the program's handler (installed
 * before the first notify) gets the signal again. */
TEST(several_signals_channels)
{
    defaults();
    run_main(several_main, NULL);
}

static void full_main(void *arg)
{
    (void)arg;
    gort_chan *small = make_chan(sizeof(int), 1);
    gort_chan *big = make_chan(sizeof(int), 16);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(small, SIGUSR1), 0);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(big, SIGUSR1), 0);
    /* One at a time (big's value says each round has been): small keeps
     * the first and misses the other four. */
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(raise(SIGUSR1), 0);
        CHECK_EQ(recv_sig(big), SIGUSR1);
    }
    round_done();
    CHECK_EQ(gort_chan_len(small), 1);
    CHECK(has_value(small));
    CHECK(!has_value(small));
    CHECK_EQ(gort_signal_stop(small), 0);
    CHECK_EQ(gort_signal_stop(big), 0);
    free_chan(small);
    free_chan(big);
}

/* A channel with no room misses signals (the sender never blocks): five
 * signals, one at a time, leave one value in a channel of capacity 1,
 * while a roomy channel gets all five. */
TEST(full_channel_drops)
{
    run_main(full_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Stop.
 * ------------------------------------------------------------------------- */

static void stop_main(void *arg)
{
    (void)arg;
    install_counter(SIGUSR1);
    gort_chan *ch = make_chan(sizeof(int), 4);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1), 0);
    CHECK(!action_is(SIGUSR1, count_handler));
    /* Arrived before stop: still delivered, by the time stop returns. */
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(gort_signal_stop(ch), 0);
    CHECK_EQ(gort_chan_len(ch), 1);
    CHECK(has_value(ch));
    /* After: the program's handler, which was there first. */
    CHECK(action_is(SIGUSR1, count_handler));
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(handled_count(SIGUSR1), 1);
    gort_sleep(20 * MS);
    CHECK(!has_value(ch));
    /* Stop again, and stop of a channel never notified: nothing. */
    CHECK_EQ(gort_signal_stop(ch), 0);
    gort_chan *other = make_chan(sizeof(int), 1);
    CHECK_EQ(gort_signal_stop(other), 0);
    free_chan(other);
    free_chan(ch);
}

/* A signal raised before stop reaches the channel by the time stop
 * returns; after stop nothing does, and the handler the program had
 * installed before the notify gets the signal. */
TEST(stop_restores)
{
    run_main(stop_main, NULL);
}

#define STORM_WORKERS 4

static int storm_stop;
static long storm_sent;
static int storm_received;

static void *storm_thread(void *arg)
{
    (void)arg;
    while (!ATOMIC_LOAD(&storm_stop)) {
        kill(getpid(), SIGUSR1);
        ATOMIC_INC(&storm_sent);
    }
    return NULL;
}

static gort_waitgroup storm_wg;

static void storm_worker(void *arg)
{
    int iters = (int)(intptr_t)arg;
    for (int i = 0; i < iters; i++) {
        gort_chan *ch = make_chan(sizeof(int), 1 + (size_t)(i % 3));
        CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1), 0);
        /* Stopped at once, after a yield, or after a value. */
        int sig;
        if (i % 3 == 1) {
            gort_gosched();
        } else if (i % 3 == 2 && gort_chan_recv_until(
                                     ch, &sig, gort_deadline_in(2 * MS)) == 1) {
            CHECK_EQ(sig, SIGUSR1);
            ATOMIC_INC(&storm_received);
        }
        CHECK_EQ(gort_signal_stop(ch), 0);
        /* Freed at once: a send still to come would write freed memory
         * (AddressSanitizer reports it). */
        free_chan(ch);
    }
    gort_waitgroup_done(&storm_wg);
}

static void storm_main(void *arg)
{
    (void)arg;
    /* Between one channel's stop and the next one's notify, the signal
     * goes to the program's handler. */
    install_counter(SIGUSR1);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, storm_thread, NULL), 0);
    int iters = SANITIZED ? 600 : 3000;
    gort_waitgroup_add(&storm_wg, STORM_WORKERS);
    for (int i = 0; i < STORM_WORKERS; i++)
        CHECK_GT(gort_go(storm_worker, (void *)(intptr_t)iters), 0);
    gort_waitgroup_wait(&storm_wg);
    ATOMIC_STORE(&storm_stop, 1);
    CHECK_EQ(GORT_BLOCKING(pthread_join(t, NULL)), 0);
    say("sent %ld, received %d, handled by the program %d\n",
        ATOMIC_LOAD(&storm_sent), ATOMIC_LOAD(&storm_received),
        handled_count(SIGUSR1));
    CHECK_GT(ATOMIC_LOAD(&storm_received), 0);
    CHECK(action_is(SIGUSR1, count_handler));
}

/* A plain thread sends SIGUSR1 to the process without pause while four
 * goroutines each notify a new channel, maybe receive, stop it and free
 * it at once, hundreds of times: no send lands on a freed channel (run
 * under AddressSanitizer and ThreadSanitizer), values arrive, and the
 * program's handler is back at the end. */
TEST(stop_races_storm)
{
    run_main(storm_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Senders: other threads, other processes.
 * ------------------------------------------------------------------------- */

static void *raise_thread(void *arg)
{
    (void)arg;
    /* Taken on this thread, which gort knows nothing of. */
    raise(SIGUSR2);
    return NULL;
}

static void foreign_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 4);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1, SIGUSR2), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, raise_thread, NULL), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR2);
    CHECK_EQ(GORT_BLOCKING(pthread_join(t, NULL)), 0);
    /* From another process. */
    pid_t pid = fork();
    CHECK_GE(pid, 0);
    if (pid == 0) {
        kill(getppid(), SIGUSR1);
        _exit(0);
    }
    CHECK_EQ(recv_sig(ch), SIGUSR1);
    int status = 0;
    CHECK_EQ(gort_waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(gort_signal_stop(ch), 0);
    free_chan(ch);
}

/* A signal raised on a thread the program made (no M, no goroutine) and
 * one sent with kill(2) by a child process reach the channel. */
TEST(foreign_thread_and_child)
{
    run_main(foreign_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Ignore, reset, ignored.
 * ------------------------------------------------------------------------- */

static void ignore_main(void *arg)
{
    (void)arg;
    install_counter(SIGUSR1);
    CHECK_EQ(gort_signal_ignored(SIGUSR1), 0);
    gort_chan *ch = make_chan(sizeof(int), 4);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1, SIGUSR2), 0);
    /* Ignore takes SIGUSR1 from the channel, which keeps SIGUSR2. */
    CHECK_EQ(gort_signal_ignore((const int[]){SIGUSR1}, 1), 0);
    CHECK_EQ(gort_signal_ignored(SIGUSR1), 1);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR2);
    round_done();
    CHECK(!has_value(ch));
    CHECK_EQ(handled_count(SIGUSR1), 0);
    /* Notify undoes the ignore. */
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1), 0);
    CHECK_EQ(gort_signal_ignored(SIGUSR1), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR1);
    /* Reset: no channel, and the action from before gort took it. */
    CHECK_EQ(gort_signal_reset((const int[]){SIGUSR1, SIGUSR2}, 2), 0);
    CHECK(action_is(SIGUSR1, count_handler));
    CHECK(action_is(SIGUSR2, SIG_DFL));
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(handled_count(SIGUSR1), 1);
    gort_sleep(20 * MS);
    CHECK(!has_value(ch));
    /* Ignore then reset, with no channel ever. */
    CHECK_EQ(gort_signal_ignore((const int[]){SIGUSR1}, 1), 0);
    CHECK(action_is(SIGUSR1, SIG_IGN));
    CHECK_EQ(gort_signal_reset((const int[]){SIGUSR1}, 1), 0);
    CHECK(action_is(SIGUSR1, count_handler));
    /* The whole-set forms: ignore all but SIGURG, reset all. */
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR2), 0);
    CHECK_EQ(gort_signal_ignore(NULL, 0), 0);
    CHECK_EQ(gort_signal_ignored(SIGUSR2), 1);
    CHECK_EQ(gort_signal_ignored(SIGTERM), 1);
    CHECK_EQ(gort_signal_ignored(SIGURG), 0);
    CHECK_EQ(raise(SIGTERM), 0); /* ignored: the process goes on */
    CHECK_EQ(gort_signal_reset(NULL, 0), 0);
    CHECK_EQ(gort_signal_ignored(SIGTERM), 0);
    CHECK(action_is(SIGTERM, SIG_DFL));
    CHECK(action_is(SIGUSR1, count_handler));
    CHECK(action_is(SIGUSR2, SIG_DFL));
    CHECK_EQ(gort_signal_stop(ch), 0);
    free_chan(ch);
}

/* gort_signal_ignore takes a signal from its channels and ignores it;
 * a notify takes it back; gort_signal_reset puts back the action from
 * before gort took it (the program's handler, or the default), also for
 * the all-signals forms; gort_signal_ignored follows. */
TEST(ignore_reset_ignored)
{
    defaults();
    run_main(ignore_main, NULL);
    CHECK(action_is(SIGUSR1, count_handler));
}

static void ignore_at_exit_main(void *arg)
{
    (void)arg;
    CHECK_EQ(gort_signal_ignore((const int[]){SIGUSR2}, 1), 0);
    CHECK_EQ(gort_signal_ignored(SIGUSR2), 1);
}

/* An ignore still in force when gort_main returns is undone then. */
TEST(ignore_undone_at_exit)
{
    defaults();
    run_main(ignore_at_exit_main, NULL);
    CHECK_EQ(gort_signal_ignored(SIGUSR2), 0);
    CHECK(action_is(SIGUSR2, SIG_DFL));
}

/* ---------------------------------------------------------------------------
 * gort's own signals.
 * ------------------------------------------------------------------------- */

static void quit_main(void *arg)
{
    (void)arg;
    struct sigaction gorts;
    CHECK_EQ(sigaction(SIGQUIT, NULL, &gorts), 0);
    CHECK(gorts.sa_flags & SA_SIGINFO); /* the goroutine dump */
    gort_chan *ch = make_chan(sizeof(int), 1);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGQUIT), 0);
    /* No dump, no exit: the channel has it. */
    CHECK_EQ(raise(SIGQUIT), 0);
    CHECK_EQ(recv_sig(ch), SIGQUIT);
    CHECK_EQ(gort_signal_stop(ch), 0);
    struct sigaction now;
    CHECK_EQ(sigaction(SIGQUIT, NULL, &now), 0);
    CHECK(now.sa_flags & SA_SIGINFO);
    CHECK(now.sa_sigaction == gorts.sa_sigaction);
    free_chan(ch);
}

/* A notified SIGQUIT goes to the channel instead of dumping and exiting;
 * stop gives it back gort's dump handler. */
TEST(quit_notified)
{
    defaults();
    run_main(quit_main, NULL);
}

static int urg_flag;

static __attribute__((noinline)) void urg_spin(void *arg)
{
    (void)arg;
    volatile uint64_t n = 0;
    while (!__atomic_load_n(&urg_flag, __ATOMIC_RELAXED))
        n = n + 1;
}

static void *urg_fallback(void *arg)
{
    (void)arg;
    usleep(20 * 1000 * 1000);
    ATOMIC_STORE(&urg_flag, 1);
    return NULL;
}

static bool async_preempt(void)
{
#if defined(__SANITIZE_THREAD__)
    return false;
#else
    const char *emu = getenv("GORT_TEST_EMULATOR");
    return !(emu && *emu);
#endif
}

static void urg_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 64);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGURG), 0);
    CHECK_EQ(raise(SIGURG), 0);
    CHECK_EQ(recv_sig(ch), SIGURG);
    if (async_preempt()) {
        /* Preemption still works: on one P, main runs again only if the
         * spinner (plain code, no call) is preempted. */
        gort_gomaxprocs(1);
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, urg_fallback, NULL), 0);
        CHECK_EQ(pthread_detach(t), 0);
        int64_t t0 = gort_nanotime();
        CHECK_GT(gort_go(urg_spin, NULL), 0);
        gort_sleep(MS); /* the spinner runs */
        int64_t took = gort_nanotime() - t0;
        ATOMIC_STORE(&urg_flag, 1);
        say("main ran again after %.1f ms\n", (double)took / 1e6);
        CHECK_LT(took, 10 * SECOND);
    }
    CHECK_EQ(gort_signal_stop(ch), 0);
    free_chan(ch);
}

/* SIGURG, gort's preemption signal, may be notified: the channel gets it
 * and a goroutine spinning in plain code on the only P is still
 * preempted (where asynchronous preemption is on). */
TEST(urg_notified)
{
    run_main(urg_main, NULL);
}

static void pipe_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 4);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGPIPE), 0);
    int fds[2];
    CHECK_EQ(gort_pipe(fds), 0);
    CHECK_EQ(gort_close(fds[0]), 0);
    /* gort's write fails with -EPIPE, and the signal reaches the
     * channel (Go delivers every SIGPIPE to a channel that wants it). */
    CHECK_EQ(gort_write(fds[1], "x", 1), -EPIPE);
    CHECK_EQ(recv_sig(ch), SIGPIPE);
    CHECK_EQ(gort_signal_stop(ch), 0);
    /* Back to gort's own: -EPIPE, and the process lives. */
    CHECK_EQ(gort_write(fds[1], "x", 1), -EPIPE);
    CHECK_EQ(gort_close(fds[1]), 0);
    CHECK(!has_value(ch));
    free_chan(ch);
}

/* A notified SIGPIPE: a gort write to a closed pipe fails with -EPIPE
 * and the channel gets the signal; after stop gort's own handling is
 * back (the write fails, nothing dies). */
TEST(pipe_notified)
{
    run_main(pipe_main, NULL);
}

/* ---------------------------------------------------------------------------
 * Errors.
 * ------------------------------------------------------------------------- */

static void errors_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 1);
    static const int bad[] = {0,       -1,      65,     1000,   SIGKILL,
                              SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                              SIGTRAP, 32,      33};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ(gort_signal_notify(ch, &bad[i], 1), -EINVAL);
        CHECK_EQ(gort_signal_ignore(&bad[i], 1), -EINVAL);
        CHECK_EQ(gort_signal_reset(&bad[i], 1), -EINVAL);
    }
    /* A bad one among good ones: nothing changes. */
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1, SIGSEGV), -EINVAL);
    CHECK(action_is(SIGUSR1, SIG_DFL));
    CHECK_EQ(gort_signal_ignore((const int[]){SIGUSR1, SIGKILL}, 2), -EINVAL);
    CHECK(action_is(SIGUSR1, SIG_DFL));
    /* SIGURG may be notified and reset, not ignored. */
    CHECK_EQ(gort_signal_ignore((const int[]){SIGURG}, 1), -EINVAL);
    CHECK_EQ(gort_signal_reset((const int[]){SIGURG}, 1), 0);
    /* NULL channel, bad counts, NULL list. */
    CHECK_EQ(GORT_SIGNAL_NOTIFY(NULL, SIGUSR1), -EINVAL);
    CHECK_EQ(gort_signal_notify(ch, NULL, 1), -EINVAL);
    CHECK_EQ(gort_signal_notify(ch, (const int[]){SIGUSR1}, -1), -EINVAL);
    CHECK_EQ(gort_signal_ignore(NULL, 1), -EINVAL);
    CHECK_EQ(gort_signal_reset(NULL, -2), -EINVAL);
    CHECK_EQ(gort_signal_stop(NULL), -EINVAL);
    /* Elements that are not ints. */
    gort_chan *wide = make_chan(sizeof(int64_t), 1);
    gort_chan *none = make_chan(0, 1);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(wide, SIGUSR1), -EINVAL);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(none, SIGUSR1), -EINVAL);
    CHECK_EQ(gort_signal_notify(wide, NULL, 0), -EINVAL);
    CHECK(action_is(SIGUSR1, SIG_DFL));
    /* Ignored: numbers only. */
    CHECK_EQ(gort_signal_ignored(0), -EINVAL);
    CHECK_EQ(gort_signal_ignored(65), -EINVAL);
    CHECK_EQ(gort_signal_ignored(SIGKILL), 0);
    free_chan(wide);
    free_chan(none);
    free_chan(ch);
}

/* Out-of-range numbers, SIGKILL, SIGSTOP, the synchronous faults, the C
 * library's own signals, ignoring SIGURG, a NULL channel or list, a bad
 * count and a channel whose elements are not ints: -EINVAL, and nothing
 * changed. */
TEST(errors)
{
    defaults();
    run_main(errors_main, NULL);
}

/* Outside gort_main: -EPERM (ignored works anywhere). */
TEST(outside_main)
{
    defaults();
    gort_chan *ch = make_chan(sizeof(int), 1);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1), -EPERM);
    CHECK_EQ(gort_signal_stop(ch), -EPERM);
    CHECK_EQ(gort_signal_ignore((const int[]){SIGUSR1}, 1), -EPERM);
    CHECK_EQ(gort_signal_reset(NULL, 0), -EPERM);
    CHECK_EQ(gort_signal_ignored(SIGUSR1), 0);
    CHECK(action_is(SIGUSR1, SIG_DFL));
    CHECK_EQ(gort_chan_free(ch), 0);
}

/* ---------------------------------------------------------------------------
 * Processes: a clean exit on SIGINT, the end of gort_main.
 * ------------------------------------------------------------------------- */

static int ready_fd = -1;

static void sigint_child_main(void *arg)
{
    int *got = arg;
    gort_chan *ch = make_chan(sizeof(int), 1);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGINT), 0);
    CHECK_EQ(write(ready_fd, "r", 1), 1);
    /* The only goroutine of the program's waits for the signal: not a
     * deadlock (a signal can still come), as in Go. */
    *got = recv_sig(ch);
}

/* Fork a child that runs gort_main(sigint_child_main), SIGINT ignored
 * first when nohup; send it SIGINT once it is ready; its exit status. */
static int sigint_child(bool nohup)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK_GE(pid, 0);
    if (pid == 0) {
        close(p[0]);
        ready_fd = p[1];
        signal(SIGINT, nohup ? SIG_IGN : SIG_DFL);
        int got = 0;
        if (gort_main(sigint_child_main, &got) != 0 || got != SIGINT)
            _exit(3);
        /* The action from before gort_main is back. */
        if (!action_is(SIGINT, nohup ? SIG_IGN : SIG_DFL))
            _exit(4);
        _exit(0);
    }
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    CHECK_EQ(poll(&pfd, 1, 30000), 1);
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
    close(p[0]);
    CHECK_EQ(kill(pid, SIGINT), 0);
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* A child process whose main goroutine notifies SIGINT and waits for it
 * alone gets it, returns, and exits 0 with SIGINT's earlier action back;
 * also when SIGINT was ignored before (nohup), as Go's Notify does. */
TEST(sigint_child_exits_cleanly)
{
    CHECK_EQ(sigint_child(false), 0);
    CHECK_EQ(sigint_child(true), 0);
}

static gort_chan *left_ch;

static void leave_main(void *arg)
{
    (void)arg;
    gort_chan *ch = left_ch = make_chan(sizeof(int), 1);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR1, SIGQUIT), 0);
    CHECK_EQ(gort_signal_notify(ch, NULL, 0), 0);
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR1);
    /* Returns with ch still notified (freed after gort_main). */
}

static void again_main(void *arg)
{
    (void)arg;
    gort_chan *ch = make_chan(sizeof(int), 1);
    CHECK_EQ(GORT_SIGNAL_NOTIFY(ch, SIGUSR2), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(recv_sig(ch), SIGUSR2);
    CHECK_EQ(gort_signal_stop(ch), 0);
    free_chan(ch);
}

/* gort_main returns normally with a channel still notified of every
 * signal; afterwards every action of signals 1..64 is what it was before
 * (SIGUSR1's default, the program's SIGTERM handler...), no descriptor is
 * left open, and the next gort_main notifies afresh. */
TEST(exit_with_notify_registered)
{
    defaults();
    install_counter(SIGTERM);
    struct actions before;
    snapshot(&before);
    int fds = count_fds();
    run_main(leave_main, NULL);
    /* gort_main has forgotten it: no send can come. */
    free_chan(left_ch);
    CHECK_EQ(changed_since(&before), 0);
    CHECK(action_is(SIGUSR1, SIG_DFL));
    CHECK(action_is(SIGTERM, count_handler));
    CHECK_EQ(count_fds(), fds);
    run_main(again_main, NULL);
    CHECK_EQ(changed_since(&before), 0);
    CHECK_EQ(count_fds(), fds);
}
