"""Prepare kimi-mini's data: KJV text -> documents -> split -> BPE -> token ids.

Source: the King James Bible of Debian's `bible-kjv-text` (public domain, see
RECIPE.md), read through the `bible` program of Debian's `bible-kjv`
(`bible -l0 Gen1:1-Rev22:21` prints every chapter as a `Book N` heading and
`  V text` verse lines, no line wrapping). `--source FILE` reads such a dump
instead.

Split (fixed): the 1,189 chapters in canonical order, index i = 0..1188;
chapter i is held out as test iff i % 20 == 19 (59 chapters, ~5%), as
validation (model selection during training) iff i % 20 == 9 (60 chapters);
the rest is train. The tokenizer is trained on the train split only.

Documents, one per chapter:
- plain:  "[BOS]" + "Book N\n\n1 verse\n2 verse\n...\n" + "[EOS]"
- chat (train chapters with i % 5 == 2, ~20% of train):
  "[BOS]<|im_user|>user<|im_middle|>Read Book chapter N.<|im_end|>"
  "<|im_assistant|>assistant<|im_middle|>1 verse\n2 verse\n...<|im_end|>[EOS]"
  (markup as special ids, the strings in plain mode).
The validation and test splits are plain documents only.

Writes (the token files are ignored by git; the tokenizer files are the
release's):
  data/{train,val,test}.u16       little-endian uint16 ids, documents concatenated
  data/heldout.txt                the held-out documents' text, for the tokenizer check
  data/meta.json                  counts, split, sha256 of everything
  MODEL_DIR/tiktoken.model, tokenizer_config.json, chat.json
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import specials as sp  # noqa: E402

HELD_OUT_EVERY = 20
HELD_OUT_REMAINDER = 19
VAL_REMAINDER = 9
CHAT_EVERY = 5
CHAT_REMAINDER = 2

_HEADING = re.compile(r"^([1-3] )?[A-Z][A-Za-z ]*[a-z] \d+$")
_VERSE = re.compile(r"^  (\d+) (.*)$")


def read_kjv(source=None):
    if source:
        with open(source, "r", encoding="utf-8") as f:
            text = f.read()
    else:
        text = subprocess.run(["bible", "-l0", "Gen1:1-Rev22:21"], capture_output=True, check=True,
                              text=True, cwd="/").stdout
    chapters = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        if _HEADING.match(line):
            book, chap = line.rsplit(" ", 1)
            chapters.append((book, int(chap), []))
            continue
        m = _VERSE.match(line)
        if not m or not chapters:
            raise ValueError(f"unexpected line in the KJV dump: {line!r}")
        chapters[-1][2].append((int(m.group(1)), m.group(2).strip()))
    if len(chapters) != 1189:
        raise ValueError(f"expected 1189 chapters, got {len(chapters)}")
    return chapters


def chapter_body(verses):
    return "".join(f"{v} {t}\n" for v, t in verses)


def plain_text(book, chap, verses):
    return f"{book} {chap}\n\n" + chapter_body(verses)


def split(chapters):
    train, val, test = [], [], []
    for i, ch in enumerate(chapters):
        r = i % HELD_OUT_EVERY
        (test if r == HELD_OUT_REMAINDER else val if r == VAL_REMAINDER else train).append((i, ch))
    return train, val, test


def doc_ids(enc, i, chapter, allow_chat):
    book, chap, verses = chapter
    S = sp.SPECIALS
    if allow_chat and i % CHAT_EVERY == CHAT_REMAINDER:
        return ([sp.BOS, S["<|im_user|>"]] + enc.encode("user") + [S["<|im_middle|>"]]
                + enc.encode(f"Read {book} chapter {chap}.") + [S["<|im_end|>"], S["<|im_assistant|>"]]
                + enc.encode("assistant") + [S["<|im_middle|>"]] + enc.encode(chapter_body(verses))
                + [S["<|im_end|>"], sp.EOS])
    return [sp.BOS] + enc.encode(plain_text(book, chap, verses)) + [sp.EOS]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", help="a `bible -l0` dump instead of running `bible`")
    ap.add_argument("--data-dir", default=os.path.join(HERE, "data"))
    ap.add_argument("--model-dir", default=os.path.join(os.path.dirname(HERE), "models", "kimi-mini"))
    ap.add_argument("--tokenizer", help="use this existing rank file instead of training one")
    args = ap.parse_args()
    os.makedirs(args.data_dir, exist_ok=True)
    os.makedirs(args.model_dir, exist_ok=True)
    t0 = time.time()

    chapters = read_kjv(args.source)
    train, val, test = split(chapters)
    print(f"chapters: {len(train)} train, {len(val)} validation, {len(test)} held out")

    # The tokenizer sees what the model will read: plain train documents and
    # the plain strings of the chat documents.
    texts = []
    for i, (book, chap, verses) in train:
        texts.append(plain_text(book, chap, verses))
        if i % CHAT_EVERY == CHAT_REMAINDER:
            texts.append(f"Read {book} chapter {chap}.")
    rank_path = os.path.join(args.model_dir, "tiktoken.model")
    if args.tokenizer:
        tokens = bpe.read_rank_file(args.tokenizer)
    else:
        tokens = bpe.train_bpe(texts, sp.N_RANKS, log=print)
    if len(tokens) != sp.N_RANKS:
        raise SystemExit(f"tokenizer has {len(tokens)} ranks, layout needs {sp.N_RANKS}")
    bpe.write_rank_file(rank_path, tokens)
    sp.write_tokenizer_files(args.model_dir)
    print(f"tokenizer: {len(tokens)} ranks + {sp.N_RESERVED} specials ({time.time() - t0:.0f} s)")

    enc = bpe.Encoder(tokens, sp.SPECIALS)
    meta = {"source": args.source or "bible -l0 Gen1:1-Rev22:21 (Debian bible-kjv 4.38, bible-kjv-text 4.38)",
            "chapters": len(chapters), "held_out_rule": f"chapter index % {HELD_OUT_EVERY} == {HELD_OUT_REMAINDER}",
            "validation_rule": f"chapter index % {HELD_OUT_EVERY} == {VAL_REMAINDER}",
            "chat_rule": f"train chapter index % {CHAT_EVERY} == {CHAT_REMAINDER}",
            "test_chapters": [f"{b} {c}" for _, (b, c, _) in test]}
    for name, part, allow_chat in (("train", train, True), ("val", val, False), ("test", test, False)):
        ids = []
        for i, ch in part:
            ids.extend(doc_ids(enc, i, ch, allow_chat))
        arr = np.asarray(ids, dtype="<u2")
        path = os.path.join(args.data_dir, f"{name}.u16")
        arr.tofile(path)
        chars = sum(len(plain_text(*ch)) for _, ch in part)
        meta[name] = {"documents": len(part), "tokens": int(arr.size), "chars": chars, "sha256": sha256(path)}
        print(f"{name}: {len(part)} documents, {arr.size} tokens, {chars} chars")
    heldout = os.path.join(args.data_dir, "heldout.txt")
    with open(heldout, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(plain_text(*ch) for _, ch in test))
    meta["heldout_txt_sha256"] = sha256(heldout)
    meta["tiktoken_model_sha256"] = sha256(rank_path)
    with open(os.path.join(args.data_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
