"""K3 features on a synthetic container (waste_ref.synth).

No upstream answers exist for these paths in the fixtures, so these are
self-consistency checks: the reader decodes exactly what the writer packed
(Q3G, non-128 groups, f16-subnormal scales, VQ4P/VQ3R/VQ2R), the forward is
causal and precision-stable, MLA's absorbed form equals the expanded one, and
the router / SiTU / AttnRes pieces match hand-written cases.
"""

import math
import os
import shutil
import struct
import tempfile
import unittest

try:
    from . import _paths  # noqa: F401
except ImportError:
    import _paths  # noqa: F401

import numpy as np
import torch

from waste_ref.container import Container, ContainerError
from waste_ref.model import Activation, KimiModel, rmsnorm, sigmoid
from waste_ref.synth import k3_config, write_container


class SynthK3(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="waste_ref_k3_")
        cls.path = os.path.join(cls.tmp, "k3.waste")
        cls.deq, cls.experts = write_container(cls.path, k3_config(), seed=7, vq="VQ4P")
        cls.c = Container(cls.path, verify_crc=True)
        cls.m = KimiModel(cls.c)
        cls.ids = [int(i) for i in np.random.default_rng(3).integers(0, 200, 30)]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_reader_round_trip(self):
        self.assertEqual(self.c.skipped, ["vision_tower.encoder.layers.0.fc0.weight"])
        self.assertEqual(set(self.c.tensors), set(self.deq))
        for name, want in self.deq.items():
            np.testing.assert_array_equal(self.c.tensors[name], want, err_msg=name)
        self.assertIn("Q3G", self.c.trunk_formats.values())
        for (L, e), mats in self.experts.items():
            for got, want in zip(self.c.expert(L, e), mats):
                np.testing.assert_array_equal(got, want)
        # a subnormal f16 row scale survives
        self.assertTrue(0 < abs(self.c.expert(1, 0)[0][0]).max() < 1e-4)

    def test_other_vq_formats(self):
        for vq in ("VQ3R", "VQ2R"):
            path = os.path.join(self.tmp, vq + ".waste")
            cfg = k3_config(num_hidden_layers=2, linear_attn_config=dict(k3_config()["linear_attn_config"],
                                                                         kda_layers=[1], full_attn_layers=[2]))
            _, experts = write_container(path, cfg, seed=2, vq=vq)
            c = Container(path, verify_crc=True)
            for (L, e), mats in experts.items():
                for got, want in zip(c.expert(L, e), mats):
                    np.testing.assert_array_equal(got, want)
            KimiModel(c).forward([1, 2, 3])

    def test_record_fmt_must_match_manifest(self):
        path = os.path.join(self.tmp, "badfmt.waste")
        shutil.copytree(self.path, path)
        with open(os.path.join(path, "experts-L2.bin"), "r+b") as f:
            f.seek(8)
            f.write(b"\x04")  # VQ3R code in a VQ4P bank: same size, silently wrong if accepted
        with self.assertRaisesRegex(ContainerError, "expert 0 of layer 2: fmt 4"):
            Container(path).expert(2, 0)

    def test_forward_causal_and_stable(self):
        logits, hidden = self.m.forward(self.ids)
        self.assertTrue(torch.isfinite(logits).all())
        self.assertEqual(hidden.shape, (5, len(self.ids), 128))
        part, hpart = self.m.forward(self.ids[:11])
        self.assertLess((part - logits[:11]).abs().max().item(), 1e-9)
        self.assertLess((hpart - hidden[:, :11]).abs().max().item(), 1e-9)
        m32 = KimiModel(self.c, dtype=torch.float32)
        l32, _ = m32.forward(self.ids)
        self.assertLess((l32.double() - logits).abs().max().item(), 1e-3)

    def test_mla_absorbed_equals_expanded(self):
        m, L = self.m, 2
        self.assertFalse(m.is_kda[L])
        X = torch.randn(9, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        expanded = m.mla(L, X)
        nh, nope, rope, vd, r = m.n_heads, m.nope, m.rope, m.vd, m.kv_lora
        p = "self_attn."
        qa = X @ m.lw(L, p + "q_a_proj.weight").T
        q = (rmsnorm(qa, m.lw(L, p + "q_a_layernorm.weight"), m.eps) @ m.lw(L, p + "q_b_proj.weight").T)
        q = q.reshape(9, nh, nope + rope)
        kv_a = X @ m.lw(L, p + "kv_a_proj_with_mqa.weight").T
        c = rmsnorm(kv_a[:, :r], m.lw(L, p + "kv_a_layernorm.weight"), m.eps)
        k_pe = kv_a[:, r:]
        wkv = m.lw(L, p + "kv_b_proj.weight").reshape(nh, nope + vd, r)
        w_uk, w_uv = wkv[:, :nope], wkv[:, nope:]
        gate = sigmoid(X @ m.lw(L, p + "g_proj.weight").T).reshape(9, nh, vd)
        for t in range(9):
            outs = []
            for h in range(nh):
                q_t = w_uk[h].T @ q[t, h, :nope]  # r
                score = (c[:t + 1] @ q_t + k_pe[:t + 1] @ q[t, h, nope:]) / math.sqrt(nope + rope)
                pr = torch.softmax(score, 0)
                outs.append((w_uv[h] @ (pr @ c[:t + 1])) * gate[t, h])
            o = torch.cat(outs) @ m.lw(L, p + "o_proj.weight").T
            self.assertLess((o - expanded[t]).abs().max().item(), 1e-10)

    def test_grouped_router(self):
        m = self.m  # 16 experts, 4 groups of 4, keep 2 groups, top 4
        c = [0.0] * 16
        c[0], c[1] = 0.9, 0.9      # group 0: top-2 sum 1.8
        c[4], c[5] = 0.95, 0.1     # group 1: 1.05
        c[8], c[9] = 0.5, 0.5      # group 2: 1.0
        c[12], c[13] = 0.6, 0.6    # group 3: 1.2
        c[2], c[3] = 0.3, 0.3
        s = [0.1 * (i + 1) for i in range(16)]
        sel = m.route(s, c)
        self.assertEqual([e for e, _ in sel], [0, 1, 12, 13])  # e4 is best alone but group 1 is out
        w = [s[e] for e in (0, 1, 12, 13)]
        tot = sum(w)
        for (_, got), want in zip(sel, w):
            self.assertAlmostEqual(got, want / tot * m.scaling, places=12)
        # ties go to the lower id
        sel = m.route(s, [0.5] * 16)
        self.assertEqual([e for e, _ in sel], [0, 1, 2, 3])

    def test_situ(self):
        act = Activation({"hidden_act": "situ", "activation_situ_beta": 4.0, "activation_situ_linear_beta": 25.0})
        for a, b in ((0.3, -2.0), (-7.0, 40.0), (12.0, 3.0)):
            want = 4 * math.tanh(a / 4) / (1 + math.exp(-a)) * 25 * math.tanh(b / 25)
            got = act(torch.tensor(a, dtype=torch.float64), torch.tensor(b, dtype=torch.float64)).item()
            self.assertAlmostEqual(got, want, places=12)
        act0 = Activation({"hidden_act": "situ", "activation_situ_linear_beta": 0.0})
        self.assertAlmostEqual(act0(torch.tensor(1.0, dtype=torch.float64), torch.tensor(50.0, dtype=torch.float64)).item(),
                               4 * math.tanh(0.25) / (1 + math.exp(-1.0)) * 50, places=12)

    def test_kda_bounded_decay_in_range(self):
        m, L = self.m, 1
        self.assertTrue(m.is_kda[L])
        self.assertEqual(m.gate_lower_bound, -5.0)
        # the padded A_log tail (3.0) must not be used: only the first nh values are per-head
        alog = m.lw(L, "self_attn.A_log").reshape(-1)
        self.assertEqual(alog.numel(), m.kda_dim)
        X = torch.randn(5, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
        self.assertTrue(torch.isfinite(m.kda(L, X)).all())

    def test_attn_res_weights(self):
        m = self.m
        H = 128
        g = torch.Generator().manual_seed(5)
        V = [torch.randn(3, H, dtype=torch.float64, generator=g) * (i + 1) for i in range(3)]
        nw, pw = torch.randn(H, dtype=torch.float64, generator=g), torch.randn(H, dtype=torch.float64, generator=g)
        got = m.attn_res(V, nw, pw)
        for t in range(3):
            scores = []
            for v in V:
                x = v[t]
                normed = x / math.sqrt(float((x * x).mean()) + m.eps)
                scores.append(float((normed * nw * pw).sum()))
            mx = max(scores)
            ex = [math.exp(s - mx) for s in scores]
            want = sum(e / sum(ex) * v[t] for e, v in zip(ex, V))
            self.assertLess((got[t] - want).abs().max().item(), 1e-12)


if __name__ == "__main__":
    unittest.main()
