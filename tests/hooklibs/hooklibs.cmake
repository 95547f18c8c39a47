# SPDX-License-Identifier: MIT
# gort-hook under real, unmodified libraries against real servers
# (tests/hooklibs): hiredis against redis-server, libpq against a
# PostgreSQL cluster made with initdb, libcurl against nginx and against
# gort's http example, and OpenSSL's TLS on both ends of hooked sockets.
# Each ctest entry hooklibs.<case> is hooklibs.py, which starts the server
# on a free port, runs the program and stops the server by its PID.
#
# A case is built only when its library (header and library file) and its
# server are found; at run time it is skipped (77) when something it needs
# is gone: a program, the user postgres when run as root, or enough
# descriptors (RLIMIT_NOFILE's hard limit).  Not in cross builds: the
# servers run on the build machine.
find_program(PYTHON3_EXE python3)
if(CMAKE_CROSSCOMPILING OR NOT PYTHON3_EXE)
  return()
endif()

set(hl_dir ${CMAKE_CURRENT_SOURCE_DIR}/hooklibs)
set(hl_driver ${PYTHON3_EXE} ${hl_dir}/hooklibs.py)

# hl_program(<name> <source> <include dir> <libraries>...): the test
# program hooklibs_<name>, linked with the static gort-hook, whose
# functions then come before a sanitizer's interceptors (tests/tests.cmake,
# test_hook, says why).
function(hl_program name src incdir)
  add_executable(hooklibs_${name} ${hl_dir}/${src})
  target_compile_options(hooklibs_${name} PRIVATE ${GORT_C_FLAGS})
  target_compile_definitions(hooklibs_${name} PRIVATE _GNU_SOURCE)
  target_include_directories(hooklibs_${name} PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR} ${incdir})
  target_link_libraries(hooklibs_${name} PRIVATE gort_hook_static ${ARGN})
endfunction()

# hl_test(<case> <driver arguments>...)
function(hl_test case)
  add_test(NAME hooklibs.${case} COMMAND ${hl_driver} ${case}
    --bin ${CMAKE_CURRENT_BINARY_DIR} ${ARGN})
  # Alone: the thread bound (GOMAXPROCS + 4) is about the hooks, and a
  # machine busy with other tests keeps setup threads around longer.
  set_tests_properties(hooklibs.${case} PROPERTIES TIMEOUT 60
    SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endfunction()

# hiredis, synchronous API, against redis-server.
find_path(HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
find_library(HIREDIS_LIBRARY hiredis)
find_program(REDIS_SERVER redis-server)
if(HIREDIS_INCLUDE_DIR AND HIREDIS_LIBRARY AND REDIS_SERVER)
  hl_program(hiredis hiredis.c ${HIREDIS_INCLUDE_DIR} ${HIREDIS_LIBRARY})
  hl_test(redis --redis-server ${REDIS_SERVER})
endif()

# libpq against PostgreSQL: Debian keeps the server's programs in
# /usr/lib/postgresql/<version>/bin, off PATH.
find_path(LIBPQ_INCLUDE_DIR libpq-fe.h PATH_SUFFIXES postgresql pgsql)
find_library(LIBPQ_LIBRARY pq)
file(GLOB hl_pg_dirs LIST_DIRECTORIES true /usr/lib/postgresql/*/bin)
list(SORT hl_pg_dirs COMPARE NATURAL ORDER DESCENDING)
find_program(PG_CTL pg_ctl HINTS ${hl_pg_dirs})
if(LIBPQ_INCLUDE_DIR AND LIBPQ_LIBRARY AND PG_CTL)
  get_filename_component(hl_pg_bin ${PG_CTL} DIRECTORY)
  hl_program(libpq libpq.c ${LIBPQ_INCLUDE_DIR} ${LIBPQ_LIBRARY})
  hl_test(postgres --pg-bin ${hl_pg_bin})
endif()

# libcurl's easy API against nginx and against gort's http example.
find_path(CURL_INCLUDE_DIR curl/curl.h)
find_library(CURL_LIBRARY curl)
find_program(NGINX_EXE nginx PATHS /usr/sbin /sbin)
if(CURL_INCLUDE_DIR AND CURL_LIBRARY)
  hl_program(curl curl.c ${CURL_INCLUDE_DIR} ${CURL_LIBRARY})
  if(NGINX_EXE)
    hl_test(curl_nginx --nginx ${NGINX_EXE})
  endif()
  if(TARGET example_http)
    hl_test(curl_http --http $<TARGET_FILE:example_http>)
  endif()
endif()

# OpenSSL: a TLS echo server and its clients on goroutines, checked from
# outside with `openssl s_client` and `curl --cacert`.
find_path(OPENSSL_INCLUDE_DIR openssl/ssl.h)
find_library(OPENSSL_SSL_LIBRARY ssl)
find_library(OPENSSL_CRYPTO_LIBRARY crypto)
find_program(OPENSSL_EXE openssl)
find_program(CURL_EXE curl)
if(OPENSSL_INCLUDE_DIR AND OPENSSL_SSL_LIBRARY AND OPENSSL_CRYPTO_LIBRARY
   AND OPENSSL_EXE AND CURL_EXE)
  hl_program(openssl openssl.c ${OPENSSL_INCLUDE_DIR}
    ${OPENSSL_SSL_LIBRARY} ${OPENSSL_CRYPTO_LIBRARY})
  hl_test(openssl --openssl ${OPENSSL_EXE} --curl ${CURL_EXE})
endif()
