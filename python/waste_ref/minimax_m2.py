"""PyTorch reference forward pass of MiniMax-M2 (`minimax_m2`, MiniMaxM2ForCausalLM).

Written from the model's math as HF transformers' minimax_m2 modeling code
computes it (facts in /work/shared/docs/families-2026.md §3), as an
independent oracle for the engine (issue 38):

  h = embed[ids]
  per layer:  h += o_proj(attn(RMSNorm(h)))
              h += moe(RMSNorm(h))          (every layer; no dense FFN)
  logits = lm_head(RMSNorm(h))

attn (MiniMaxM2Attention): GQA without biases; when use_qk_norm, q_norm and
  k_norm are RMSNorms over the WHOLE q and k projections (weights of
  heads*head_dim and kv_heads*head_dim values), applied before the split into
  heads; then NEOX rotate_half RoPE on the first rotary_dim dims of each head
  (inv_freq over rotary_dim: theta^(-2i/rotary_dim)), the rest passed
  through; softmax scale head_dim^-0.5.
moe (MiniMaxM2SparseMoeBlock, block_sparse_moe.): sigmoid of the router
  logits; when use_routing_bias, e_score_correction_bias (beside gate, not
  under it) is added for the top-k selection only; the weights are the
  unbiased sigmoids of the chosen experts divided by their sum (always), times
  routed_scaling_factor (1.0 unless set); SwiGLU experts w1 (gate), w3 (up),
  w2 (down); no shared expert.

Weights: a dict of tensors under the HF checkpoint names; config: a dict with
the HF config.json keys. Expert weights may also come as
block_sparse_moe.experts.E.{gate,up,down}_proj.weight (how
hf_families.container_state_dict names a container's experts).
"""
import math

import torch

from .moe_ops import causal_attention, partial_rope_neox, rms_norm, swiglu, topk_lowest_index


def apply_partial_rope(x, positions, cfg):
    """x [T, heads, head_dim]: NEOX RoPE on the first rotary_dim dims of each head (inv_freq over rotary_dim)."""
    return partial_rope_neox(x, positions, cfg["rope_theta"], cfg["rotary_dim"])


def attention(sd, cfg, p, x, positions, qk_norm_per_head=False):
    """qk_norm_per_head: normalise each head's slice on its own instead (what
    a reader taking Qwen3's per-head norm would compute; tests show it differs)."""
    T = x.shape[0]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    q, k, v = x @ sd[p + "q_proj.weight"].T, x @ sd[p + "k_proj.weight"].T, x @ sd[p + "v_proj.weight"].T
    if cfg.get("use_qk_norm", True) and qk_norm_per_head:
        q = rms_norm(q.view(T, H, D), sd[p + "q_norm.weight"].view(H, D), eps).reshape(T, H * D)
        k = rms_norm(k.view(T, KV, D), sd[p + "k_norm.weight"].view(KV, D), eps).reshape(T, KV * D)
    elif cfg.get("use_qk_norm", True):  # over the whole projection, before the heads are split
        q = rms_norm(q, sd[p + "q_norm.weight"], eps)
        k = rms_norm(k, sd[p + "k_norm.weight"], eps)
    q = apply_partial_rope(q.view(T, H, D), positions, cfg)
    k = apply_partial_rope(k.view(T, KV, D), positions, cfg)
    k = k.repeat_interleave(H // KV, dim=1)  # query head h reads key/value head h // (H / KV)
    v = v.view(T, KV, D).repeat_interleave(H // KV, dim=1)
    return causal_attention(q, k, v, D ** -0.5) @ sd[p + "o_proj.weight"].T


def route(cfg, router_logits, bias, trace=None):
    """(weights [T,k], ids [T,k]): top-k of sigmoid + bias, weights the unbiased
    sigmoids renormalised (sum clamped at 1e-12), times routed_scaling_factor.
    trace, if a list, receives the selection scores [T, experts]."""
    s = torch.sigmoid(router_logits)
    selection = s + bias if bias is not None else s
    if trace is not None:  # what selection ranks, for tests that keep clear of ties
        trace.append(selection)
    _, ids = topk_lowest_index(selection, cfg["num_experts_per_tok"])
    w = s.gather(1, ids)
    w = w / w.sum(-1, keepdim=True).clamp(min=1e-12)
    return w * cfg.get("routed_scaling_factor", 1.0), ids


def expert(sd, q):
    """(gate, up, down) of one expert under the release's names or the engine-side ones."""
    if q + "w1.weight" in sd:
        return sd[q + "w1.weight"], sd[q + "w3.weight"], sd[q + "w2.weight"]
    return sd[q + "gate_proj.weight"], sd[q + "up_proj.weight"], sd[q + "down_proj.weight"]


def moe(sd, cfg, p, x, trace=None):
    bias = sd.get(p + "e_score_correction_bias") if cfg.get("use_routing_bias", True) else None
    weights, ids = route(cfg, x @ sd[p + "gate.weight"].T, bias, trace)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), ids[t].tolist()):
            out[t] += w * swiglu(x[t], *expert(sd, p + "experts.%d." % e))
    return out


def forward(sd, cfg, ids, qk_norm_per_head=False, trace=None):
    """Logits [T, vocab] for every position of the token ids (positions 0..T-1).
    trace, if a list, receives each layer's router selection scores [T, experts]."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(ids.shape[0])
    eps = cfg["rms_norm_eps"]
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = h + attention(sd, cfg, p + "self_attn.", rms_norm(h, sd[p + "input_layernorm.weight"], eps), positions,
                          qk_norm_per_head)
        h = h + moe(sd, cfg, p + "block_sparse_moe.", rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps), trace)
    return rms_norm(h, sd["model.norm.weight"], eps) @ sd["lm_head.weight"].T


def tiny_config(**overrides):
    """A small config with MiniMax-M2's structure: head_dim != hidden/heads,
    GQA 2:1, half of each head rotated, whole-projection q/k norms, the
    sigmoid router with its correction bias."""
    cfg = dict(vocab_size=96, hidden_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
               head_dim=16, rotary_dim=8, use_qk_norm=True, qk_norm_type="per_layer", intermediate_size=24,
               num_local_experts=8, num_experts_per_tok=3, scoring_func="sigmoid", use_routing_bias=True,
               rope_theta=5e6, rms_norm_eps=1e-6, max_position_embeddings=196608)
    cfg.update(overrides)
    return cfg


def random_checkpoint(cfg, seed, router_std=1.0, bias_std=0.1):
    """Seeded float32 weights under HF names (activations O(1), as
    qwen3_moe.random_checkpoint). The q/k norm weights differ from head to
    head (a per-head norm would differ from the whole-projection one: the
    heads' RMS values must differ, families-2026.md §3.5), so each head's
    slice of q_proj / k_proj is scaled by its own factor too."""
    g = torch.Generator().manual_seed(seed)

    def lin(out, inp, std=None):
        return torch.randn(out, inp, generator=g) * (std if std is not None else 1.0 / math.sqrt(inp))

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=g)

    def head_scaled(w, heads, d):  # head h's rows times 0.5 + h / heads
        scale = (0.5 + torch.arange(heads, dtype=torch.float32) / heads).repeat_interleave(d)
        return w * scale[:, None]

    E, H, KV, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    sd = {"model.embed_tokens.weight": torch.randn(cfg["vocab_size"], E, generator=g),
          "model.norm.weight": norm(E), "lm_head.weight": lin(cfg["vocab_size"], E)}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        a, m = p + "self_attn.", p + "block_sparse_moe."
        sd.update({p + "input_layernorm.weight": norm(E), p + "post_attention_layernorm.weight": norm(E),
                   a + "q_proj.weight": head_scaled(lin(H * D, E), H, D),
                   a + "k_proj.weight": head_scaled(lin(KV * D, E), KV, D),
                   a + "v_proj.weight": lin(KV * D, E), a + "o_proj.weight": lin(E, H * D)})
        if cfg.get("use_qk_norm", True):
            sd.update({a + "q_norm.weight": norm(H * D), a + "k_norm.weight": norm(KV * D)})
        ff, n = cfg["intermediate_size"], cfg["num_local_experts"]
        sd[m + "gate.weight"] = lin(n, E, router_std / math.sqrt(E))
        if cfg.get("use_routing_bias", True):
            sd[m + "e_score_correction_bias"] = bias_std * torch.randn(n, generator=g)
        for e in range(n):
            q = m + "experts.%d." % e
            sd.update({q + "w1.weight": lin(ff, E), q + "w3.weight": lin(ff, E), q + "w2.weight": lin(E, ff)})
    return sd
