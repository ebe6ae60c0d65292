"""PyTorch reference forward pass of DeepSeek-V3 / Kimi K2 (`DeepseekV3ForCausalLM`).

Written from the model's math as HF transformers' deepseek_v3/modular_deepseek_v3.py
and modeling_rope_utils.py compute it (facts in /work/shared/docs/other-families.md
§0 and §1), as an independent oracle for a later engine implementation (issue 16).

Attention is MLA, computed the naive (non-absorbed) way, as HF does:
  q = q_b(RMSNorm(q_a x))  (or q_proj x when q_lora_rank is None), per head [nope | rope]
  [c | k_pe] = kv_a_proj_with_mqa x;  [k_nope | v] per head = kv_b(RMSNorm(c))
  RoPE on q_pe and on k_pe (one k_pe shared by all heads), interleaved pairs
  (2i, 2i+1) when rope_interleave (the V3 default), rotate_half otherwise;
  softmax scale = (nope+rope)^-0.5, times get_mscale(factor, mscale_all_dim)^2 under YaRN.
FFN: dense SwiGLU for the first first_k_dense_replace layers, else a sigmoid
router (e_score_correction_bias only for selection; group-limited top-k over
n_group groups scored by their top-2 sum, topk_group kept, the rest zeroed;
weights from the unbiased sigmoid, optionally renormalised, times
routed_scaling_factor) plus the shared experts.
"""
import math

import torch

from .moe_ops import causal_attention, rms_norm, swiglu, topk_lowest_index


def is_moe_layer(cfg, i):
    return i >= cfg["first_k_dense_replace"]


def get_mscale(scale, m=1.0):
    return 1.0 + 0.1 * m * math.log(scale) if scale > 1 else 1.0


def rope_tables(cfg, positions):
    """(cos, sin) [T, rope/2] for pair i, with YaRN's inv_freq and attention_factor when configured."""
    d, base = cfg["qk_rope_head_dim"], cfg["rope_theta"]
    pos_freq = base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    inv_freq = 1.0 / pos_freq
    attention_factor = 1.0
    rs = cfg.get("rope_scaling")
    if rs:
        assert rs["type"] == "yarn"
        f, L0 = rs["factor"], rs["original_max_position_embeddings"]
        beta_fast, beta_slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)

        def corr(r):  # the dimension whose wavelength fits r rotations into L0
            return d * math.log(L0 / (r * 2 * math.pi)) / (2 * math.log(base))

        low = max(math.floor(corr(beta_fast)), 0)
        high = min(math.ceil(corr(beta_slow)), d - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        # ramp 0 (fast-rotating pairs): keep the original frequency; ramp 1: interpolate by 1/factor
        inv_freq = (1.0 / (f * pos_freq)) * ramp + (1.0 / pos_freq) * (1 - ramp)
        m, m_all = rs.get("mscale"), rs.get("mscale_all_dim")
        attention_factor = get_mscale(f, m) / get_mscale(f, m_all) if (m and m_all) else get_mscale(f)
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    return (ang.cos() * attention_factor).to(torch.float32), (ang.sin() * attention_factor).to(torch.float32)


def apply_rope(x, cos, sin, interleave):
    """x [T, heads, d]; pair i is (2i, 2i+1) when interleave, else (i, i + d/2)."""
    if interleave:
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    c, s = cos[:, None, :], sin[:, None, :]
    ra, rb = a * c - b * s, b * c + a * s
    if interleave:
        return torch.stack([ra, rb], -1).flatten(-2)
    return torch.cat([ra, rb], -1)


def softmax_scale(cfg):
    scale = (cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]) ** -0.5
    rs = cfg.get("rope_scaling")
    if rs and rs.get("mscale_all_dim"):
        scale *= get_mscale(rs["factor"], rs["mscale_all_dim"]) ** 2
    return scale


def attention(sd, cfg, p, x, positions, q_scale=None):
    """q_scale [T], if given, multiplies each position's query (Mistral 4's temperature)."""
    T, H = x.shape[0], cfg["num_attention_heads"]
    nope, rope, vdim, kvr = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    eps = cfg["rms_norm_eps"]
    if cfg.get("q_lora_rank"):
        q = rms_norm(x @ sd[p + "q_a_proj.weight"].T, sd[p + "q_a_layernorm.weight"], eps) @ sd[p + "q_b_proj.weight"].T
    else:
        q = x @ sd[p + "q_proj.weight"].T
    q = q.view(T, H, nope + rope)
    if q_scale is not None:
        q = q * q_scale.to(q.dtype)[:, None, None]
    kv_a = x @ sd[p + "kv_a_proj_with_mqa.weight"].T
    c, k_pe = kv_a[:, :kvr], kv_a[:, kvr:].view(T, 1, rope)
    kv = (rms_norm(c, sd[p + "kv_a_layernorm.weight"], eps) @ sd[p + "kv_b_proj.weight"].T).view(T, H, nope + vdim)
    cos, sin = rope_tables(cfg, positions)
    interleave = cfg.get("rope_interleave", True)
    q = torch.cat([q[..., :nope], apply_rope(q[..., nope:], cos, sin, interleave)], -1)
    k_pe = apply_rope(k_pe, cos, sin, interleave).expand(T, H, rope)
    k = torch.cat([kv[..., :nope], k_pe], -1)
    return causal_attention(q, k, kv[..., nope:], softmax_scale(cfg)) @ sd[p + "o_proj.weight"].T


def route(cfg, router_logits, bias, dropped_group_score=0.0, trace=None):
    """Returns (weights [T,k], ids [T,k]) as HF DeepseekV3MoE.route_tokens_to_experts.

    dropped_group_score is what the experts of unselected groups score: 0.0 in
    HF (masked_fill(..., 0.0)); -inf reproduces llama.cpp's build_moe_ffn,
    for the test that pins down where the two differ. trace, if a list,
    receives (group scores [T,G], masked selection scores [T,E])."""
    E, G, k = cfg["n_routed_experts"], cfg.get("n_group", 1), cfg["num_experts_per_tok"]
    s = torch.sigmoid(router_logits)
    c = s + bias  # the correction bias only steers selection
    group_scores = topk_lowest_index(c.view(-1, G, E // G), 2)[0].sum(-1)
    _, keep = topk_lowest_index(group_scores, cfg.get("topk_group", 1))
    group_mask = torch.zeros_like(group_scores).scatter_(1, keep, 1.0).bool()
    # HF zeroes, not -inf, the scores of dropped groups: a kept expert whose
    # biased score is negative ranks below them (see test_moe_llamacpp.py)
    c = c.masked_fill(~group_mask.repeat_interleave(E // G, dim=1), dropped_group_score)
    if trace is not None:
        trace.append((group_scores, c))
    _, ids = topk_lowest_index(c, k)
    w = s.gather(1, ids)
    if cfg["norm_topk_prob"]:
        w = w / (w.sum(-1, keepdim=True) + 1e-20)
    return w * cfg["routed_scaling_factor"], ids


def moe(sd, cfg, p, x, dropped_group_score=0.0, trace=None):
    weights, ids = route(cfg, x @ sd[p + "gate.weight"].T, sd[p + "gate.e_score_correction_bias"],
                         dropped_group_score, trace)
    return experts(sd, p, x, weights, ids)


def experts(sd, p, x, weights, ids):
    """The shared experts plus each token's chosen experts times their weights."""
    out = swiglu(x, sd[p + "shared_experts.gate_proj.weight"], sd[p + "shared_experts.up_proj.weight"],
                 sd[p + "shared_experts.down_proj.weight"])
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), ids[t].tolist()):
            q = p + "experts.%d." % e
            out[t] += w * swiglu(x[t], sd[q + "gate_proj.weight"], sd[q + "up_proj.weight"], sd[q + "down_proj.weight"])
    return out


def forward(sd, cfg, ids, dropped_group_score=0.0, trace=None):
    """Logits [T, vocab] for every position of the token ids (positions 0..T-1).
    dropped_group_score and trace: see route()."""
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
    """V3's structure at toy size: q-LoRA, YaRN f=40 with mscale = mscale_all_dim = 1,
    8 experts in 4 groups (2 kept), 1 shared, one leading dense layer.
    max_position_embeddings = factor * L0 as in V3's config (163840 = 40 * 4096)."""
    cfg = dict(vocab_size=96, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, q_lora_rank=24,
               kv_lora_rank=16, qk_nope_head_dim=12, qk_rope_head_dim=8, v_head_dim=10, intermediate_size=40,
               moe_intermediate_size=20, n_routed_experts=8, n_shared_experts=1, num_experts_per_tok=3, n_group=4,
               topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True, first_k_dense_replace=1,
               rope_theta=10000.0, rms_norm_eps=1e-6, rope_interleave=True, max_position_embeddings=163840,
               rope_scaling=dict(type="yarn", factor=40.0, original_max_position_embeddings=4096, beta_fast=32,
                                 beta_slow=1, mscale=1.0, mscale_all_dim=1.0))
    cfg.update(overrides)
    return cfg


def random_checkpoint(cfg, seed, router_std=1.0, bias_mean=0.0, bias_std=0.1):
    """Seeded float32 weights under HF names (per-expert keys, as in the real checkpoints).
    Linear weights N(0, 1/in), unit-scale embeddings, norms near 1; the
    correction bias is N(bias_mean, bias_std)."""
    g = torch.Generator().manual_seed(seed)

    def lin(out, inp, std=None):
        return torch.randn(out, inp, generator=g) * (std if std is not None else 1.0 / math.sqrt(inp))

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=g)

    E, H = cfg["hidden_size"], cfg["num_attention_heads"]
    nope, rope, vdim, kvr, qr = (cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"],
                                 cfg["kv_lora_rank"], cfg.get("q_lora_rank"))
    sd = {"model.embed_tokens.weight": torch.randn(cfg["vocab_size"], E, generator=g),
          "model.norm.weight": norm(E), "lm_head.weight": lin(cfg["vocab_size"], E)}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        a = p + "self_attn."
        sd.update({p + "input_layernorm.weight": norm(E), p + "post_attention_layernorm.weight": norm(E)})
        if qr:
            sd.update({a + "q_a_proj.weight": lin(qr, E), a + "q_a_layernorm.weight": norm(qr),
                       a + "q_b_proj.weight": lin(H * (nope + rope), qr)})
        else:
            sd[a + "q_proj.weight"] = lin(H * (nope + rope), E)
        sd.update({a + "kv_a_proj_with_mqa.weight": lin(kvr + rope, E), a + "kv_a_layernorm.weight": norm(kvr),
                   a + "kv_b_proj.weight": lin(H * (nope + vdim), kvr), a + "o_proj.weight": lin(E, H * vdim)})
        if not is_moe_layer(cfg, i):
            ff = cfg["intermediate_size"]
            sd.update({p + "mlp.gate_proj.weight": lin(ff, E), p + "mlp.up_proj.weight": lin(ff, E),
                       p + "mlp.down_proj.weight": lin(E, ff)})
            continue
        ff, n_e = cfg["moe_intermediate_size"], cfg["n_routed_experts"]
        sd[p + "mlp.gate.weight"] = lin(n_e, E, router_std / math.sqrt(E))
        sd[p + "mlp.gate.e_score_correction_bias"] = bias_mean + bias_std * torch.randn(n_e, generator=g)
        for e in range(n_e):
            q = p + "mlp.experts.%d." % e
            sd.update({q + "gate_proj.weight": lin(ff, E), q + "up_proj.weight": lin(ff, E), q + "down_proj.weight": lin(E, ff)})
        sff = ff * cfg["n_shared_experts"]
        sd.update({p + "mlp.shared_experts.gate_proj.weight": lin(sff, E), p + "mlp.shared_experts.up_proj.weight": lin(sff, E),
                   p + "mlp.shared_experts.down_proj.weight": lin(E, sff)})
    return sd
