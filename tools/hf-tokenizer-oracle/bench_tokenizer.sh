#!/usr/bin/env bash
# bench_tokenizer.sh — MB/s of WASTE's tokenizer.json tokenizers (`waste
# tokenize --tokenizer-json F --bench`) and of Hugging Face's
# (@huggingface/tokenizers via node) on the same text: the median of RUNS
# plain-mode encodes of each corpus (tools/tiktoken-oracle/bench_corpus.cjs),
# one thread each, loading not counted. Prints a Markdown table, and fails
# when the two give different token counts.
#   tools/hf-tokenizer-oracle/bench_tokenizer.sh [WASTE_BINARY] [RUNS]
# (default build/release/waste, 5 runs). Needs scripts/setup.sh's npm ci.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
waste="${1:-$root/build/release/waste}"
runs="${2:-5}"
corpus="$root/build/tokenizer-bench"
node "$root/tools/tiktoken-oracle/bench_corpus.cjs" "$corpus" 3

field() { node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(r[process.argv[1]])' "$1"; }

echo "| corpus | tokenizer.json | MB | tokens | WASTE MB/s | Hugging Face (JS) MB/s | ratio |"
echo "|---|---|---|---|---|---|---|"
for text in english mixed; do
  for name in qwen3 deepseek_v3 gptoss; do
    file="$(node "$here/oracle.cjs" path --tokenizer "$name")"
    ours=$("$waste" tokenize --tokenizer-json "$file" --file "$corpus/$text.txt" --bench "$runs")
    theirs=$(node "$here/oracle.cjs" bench --tokenizer "$name" --file "$corpus/$text.txt" --runs "$runs")
    ours_tokens=$(echo "$ours" | field tokens)
    theirs_tokens=$(echo "$theirs" | field tokens)
    if [ "$ours_tokens" != "$theirs_tokens" ]; then
      echo "bench: $text/$name: $ours_tokens tokens here, $theirs_tokens from Hugging Face" >&2
      exit 1
    fi
    bytes=$(echo "$ours" | field bytes)
    ours_seconds=$(echo "$ours" | field median_seconds)
    theirs_rate=$(echo "$theirs" | field mb_per_second)
    awk -v t="$text" -v n="$name" -v b="$bytes" -v k="$ours_tokens" -v s="$ours_seconds" -v h="$theirs_rate" \
      'BEGIN { o = b / 1e6 / s; printf "| %s | %s | %.2f | %d | %.2f | %.2f | %.1fx |\n", t, n, b / 1e6, k, o, h, o / h }'
  done
done
