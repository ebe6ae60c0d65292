"""PyTorch reference forward pass of gpt-oss (`gpt_oss`, GptOssForCausalLM).

Written from the model's math as HF transformers' gpt_oss/modeling_gpt_oss.py,
modeling_rope_utils.py (_compute_yarn_parameters), masking_utils.py
(sliding_window_overlay) and integrations/mxfp4.py (convert_moe_packed_tensors)
compute it (facts in /work/shared/docs/other-families.md §0 and §8), as an
independent oracle for the engine (issue 16):

  h = embed[ids]
  per layer:  h += o_proj(attn(RMSNorm(h)))
              h += moe(RMSNorm(h))
  logits = lm_head(RMSNorm(h))

attn (GptOssAttention): GQA, biases on q, k, v AND o; RoPE with NEOX pairing
  (_apply_rotary_emb: the two halves of the head) at YaRN frequencies
  (truncate as configured; cos and sin times the attention factor, 1 + 0.1 ln
  factor without mscale keys); scores q.k * head_dim^-0.5, causal, and on
  layer_types[i] == "sliding_attention" only keys k > q - sliding_window; one
  learned sink logit per head appended as an extra softmax column (after
  max-subtraction over scores and sink) and dropped.
moe (GptOssMLP): router logits = W x + b; top-k of the raw logits; softmax
  over the k chosen. Expert e (GptOssExperts): gu = x gate_up_proj[e] +
  gate_up_proj_bias[e] with gate_up_proj [E, H, 2I] (HF's parameter after
  dequantisation); gate = gu[..., ::2], up = gu[..., 1::2] (INTERLEAVED);
  gate = min(gate, limit), up = clamp(up, -limit, limit);
  glu = gate sigmoid(alpha gate) (alpha 1.702); out = ((up + 1) glu)
  down_proj[e] + down_proj_bias[e] with down_proj [E, I, H]; the routing
  weight multiplies the whole out, bias included.

Weights: a dict of tensors under the HF parameter names (the experts as the
fused 3-D parameters above, dequantised); config: a dict with the HF
config.json keys. checkpoint_tensors() gives the release's on-disk form
(MXFP4 *_blocks / *_scales, [E, rows = output features, groups, 16]).
"""
import math

import torch

from .moe_ops import rms_norm, topk_lowest_index

ALPHA = 1.702
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_decode(blocks, scales):
    """convert_moe_packed_tensors: blocks u8 [..., G, 16], scales u8 (E8M0) [..., G]
    -> float32 [..., G*32]: in each byte the low nibble is element 2j, the high
    nibble 2j+1, each times 2^(scale - 127)."""
    blocks = torch.as_tensor(blocks, dtype=torch.uint8)
    scales = torch.as_tensor(scales, dtype=torch.uint8).to(torch.int32) - 127
    lut = torch.tensor(FP4_VALUES, dtype=torch.float32)
    lo, hi = (blocks & 0x0F).long(), (blocks >> 4).long()
    out = torch.empty(*blocks.shape[:-1], 32, dtype=torch.float32)
    out[..., 0::2] = lut[lo]
    out[..., 1::2] = lut[hi]
    out = torch.ldexp(out, scales[..., None])
    return out.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32)


def yarn_inv_freq(cfg):
    """(inv_freq [d/2] float64, attention_factor) as _compute_yarn_parameters
    (default RoPE when rope_scaling is absent)."""
    d, base = cfg["head_dim"], cfg["rope_theta"]
    pos_freq = base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    rs = cfg.get("rope_scaling")
    if not rs or rs.get("rope_type", rs.get("type")) != "yarn":
        return 1.0 / pos_freq, 1.0
    f, L0 = rs["factor"], rs["original_max_position_embeddings"]
    beta_fast, beta_slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)

    def corr(r):
        return d * math.log(L0 / (r * 2 * math.pi)) / (2 * math.log(base))

    low, high = corr(beta_fast), corr(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    inv_freq = (1.0 / (f * pos_freq)) * ramp + (1.0 / pos_freq) * (1 - ramp)

    def get_mscale(s, m=1.0):
        return 1.0 + 0.1 * m * math.log(s) if s > 1 else 1.0

    if rs.get("attention_factor") is not None:
        factor = rs["attention_factor"]
    elif rs.get("mscale") and rs.get("mscale_all_dim"):
        factor = get_mscale(f, rs["mscale"]) / get_mscale(f, rs["mscale_all_dim"])
    else:
        factor = get_mscale(f)
    return inv_freq, factor


def apply_rope(x, positions, cfg):
    """x [T, heads, d]: first half a, second half b -> (a cos - b sin, b cos + a sin)."""
    inv_freq, factor = yarn_inv_freq(cfg)
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    cos = (ang.cos() * factor).to(x.dtype)[:, None, :]
    sin = (ang.sin() * factor).to(x.dtype)[:, None, :]
    a, b = x.chunk(2, dim=-1)
    return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)


def is_sliding(cfg, i):
    return cfg["layer_types"][i] == "sliding_attention"


def attention(sd, cfg, p, x, positions, sliding):
    T = x.shape[0]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    q = (x @ sd[p + "q_proj.weight"].T + sd[p + "q_proj.bias"]).view(T, H, D)
    k = (x @ sd[p + "k_proj.weight"].T + sd[p + "k_proj.bias"]).view(T, KV, D)
    v = (x @ sd[p + "v_proj.weight"].T + sd[p + "v_proj.bias"]).view(T, KV, D)
    q, k = apply_rope(q, positions, cfg), apply_rope(k, positions, cfg)
    k = k.repeat_interleave(H // KV, dim=1)
    v = v.repeat_interleave(H // KV, dim=1)
    scores = torch.einsum("thd,shd->hts", q, k) * D ** -0.5
    qi, ki = positions[:, None], positions[None, :]
    keep = ki <= qi
    if sliding:
        keep = keep & (ki > qi - cfg["sliding_window"])
    scores = scores.masked_fill(~keep, float("-inf"))
    sinks = sd[p + "sinks"].to(scores.dtype).view(H, 1, 1).expand(H, T, 1)
    combined = torch.cat([scores, sinks], -1)
    combined = combined - combined.max(-1, keepdim=True).values
    probs = torch.softmax(combined, -1)[..., :-1]  # the sink's column dropped
    out = torch.einsum("hts,shd->thd", probs, v).reshape(T, H * D)
    return out @ sd[p + "o_proj.weight"].T + sd[p + "o_proj.bias"]


def route(cfg, logits):
    """(weights [T,k], ids [T,k]): top-k of the raw logits (ties to the lower
    id), softmax over the k chosen."""
    values, ids = topk_lowest_index(logits, cfg["num_experts_per_tok"])
    return torch.softmax(values, dim=-1), ids


def expert(sd, cfg, p, e, x, trace=None):
    """One expert on x [.., H] (gpt-oss's clamped SwiGLU, biases included)."""
    limit = cfg.get("swiglu_limit", 7.0)
    gu = x @ sd[p + "gate_up_proj"][e] + sd[p + "gate_up_proj_bias"][e]
    gate, up = gu[..., ::2], gu[..., 1::2]
    if trace is not None:  # the pre-clamp values, for tests that check the clamp really acts
        trace.append((gate.detach().clone(), up.detach().clone()))
    gate = gate.clamp(max=limit)
    up = up.clamp(min=-limit, max=limit)
    glu = gate * torch.sigmoid(gate * ALPHA)
    return ((up + 1) * glu) @ sd[p + "down_proj"][e] + sd[p + "down_proj_bias"][e]


def moe(sd, cfg, p, x, trace=None, router_trace=None):
    logits = x @ sd[p + "router.weight"].T + sd[p + "router.bias"]
    if router_trace is not None:
        router_trace.append(logits)
    weights, ids = route(cfg, logits)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), ids[t].tolist()):
            out[t] += w * expert(sd, cfg, p + "experts.", e, x[t], trace)
    return out


def forward(sd, cfg, ids, trace=None, router_trace=None):
    """Logits [T, vocab] for every position of the token ids (positions 0..T-1).
    trace, if a list, receives every routed expert's pre-clamp (gate, up);
    router_trace each layer's router logits [T, E] (bias included)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(ids.shape[0])
    eps = cfg["rms_norm_eps"]
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = h + attention(sd, cfg, p + "self_attn.", rms_norm(h, sd[p + "input_layernorm.weight"], eps), positions,
                          is_sliding(cfg, i))
        h = h + moe(sd, cfg, p + "mlp.", rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps), trace,
                    router_trace)
    return rms_norm(h, sd["model.norm.weight"], eps) @ sd["lm_head.weight"].T


def tiny_config(**overrides):
    """gpt-oss-20b's structure at a tiny size: GQA 2:1, head_dim != hidden /
    heads, alternating sliding (window 8, shorter than the test prompts) and
    full layers starting with sliding, YaRN f=32 with truncate false, widths
    multiples of 32 (MXFP4 groups)."""
    cfg = dict(vocab_size=96, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
               head_dim=16, intermediate_size=32, num_local_experts=8, num_experts_per_tok=3, sliding_window=8,
               layer_types=["sliding_attention", "full_attention"], rope_theta=150000.0, rms_norm_eps=1e-5,
               swiglu_limit=7.0, attention_bias=True, max_position_embeddings=131072,
               rope_scaling=dict(rope_type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0,
                                 beta_slow=1.0, truncate=False))
    cfg.update(overrides)
    return cfg


def random_mxfp4(shape, generator, scale_exp=-3, spread=2):
    """(blocks u8 [*shape[:-1], shape[-1]/32, 16], scales u8 [..., shape[-1]/32]):
    random nibbles and E8M0 exponents around 2^scale_exp."""
    *lead, cols = shape
    groups = cols // 32
    blocks = torch.randint(0, 256, (*lead, groups, 16), generator=generator, dtype=torch.int32).to(torch.uint8)
    scales = (127 + scale_exp + torch.randint(-spread, spread + 1, (*lead, groups), generator=generator)).to(torch.uint8)
    return blocks, scales


def random_checkpoint(cfg, seed, expert_scale_exp=-3, sink_std=1.0):
    """The seeded weights under the HF parameter names (see random_checkpoint_files)."""
    return random_checkpoint_files(cfg, seed, expert_scale_exp, sink_std)[0]


def state_dict_from_files(files):
    """The HF parameters of the release's tensors: each MXFP4 expert tensor
    decoded and transposed as HF's loader does, everything else as is."""
    sd = {}
    for name, t in files.items():
        if name.endswith("_blocks"):
            base = name[:-len("_blocks")]
            sd[base] = mxfp4_decode(t, files[base + "_scales"]).transpose(1, 2).contiguous()
        elif not name.endswith("_scales"):
            sd[name] = t
    return sd


def random_checkpoint_files(cfg, seed, expert_scale_exp=-3, sink_std=1.0):
    """-> (sd: the HF parameter names, experts dequantised [E, H, 2I] / [E, I, H];
    files: the release's tensor names, experts as MXFP4 *_blocks / *_scales with
    rows the output features, everything else as in sd)."""
    g = torch.Generator().manual_seed(seed)

    def lin(out, inp, std=None):
        return torch.randn(out, inp, generator=g) * (std if std is not None else 1.0 / math.sqrt(inp))

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=g)

    Hd, H, KV, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    E, I = cfg["num_local_experts"], cfg["intermediate_size"]
    sd = {"model.embed_tokens.weight": torch.randn(cfg["vocab_size"], Hd, generator=g),
          "model.norm.weight": norm(Hd), "lm_head.weight": lin(cfg["vocab_size"], Hd)}
    files = {}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        a = p + "self_attn."
        sd.update({p + "input_layernorm.weight": norm(Hd), p + "post_attention_layernorm.weight": norm(Hd),
                   a + "q_proj.weight": lin(H * D, Hd), a + "q_proj.bias": 0.3 * torch.randn(H * D, generator=g),
                   a + "k_proj.weight": lin(KV * D, Hd), a + "k_proj.bias": 0.3 * torch.randn(KV * D, generator=g),
                   a + "v_proj.weight": lin(KV * D, Hd), a + "v_proj.bias": 0.3 * torch.randn(KV * D, generator=g),
                   a + "o_proj.weight": lin(Hd, H * D), a + "o_proj.bias": 0.3 * torch.randn(Hd, generator=g),
                   a + "sinks": sink_std * torch.randn(H, generator=g),
                   p + "mlp.router.weight": lin(E, Hd), p + "mlp.router.bias": 0.3 * torch.randn(E, generator=g)})
        x = p + "mlp.experts."
        gu_blocks, gu_scales = random_mxfp4((E, 2 * I, Hd), g, expert_scale_exp)
        dn_blocks, dn_scales = random_mxfp4((E, Hd, I), g, expert_scale_exp)
        files.update({x + "gate_up_proj_blocks": gu_blocks, x + "gate_up_proj_scales": gu_scales,
                      x + "down_proj_blocks": dn_blocks, x + "down_proj_scales": dn_scales})
        sd[x + "gate_up_proj_bias"] = 0.3 * torch.randn(E, 2 * I, generator=g)
        sd[x + "down_proj_bias"] = 0.3 * torch.randn(E, Hd, generator=g)
    files.update(sd)
    # HF transposes after dequantising: [E, 2I, H] -> [E, H, 2I], [E, H, I] -> [E, I, H]
    return state_dict_from_files(files), files
