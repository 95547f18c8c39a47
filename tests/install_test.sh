#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install_test.sh SRC_DIR BUILD_DIR - `cmake --install` into a temporary
# prefix, then build and run a program against it with pkg-config, once
# with the shared library and once with the static one; and, with gdb
# installed, check that gdb auto-loads tools/gort-gdb.py with the library.
# The program checks gort_version() against the header's
# GORT_VERSION_STRING, and gort.pc's version must be the header's.
# Exit 77 without pkg-config.
set -euo pipefail
src=$1 build=$2
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cat > "$tmp/hello.c" <<'C'
#include <gort.h>
#include <stdio.h>
#include <string.h>
static gort_waitgroup wg;
static int64_t sum;
static void add(void *arg) { __atomic_add_fetch(&sum, (int64_t)(intptr_t)arg, __ATOMIC_RELAXED); gort_waitgroup_done(&wg); }
static void main_g(void *arg) {
    (void)arg;
    if (strcmp(gort_version(), GORT_VERSION_STRING) != 0) {
        printf("library %s, header %s\n", gort_version(), GORT_VERSION_STRING);
        return;
    }
    for (int i = 1; i <= 100; i++) { gort_waitgroup_add(&wg, 1); gort_go(add, (void *)(intptr_t)i); }
    gort_waitgroup_wait(&wg);
    printf("sum=%lld\n", (long long)sum);
}
int main(void) { return gort_main(main_g, NULL); }
C
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig:$tmp/prefix/lib64/pkgconfig:$tmp/prefix/lib/x86_64-linux-gnu/pkgconfig"
version=$(sed -n 's/^#define GORT_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
    "$src/include/gort.h" | paste -sd.)
[ "$(pkg-config --modversion gort)" = "$version" ] ||
    { echo "gort.pc says version $(pkg-config --modversion gort), gort.h $version"; exit 1; }
cc -o "$tmp/hello" "$tmp/hello.c" $(pkg-config --cflags --libs gort)
out=$(LD_LIBRARY_PATH=$(pkg-config --variable=libdir gort) "$tmp/hello")
[ "$out" = "sum=5050" ] || { echo "shared: got '$out', want sum=5050"; exit 1; }
libdir=$(pkg-config --variable=libdir gort)
cc -o "$tmp/hello_static" "$tmp/hello.c" $(pkg-config --cflags gort) "$libdir/libgort.a" -lpthread
out=$("$tmp/hello_static")
[ "$out" = "sum=5050" ] || { echo "static: got '$out', want sum=5050"; exit 1; }
[ -f "$tmp/prefix/share/gort/gort-gdb.py" ] || { echo "share/gort/gort-gdb.py not installed"; exit 1; }
# gdb auto-loads the installed script with the shared library once its
# auto-load directory is trusted.
if command -v gdb >/dev/null 2>&1; then
    auto=$tmp/prefix/share/gdb/auto-load
    out=$(LD_LIBRARY_PATH=$libdir gdb -nx -batch \
        -iex "add-auto-load-scripts-directory $auto" \
        -iex "add-auto-load-safe-path $auto" \
        -ex 'break main' -ex run -ex 'help info goroutines' "$tmp/hello" 2>&1)
    echo "$out" | grep -q '^List the goroutines' ||
        { echo "gdb did not auto-load the installed script:"; echo "$out"; exit 1; }
fi
echo "install test passed"
