#!/usr/bin/python3
"""What each engine's quantisation costs on the comparison's weights (issue 19):
the logits of llama.cpp's Q4_K_M file and of our VQ3R container against the
unquantised model, on the same token ids.

    compare_llama_quality.py --waste BIN --container DIR --logits-dump BIN --backend-dir DIR
        --f16 F16.gguf --q4 Q4.gguf --out quality.json [--prompts 4] [--ids 64] [--every 8]

The unquantised model is llama.cpp running the F16 GGUF: the checkpoint is
bf16, and every bf16 weight of these Gaussian tensors is exactly an f16, so
that file holds the checkpoint's weights unchanged (and llama.cpp's F16 run
matched the float64 reference to 4e-4 relative in
python/tests/test_kimi_linear_llamacpp.py). llama.cpp runs through
tools/llama-cpp/logits_dump.c (all positions of a prompt at once, F32 KV
cache); ours through `waste eval --full` on each prefix. Compared at every
--every-th position of --prompts random prompts: relative L2 error of the
logits, KL(unquantised || quantised) of the next-token distributions, and
top-1 agreement.
"""
import argparse
import json
import os
import random
import subprocess
import tempfile

import numpy as np


def llama_logits(a, gguf, ids):
    with tempfile.NamedTemporaryFile(suffix=".f32") as out:
        subprocess.run([a.logits_dump, gguf, out.name] + [str(i) for i in ids], check=True, capture_output=True,
                       env=dict(os.environ, LOGITS_DUMP_BACKEND_DIR=a.backend_dir))
        return np.fromfile(out.name, dtype="<f4").reshape(len(ids), -1).astype(np.float64)


def waste_logits(a, ids):
    r = subprocess.run([a.waste, "eval", a.container, "--ids", " ".join(map(str, ids)), "--full", "--json",
                        "--budget", "1G", "--threads", "1"], check=True, capture_output=True, text=True)
    return np.array(json.loads(r.stdout)["logits"], dtype=np.float64)


def log_softmax(x):
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def compare(ref, got):
    lp, lq = log_softmax(ref), log_softmax(got)
    return {"rel_l2": float(np.linalg.norm(got - ref) / np.linalg.norm(ref)),
            "kl": float((np.exp(lp) * (lp - lq)).sum()),
            "top1_agrees": bool(int(np.argmax(ref)) == int(np.argmax(got)))}


def summary(points):
    return {"positions": len(points), "rel_l2_median": float(np.median([p["rel_l2"] for p in points])),
            "kl_median": float(np.median([p["kl"] for p in points])),
            "kl_mean": float(np.mean([p["kl"] for p in points])),
            "top1_agreement": sum(p["top1_agrees"] for p in points) / len(points)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("--waste", "--container", "--logits-dump", "--backend-dir", "--f16", "--q4", "--out"):
        ap.add_argument(name, required=True)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--ids", type=int, default=64)
    ap.add_argument("--every", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if not (1 <= a.prompts <= 64 and 1 <= a.ids <= 1024 and 1 <= a.every <= a.ids):
        ap.error("prompts 1..64, ids 1..1024, every 1..ids")
    rng = random.Random(a.seed)
    with open(os.path.join(a.container, "manifest.json")) as f:
        vocab = int(json.load(f)["config"]["vocab_size"])
    q4, vq = [], []
    for _ in range(a.prompts):
        ids = [rng.randrange(vocab) for _ in range(a.ids)]
        f16 = llama_logits(a, a.f16, ids)
        q = llama_logits(a, a.q4, ids)
        for n in range(a.every, a.ids + 1, a.every):
            q4.append(compare(f16[n - 1], q[n - 1]))
            vq.append(compare(f16[n - 1], waste_logits(a, ids[:n])))
    res = {"reference": "llama.cpp on the F16 GGUF (the bf16 checkpoint's weights)",
           "llama.cpp Q4_K_M": summary(q4), "waste VQ3R": summary(vq), "prompts": a.prompts, "ids": a.ids,
           "every": a.every}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    for k in ("llama.cpp Q4_K_M", "waste VQ3R"):
        s = res[k]
        print("%-17s logits rel. L2 %.3f, KL median %.4f mean %.4f nats, top-1 agrees %.0f%% (%d positions)"
              % (k, s["rel_l2_median"], s["kl_median"], s["kl_mean"], 100 * s["top1_agreement"], s["positions"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
