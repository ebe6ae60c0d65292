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
oracle_dir="$(cd "$(dirname "$0")" && pwd)"
waste="${1:-$oracle_dir/../../build/release/waste}"
runs="${2:-5}"
corpus="$oracle_dir/../../build/tokenizer-bench"
node "$oracle_dir/../tiktoken-oracle/bench_corpus.cjs" "$corpus" 3

# One table row from the two JSON reports; fails when the token counts differ.
row() {
  node -e '
    const [text, name, ours, theirs] = process.argv.slice(1);
    const o = JSON.parse(ours), t = JSON.parse(theirs);
    if (o.tokens !== t.tokens) {
      console.error(`bench: ${text}/${name}: ${o.tokens} tokens here, ${t.tokens} from Hugging Face`);
      process.exit(1);
    }
    const rate = o.bytes / 1e6 / o.median_seconds;
    console.log(`| ${text} | ${name} | ${(o.bytes / 1e6).toFixed(2)} | ${o.tokens} | ${rate.toFixed(2)} | ` +
                `${t.mb_per_second.toFixed(2)} | ${(rate / t.mb_per_second).toFixed(1)}x |`);' "$@"
}

echo "| corpus | tokenizer.json | MB | tokens | WASTE MB/s | Hugging Face (JS) MB/s | ratio |"
echo "|---|---|---|---|---|---|---|"
for text in english mixed; do
  for name in qwen3 deepseek_v3 gptoss; do
    file="$(node "$oracle_dir/oracle.cjs" path --tokenizer "$name")"
    ours=$("$waste" tokenize --tokenizer-json "$file" --file "$corpus/$text.txt" --bench "$runs")
    theirs=$(node "$oracle_dir/oracle.cjs" bench --tokenizer "$name" --file "$corpus/$text.txt" --runs "$runs")
    row "$text" "$name" "$ours" "$theirs"
  done
done
