# SPDX-License-Identifier: MIT
# add_cases.cmake - read by ctest, not by the configure step: each
# <binary>_tests.cmake, which gort_test (tests/CMakeLists.txt) writes at
# configure time and adds to the directory's TEST_INCLUDE_FILES, includes
# this file and calls gort_add_cases.  Entries come from the case list the
# build wrote (list_cases.cmake); the binary's settings from configure.

# gort_add_cases(<stem> BINARY <path> CASES <file> TIMEOUT <s>
#                [EMULATOR <command;args>] [ENVIRONMENT <k=v;...>]
#                CMAKE <cmake>)
# adds the entry <stem>.<case>, `[emulator] <binary> <case>`, for each
# line of the cases file, with the TIMEOUT, the ENVIRONMENT and the line's
# own PROPERTY=value options; exit status 77 means skipped.  Without the cases file (the binary is not
# built yet) it adds <stem>_NOT_BUILT, which fails saying so.
function(gort_add_cases stem)
  cmake_parse_arguments(A "" "BINARY;CASES;TIMEOUT;CMAKE"
    "EMULATOR;ENVIRONMENT" ${ARGN})
  if(NOT EXISTS "${A_CASES}")
    add_test(${stem}_NOT_BUILT "${A_CMAKE}" -E echo
      "${A_BINARY} is not built (or its --list failed): build first")
    set_tests_properties(${stem}_NOT_BUILT PROPERTIES
      FAIL_REGULAR_EXPRESSION "is not built")
    return()
  endif()
  file(STRINGS "${A_CASES}" lines)
  foreach(line IN LISTS lines)
    string(REPLACE " " ";" words "${line}")
    list(GET words 0 name)
    list(REMOVE_AT words 0)
    set(t ${stem}.${name})
    add_test(${t} ${A_EMULATOR} "${A_BINARY}" ${name})
    # A case that cannot run in this build exits 77 (test.h, TEST_SKIP).
    set_tests_properties(${t} PROPERTIES TIMEOUT ${A_TIMEOUT}
      SKIP_RETURN_CODE 77)
    if(A_ENVIRONMENT)
      set_tests_properties(${t} PROPERTIES ENVIRONMENT "${A_ENVIRONMENT}")
    endif()
    foreach(w IN LISTS words)
      string(REGEX MATCH "^([A-Z_]+)=(.+)$" kv "${w}")
      set_tests_properties(${t} PROPERTIES ${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endforeach()
  endforeach()
endfunction()
