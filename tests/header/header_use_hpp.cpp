/* SPDX-License-Identifier: MIT */
/*
 * header_use_hpp.cpp - a translation unit that instantiates every
 * template and calls every member of gort.hpp: gort::go with a lambda, a
 * move-only capture, a function with arguments and a member pointer;
 * gort::main; channels of a trivially copyable struct, of std::string and
 * of std::unique_ptr (each operation); the sync types under
 * std::lock_guard, std::unique_lock and std::shared_lock.
 * tests/header/header_check.sh compiles it for every C++ standard from
 * C++17 with g++ and clang++ under -Wall -Wextra -Wpedantic -Werror, and
 * checks that C++14 is refused with gort.hpp's message.  Compiled, not
 * linked.
 */
#include <gort.hpp>

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

namespace {

struct point {
    int x;
    double y;
};

struct counter {
    int n = 0;
    void bump(int by) { n += by; }
};

gort::mutex mu;
gort::rwmutex rw;
gort::waitgroup wg;
gort::once init_once;

template <class T> void every_op(gort::chan<T> &ch, T v)
{
    ch.send(v);
    ch.send(std::move(v));
    T out{};
    (void)ch.recv(out);
    std::optional<T> o = ch.recv();
    (void)o;
    (void)ch.try_send(out);
    (void)ch.try_send(std::move(out));
    if (ch.try_recv(out) == gort::recv_status::closed)
        return;
    (void)ch.len();
    (void)ch.cap();
    (void)ch.native_handle();
    ch.close();
}

void body(int n, const std::string &name)
{
    gort::chan<point> pts(4);
    every_op(pts, point{n, 1.5});
    gort::chan<std::string> strs(4);
    every_op(strs, name);
    gort::chan<std::unique_ptr<int>> ptrs(1);
    ptrs.send(std::make_unique<int>(n));
    std::unique_ptr<int> p;
    (void)ptrs.recv(p);
    gort::chan<std::string> moved(std::move(strs));
    strs = std::move(moved);

    auto owned = std::make_unique<int>(n);
    gort::go([owned = std::move(owned)] { (void)*owned; });
    gort::go([](int a, std::string s) { (void)(a + s.size()); }, n, name);
    counter c;
    gort::go(&counter::bump, &c, 2);
    gort::go(&counter::bump, std::ref(c), 1);

    {
        std::lock_guard<gort::mutex> g(mu);
    }
    {
        std::unique_lock<gort::mutex> lk(mu, std::try_to_lock);
        gort::cond cv(mu);
        if (lk.owns_lock()) {
            cv.wait(lk, [&] { return c.n > 0; });
            cv.notify_one();
            cv.notify_all();
            cv.signal();
            cv.broadcast();
        }
        (void)cv.native_handle();
    }
    {
        std::shared_lock<gort::rwmutex> r(rw);
    }
    {
        std::unique_lock<gort::rwmutex> w(rw, std::try_to_lock);
    }
    wg.add(1);
    wg.done();
    wg.wait();
    init_once.call([] {});
    gort::gosched();
    gort::sleep_for(std::chrono::milliseconds(1));
    (void)gort::goid();
}

} // namespace

int header_use_hpp_main();
int header_use_hpp_main()
{
    return gort::main(body, 3, std::string("main"));
}
