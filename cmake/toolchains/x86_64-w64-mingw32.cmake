# x86_64-w64-mingw32.cmake — cross build for Windows x86_64 on a Debian
# x86_64 host with Debian's MinGW-w64 (g++-mingw-w64-x86-64, its posix
# thread model: std::thread and std::mutex through winpthreads), against the
# project's dependencies built from their Debian source packages by
# scripts/windows_deps.sh into build/windows-deps/prefix (docs/PLATFORMS.md).
# Executables are linked statically (-static, CMakeLists.txt): nothing but
# Windows' own DLLs beside them. Wine runs them for ctest.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)

get_filename_component(WASTE_WINDOWS_DEPS "${CMAKE_CURRENT_LIST_DIR}/../../build/windows-deps/prefix" ABSOLUTE)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 "${WASTE_WINDOWS_DEPS}")
set(CMAKE_PREFIX_PATH "${WASTE_WINDOWS_DEPS}")
# Programs (pkg-config, python3, node) are the host's; libraries, headers and
# CMake packages the target's only.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Only the prefix's .pc files: the host's must never answer for a Windows library.
set(ENV{PKG_CONFIG_LIBDIR} "${WASTE_WINDOWS_DEPS}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Wine runs what is built (ctest, gtest_discover_tests), quietly. Debian's
# wine64 package puts the loader in /usr/lib/wine.
find_program(WASTE_WINE64 wine64 PATHS /usr/lib/wine NO_DEFAULT_PATH)
find_program(WASTE_WINE64 wine64)
if(WASTE_WINE64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "env;WINEDEBUG=-all;${WASTE_WINE64}" CACHE STRING
      "How the build and ctest run a Windows executable on this host")
endif()
