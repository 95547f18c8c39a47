/* SPDX-License-Identifier: MIT */
/*
 * gort.hpp - gort for C++: goroutines from any callable, typed channels
 * and the sync primitives as RAII types, header-only over gort.h's C API
 * (docs/cpp.md).
 *
 * Standard: C++17 or later.  gort::go packs a callable and its arguments
 * the way std::thread does and calls them with std::apply and
 * std::invoke (member pointers included); the channel picks how it carries
 * an element at compile time with if constexpr; both are C++17, and
 * writing them again for C++11 or C++14 would be more code than the rest
 * of this header.  gort.h alone stays C99 and C++11.
 *
 * The rules:
 *   - gort::go(f, args...) decay-copies (or moves) f and args into one
 *     heap block that the goroutine owns; the block is destroyed when the
 *     goroutine ends, also by gort_goexit().  It returns the goroutine's
 *     id, throws std::bad_alloc when the block cannot be allocated and
 *     std::system_error (the errno of gort_go, ENOMEM) when gort_go fails.
 *   - No exception crosses a goroutine's start function (gort's C frames
 *     lie below it): one escaping the callable prints
 *     "gort: uncaught exception in goroutine <id>: <what()>" (or the
 *     exception's type when it is not a std::exception) on stderr and calls
 *     std::terminate(), as an exception escaping a std::thread does.  The
 *     same holds for gort::main's callable (goroutine 1).
 *   - gort::chan<T> carries a T that is trivially copyable (and at most
 *     GORT_CHAN_MAX_ELEM bytes) by value, as gort copies elements: bytes.
 *     Any other T (std::string, std::unique_ptr...) is moved into a heap
 *     cell and the cell's pointer travels; the receiver moves the value
 *     out and frees the cell.  Each cell is owned by exactly one side at a
 *     time, and the channel's destructor destroys the values still
 *     buffered, so nothing leaks and nothing is destroyed twice.  Draining
 *     needs gort's channel operations, so a chan of such a T that still
 *     holds values is destroyed while gort_main runs.
 *   - A channel must not be destroyed while goroutines are blocked on
 *     it: the destructor then says so on stderr and calls
 *     std::terminate().  Nor must a mutex, rwmutex, waitgroup or cond,
 *     whose destructors cannot tell (as in C).
 *   - gort_goexit() ends a goroutine without unwinding its stack: the
 *     destructors of the frames between gort::go's callable and the call
 *     do not run (the callable and its arguments are still destroyed).
 *   - Goroutines still alive when gort::main's callable returns are
 *     discarded with their stacks, as in Go: nothing they own is
 *     destroyed, their blocks included.  Wait for them (a
 *     gort::waitgroup, a channel) when their destructors matter.
 */
#ifndef GORT_HPP
#define GORT_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "gort.hpp needs C++17 or later (-std=c++17); C and older C++ use gort.h"
#endif

#include <gort.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#if defined(__has_include)
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#include <cstdlib>
#define GORT_HPP_HAVE_CXXABI 1
#endif
#endif

namespace gort {

namespace detail {

/* Throws std::system_error for the negative errno rc that the gort
 * function `what` returned. */
[[noreturn]] inline void throw_errno(long rc, const char *what)
{
    throw std::system_error(static_cast<int>(-rc), std::generic_category(),
                            what);
}

/* The name of the exception being handled, demangled when the C++ ABI
 * library is there. */
inline void print_uncaught_type(std::int64_t id)
{
#ifdef GORT_HPP_HAVE_CXXABI
    const std::type_info *t = abi::__cxa_current_exception_type();
    if (t) {
        int status = 0;
        char *name = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
        std::fprintf(stderr,
                     "gort: uncaught exception in goroutine %lld: "
                     "exception of type %s\n",
                     static_cast<long long>(id),
                     status == 0 && name ? name : t->name());
        std::free(name);
        return;
    }
#endif
    std::fprintf(stderr,
                 "gort: uncaught exception in goroutine %lld: "
                 "exception of unknown type\n",
                 static_cast<long long>(id));
}

/* Calls fn; an exception escaping it ends the program, saying what it
 * was.  Called from a goroutine's start function, which gort's C frames
 * would otherwise see unwound. */
template <class Fn> void run_guarded(Fn &fn) noexcept
{
    try {
        fn();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gort: uncaught exception in goroutine %lld: %s\n",
                     static_cast<long long>(gort_goid()), e.what());
        std::fflush(stderr);
        std::terminate();
    } catch (...) {
        print_uncaught_type(gort_goid());
        std::fflush(stderr);
        std::terminate();
    }
}

/* A goroutine's block: the decayed callable and arguments. */
template <class F, class... Args> struct task {
    std::tuple<F, Args...> call;

    template <class G, class... A>
    explicit task(G &&g, A &&...a)
        : call(std::forward<G>(g), std::forward<A>(a)...)
    {
    }

    void operator()() { std::apply(invoker{}, std::move(call)); }

    struct invoker {
        template <class G, class... A> void operator()(G &&g, A &&...a) const
        {
            /* The callable's result, if any, is dropped, as by
             * std::thread ([[nodiscard]] included). */
            static_cast<void>(
                std::invoke(std::forward<G>(g), std::forward<A>(a)...));
        }
    };

    static void destroy(void *p) noexcept { delete static_cast<task *>(p); }

    /* The goroutine's start function.  The block is freed by a deferred
     * handler, so that gort_goexit() in the callable frees it too; when
     * no handler can be registered (out of memory), on return. */
    static void start(void *p) noexcept
    {
        task *t = static_cast<task *>(p);
        bool deferred = gort_defer(&task::destroy, p) == 0;
        run_guarded(*t);
        if (!deferred)
            delete t;
    }
};

} // namespace detail

/*
 * Start a goroutine running std::invoke(f, args...) on decayed copies (or
 * moved values) of f and args, as std::thread does: pass std::ref for a
 * reference.  Returns its goroutine id.  Throws std::bad_alloc when the
 * block holding them cannot be allocated, std::system_error with the
 * errno of gort_go (ENOMEM: no stack) when the goroutine cannot start.
 */
template <class F, class... Args> std::int64_t go(F &&f, Args &&...args)
{
    using task = detail::task<std::decay_t<F>, std::decay_t<Args>...>;
    static_assert(std::is_invocable_v<std::decay_t<F>, std::decay_t<Args>...>,
                  "gort::go: f is not callable with these arguments");
    auto t = std::make_unique<task>(std::forward<F>(f),
                                    std::forward<Args>(args)...);
    std::int64_t id = gort_go(&task::start, t.get());
    if (id < 0)
        detail::throw_errno(static_cast<long>(id), "gort_go");
    t.release(); /* the goroutine owns it now */
    return id;
}

/*
 * Boot the runtime, run std::invoke(f, args...) as the main goroutine and
 * return 0 when it returns (gort_main).  Throws std::system_error with
 * gort_main's errno when the runtime cannot start (EBUSY inside another
 * gort::main).  Use it as `int main() { return gort::main(...); }`.
 */
template <class F, class... Args> int main(F &&f, Args &&...args)
{
    using task = detail::task<std::decay_t<F>, std::decay_t<Args>...>;
    task t(std::forward<F>(f), std::forward<Args>(args)...);
    int rc = gort_main(
        [](void *p) { detail::run_guarded(*static_cast<task *>(p)); }, &t);
    if (rc < 0)
        detail::throw_errno(rc, "gort_main");
    return rc;
}

/* Yield the processor (gort_gosched). */
inline void gosched() noexcept { gort_gosched(); }

/* The calling goroutine's id, 0 outside goroutines (gort_goid). */
inline std::int64_t goid() noexcept { return gort_goid(); }

/* Park the calling goroutine for at least d (gort_sleep). */
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period> &d)
{
    gort_sleep(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

/* ---------------------------------------------------------------------------
 * Channels
 * ------------------------------------------------------------------------- */

/* What a non-blocking receive found. */
enum class recv_status {
    value,  /* a value was received */
    closed, /* the channel is closed and drained */
    empty,  /* nothing to receive now */
};

/*
 * A channel of T over gort_chan (see the rules above for how T travels).
 * Not copyable; a moved-from chan is Go's nil channel.
 */
template <class T> class chan {
    static_assert(std::is_object_v<T> && !std::is_const_v<T> &&
                      !std::is_volatile_v<T> && !std::is_array_v<T>,
                  "gort::chan<T>: T must be a non-const object type "
                  "that is not an array");
    static_assert(std::is_move_constructible_v<T>,
                  "gort::chan<T>: T must be move-constructible");

  public:
    /* True when a T travels as bytes, false when through a heap cell. */
    static constexpr bool by_value = std::is_trivially_copyable_v<T> &&
                                     sizeof(T) <= GORT_CHAN_MAX_ELEM;

    /* A channel with cap buffered slots (0: unbuffered).  Throws
     * std::system_error with gort_chan_make's errno (EINVAL, ENOMEM). */
    explicit chan(std::size_t cap = 0)
    {
        int rc = gort_chan_make(&ch_, sizeof(slot), cap);
        if (rc < 0)
            detail::throw_errno(rc, "gort_chan_make");
    }

    chan(const chan &) = delete;
    chan &operator=(const chan &) = delete;
    chan(chan &&o) noexcept : ch_(std::exchange(o.ch_, nullptr)) {}
    chan &operator=(chan &&o) noexcept
    {
        if (this != &o) {
            release();
            ch_ = std::exchange(o.ch_, nullptr);
        }
        return *this;
    }

    /* Destroys the values still buffered, then frees the channel. */
    ~chan() { release(); }

    /* Send v, blocking until a receiver or a buffer slot takes it.  Send
     * on a closed channel is gort's fatal error, as Go's panic. */
    void send(const T &v)
    {
        if constexpr (by_value) {
            gort_chan_send(ch_, &v);
        } else {
            slot p = new T(v);
            gort_chan_send(ch_, &p);
        }
    }
    void send(T &&v)
    {
        if constexpr (by_value) {
            gort_chan_send(ch_, &v);
        } else {
            slot p = new T(std::move(v));
            gort_chan_send(ch_, &p);
        }
    }

    /* Receive into out, blocking until a value comes or the channel is
     * closed and drained.  True for a value; false for the closed channel
     * (out is left alone). */
    bool recv(T &out)
    {
        raw r;
        if (!gort_chan_recv(ch_, &r.s))
            return false;
        take(r.s, out);
        return true;
    }
    /* The same, as an optional: empty for the closed channel. */
    std::optional<T> recv()
    {
        raw r;
        if (!gort_chan_recv(ch_, &r.s))
            return std::nullopt;
        return take(r.s);
    }

    /* Send without blocking: true when the value was sent.  The rvalue
     * form leaves v as it was when nothing is sent. */
    bool try_send(const T &v)
    {
        if constexpr (by_value) {
            return gort_chan_trysend(ch_, &v);
        } else {
            std::unique_ptr<T> p(new T(v));
            slot s = p.get();
            if (!gort_chan_trysend(ch_, &s))
                return false;
            p.release();
            return true;
        }
    }
    bool try_send(T &&v)
    {
        if constexpr (by_value) {
            return gort_chan_trysend(ch_, &v);
        } else {
            std::unique_ptr<T> p(new T(std::move(v)));
            slot s = p.get();
            if (!gort_chan_trysend(ch_, &s)) {
                v = std::move(*p);
                return false;
            }
            p.release();
            return true;
        }
    }

    /* Receive without blocking. */
    recv_status try_recv(T &out)
    {
        raw r;
        bool ok = false;
        if (!gort_chan_tryrecv(ch_, &r.s, &ok))
            return recv_status::empty;
        if (!ok)
            return recv_status::closed;
        take(r.s, out);
        return recv_status::value;
    }

    /* Close: receivers drain the buffer, then see the closed channel.
     * Closing twice is gort's fatal error. */
    void close() { gort_chan_close(ch_); }

    std::size_t len() const noexcept { return gort_chan_len(ch_); }
    std::size_t cap() const noexcept { return gort_chan_cap(ch_); }

    /* The C channel, for gort_select.  Its elements are T when by_value,
     * else T* cells that the receiver must delete. */
    gort_chan *native_handle() const noexcept { return ch_; }

  private:
    /* What gort's channel holds: the T itself, or its cell. */
    using slot = std::conditional_t<by_value, T, T *>;
    /* Room for one slot that gort fills with bytes; no T is constructed
     * in it beforehand, so T need not be default-constructible. */
    union raw {
        raw() noexcept {}
        slot s;
    };

    static void take(slot &s, T &out)
    {
        if constexpr (by_value) {
            out = s;
        } else {
            std::unique_ptr<T> p(s);
            out = std::move(*p);
        }
    }
    static T take(slot &s)
    {
        if constexpr (by_value) {
            return s;
        } else {
            std::unique_ptr<T> p(s);
            return std::move(*p);
        }
    }

    void release() noexcept
    {
        if (!ch_)
            return;
        if constexpr (!by_value) {
            slot s;
            bool ok = false;
            while (gort_chan_len(ch_) > 0 && gort_chan_tryrecv(ch_, &s, &ok) &&
                   ok)
                delete s;
        }
        if (gort_chan_free(ch_) < 0) {
            std::fprintf(stderr, "gort: gort::chan destroyed while goroutines "
                                 "are blocked on it\n");
            std::fflush(stderr);
            std::terminate();
        }
        ch_ = nullptr;
    }

    gort_chan *ch_ = nullptr;
};

/* ---------------------------------------------------------------------------
 * sync.  Each type wraps the C object, zero-initialised at construction
 * (constant initialisation for globals), and is neither copyable nor
 * movable: gort's objects must not move once used.
 * ------------------------------------------------------------------------- */

/* Go's sync.Mutex; Lockable (std::lock_guard, std::unique_lock). */
class mutex {
  public:
    constexpr mutex() noexcept = default;
    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;

    void lock() noexcept { gort_mutex_lock(&m_); }
    bool try_lock() noexcept { return gort_mutex_trylock(&m_); }
    /* Unlock of an unlocked mutex is gort's fatal error. */
    void unlock() noexcept { gort_mutex_unlock(&m_); }
    gort_mutex *native_handle() noexcept { return &m_; }

  private:
    gort_mutex m_ = GORT_MUTEX_INIT;
};

/* Go's sync.RWMutex; Lockable for writers and SharedLockable for readers
 * (std::shared_lock). */
class rwmutex {
  public:
    constexpr rwmutex() noexcept = default;
    rwmutex(const rwmutex &) = delete;
    rwmutex &operator=(const rwmutex &) = delete;

    void lock() noexcept { gort_rwmutex_lock(&rw_); }
    bool try_lock() noexcept { return gort_rwmutex_trylock(&rw_); }
    void unlock() noexcept { gort_rwmutex_unlock(&rw_); }
    void lock_shared() noexcept { gort_rwmutex_rlock(&rw_); }
    bool try_lock_shared() noexcept { return gort_rwmutex_tryrlock(&rw_); }
    void unlock_shared() noexcept { gort_rwmutex_runlock(&rw_); }
    gort_rwmutex *native_handle() noexcept { return &rw_; }

  private:
    gort_rwmutex rw_ = GORT_RWMUTEX_INIT;
};

/* Go's sync.WaitGroup.  A negative counter is gort's fatal error. */
class waitgroup {
  public:
    constexpr waitgroup() noexcept = default;
    waitgroup(const waitgroup &) = delete;
    waitgroup &operator=(const waitgroup &) = delete;

    void add(int delta) noexcept { gort_waitgroup_add(&wg_, delta); }
    void done() noexcept { gort_waitgroup_done(&wg_); }
    /* Park the calling goroutine until the counter is zero. */
    void wait() noexcept { gort_waitgroup_wait(&wg_); }
    gort_waitgroup *native_handle() noexcept { return &wg_; }

  private:
    gort_waitgroup wg_ = GORT_WAITGROUP_INIT;
};

/* Go's sync.Cond, bound to one gort::mutex for its life. */
class cond {
  public:
    explicit cond(mutex &m) noexcept
        : m_(m), c_ GORT_COND_INIT(m.native_handle())
    {
    }
    cond(const cond &) = delete;
    cond &operator=(const cond &) = delete;

    /* With the mutex held: unlock it, park until signalled, lock it. */
    void wait() noexcept { gort_cond_wait(&c_); }
    /* The same through a lock of the cond's mutex; std::invalid_argument
     * when lk does not hold that mutex. */
    void wait(std::unique_lock<mutex> &lk)
    {
        if (lk.mutex() != &m_ || !lk.owns_lock())
            throw std::invalid_argument(
                "gort::cond::wait: the lock must hold the cond's mutex");
        gort_cond_wait(&c_);
    }
    /* Wait until pred() is true (checked with the mutex held). */
    template <class Pred> void wait(std::unique_lock<mutex> &lk, Pred pred)
    {
        while (!pred())
            wait(lk);
    }

    void signal() noexcept { gort_cond_signal(&c_); }
    void broadcast() noexcept { gort_cond_broadcast(&c_); }
    void notify_one() noexcept { signal(); }
    void notify_all() noexcept { broadcast(); }
    gort_cond *native_handle() noexcept { return &c_; }

  private:
    mutex &m_;
    gort_cond c_;
};

/* Go's sync.Once.  An exception thrown by f reaches the caller that ran
 * f, and f counts as done, as a panicking function does in Go's Once. */
class once {
  public:
    constexpr once() noexcept = default;
    once(const once &) = delete;
    once &operator=(const once &) = delete;

    template <class F> void call(F &&f)
    {
        struct ctx {
            std::remove_reference_t<F> *fn;
            std::exception_ptr err;
        } c{&f, nullptr};
        gort_once_do(
            &o_,
            [](void *p) {
                ctx *x = static_cast<ctx *>(p);
                try {
                    std::invoke(*x->fn);
                } catch (...) {
                    x->err = std::current_exception();
                }
            },
            &c);
        if (c.err)
            std::rethrow_exception(c.err);
    }

  private:
    gort_once o_ = GORT_ONCE_INIT;
};

} // namespace gort

#endif /* GORT_HPP */
