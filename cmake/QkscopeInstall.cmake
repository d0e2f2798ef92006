# Install rules and the CMake package: `cmake --install <build> --prefix <p>` puts
#   <p>/include/qkscope/**.hpp                                   (the header tree, globbed)
#   <p>/lib/cmake/qkscope/qkscopeConfig.cmake, ...ConfigVersion.cmake, qkscopeTargets.cmake
# so that a consumer writes find_package(qkscope CONFIG REQUIRED) and links qkscope::qkscope.
# The version file follows the version policy of docs/npm-package.md: while the major is 0 a
# minor release may break the API, so 0.x accepts only 0.x requests (SameMinorVersion);
# from 1.0 on, SameMajorVersion.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(QKSCOPE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/qkscope CACHE STRING
    "Where qkscopeConfig.cmake is installed, relative to the prefix")

# The whole header tree: a directory copy, so adding or renaming a folder under
# core/include/qkscope/ needs no change here. Only headers (no *.txt templates).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/qkscope
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh")

# INCLUDES DESTINATION adds <prefix>/include to the exported target's include path.
install(TARGETS qkscope EXPORT qkscopeTargets INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT qkscopeTargets NAMESPACE qkscope:: DESTINATION ${QKSCOPE_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qkscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/qkscopeConfig.cmake
  INSTALL_DESTINATION ${QKSCOPE_INSTALL_CMAKEDIR})
# Header-only: the same package serves every architecture (no CMAKE_SIZEOF_VOID_P check).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_qkscope_compat SameMinorVersion)
else()
  set(_qkscope_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qkscopeConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_qkscope_compat} ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/qkscopeConfig.cmake ${PROJECT_BINARY_DIR}/qkscopeConfigVersion.cmake
        DESTINATION ${QKSCOPE_INSTALL_CMAKEDIR})
