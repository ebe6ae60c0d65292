#!/usr/bin/env bash
# test_arm64.sh — Linux arm64 (AArch64): the library, the CLI and the tests
# that prove the platform, cross built with Debian's g++-aarch64-linux-gnu
# against the multiarch :arm64 builds of the dependencies (the arm64-cross
# CMake preset, cmake/toolchains/aarch64-linux-gnu.cmake), and run under
# qemu-user. scripts/test.sh runs it as one stage; docs/PLATFORMS.md says
# what it proves and what it cannot (no speed figures under emulation).
#
# 1. Installs what is missing (root, or sudo): the arm64 architecture in dpkg,
#    the cross compiler, qemu-user and the :arm64 -dev packages.
# 2. Builds build/arm64: the library, `waste` (no waste-serve) and only the
#    test executables in the preset's WASTE_TESTS.
# 3. Checks that what was built is AArch64 code, then runs every test of
#    those executables under qemu-aarch64 (ctest --preset arm64-cross):
#    the kernels (kernels_test, kda_step_test, elementwise_test, with
#    Kernels.DispatchChoosesTheTargetsVariant: the dispatch chose NEON), the
#    forward pass against the upstream fixtures (fixture_logits_test),
#    streaming with every I/O backend (streaming_test; qemu-user has no
#    io_uring, so the test says so and the default backend falls back to the
#    pread pool), the tokenizer (tokenizer_test, its oracles included) and
#    the CLI's refusals and exit codes (hostile_test).
# 4. The PyTorch reference on the host against the emulated arm64 CLI
#    (python/tests/test_engine_vs_reference.py: logits, decode steps, chunked
#    prefill and every layer's hidden state, on synthetic containers) and the
#    CLI end to end with its exit codes (python/tests/test_cli.py), both with
#    WASTE_CLI set to the emulated CLI and the tolerances they state.
#
# Usage: scripts/test_arm64.sh   (WASTE_ARM64_JOBS: parallel jobs, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${WASTE_ARM64_JOBS:-$(nproc)}
# A missing oracle fails its test instead of skipping (as in scripts/test.sh).
export WASTE_REQUIRE_ORACLES=1
# qemu-user translates no io_uring calls and may refuse O_DIRECT on the
# host's filesystem: those checks say so and skip here; the native stage runs them.
export WASTE_ALLOW_SKIP=o_direct,io_uring

# The host's own packages (cmake, ninja, the header-only libraries, python3-torch,
# the tokenizer oracles under tools/): the same set-up as every other stage.
./scripts/setup.sh

./scripts/install_missing.sh test_arm64 --architecture arm64 \
  g++-aarch64-linux-gnu qemu-user \
  libfmt-dev:arm64 libdeflate-dev:arm64 liburing-dev:arm64 libpcre2-dev:arm64 libicu-dev:arm64 \
  libgtest-dev:arm64 libpng-dev:arm64 libjpeg62-turbo-dev:arm64 libgif-dev:arm64 libwebp-dev:arm64 libstb-dev:arm64

cmake --preset arm64-cross >/dev/null
cmake --build --preset arm64-cross -j "$jobs"

# What was built is AArch64 code: a host binary here would run the x86
# variants and prove nothing about the platform.
for executable in build/arm64/waste build/arm64/kernels_test; do
  machine=$(readelf -h "$executable" | sed -n 's/^ *Machine: *//p')
  if [ "$machine" != "AArch64" ]; then
    echo "test_arm64: $executable is built for '$machine', not AArch64" >&2
    exit 1
  fi
done

ctest --preset arm64-cross -j "$jobs"

# The reference and the CLI tests start the emulated CLI (a script the
# configure step wrote: qemu-aarch64 -L / build/arm64/waste "$@"). The preset
# builds no waste-serve: `waste serve --help` is then checked to refuse.
WASTE_CLI="$root/build/arm64/waste-emulated" WASTE_CLI_WITHOUT_SERVER=1 PYTHONPATH="$root/python" /usr/bin/python3 -m unittest \
  tests.test_engine_vs_reference tests.test_cli
echo "test_arm64: passed"
