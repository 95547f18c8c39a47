# Every test binary and its cases; each case is its own ctest entry.
gort_test(test_ctx CASES pingpong entry_arg callee_saved fp_control stack_alignment)
gort_test(test_env CASES traceback maxprocs_valid maxprocs_bad debug_keys debug_bad debug_many_bad stacksize cgroup_v2 cgroup_v1 cgroup_mount_root cgroup_long_lines cgroup_missing default_procs affinity read_env)
gort_test(test_lock TIMEOUT 120 CASES exclusion exclusion_exchange unlock_unlocked lock_order lock_order_cyclic locked_without_lock)
gort_test(test_runq TIMEOUT 300 CASES put_get_order overflow_batch_129 runqempty_and_len globrunqget_batch global_segments steal_half steal_stress)
gort_test(test_sched TIMEOUT 180 CASES runnext_order distribution fairness fairness_waitgroup yield_one_p no_early_preempt million g_reuse park_100k park_million gomaxprocs_change gomaxprocs_concurrent gomaxprocs_no_self_preempt goexit_lifo main_goexit_others_run twice gomaxprocs_query_outside stack_scavenge fp_modes idle_cost sysmon_light_load)
# Counts sysmon's sleeps in 1 s of wall-clock time; other jobs beside it
# make main's P look busy at more of sysmon's rounds.
set_tests_properties(test_sched.sysmon_light_load PROPERTIES RUN_SERIAL TRUE)
gort_test(test_fatal TIMEOUT 120 CASES deadlock negative_waitgroup stack_overflow stack_overflow_canary stack_overflow_mprotect stack_overflow_madvise stack_overflow_canary_unbounded stack_overflow_canary_running thread_limit send_closed trysend_closed select_send_closed close_closed close_nil sender_woken_by_close deadlock_chan_recv deadlock_nil_chan deadlock_select_no_cases no_deadlock_timer no_goroutine_sleep no_goroutine_send throw_runtime_frames)
gort_test(test_chan TIMEOUT 180 CASES fifo_buffered fifo_unbuffered_single_sender handoff_unbuffered close_wakes_receivers close_drains_buffer len_cap large_elem buffered_sizes nil_chan_blocks trysend_tryrecv chan_free_busy make_bad_args stress_mpmc many_waiters)
gort_test(test_select TIMEOUT 180 CASES fairness default_only_when_nothing_ready nil_channels woken_exactly_once timeout_loop send_and_recv_cases closed_channel_case bad_args select_stress)
gort_test(test_timer TIMEOUT 180 CASES sleep_many sleep_duration after_fires timer_stop_before timer_stop_after timer_reset afterfunc_runs_in_goroutine stop_from_other_p lateness_bound idle_m_wakes_for_timer timer_free_pending woken_no_starve)
# Bounds main's wall-clock time on a P overloaded five times over: a test
# running beside it would take half its CPU.
set_tests_properties(test_timer.woken_no_starve PROPERTIES RUN_SERIAL TRUE)
gort_test(test_env_runtime TIMEOUT 120 CASES maxprocs_abc maxprocs_zero maxprocs_negative maxprocs_huge maxprocs_good debug_bad_schedtrace stacksize_too_small set_stack_size schedtrace_format schedtrace_many_procs scheddetail_format)
gort_test(test_lifecycle TIMEOUT 120 CASES lifecycle)
gort_test(test_sync TIMEOUT 180 CASES mutex_exclusion mutex_trylock mutex_starvation mutex_unlock_unlocked_fatal rwmutex_readers_parallel rwmutex_writer_not_starved rwmutex_runlock_fatal once_exactly_once cond_signal_fifo cond_broadcast sema_many_addresses sema_stress)
gort_test(test_preempt TIMEOUT 120 CASES spin_preempted spin_asyncpreemptoff vector_state malloc_printf_loop preempt_disable user_signals allow_object idle_then_spin)
gort_test(test_syscall TIMEOUT 120 CASES handoff_read_pipe handoff_entersyscallblock blocking_macro unwrapped_raw_read threads_100_blocking thread_limit wrappers wrappers_eintr syscall_on_many_ps)
gort_test(test_rawsys TIMEOUT 180 CASES raw_calls_p1 raw_calls_p4 raw_long_sleep blocking_no_eintr raw_after_slice deep_preempt deep_raw_read deep_dump)
gort_test(test_tls TIMEOUT 120 CASES errno_follows errno_kept_by_gort_calls errno_address_stale tls_address_stale pthread_self_changes thread_bound_lock locked_keeps_thread)
gort_test(test_lockthread TIMEOUT 120 CASES tid_stable nesting exit_locked_ends_thread main_locked_on_main_thread)
gort_test(test_foreign TIMEOUT 180 CASES foreign_send foreign_go foreign_mutex_select foreign_no_deadlock foreign_read_only)
gort_test(test_netpoll TIMEOUT 180 CASES pipe_readers echo_many echo_server read_deadline close_wakes_reader io_wait_dump bad_input short_reads deadline_moved close_in_flight close_race sigpipe sigpipe_after_park tcp_inq poll_spin spin_policy)
# tcp_inq counts gort's recvmsg calls through a wrapper, poll_spin its
# epoll_wait calls.
target_link_options(test_netpoll PRIVATE -Wl,--wrap=recvmsg
  -Wl,--wrap=epoll_wait)
# Each opens thousands of loopback connections: not at the same time.
set_tests_properties(test_netpoll.echo_many test_netpoll.echo_server
  PROPERTIES RESOURCE_LOCK loopback_connections)
gort_test(test_dump TIMEOUT 120 CASES blocked_states wait_minutes locked_to_thread not_started running_and_preempted internal_frames grouped_leak sigquit sigquit_program_handler fatal_backtrace traceback_levels unwind_corrupt bad_fd)
# The same against the shared library: gort's static functions named from
# libgort.so's symbol table (no white-box cases).
gort_test(test_dump_shared SOURCE test_dump LIBRARY gort_shared DEFINES GORT_TEST_SHARED TIMEOUT 120 CASES blocked_states not_started internal_frames grouped_leak sigquit fatal_backtrace)
gort_test(test_metrics TIMEOUT 180 CASES table bad_input waiting running_runnable created threads latencies pauses counters prometheus read_cost)
gort_test(test_trace TIMEOUT 180 CASES full bad_args twice stop_at_exit gortdebug gortdebug_bad drops foreign_threads)
# The checker is tests/trace_check.py.
target_compile_definitions(test_trace PRIVATE
  GORT_TRACE_CHECK="${CMAKE_CURRENT_SOURCE_DIR}/trace_check.py")

# The whole lifecycle under Valgrind: no leak, no error.
# Tracing off costs at most 2% of the instructions of spawn and
# chanpingpong (GORT_NO_TRACE build as the baseline, see the script).
if(TARGET gort_notrace)
  add_test(NAME trace.overhead COMMAND ${PYTHON3_EXE}
    ${CMAKE_CURRENT_SOURCE_DIR}/trace_overhead.py ${CMAKE_BINARY_DIR}/bench
    ${CMAKE_BINARY_DIR}/bench)
  set_tests_properties(trace.overhead PROPERTIES TIMEOUT 900
    SKIP_RETURN_CODE 77)
endif()
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT GORT_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME valgrind.lifecycle COMMAND ${VALGRIND} --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 $<TARGET_FILE:test_lifecycle> lifecycle)
  set_tests_properties(valgrind.lifecycle PROPERTIES TIMEOUT 600)
endif()
gort_test(test_gdbtarget CASES)

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
