"""PyTorch reference forward pass of Qwen3-MoE (`qwen3_moe`, e.g. Qwen3-30B-A3B).

Written from the model's math as HF transformers' qwen3_moe/modeling_qwen3_moe.py
computes it (facts in /work/shared/docs/other-families.md §0 and §4), as an
independent oracle for a later engine implementation (issue 16):

  h = embed[ids]
  per layer:  h += o_proj(attn(RMSNorm(h)))      attn: GQA; q_norm/k_norm are
              h += ffn(RMSNorm(h))                     per-head RMSNorms applied
  logits = lm_head(RMSNorm(h))                         BEFORE NEOX RoPE
  ffn: MoE (softmax router over all experts, top-k, optional renormalisation,
       SwiGLU experts, no shared expert) or, for layers in mlp_only_layers or
       off the decoder_sparse_step grid, a dense SwiGLU MLP.

Weights: a dict of float32 tensors under the HF checkpoint names; config: a
dict with the HF config.json keys used below.
"""
import math

import torch

from .moe_ops import causal_attention, rms_norm, swiglu, topk_lowest_index


def is_moe_layer(cfg, i):
    """HF's rule: MoE unless listed in mlp_only_layers or off the sparse step."""
    step = cfg.get("decoder_sparse_step", 1)
    return (i not in cfg.get("mlp_only_layers", [])) and cfg["num_experts"] > 0 and (i + 1) % step == 0


def rope_neox(x, positions, theta):
    """rotate_half RoPE on the whole head: dimension i pairs with i + d/2, both at inv_freq[i] = theta^(-2i/d)."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(torch.float32)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(torch.float32)[:, None, :]
    half = d // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


def attention(sd, cfg, p, x, positions):
    T = x.shape[0]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    q = (x @ sd[p + "q_proj.weight"].T).view(T, H, D)
    k = (x @ sd[p + "k_proj.weight"].T).view(T, KV, D)
    v = (x @ sd[p + "v_proj.weight"].T).view(T, KV, D)
    q = rope_neox(rms_norm(q, sd[p + "q_norm.weight"], eps), positions, cfg["rope_theta"])
    k = rope_neox(rms_norm(k, sd[p + "k_norm.weight"], eps), positions, cfg["rope_theta"])
    # GQA: query head h reads KV head h // (H / KV)
    k = k.repeat_interleave(H // KV, dim=1)
    v = v.repeat_interleave(H // KV, dim=1)
    return causal_attention(q, k, v, 1.0 / math.sqrt(D)) @ sd[p + "o_proj.weight"].T


def route(cfg, router_logits):
    """Softmax over all experts, then top-k; returns (weights [T,k], ids [T,k])."""
    probs = torch.softmax(router_logits, dim=-1)
    weights, ids = topk_lowest_index(probs, cfg["num_experts_per_tok"])
    if cfg["norm_topk_prob"]:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, ids


def moe(sd, cfg, p, x, trace=None):
    router_logits = x @ sd[p + "gate.weight"].T
    if trace is not None:  # what selection ranks, for tests that keep clear of ties
        trace.append(torch.softmax(router_logits, dim=-1))
    weights, ids = route(cfg, router_logits)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), ids[t].tolist()):
            e_p = p + "experts.%d." % e
            out[t] += w * swiglu(x[t], sd[e_p + "gate_proj.weight"], sd[e_p + "up_proj.weight"], sd[e_p + "down_proj.weight"])
    return out


def forward(sd, cfg, ids, trace=None):
    """Logits [T, vocab] for every position of the token ids (positions 0..T-1).
    trace, if a list, receives each MoE layer's router probabilities [T, experts]."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(ids.shape[0])
    eps = cfg["rms_norm_eps"]
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = h + attention(sd, cfg, p + "self_attn.", rms_norm(h, sd[p + "input_layernorm.weight"], eps), positions)
        x = rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps)
        if is_moe_layer(cfg, i):
            h = h + moe(sd, cfg, p + "mlp.", x, trace)
        else:
            h = h + swiglu(x, sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"], sd[p + "mlp.down_proj.weight"])
    return rms_norm(h, sd["model.norm.weight"], eps) @ sd["lm_head.weight"].T


def tiny_config(**overrides):
    """A small config with Qwen3-30B-A3B's structure: head_dim != hidden/heads, GQA 4:1."""
    cfg = dict(vocab_size=96, hidden_size=48, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
               head_dim=16, intermediate_size=40, moe_intermediate_size=24, num_experts=8, num_experts_per_tok=3,
               norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], rope_theta=1e6, rms_norm_eps=1e-6,
               max_position_embeddings=4096)
    cfg.update(overrides)
    return cfg


def random_checkpoint(cfg, seed, router_std=1.0):
    """Seeded float32 weights under HF names. Scales keep activations O(1)
    (N(0, 1/in) linear weights, unit-scale embeddings, norms near 1) so that
    attention, routing and logits are all far from degenerate; router_std
    sets how decisive routing is."""
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
        sd.update({p + "input_layernorm.weight": norm(E), p + "post_attention_layernorm.weight": norm(E),
                   p + "self_attn.q_proj.weight": lin(H * D, E), p + "self_attn.k_proj.weight": lin(KV * D, E),
                   p + "self_attn.v_proj.weight": lin(KV * D, E), p + "self_attn.o_proj.weight": lin(E, H * D),
                   p + "self_attn.q_norm.weight": norm(D), p + "self_attn.k_norm.weight": norm(D)})
        if is_moe_layer(cfg, i):
            ff = cfg["moe_intermediate_size"]
            sd[p + "mlp.gate.weight"] = lin(cfg["num_experts"], E, router_std / math.sqrt(E))
            for e in range(cfg["num_experts"]):
                q = p + "mlp.experts.%d." % e
                sd.update({q + "gate_proj.weight": lin(ff, E), q + "up_proj.weight": lin(ff, E), q + "down_proj.weight": lin(E, ff)})
        else:
            ff = cfg["intermediate_size"]
            sd.update({p + "mlp.gate_proj.weight": lin(ff, E), p + "mlp.up_proj.weight": lin(ff, E), p + "mlp.down_proj.weight": lin(E, ff)})
    return sd
