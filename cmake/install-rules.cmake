include(CMakePackageConfigHelpers)

set(SYNATTN_CMAKE_DIR "${CMAKE_INSTALL_DATADIR}/synattn/cmake"
  CACHE STRING "Install path of synattnConfig.cmake, relative to the prefix")

install(DIRECTORY include/synattn DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS synattn EXPORT synattnTargets)
install(EXPORT synattnTargets
  NAMESPACE synattn::
  DESTINATION "${SYNATTN_CMAKE_DIR}")
# synattn::checkpoint in its own export file: the package config loads it
# (and looks for nlohmann_json) only when it is wanted and can work.
if(SYNATTN_CHECKPOINT)
  install(TARGETS synattn_checkpoint EXPORT synattnCheckpointTargets)
  install(EXPORT synattnCheckpointTargets
    NAMESPACE synattn::
    DESTINATION "${SYNATTN_CMAKE_DIR}")
endif()

configure_package_config_file(
  cmake/synattnConfig.cmake.in
  "${PROJECT_BINARY_DIR}/synattnConfig.cmake"
  INSTALL_DESTINATION "${SYNATTN_CMAKE_DIR}")
# Header-only: the version file must not pin the consumer's pointer size.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/synattnConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion
  ARCH_INDEPENDENT)
install(FILES
  "${PROJECT_BINARY_DIR}/synattnConfig.cmake"
  "${PROJECT_BINARY_DIR}/synattnConfigVersion.cmake"
  DESTINATION "${SYNATTN_CMAKE_DIR}")
install(FILES LICENSE README.md DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/synattn")
