"""Command line for the reference: logits, greedy continuation, hidden-state dumps.

    PYTHONPATH=python /usr/bin/python3 -m waste_ref.cli logits MODEL --ids "1 2 3" [--json]
    PYTHONPATH=python /usr/bin/python3 -m waste_ref.cli greedy MODEL --ids "1 2 3" -n 8 [--json]
    PYTHONPATH=python /usr/bin/python3 -m waste_ref.cli compare-hidden A.whid B.whid [--tol 1e-3]

`--dump-hidden FILE` (logits, greedy) writes the residual stream of the prompt
after every layer in the WHID format (see hidden_dump.py / python/README.md).
"""

import argparse
import json
import sys

import torch

from . import hidden_dump
from .model import load


def parse_ids(text):
    return [int(t) for t in text.replace(",", " ").split()]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="waste_ref", description="PyTorch reference for WASTE containers")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("model", help="container directory (model.waste)")
        p.add_argument("--ids", required=True, help='prompt token ids, e.g. "1 2 3"')
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("--f32", action="store_true", help="compute in float32 (default float64)")
        p.add_argument("--verify", action="store_true", help="check expert record crc32")
        p.add_argument("--dump-hidden", metavar="FILE", help="write every layer's hidden state (WHID)")

    p = sub.add_parser("logits", help="logits at the last prompt position")
    common(p)
    p = sub.add_parser("greedy", help="greedy continuation")
    common(p)
    p.add_argument("-n", type=int, default=8, help="tokens to generate")
    p.add_argument("--stop-eos", action="store_true", help="stop after config.eos_token_id")
    p = sub.add_parser("compare-hidden", help="per-layer max |diff| of two WHID files")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tol", type=float, default=1e-3, help="report the first layer above this")

    args = ap.parse_args(argv)

    if args.cmd == "compare-hidden":
        return hidden_dump.compare_main(args.a, args.b, args.tol)

    ids = parse_ids(args.ids)
    if not ids:
        ap.error("--ids is empty")
    model = load(args.model, dtype=torch.float32 if args.f32 else torch.float64, verify_crc=args.verify)
    if args.cmd == "logits" or args.dump_hidden:
        logits, hidden = model.forward(ids)
        if args.dump_hidden:
            hidden_dump.write(args.dump_hidden, hidden)

    if args.cmd == "logits":
        vals = [float(x) for x in logits[-1].tolist()]
        if args.json:
            json.dump({"logits": vals}, sys.stdout)
            sys.stdout.write("\n")
        else:
            for v in vals:
                sys.stdout.write(f"{v:.9g}\n")
        return 0

    out = model.greedy(ids, args.n, stop_at_eos=args.stop_eos)
    if args.json:
        json.dump({"prompt": ids, "greedy": out}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(" ".join(str(t) for t in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
