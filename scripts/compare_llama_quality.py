#!/usr/bin/python3
"""What each engine's quantisation costs on the comparison's weights (issues 19
and 41): the next-token distributions of llama.cpp's quantised files and of
our containers, in each of the engine's timed modes, against the unquantised
model, on the same token ids.

    compare_llama_quality.py --waste BIN --logits-dump BIN --backend-dir DIR --reference F16.gguf
        --llama LABEL=FILE.gguf [...] --container LABEL=DIR [...] --out quality.json
        [--modes exact-prefill,exact-decode,int8-prefill,int8-decode] [--prompts 8] [--ids 64] [--every 8]

The unquantised model is llama.cpp running the F16 GGUF of the bf16
checkpoint both sides quantise: every bf16 weight of these Gaussian tensors is
an f16 (up to the f16 subnormals below 6.1e-5, which keep 24 fraction bits of
absolute precision), so the file holds the checkpoint's weights, and llama.cpp's
F16 run matched the float64 reference to 4e-4 relative in
python/tests/test_kimi_linear_llamacpp.py. llama.cpp runs through
tools/llama-cpp/logits_dump.c (all positions of a prompt at once, F32 KV
cache). The engine runs each container in each --modes entry:
- `*-prefill`: `waste eval --full` on each scored prefix (the prompt one chunk,
  the experts as matrix products: int8 rows in `int8-prefill`);
- `*-decode`: `waste eval --decode-ids`, the first id a prompt and every later
  id a decode step (the lookup-table path: int8 tables in `int8-decode`), one
  run giving every position.
Scored at every --every-th position of --prompts random prompts: KL(unquantised
|| quantised) of the next-token distributions, top-1 agreement and the relative
L2 error of the logits. For an int8 mode the increment over the same
container's exact mode on the same path is reported too, both as the
difference of the mean KLs against the reference and as KL(exact || int8).
Files are described by bits per parameter: the file's bytes (metadata
included) × 8 over the model's parameter count (`waste info`'s params_total).
A llama.cpp file that logits_dump cannot run (llama.cpp aborts on some of its
own Q3_K_M files of the MLA families) is reported as not measured, with
llama.cpp's message, and the other rows are measured.
"""
import argparse
import json
import os
import random
import subprocess
import tempfile

import numpy as np

MODES = ("exact-prefill", "exact-decode", "int8-prefill", "int8-decode")


def labelled(text, what):
    label, sep, value = text.partition("=")
    if not sep or not label or not value:
        raise argparse.ArgumentTypeError("%s must be LABEL=PATH, got %r" % (what, text))
    return label, value


class LlamaFailed(RuntimeError):
    pass


def llama_logits(a, gguf, ids):
    with tempfile.NamedTemporaryFile(suffix=".f32") as out:
        r = subprocess.run([a.logits_dump, gguf, out.name] + [str(i) for i in ids], capture_output=True, text=True,
                           env=dict(os.environ, LOGITS_DUMP_BACKEND_DIR=a.backend_dir))
        if r.returncode != 0:
            said = [line for line in r.stderr.splitlines() if "GGML_ASSERT" in line or "error" in line.lower()]
            raise LlamaFailed("logits_dump exit %d on %s: %s" % (r.returncode, os.path.basename(gguf),
                                                                 (said or ["(no message)"])[0].strip()))
        return np.fromfile(out.name, dtype="<f4").reshape(len(ids), -1).astype(np.float64)


def waste_eval(a, container, lut, args):
    r = subprocess.run([a.waste, "eval", container, "--full", "--json", "--budget", a.budget, "--threads",
                        str(a.threads), "--lut", lut] + args, check=True, capture_output=True, text=True)
    return json.loads(r.stdout)


def waste_logits(a, container, mode, ids, positions):
    """-> {position: logits} at the scored positions (position n = after ids[:n])."""
    lut, path = mode.split("-")
    if path == "decode":
        steps = waste_eval(a, container, lut, ["--ids", str(ids[0]), "--decode-ids",
                                               " ".join(map(str, ids[1:max(positions)])), "--chunk", "1"])
        return {n: np.array(steps["step_logits"][n - 1], dtype=np.float64) for n in positions}
    return {n: np.array(waste_eval(a, container, lut, ["--ids", " ".join(map(str, ids[:n]))])["logits"],
                        dtype=np.float64) for n in positions}


def log_softmax(x):
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def compare(ref, got):
    lp, lq = log_softmax(ref), log_softmax(got)
    return {"rel_l2": float(np.linalg.norm(got - ref) / np.linalg.norm(ref)),
            "kl": float((np.exp(lp) * (lp - lq)).sum()),
            "top1_agrees": bool(int(np.argmax(ref)) == int(np.argmax(got)))}


def summary(points):
    kls = [p["kl"] for p in points]
    return {"positions": len(points), "rel_l2_median": float(np.median([p["rel_l2"] for p in points])),
            "kl_median": float(np.median(kls)), "kl_mean": float(np.mean(kls)),
            "kl_mean_stderr": float(np.std(kls, ddof=1) / np.sqrt(len(kls))) if len(kls) > 1 else 0.0,
            "top1_agreement": sum(p["top1_agrees"] for p in points) / len(points)}


def bits_per_parameter(path, params):
    size = (sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
            if os.path.isdir(path) else os.path.getsize(path))
    return {"bytes": size, "bits_per_parameter": 8.0 * size / params}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("--waste", "--logits-dump", "--backend-dir", "--reference", "--out"):
        ap.add_argument(name, required=True)
    ap.add_argument("--llama", action="append", default=[], type=lambda t: labelled(t, "--llama"))
    ap.add_argument("--container", action="append", required=True, type=lambda t: labelled(t, "--container"))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--ids", type=int, default=64)
    ap.add_argument("--every", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", default="4G")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    modes = a.modes.split(",")
    if not (1 <= a.prompts <= 64 and 2 <= a.ids <= 1024 and 1 <= a.every <= a.ids):
        ap.error("prompts 1..64, ids 2..1024, every 1..ids")
    if any(m not in MODES for m in modes):
        ap.error("--modes takes %s" % ", ".join(MODES))
    info = json.loads(subprocess.run([a.waste, "info", a.container[0][1], "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    params = int(info["params_total"])
    with open(os.path.join(a.container[0][1], "manifest.json")) as f:
        vocab = int(json.load(f)["config"]["vocab_size"])
    rng = random.Random(a.seed)
    failed = {}
    positions = list(range(a.every, a.ids + 1, a.every))
    rows = {label: [] for label, _ in a.llama}
    rows.update({"%s %s" % (label, m): [] for label, _ in a.container for m in modes})
    increments = {"%s %s" % (label, m): [] for label, _ in a.container for m in modes if m.startswith("int8")
                  and m.replace("int8", "exact") in modes}
    for _ in range(a.prompts):
        ids = [rng.randrange(vocab) for _ in range(a.ids)]
        ref = llama_logits(a, a.reference, ids)
        for label, gguf in a.llama:
            if label in failed:
                continue
            try:  # a file llama.cpp cannot run is reported as such, and the rest measured
                got = llama_logits(a, gguf, ids)
            except LlamaFailed as e:
                failed[label] = str(e)
                continue
            rows[label] += [compare(ref[n - 1], got[n - 1]) for n in positions]
        for label, container in a.container:
            got = {m: waste_logits(a, container, m, ids, positions) for m in modes}
            for m in modes:
                key = "%s %s" % (label, m)
                rows[key] += [compare(ref[n - 1], got[m][n]) for n in positions]
                if key in increments:
                    exact = got[m.replace("int8", "exact")]
                    increments[key] += [compare(exact[n], got[m][n]) for n in positions]
    res = {"reference": "llama.cpp on the F16 GGUF (the bf16 checkpoint's weights)", "params_total": params,
           "prompts": a.prompts, "ids": a.ids, "every": a.every, "seed": a.seed, "rows": {}}
    files = dict(a.llama)
    files.update({"%s %s" % (label, m): c for label, c in a.container for m in modes})
    for key, points in rows.items():
        if key in failed:
            res["rows"][key] = dict(failed=failed[key], **bits_per_parameter(files[key], params))
            continue
        row = dict(summary(points), **bits_per_parameter(files[key], params))
        if key in increments:
            exact = summary(rows[key.replace("int8", "exact")])
            row["over_exact"] = {"kl_mean_difference": row["kl_mean"] - exact["kl_mean"],
                                 "kl_exact_to_int8": summary(increments[key])}
        res["rows"][key] = row
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    for key, s in res["rows"].items():
        if "failed" in s:
            print("%-26s %.2f bits/param: not measured, %s" % (key, s["bits_per_parameter"], s["failed"]))
            continue
        line = ("%-26s %.2f bits/param: KL median %.4f mean %.4f±%.4f nats, top-1 agrees %.1f%%, logits rel. L2 %.3f"
                % (key, s["bits_per_parameter"], s["kl_median"], s["kl_mean"], s["kl_mean_stderr"],
                   100 * s["top1_agreement"], s["rel_l2_median"]))
        if "over_exact" in s:
            o = s["over_exact"]
            line += "; over exact: mean KL %+.5f, KL(exact||int8) mean %.5f" % (
                o["kl_mean_difference"], o["kl_exact_to_int8"]["kl_mean"])
        print(line + " (%d positions)" % s["positions"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
