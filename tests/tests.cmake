# Every test binary and its cases; each case is its own ctest entry.
gort_test(test_ctx CASES pingpong entry_arg callee_saved fp_control stack_alignment)
gort_test(test_env CASES traceback maxprocs_valid maxprocs_bad debug_keys debug_bad stacksize cgroup_v2 cgroup_v1 cgroup_mount_root cgroup_long_lines cgroup_missing default_procs affinity read_env)
gort_test(test_runq TIMEOUT 300 CASES put_get_order overflow_batch_129 runqempty_and_len globrunqget_batch steal_half steal_stress)
gort_test(test_sched TIMEOUT 180 CASES runnext_order distribution fairness fairness_waitgroup no_early_preempt million park_100k park_million gomaxprocs_change gomaxprocs_concurrent gomaxprocs_no_self_preempt goexit_lifo main_goexit_others_run twice gomaxprocs_query_outside stack_scavenge)
gort_test(test_fatal TIMEOUT 120 CASES deadlock negative_waitgroup stack_overflow stack_overflow_canary stack_overflow_mprotect thread_limit send_closed trysend_closed select_send_closed close_closed close_nil sender_woken_by_close deadlock_chan_recv deadlock_nil_chan deadlock_select_no_cases no_deadlock_timer)
gort_test(test_chan TIMEOUT 180 CASES fifo_buffered fifo_unbuffered_single_sender handoff_unbuffered close_wakes_receivers close_drains_buffer len_cap large_elem nil_chan_blocks trysend_tryrecv chan_free_busy make_bad_args stress_mpmc many_waiters)
gort_test(test_select TIMEOUT 180 CASES fairness default_only_when_nothing_ready nil_channels woken_exactly_once timeout_loop send_and_recv_cases closed_channel_case bad_args select_stress)
gort_test(test_timer TIMEOUT 180 CASES sleep_many sleep_duration after_fires timer_stop_before timer_stop_after timer_reset afterfunc_runs_in_goroutine stop_from_other_p lateness_bound idle_m_wakes_for_timer timer_free_pending)
gort_test(test_env_runtime TIMEOUT 120 CASES maxprocs_abc maxprocs_zero maxprocs_negative maxprocs_huge maxprocs_good debug_bad_schedtrace stacksize_too_small set_stack_size schedtrace_format schedtrace_many_procs scheddetail_format)
gort_test(test_lifecycle TIMEOUT 120 CASES lifecycle)
gort_test(test_sync TIMEOUT 180 CASES mutex_exclusion mutex_trylock mutex_starvation mutex_unlock_unlocked_fatal rwmutex_readers_parallel rwmutex_writer_not_starved rwmutex_runlock_fatal once_exactly_once cond_signal_fifo cond_broadcast sema_many_addresses sema_stress)
gort_test(test_preempt TIMEOUT 120 CASES spin_preempted spin_asyncpreemptoff vector_state malloc_printf_loop preempt_disable user_signals allow_object)
gort_test(test_syscall TIMEOUT 120 CASES handoff_read_pipe handoff_entersyscallblock blocking_macro unwrapped_raw_read threads_100_blocking thread_limit wrappers syscall_on_many_ps)
gort_test(test_lockthread TIMEOUT 120 CASES tid_stable nesting exit_locked_ends_thread main_locked_on_main_thread)
gort_test(test_foreign TIMEOUT 180 CASES foreign_send foreign_go foreign_mutex_select foreign_no_deadlock)
gort_test(test_netpoll TIMEOUT 180 CASES pipe_readers echo_many echo_server read_deadline close_wakes_reader io_wait_dump bad_input short_reads deadline_moved)
gort_test(test_dump TIMEOUT 120 CASES blocked_states wait_minutes locked_to_thread not_started running_and_preempted internal_frames grouped_leak sigquit sigquit_program_handler fatal_backtrace traceback_levels unwind_corrupt bad_fd)
# The same against the shared library: gort's static functions named from
# libgort.so's symbol table (no white-box cases).
gort_test(test_dump_shared SOURCE test_dump LIBRARY gort_shared DEFINES GORT_TEST_SHARED TIMEOUT 120 CASES blocked_states not_started internal_frames grouped_leak sigquit fatal_backtrace)
gort_test(test_metrics TIMEOUT 180 CASES table bad_input waiting running_runnable created threads latencies pauses counters prometheus read_cost)
gort_test(test_trace TIMEOUT 180 CASES full bad_args twice stop_at_exit gortdebug gortdebug_bad drops foreign_threads)
# Goroutine functions are named in the trace through the dynamic symbol
# table; the checker is tests/trace_check.py.
set_target_properties(test_trace PROPERTIES ENABLE_EXPORTS ON)
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
