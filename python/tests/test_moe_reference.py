"""The Qwen3-MoE and DeepSeek-V3 references on their own (no llama.cpp needed):
numbers from other-families.md and hand-worked cases, and one identity of the
math (MLA's absorbed form equals the expanded one). test_moe_llamacpp.py
compares the whole forward passes with a second engine.

Tolerances: 5e-5 on the M^2 constants (other-families.md rounds them to 4
decimals); 1e-6 on hand-computed float32 values of magnitude <= 1 (a few
float32 ulps); 1e-5 relative on the absorbed-vs-expanded MLA output (the two
forms sum the same products in a different order, float32 throughout).
"""
import math
import unittest

import torch

try:
    from . import _paths  # noqa: F401
except ImportError:
    import _paths  # noqa: F401
from waste_ref import deepseek_v3, gguf_moe, qwen3_moe


class YarnTest(unittest.TestCase):
    def test_mla_softmax_scale_constants(self):
        # other-families.md §0: softmax scale = 192^-0.5 * M^2
        for factor, m_all, m2 in ((40, 1.0, 1.8739), (40, 0.707, 1.5896), (32, 1.0, 1.8133), (64, 1.0, 2.0047)):
            cfg = deepseek_v3.tiny_config(qk_nope_head_dim=128, qk_rope_head_dim=64, rope_scaling=dict(
                type="yarn", factor=factor, original_max_position_embeddings=4096, mscale=m_all, mscale_all_dim=m_all))
            self.assertAlmostEqual(deepseek_v3.softmax_scale(cfg) * math.sqrt(192), m2, delta=5e-5)
        self.assertEqual(deepseek_v3.softmax_scale(deepseek_v3.tiny_config(rope_scaling=None)), 20 ** -0.5)

    def test_inv_freq_by_hand(self):
        # rope dim 8, base 1e4, L0 4096, beta 32/1: corr(32) = 1.31 -> low 1,
        # corr(1) = 2.81 -> high 3, so the ramp over pairs 0..3 is 0, 0, 0.5, 1
        cfg = deepseek_v3.tiny_config()
        cos, sin = deepseek_v3.rope_tables(cfg, torch.tensor([0, 1]))
        expect = [1.0, 0.1, 0.5 * 0.01 / 40 + 0.5 * 0.01, 0.001 / 40]
        for i, f in enumerate(expect):
            self.assertAlmostEqual(math.atan2(sin[1, i].item(), cos[1, i].item()), f, delta=1e-6)
        self.assertTrue(torch.equal(cos[0], torch.ones(4)) and torch.equal(sin[0], torch.zeros(4)))
        # mscale == mscale_all_dim: cos/sin unscaled; otherwise scaled by the ratio
        rs = dict(cfg["rope_scaling"], mscale=1.0, mscale_all_dim=0.5)
        cos2, _ = deepseek_v3.rope_tables(dict(cfg, rope_scaling=rs), torch.tensor([0]))
        ratio = (1 + 0.1 * math.log(40)) / (1 + 0.05 * math.log(40))
        self.assertAlmostEqual(cos2[0, 0].item(), ratio, delta=1e-6)


class RopePairingTest(unittest.TestCase):
    def test_interleaved_is_rotate_half_on_deinterleaved_dims(self):
        # HF's apply_rotary_pos_emb_interleave: view (d/2, 2), transpose, then rotate_half
        cfg = deepseek_v3.tiny_config(rope_scaling=None)
        cos, sin = deepseek_v3.rope_tables(cfg, torch.arange(5))
        x = torch.randn(5, 3, 8, generator=torch.Generator().manual_seed(1))
        deint = x.view(5, 3, 4, 2).transpose(-1, -2).reshape(5, 3, 8)
        self.assertTrue(torch.allclose(deepseek_v3.apply_rope(x, cos, sin, True).view(5, 3, 4, 2).transpose(-1, -2).reshape(5, 3, 8),
                                       deepseek_v3.apply_rope(deint, cos, sin, False), atol=1e-6))
        # Qwen's NEOX RoPE is the rotate_half form
        q = qwen3_moe.rope_neox(deint, torch.arange(5), 10000.0)
        self.assertTrue(torch.allclose(q, deepseek_v3.apply_rope(deint, cos, sin, False), atol=1e-6))


class RouterTest(unittest.TestCase):
    def test_deepseek_grouped_routing_by_hand(self):
        cfg = deepseek_v3.tiny_config()  # 8 experts, 4 groups of 2, keep 2 groups, top 3, scale 2.5
        s = torch.tensor([[0.9, 0.1, 0.6, 0.5, 0.8, 0.05, 0.7, 0.2]])
        logits = torch.log(s / (1 - s))  # sigmoid(logits) = s
        bias = torch.tensor([0.0, 0.45, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3])
        # biased group sums (top 2 of 2): 1.45, 1.1, 0.85, 1.2 -> groups 0 and 3 kept;
        # their experts 0, 1, 6, 7 score 0.9, 0.55, 0.7, 0.5 -> 0, 6, 1
        w, ids = deepseek_v3.route(cfg, logits, bias)
        self.assertEqual(ids.tolist(), [[0, 6, 1]])
        # weights from the unbiased sigmoid (expert 1: 0.1, not 0.55), renormalised, times 2.5
        for got, want in zip(w[0].tolist(), [0.9, 0.7, 0.1]):
            self.assertAlmostEqual(got, 2.5 * want / 1.7, delta=1e-6)
        w, _ = deepseek_v3.route(dict(cfg, norm_topk_prob=False), logits, bias)
        self.assertAlmostEqual(w[0, 0].item(), 2.5 * 0.9, delta=1e-6)

    def test_deepseek_dropped_groups_score_zero(self):
        # all biased scores negative: HF's zero for dropped groups wins over every kept expert
        cfg = deepseek_v3.tiny_config()
        logits = torch.zeros(1, 8)  # sigmoid 0.5 everywhere
        bias = torch.tensor([-0.6, -0.7, -0.8, -0.9, -1.0, -1.1, -1.2, -1.3])
        _, ids = deepseek_v3.route(cfg, logits, bias)
        # groups 0, 1 kept; the dropped groups' experts all score exactly 0 and
        # beat every kept one; the tie among them goes to the lower ids
        self.assertEqual(ids.tolist(), [[4, 5, 6]])
        _, ids = deepseek_v3.route(cfg, logits, bias, dropped_group_score=float("-inf"))
        self.assertEqual(ids.tolist(), [[0, 1, 2]])

    def test_qwen3_routing(self):
        cfg = qwen3_moe.tiny_config()  # 8 experts, top 3
        logits = torch.log(torch.tensor([[0.05, 0.3, 0.1, 0.2, 0.05, 0.15, 0.1, 0.05]]))
        w, ids = qwen3_moe.route(cfg, logits)
        self.assertEqual(ids.tolist(), [[1, 3, 5]])
        for got, want in zip(w[0].tolist(), [0.3 / 0.65, 0.2 / 0.65, 0.15 / 0.65]):
            self.assertAlmostEqual(got, want, delta=1e-6)
        w, _ = qwen3_moe.route(dict(cfg, norm_topk_prob=False), logits)
        self.assertAlmostEqual(w.sum().item(), 0.65, delta=1e-6)


class MlaAbsorbedTest(unittest.TestCase):
    def test_absorbed_equals_expanded(self):
        # other-families.md §1 "Absorbed decode": attention over the 576-wide
        # latent cache [RMSNorm(c) | RoPE(k_pe)] with q_lat = W_UK^T q_nope and
        # o = W_UV o_lat gives the expanded form's output
        cfg = deepseek_v3.tiny_config(num_hidden_layers=1)
        sd = deepseek_v3.random_checkpoint(cfg, 7)
        x = torch.randn(6, cfg["hidden_size"], generator=torch.Generator().manual_seed(2))
        pos = torch.arange(6)
        p = "model.layers.0.self_attn."
        expanded = deepseek_v3.attention(sd, cfg, p, x, pos)

        H, nope, rope, vdim, kvr = 4, 12, 8, 10, 16
        eps = cfg["rms_norm_eps"]
        q = deepseek_v3.rms_norm(x @ sd[p + "q_a_proj.weight"].T, sd[p + "q_a_layernorm.weight"], eps) @ sd[p + "q_b_proj.weight"].T
        q = q.view(6, H, nope + rope)
        kv_a = x @ sd[p + "kv_a_proj_with_mqa.weight"].T
        cache = deepseek_v3.rms_norm(kv_a[:, :kvr], sd[p + "kv_a_layernorm.weight"], eps)
        cos, sin = deepseek_v3.rope_tables(cfg, pos)
        pe_cache = deepseek_v3.apply_rope(kv_a[:, kvr:].view(6, 1, rope), cos, sin, True)[:, 0]
        q_pe = deepseek_v3.apply_rope(q[..., nope:], cos, sin, True)
        wb = sd[p + "kv_b_proj.weight"].view(H, nope + vdim, kvr)
        q_lat = torch.einsum("thn,hnc->thc", q[..., :nope], wb[:, :nope])
        score = (torch.einsum("thc,sc->hts", q_lat, cache) + torch.einsum("thr,sr->hts", q_pe, pe_cache)) * deepseek_v3.softmax_scale(cfg)
        score = score.masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf"))
        o_lat = torch.einsum("hts,sc->thc", torch.softmax(score, -1), cache)
        absorbed = torch.einsum("thc,hvc->thv", o_lat, wb[:, nope:]).reshape(6, H * vdim) @ sd[p + "o_proj.weight"].T
        self.assertLessEqual((absorbed - expanded).abs().max().item(), 1e-5 * expanded.abs().max().item())


class DenseLayersTest(unittest.TestCase):
    def test_qwen3_sparse_step_and_mlp_only_layers(self):
        cfg = qwen3_moe.tiny_config(num_hidden_layers=4, decoder_sparse_step=2, mlp_only_layers=[3])
        self.assertEqual([qwen3_moe.is_moe_layer(cfg, i) for i in range(4)], [False, True, False, False])
        sd = qwen3_moe.random_checkpoint(cfg, 1)
        self.assertIn("model.layers.0.mlp.gate_proj.weight", sd)
        self.assertIn("model.layers.1.mlp.gate.weight", sd)
        ids = [1, 2, 3, 4]
        base = qwen3_moe.forward(sd, cfg, ids)
        sd2 = dict(sd, **{"model.layers.3.mlp.down_proj.weight": sd["model.layers.3.mlp.down_proj.weight"] * 2})
        self.assertGreater((qwen3_moe.forward(sd2, cfg, ids) - base).abs().max().item(), 1e-3)  # the dense layer is used
        with self.assertRaises(ValueError):  # llama.cpp's qwen3moe has no dense layers
            gguf_moe.write_qwen3_moe(sd, cfg, "/nonexistent.gguf")


if __name__ == "__main__":
    unittest.main()
