#!/usr/bin/env bash
# compare-llama.sh — llama.cpp beside WASTE on the same weights (issue 19),
# from a fresh machine: no llama.cpp build, only the prebuilt CPU libraries of
# the pinned npm node-llama-cpp (tools/llama-cpp/package-lock.json).
#
#   sudo scripts/compare-llama.sh [--family kimi|deepseek|qwen3|glm|gpt-oss|minimax|mistral4|qwen35] [--work DIR] [--build DIR] [--runs N]
#        [--threads 1,2] [--prompts 64,512,2048] [--sweep 200,100,75,50,25,10 | --no-sweep] [--sweep-threads 1] [--timeout S]
#        [--headroom-mib M] [--no-quality | --only-quality]
#
# --family deepseek, qwen3, glm, gpt-oss, minimax, mistral4 or qwen35 (issues 16, 38): the model is a seeded
# bf16 checkpoint of that architecture at `waste synth --preset mid-FAMILY`'s
# shape (python -m waste_ref.hf_families), which both engines quantise for
# themselves, as for Kimi: `waste convert` for WASTE, the same weights as an
# F16 `deepseek2` / `qwen3moe` / `glm4moe` / `gpt-oss` / `minimax-m2` / `mistral4` / `qwen35moe` GGUF then llama.cpp's
# Q4_K_M for llama.cpp. Files are named mid-FAMILY*, results
# results-FAMILY.json, the picture docs/compare-llama-FAMILY.svg, and
# llama.cpp also runs the F16 file in RAM.
#
# 1. installs the npm package if missing, clones the llama.cpp sources bundled
#    in it (headers only are used), builds tools/llama-cpp/{bench_llama,
#    quantize_gguf}.c with cc against its libraries;
# 2. builds `waste` (cmake release preset) unless --build names a build dir;
# 3. writes the `mid` checkpoint (Kimi-Linear: python/waste_ref/hf_synth.py;
#    the others: python/waste_ref/hf_families.py; about 1.2 B parameters,
#    bf16, seed 1), converts it with `waste convert` (VQ3R experts; and, for
#    the quality step, with `--stages 4 --trunk-matrices q8`, the converter's
#    most precise setting), writes it as an F16 GGUF (gguf_kimi.py / gguf_moe.py) and
#    quantises that with llama.cpp's llama_model_quantize to Q4_K_M (and
#    Q3_K_M for the quality step);
# 4. runs both engines (scripts/compare_llama.py): in RAM at each thread count
#    and prompt length, driven alike (the same prompt ids, a full-prompt
#    warm-up, llama.cpp with llama-bench's thread pool and batch sizes, peak
#    RSS of every run; runs alternated between engines, medians), then under
#    memory cgroup limits at the --sweep percentages of the Q4_K_M file's size
#    (both engines cold in every run, --runs runs a cell; a run that cannot
#    finish costs its --timeout);
# 5. writes DIR/results.json and DIR/table.md, prints the table, and draws
#    docs/compare-llama.svg (scripts/compare_llama_svg.py);
# 6. unless --no-quality: what each quantisation costs, both engines' logits
#    against the F16 model's: llama.cpp's Q4_K_M and Q3_K_M, our default and
#    most precise containers in every timed mode (exact and int8, prefill and
#    decode) (scripts/compare_llama_quality.py, DIR/quality[-FAMILY].json).
# Intermediate files (about 4 GB) go to the work dir (default /tmp/compare-llama),
# kept between runs: delete it to start over. Needs root for the cgroup
# (/sys/fs/cgroup/memory, v1) and /proc/sys/vm/drop_caches; no swap (or the
# memsw limit, which is set too). A full run takes about 30-40 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
family=kimi work=/tmp/compare-llama build="" runs=3 threads=1,2 prompts=64,512,2048 sweep=200,100,75,50,25,10 sweep_threads=1 timeout=120 headroom=24
quality=1 measure=1
while [ $# -gt 0 ]; do
  case "$1" in
    --family) family=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --prompts) prompts=$2; shift 2 ;;
    --sweep) sweep=$2; shift 2 ;;
    --no-sweep) sweep=""; shift ;;
    --no-quality) quality=0; shift ;;
    --only-quality) measure=0 sweep=""; shift ;;
    --sweep-threads) sweep_threads=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --headroom-mib) headroom=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
case "$family" in kimi|deepseek|qwen3|glm|gpt-oss|minimax|mistral4|qwen35) ;; *) echo "--family must be kimi, deepseek, qwen3, glm, gpt-oss, minimax, mistral4 or qwen35" >&2; exit 2 ;; esac
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

# 3. the same weights for both engines: one bf16 checkpoint, quantised by each
ckpt=$work/mid-hf container=$work/mid.waste f16=$work/mid-f16.gguf q4=$work/mid-q4_k_m.gguf
q3=$work/mid-q3_k_m.gguf s4=$work/mid-s4q8.waste quality_json=$work/quality.json
results=$work/results.json table=$work/table.md svg=docs/compare-llama.svg
if [ "$family" != kimi ]; then
  ckpt=$work/mid-$family-hf container=$work/mid-$family.waste f16=$work/mid-$family-f16.gguf
  q4=$work/mid-$family-q4_k_m.gguf q3=$work/mid-$family-q3_k_m.gguf s4=$work/mid-$family-s4q8.waste
  quality_json=$work/quality-$family.json
  results=$work/results-$family.json table=$work/table-$family.md svg=docs/compare-llama-$family.svg
fi
if [ ! -f "$f16" ]; then
  rm -rf "$ckpt"
  if [ "$family" = kimi ]; then
    log "writing the mid Kimi-Linear checkpoint (1.2 B parameters, bf16), then its F16 GGUF"
    PYTHONPATH=python $py -m waste_ref.hf_synth "$ckpt" --model kimi-linear --shape mid --seed 1 --shards 6 >/dev/null
    PYTHONPATH=python $py -m waste_ref.gguf_kimi "$ckpt" "$f16.part" --f16 >/dev/null
  else
    log "writing a mid $family checkpoint (bf16, seed 1) at --preset mid-$family's shape, and its F16 GGUF"
    shape=$(mktemp -d "$work/shape.XXXXXX")
    "$waste" synth "$shape/c" --preset "mid-$family" --seed 1 > /dev/null
    model_type=$($py -c 'import json, sys; print(json.load(open(sys.argv[1]))["config"]["model_type"])' "$shape/c/manifest.json")
    PYTHONPATH=python $py -m waste_ref.hf_families "$ckpt" --family "$model_type" --config-from "$shape/c" \
      --gguf "$f16.part" --f16 >/dev/null
    rm -rf "$shape"
  fi
  mv "$f16.part" "$f16"
fi
if [ ! -f "$container/manifest.json" ]; then
  log "waste convert (VQ3R experts)"
  "$waste" convert "$ckpt" "$container" --json > "${container%.waste}-convert.json"
fi
if [ ! -f "$q4" ]; then
  log "llama.cpp's quantiser: Q4_K_M"
  "$work/quantize_gguf" "$f16" "$q4.part" Q4_K_M "$(nproc)" > "${q4%.gguf}.log" 2>&1 && mv "$q4.part" "$q4"
fi
if [ "$quality" = 1 ] && [ ! -f "$q3" ]; then
  log "llama.cpp's quantiser: Q3_K_M"
  "$work/quantize_gguf" "$f16" "$q3.part" Q3_K_M "$(nproc)" > "${q3%.gguf}.log" 2>&1 && mv "$q3.part" "$q3"
fi
if [ "$quality" = 1 ] && [ ! -f "$s4/manifest.json" ]; then
  log "waste convert --stages 4 --trunk-matrices q8 (the converter's most precise setting)"
  "$waste" convert "$ckpt" "$s4" --stages 4 --trunk-matrices q8 --json > "${s4%.waste}-convert.json"
fi

# 4, 5. measure, tabulate, draw
if [ "$measure" = 1 ]; then
model="mid Kimi-Linear (1.2 B)"
if [ "$family" != kimi ]; then
  model="mid $($py -c 'import json, sys
i = json.load(sys.stdin)
print({"deepseek-v3": "DeepSeek-V3", "qwen3-moe": "Qwen3-MoE", "glm4-moe": "GLM-4.5", "gpt-oss": "gpt-oss", "minimax-m2": "MiniMax-M2", "mistral4": "Mistral 4", "qwen35moe": "Qwen3.5-MoE"}.get(i["arch"], i["arch"]), "architecture (%.2f B)" % (i["params_total"] / 1e9))' \
    < <("$waste" info "$container" --json))"
fi
extra=$($py -c 'import json, sys; print(json.dumps({"container_bytes": int(sys.argv[1]), "f16_gguf_bytes": int(sys.argv[2]),
  "waste_commit": sys.argv[3], "model": sys.argv[4], "family": sys.argv[5],
  "llama_cpp": "npm node-llama-cpp 3.21.1 (llama.cpp release bundled there), CPU backends as shipped"}))' \
  "$(du -sb "$container" | cut -f1)" "$(stat -c %s "$f16")" "$(git rev-parse --short HEAD)" "$model" "$family")
# the shared prompt's ids are below the vocabulary; bits per weight over every parameter
read -r vocab params < <("$waste" info "$container" --json | $py -c 'import json, sys; i = json.load(sys.stdin); print(i["vocab"], i["params_total"])')
log "measuring (runs $runs, threads $threads, prompts $prompts, sweep '${sweep}')"
$py scripts/compare_llama.py --waste "$waste" --container "$container" --gguf "$q4" --vocab "$vocab" --params "$params" \
  --prompts "$prompts" --bench-llama "$work/bench_llama" --backend-dir "$bins" --out "$results" --table "$table" \
  --runs "$runs" --threads "$threads" --sweep "$sweep" --sweep-threads "$sweep_threads" --timeout "$timeout" --headroom-mib "$headroom" --extra "$extra"
if [ "$family" != kimi ]; then
  log "in RAM again with llama.cpp on the F16 file"
  $py scripts/compare_llama.py --waste "$waste" --container "$container" --gguf "$f16" --vocab "$vocab" --params "$params" \
    --prompts "$prompts" --bench-llama "$work/bench_llama" --backend-dir "$bins" --out "${results%.json}-f16.json" --table "${table%.md}-f16.md" \
    --runs "$runs" --threads "$threads" --sweep "" --timeout "$timeout" --extra "$extra" --gguf-type F16
fi
if [ -n "$sweep" ]; then
  $py scripts/compare_llama_svg.py "$results" "$svg"
  log "wrote $svg"
fi
fi
if [ "$quality" = 1 ]; then
  log "quantisation cost: logits against the F16 model's"
  $py scripts/compare_llama_quality.py --waste "$waste" --logits-dump "$work/logits_dump" --backend-dir "$bins" \
    --reference "$f16" --llama "llama.cpp Q4_K_M=$q4" --llama "llama.cpp Q3_K_M=$q3" \
    --container "waste VQ3R=$container" --container "waste 4 stages, Q8G trunk=$s4" --out "$quality_json" | tee -a "$table"
fi
log "results: $results, $table"
