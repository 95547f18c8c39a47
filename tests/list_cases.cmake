# SPDX-License-Identifier: MIT
# list_cases.cmake - run after a test binary is linked (a POST_BUILD step
# of gort_test, tests/CMakeLists.txt): write the binary's ctest cases, as
# `<binary> --list` prints them (test.h), to OUT for add_cases.cmake.
#
#   cmake -DBINARY=<path> -DOUT=<file> [-DEMULATOR=<command;args>]
#         -P list_cases.cmake
#
# A cross build runs the binary through EMULATOR (CMake's
# CMAKE_CROSSCOMPILING_EMULATOR).  Each line is a case name and its
# options, PROPERTY=value, separated by single spaces.  A line that does
# not parse, a name listed twice or a property not named below fails the
# build, and OUT is then left absent (ctest shows <binary>_NOT_BUILT).

cmake_minimum_required(VERSION 3.16)

# The ctest properties TEST_WITH may set (test.h has a macro for each).
set(allowed RUN_SERIAL RESOURCE_LOCK)

file(REMOVE "${OUT}")
execute_process(COMMAND ${EMULATOR} "${BINARY}" --list
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BINARY} --list failed (${rc}):\n${err}")
endif()

set(seen)
string(REGEX REPLACE "\n$" "" out "${out}")
if(NOT out STREQUAL "")
  string(REPLACE "\n" ";" lines "${out}")
endif()
foreach(line IN LISTS lines)
  string(REPLACE " " ";" words "${line}")
  list(GET words 0 name)
  list(REMOVE_AT words 0)
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${BINARY} --list: bad case name in '${line}'")
  endif()
  if(name IN_LIST seen)
    message(FATAL_ERROR "${BINARY} --list: case '${name}' listed twice")
  endif()
  list(APPEND seen ${name})
  foreach(w IN LISTS words)
    if(NOT w MATCHES "^([A-Z_]+)=(.+)$" OR NOT CMAKE_MATCH_1 IN_LIST allowed)
      message(FATAL_ERROR "${BINARY} --list: case '${name}': option '${w}' "
        "is not PROPERTY=value with a property of: ${allowed}")
    endif()
  endforeach()
endforeach()

file(WRITE "${OUT}.tmp" "${out}\n")
file(RENAME "${OUT}.tmp" "${OUT}")
