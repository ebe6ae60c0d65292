#!/usr/bin/env bash
# check_neon_aarch64.sh — build the kernel tests (tests/kernels_test.cpp,
# kda_step_test.cpp, elementwise_test.cpp) for AArch64 with a cross compiler
# and run them under qemu-user: the NEON kernel variants (isa_neon.inc,
# kda_step_neon.inc, elementwise_neon_v.inc) natively compiled with
# <arm_neon.h>, real FMA and GCC's AArch64 code generation, against the
# scalar reference compiled for the same target. Not part of scripts/test.sh (it needs the cross
# toolchain: Debian `apt-get install g++-aarch64-linux-gnu qemu-user`).
#
# Only the sources the kernel test links are built (kernels/, the trunk codec
# and manifest, container.cpp for LoadedTensor::row, the thread pool), with
# fmt in header-only mode; each function in its own section, so the linker
# drops what the test never reaches (container.cpp's file reading, which
# would pull in the I/O layer and libdeflate). The full library needs arm64
# builds of liburing, libdeflate and pcre2, which this check does not.
#
# Usage: scripts/check_neon_aarch64.sh [BUILD_DIR] [gtest args...]  (the
# gtest args go to every test; the script fails if any test fails)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/neon/aarch64}
shift || true
cxx=${CXX_AARCH64:-aarch64-linux-gnu-g++}
command -v "$cxx" >/dev/null || { echo "check_neon_aarch64: $cxx not found" >&2; exit 2; }
command -v qemu-aarch64 >/dev/null || { echo "check_neon_aarch64: qemu-aarch64 not found" >&2; exit 2; }
gtest=/usr/src/googletest/googletest
[ -d "$gtest" ] || { echo "check_neon_aarch64: $gtest not found (Debian: googletest)" >&2; exit 2; }
mkdir -p "$out"

flags=(-std=c++20 -O2 -ffunction-sections -fdata-sections -Wall -Wextra -Wno-unused-parameter -DFMT_HEADER_ONLY -I"$root/src" -I"$root/include"
       -I"$root/tests" -I"$gtest/include" -I"$gtest" -DWASTE_SOURCE_DIR="\"$root\"" -DWASTE_CLI_PATH="\"/nonexistent\"")
tests=(kernels_test kda_step_test elementwise_test)
sources=("$root"/src/kernels/*.cpp "$root/src/format/trunk_codec.cpp" "$root/src/format/manifest.cpp"
         "$root/src/format/container.cpp" "$root/src/platform/thread_pool.cpp"
         "$gtest/src/gtest-all.cc" "$gtest/src/gtest_main.cc")
for test in "${tests[@]}"; do sources+=("$root/tests/$test.cpp"); done
# an object is rebuilt when it is missing or older than a file its depfile names
stale() {
    [ -f "$1" ] && [ -f "$1.d" ] || return 0
    local dep
    for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$1.d"); do
        [ "$dep" -nt "$1" ] && return 0
    done
    return 1
}
objects=()  # what every test links (not the tests' own objects)
for src in "${sources[@]}"; do
    obj="$out/$(basename "${src%.*}").o"
    case " ${tests[*]} " in *" $(basename "${src%.*}") "*) ;; *) objects+=("$obj") ;; esac
    if stale "$obj"; then
        echo "compile $(basename "$src")"
        "$cxx" "${flags[@]}" -MMD -MF "$obj.d" -c "$src" -o "$obj" &
        # two compilers at a time
        while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
    fi
done
for pid in $(jobs -p); do wait "$pid"; done  # a failed compile stops the script (set -e)
# The guest's root for qemu: the cross toolchain's sysroot holds a dynamic
# loader and libstdc++; but where Debian's multiarch libc6:arm64 is installed
# (scripts/test_arm64.sh installs it), that loader finds the multiarch
# libc.so.6 through the host's ld.so.cache, another glibc build, and
# pthread_create hangs (docs/PLATFORMS.md). Then the host's root is the
# guest's: the multiarch loader and libraries, one build.
sysroot=/usr/aarch64-linux-gnu
[ -e /lib/ld-linux-aarch64.so.1 ] && sysroot=/
failed=()
for test in "${tests[@]}"; do
    "$cxx" -o "$out/$test" "$out/$test.o" "${objects[@]}" -pthread -Wl,--gc-sections
    echo "built $out/$test ($(file -b "$out/$test" | cut -d, -f1-2))"
    qemu-aarch64 -L "$sysroot" "$out/$test" "$@" || failed+=("$test")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "check_neon_aarch64: failed: ${failed[*]}" >&2
    exit 1
fi
echo "check_neon_aarch64: ${tests[*]} passed"
