#!/usr/bin/env bash
# bench_tokenizer.sh — tokens per second of WASTE's tokenizer (`waste tokenize
# --bench`) and of the real tiktoken (WASM, via node) on the same text: the
# median of RUNS encodes of each corpus (bench_corpus.cjs), one thread each,
# rank-file loading not counted. Prints a Markdown table.
#   tools/tiktoken-oracle/bench_tokenizer.sh [WASTE_BINARY] [RUNS]
# (default build/release/waste, 7 runs). Needs scripts/setup.sh's npm ci.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
waste="${1:-$root/build/release/waste}"
runs="${2:-7}"
data="$here/node_modules/gpt-tokenizer/data"
corpus="$root/build/tokenizer-bench"
node "$here/bench_corpus.cjs" "$corpus" 3

field() { node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(r[process.argv[1]])' "$1"; }

echo "| corpus | pattern (ranks) | MB | tokens | WASTE tok/s | tiktoken tok/s | ratio |"
echo "|---|---|---|---|---|---|---|"
for text in english mixed; do
  for setup in "o200k o200k_base" "cl100k cl100k_base" "kimi cl100k_base"; do
    set -- $setup
    pattern=$1 ranks="$data/$2.tiktoken"
    ours=$("$waste" tokenize --rank-file "$ranks" --pattern "$pattern" --file "$corpus/$text.txt" --bench "$runs")
    theirs=$(node "$here/oracle.cjs" bench --rank-file "$ranks" --pattern "$pattern" --file "$corpus/$text.txt" --runs "$runs")
    ours_tokens=$(echo "$ours" | field tokens)
    theirs_tokens=$(echo "$theirs" | field tokens)
    if [ "$ours_tokens" != "$theirs_tokens" ]; then
      echo "bench: $text/$pattern: $ours_tokens tokens here, $theirs_tokens from tiktoken" >&2
      exit 1
    fi
    ours_rate=$(echo "$ours" | field tokens_per_second)
    theirs_rate=$(echo "$theirs" | field tokens_per_second)
    mb=$(echo "$ours" | field bytes)
    awk -v t="$text" -v p="$pattern" -v r="$2" -v b="$mb" -v n="$ours_tokens" -v o="$ours_rate" -v k="$theirs_rate" \
      'BEGIN { printf "| %s | %s (%s) | %.2f | %d | %.2fM | %.2fM | %.2fx |\n", t, p, r, b / 1e6, n, o / 1e6, k / 1e6, o / k }'
  done
done
