"""Check that the engine's tokenizer encodes whole splits exactly as bpe.py.

    python3 check_tokenizer.py WASTE_BINARY [MODEL_DIR] [--data-dir data]

Encodes data/heldout.txt (the 59 held-out chapters' text, prepare_data.py)
and, with --train-text, the train split's plain text, with training/bpe.py
and with `waste tokenize --rank-file MODEL_DIR/tiktoken.model --pattern kimi`;
prints the token counts and the first difference, exits 1 on any.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import prepare_data  # noqa: E402


def engine_ids(waste, rank_file, path):
    done = subprocess.run([waste, "tokenize", "--rank-file", rank_file, "--pattern", "kimi", "--file", path, "--json"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["tokens"]


def compare(name, text, enc, waste, rank_file):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8", newline="\n") as f:
        f.write(text)
        path = f.name
    try:
        want = enc.encode(text)
        got = engine_ids(waste, rank_file, path)
    finally:
        os.unlink(path)
    first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), None)
    same = first is None and len(want) == len(got)
    print(json.dumps({"text": name, "bytes": len(text.encode("utf-8")), "python_tokens": len(want),
                      "engine_tokens": len(got), "identical": same, "first_difference": first}))
    return same


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("waste")
    ap.add_argument("model_dir", nargs="?", default=os.path.join(os.path.dirname(HERE), "models", "kimi-mini"))
    ap.add_argument("--data-dir", default=os.path.join(HERE, "data"))
    ap.add_argument("--train-text", action="store_true", help="also the train split (needs `bible`)")
    args = ap.parse_args()
    rank_file = os.path.join(args.model_dir, "tiktoken.model")
    enc = bpe.Encoder(bpe.read_rank_file(rank_file))
    with open(os.path.join(args.data_dir, "heldout.txt"), encoding="utf-8") as f:
        ok = compare("heldout", f.read(), enc, args.waste, rank_file)
    if args.train_text:
        train, _, _ = prepare_data.split(prepare_data.read_kjv())
        text = "".join(prepare_data.plain_text(*ch) for _, ch in train)
        ok = compare("train", text, enc, args.waste, rank_file) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
