#!/usr/bin/env bash
# test.sh — the whole test suite from a clean clone: installs what is missing,
# builds the release and the asan+ubsan presets, runs every test in both, a
# five-minute soak of streamed tokens under a budget (scripts/soak.py), the
# PyTorch reference's own tests, the threaded tests under ThreadSanitizer (the
# tsan preset), each libFuzzer target for a bounded time, and two other
# platforms: the library, the CLI and the tests that prove the platform,
# cross built and run emulated — Linux arm64 under qemu-user
# (scripts/test_arm64.sh) and Windows x86_64 under Wine
# (scripts/test_windows.sh); docs/PLATFORMS.md.
#   WASTE_FUZZ_SECONDS  seconds per fuzz target (default 60)
#   WASTE_SOAK_SECONDS  seconds of the soak (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=$(nproc)
fuzz_seconds=${WASTE_FUZZ_SECONDS:-60}
soak_seconds=${WASTE_SOAK_SECONDS:-300}
# A missing oracle (the tiktoken comparisons, ajv) fails its test instead of
# skipping, and so does a check the machine cannot run (no memory cgroup,
# io_uring or direct I/O refused, no tmpfs: test_support.h's
# WASTE_SKIP_ENVIRONMENT) unless $WASTE_ALLOW_SKIP names it; CI sets nothing.
export WASTE_REQUIRE_ORACLES=1
# ccache (setup.sh installs it; CMakeLists.txt uses it) keyed relative to the
# checkout, so that a clone in another folder reuses what an earlier one
# compiled on this machine; the debug info of a reused object names the
# folder it was first built in (its code is the same).
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

# On the way out: how long each stage took, and on a failure, last (CI keeps
# only the tail), what failed and why (scripts/ci_failure_summary.py reads
# the ctest logs this run wrote).
started_marker=$(mktemp)
stage_log=""
stage() {
  stage_log+=" | $((SECONDS))s: ${1%% (*}"
  echo "== $1"
}
on_exit() {
  local status=$?
  # Every skipped test and its reason, passed or failed (a skip never hides).
  find build/*/Testing/Temporary -name LastTest.log -newer "$started_marker" -print0 2>/dev/null |
    xargs -0 -r python3 scripts/ci_failure_summary.py --skipped || true
  echo "== stage start times${stage_log} | end: ${SECONDS}s"
  if [ "$status" -ne 0 ]; then
    echo "== failed (exit $status)"
    find build/*/Testing/Temporary -name LastTest.log -newer "$started_marker" -print0 2>/dev/null |
      xargs -0 -r python3 scripts/ci_failure_summary.py || true
  fi
  rm -f "$started_marker"
}
trap on_exit EXIT

./scripts/setup.sh

stage "release build and tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

stage "soak (${soak_seconds}s of streamed tokens, the cache an eighth of the experts, RSS sampled every second)"
soak_model=build/release/soak-mid
[ -f "$soak_model/manifest.json" ] || build/release/waste synth "$soak_model" --preset mid --seed 1 >/dev/null
./scripts/soak.py build/release/waste "$soak_model" --seconds "$soak_seconds" --answer 100

stage "PyTorch reference tests"
PYTHONPATH="$root/python" /usr/bin/python3 -m unittest discover -s "$root/python/tests" -t "$root/python"

stage "asan+ubsan build and tests"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs"

stage "tsan build and the threaded tests"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$jobs"
ctest --preset tsan -j "$jobs"

stage "fuzzing (${fuzz_seconds}s per target, asan+ubsan, $jobs targets at a time)"
# Each libFuzzer process is single-threaded: running one per core gives every
# target its full time in a fraction of the wall clock.
fuzz_one() {
  local fuzzer=$1 seconds=$2 name corpus status
  name=$(basename "$fuzzer")
  corpus="build/asan/corpus-$name"
  mkdir -p "$corpus"
  [ -d "fuzz/seeds/$name" ] && cp -n fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null || true
  # The chat-template engine also starts from the models' real templates.
  [ "$name" = template_fuzz ] && cp -n ../shared/data/chat-templates/*.jinja "$corpus"/ 2>/dev/null || true
  status=0
  "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 "$corpus" > "build/asan/$name.log" 2>&1 || status=$?
  { echo "-- $name (exit $status)"; tail -n 12 "build/asan/$name.log"; }
  return $status
}
export -f fuzz_one
# The fuzz targets: the executables named *_fuzz (their corpus folders,
# corpus-NAME_fuzz, match the same pattern on a rerun).
fuzzers=()
for candidate in build/asan/*_fuzz; do
  if [ -f "$candidate" ] && [ -x "$candidate" ]; then fuzzers+=("$candidate"); fi
done
if [ ${#fuzzers[@]} -gt 0 ]; then
  printf '%s\n' "${fuzzers[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$1" "$2"' _ {} "$fuzz_seconds"
fi
stage "arm64: cross build, the platform's tests under qemu-user (scripts/test_arm64.sh)"
WASTE_ARM64_JOBS="$jobs" ./scripts/test_arm64.sh
stage "windows: MinGW-w64 cross build, the platform's tests under Wine (scripts/test_windows.sh)"
WASTE_WINDOWS_JOBS="$jobs" ./scripts/test_windows.sh

echo "== all tests passed"
