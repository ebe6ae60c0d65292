// bench_corpus.cjs — writes the tokenizer benchmark's two corpora:
//   english.txt  Debian's /usr/share/common-licenses (every file, sorted),
//                repeated up to the size asked
//   mixed.txt    seeded multi-script text: words of Latin, Cyrillic, Greek,
//                Arabic, Hebrew, Devanagari, Han, Kana and Hangul between
//                spaces, punctuation, digit runs, emoji and newlines
//
//   node bench_corpus.cjs OUT_DIR [MEGABYTES]   (default 3)
// The same files on every machine with the same licenses directory.
"use strict";
const fs = require("fs");
const path = require("path");

const [outDir, megabytesArg] = process.argv.slice(2);
if (!outDir) {
  console.error("usage: node bench_corpus.cjs OUT_DIR [MEGABYTES]");
  process.exit(2);
}
const target = Number(megabytesArg || 3) * 1e6;
fs.mkdirSync(outDir, { recursive: true });

const licenses = "/usr/share/common-licenses";
const english = fs.readdirSync(licenses).sort()
  .map((name) => path.join(licenses, name))
  .filter((file) => fs.statSync(file).isFile())
  .map((file) => fs.readFileSync(file, "utf8")).join("\n");
let englishText = "";
while (Buffer.byteLength(englishText) < target) englishText += english;
fs.writeFileSync(path.join(outDir, "english.txt"), englishText);

// splitmix64 on BigInt: deterministic everywhere.
let state = 0x5eedn;
function next() {
  state = (state + 0x9E3779B97F4A7C15n) & 0xFFFFFFFFFFFFFFFFn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & 0xFFFFFFFFFFFFFFFFn;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & 0xFFFFFFFFFFFFFFFFn;
  return Number((z ^ (z >> 31n)) & 0xFFFFFFFn);
}
const below = (n) => next() % n;
const scripts = [
  [0x61, 0x7A], [0x61, 0x7A], [0x61, 0x7A], [0x430, 0x44F], [0x3B1, 0x3C9], [0x627, 0x64A],
  [0x5D0, 0x5EA], [0x915, 0x939], [0x4E00, 0x9FA5], [0x3041, 0x3093], [0xAC00, 0xD7A3],
];
function word() {
  const [first, last] = scripts[below(scripts.length)];
  const length = 1 + below(first >= 0x4E00 ? 4 : 9);
  let out = "";
  for (let i = 0; i < length; ++i) out += String.fromCodePoint(first + below(last - first + 1));
  return below(8) === 0 ? out[0].toUpperCase() + out.slice(1) : out;
}
const glue = [" ", " ", " ", " ", " ", ", ", ". ", "\n", "  ", " (", ") ", ": ", "! ", "? ", " \u2014 ", "\u3002", "'s "];
const parts = [];
let bytes = 0;
while (bytes < target) {
  let piece;
  const kind = below(20);
  if (kind === 0) piece = String(below(100000));
  else if (kind === 1) piece = String.fromCodePoint(0x1F600 + below(80));
  else piece = word();
  piece += glue[below(glue.length)];
  parts.push(piece);
  bytes += Buffer.byteLength(piece);
}
fs.writeFileSync(path.join(outDir, "mixed.txt"), parts.join(""));
