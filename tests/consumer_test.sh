#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# consumer_test.sh MODE SRC_DIR BUILD_DIR - gort as a program outside this
# tree uses it, built and run from a temporary directory:
#
#   cmake_package   `cmake --install` of BUILD_DIR into a prefix, then a
#                   separate CMake project with find_package(gort
#                   MAJOR.MINOR CONFIG): one program on gort::gort (which
#                   must load libgort.so.N), one on gort::gort_static
#                   (which must not); and find_package requests for
#                   versions this release does not satisfy (for 0.1.0:
#                   0.2, 1.0, 0.0) must fail.
#   subdirectory    a parent project with add_subdirectory(SRC_DIR): it
#                   links gort::gort, gort::gort_static and gort_static;
#                   its ctest lists its own test only, its CMAKE_BUILD_TYPE
#                   stays what it set (empty, then Debug), gort builds no
#                   executable, its `install` installs only its own program,
#                   and none of gort's settings reach its directory scope;
#                   with -DGORT_INSTALL=ON its install installs gort too.
#   pkgconfig_multiarch  the library configured alone for /usr with the
#                   two-level library directory lib/<multiarch>, staged
#                   with DESTDIR; a program built with the staged gort.pc
#                   must compile, link and run, and so must the programs of
#                   cmake_package with the staged CMake package.
#
# Each program checks gort_version() against GORT_VERSION_STRING and sums
# 1..100 in goroutines.  CMAKE and CC in the environment name the tools
# (default cmake, cc).  Exit 0 on success, 1 with the reason on failure,
# 77 when cmake or pkg-config is missing.
set -euo pipefail
mode=$1 src=$(cd "$2" && pwd) build=$(cd "$3" && pwd)
CMAKE=${CMAKE:-cmake}
CC=${CC:-cc}
export CC
command -v "$CMAKE" >/dev/null 2>&1 || { echo "SKIP: cmake ($CMAKE) not found"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL ($mode): $*" >&2; exit 1; }
# run_logged LOG CMD...: run CMD with its output in LOG, shown on failure.
run_logged() {
    local log=$1; shift
    "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "$* failed"; }
}

cat > "$tmp/hello.c" <<'C'
#include <gort.h>
#include <stdio.h>
#include <string.h>
static gort_waitgroup wg;
static int64_t sum;
static void add(void *arg)
{
    __atomic_add_fetch(&sum, (int64_t)(intptr_t)arg, __ATOMIC_RELAXED);
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
}
int main(void)
{
    if (strcmp(gort_version(), GORT_VERSION_STRING) != 0) {
        printf("header %s, library %s\n", GORT_VERSION_STRING, gort_version());
        return 1;
    }
    int rc = gort_main(main_g, NULL);
    printf("sum=%lld version=%s\n", (long long)sum, gort_version());
    return rc;
}
C

# hook.c: a goroutine's read(2) of an empty pipe parks it (gort-hook):
# the metric of parked calls moves, and the writer's byte arrives.
cat > "$tmp/hook.c" <<'C'
#include <gort.h>
#include <stdio.h>
#include <unistd.h>
static int fds[2];
static char got;
static void writer(void *arg)
{
    (void)arg;
    gort_sleep(10 * 1000 * 1000);
    if (write(fds[1], "h", 1) != 1)
        got = '?';
}
static void main_g(void *arg)
{
    (void)arg;
    if (pipe(fds) != 0)
        return;
    gort_go(writer, NULL);
    if (read(fds[0], &got, 1) != 1)
        got = '?';
    gort_metric_sample m = {.name = "/gort/hook/parked:calls"};
    gort_metrics_read(&m, 1);
    printf("got=%c parked=%s\n", got, m.u64 >= 1 ? "yes" : "no");
}
int main(void)
{
    return gort_main(main_g, NULL);
}
C

version=$(sed -n 's/^#define GORT_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
    "$src/include/gort.h" | paste -sd.)
[ -n "$version" ] || fail "no version in $src/include/gort.h"

# check_hook PROGRAM: its read parked through gort-hook.
check_hook() {
    local out
    out=$("$1") || fail "$1 exited with $?: $out"
    [ "$out" = "got=h parked=yes" ] ||
        fail "$1 printed '$out', want 'got=h parked=yes'"
}

# check_run PROGRAM: it prints the sum and the library's version.
check_run() {
    local out
    out=$("$1") || fail "$1 exited with $?: $out"
    [ "$out" = "sum=5050 version=$version" ] ||
        fail "$1 printed '$out', want 'sum=5050 version=$version'"
}

# write_app: a separate CMake project in $tmp/app that finds gort with
# find_package(gort ${WANT} CONFIG REQUIRED) and builds hello_shared on
# gort::gort, hello_static on gort::gort_static, and hook_shared and
# hook_static on gort::hook and gort::hook_static.
write_app() {
    mkdir -p "$tmp/app"
    cp "$tmp/hello.c" "$tmp/hook.c" "$tmp/app/"
    cat > "$tmp/app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(gort ${WANT} CONFIG REQUIRED)
if(NOT TARGET Threads::Threads)
  message(FATAL_ERROR "find_package(gort) did not find Threads::Threads")
endif()
add_executable(hello_shared hello.c)
target_link_libraries(hello_shared PRIVATE gort::gort)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE gort::gort_static)
add_executable(hook_shared hook.c)
target_link_libraries(hook_shared PRIVATE gort::hook)
add_executable(hook_static hook.c)
target_link_libraries(hook_static PRIVATE gort::hook_static)
CM
}

case $mode in
cmake_package)
    run_logged "$tmp/install.log" "$CMAKE" --install "$build" --prefix "$tmp/prefix"
    write_app
    IFS=. read -r major minor _ <<<"$version"
    run_logged "$tmp/cfg.log" "$CMAKE" -S "$tmp/app" -B "$tmp/app-build" \
        -DWANT="$major.$minor" -DCMAKE_PREFIX_PATH="$tmp/prefix"
    run_logged "$tmp/build.log" "$CMAKE" --build "$tmp/app-build"
    check_run "$tmp/app-build/hello_shared"
    check_run "$tmp/app-build/hello_static"
    check_hook "$tmp/app-build/hook_shared"
    check_hook "$tmp/app-build/hook_static"
    if command -v readelf >/dev/null 2>&1; then
        so=$(find "$tmp/prefix" -name libgort.so | head -n 1)
        soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
        [ -n "$soname" ] || fail "the installed $so has no SONAME"
        readelf -d "$tmp/app-build/hello_shared" | grep -qF "[$soname]" ||
            fail "hello_shared (gort::gort) does not load $soname"
        ! readelf -d "$tmp/app-build/hello_static" | grep -q 'NEEDED.*libgort' ||
            fail "hello_static (gort::gort_static) loads libgort.so"
    fi
    # Versions this release does not satisfy (docs/abi.md): a later minor,
    # the next major, and an earlier minor before 1.0 (where each minor
    # release may break compatibility) or the previous major after.
    bad="$major.$((minor + 1)) $((major + 1)).0"
    if [ "$major" -eq 0 ] && [ "$minor" -gt 0 ]; then
        bad="$bad 0.$((minor - 1))"
    elif [ "$major" -gt 0 ]; then
        bad="$bad $((major - 1)).0"
    fi
    for want in $bad; do
        if "$CMAKE" -S "$tmp/app" -B "$tmp/app-build-$want" -DWANT="$want" \
                -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/cfg-$want.log" 2>&1; then
            fail "find_package(gort $want) succeeded against gort $version"
        fi
        grep -q 'version: '"$version" "$tmp/cfg-$want.log" ||
            { cat "$tmp/cfg-$want.log" >&2; fail "find_package(gort $want) failed for another reason than the version"; }
    done
    ;;

subdirectory)
    mkdir -p "$tmp/parent"
    cp "$tmp/hello.c" "$tmp/hook.c" "$tmp/parent/"
    cat > "$tmp/parent/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(parent C)
enable_testing()
set(before_build_type "\${CMAKE_BUILD_TYPE}")
get_directory_property(before_options COMPILE_OPTIONS)
get_directory_property(before_defs COMPILE_DEFINITIONS)
get_directory_property(before_links LINK_OPTIONS)
add_subdirectory([[$src]] gort)
# Nothing of gort's reaches this scope.
foreach(v CMAKE_C_STANDARD CMAKE_C_EXTENSIONS CMAKE_POSITION_INDEPENDENT_CODE
          GORT_SRC GORT_C_FLAGS GORT_TOP_LEVEL GORT_SOVERSION gort_version
          VALGRIND PYTHON3_EXE)
  if(DEFINED \${v})
    message(FATAL_ERROR "gort leaked \${v}=\${\${v}} into the parent")
  endif()
endforeach()
foreach(p COMPILE_OPTIONS COMPILE_DEFINITIONS LINK_OPTIONS)
  get_directory_property(after \${p})
  string(TOLOWER "\${p}" lp)
  if(NOT "\${after}" STREQUAL "\${before_\${lp}}")
    message(FATAL_ERROR "gort changed the parent's \${p}: \${after}")
  endif()
endforeach()
get_property(cached_type CACHE CMAKE_BUILD_TYPE PROPERTY VALUE)
if(NOT "\${CMAKE_BUILD_TYPE}" STREQUAL "\${before_build_type}" OR
   NOT "\${cached_type}" STREQUAL "\${before_build_type}")
  message(FATAL_ERROR "gort changed CMAKE_BUILD_TYPE from '\${before_build_type}' to '\${CMAKE_BUILD_TYPE}' (cache '\${cached_type}')")
endif()
add_executable(hello_shared hello.c)
target_link_libraries(hello_shared PRIVATE gort::gort)
add_executable(hello_static hello.c)
target_link_libraries(hello_static PRIVATE gort::gort_static)
add_executable(hello_plain hello.c)
target_link_libraries(hello_plain PRIVATE gort_static)
add_executable(hook_shared hook.c)
target_link_libraries(hook_shared PRIVATE gort::hook)
add_executable(hook_static hook.c)
target_link_libraries(hook_static PRIVATE gort::hook_static)
add_test(NAME parent_test COMMAND hello_static)
install(TARGETS hello_static DESTINATION bin)
CM
    for type in "" Debug; do
        b=$tmp/parent-build${type:+-$type}
        run_logged "$tmp/cfg.log" "$CMAKE" -S "$tmp/parent" -B "$b" \
            ${type:+-DCMAKE_BUILD_TYPE=$type}
        got=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$b/CMakeCache.txt")
        [ "$got" = "$type" ] || fail "the parent's CMAKE_BUILD_TYPE is '$got', it set '$type'"
    done
    b=$tmp/parent-build
    run_logged "$tmp/build.log" "$CMAKE" --build "$b" -j 2
    for p in hello_shared hello_static hello_plain; do
        check_run "$b/$p"
    done
    check_hook "$b/hook_shared"
    check_hook "$b/hook_static"
    tests=$(cd "$b" && ctest -N | sed -n 's/^ *Test *#[0-9]*: //p')
    [ "$tests" = "parent_test" ] || fail "the parent's ctest lists: $(echo $tests)"
    # gort built its libraries and no program (tests, benchmarks, examples).
    exes=$(find "$b/gort" -type f -perm -u+x ! -name '*.so*' | grep -v '/CMakeFiles/' || true)
    [ -z "$exes" ] || fail "gort built programs in the parent: $exes"
    [ -f "$b/gort/libgort.a" ] || fail "no libgort.a in $b/gort"
    run_logged "$tmp/install.log" "$CMAKE" --install "$b" --prefix "$tmp/pinst"
    installed=$(cd "$tmp/pinst" && find . -type f -o -type l | sort)
    [ "$installed" = "./bin/hello_static" ] ||
        fail "the parent's install installed more than its program: $(echo $installed)"
    # A parent that wants gort installed says so with GORT_INSTALL (the
    # same build: the option changes no object).
    run_logged "$tmp/cfg.log" "$CMAKE" -S "$tmp/parent" -B "$b" -DGORT_INSTALL=ON
    run_logged "$tmp/build.log" "$CMAKE" --build "$b" -j 2
    run_logged "$tmp/install.log" "$CMAKE" --install "$b" --prefix "$tmp/pinst2"
    for f in include/gort.h lib/libgort.a lib/libgort.so.0 lib/pkgconfig/gort.pc \
             lib/libgort-hook.a lib/libgort-hook.so.0 lib/pkgconfig/gort-hook.pc \
             lib/cmake/gort/gortConfig.cmake lib/cmake/gort/gortConfigVersion.cmake; do
        [ -e "$tmp/pinst2/$f" ] || fail "GORT_INSTALL=ON in the parent did not install $f"
    done
    ;;

pkgconfig_multiarch)
    command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: pkg-config not found"; exit 77; }
    arch=$("$CC" -print-multiarch 2>/dev/null || true)
    libdir=lib/${arch:-$(uname -m)-linux-gnu}
    run_logged "$tmp/cfg.log" "$CMAKE" -S "$src" -B "$tmp/build" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
        -DCMAKE_INSTALL_LIBDIR="$libdir" -DGORT_BUILD_TESTS=OFF \
        -DGORT_BUILD_BENCH=OFF -DGORT_BUILD_EXAMPLES=OFF -DGORT_WERROR=OFF
    run_logged "$tmp/build.log" "$CMAKE" --build "$tmp/build" -j 2 --target gort_shared gort_static gort_hook_shared gort_hook_static
    DESTDIR=$tmp/stage run_logged "$tmp/install.log" "$CMAKE" --install "$tmp/build"
    pc=$tmp/stage/usr/$libdir/pkgconfig/gort.pc
    [ -f "$pc" ] || fail "no gort.pc at $pc"
    [ -f "$tmp/stage/usr/$libdir/cmake/gort/gortConfig.cmake" ] ||
        fail "no gortConfig.cmake in usr/$libdir/cmake/gort"
    PKG_CONFIG_PATH=$(dirname "$pc")
    export PKG_CONFIG_PATH
    inc=$(pkg-config --variable=includedir gort)
    lib=$(pkg-config --variable=libdir gort)
    [ "$(cd "$inc" 2>/dev/null && pwd -P)" = "$(cd "$tmp/stage/usr/include" && pwd -P)" ] ||
        fail "gort.pc's includedir is $inc, not the staged usr/include"
    [ "$(cd "$lib" 2>/dev/null && pwd -P)" = "$(cd "$tmp/stage/usr/$libdir" && pwd -P)" ] ||
        fail "gort.pc's libdir is $lib, not the staged usr/$libdir"
    [ "$(pkg-config --modversion gort)" = "$version" ] ||
        fail "gort.pc's version is $(pkg-config --modversion gort), want $version"
    # shellcheck disable=SC2046
    "$CC" -o "$tmp/hello" "$tmp/hello.c" $(pkg-config --cflags --libs gort) ||
        fail "cc with the staged gort.pc failed"
    LD_LIBRARY_PATH=$lib check_run "$tmp/hello"
    # shellcheck disable=SC2046
    "$CC" -o "$tmp/hook" "$tmp/hook.c" $(pkg-config --cflags --libs gort-hook) ||
        fail "cc with the staged gort-hook.pc failed"
    LD_LIBRARY_PATH=$lib check_hook "$tmp/hook"
    # The CMake package of the same staged tree.
    write_app
    run_logged "$tmp/app-cfg.log" "$CMAKE" -S "$tmp/app" -B "$tmp/app-build" \
        -DWANT="$version" -DCMAKE_PREFIX_PATH="$tmp/stage/usr"
    grep -q "^gort_DIR:PATH=$tmp/stage/usr/$libdir/cmake/gort\$" "$tmp/app-build/CMakeCache.txt" ||
        fail "find_package(gort) did not find the staged usr/$libdir/cmake/gort"
    run_logged "$tmp/app-build.log" "$CMAKE" --build "$tmp/app-build"
    check_run "$tmp/app-build/hello_shared"
    check_run "$tmp/app-build/hello_static"
    check_hook "$tmp/app-build/hook_shared"
    check_hook "$tmp/app-build/hook_static"
    ;;

*)
    echo "consumer_test.sh: unknown mode '$mode' (want cmake_package, subdirectory or pkgconfig_multiarch)" >&2
    exit 2
    ;;
esac
echo "consumer test $mode passed"
