#!/usr/bin/env bash
# compare-llama.sh — llama.cpp beside WASTE on the same weights (issue 19),
# from a fresh machine: no llama.cpp build, only the prebuilt CPU libraries of
# the pinned npm node-llama-cpp (tools/llama-cpp/package-lock.json).
#
#   sudo scripts/compare-llama.sh [--work DIR] [--build DIR] [--runs N]
#        [--threads 1,2] [--sweep 200,100,75,50,25,10 | --no-sweep] [--sweep-threads 1] [--timeout S]
#        [--headroom-mib M] [--no-quality]
#
# 1. installs the npm package if missing, clones the llama.cpp sources bundled
#    in it (headers only are used), builds tools/llama-cpp/{bench_llama,
#    quantize_gguf}.c with cc against its libraries;
# 2. builds `waste` (cmake release preset) unless --build names a build dir;
# 3. writes the `mid` Kimi-Linear checkpoint (python/waste_ref/hf_synth.py,
#    1.2 B parameters, bf16, seed 1), converts it with `waste convert` (VQ3R
#    experts), writes it as an F16 GGUF (python/waste_ref/gguf_kimi.py) and
#    quantises that with llama.cpp's llama_model_quantize to Q4_K_M;
# 4. runs both engines (scripts/compare_llama.py): in RAM at each thread count
#    (runs alternated between engines, medians), then under memory cgroup
#    limits at the --sweep percentages of the Q4_K_M file's size;
# 5. writes DIR/results.json and DIR/table.md, prints the table, and draws
#    docs/compare-llama.svg (scripts/compare_llama_svg.py);
# 6. unless --no-quality: what each quantisation costs, both engines' logits
#    against the F16 model's (scripts/compare_llama_quality.py, DIR/quality.json).
# Intermediate files (about 4 GB) go to the work dir (default /tmp/compare-llama),
# kept between runs: delete it to start over. Needs root for the cgroup
# (/sys/fs/cgroup/memory, v1) and /proc/sys/vm/drop_caches; no swap (or the
# memsw limit, which is set too). A full run takes about 15-20 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=/tmp/compare-llama build="" runs=3 threads=1,2 sweep=200,100,75,50,25,10 sweep_threads=1 timeout=120 headroom=24
quality=1
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --sweep) sweep=$2; shift 2 ;;
    --no-sweep) sweep=""; shift ;;
    --no-quality) quality=0; shift ;;
    --sweep-threads) sweep_threads=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --headroom-mib) headroom=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [ -n "$sweep" ] && { [ ! -w /sys/fs/cgroup/memory ] || [ ! -w /proc/sys/vm/drop_caches ]; }; then
  echo "the sweep needs root, a writable cgroup v1 memory controller and drop_caches (or pass --no-sweep)" >&2
  exit 2
fi
mkdir -p "$work"
py=/usr/bin/python3
log() { echo "== $(date -u +%H:%M:%S) $*" >&2; }

# 1. llama.cpp: the npm package's libraries and the headers of the same release
llama=tools/llama-cpp
bins=$root/$llama/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [ ! -f "$bins/libllama.v0.4.0.so" ]; then
  log "installing npm node-llama-cpp (prebuilt libraries, no download or build of llama.cpp)"
  (cd $llama && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --ignore-scripts --omit=optional)
fi
src=$work/llama.cpp
[ -d "$src/include" ] || git -c advice.detachedHead=false clone -q "$llama/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src"
for tool in bench_llama quantize_gguf logits_dump; do
  cc -O2 -Wall -I"$src/include" -I"$src/ggml/include" "$llama/$tool.c" \
    "$bins/libllama.v0.4.0.so" "$bins/libggml.v0.4.0.so" "$bins/libggml-base.so" -Wl,-rpath,"$bins" -o "$work/$tool"
done

# 2. waste
if [ -z "$build" ]; then
  log "building waste (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$(nproc)" --target waste
  build=build/release
fi
waste=$(realpath "$build/waste")

# 3. the same weights for both engines
ckpt=$work/mid-hf container=$work/mid.waste f16=$work/mid-f16.gguf q4=$work/mid-q4_k_m.gguf
if [ ! -f "$ckpt/config.json" ]; then
  log "writing the mid Kimi-Linear checkpoint (1.2 B parameters, bf16)"
  rm -rf "$ckpt"
  PYTHONPATH=python $py -m waste_ref.hf_synth "$ckpt" --model kimi-linear --shape mid --seed 1 --shards 6 >/dev/null
fi
if [ ! -f "$container/manifest.json" ]; then
  log "waste convert (VQ3R experts)"
  "$waste" convert "$ckpt" "$container" --json > "$work/convert.json"
fi
if [ ! -f "$q4" ]; then
  log "F16 GGUF, then llama.cpp's quantiser to Q4_K_M"
  PYTHONPATH=python $py -m waste_ref.gguf_kimi "$ckpt" "$f16.part" --f16 && mv "$f16.part" "$f16"
  "$work/quantize_gguf" "$f16" "$q4.part" Q4_K_M "$(nproc)" > "$work/quantize.log" 2>&1 && mv "$q4.part" "$q4"
fi

# 4, 5. measure, tabulate, draw
extra=$($py -c 'import json, sys; print(json.dumps({"container_bytes": int(sys.argv[1]), "f16_gguf_bytes": int(sys.argv[2]),
  "waste_commit": sys.argv[3], "llama_cpp": "npm node-llama-cpp 3.21.1 (llama.cpp release bundled there), CPU backends as shipped"}))' \
  "$(du -sb "$container" | cut -f1)" "$(stat -c %s "$f16")" "$(git rev-parse --short HEAD)")
log "measuring (runs $runs, threads $threads, sweep '${sweep}')"
$py scripts/compare_llama.py --waste "$waste" --container "$container" --gguf "$q4" \
  --bench-llama "$work/bench_llama" --backend-dir "$bins" --out "$work/results.json" --table "$work/table.md" \
  --runs "$runs" --threads "$threads" --sweep "$sweep" --sweep-threads "$sweep_threads" --timeout "$timeout" --headroom-mib "$headroom" --extra "$extra"
if [ -n "$sweep" ]; then
  $py scripts/compare_llama_svg.py "$work/results.json" docs/compare-llama.svg
  log "wrote docs/compare-llama.svg"
fi
if [ "$quality" = 1 ]; then
  log "quantisation cost: logits against the F16 model's"
  $py scripts/compare_llama_quality.py --waste "$waste" --container "$container" --logits-dump "$work/logits_dump" \
    --backend-dir "$bins" --f16 "$f16" --q4 "$q4" --out "$work/quality.json" | tee -a "$work/table.md"
fi
log "results: $work/results.json, $work/table.md"
