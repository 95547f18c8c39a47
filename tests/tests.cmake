# SPDX-License-Identifier: MIT
# Every test binary, one line each with its settings.  Its cases, and what
# each needs of ctest (TEST_WITH), are at their TEST() in the source
# (test.h); each case is its own ctest entry <binary>.<case>.
gort_test(test_ctx)
gort_test(test_env)
# The version macros and the public structs' layout (docs/abi.md).
gort_test(test_abi)
gort_test(test_lock TIMEOUT 120)
gort_test(test_runq TIMEOUT 300)
gort_test(test_sched TIMEOUT 180)
gort_test(test_fatal TIMEOUT 120)
gort_test(test_crash TIMEOUT 120)
gort_test(test_chan TIMEOUT 180)
gort_test(test_select TIMEOUT 180)
# Blocking calls with a deadline (gort.h, "Deadlines").
gort_test(test_deadline TIMEOUT 120)
# What failing calls return, and gort_strerror.
gort_test(test_errors)
# Every documented return value and misuse no other test asserts.  Its
# -ENOMEM cases fail allocations through these wrappers (gort's own
# calls included: the library is linked into the binary).
gort_test(test_returns TIMEOUT 180)
target_link_options(test_returns PRIVATE -Wl,--wrap=malloc
  -Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=aligned_alloc)
# Contexts (gort.h, "Contexts").
gort_test(test_context TIMEOUT 120)
# Signals delivered to channels (gort.h, "Signals delivered to
# channels").
gort_test(test_signal TIMEOUT 120)
gort_test(test_timer TIMEOUT 180)
gort_test(test_env_runtime TIMEOUT 120)
# schedtrace's detail lines against the states they show.
gort_test(test_scheddetail TIMEOUT 120)
gort_test(test_lifecycle TIMEOUT 120)
gort_test(test_sync TIMEOUT 180)
gort_test(test_preempt TIMEOUT 120)
gort_test(test_syscall TIMEOUT 120)
gort_test(test_rawsys TIMEOUT 180)
# gort-hook, linked statically as a program links it (docs/hooks.md):
# its functions then come before a sanitizer's interceptors, which must
# not run the hooks from inside themselves (ThreadSanitizer ignores the
# synchronization of code that runs within an interceptor).  The
# consumer tests (install.*) link the shared one.
gort_test(test_hook LIBRARY gort_hook_static TIMEOUT 60)
# Descriptors closed, dup2'd over and reused under waiting goroutines,
# and the rest of their life cycle, through gort-hook.
gort_test(test_hook_torture LIBRARY gort_hook_static TIMEOUT 120)
gort_test(test_tls TIMEOUT 120)
gort_test(test_lockthread TIMEOUT 120)
gort_test(test_foreign TIMEOUT 180)
gort_test(test_netpoll TIMEOUT 180)
# tcp_inq counts gort's read and recvmsg calls through wrappers, poll_spin
# its epoll_wait calls.
target_link_options(test_netpoll PRIVATE -Wl,--wrap=recvmsg -Wl,--wrap=read
  -Wl,--wrap=epoll_wait)
# Listening and dialing by address (gort.h, "Networks"), over loopback.
gort_test(test_net TIMEOUT 120)
gort_test(test_dump TIMEOUT 120)
# The same against the shared library: gort's static functions named from
# libgort.so's symbol table (no white-box cases).
gort_test(test_dump_shared SOURCE test_dump LIBRARY gort_shared DEFINES GORT_TEST_SHARED TIMEOUT 120)
gort_test(test_metrics TIMEOUT 180)
gort_test(test_trace TIMEOUT 180)
# The checker is tests/trace_check.py.
target_compile_definitions(test_trace PRIVATE
  GORT_TRACE_CHECK="${CMAKE_CURRENT_SOURCE_DIR}/trace_check.py")

# Tracing off costs at most 2% of the instructions of spawn and
# chanpingpong (GORT_NO_TRACE build as the baseline, see the script).
if(TARGET gort_notrace)
  add_test(NAME trace.overhead COMMAND ${PYTHON3_EXE}
    ${CMAKE_CURRENT_SOURCE_DIR}/trace_overhead.py ${CMAKE_BINARY_DIR}/bench
    ${CMAKE_BINARY_DIR}/bench)
  set_tests_properties(trace.overhead PROPERTIES TIMEOUT 900
    SKIP_RETURN_CODE 77)
endif()
# The whole lifecycle under Valgrind: no leak, no error.
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT GORT_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME valgrind.lifecycle COMMAND ${VALGRIND} --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 $<TARGET_FILE:test_lifecycle> lifecycle)
  set_tests_properties(valgrind.lifecycle PROPERTIES TIMEOUT 600)
endif()
# The program tests/gdb_test.sh debugs (gdb.* below, in CMakeLists.txt):
# its one case is hidden, no ctest entry.
gort_test(test_gdbtarget)

# ---------------------------------------------------------------------------
# The program's sanitizer and Valgrind (tests/san, docs/sanitizers.md):
# programs built with -fsanitize=address or -fsanitize=thread, or plain for
# Valgrind, against the ordinary library, static and shared.  A correct
# program (san_clean) must get no report at all; a program with a real bug
# (san_bugs) must get it reported.  They check the ordinary library, so
# they are skipped, with the reason, where it is not built or cannot run:
# in a sanitized build of gort itself, in a cross build, without the
# sanitizer's runtime or without Valgrind.
# ---------------------------------------------------------------------------
include(CheckCSourceCompiles)

# A test that only says why it does not run (ctest shows it as skipped).
function(gort_san_skip name reason)
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E echo "skipped: ${reason}")
  set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "skipped:")
endfunction()

# gort_san_program(<target> <source> <static|shared> [flags...])
function(gort_san_program name src kind)
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE ${GORT_C_FLAGS} -g ${ARGN})
  target_link_options(${name} PRIVATE ${ARGN})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  if(kind STREQUAL "shared")
    target_link_libraries(${name} PRIVATE gort_shared)
  else()
    target_link_libraries(${name} PRIVATE gort_static)
  endif()
endfunction()

# gort_san_test(<name> <clean|report> <regex> ENV <k=v>... COMMAND <cmd>...)
function(gort_san_test name mode regex)
  cmake_parse_arguments(T "" "" "ENV;COMMAND" ${ARGN})
  add_test(NAME ${name}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/san/san_run.sh ${mode} ${regex} ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300)
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()

set(san_cases_asan clean_static clean_shared clean_use_after_return
    exit_in_goroutine use_after_free stack_overflow heap_overflow)
set(san_cases_tsan clean_static clean_shared clean_procs1 race race_procs1
    race_after_chan)
set(san_cases_valgrind clean_static clean_shared heap_overflow use_after_free)

set(san_why "")
if(GORT_SANITIZE)
  set(san_why "gort itself is built with -fsanitize=${GORT_SANITIZE}; these tests check the ordinary library")
elseif(CMAKE_CROSSCOMPILING)
  set(san_why "cross build: the sanitizers and Valgrind do not run under the emulator")
endif()

foreach(tool asan tsan)
  if(tool STREQUAL "asan")
    set(flag address)
  else()
    set(flag thread)
  endif()
  set(why "${san_why}")
  if(NOT why)
    set(CMAKE_REQUIRED_FLAGS -fsanitize=${flag})
    set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=${flag})
    check_c_source_compiles("int main(void) { return 0; }" GORT_CC_HAS_${tool})
    unset(CMAKE_REQUIRED_FLAGS)
    unset(CMAKE_REQUIRED_LINK_OPTIONS)
    if(NOT GORT_CC_HAS_${tool})
      set(why "${CMAKE_C_COMPILER} cannot build and link with -fsanitize=${flag} (is its runtime installed?)")
    endif()
  endif()
  if(why)
    foreach(c ${san_cases_${tool}})
      gort_san_skip(san.${tool}_${c} "${why}")
    endforeach()
    continue()
  endif()
  set(f -fsanitize=${flag} -fno-omit-frame-pointer)
  gort_san_program(san_clean_${tool} san/san_clean.c static ${f})
  gort_san_program(san_clean_${tool}_shared san/san_clean.c shared ${f})
  gort_san_program(san_bugs_${tool} san/san_bugs.c static ${f})
endforeach()

set(asan_env "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1")
if(TARGET san_clean_asan)
  gort_san_test(san.asan_clean_static clean "all parts passed"
    ENV ${asan_env} COMMAND $<TARGET_FILE:san_clean_asan>)
  gort_san_test(san.asan_clean_shared clean "all parts passed"
    ENV ${asan_env} COMMAND $<TARGET_FILE:san_clean_asan_shared>)
  gort_san_test(san.asan_clean_use_after_return clean "all parts passed"
    ENV "${asan_env}:detect_stack_use_after_return=1"
    COMMAND $<TARGET_FILE:san_clean_asan>)
  gort_san_test(san.asan_exit_in_goroutine clean "exit ok"
    ENV ${asan_env} COMMAND $<TARGET_FILE:san_clean_asan> exit)
  gort_san_test(san.asan_use_after_free report
    "AddressSanitizer: heap-use-after-free.*#0 0x[0-9a-f]+ in use_after_free"
    ENV ${asan_env} COMMAND $<TARGET_FILE:san_bugs_asan> use_after_free)
  gort_san_test(san.asan_stack_overflow report
    "AddressSanitizer: stack-buffer-overflow.*#0 0x[0-9a-f]+ in overflow_g"
    ENV ${asan_env} COMMAND $<TARGET_FILE:san_bugs_asan> stack_overflow)
  gort_san_test(san.asan_heap_overflow report
    "AddressSanitizer: heap-buffer-overflow.*#0 0x[0-9a-f]+ in heap_g"
    ENV ${asan_env} COMMAND $<TARGET_FILE:san_bugs_asan> heap_overflow)
endif()

set(tsan_env "TSAN_OPTIONS=halt_on_error=1")
set(race_re "ThreadSanitizer: data race.*#0 racer .*goroutine [0-9]+.*created by")
if(TARGET san_clean_tsan)
  gort_san_test(san.tsan_clean_static clean "all parts passed"
    ENV ${tsan_env} COMMAND $<TARGET_FILE:san_clean_tsan>)
  gort_san_test(san.tsan_clean_shared clean "all parts passed"
    ENV ${tsan_env} COMMAND $<TARGET_FILE:san_clean_tsan_shared>)
  gort_san_test(san.tsan_clean_procs1 clean "all parts passed"
    ENV ${tsan_env} GORTMAXPROCS=1 COMMAND $<TARGET_FILE:san_clean_tsan>)
  gort_san_test(san.tsan_race report "${race_re}"
    ENV ${tsan_env} COMMAND $<TARGET_FILE:san_bugs_tsan> race)
  gort_san_test(san.tsan_race_procs1 report "${race_re}"
    ENV ${tsan_env} GORTMAXPROCS=1 COMMAND $<TARGET_FILE:san_bugs_tsan> race)
  gort_san_test(san.tsan_race_after_chan report "${race_re}"
    ENV ${tsan_env} COMMAND $<TARGET_FILE:san_bugs_tsan> race_after_chan)
endif()

# Valgrind: the ordinary programs under Memcheck.  gort registers its
# stacks only when <valgrind/valgrind.h> was there when it was built
# (GORT_HAVE_VALGRIND_H, checked in the top-level CMakeLists.txt).
set(why "${san_why}")
if(NOT why AND NOT VALGRIND)
  set(why "valgrind is not installed")
elseif(NOT why AND NOT GORT_HAVE_VALGRIND_H)
  set(why "gort was built without <valgrind/valgrind.h>, so it cannot register its stacks with Valgrind")
endif()
if(why)
  foreach(c ${san_cases_valgrind})
    gort_san_skip(san.valgrind_${c} "${why}")
  endforeach()
else()
  gort_san_program(san_clean_plain san/san_clean.c static)
  gort_san_program(san_clean_plain_shared san/san_clean.c shared)
  gort_san_program(san_bugs_plain san/san_bugs.c static)
  set(vg ${VALGRIND} -q --error-exitcode=1)
  gort_san_test(san.valgrind_clean_static clean "all parts passed"
    COMMAND ${vg} $<TARGET_FILE:san_clean_plain>)
  gort_san_test(san.valgrind_clean_shared clean "all parts passed"
    COMMAND ${vg} $<TARGET_FILE:san_clean_plain_shared>)
  gort_san_test(san.valgrind_heap_overflow report
    "Invalid read of size 1.*at 0x[0-9A-F]+: heap_g"
    COMMAND ${vg} $<TARGET_FILE:san_bugs_plain> heap_overflow)
  gort_san_test(san.valgrind_use_after_free report
    "Invalid read of size 1.*at 0x[0-9A-F]+: use_after_free"
    COMMAND ${vg} $<TARGET_FILE:san_bugs_plain> use_after_free)
endif()
# The deterministic simulation mode (GORTDEBUG=sim, docs/sim.md), in
# child processes.
gort_test(test_sim TIMEOUT 120)
