# SPDX-License-Identifier: MIT
# The C++ interface's tests (include/gort.hpp, tests/cpp/test_cpp.cpp),
# included by tests/CMakeLists.txt.  They are built only when CMake finds
# a C++ compiler, so that a machine with gcc alone still builds and runs
# the rest of the suite; gort.hpp needs C++17.  The cases register as the
# C ones do (gort_test): test_cpp.<case>.
# A cross build takes a C++ compiler only from its toolchain file (check_language
# would find the host's).
include(CheckLanguage)
if(NOT CMAKE_CROSSCOMPILING OR CMAKE_CXX_COMPILER)
  check_language(CXX)
endif()
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  gort_test(test_cpp FILE cpp/test_cpp.cpp TIMEOUT 120)
  set_target_properties(test_cpp PROPERTIES CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
elseif(CMAKE_CROSSCOMPILING)
  message(STATUS "gort: no C++ compiler in the toolchain file: the C++ "
                 "tests (tests/cpp) are not built in this cross build")
else()
  message(STATUS "gort: no C++ compiler found: the C++ tests (tests/cpp) "
                 "are not built (install g++, Debian's package of that name)")
endif()
