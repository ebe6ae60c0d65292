#!/usr/bin/python3
"""Routing statistics from a `--dump-route` file (docs/QUALITY.md). Prints JSON.

    scripts/route_stats.py ROUTES.jsonl [--experts E]

- reuse: for each token that directly follows another of the same sequence
  (its "tok" is the previous line's + 1; a session reset or a new window
  starts over), per MoE layer, the fraction of the token's chosen experts
  that the previous token also chose in that layer. Mean over (token, layer)
  pairs, and per layer. Uniform random routing would give top_k / E.
- concentration, per MoE layer, over every token's selections: the share
  of selections taken by the most-used 10% and 25% of the layer's experts
  (rounded up to whole experts), and the normalised usage entropy
  H(usage) / ln E (1 = perfectly even, 0 = one expert). E is --experts, else
  the largest expert id seen + 1 (an expert never chosen then counts only
  if a larger id was seen: give --experts for exact figures).
- lookahead: router-lookahead precision at ranks 1..k on decode tokens
  (scripts/lookahead_precision.py).
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lookahead_precision import lookahead_precision, read_routes  # noqa: E402


def reuse(tokens):
    per_layer = {}  # layer -> (sum of fractions, pairs)
    prev = None
    for token in tokens:
        if prev is not None and token["tok"] == prev["tok"] + 1:
            before = {e["layer"]: set(e["experts"]) for e in prev["layers"]}
            for entry in token["layers"]:
                chosen = entry["experts"]
                if entry["layer"] not in before or not chosen:
                    continue
                kept = sum(e in before[entry["layer"]] for e in chosen) / len(chosen)
                s, n = per_layer.get(entry["layer"], (0.0, 0))
                per_layer[entry["layer"]] = (s + kept, n + 1)
        prev = token
    pairs = sum(n for _, n in per_layer.values())
    return {
        "pairs": pairs,
        "mean": round(sum(s for s, _ in per_layer.values()) / pairs, 4) if pairs else None,
        "per_layer": {layer: round(s / n, 4) for layer, (s, n) in sorted(per_layer.items())},
    }


def concentration(tokens, experts=None):
    counts = {}  # layer -> {expert: selections}
    for token in tokens:
        for entry in token["layers"]:
            layer = counts.setdefault(entry["layer"], {})
            for e in entry["experts"]:
                layer[e] = layer.get(e, 0) + 1
    out = {}
    for layer, used in sorted(counts.items()):
        n_experts = experts or max(used) + 1
        total = sum(used.values())
        ranked = sorted(used.values(), reverse=True) + [0] * (n_experts - len(used))
        share = {f: round(sum(ranked[:math.ceil(f * n_experts)]) / total, 4) for f in (0.10, 0.25)}
        entropy = -sum(c / total * math.log(c / total) for c in used.values())
        out[layer] = {
            "selections": total,
            "experts_used": len(used),
            "top10_share": share[0.10],
            "top25_share": share[0.25],
            "entropy_norm": round(entropy / math.log(n_experts), 4) if n_experts > 1 else None,
        }
    mean = {k: round(sum(v[k] for v in out.values()) / len(out), 4) for k in ("top10_share", "top25_share", "entropy_norm")} \
        if out and all(v["entropy_norm"] is not None for v in out.values()) else None
    return {"per_layer": out, "mean": mean}


def route_stats(tokens, experts=None):
    phases = {}
    for token in tokens:
        phases[token.get("phase")] = phases.get(token.get("phase"), 0) + 1
    return {
        "tokens": len(tokens),
        "phases": phases,
        "reuse": reuse(tokens),
        "concentration": concentration(tokens, experts),
        "lookahead": lookahead_precision(tokens),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("routes")
    ap.add_argument("--experts", type=int, default=None, help="routed experts per MoE layer (default: largest id seen + 1)")
    args = ap.parse_args()
    print(json.dumps(route_stats(read_routes(args.routes), args.experts)))


if __name__ == "__main__":
    main()
