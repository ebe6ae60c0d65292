"""Evaluate a kimi-mini checkpoint in f32 on the CPU and write eval.json.

    python3 evaluate.py MODEL_DIR [--data-dir data] [--window 128]

- held-out perplexity: the test stream (data/test.u16: 59 held-out chapters,
  [BOS] text [EOS] each, concatenated) cut into non-overlapping windows of
  --window+1 tokens; every window starts with an empty state; perplexity =
  exp(mean next-token NLL over all predicted positions). Also bits per byte
  of the held-out text (total NLL / ln 2 / UTF-8 bytes of the documents'
  text, a tokenizer-independent figure).
- greedy samples (argmax, ties to the lower id; the whole sequence is re-run
  each step) for a plain prompt and a chat prompt.
- reference_prompt_ids: the first 64 ids of the test stream, for
  python/tests/test_trained_model.py.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bpe  # noqa: E402
import model as M  # noqa: E402
import specials as sp  # noqa: E402

PLAIN_PROMPT = "Genesis 20\n\n1 And Abraham"
CHAT_USER = "Read Psalms chapter 23."


@torch.no_grad()
def greedy(model, ids, n, stop=None):
    seq = list(ids)
    out = []
    for _ in range(n):
        logits = model(torch.tensor([seq]))[0, -1]
        nxt = int(torch.argmax(logits).item())  # first maximum: ties -> lower id
        out.append(nxt)
        seq.append(nxt)
        if stop is not None and nxt == stop:
            break
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--data-dir", default=os.path.join(HERE, "data"))
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=48, help="greedy tokens per sample")
    ap.add_argument("--max-windows", type=int, default=0, help="score only the first N windows (quick checks)")
    args = ap.parse_args()
    t0 = time.time()

    model = M.load_hf(args.model_dir)
    model.eval()
    model.set_moe_impl("gather")
    enc = bpe.Encoder(bpe.read_rank_file(os.path.join(args.model_dir, "tiktoken.model")), sp.SPECIALS)

    test = torch.from_numpy(np.fromfile(os.path.join(args.data_dir, "test.u16"), dtype="<u2").astype(np.int64))
    T = args.window
    n = (test.numel() - 1) // T
    if args.max_windows:
        n = min(n, args.max_windows)
    wins = torch.stack([test[i * T:i * T + T + 1] for i in range(n)])
    nll, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, n, args.batch):
            w = wins[i:i + args.batch]
            logits = model(w[:, :-1])
            nll += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum").item()
            count += w[:, 1:].numel()
    with open(os.path.join(args.data_dir, "heldout.txt"), "rb") as f:
        heldout_bytes = len(f.read())
    covered = count / (test.numel() - 1)  # fraction of the stream's predictions scored

    plain_ids = [sp.BOS] + enc.encode(PLAIN_PROMPT)
    plain_out = greedy(model, plain_ids, args.tokens, stop=sp.EOS)
    S = sp.SPECIALS
    chat_ids = ([sp.BOS, S["<|im_user|>"]] + enc.encode("user") + [S["<|im_middle|>"]] + enc.encode(CHAT_USER)
                + [S["<|im_end|>"], S["<|im_assistant|>"]] + enc.encode("assistant") + [S["<|im_middle|>"]])
    chat_out = greedy(model, chat_ids, args.tokens, stop=sp.EOS)

    result = {
        "heldout": {"split": "test (59 chapters, chapter index % 20 == 19)", "dtype": "float32", "device": "cpu",
                    "window": T, "windows": n, "predicted_tokens": count, "stream_tokens": int(test.numel()),
                    "nll_per_token": round(nll / count, 5), "perplexity": round(math.exp(nll / count), 3),
                    "bits_per_byte": round(nll / math.log(2) / (heldout_bytes * covered), 4)},
        "samples": [
            {"kind": "plain", "prompt": PLAIN_PROMPT, "prompt_ids": plain_ids, "greedy_ids": plain_out,
             "greedy_text": enc.decode(plain_out)},
            {"kind": "chat", "user": CHAT_USER, "prompt_ids": chat_ids, "greedy_ids": chat_out,
             "greedy_text": enc.decode(chat_out)},
        ],
        "reference_prompt_ids": test[:64].tolist(),
        "params": M.count_params(model),
        "seconds": round(time.time() - t0, 1),
    }
    with open(os.path.join(args.model_dir, "eval.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps(result["heldout"]))
    for s in result["samples"]:
        print(s["kind"], repr(s["greedy_text"]))


if __name__ == "__main__":
    main()
