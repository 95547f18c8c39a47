# SPDX-License-Identifier: MIT
# Toolchain file: cross-compile gort for AArch64 Linux with the GNU cross
# toolchain (Debian/Ubuntu: gcc-aarch64-linux-gnu libc6-dev-arm64-cross),
# and run the built programs (ctest, try_run) under qemu-user.
#
#   cmake -S . -B build-aarch64 \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#
# GORT_CROSS_PREFIX and GORT_CROSS_SYSROOT may be set (cache or -D) to use
# another triple prefix or target root.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT GORT_CROSS_PREFIX)
  set(GORT_CROSS_PREFIX aarch64-linux-gnu-)
endif()
if(NOT GORT_CROSS_SYSROOT)
  set(GORT_CROSS_SYSROOT /usr/aarch64-linux-gnu)
endif()

set(CMAKE_C_COMPILER ${GORT_CROSS_PREFIX}gcc)
set(CMAKE_ASM_COMPILER ${GORT_CROSS_PREFIX}gcc)
set(CMAKE_AR ${GORT_CROSS_PREFIX}ar CACHE FILEPATH "Archiver")
set(CMAKE_RANLIB ${GORT_CROSS_PREFIX}ranlib CACHE FILEPATH "Ranlib")

# Libraries and headers come from the target root; programs from the host.
set(CMAKE_FIND_ROOT_PATH ${GORT_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# add_test() commands that name a target run through this, so ctest runs
# the tests under qemu; -L points it at the target's dynamic loader.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;${GORT_CROSS_SYSROOT})
