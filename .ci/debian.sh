#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# .ci/debian.sh - the Debian packages (debian/): build libgort0,
# libgort-hook0 and libgort-dev with dpkg-buildpackage in a copy of the
# tree (it writes into the parent directory and leaves build files
# behind, so never in the checkout), check them with lintian (failing on
# errors), install them, build a small gort program against the
# installed packages with pkg-config and with CMake's find_package(gort
# CONFIG), shared and static, run each and check its output, and remove
# the packages again.
#
#   JOBS=4 .ci/debian.sh        (default 2 build and test jobs)
#
# Installs what it needs with apt-get when missing (as root or through
# sudo, non-interactively): dpkg-dev, lintian and debian/control's
# Build-Depends (apt-get build-dep).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
jobs=${JOBS:-2}

stage() { printf '\n---- debian: %s ----\n' "$*"; }
fail() { echo "debian.sh: $*" >&2; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
apt_get() { as_root env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = 'install ok installed' ]; }

[ -f debian/control ] || fail "no debian/control in $root"

tmp=$(mktemp -d)
packages_in=0
cleanup() {
    status=$?
    if [ "$packages_in" = 1 ]; then
        apt_get purge -y -qq libgort-dev libgort-hook0 libgort0 >/dev/null || status=1
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT

# The tree as it is in the work tree, uncommitted changes included:
# git's list of tracked and untracked-but-not-ignored files in a checkout
# (so no build directory comes along), else everything but build*/.
src=$tmp/gort
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files -z --cached --others --exclude-standard |
        (cd "$root" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
        tar -C "$root" --null -T - -cf - | tar -C "$src" -xf -
else
    tar -C "$root" --exclude=./.git --exclude='./build*' --exclude='./obj-*' \
        -cf - . | tar -C "$src" -xf -
fi

need=()
for p in dpkg-dev lintian pkgconf cmake gcc; do
    installed "$p" || need+=("$p")
done
stage "build dependencies"
apt_get update -qq
if [ ${#need[@]} -gt 0 ]; then
    apt_get install -y -qq "${need[@]}"
fi
apt_get build-dep -y -qq "$src"

stage "dpkg-buildpackage -b"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b)
changes=$(ls "$tmp"/gort_*.changes)
ls -l "$tmp"/*.deb

stage "lintian"
lintian --fail-on error --info --display-experimental --pedantic "$changes" ||
    fail "lintian found errors in $changes"

stage "install"
debs=("$tmp"/libgort0_*.deb "$tmp"/libgort-hook0_*.deb "$tmp"/libgort-dev_*.deb)
packages_in=1
apt_get install -y -qq "${debs[@]}"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in /usr/include/gort.h \
         "/usr/lib/$multiarch/libgort.so.0" "/usr/lib/$multiarch/libgort.so" \
         "/usr/lib/$multiarch/libgort.a" "/usr/lib/$multiarch/pkgconfig/gort.pc" \
         "/usr/lib/$multiarch/libgort-hook.so.0" "/usr/lib/$multiarch/libgort-hook.a" \
         "/usr/lib/$multiarch/pkgconfig/gort-hook.pc" \
         "/usr/lib/$multiarch/cmake/gort/gortConfig.cmake" \
         /usr/share/gort/gort-gdb.py; do
    [ -e "$f" ] || fail "$f is not installed"
done

# The program: 100 goroutines add 1..100 under a WaitGroup; it prints the
# sum and the library's version.
work=$tmp/use
mkdir -p "$work"
cat > "$work/hello.c" <<'C'
#include <gort.h>
#include <stdint.h>
#include <stdio.h>

static gort_waitgroup wg;
static gort_mutex mu = GORT_MUTEX_INIT;
static int64_t sum;

static void add(void *arg)
{
    gort_mutex_lock(&mu);
    sum += (int64_t)(intptr_t)arg;
    gort_mutex_unlock(&mu);
    gort_waitgroup_done(&wg);
}

static void main_g(void *arg)
{
    (void)arg;
    for (int i = 1; i <= 100; i++) {
        gort_waitgroup_add(&wg, 1);
        gort_go(add, (void *)(intptr_t)i);
    }
    gort_waitgroup_wait(&wg);
    printf("sum=%lld\n", (long long)sum);
}

int main(void) { return gort_main(main_g, NULL); }
C
want="sum=5050"
# check <what> <program> <shared|static>: runs the program, checks its
# output, and that it uses the installed shared library or none.
check() {
    local what=$1 prog=$2 kind=$3 out libs
    out=$("$prog") || fail "$what: $prog exited with status $?"
    [ "$out" = "$want" ] || fail "$what: printed '$out', want '$want'"
    libs=$(ldd "$prog")
    if [ "$kind" = shared ]; then
        # /lib is /usr/lib on a merged-/usr system.
        grep -Eq "libgort\.so\.0 => (/usr)?/lib/$multiarch/libgort\.so\.0 " <<<"$libs" ||
            fail "$what: not linked with /usr/lib/$multiarch/libgort.so.0: $libs"
    elif grep -q libgort <<<"$libs"; then
        fail "$what: linked with the shared library: $libs"
    fi
    echo "$what: $out"
}

stage "a program built with pkg-config"
cc -o "$work/hello_pc" "$work/hello.c" $(pkg-config --cflags --libs gort)
check "pkg-config, shared" "$work/hello_pc" shared
cc -o "$work/hello_pc_static" "$work/hello.c" $(pkg-config --cflags gort) \
    "$(pkg-config --variable=libdir gort)/libgort.a" -lpthread
check "pkg-config, static" "$work/hello_pc_static" static

stage "a program built with find_package(gort CONFIG)"
cat > "$work/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(hello_gort C)
find_package(gort 0.1 CONFIG REQUIRED)
add_executable(hello_shared hello.c)
target_link_libraries(hello_shared PRIVATE gort::gort)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE gort::gort_static)
CMAKE
cmake -S "$work" -B "$work/build" >/dev/null
grep -q "^gort_DIR:PATH=/usr/lib/$multiarch/cmake/gort$" "$work/build/CMakeCache.txt" ||
    fail "find_package(gort) did not find /usr/lib/$multiarch/cmake/gort: $(grep gort_DIR "$work/build/CMakeCache.txt")"
cmake --build "$work/build" -j "$jobs" >/dev/null
check "find_package, gort::gort" "$work/build/hello_shared" shared
check "find_package, gort::gort_static" "$work/build/hello_static" static

# gdb loads the commands from its own auto-load tree with the library.
if command -v gdb >/dev/null 2>&1; then
    stage "gdb auto-loads gort-gdb.py"
    out=$(gdb -nx -batch -ex 'break main' -ex run -ex 'help info goroutines' \
        "$work/hello_pc" 2>&1) || true
    if grep -q '^List the goroutines' <<<"$out"; then
        echo "gdb: info goroutines is there"
    elif grep -q 'ptrace: Operation not permitted' <<<"$out"; then
        echo "gdb: skipped, gdb may not trace processes here (ptrace)"
    else
        fail "gdb did not auto-load gort-gdb.py with libgort.so.0: $out"
    fi
fi

stage "remove"
apt_get purge -y -qq libgort-dev libgort-hook0 libgort0
packages_in=0
for f in /usr/include/gort.h "/usr/lib/$multiarch/libgort.so.0"; do
    [ ! -e "$f" ] || fail "$f is still there after removal"
done
stage "passed"
