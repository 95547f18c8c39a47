# SPDX-License-Identifier: MIT
# The planted bugs (tests/sim, docs/sim.md "Planted bugs"): small programs
# each holding one concurrency bug that shows only on some interleavings.
# For each, sim.<name> runs tools/gort-shake with PCT from seed 1 until it
# finds the bug (at most 1000 runs), then replays the seed it printed 20
# times and expects the same failure each time (tests/sim/shake_test.py).
# sim.gort_shake checks gort-shake itself: a program that passes, a
# failing program, a replay, and bad arguments.
set(GORT_SIM_PLANTED lost_wakeup map_check_act close_send timer_reset
    lost_update start_order lock_order double_close wg_reuse leak_error)
foreach(p ${GORT_SIM_PLANTED})
  add_executable(sim_${p} ${CMAKE_CURRENT_SOURCE_DIR}/sim/${p}.c)
  target_compile_options(sim_${p} PRIVATE ${GORT_C_FLAGS})
  target_compile_definitions(sim_${p} PRIVATE _GNU_SOURCE)
  target_link_libraries(sim_${p} PRIVATE gort_static)
endforeach()
# Preemption points at function entries (gort_simpoints.h): the same
# program built with them, where the simulation finds its bug, and without,
# where it passes every seed.
add_executable(sim_spin_update ${CMAKE_CURRENT_SOURCE_DIR}/sim/spin_update.c)
target_compile_options(sim_spin_update PRIVATE ${GORT_C_FLAGS}
  -finstrument-functions)
target_compile_definitions(sim_spin_update PRIVATE _GNU_SOURCE WITH_SIMPOINTS)
target_link_libraries(sim_spin_update PRIVATE gort_static)
add_executable(sim_spin_update_plain
  ${CMAKE_CURRENT_SOURCE_DIR}/sim/spin_update.c)
target_compile_options(sim_spin_update_plain PRIVATE ${GORT_C_FLAGS})
target_compile_definitions(sim_spin_update_plain PRIVATE _GNU_SOURCE)
target_link_libraries(sim_spin_update_plain PRIVATE gort_static)
add_executable(sim_passes ${CMAKE_CURRENT_SOURCE_DIR}/sim/passes.c)
target_compile_options(sim_passes PRIVATE ${GORT_C_FLAGS})
target_compile_definitions(sim_passes PRIVATE _GNU_SOURCE)
target_link_libraries(sim_passes PRIVATE gort_static)

if(PYTHON3_EXE AND NOT CMAKE_CROSSCOMPILING)
  set(shake ${PROJECT_SOURCE_DIR}/tools/gort-shake)
  foreach(p ${GORT_SIM_PLANTED})
    add_test(NAME sim.${p} COMMAND ${PYTHON3_EXE}
      ${CMAKE_CURRENT_SOURCE_DIR}/sim/shake_test.py --shake ${shake}
      planted $<TARGET_FILE:sim_${p}>)
    set_tests_properties(sim.${p} PROPERTIES TIMEOUT 120 LABELS sim)
  endforeach()
  add_test(NAME sim.spin_update COMMAND ${PYTHON3_EXE}
    ${CMAKE_CURRENT_SOURCE_DIR}/sim/shake_test.py --shake ${shake}
    planted $<TARGET_FILE:sim_spin_update>)
  add_test(NAME sim.spin_update_plain COMMAND ${PYTHON3_EXE}
    ${CMAKE_CURRENT_SOURCE_DIR}/sim/shake_test.py --shake ${shake}
    clean $<TARGET_FILE:sim_spin_update_plain>)
  set_tests_properties(sim.spin_update sim.spin_update_plain PROPERTIES
    TIMEOUT 120 LABELS sim)
  add_test(NAME sim.gort_shake COMMAND ${PYTHON3_EXE}
    ${CMAKE_CURRENT_SOURCE_DIR}/sim/shake_test.py --shake ${shake}
    self $<TARGET_FILE:sim_passes> $<TARGET_FILE:sim_lost_update>)
  set_tests_properties(sim.gort_shake PROPERTIES TIMEOUT 120 LABELS sim)
endif()
