# Cross-compiling synattn for AArch64 (Linux) with Debian's g++-aarch64-linux-gnu,
# the test programs run through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR, so
# ctest and Catch2's test discovery run them too). The row kernels use their
# NEON primitives there (kernels/packet_neon.hpp):
#
#   cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_TOOLCHAIN_FILE=tools/toolchains/aarch64-linux-gnu.cmake \
#     -DSYNATTN_BUILD_EXAMPLES=OFF -DSYNATTN_INSTALL=OFF -DSYNATTN_CHECKPOINT=OFF
#   cmake --build build/aarch64 --target test_attention_rows test_dispatch
#   qemu-aarch64 -L /usr/aarch64-linux-gnu build/aarch64/tests/test_attention_rows
#
# Packages: SYNATTN_WITH_AARCH64=1 tools/install-deps.sh (g++-aarch64-linux-gnu, qemu-user).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# Eigen and Catch2 are header-only: the host's CMake packages serve both targets.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
