# Builds the .deb with CPack from a build of synattn that has only install
# rules (no tests, examples or benchmarks, so no Catch2 or Google Benchmark),
# checks its contents, unpacks it into a scratch root with dpkg-deb -x (no
# root rights, no change to the system), and builds tests/consumer against
# that root twice: with find_package(synattn) and with pkg-config alone.
#
#   -DSOURCE_DIR -DWORK_DIR -DGENERATOR -DCXX_COMPILER -DWANT_OPENMP=ON|OFF
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

function(expect text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected '${what}' in:\n${text}")
  endif()
endfunction()

find_program(DPKG_DEB dpkg-deb REQUIRED)
find_program(PKG_CONFIG pkg-config REQUIRED)
get_filename_component(cmake_bin_dir "${CMAKE_COMMAND}" DIRECTORY)
find_program(CPACK cpack HINTS "${cmake_bin_dir}" REQUIRED)

set(build "${WORK_DIR}/synattn-build")
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${build}" -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release
    -DSYNATTN_BUILD_TESTS=OFF -DSYNATTN_BUILD_EXAMPLES=OFF -DSYNATTN_BUILD_BENCH=OFF
    -DSYNATTN_INSTALL=ON -DSYNATTN_OPENMP=${WANT_OPENMP}
    "-DSYNATTN_DEB_MAINTAINER=Test Packager <packager@test.invalid>")
execute_process(COMMAND "${CPACK}" -G DEB -B "${WORK_DIR}/packages" WORKING_DIRECTORY "${build}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack failed (${rc}):\n${out}\n${err}")
endif()
file(GLOB debs "${WORK_DIR}/packages/libsynattn-dev_*_all.deb")
list(LENGTH debs count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one libsynattn-dev_*_all.deb, found: ${debs}\n${out}")
endif()
message(STATUS "package: ${debs}")

# Metadata and contents: headers, the CMake package, the pkg-config file,
# and nothing built (no test or example binaries).
run("${DPKG_DEB}" --field "${debs}" Package Architecture Depends Maintainer)
expect("${last_output}" "Package: libsynattn-dev")
expect("${last_output}" "Maintainer: Test Packager <packager@test.invalid>")  # SYNATTN_DEB_MAINTAINER
expect("${last_output}" "Architecture: all")
expect("${last_output}" "libeigen3-dev")
run("${DPKG_DEB}" --contents "${debs}")
set(listing "${last_output}")
foreach(path IN ITEMS
    ./usr/include/synattn/synattn.hpp ./usr/include/synattn/build_info.hpp
    ./usr/include/synattn/attention/syntax_attention.hpp
    ./usr/share/synattn/cmake/synattnConfig.cmake ./usr/share/synattn/cmake/synattnConfigVersion.cmake
    ./usr/share/synattn/cmake/synattnTargets.cmake ./usr/share/pkgconfig/synattn.pc)
  expect("${listing}" "${path}")
endforeach()
foreach(unwanted IN ITEMS /bin/ test_ .so .a\n)
  string(FIND "${listing}" "${unwanted}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the package holds '${unwanted}':\n${listing}")
  endif()
endforeach()

set(root "${WORK_DIR}/root")
run("${DPKG_DEB}" -x "${debs}" "${root}")

if(WANT_OPENMP)
  set(want_omp "OpenMP: on, ")
else()
  set(want_omp "OpenMP: off")
endif()

# 1. CMake: find_package(synattn) from the unpacked root.
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/consumer-cmake"
    -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${root}/usr -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer-cmake")
run("${WORK_DIR}/consumer-cmake/consumer")
expect("${last_output}" "consumer: synattn ")
expect("${last_output}" "${want_omp}")
run("${WORK_DIR}/consumer-cmake/consumer_native")  # synattn::native is in the package
expect("${last_output}" "SIMD this CPU has and this build lacks: none")

# 2. pkg-config alone: the flags must point into the unpacked root (the .pc
# is relocatable) and must compile and link the consumer by themselves.
set(ENV{PKG_CONFIG_PATH} "${root}/usr/share/pkgconfig")
run("${PKG_CONFIG}" --cflags synattn)
string(STRIP "${last_output}" cflags)
expect("${cflags}" "-I${root}/usr/share/pkgconfig/../../include")
expect("${cflags}" "eigen3")
run("${PKG_CONFIG}" --libs synattn)
string(STRIP "${last_output}" libs)
run("${PKG_CONFIG}" --modversion synattn)
string(STRIP "${last_output}" version)
if(NOT version STREQUAL "${VERSION}")
  message(FATAL_ERROR "pkg-config --modversion synattn says '${version}', expected '${VERSION}'")
endif()
separate_arguments(cflags_list UNIX_COMMAND "${cflags}")
separate_arguments(libs_list UNIX_COMMAND "${libs}")
run("${CXX_COMPILER}" -O1 ${cflags_list} "${SOURCE_DIR}/tests/consumer/main.cpp" -o "${WORK_DIR}/consumer-pc" ${libs_list})
run("${WORK_DIR}/consumer-pc")
expect("${last_output}" "consumer: synattn ${VERSION} ok")
expect("${last_output}" "${want_omp}")
