"""The C++ engine against this independent reference, on synthetic containers
written by `waste synth` (so the reference also checks the C++ writer).

Containers: tiny Kimi-Linear-like; tiny K3-like with every K3 text feature,
with and without the `language_model.` prefix; VQ2R and VQ4P expert formats.
Prompts of 1, 20 and 100 tokens (100 spans two 64-token prefill chunks).

Tolerances, and why:
- last-position logits: max|diff| <= 1e-5 * max|logit| (relative to the
  largest logit). The engine computes in f32 with f32 accumulation over at
  most a few thousand terms per dot product; the reference in f64. Measured
  differences are ~1e-7..1e-6 relative; 1e-5 leaves room for summation order
  (SIMD variants) while still catching any real formula error, which shows
  up at 1e-2 or more.
- same argmax, and an identical 16-token greedy continuation.
- chunked prefill (64) vs token-by-token (--chunk 1): max|diff| <= 1e-3, same
  argmax (models.md §7: chunking may round differently).
- every layer's hidden state (WHID dumps) within 1e-4 relative per layer, so
  a failure names the first diverging layer.

The `waste` binary comes from WASTE_CLI, else build/release/waste; its
absence is a failure, not a skip (scripts/test.sh builds it first).
"""

import json
import os
import random
import subprocess
import tempfile
import unittest

import numpy as np

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT
from waste_ref import hidden_dump
from waste_ref.model import argmax_first, load

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))

CONTAINERS = {
    "tiny": ["--preset", "tiny"],
    "tiny-k3": ["--preset", "tiny-k3"],
    "tiny-k3-noprefix": ["--preset", "tiny-k3", "--set", "tensor_prefix="],
    "tiny-vq2r": ["--preset", "tiny", "--set", "expert_quant=VQ2R"],
    "tiny-vq4p": ["--preset", "tiny-k3", "--set", "expert_quant=VQ4P"],
}


def run(args):
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def prompt(n, vocab, seed):
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


class EngineVsReference(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise AssertionError(f"the waste binary {CLI} is missing: build it first (scripts/test.sh does)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.models = {}
        for name, args in CONTAINERS.items():
            path = os.path.join(cls.tmp.name, name)
            run([CLI, "synth", path, "--seed", "7", *args])
            cls.models[name] = (path, load(path))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def engine_eval(self, path, ids, *extra):
        out = run([CLI, "eval", path, "--ids", " ".join(map(str, ids)), "--top", "1", "--full", "--json", *extra])
        return np.array(json.loads(out)["logits"], dtype=np.float64)

    def test_logits_and_greedy(self):
        for name, (path, model) in self.models.items():
            vocab = int(json.loads(run([CLI, "info", path, "--json"]))["vocab"])
            for n in (1, 20, 100):
                with self.subTest(container=name, tokens=n):
                    ids = prompt(n, vocab, seed=n)
                    ref = model.last_logits(ids).double().numpy()
                    got = self.engine_eval(path, ids)
                    rel = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
                    self.assertLessEqual(rel, 1e-5, f"{name}, {n} tokens: relative max|diff| {rel:.3g}")
                    self.assertEqual(int(np.argmax(got)), int(argmax_first(model.last_logits(ids))))
                    want = model.greedy(ids, 16)
                    out = json.loads(run([CLI, "run", path, "--ids", " ".join(map(str, ids)), "-n", "16", "--temp", "0",
                                          "--json"]))
                    self.assertEqual(out["tokens"], list(want), f"{name}, {n} tokens: greedy continuation")

    def test_chunked_prefill_matches_token_by_token(self):
        for name in ("tiny", "tiny-k3"):
            path, _ = self.models[name]
            vocab = int(json.loads(run([CLI, "info", path, "--json"]))["vocab"])
            ids = prompt(100, vocab, seed=3)
            with self.subTest(container=name):
                chunked = self.engine_eval(path, ids, "--chunk", "64")
                single = self.engine_eval(path, ids, "--chunk", "1")
                self.assertLessEqual(np.max(np.abs(chunked - single)), 1e-3)
                self.assertEqual(int(np.argmax(chunked)), int(np.argmax(single)))

    def test_hidden_states_layer_by_layer(self):
        for name in ("tiny", "tiny-k3"):
            path, model = self.models[name]
            vocab = int(json.loads(run([CLI, "info", path, "--json"]))["vocab"])
            ids = prompt(20, vocab, seed=5)
            with self.subTest(container=name), tempfile.TemporaryDirectory() as tmp:
                dump = os.path.join(tmp, "engine.whid")
                self.engine_eval(path, ids, "--dump-hidden", dump)
                got = hidden_dump.read(dump).astype(np.float64)
                _, ref = model.forward(ids)
                ref = ref.double().numpy()
                self.assertEqual(got.shape, ref.shape)
                for slot in range(ref.shape[0]):
                    rel = np.max(np.abs(got[slot] - ref[slot])) / max(np.max(np.abs(ref[slot])), 1e-30)
                    self.assertLessEqual(rel, 1e-4, f"{name}: slot {slot} (after layer {slot - 1}) diverges: {rel:.3g}")


if __name__ == "__main__":
    unittest.main()
