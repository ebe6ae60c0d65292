// oracle.cjs — the real tiktoken (npm `tiktoken`, the WASM build of OpenAI's
// Rust core) as a differential oracle for WASTE's tokenizer.
//
//   node oracle.cjs encode --rank-file F --pattern NAME [--specials S.json] [--markup]
//       reads JSON lines (each one JSON string) on stdin, writes one JSON
//       array of ids per line on stdout: encode_ordinary (plain) or
//       encode(text, "all") (markup)
//   node oracle.cjs bench --rank-file F --pattern NAME --file TEXT [--runs N]
//       encodes the file N times (default 5), prints the median as JSON
//
// NAME: o200k, cl100k, gpt2 (tiktoken's own pat_str, from the package's
// encoder definitions) or kimi (Kimi's pat_str verbatim, class intersections
// and all, in the Rust regex dialect tiktoken compiles). Any tiktoken rank
// file works with any pattern (Kimi's real ranks are not public: the tests
// use cl100k's). S.json is specials.json's form: [{"id": N, "text": "..."}].
"use strict";
const fs = require("fs");
const path = require("path");
const { Tiktoken } = require("tiktoken/lite");

const KIMI_PAT_STR = [
  "[\\p{Han}]+",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

function tiktokenPatStr(encoder) {
  const file = path.join(path.dirname(require.resolve("tiktoken")), "encoders", encoder + ".json");
  return JSON.parse(fs.readFileSync(file, "utf8")).pat_str;
}

function patStr(name) {
  switch (name) {
    case "kimi": return KIMI_PAT_STR;
    case "o200k": case "o200k_base": return tiktokenPatStr("o200k_base");
    case "cl100k": case "cl100k_base": return tiktokenPatStr("cl100k_base");
    case "gpt2": case "r50k_base": case "p50k_base": return tiktokenPatStr("r50k_base");
    default: throw new Error(`unknown pattern ${name} (kimi, o200k, cl100k, gpt2)`);
  }
}

function parseArgs(argv) {
  const args = { command: argv[0], runs: 5, markup: false };
  for (let i = 1; i < argv.length; ++i) {
    const key = argv[i];
    if (key === "--markup") args.markup = true;
    else if (["--rank-file", "--pattern", "--specials", "--file", "--runs"].includes(key)) {
      if (i + 1 >= argv.length) throw new Error(`${key} needs a value`);
      args[key.slice(2).replace("-", "_")] = argv[++i];
    } else throw new Error(`unknown argument ${key}`);
  }
  if (!args.rank_file || !args.pattern) throw new Error("--rank-file and --pattern are required");
  return args;
}

function makeEncoder(args) {
  const specials = {};
  if (args.specials)
    for (const { id, text } of JSON.parse(fs.readFileSync(args.specials, "utf8"))) specials[text] = id;
  return new Tiktoken(fs.readFileSync(args.rank_file, "utf8"), specials, patStr(args.pattern));
}

function encodeLines(args) {
  const encoder = makeEncoder(args);
  const input = fs.readFileSync(0, "utf8");
  const out = [];
  for (const line of input.split("\n")) {
    if (line === "") continue;
    const text = JSON.parse(line);
    const ids = args.markup ? encoder.encode(text, "all") : encoder.encode_ordinary(text);
    out.push(JSON.stringify(Array.from(ids)));
  }
  fs.writeSync(1, out.join("\n") + (out.length ? "\n" : ""));
  encoder.free();
}

function bench(args) {
  const encoder = makeEncoder(args);
  const text = fs.readFileSync(args.file, "utf8");
  const runs = Number(args.runs);
  const seconds = [];
  let tokens = 0;
  for (let run = 0; run < runs; ++run) {
    const start = process.hrtime.bigint();
    tokens = (args.markup ? encoder.encode(text, "all") : encoder.encode_ordinary(text)).length;
    seconds.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  seconds.sort((a, b) => a - b);
  const median = seconds[Math.floor(seconds.length / 2)];
  const bytes = Buffer.byteLength(text, "utf8");
  console.log(JSON.stringify({
    bytes, tokens, runs, median_seconds: median, min_seconds: seconds[0],
    tokens_per_second: tokens / median, megabytes_per_second: bytes / median / 1e6, pattern: args.pattern,
  }));
  encoder.free();
}

try {
  const args = parseArgs(process.argv.slice(2));
  if (args.command === "encode") encodeLines(args);
  else if (args.command === "bench") bench(args);
  else throw new Error("usage: oracle.cjs encode|bench --rank-file F --pattern NAME ...");
} catch (error) {
  console.error(`oracle: ${error.message}`);
  process.exit(1);
}
