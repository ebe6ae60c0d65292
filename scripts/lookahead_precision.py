#!/usr/bin/python3
"""Router-lookahead precision from a `--dump-route` file.

For every decode token and MoE layer that carries a prediction ("lookahead",
best first), precision at rank r is the fraction of rank-r predictions that
the layer's router then chose; "top r" is the fraction of the first r
predictions that were chosen. Prints JSON.

    scripts/lookahead_precision.py ROUTES.jsonl

scripts/route_stats.py imports read_routes and lookahead_precision.
"""
import json
import sys


def read_routes(path):
    """The dump's tokens (one parsed JSON object per non-empty line), in order."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def lookahead_precision(tokens):
    at_rank, top = {}, {}
    for token in tokens:
        if token.get("phase") != "decode":
            continue
        for entry in token["layers"]:
            predicted = entry.get("lookahead") or []
            chosen = set(entry["experts"])
            for r, expert in enumerate(predicted, 1):
                hit = expert in chosen
                n, h = at_rank.get(r, (0, 0))
                at_rank[r] = (n + 1, h + hit)
            for r in range(1, len(predicted) + 1):
                n, h = top.get(r, (0, 0))
                top[r] = (n + r, h + sum(e in chosen for e in predicted[:r]))
    return {
        "predictions": at_rank.get(1, (0, 0))[0],
        "precision_at_rank": {r: round(h / n, 4) for r, (n, h) in sorted(at_rank.items())},
        "precision_top": {r: round(h / n, 4) for r, (n, h) in sorted(top.items())},
    }


def main(path):
    print(json.dumps(lookahead_precision(read_routes(path))))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
