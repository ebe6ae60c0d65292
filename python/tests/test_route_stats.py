"""scripts/route_stats.py (and the lookahead_precision it reuses) on a tiny
hand-written route dump whose statistics are worked out by hand below.
Exact arithmetic on small fractions: compared to 1e-4, the scripts'
rounding of their printed figures.

The trace: 4 experts, top-2, MoE layers 1 and 2; a window of three tokens
(two prefill, one decode with lookahead) and then a new window (tok 0).

    tok  phase    layer 1   layer 2   lookahead (decode)
    0    prefill  [0, 1]    [2, 3]
    1    prefill  [1, 2]    [2, 3]
    2    decode   [1, 2]    [0, 1]    L1 [1, 3], L2 [0, 2]
    0    prefill  [3, 0]    [0, 2]    (a new window: no reuse pair with tok 2)
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
import route_stats  # noqa: E402

TRACE = [
    {"tok": 0, "phase": "prefill", "layers": [{"layer": 1, "experts": [0, 1], "weights": [1, 1], "lookahead": []},
                                              {"layer": 2, "experts": [2, 3], "weights": [1, 1], "lookahead": []}]},
    {"tok": 1, "phase": "prefill", "layers": [{"layer": 1, "experts": [1, 2], "weights": [1, 1], "lookahead": []},
                                              {"layer": 2, "experts": [2, 3], "weights": [1, 1], "lookahead": []}]},
    {"tok": 2, "phase": "decode", "layers": [{"layer": 1, "experts": [1, 2], "weights": [1, 1], "lookahead": [1, 3]},
                                             {"layer": 2, "experts": [0, 1], "weights": [1, 1], "lookahead": [0, 2]}]},
    {"tok": 0, "phase": "prefill", "layers": [{"layer": 1, "experts": [3, 0], "weights": [1, 1], "lookahead": []},
                                              {"layer": 2, "experts": [0, 2], "weights": [1, 1], "lookahead": []}]},
]

# Both layers' usage: counts {2, 3, 2, 1} (layer 1: experts 0..3; layer 2: 2, 1, 3, 2) of 8 selections.
ENTROPY = -(2 * 0.25 * math.log(0.25) + 0.375 * math.log(0.375) + 0.125 * math.log(0.125))


class RouteStats(unittest.TestCase):
    def test_reuse(self):
        r = route_stats.reuse(TRACE)
        # layer 1: tok 1 keeps 1 of 2 (expert 1), tok 2 keeps 2 of 2; layer 2: 2 of 2, then 0 of 2
        self.assertEqual(r["pairs"], 4)
        self.assertAlmostEqual(r["per_layer"][1], 0.75, delta=1e-4)
        self.assertAlmostEqual(r["per_layer"][2], 0.5, delta=1e-4)
        self.assertAlmostEqual(r["mean"], 2.5 / 4, delta=1e-4)

    def test_concentration(self):
        c = route_stats.concentration(TRACE, experts=4)
        for layer in (1, 2):
            got = c["per_layer"][layer]
            self.assertEqual(got["selections"], 8)
            self.assertEqual(got["experts_used"], 4)
            # 10% and 25% of 4 experts round up to 1 expert: the top one has 3 of 8
            self.assertAlmostEqual(got["top10_share"], 3 / 8, delta=1e-4)
            self.assertAlmostEqual(got["top25_share"], 3 / 8, delta=1e-4)
            self.assertAlmostEqual(got["entropy_norm"], ENTROPY / math.log(4), delta=1e-4)
        # With 8 experts (4 never chosen): 25% is 2 experts (3 + 2 of 8), entropy over ln 8
        c8 = route_stats.concentration(TRACE, experts=8)["per_layer"][1]
        self.assertAlmostEqual(c8["top10_share"], 3 / 8, delta=1e-4)
        self.assertAlmostEqual(c8["top25_share"], 5 / 8, delta=1e-4)
        self.assertAlmostEqual(c8["entropy_norm"], ENTROPY / math.log(8), delta=1e-4)

    def test_lookahead(self):
        la = route_stats.route_stats(TRACE, experts=4)["lookahead"]
        # L1 predicts [1, 3] for {1, 2}: rank 1 hit, rank 2 miss; L2 [0, 2] for {0, 1}: hit, miss
        self.assertEqual(la["predictions"], 2)
        self.assertAlmostEqual(la["precision_at_rank"][1], 1.0, delta=1e-4)
        self.assertAlmostEqual(la["precision_at_rank"][2], 0.0, delta=1e-4)
        self.assertAlmostEqual(la["precision_top"][2], 0.5, delta=1e-4)

    def test_command_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "routes.jsonl")
            with open(path, "w") as f:
                for token in TRACE:
                    f.write(json.dumps(token) + "\n\n")  # blank lines are skipped
            out = json.loads(subprocess.run([sys.executable, os.path.join(REPO_ROOT, "scripts", "route_stats.py"), path,
                                             "--experts", "4"], capture_output=True, text=True, check=True).stdout)
            self.assertEqual(out["tokens"], 4)
            self.assertEqual(out["phases"], {"prefill": 3, "decode": 1})
            self.assertAlmostEqual(out["reuse"]["mean"], 0.625, delta=1e-4)
            self.assertAlmostEqual(out["concentration"]["mean"]["top10_share"], 0.375, delta=1e-4)
            la = json.loads(subprocess.run([sys.executable, os.path.join(REPO_ROOT, "scripts", "lookahead_precision.py"),
                                            path], capture_output=True, text=True, check=True).stdout)
            self.assertEqual(la, json.loads(json.dumps(out["lookahead"])))


if __name__ == "__main__":
    unittest.main()
