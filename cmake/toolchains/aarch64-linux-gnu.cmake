# aarch64-linux-gnu.cmake — cross build for Linux arm64 (AArch64) on a Debian
# x86_64 host, against the project's dependencies as Debian multiarch :arm64
# packages (scripts/test_arm64.sh installs them; docs/PLATFORMS.md).
#
# Debian's cross compiler (g++-aarch64-linux-gnu) already searches the
# multiarch folders /usr/include/aarch64-linux-gnu and
# /usr/lib/aarch64-linux-gnu, where the :arm64 packages install, so the
# sysroot is the host's own root and nothing is copied. What this file adds:
# the compilers, the multiarch name (find_package/find_library look in
# lib/aarch64-linux-gnu, never in the host's lib/x86_64-linux-gnu), pkg-config
# reading only the arm64 .pc files, and qemu-user as the emulator through
# which ctest (and gtest_discover_tests at build time) runs what is built.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Only the arm64 .pc files (and the architecture-independent ones): the
# host's /usr/lib/x86_64-linux-gnu/pkgconfig must not answer for a target
# library. Set here, the toolchain file being read at every configure.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
unset(ENV{PKG_CONFIG_PATH})

# Programs (pkg-config, python3, node) are the host's; libraries, headers and
# CMake packages the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# qemu-user runs the arm64 executables, with the host's root as the guest's
# (-L /): the dynamic loader /lib/ld-linux-aarch64.so.1 and every library
# then come from Debian's multiarch libc6:arm64 and the :arm64 packages, one
# glibc build. Not -L /usr/aarch64-linux-gnu (the cross toolchain's
# sysroot): its loader is another glibc build (libc6-arm64-cross 2.36-8cross1
# against libc6:arm64 2.36-9+deb12u14 here), and the loader found
# /lib/aarch64-linux-gnu/libc.so.6 through the host's ld.so.cache, so the two
# disagreed on the loader's private data: pthread_create walked its stack
# cache list forever (the first thread pool in every test hung at 100% CPU,
# docs/PLATFORMS.md).
find_program(WASTE_QEMU_AARCH64 qemu-aarch64)
if(WASTE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${WASTE_QEMU_AARCH64};-L;/" CACHE STRING
      "How the build and ctest run an arm64 executable on this host")
endif()
