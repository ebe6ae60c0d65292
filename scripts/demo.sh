#!/usr/bin/env bash
# demo.sh — builds everything and runs the main job: `waste run` on the
# bundled default model, kimi-mini (models/kimi-mini: a small Kimi-Linear-style
# MoE model this project trained on the King James Bible, shipped as a
# Hugging Face checkpoint; training/RECIPE.md reproduces it). On first use it
# is converted with `waste convert` into build/kimi-mini.waste (VQ3R experts),
# exactly as a user converts a published checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

waste=build/release/waste
model=build/kimi-mini.waste
if [ ! -f "$model/manifest.json" ]; then
  echo "== converting models/kimi-mini into $model"
  "$waste" convert models/kimi-mini "$model"
fi
echo "== waste info"
"$waste" info "$model"
echo "== waste plan"
"$waste" plan "$model"
# Sampled (run's default: the model's generation_config.json, which kimi-mini
# has none of, so temperature 0.8, top-p 0.95); greedy decoding
# (--temp 0) loops on a model this small ("and the LORD thy God, and the
# LORD thy God, ..."). Each run draws a fresh seed; the summary line on stderr
# ends with it, and --seed N repeats that run.
echo "== waste run (sampled; the model is small and under-trained: KJV-flavoured English; --seed N repeats a run)"
"$waste" run "$model" --raw "$(printf 'Genesis 20\n\n1 And Abraham')" -n 64
