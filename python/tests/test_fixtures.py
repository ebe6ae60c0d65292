"""The reference against the upstream engine's answers on its own fixtures.

For every upstream fixture container and each of its three prompts (3, 20, 80
tokens): last-position logits within max|diff| <= 2e-3 of the upstream
`NAME.eval.json`, the same argmax, and the same 8-token greedy continuation
(fixtures/upstream/README.md). This validates the reference itself.
"""

import json
import os
import unittest

try:
    from . import _paths
except ImportError:  # run as a plain script directory
    import _paths

import torch

from waste_ref.model import argmax_first, load

TOL = 2e-3


class UpstreamFixtures(unittest.TestCase):
    maxdiffs = {}

    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(_paths.FIXTURES):
            raise AssertionError(f"upstream fixtures not found at {_paths.FIXTURES} "
                                 "(set WASTE_UPSTREAM_FIXTURES)")
        cls.models = {}
        cls.evals = {}
        for name in _paths.FIXTURE_NAMES:
            cls.models[name] = load(os.path.join(_paths.FIXTURES, name + ".waste"))
            with open(os.path.join(_paths.FIXTURES, name + ".eval.json")) as f:
                cls.evals[name] = json.load(f)

    def check(self, name):
        model = self.models[name]
        cases = self.evals[name]
        self.assertEqual(len(cases), 3)
        for case in cases:
            ids, want, greedy = case["prompt"], case["logits"], case["greedy"]
            with self.subTest(fixture=name, prompt_len=len(ids)):
                got = model.last_logits(ids)
                ref = torch.tensor(want, dtype=torch.float64)
                self.assertEqual(got.shape, ref.shape)
                diff = (got - ref).abs().max().item()
                self.maxdiffs[(name, len(ids))] = diff
                self.assertLessEqual(diff, TOL, f"{name} prompt {len(ids)}: max|diff| {diff}")
                self.assertEqual(argmax_first(got), argmax_first(ref))
                self.assertEqual(model.greedy(ids, len(greedy)), greedy)

    def test_tiny(self):
        self.check("tiny")

    def test_tiny_tok(self):
        self.check("tiny-tok")

    def test_tiny_prefix(self):
        self.check("tiny-prefix")
        self.assertEqual(self.models["tiny-prefix"].c.skipped, ["vision_tower.encoder.layers.0.fc0.weight"])

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("WASTE_REF_VERBOSE"):
            for (name, n), d in sorted(cls.maxdiffs.items()):
                print(f"  {name:12s} {n:3d} tokens: max|diff| {d:.3e}")


if __name__ == "__main__":
    unittest.main()
