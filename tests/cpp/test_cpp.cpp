/* SPDX-License-Identifier: MIT */
/*
 * test_cpp.cpp - include/gort.hpp, the C++ interface, against its rules
 * (docs/cpp.md): goroutines from lambdas with move-only captures and from
 * functions with decay-copied arguments, typed channels of a struct, of
 * std::string and of std::unique_ptr from many goroutines (counts and
 * per-sender order), close and drain, the channel destructor destroying
 * buffered values exactly once, the sync types under the standard lock
 * guards, and the death of a goroutine that lets an exception escape.
 * Built only when CMake finds a C++ compiler (tests/cpp/cpp.cmake); the
 * cases use the suite's harness (tests/test.h), which is C.
 */
#include <gort.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

extern "C" {
#include "test.h"
}

namespace {

/* A non-trivial element that counts its live instances, constructions
 * and destructions, to find leaks and double destruction. */
struct tracked {
    static std::atomic<long> live;
    static std::atomic<long> made;
    static std::atomic<long> destroyed;
    int value;
    bool alive = true;

    explicit tracked(int v) : value(v) { born(); }
    tracked(const tracked &o) : value(o.value) { born(); }
    tracked(tracked &&o) noexcept : value(o.value) { born(); }
    tracked &operator=(const tracked &) = default;
    tracked &operator=(tracked &&) = default;
    ~tracked()
    {
        CHECK(alive); /* destroyed once */
        alive = false;
        /* Relaxed: plain counters, read after the goroutines that touch
         * them are joined through gort, which orders them. */
        live.fetch_sub(1, std::memory_order_relaxed);
        destroyed.fetch_add(1, std::memory_order_relaxed);
    }

    static void born()
    {
        /* Relaxed, as in the destructor. */
        live.fetch_add(1, std::memory_order_relaxed);
        made.fetch_add(1, std::memory_order_relaxed);
    }
    static void reset()
    {
        live = 0;
        made = 0;
        destroyed = 0;
    }
};
std::atomic<long> tracked::live{0};
std::atomic<long> tracked::made{0};
std::atomic<long> tracked::destroyed{0};

/* Runs fn as the main goroutine with procs Ps, then waits (10 s at most)
 * for every other goroutine to end: those still alive when main returns
 * are discarded with their stacks, and the objects they own are never
 * destroyed (docs/cpp.md), which would hide a real leak among those the
 * AddressSanitizer build reports. */
template <class F> void run(int procs, F &&fn)
{
    int rc = gort::main([&] {
        gort_gomaxprocs(procs);
        fn();
        for (int i = 0; gort_numgoroutine() > 1; i++) {
            CHECK_LT(i, 10000);
            gort::sleep_for(std::chrono::milliseconds(1));
        }
    });
    CHECK_EQ(rc, 0);
}

struct item {
    int sender;
    int seq;
    double pad[3];
};

} // namespace

/* A lambda capturing a std::unique_ptr is moved into the goroutine, runs
 * there (its id is the one gort::go returned) and is destroyed when the
 * goroutine ends; gort::main runs as goroutine 1. */
TEST(go_move_only_capture)
{
    tracked::reset();
    run(2, [] {
        CHECK_EQ(gort::goid(), 1);
        gort::chan<std::int64_t> ids(1);
        gort::chan<int> values(1);
        auto p = std::make_unique<tracked>(42);
        std::int64_t id = gort::go([p = std::move(p), &ids, &values] {
            ids.send(gort::goid());
            values.send(p->value);
        });
        CHECK(p == nullptr);
        CHECK_GT(id, 1);
        CHECK_EQ(*ids.recv(), id);
        CHECK_EQ(*values.recv(), 42);
        /* The goroutine's block is freed after the callable returns. */
        for (int i = 0; i < 1000 && tracked::live.load() != 0; i++)
            gort::sleep_for(std::chrono::milliseconds(1));
        CHECK_EQ(tracked::live.load(), 0);
    });
    CHECK_EQ(tracked::made.load(), tracked::destroyed.load());
}

/* Arguments are decay-copied when gort::go is called, as std::thread does:
 * a later change of the caller's string is not seen, a std::ref is; a
 * member function pointer gets its object. */
TEST(go_arguments)
{
    run(1, [] {
        struct acc {
            int n = 0;
            void add(int by) { n += by; }
        } a;
        std::string s = "before";
        gort::chan<std::string> out(1);
        int seen = 0;
        gort::waitgroup wg;
        wg.add(3);
        gort::go(
            [&out, &wg](std::string copy) {
                out.send(copy);
                wg.done();
            },
            s);
        gort::go(
            [&wg](int &r) {
                r = 7;
                wg.done();
            },
            std::ref(seen));
        gort::go(
            [&wg](acc *x) {
                x->add(5);
                wg.done();
            },
            &a);
        s = "after";
        wg.wait();
        CHECK(*out.recv() == "before");
        CHECK_EQ(seen, 7);
        CHECK_EQ(a.n, 5);
        gort::waitgroup wg2;
        wg2.add(1);
        gort::go(&acc::add, &a, 10);
        gort::go([&wg2] { wg2.done(); });
        wg2.wait();
        for (int i = 0; i < 100 && a.n != 15; i++)
            gort::gosched();
        CHECK_EQ(a.n, 15);
    });
}

/* gort::main inside gort::main throws std::system_error (EBUSY). */
TEST(main_nested_throws)
{
    run(1, [] {
        bool thrown = false;
        try {
            gort::main([] {});
        } catch (const std::system_error &e) {
            thrown = e.code().value() == EBUSY;
        }
        CHECK(thrown);
    });
}

/* 8 goroutines send 2,000 structs each over one buffered channel to main:
 * every value arrives once, each sender's in its order; then 4 receivers
 * share the work and the sum is exact. */
TEST(chan_struct_many)
{
    run(4, [] {
        const int senders = 8, per = 2000;
        gort::chan<item> ch(16);
        static_assert(gort::chan<item>::by_value, "item travels as bytes");
        for (int s = 0; s < senders; s++)
            gort::go([&ch, s] {
                for (int i = 0; i < per; i++)
                    ch.send(item{s, i, {0, 0, 0}});
            });
        std::vector<int> next(senders, 0);
        for (int n = 0; n < senders * per; n++) {
            item it{};
            CHECK(ch.recv(it));
            CHECK_EQ(it.seq, next[it.sender]);
            next[it.sender]++;
        }
        for (int s = 0; s < senders; s++)
            CHECK_EQ(next[s], per);
        CHECK_EQ(ch.len(), 0);

        /* Many receivers: each sums what it gets until close. */
        gort::chan<long> sums(4);
        for (int r = 0; r < 4; r++)
            gort::go([&ch, &sums] {
                long sum = 0;
                item it{};
                while (ch.recv(it))
                    sum += it.seq;
                sums.send(sum);
            });
        gort::waitgroup wg;
        for (int s = 0; s < senders; s++) {
            wg.add(1);
            gort::go([&ch, &wg] {
                for (int i = 0; i < per; i++)
                    ch.send(item{0, i, {0, 0, 0}});
                wg.done();
            });
        }
        wg.wait();
        ch.close();
        long total = 0;
        for (int r = 0; r < 4; r++)
            total += *sums.recv();
        CHECK_EQ(total, (long)senders * per * (per - 1) / 2);
    });
}

/* std::string values from 8 goroutines over an unbuffered and a buffered
 * channel: every string intact and once, in each sender's order. */
TEST(chan_string_many)
{
    for (std::size_t cap : {std::size_t(0), std::size_t(8)}) {
        run(4, [cap] {
            const int senders = 8, per = 1000;
            gort::chan<std::string> ch(cap);
            static_assert(!gort::chan<std::string>::by_value,
                          "strings travel in cells");
            for (int s = 0; s < senders; s++)
                gort::go([&ch, s] {
                    for (int i = 0; i < per; i++)
                        /* Long enough to live on the heap, not in the
                         * string's small buffer. */
                        ch.send("sender " + std::to_string(s) + " value " +
                                std::to_string(i) + std::string(40, 'x'));
                });
            std::vector<int> next(senders, 0);
            for (int n = 0; n < senders * per; n++) {
                std::string v;
                CHECK(ch.recv(v));
                int s = -1, i = -1;
                CHECK_EQ(std::sscanf(v.c_str(), "sender %d value %d", &s, &i),
                         2);
                CHECK(s >= 0 && s < senders);
                CHECK_EQ(i, next[s]);
                CHECK(v.size() > 40 && v.compare(v.size() - 40, 40,
                                                 std::string(40, 'x')) == 0);
                next[s]++;
            }
            CHECK_EQ(ch.len(), 0);
        });
    }
}

/* A move-only element: std::unique_ptr values move through, each owned by
 * one side at a time. */
TEST(chan_unique_ptr)
{
    tracked::reset();
    run(2, [] {
        gort::chan<std::unique_ptr<tracked>> ch(2);
        gort::go([&ch] {
            for (int i = 0; i < 100; i++)
                ch.send(std::make_unique<tracked>(i));
            ch.close();
        });
        int n = 0;
        while (auto p = ch.recv()) {
            CHECK(*p != nullptr);
            CHECK_EQ((*p)->value, n);
            n++;
        }
        CHECK_EQ(n, 100);
    });
    CHECK_EQ(tracked::live.load(), 0);
    CHECK_EQ(tracked::made.load(), tracked::destroyed.load());
}

/* Close and drain: buffered values come out in order after close, then
 * recv returns false (out untouched) and an empty optional, try_recv
 * says closed; close wakes every parked receiver with false. */
TEST(chan_close_drain)
{
    run(2, [] {
        gort::chan<std::string> ch(4);
        CHECK_EQ(ch.cap(), 4);
        ch.send("a");
        ch.send("b");
        ch.send("c");
        CHECK_EQ(ch.len(), 3);
        ch.close();
        std::string v;
        CHECK(ch.recv(v) && v == "a");
        CHECK(*ch.recv() == "b");
        CHECK(ch.try_recv(v) == gort::recv_status::value && v == "c");
        CHECK_EQ(ch.len(), 0);
        v = "untouched";
        CHECK(!ch.recv(v));
        CHECK(v == "untouched");
        CHECK(!ch.recv().has_value());
        CHECK(ch.try_recv(v) == gort::recv_status::closed);

        gort::chan<int> unbuf;
        gort::chan<int> results(10);
        for (int i = 0; i < 10; i++)
            gort::go([&unbuf, &results] {
                int x = 5;
                results.send(unbuf.recv(x) ? 1 : 0);
            });
        for (int i = 0; i < 10; i++)
            gort::gosched();
        unbuf.close();
        int woken = 0;
        for (int i = 0; i < 10; i++) {
            CHECK_EQ(*results.recv(), 0);
            woken++;
        }
        CHECK_EQ(woken, 10);
    });
}

/* Non-blocking operations: try_send on a full channel fails and leaves an
 * rvalue argument as it was; try_recv on an empty one says empty. */
TEST(chan_try)
{
    run(1, [] {
        gort::chan<std::string> ch(1);
        std::string v;
        CHECK(ch.try_recv(v) == gort::recv_status::empty);
        CHECK(ch.try_send(std::string("first")));
        std::string second = "second, long enough to be on the heap";
        CHECK(!ch.try_send(std::move(second)));
        CHECK(second == "second, long enough to be on the heap");
        CHECK(ch.try_recv(v) == gort::recv_status::value && v == "first");
        CHECK(ch.try_send(second));
        CHECK(*ch.recv() == second);

        gort::chan<int> ints(1);
        CHECK(ints.try_send(1));
        CHECK(!ints.try_send(2));
        int x = 0;
        CHECK(ints.try_recv(x) == gort::recv_status::value && x == 1);
        CHECK(ints.try_recv(x) == gort::recv_status::empty);
    });
}

/* The destructor of a channel still holding values destroys each exactly
 * once (tracked counts them; the AddressSanitizer build also finds any
 * leaked cell); a moved-from channel owns nothing. */
TEST(chan_destructor_drains)
{
    tracked::reset();
    run(1, [] {
        {
            gort::chan<tracked> ch(8);
            for (int i = 0; i < 5; i++)
                ch.send(tracked(i));
            CHECK_EQ(ch.len(), 5);
            CHECK_EQ(tracked::live.load(), 5); /* the cells only */
            gort::chan<tracked> moved(std::move(ch));
            CHECK_EQ(moved.len(), 5);
            CHECK_EQ(ch.native_handle(), nullptr);
        }
        CHECK_EQ(tracked::live.load(), 0);
        {
            gort::chan<tracked> ch(4);
            ch.send(tracked(1));
            ch.send(tracked(2));
            ch.close(); /* closed and holding values */
        }
        CHECK_EQ(tracked::live.load(), 0);
    });
    CHECK_EQ(tracked::made.load(), tracked::destroyed.load());
    CHECK_GT(tracked::made.load(), 0);
}

namespace {
/* A read-yield-write increment: without the lock, goroutines interleave
 * between the read and the write and updates are lost.  Relaxed loads and
 * stores: the lock (or nothing, in the racy run) orders them; atomics
 * keep the racy run free of data races in the ThreadSanitizer build. */
void bump(std::atomic<long> &counter)
{
    long v = counter.load(std::memory_order_relaxed);
    gort::gosched();
    counter.store(v + 1, std::memory_order_relaxed);
}
} // namespace

/* 100 goroutines x 100 increments under std::lock_guard<gort::mutex>:
 * exact; the same without the lock loses updates (the check can fail). */
TEST(mutex_lock_guard)
{
    run(4, [] {
        const int gs = 100, per = 100;
        gort::mutex mu;
        std::atomic<long> counter{0};
        gort::waitgroup wg;
        wg.add(gs);
        for (int g = 0; g < gs; g++)
            gort::go([&] {
                for (int i = 0; i < per; i++) {
                    std::lock_guard<gort::mutex> lock(mu);
                    bump(counter);
                }
                wg.done();
            });
        wg.wait();
        CHECK_EQ(counter.load(), gs * per);

        std::atomic<long> racy{0};
        wg.add(gs);
        for (int g = 0; g < gs; g++)
            gort::go([&] {
                for (int i = 0; i < per; i++)
                    bump(racy);
                wg.done();
            });
        wg.wait();
        CHECK_LT(racy.load(), gs * per);

        /* try_lock and std::unique_lock. */
        std::unique_lock<gort::mutex> lk(mu);
        CHECK(!mu.try_lock());
        lk.unlock();
        CHECK(mu.try_lock());
        mu.unlock();
    });
}

/* RWMutex: readers share it through std::shared_lock, a writer excludes
 * them (std::unique_lock); try forms. */
TEST(rwmutex_shared_lock)
{
    run(4, [] {
        gort::rwmutex rw;
        std::atomic<int> readers{0}, max_readers{0};
        std::atomic<bool> writer_in{false};
        gort::waitgroup wg;
        const int n = 16;
        wg.add(n + 4);
        gort::chan<int> gate;
        for (int i = 0; i < n; i++)
            gort::go([&] {
                std::shared_lock<gort::rwmutex> r(rw);
                /* Relaxed: counters checked under the lock's ordering. */
                int now = readers.fetch_add(1, std::memory_order_relaxed) + 1;
                int m = max_readers.load(std::memory_order_relaxed);
                while (now > m && !max_readers.compare_exchange_weak(
                                      m, now, std::memory_order_relaxed))
                    ;
                CHECK(!writer_in.load(std::memory_order_relaxed));
                gort::sleep_for(std::chrono::milliseconds(2));
                readers.fetch_sub(1, std::memory_order_relaxed);
                wg.done();
            });
        for (int i = 0; i < 4; i++)
            gort::go([&] {
                std::unique_lock<gort::rwmutex> w(rw);
                CHECK_EQ(readers.load(std::memory_order_relaxed), 0);
                writer_in.store(true, std::memory_order_relaxed);
                gort::sleep_for(std::chrono::milliseconds(1));
                writer_in.store(false, std::memory_order_relaxed);
                wg.done();
            });
        wg.wait();
        CHECK_GT(max_readers.load(), 1);
        CHECK(rw.try_lock_shared());
        CHECK(!rw.try_lock());
        rw.unlock_shared();
        CHECK(rw.try_lock());
        CHECK(!rw.try_lock_shared());
        rw.unlock();
    });
}

/* WaitGroup: wait returns only after every goroutine called done. */
TEST(waitgroup_waits)
{
    run(2, [] {
        gort::waitgroup wg;
        std::atomic<int> done{0};
        const int n = 50;
        wg.add(n);
        for (int i = 0; i < n; i++)
            gort::go([&wg, &done, i] {
                gort::sleep_for(std::chrono::milliseconds(i % 5));
                /* Relaxed: wait() orders it before main's load. */
                done.fetch_add(1, std::memory_order_relaxed);
                wg.done();
            });
        wg.wait();
        CHECK_EQ(done.load(std::memory_order_relaxed), n);
    });
}

/* Cond: a consumer waits with a predicate through std::unique_lock; a lock
 * of another mutex is refused with std::invalid_argument. */
TEST(cond_wait)
{
    run(2, [] {
        gort::mutex mu, other;
        gort::cond cv(mu);
        std::vector<int> queue;
        gort::waitgroup wg;
        long sum = 0;
        wg.add(1);
        gort::go([&] {
            for (int got = 0; got < 100; got++) {
                std::unique_lock<gort::mutex> lk(mu);
                cv.wait(lk, [&] { return !queue.empty(); });
                sum += queue.back();
                queue.pop_back();
            }
            wg.done();
        });
        for (int i = 0; i < 100; i++) {
            {
                std::lock_guard<gort::mutex> g(mu);
                queue.push_back(i);
            }
            cv.notify_one();
            if (i % 7 == 0)
                gort::gosched();
        }
        wg.wait();
        CHECK_EQ(sum, 99 * 100 / 2);
        std::unique_lock<gort::mutex> wrong(other);
        bool refused = false;
        try {
            cv.wait(wrong);
        } catch (const std::invalid_argument &) {
            refused = true;
        }
        CHECK(refused);
    });
}

/* Once: the function runs once over many goroutines; an exception it
 * throws reaches its caller and it counts as done. */
TEST(once_call)
{
    run(2, [] {
        gort::once o;
        std::atomic<int> calls{0};
        gort::waitgroup wg;
        wg.add(20);
        for (int i = 0; i < 20; i++)
            gort::go([&] {
                /* Relaxed: counted, read after the WaitGroup. */
                o.call([&] { calls.fetch_add(1, std::memory_order_relaxed); });
                wg.done();
            });
        wg.wait();
        CHECK_EQ(calls.load(), 1);
        gort::once t;
        bool caught = false;
        try {
            t.call([] { throw std::runtime_error("once"); });
        } catch (const std::runtime_error &) {
            caught = true;
        }
        CHECK(caught);
        t.call([] { CHECK(false); });
    });
}

/* Children of the death tests: an exception escapes a goroutine. */
TEST_HIDDEN(throw_std_child)
{
    gort::main([] {
        gort::chan<int> never;
        gort::go([] { throw std::runtime_error("boom in a goroutine"); });
        int x;
        never.recv(x);
    });
}
TEST_HIDDEN(throw_int_child)
{
    gort::main([] {
        gort::chan<int> never;
        gort::go([] { throw 42; });
        int x;
        never.recv(x);
    });
}
TEST_HIDDEN(throw_main_child)
{
    gort::main([] { throw std::logic_error("main threw"); });
}
/* Child: a channel destroyed while a goroutine is parked receiving. */
TEST_HIDDEN(chan_busy_child)
{
    gort::main([] {
        gort_gomaxprocs(1);
        auto ch = std::make_unique<gort::chan<int>>();
        gort::go([&ch] {
            int x;
            ch->recv(x);
        });
        for (int i = 0; i < 10; i++)
            gort::gosched();
        ch.reset();
    });
}

namespace {
void expect_death(const char *child, const char *message)
{
    struct test_child r;
    test_run_child(child, nullptr, 60, &r);
    if (r.signal != SIGABRT)
        std::fprintf(stderr, "child %s: exit %d signal %d\n--- stderr ---\n%s\n",
                     child, r.exit_code, r.signal, r.err);
    CHECK_EQ(r.signal, SIGABRT);
    CHECK_STR_CONTAINS(r.err, message);
    test_child_free(&r);
}
} // namespace

/* An exception escaping a goroutine prints its what() (or its type) with
 * the goroutine's id and the program dies by SIGABRT (std::terminate), as
 * on a std::thread; the main goroutine is goroutine 1. */
TEST(uncaught_exception_dies)
{
    expect_death("throw_std_child",
                 "gort: uncaught exception in goroutine 2: boom in a goroutine\n");
    expect_death("throw_int_child",
                 "gort: uncaught exception in goroutine 2: exception of type int\n");
    expect_death("throw_main_child",
                 "gort: uncaught exception in goroutine 1: main threw\n");
}

/* A channel destroyed while a goroutine is blocked on it says so and
 * aborts instead of freeing memory the goroutine still uses. */
TEST(chan_destroyed_busy_dies)
{
    expect_death("chan_busy_child", "gort: gort::chan destroyed while "
                                    "goroutines are blocked on it\n");
}
