include(CMakePackageConfigHelpers)

# What the package installs that is built, not copied (synattn::compiled's
# library, the Python module): `cmake --install` after building only one
# target (say `parse`) found these missing and stopped half-way, leaving a
# prefix without synattnConfig.cmake. So the install script builds them
# first, before it copies anything: an install after any build is whole, and
# one whose build fails installs nothing. (Install rules run in the order
# they are declared; this one is first. A target added to the list later in
# configuration, e.g. by python/, is seen: the list is read at generate time.)
#   synattn_install_builds(<target>...)   adds targets to what the install builds
function(synattn_install_builds)
  set_property(TARGET synattn APPEND PROPERTY INTERFACE_SYNATTN_INSTALL_BUILDS ${ARGN})
endfunction()
if(TARGET synattn_compiled)
  synattn_install_builds(synattn_compiled)
endif()
install(CODE "
  set(synattn_built_targets \"$<TARGET_PROPERTY:synattn,INTERFACE_SYNATTN_INSTALL_BUILDS>\")
  foreach(target IN LISTS synattn_built_targets)
    message(STATUS \"synattn: building \${target} for the install\")
    execute_process(COMMAND \"${CMAKE_COMMAND}\" --build \"${PROJECT_BINARY_DIR}\" --target \${target}
                            --config \"\${CMAKE_INSTALL_CONFIG_NAME}\" RESULT_VARIABLE synattn_build_rc)
    if(NOT synattn_build_rc EQUAL 0)
      message(FATAL_ERROR \"synattn: building \${target} for the install failed: nothing was installed\")
    endif()
  endforeach()")

set(SYNATTN_CMAKE_DIR "${CMAKE_INSTALL_DATADIR}/synattn/cmake"
  CACHE STRING "Install path of synattnConfig.cmake, relative to the prefix")

install(DIRECTORY include/synattn DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS synattn synattn_native EXPORT synattnTargets)  # synattn::synattn, synattn::native
install(EXPORT synattnTargets
  NAMESPACE synattn::
  DESTINATION "${SYNATTN_CMAKE_DIR}")
# synattn::checkpoint in its own export file: the package config loads it
# (and looks for nlohmann_json) only when it is wanted and can work.
if(SYNATTN_WITH_CHECKPOINT)
  install(TARGETS synattn_checkpoint EXPORT synattnCheckpointTargets)
  install(EXPORT synattnCheckpointTargets
    NAMESPACE synattn::
    DESTINATION "${SYNATTN_CMAKE_DIR}")
  # The shipped English parser and tokenizer, where synattn::checkpoint's
  # SYNATTN_MODEL_DIR (default_model_path(), default_tokenizer_path()) looks.
  install(FILES models/en_ewt.parser.safetensors models/en_ewt.tokenizer.safetensors models/README.md
    DESTINATION "${CMAKE_INSTALL_DATADIR}/synattn/models")
endif()

# synattn::mpi likewise (the config looks for MPI only when it is wanted).
if(SYNATTN_WITH_MPI)
  install(TARGETS synattn_mpi EXPORT synattnMpiTargets)
  install(EXPORT synattnMpiTargets
    NAMESPACE synattn::
    DESTINATION "${SYNATTN_CMAKE_DIR}")
endif()

# synattn::compiled (SYNATTN_BUILD_COMPILED=ON) likewise: a static library
# of the layer's, the tagger's and the parser's float and double code,
# compiled for SYNATTN_ARCH (recorded in the package as
# synattn_COMPILED_ARCH). It makes the package architecture-specific.
set(SYNATTN_WITH_COMPILED OFF)
if(TARGET synattn_compiled)
  set(SYNATTN_WITH_COMPILED ON)
  install(TARGETS synattn_compiled EXPORT synattnCompiledTargets ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
  install(EXPORT synattnCompiledTargets
    NAMESPACE synattn::
    DESTINATION "${SYNATTN_CMAKE_DIR}")
endif()

configure_package_config_file(
  cmake/synattnConfig.cmake.in
  "${PROJECT_BINARY_DIR}/synattnConfig.cmake"
  INSTALL_DESTINATION "${SYNATTN_CMAKE_DIR}")
# Header-only, the version file must not pin the consumer's pointer size;
# with the compiled library in, it must.
set(synattn_arch_independent ARCH_INDEPENDENT)
if(SYNATTN_WITH_COMPILED)
  set(synattn_arch_independent "")
endif()
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/synattnConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion
  ${synattn_arch_independent})
install(FILES
  "${PROJECT_BINARY_DIR}/synattnConfig.cmake"
  "${PROJECT_BINARY_DIR}/synattnConfigVersion.cmake"
  DESTINATION "${SYNATTN_CMAKE_DIR}")
install(FILES LICENSE README.md DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/synattn")

# pkg-config: header-only and architecture-independent, so share/pkgconfig.
# Flags for OpenMP go in when the CMake target carries it, so both ways of
# consuming synattn compile the same code.
set(SYNATTN_PC_OPENMP "")
if(SYNATTN_WITH_OPENMP)
  set(SYNATTN_PC_OPENMP "${OpenMP_CXX_FLAGS}")
endif()
configure_file(cmake/synattn.pc.in "${PROJECT_BINARY_DIR}/synattn.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/synattn.pc" DESTINATION "${CMAKE_INSTALL_DATADIR}/pkgconfig")

# CPack: `cpack -G DEB` in a build directory makes libsynattn-dev_<version>_all.deb
# with the headers, the CMake package and the pkg-config file under /usr.
if(SYNATTN_IS_TOP_LEVEL)
  set(CPACK_PACKAGE_NAME "libsynattn-dev")
  set(CPACK_PACKAGE_VENDOR "synattn")
  # The Debian Maintainer field. The default names the copyright holder of
  # LICENSE with a local address (the project has no public one); whoever
  # publishes the package sets their own: -DSYNATTN_DEB_MAINTAINER="Name <mail>".
  set(SYNATTN_DEB_MAINTAINER "The synattn authors <synattn@localhost>" CACHE STRING
    "Maintainer field of the .deb (\"Name <address>\")")
  set(CPACK_PACKAGE_CONTACT "${SYNATTN_DEB_MAINTAINER}")
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SYNATTN_DEB_MAINTAINER}")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
  set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
  set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
  set(CPACK_GENERATOR "DEB")
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE "all")  # headers only
  if(SYNATTN_WITH_COMPILED)  # the static library is machine code: the package is the build machine's
    find_program(SYNATTN_DPKG dpkg)
    if(SYNATTN_DPKG)
      execute_process(COMMAND "${SYNATTN_DPKG}" --print-architecture OUTPUT_VARIABLE CPACK_DEBIAN_PACKAGE_ARCHITECTURE
        OUTPUT_STRIP_TRAILING_WHITESPACE)
    else()
      unset(CPACK_DEBIAN_PACKAGE_ARCHITECTURE)  # CPack asks dpkg itself, or fails saying so
    endif()
  endif()
  set(CPACK_DEBIAN_PACKAGE_SECTION "libdevel")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libeigen3-dev (>= 3.4)")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "cmake, pkg-config")
  include(CPack)
endif()
