#!/usr/bin/env bash
# bench-streaming.sh — expert streaming at the releases' shapes (issue 36):
# each preset written by `waste synth` (random weights at the release's
# dimensions), measured at budgets of fractions of its container by
# scripts/bench_streaming.py (see its header for what each cell measures).
#
#   scripts/bench-streaming.sh [--preset qwen3-30b-a3b[,gpt-oss-20b,...]] [--work DIR] [--build DIR]
#       [--fractions 1/2,1/4,1/8] [--prompts 512,2048] [--tokens 64] [--runs 3] [--long-runs 1]
#       [--threads 2] [--lut int8|exact] [--trace FILE | --no-trace]
#
# Containers go to the work dir (default /tmp/bench-streaming), kept between
# runs (qwen3-30b-a3b is 11.2 GiB, gpt-oss-20b 8.2, kimi-linear-48b 17.9;
# `waste synth --list` gives each preset's size; deepseek-v3 needs a slice,
# e.g. a preset written by hand with num_hidden_layers). The routing trace
# (default ../shared/data/routing/kimi-linear-48b-300tok.jsonl, a real
# router's) is replayed at each cell's cache size relative to one token's
# working set. Writes DIR/results.json and DIR/table.md and prints the table.
# One preset at the defaults takes ~25 minutes on 2 cores: run nothing else
# beside it (the machine's load is in every figure).
set -euo pipefail
cd "$(dirname "$0")/.."
presets=qwen3-30b-a3b work=/tmp/bench-streaming build="" fractions=1/2,1/4,1/8 prompts=512,2048 tokens=64 runs=3 long_runs=1
threads=2 lut=int8 trace=../shared/data/routing/kimi-linear-48b-300tok.jsonl
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) presets=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --fractions) fractions=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --long-runs) long_runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --lut) lut=$2; shift 2 ;;
    --trace) trace=$2; shift 2 ;;
    --no-trace) trace=""; shift ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [ -z "$build" ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$(nproc)" --target waste
  build=build/release
fi
waste=$(realpath "$build/waste")
mkdir -p "$work"
containers=()
for preset in ${presets//,/ }; do
  dir=$work/$preset
  if [ ! -f "$dir/manifest.json" ]; then
    echo "== writing $preset ($("$waste" synth --list | awk -v p="$preset" '$1 == p {print $2, $3}'))" >&2
    rm -rf "$dir"
    "$waste" synth "$dir" --preset "$preset" --seed 1 >/dev/null
  fi
  containers+=(--container "$dir")
done
/usr/bin/python3 scripts/bench_streaming.py --waste "$waste" "${containers[@]}" --fractions "$fractions" --prompts "$prompts" \
  --tokens "$tokens" --runs "$runs" --long-runs "$long_runs" --threads "$threads" --lut "$lut" ${trace:+--trace "$trace"} \
  --out "$work/results.json" --table "$work/table.md" > /dev/null
cat "$work/table.md"
