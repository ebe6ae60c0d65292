#!/usr/bin/env bash
# demo.sh — builds everything and runs the main job: `waste run` on the
# default model. No trained model is bundled yet, so the default model is a
# seeded SYNTHETIC container of the `mid` shape (hidden 1024, 12 layers, 64
# experts top-8; random weights, so its tokens are noise, not language),
# generated on first use into build/default-model.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"

waste=build/release/waste
model=build/default-model
if [ ! -f "$model/manifest.json" ]; then
  echo "== generating the default model (synthetic, preset mid, seed 1) into $model"
  "$waste" synth "$model" --preset mid --seed 1
fi
echo "== waste info"
"$waste" info "$model"
echo "== waste plan"
"$waste" plan "$model"
echo "== waste run (greedy, 32 tokens; ids because the synthetic model has no trained tokenizer)"
"$waste" run "$model" --ids "1 2 3 4 5 6 7 8" -n 32 --temp 0
