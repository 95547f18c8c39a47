# Every test binary and its cases; each case is its own ctest entry.
gort_test(test_ctx CASES pingpong entry_arg callee_saved fp_control stack_alignment)
gort_test(test_env CASES maxprocs_valid maxprocs_bad debug_keys debug_bad stacksize cgroup_v2 cgroup_v1 cgroup_mount_root cgroup_long_lines cgroup_missing default_procs affinity read_env)
gort_test(test_runq TIMEOUT 300 CASES put_get_order overflow_batch_129 runqempty_and_len globrunqget_batch steal_half steal_stress)
gort_test(test_sched TIMEOUT 180 CASES runnext_order distribution fairness fairness_waitgroup no_early_preempt million park_100k park_million gomaxprocs_change gomaxprocs_concurrent gomaxprocs_no_self_preempt goexit_lifo main_goexit_others_run twice gomaxprocs_query_outside)
gort_test(test_fatal TIMEOUT 120 CASES deadlock negative_waitgroup stack_overflow stack_overflow_canary stack_overflow_mprotect thread_limit)
gort_test(test_env_runtime TIMEOUT 120 CASES maxprocs_abc maxprocs_zero maxprocs_negative maxprocs_huge maxprocs_good debug_bad_schedtrace stacksize_too_small set_stack_size schedtrace_format schedtrace_many_procs scheddetail_format)
gort_test(test_lifecycle TIMEOUT 120 CASES lifecycle)

# The whole lifecycle under Valgrind: no leak, no error.
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT GORT_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  add_test(NAME valgrind.lifecycle COMMAND ${VALGRIND} --leak-check=full --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 $<TARGET_FILE:test_lifecycle> lifecycle)
  set_tests_properties(valgrind.lifecycle PROPERTIES TIMEOUT 600)
endif()
