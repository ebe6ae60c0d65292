"""scripts/bench_streaming.py (issue 36's streaming benchmark): the trace it
hands `waste simulate` and the figures it derives, on a hand-written route
dump and on a small preset measured end to end. Nothing about speed is
asserted (the machine decides that); what is checked holds on any machine:
the decode trace is exactly the first run's decode tokens, the demand
split sums to 1, Belady's optimum is never below our policy on the same
replay, and each bound is the quotient it says it is (1e-9 relative:
floating-point rounding of one division).

The binary: WASTE_CLI, else build/release/waste; its absence is a failure.
"""

import json
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
import bench_streaming  # noqa: E402

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))
TRACE = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data", "routing", "kimi-linear-48b-300tok.jsonl")


def token(tok, phase, experts):
    return {"tok": tok, "phase": phase, "layers": [{"layer": i, "experts": e, "weights": [1] * len(e), "lookahead": []}
                                                   for i, e in enumerate(experts)]}


class DecodeTrace(unittest.TestCase):
    def test_the_first_runs_decode_tokens_only(self):
        dump = [token(0, "prefill", [[0, 1], [2, 3]]), token(1, "decode", [[1, 2], [0, 1]]), token(2, "decode", [[3, 0], [1, 2]]),
                token(0, "prefill", [[2, 3], [0, 1]]), token(1, "decode", [[0, 3], [3, 2]])]  # the second run
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "route.jsonl"), os.path.join(d, "decode.jsonl")
            with open(src, "w") as f:
                f.write("\n".join(json.dumps(t) for t in dump) + "\n")
            self.assertEqual(bench_streaming.decode_trace(src, out), 2)
            with open(out) as f:
                self.assertEqual([json.loads(line) for line in f], [{"layers": [[1, 2], [0, 1]]}, {"layers": [[3, 0], [1, 2]]}])


class EndToEnd(unittest.TestCase):
    def test_a_small_preset_at_half_its_size(self):
        self.assertTrue(os.path.exists(CLI), f"{CLI} is missing: build the release preset first")
        self.assertTrue(os.path.exists(TRACE), f"{TRACE} is missing")
        with tempfile.TemporaryDirectory() as d:
            container = os.path.join(d, "tiny-qwen3")
            subprocess.run([CLI, "synth", container, "--preset", "tiny-qwen3", "--seed", "1"], check=True, capture_output=True)
            out = os.path.join(d, "results.json")
            subprocess.run([sys.executable, os.path.join(REPO_ROOT, "scripts", "bench_streaming.py"), "--waste", CLI, "--container", container,
                            "--fractions", "1/2", "--prompts", "8,16", "--tokens", "6", "--runs", "1", "--threads", "1", "--trace", TRACE,
                            "--disk-size", "16M", "--disk-seconds", "0.1", "--out", out], check=True, capture_output=True)
            with open(out) as f:
                results = json.load(f)
        [entry] = results["containers"]
        [cell] = entry["cells"]
        self.assertEqual(cell["fraction"], "1/2")
        self.assertGreaterEqual(cell["budget_bytes"], entry["container_bytes"] // 2)
        self.assertGreater(cell["decode_tok_s"], 0)
        self.assertIn("prefill_16_tok_s", cell)
        self.assertAlmostEqual(cell["demand_cache_hit_rate"] + cell["demand_lookahead_hit_rate"] + cell["demand_miss_rate"], 1.0, places=9)
        for replay in ("simulated_own_trace", "simulated_real_trace"):
            self.assertGreaterEqual(cell[replay]["belady_hit_rate"], cell[replay]["reuse_hit_rate"], replay)
        self.assertEqual(cell["simulated_own_trace"]["slots"], cell["cache_records"])
        self.assertEqual(cell["simulated_own_trace"]["tokens"], 6)
        if cell["bytes_read_per_token"]:
            self.assertAlmostEqual(cell["disk_bound_tok_s"] * cell["bytes_read_per_token"] / 1e9 / entry["disk_read_gb_per_s"], 1.0, places=9)
        self.assertAlmostEqual(cell["memory_bound_tok_s"] * cell["bytes_touched_per_token"] / 1e9 / cell["memory_gb_per_s"], 1.0, places=9)


if __name__ == "__main__":
    unittest.main()
