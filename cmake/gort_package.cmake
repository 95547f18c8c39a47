# SPDX-License-Identifier: MIT
# gort_package.cmake - what a program outside this tree finds gort by: the
# CMake config package (find_package(gort CONFIG): gortConfig.cmake,
# gortConfigVersion.cmake, gortTargets*.cmake in
# ${CMAKE_INSTALL_LIBDIR}/cmake/gort) and the pkg-config file gort.pc (in
# ${CMAKE_INSTALL_LIBDIR}/pkgconfig).
#
# Both are relocatable when the library directory is relative to the
# prefix: they find the prefix from their own location, so `cmake --install
# --prefix` and DESTDIR staging give files that point into the tree they
# were installed in, whatever the depth of the library directory
# (lib, lib64, lib/x86_64-linux-gnu).  With an absolute
# CMAKE_INSTALL_LIBDIR they hold absolute paths, the prefix among them taken
# at install time.

include(CMakePackageConfigHelpers)

# gort_install_packages(<export set>): the install rules of both packages
# for the targets of <export set> (gort_shared exported as gort::gort,
# gort_static as gort::gort_static, gort-hook's as gort::hook and
# gort::hook_static), and of gort-hook.pc beside gort.pc.
function(gort_install_packages export_set)
  set(cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/gort)
  install(EXPORT ${export_set} NAMESPACE gort:: DESTINATION ${cmakedir}
    FILE gortTargets.cmake)
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/gortConfig.cmake.in
    ${PROJECT_BINARY_DIR}/gortConfig.cmake
    INSTALL_DESTINATION ${cmakedir})
  # The version rule follows the ABI's (docs/abi.md): before 1.0 a minor
  # release may break compatibility, so a request for 0.1 accepts 0.1.x
  # only; from 1.0 on any later release of the same major version.
  if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(compat SameMinorVersion)
  else()
    set(compat SameMajorVersion)
  endif()
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/gortConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY ${compat})
  install(FILES ${PROJECT_BINARY_DIR}/gortConfig.cmake
    ${PROJECT_BINARY_DIR}/gortConfigVersion.cmake DESTINATION ${cmakedir})

  # gort.pc in two passes: here the layout (how far the prefix is from the
  # pkgconfig directory), then at install time the prefix itself, which is
  # needed only with an absolute library directory and known only then
  # (`cmake --install --prefix`).
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(GORT_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
    set(GORT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
  else()
    # From <prefix>/<libdir>/pkgconfig up to <prefix>: one ".." a level.
    file(RELATIVE_PATH up /gort_prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig
      /gort_prefix)
    string(REGEX REPLACE "/$" "" up "${up}")
    set(GORT_PC_PREFIX "\${pcfiledir}/${up}")
    set(GORT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  endif()
  if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    set(GORT_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
  else()
    set(GORT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
  endif()
  foreach(pc gort gort-hook)
    configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in
      ${PROJECT_BINARY_DIR}/${pc}.pc.layout @ONLY)
    install(CODE "configure_file([[${PROJECT_BINARY_DIR}/${pc}.pc.layout]]
      [[${PROJECT_BINARY_DIR}/${pc}.pc]] @ONLY)")
    install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc
      DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endforeach()
endfunction()
