#!/usr/bin/env bash
# llama.cpp's grammar sampling beside WASTE's grammar mask, on the same
# vocabularies and the same grammar (docs/bench-log/constrained-decoding.md,
# "llama.cpp's grammar sampling beside ours (issue 15)"; the latest figures in
# docs/BENCHMARKS.md). A measurement, not a test: not in ctest nor
# scripts/test.sh.
#
#   tools/llama-cpp/bench_grammar.sh [BUILD_DIR=build/release] [MIN_MASKS=3000] [ROUNDS=1]
#
# 1. installs node-llama-cpp 3.21.1 (package-lock.json) with its postinstall
#    (download/build) skipped, for the prebuilt CPU libraries of
#    @node-llama-cpp/linux-x64 and the llama.cpp sources (headers) it bundles;
# 2. builds waste_vocab (over WASTE's C API), grammar_bench and decode_smoke
#    (over llama.h);
# 3. dumps the vocabularies (the `waste synth` tiny tokenizer with
#    vocab_size 163840, kimi-mini's rank file) and the GBNF WASTE translates
#    the benchmark's JSON Schema (mask_cost_schema.json, a copy of the one in
#    GrammarBench.DISABLED_MaskCost) into, and writes a GGUF per vocabulary
#    (make_gguf.py);
# 4. runs, ROUNDS times alternating, WASTE's benchmark and llama.cpp's, and
#    WASTE's once more at the end, with the load average before each (one
#    llama.cpp run on 163,840 tokens takes ~15 minutes on 2 loaded cores).
# Needs: WASTE's release build (cmake --build --preset release --target
# waste_cli grammar_test), npm, cc, /usr/bin/python3. Outputs under
# BUILD_DIR/llama-cpp/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build/release}" && pwd)
min_masks=${2:-3000}
rounds=${3:-1}
out=$build/llama-cpp
mkdir -p "$out"

bins=$here/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [[ ! -f $bins/libllama.v0.4.0.so || ! -f $here/node_modules/node-llama-cpp/llama/gitRelease.bundle ]]; then
    (cd "$here" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --ignore-scripts --omit=optional --no-audit --no-fund)
fi
# llama.cpp's sources at the release the binaries were built from (a git bundle in the package)
if [[ ! -f $out/llama.cpp/include/llama.h ]]; then
    rm -rf "$out/llama.cpp"
    git -c advice.detachedHead=false clone -q "$here/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$out/llama.cpp"
fi

cc -O2 -Wall -I"$root/include" "$here/waste_vocab.c" "$build/libwaste.a" \
    -lstdc++ -ldeflate -luring -lpcre2-8 -lfmt -lm -lpthread -o "$out/waste_vocab"
cc -O2 -Wall -I"$out/llama.cpp/include" -I"$out/llama.cpp/ggml/include" "$here/grammar_bench.c" \
    "$bins/libllama.v0.4.0.so" "$bins/libggml.v0.4.0.so" "$bins/libggml-base.so" -lm \
    -Wl,-rpath,"$bins" -o "$out/grammar_bench"
cc -O2 -Wall -I"$out/llama.cpp/include" -I"$out/llama.cpp/ggml/include" "$here/decode_smoke.c" \
    "$bins/libllama.v0.4.0.so" "$bins/libggml.v0.4.0.so" "$bins/libggml-base.so" \
    -Wl,-rpath,"$bins" -o "$out/decode_smoke"

# the schema must be the one in GrammarBench.DISABLED_MaskCost, byte for byte
/usr/bin/python3 - "$root/tests/grammar_test.cpp" "$here/mask_cost_schema.json" <<'EOF'
import re, sys
test = open(sys.argv[1]).read()
m = re.search(r'TEST\(GrammarBench, DISABLED_MaskCost\) \{\n    const std::string schema = R"\((.*?)\)";', test, re.S)
if not m or m.group(1) != open(sys.argv[2]).read().rstrip("\n"):
    sys.exit("mask_cost_schema.json differs from the schema in GrammarBench.DISABLED_MaskCost")
EOF
"$build/waste" synth --preset tiny --overrides '{"vocab_size": 163840}' "$out/k3tok" >/dev/null
"$out/waste_vocab" model "$out/k3tok" "$out/k3.tsv"
"$out/waste_vocab" ranks "$root/models/kimi-mini/tiktoken.model" "$out/kimi.tsv"
"$out/waste_vocab" gbnf "$here/mask_cost_schema.json" > "$out/mask_cost.gbnf"
/usr/bin/python3 "$here/make_gguf.py" "$out/k3.tsv" "$out/k3.gguf"
/usr/bin/python3 "$here/make_gguf.py" "$out/kimi.tsv" "$out/kimi.gguf" --add-end

for v in k3 kimi; do "$out/decode_smoke" "$out/$v.gguf" "$bins"; done  # the GGUFs run, not only load
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
for ((round = 1; round <= rounds; ++round)); do
    echo "== round $round: WASTE ($(cut -d' ' -f1-3 /proc/loadavg))"
    "$build/grammar_test" --gtest_also_run_disabled_tests --gtest_filter='*MaskCost*' | grep 'vocab '
    for v in k3 kimi; do
        echo "== round $round: llama.cpp $v ($(cut -d' ' -f1-3 /proc/loadavg))"
        "$out/grammar_bench" "$out/$v.gguf" "$out/mask_cost.gbnf" "$min_masks" "$bins" 2>/dev/null
    done
done
echo "== after: WASTE ($(cut -d' ' -f1-3 /proc/loadavg))"
"$build/grammar_test" --gtest_also_run_disabled_tests --gtest_filter='*MaskCost*' | grep 'vocab '
echo "== done ($(cut -d' ' -f1-3 /proc/loadavg))"
