"""The C++ engine against this independent reference, on synthetic containers
written by `waste synth` (so the reference also checks the C++ writer).

Containers: tiny Kimi-Linear-like; tiny K3-like with every K3 text feature,
with and without the `language_model.` prefix; VQ2R and VQ4P expert formats;
a Q3G trunk (`trunk_quant=Q3G`: every quantised trunk tensor, embedding and
LM head included) on both shapes; grouped routing (`n_group` 4, `topk_group`
2) on both shapes. Prompts of 1, 20 and 100 tokens (100 spans two 64-token
prefill chunks).

"Relative" below is max|engine - reference| / max|reference| over the
vocabulary, for one position.

Tolerances, and why:
- last-position logits: relative <= 1e-5. The engine computes in f32 with f32
  accumulation over at most a few thousand terms per dot product; the
  reference in f64. Measured differences are ~1e-7..1e-6 relative; 1e-5
  leaves room for summation order (SIMD variants) while still catching any
  real formula error, which shows up at 1e-2 or more.
- same argmax, and the engine's 16-token greedy continuation (`run --temp 0
  --ignore-eos`) is the reference's: every token its argmax (ties to the
  lower id) after the tokens before it.
- decode, step by step: a prompt (1 or 60 tokens) prefilled, then 16 fixed
  ids each evaluated as its own decode step (`waste eval --decode-ids`); the
  logits after the prompt and after every step, relative <= 1e-5 (the same
  bound and reasons: decode is the same f32 math over a cache).
- token-by-token prefill (--chunk 1) and chunked prefill (64) each relative
  <= 1e-5 against the reference (models.md §7 lets chunking round
  differently; both stay within the suite's bound), same argmax.
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
import torch

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
    "tiny-q3g": ["--preset", "tiny", "--set", "trunk_quant=Q3G"],
    "tiny-k3-q3g": ["--preset", "tiny-k3", "--set", "trunk_quant=Q3G"],
    # tiny: 8 experts in 4 groups of 2, top-2 from the best 2 groups;
    # tiny-k3: 16 experts in 4 groups of 4, top-4 from the best 2 groups.
    "tiny-grouped": ["--preset", "tiny", "--set", "n_group=4", "--set", "topk_group=2"],
    "tiny-k3-grouped": ["--preset", "tiny-k3", "--set", "n_group=4", "--set", "topk_group=2"],
}
# Those that run every test; the rest (expert formats, prefix) run the logits
# and greedy test and the decode steps.
LAYERED = ("tiny", "tiny-k3", "tiny-q3g", "tiny-k3-q3g", "tiny-grouped", "tiny-k3-grouped")


def run(args):
    # Under Wine a command once exited 0 with its output's tail missing (the
    # C runtime's exit-time flush lost); the CLI now flushes before it exits
    # (cli/cli_main.cpp), so every output is taken as it comes.
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def prompt(n, vocab, seed):
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def relative(got, ref):
    """max|got - ref| / max|ref| (one position's logits)."""
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


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
        out = run([CLI, "eval", path, "--ids", " ".join(map(str, ids)), "--top", "1", "--full", "--json", *extra, *([] if "--lut" in extra else ["--lut", "exact"])])
        return np.array(json.loads(out)["logits"], dtype=np.float64)

    def vocab(self, path):
        return int(json.loads(run([CLI, "info", path, "--json"]))["vocab"])

    def test_logits_and_greedy(self):
        for name, (path, model) in self.models.items():
            vocab = self.vocab(path)
            for n in (1, 20, 100):
                with self.subTest(container=name, tokens=n):
                    ids = prompt(n, vocab, seed=n)
                    out = json.loads(run([CLI, "run", "--lut", "exact", path, "--ids", " ".join(map(str, ids)), "-n", "16",
                                          "--temp", "0", "--ignore-eos", "--json"]))
                    tokens = out["tokens"]
                    self.assertEqual(len(tokens), 16)
                    # One causal forward over the prompt and the engine's continuation: the
                    # continuation is the reference's greedy one iff every token is the
                    # reference's argmax (ties to the lower id) after the tokens before it.
                    logits, _ = model.forward(ids + tokens)
                    ref = logits[n - 1].double().numpy()
                    got = self.engine_eval(path, ids)
                    rel = relative(got, ref)
                    self.assertLessEqual(rel, 1e-5, f"{name}, {n} tokens: relative max|diff| {rel:.3g}")
                    self.assertEqual(int(np.argmax(got)), int(argmax_first(logits[n - 1])))
                    want = [argmax_first(logits[n - 1 + k]) for k in range(16)]
                    self.assertEqual(tokens, want, f"{name}, {n} tokens: greedy continuation")

    def test_decode_step_by_step(self):
        steps = 16
        for name, (path, model) in self.models.items():
            vocab = self.vocab(path)
            for n in (1, 60):
                with self.subTest(container=name, prompt_tokens=n):
                    ids = prompt(n, vocab, seed=100 + n)
                    fed = prompt(steps, vocab, seed=200 + n)
                    out = json.loads(run([CLI, "eval", "--lut", "exact", path, "--ids", " ".join(map(str, ids)), "--decode-ids",
                                          " ".join(map(str, fed)), "--top", "1", "--full", "--json"]))
                    got = np.array(out["step_logits"], dtype=np.float64)
                    self.assertEqual(got.shape, (steps + 1, vocab))
                    # one causal forward gives the reference's logits after every prefix
                    ref, _ = model.forward(ids + fed)
                    ref = ref[n - 1:].double().numpy()
                    errors = [relative(got[k], ref[k]) for k in range(steps + 1)]
                    print(f"\n[decode] {name}, prompt {n}: max relative per step "
                          + " ".join(f"{e:.2g}" for e in errors), end="")
                    for k, err in enumerate(errors):
                        self.assertLessEqual(err, 1e-5, f"{name}, prompt {n}: step {k} relative max|diff| {err:.3g}")
                    np.testing.assert_array_equal(got[-1], np.array(out["logits"], dtype=np.float64))

    def test_chunked_and_token_by_token_prefill_match_reference(self):
        for name in LAYERED:
            path, model = self.models[name]
            ids = prompt(100, self.vocab(path), seed=3)
            ref = model.last_logits(ids).double().numpy()
            for chunk in ("64", "1"):
                with self.subTest(container=name, chunk=chunk):
                    got = self.engine_eval(path, ids, "--chunk", chunk)
                    rel = relative(got, ref)
                    self.assertLessEqual(rel, 1e-5, f"{name}, --chunk {chunk}: relative max|diff| {rel:.3g}")
                    self.assertEqual(int(np.argmax(got)), int(argmax_first(torch.from_numpy(ref))))

    def test_grouped_routing_is_exercised(self):
        """The grouped containers hold the same weights as their plain twins (same
        seed; n_group changes no tensor): their routing must keep to topk_group
        groups and differ from the plain one somewhere, or the logit tests above
        would not be testing grouped selection at all."""
        for plain, grouped, group_size in (("tiny", "tiny-grouped", 2), ("tiny-k3", "tiny-k3-grouped", 4)):
            with self.subTest(container=grouped), tempfile.TemporaryDirectory() as tmp:
                ids = prompt(40, self.vocab(self.models[plain][0]), seed=9)
                routes = {}
                for name in (plain, grouped):
                    dump = os.path.join(tmp, name + ".jsonl")
                    self.engine_eval(self.models[name][0], ids, "--chunk", "1", "--dump-route", dump)
                    with open(dump) as f:
                        routes[name] = [[sorted(layer["experts"]) for layer in json.loads(line)["layers"]]
                                        for line in f if line.strip()]
                differ = 0
                for plain_token, grouped_token in zip(routes[plain], routes[grouped]):
                    for plain_experts, grouped_experts in zip(plain_token, grouped_token):
                        self.assertLessEqual(len({e // group_size for e in grouped_experts}), 2, grouped_experts)
                        differ += plain_experts != grouped_experts
                self.assertEqual(len(routes[grouped]), 40)
                self.assertGreater(differ, 0, f"{grouped}: grouping never changed a selection")

    def test_hidden_states_layer_by_layer(self):
        for name in LAYERED:
            path, model = self.models[name]
            vocab = self.vocab(path)
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
