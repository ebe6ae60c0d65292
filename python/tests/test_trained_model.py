"""The shipped kimi-mini checkpoint (models/kimi-mini, HF layout) against the
independent reference: training/model.py (the module it was trained with)
and waste_ref.model.KimiModel must compute the same logits from the same
weights.

waste_ref reads containers; here it is fed the checkpoint's tensors under
their HF names (which are the container's trunk names) through a small
Container subclass that does no file reading, with experts.{e}.w1/w3/w2 as
(gate, up, down). Nothing of waste_ref's math is touched.

Weights: the checkpoint's bf16/f32 values, upcast exactly (every bf16 is an
f32 and an f64). The training module computes in f32, the reference in f64.

Tolerances, and why:
- logits at every position of a 64-token held-out prompt (the start of the
  test stream, eval.json reference_prompt_ids): max|diff| <=
  1e-4 * max|logit|. f32 has a 6e-8 relative rounding step; through 8 layers
  of normalised activations, dot products of a few hundred terms, the KDA
  chunked solve (training module) vs the token recurrence (reference) the
  measured difference is 6.4e-7 relative; 1e-4 leaves room for summation
  order on other machines while a wrong formula shows up at 1e-2 or more.
- identical expert selection at every token and MoE layer (a near-tie
  flipped by rounding would break the logit check anyway and name itself
  here first).
- the checkpoint's files: shards <= 15 MiB, total < 20 MB, every HF tensor
  name a Kimi-Linear release has for this config, no other.
"""

import json
import os
import sys
import unittest

import numpy as np
import torch

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT

from waste_ref.container import Container
from waste_ref.model import KimiModel

MODEL_DIR = os.path.join(REPO_ROOT, "models", "kimi-mini")
sys.path.insert(0, os.path.join(REPO_ROOT, "training"))
import model as km  # noqa: E402  (training/model.py)


class HFTensorContainer(Container):
    """waste_ref's Container interface over in-memory HF tensors."""

    def __init__(self, config, tensors):  # no super().__init__: nothing to read
        self.path = "<hf tensors>"
        self.config = config
        self.prefix = ""
        self.tensors = {n: t.float().numpy() for n, t in tensors.items() if ".experts." not in n}
        self._hf = tensors
        self.trunk_formats = {}
        self.skipped = []
        self._experts = {}
        self.layers = {}
        self.books = None

    def expert(self, layer, e):
        p = f"model.layers.{layer}.block_sparse_moe.experts.{e}."
        return tuple(self._hf[p + w + ".weight"].float().numpy() for w in ("w1", "w3", "w2"))


def expected_names(cfg):
    names = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    for i in range(cfg["num_hidden_layers"]):
        P = f"model.layers.{i}."
        names += [P + "input_layernorm.weight", P + "post_attention_layernorm.weight"]
        if (i + 1) in cfg["linear_attn_config"]["kda_layers"]:
            names += [P + "self_attn." + n for n in (
                "q_proj.weight", "k_proj.weight", "v_proj.weight", "q_conv1d.weight", "k_conv1d.weight",
                "v_conv1d.weight", "A_log", "dt_bias", "f_a_proj.weight", "f_b_proj.weight", "b_proj.weight",
                "g_a_proj.weight", "g_b_proj.weight", "o_norm.weight", "o_proj.weight")]
        else:
            names += [P + "self_attn." + n for n in (
                "q_proj.weight", "kv_a_proj_with_mqa.weight", "kv_a_layernorm.weight", "kv_b_proj.weight",
                "o_proj.weight")]
        if i < cfg["first_k_dense_replace"]:
            names += [P + f"mlp.{n}_proj.weight" for n in ("gate", "up", "down")]
        else:
            names += [P + "block_sparse_moe.gate.weight", P + "block_sparse_moe.gate.e_score_correction_bias"]
            names += [P + f"block_sparse_moe.shared_experts.{n}_proj.weight" for n in ("gate", "up", "down")]
            names += [P + f"block_sparse_moe.experts.{e}.{w}.weight"
                      for e in range(cfg["num_experts"]) for w in ("w1", "w2", "w3")]
    return names


class TrainedCheckpoint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(MODEL_DIR, "config.json")) as f:
            cls.cfg = json.load(f)
        cls.tensors = km.load_hf_tensors(MODEL_DIR)
        with open(os.path.join(MODEL_DIR, "eval.json")) as f:
            cls.eval = json.load(f)

    def test_files_and_names(self):
        with open(os.path.join(MODEL_DIR, "model.safetensors.index.json")) as f:
            index = json.load(f)
        shards = sorted(set(index["weight_map"].values()))
        total = 0
        for i, s in enumerate(shards):
            self.assertEqual(s, f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors")
            size = os.path.getsize(os.path.join(MODEL_DIR, s))
            self.assertLessEqual(size, 15 * 1024 * 1024, s)
            total += size
        self.assertLess(total, 20_000_000)
        self.assertEqual(sorted(self.tensors), sorted(expected_names(self.cfg)))
        self.assertEqual(self.cfg["model_type"], "kimi_linear")
        for n, t in self.tensors.items():
            want = torch.float32 if n.rsplit(".", 1)[-1] in km.F32_NAMES else torch.bfloat16
            self.assertEqual(t.dtype, want, n)
        nh = self.cfg["linear_attn_config"]["num_heads"]
        self.assertEqual(list(self.tensors["model.layers.0.self_attn.A_log"].shape), [1, 1, nh, 1])

    def test_logits_match_reference(self):
        ids = self.eval["reference_prompt_ids"][:64]
        self.assertGreaterEqual(len(ids), 16)
        ours = km.load_hf(MODEL_DIR)
        ours.eval()
        routes = {}
        for li, layer in enumerate(ours.layers):
            if hasattr(layer, "block_sparse_moe"):
                moe = layer.block_sparse_moe
                orig = moe.route

                def rec(x, orig=orig, li=li):
                    r = orig(x)
                    routes[li] = r[0]
                    return r
                moe.route = rec
        with torch.no_grad():
            got = ours(torch.tensor([ids]))[0].double()
        ref = KimiModel(HFTensorContainer(self.cfg, self.tensors), dtype=torch.float64)
        want, _ = ref.forward(ids)
        scale = want.abs().max().item()
        diff = (got - want).abs().max().item()
        for li, r in routes.items():
            ref_sets = [sorted(e for e, _ in sel) for sel in ref.last_routing[li]]
            self.assertEqual([sorted(x) for x in r.tolist()], ref_sets, f"layer {li} routing")
        self.assertLessEqual(diff, 1e-4 * scale, f"max|diff| {diff:.3g} vs max|logit| {scale:.3g}")
        self.assertEqual(got[-1].argmax().item(), int(torch.argmax(want[-1]).item()))

    def test_chunked_kda_equals_recurrent(self):
        ids = self.eval["reference_prompt_ids"][:40]
        ours = km.load_hf(MODEL_DIR)
        ours.eval()
        with torch.no_grad():
            a = ours(torch.tensor([ids]))
            ours.set_kda_recurrent(True)
            b = ours(torch.tensor([ids]))
        self.assertLessEqual((a - b).abs().max().item(), 1e-4 * a.abs().max().item())


if __name__ == "__main__":
    unittest.main()
