#!/usr/bin/env bash
# test_windows.sh — Windows x86_64: the library, the CLI and the tests that
# prove the platform, cross built with Debian's MinGW-w64 against the
# project's dependencies built from their Debian source packages
# (scripts/windows_deps.sh), and run under Wine. scripts/test.sh runs it as
# one stage; docs/PLATFORMS.md says what it proves and what it cannot (Wine
# is not Windows, and no speed figure comes from it).
#
# 1. Installs what is missing (root, or sudo): the MinGW-w64 cross compiler
#    and Wine (wine64).
# 2. Builds the dependencies into build/windows-deps/prefix (once; a stamp
#    per library makes a rerun cheap), then build/windows: the library,
#    `waste.exe`, `waste-serve.exe` and only the test executables in the
#    preset's WASTE_TESTS, linked statically.
# 3. Checks that what was built is x86-64 Windows (PE32+) code, then runs
#    every test of those executables under Wine (ctest --preset
#    windows-cross): the kernels (the dispatch chose the host's x86 variant),
#    the forward pass against the upstream fixtures (fixture_logits_test),
#    streaming through the Windows read path (overlapped ReadFile, unbuffered
#    where the volume allows; streaming_test), OutputFile's Windows side
#    (output_file_test) and the file layer itself: offsets past 4 GiB,
#    non-ASCII UTF-8 names, files changed under an open handle
#    (native_file_test).
# 4. The PyTorch reference on the host against the Windows CLI under Wine
#    (python/tests/test_engine_vs_reference.py) and the CLI end to end with
#    its exit codes (python/tests/test_cli.py), with WASTE_CLI set to it.
# 5. The server: every client test of tools/serve-client (the npm openai
#    client, hostile and slow clients, request memory, constrained output,
#    tool calls, vision, load, HAProxy in front of two instances) against
#    `waste.exe serve` under Wine, on kimi-mini as the Windows CLI converts
#    it.
#
# Usage: scripts/test_windows.sh   (WASTE_WINDOWS_JOBS: parallel jobs, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${WASTE_WINDOWS_JOBS:-$(nproc)}
# A missing oracle fails its test instead of skipping (as in scripts/test.sh).
export WASTE_REQUIRE_ORACLES=1
# Wine may not honour the unbuffered (direct-I/O) open the engine probes, and
# has no io_uring: those checks say so and skip here; the Linux stages run them.
export WASTE_ALLOW_SKIP=o_direct,io_uring

# The host's own packages (cmake, ninja, python3-torch, ...): the same
# set-up as every other stage.
./scripts/setup.sh

./scripts/install_missing.sh test_windows g++-mingw-w64-x86-64 wine64

# A Wine prefix of the stage's own, and one Wine server for the whole stage
# (-p: it stays while idle), started here with no output attached. The first
# Wine program in a prefix starts its services (services.exe, winedevice.exe,
# ...), which live as long as the server and inherit that program's stdout
# and stderr: had a test started them, ctest (or python's subprocess) would
# wait for that test's pipe until the server left — in a fresh prefix the
# first test took 320 s. Booted here, they hold /dev/null.
export WINEDEBUG=-all
export WINEPREFIX="$root/build/wine-prefix"
mkdir -p "$root/build"                           # Wine creates the prefix, not the folders above it
wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
wine_server=$(command -v wineserver || echo /usr/lib/wine/wineserver)
"$wine_server" -k 2>/dev/null || true            # a server a killed run left (the prefix is the stage's own)
"$wine" cmd /c exit </dev/null >/dev/null 2>&1  # creates the prefix when missing
"$wine_server" -w                                # its server leaves (it was not persistent)...
"$wine_server" -p                                # ...for one that stays
trap '"$wine_server" -k 2>/dev/null || true' EXIT
"$wine" cmd /c exit </dev/null >/dev/null 2>&1  # the services, holding /dev/null

./scripts/windows_deps.sh

cmake --preset windows-cross >/dev/null
cmake --build --preset windows-cross -j "$jobs"

# What was built is x86-64 Windows code: a host binary would prove nothing.
for executable in build/windows/waste.exe build/windows/kernels_test.exe; do
  format=$(x86_64-w64-mingw32-objdump -f "$executable" | sed -n 's/.*file format //p')
  if [ "$format" != "pei-x86-64" ]; then
    echo "test_windows: $executable is '$format', not a Windows x86-64 executable (pei-x86-64)" >&2
    exit 1
  fi
done

# The library's DLL exports the whole C API (every WASTE_API function of
# include/waste/waste.h) and nothing else of ours.
declared=$(grep -oE 'WASTE_API [^(]*\bwaste_[a-z0-9_]+\(' include/waste/waste.h | grep -oE 'waste_[a-z0-9_]+\($' | tr -d '(' | sort -u)
exported=$(x86_64-w64-mingw32-objdump -p build/windows/libwaste.dll |
  sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk 'NR > 1 && NF { print $NF }' | sort -u)
if [ -z "$declared" ] || [ "$declared" != "$exported" ]; then
  echo "test_windows: libwaste.dll's exports differ from waste.h's WASTE_API functions:" >&2
  diff <(echo "$declared") <(echo "$exported") >&2 || true
  exit 1
fi

ctest --preset windows-cross -j "$jobs"

# The reference and the CLI tests start the CLI under Wine (a script the
# configure step wrote: build/windows/waste-emulated). Chat on a typed
# terminal (a pty) is not what Wine's console shows: those two tests say so
# and skip (python/tests/test_cli.py, UNDER_WINE); chat through a pipe is
# tested.
WASTE_CLI="$root/build/windows/waste-emulated" WASTE_CLI_UNDER_WINE=1 PYTHONPATH="$root/python" /usr/bin/python3 -m unittest \
  tests.test_engine_vs_reference tests.test_cli

# The server's client tests, one file at a time (their timings assume a
# server to themselves). Under Wine a SIGTERM ends a Windows process at once,
# as TerminateProcess would: the tests stop the server with a console Ctrl-C
# instead, which Wine delivers for a SIGINT to the process group
# (tools/serve-client/server.mjs, WASTE_SERVE_UNDER_WINE).
rm -rf build/windows/serve-kimi-mini
build/windows/waste-emulated convert models/kimi-mini build/windows/serve-kimi-mini --json >/dev/null
WASTE_CLI="$root/build/windows/waste-emulated" WASTE_KIMI_MINI="$root/build/windows/serve-kimi-mini" WASTE_SERVE_UNDER_WINE=1 \
  node --test --test-concurrency=1 tools/serve-client/*.test.mjs
echo "test_windows: passed"
