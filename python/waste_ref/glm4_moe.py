"""PyTorch reference forward pass of GLM-4.5 / GLM-4.5-Air (`glm4_moe`, Glm4MoeForCausalLM).

Written from the model's math as HF transformers' glm4_moe/modeling_glm4_moe.py
computes it (facts in /work/shared/docs/other-families.md §0 and §7), as an
independent oracle for the engine (issue 16):

  h = embed[ids]
  per layer:  h += o_proj(attn(RMSNorm(h)))
              h += ffn(RMSNorm(h))
  logits = lm_head(RMSNorm(h))

attn (Glm4MoeAttention): GQA; q/k/v projections with biases when
  attention_bias (o_proj never has one); per-head q_norm / k_norm RMSNorms
  only when use_qk_norm, before RoPE; RoPE (NEOX rotate_half) on the first
  int(head_dim * partial_rotary_factor) dims of each head, inv_freq over that
  rotary dim, the remaining dims passed through (apply_rotary_pos_emb's
  q_rot / q_pass); softmax scale head_dim^-0.5.
ffn: a dense SwiGLU MLP for layers < first_k_dense_replace, else
  Glm4MoeMoE: the DeepSeek-V3 router (sigmoid of f32 logits; the
  e_score_correction_bias only for selection; n_group groups scored by their
  top-2 sum, topk_group kept, the others' experts scored 0.0 in HF; top-k;
  weights the unbiased sigmoid, divided by their sum + 1e-20 when
  norm_topk_prob, times routed_scaling_factor) over SwiGLU experts, plus the
  shared experts (one SwiGLU of moe_intermediate_size * n_shared_experts).

Weights: a dict of tensors under the HF checkpoint names (per-expert keys as
the release stores them); config: a dict with the HF config.json keys.
"""
import math

import torch

from . import deepseek_v3
from .moe_ops import causal_attention, partial_rope_neox, rms_norm, swiglu


def is_moe_layer(cfg, i):
    """Glm4MoeDecoderLayer: MoE from layer first_k_dense_replace on."""
    return i >= cfg["first_k_dense_replace"]


def rotary_dim(cfg):
    """HF: dim = int(head_dim * partial_rotary_factor)."""
    return int(cfg["head_dim"] * cfg.get("partial_rotary_factor", 0.5))


def apply_partial_rope(x, positions, cfg):
    """x [T, heads, head_dim]: NEOX RoPE on the first rotary_dim(cfg) dims of each head."""
    return partial_rope_neox(x, positions, cfg["rope_theta"], rotary_dim(cfg))


def attention(sd, cfg, p, x, positions):
    T = x.shape[0]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]

    def proj(name):
        y = x @ sd[p + name + ".weight"].T
        if cfg.get("attention_bias", False):
            y = y + sd[p + name + ".bias"]
        return y

    q, k, v = proj("q_proj").view(T, H, D), proj("k_proj").view(T, KV, D), proj("v_proj").view(T, KV, D)
    if cfg.get("use_qk_norm", False):
        q = rms_norm(q, sd[p + "q_norm.weight"], eps)
        k = rms_norm(k, sd[p + "k_norm.weight"], eps)
    q, k = apply_partial_rope(q, positions, cfg), apply_partial_rope(k, positions, cfg)
    k = k.repeat_interleave(H // KV, dim=1)  # query head h reads key/value head h // (H / KV)
    v = v.repeat_interleave(H // KV, dim=1)
    return causal_attention(q, k, v, D ** -0.5) @ sd[p + "o_proj.weight"].T


def route(cfg, router_logits, bias, dropped_group_score=0.0, trace=None):
    """(weights [T,k], ids [T,k]) as Glm4MoeMoE.route_tokens_to_experts, which
    is DeepSeek-V3's code (deepseek_v3.route) with HF Glm4MoeConfig's defaults
    for norm_topk_prob (true) and routed_scaling_factor (1.0).
    dropped_group_score and trace: see deepseek_v3.route."""
    cfg = dict(cfg, norm_topk_prob=cfg.get("norm_topk_prob", True),
               routed_scaling_factor=cfg.get("routed_scaling_factor", 1.0))
    return deepseek_v3.route(cfg, router_logits, bias, dropped_group_score, trace)


def moe(sd, cfg, p, x, dropped_group_score=0.0, trace=None):
    weights, ids = route(cfg, x @ sd[p + "gate.weight"].T, sd[p + "gate.e_score_correction_bias"], dropped_group_score,
                         trace)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), ids[t].tolist()):
            q = p + "experts.%d." % e
            out[t] += w * swiglu(x[t], sd[q + "gate_proj.weight"], sd[q + "up_proj.weight"], sd[q + "down_proj.weight"])
    return out + swiglu(x, sd[p + "shared_experts.gate_proj.weight"], sd[p + "shared_experts.up_proj.weight"],
                        sd[p + "shared_experts.down_proj.weight"])


def forward(sd, cfg, ids, dropped_group_score=0.0, trace=None):
    """Logits [T, vocab] for every position of the token ids (positions 0..T-1).
    trace, if a list, receives each MoE layer's router (group scores, selection scores)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(ids.shape[0])
    eps = cfg["rms_norm_eps"]
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = h + attention(sd, cfg, p + "self_attn.", rms_norm(h, sd[p + "input_layernorm.weight"], eps), positions)
        x = rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps)
        if is_moe_layer(cfg, i):
            h = h + moe(sd, cfg, p + "mlp.", x, dropped_group_score, trace)
        else:
            h = h + swiglu(x, sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"], sd[p + "mlp.down_proj.weight"])
    return rms_norm(h, sd["model.norm.weight"], eps) @ sd["lm_head.weight"].T


def tiny_config(**overrides):
    """A small config with GLM-4.5-Air's structure: head_dim != hidden/heads,
    GQA 2:1, half the head rotated, q/k/v biases, no q/k norm, one shared
    expert, a leading dense layer, one expert group."""
    cfg = dict(vocab_size=96, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
               head_dim=16, partial_rotary_factor=0.5, attention_bias=True, use_qk_norm=False,
               intermediate_size=40, moe_intermediate_size=24, n_routed_experts=8, n_shared_experts=1,
               num_experts_per_tok=3, first_k_dense_replace=1, n_group=1, topk_group=1, norm_topk_prob=True,
               routed_scaling_factor=1.0, rope_theta=1e6, rms_norm_eps=1e-5, max_position_embeddings=131072)
    cfg.update(overrides)
    return cfg


def random_checkpoint(cfg, seed, router_std=1.0, bias_std=0.1):
    """Seeded float32 weights under HF names; scales as qwen3_moe.random_checkpoint
    (activations O(1)); attention biases N(0, 0.5) so they matter."""
    g = torch.Generator().manual_seed(seed)

    def lin(out, inp, std=None):
        return torch.randn(out, inp, generator=g) * (std if std is not None else 1.0 / math.sqrt(inp))

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=g)

    E, H, KV, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    sd = {"model.embed_tokens.weight": torch.randn(cfg["vocab_size"], E, generator=g),
          "model.norm.weight": norm(E), "lm_head.weight": lin(cfg["vocab_size"], E)}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        a = p + "self_attn."
        sd.update({p + "input_layernorm.weight": norm(E), p + "post_attention_layernorm.weight": norm(E),
                   a + "q_proj.weight": lin(H * D, E), a + "k_proj.weight": lin(KV * D, E),
                   a + "v_proj.weight": lin(KV * D, E), a + "o_proj.weight": lin(E, H * D)})
        if cfg.get("attention_bias", False):
            sd.update({a + "q_proj.bias": 0.5 * torch.randn(H * D, generator=g),
                       a + "k_proj.bias": 0.5 * torch.randn(KV * D, generator=g),
                       a + "v_proj.bias": 0.5 * torch.randn(KV * D, generator=g)})
        if cfg.get("use_qk_norm", False):
            sd.update({a + "q_norm.weight": norm(D), a + "k_norm.weight": norm(D)})
        if is_moe_layer(cfg, i):
            ff, n = cfg["moe_intermediate_size"], cfg["n_routed_experts"]
            sd[p + "mlp.gate.weight"] = lin(n, E, router_std / math.sqrt(E))
            sd[p + "mlp.gate.e_score_correction_bias"] = bias_std * torch.randn(n, generator=g)
            for e in range(n):
                q = p + "mlp.experts.%d." % e
                sd.update({q + "gate_proj.weight": lin(ff, E), q + "up_proj.weight": lin(ff, E), q + "down_proj.weight": lin(E, ff)})
            s = ff * cfg.get("n_shared_experts", 1)
            q = p + "mlp.shared_experts."
            sd.update({q + "gate_proj.weight": lin(s, E), q + "up_proj.weight": lin(s, E), q + "down_proj.weight": lin(E, s)})
        else:
            ff = cfg["intermediate_size"]
            sd.update({p + "mlp.gate_proj.weight": lin(ff, E), p + "mlp.up_proj.weight": lin(ff, E), p + "mlp.down_proj.weight": lin(E, ff)})
    return sd
