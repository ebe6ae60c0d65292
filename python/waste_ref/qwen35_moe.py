"""PyTorch reference forward pass of Qwen3.5 / Qwen3.6 MoE (`qwen3_5_moe`,
e.g. Qwen3.5-35B-A3B), written from families-2026.md §1 (the facts of HF
transformers' qwen3_5_moe modeling code), as an oracle for the engine:

  h = embed[ids]
  per layer:  h += mixer(RMSNorm1p(h))      mixer: Gated DeltaNet, or gated full
              h += moe(RMSNorm1p(h))               attention on every
  logits = lm_head(RMSNorm1p(h))                   full_attention_interval-th layer

- RMSNorm1p: zero-centred, y = x / rms(x) * (1 + w), for the input,
  post-attention, final and q/k norms; the GDN output norm is plain.
- Gated attention: q_proj gives each head [q | gate]; q and k RMSNorm1p'd per
  head, NEOX RoPE on the first head_dim * partial_rotary_factor dims, GQA
  causal softmax (head h reads KV head h // (heads / kv_heads)), the output
  times sigmoid(gate), then o_proj.
- Gated DeltaNet, token by token (the recurrent form; HF's chunked prefill is
  the same sum): one projection [q | k | v], one causal depthwise conv and
  silu over those channels, q and k L2-normalised per head (x *
  rsqrt(sum x^2 + 1e-6)), q times head_dim^-1/2; beta = sigmoid(b), g =
  -exp(A_log) * softplus(a + dt_bias) per value head; value head j reads key
  head j // (value heads / key heads); S <- e^g S, u = beta (v - S^T k),
  S += k u^T, o = S^T q; y = RMSNorm(o; norm) * silu(z); out_proj.
- MoE: softmax over all experts, top-k (ties to the lower id), always
  renormalised, SwiGLU experts; plus the shared expert times
  sigmoid(shared_expert_gate x).

Weights: a dict of tensors under the flat HF names (model.layers.N....); the
release nests them under model.language_model. (release_tensors). Float32 or
float64 throughout, one precision, no fused shortcuts.
"""
import math

import torch

from .moe_ops import causal_attention, partial_rope_neox, rms_norm, swiglu, topk_lowest_index


def is_full_attention(cfg, i):
    types = cfg.get("layer_types")
    if types:
        return types[i] == "full_attention"
    return (i + 1) % cfg.get("full_attention_interval", 4) == 0


def rope_settings(cfg):
    """(theta, rotated dims) from rope_parameters (or the flat keys)."""
    params = cfg.get("rope_parameters") or {}
    theta = params.get("rope_theta", cfg.get("rope_theta", 1e7))
    factor = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 0.25))
    return theta, int(cfg["head_dim"] * factor)


def rms_norm1p(x, w, eps):
    return rms_norm(x, 1.0 + w, eps)


def attention(sd, cfg, p, x, positions):
    T = x.shape[0]
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    theta, rot = rope_settings(cfg)
    qg = (x @ sd[p + "q_proj.weight"].T).view(T, H, 2 * D)
    q, gate = qg[..., :D], qg[..., D:].reshape(T, H * D)
    k = (x @ sd[p + "k_proj.weight"].T).view(T, KV, D)
    v = (x @ sd[p + "v_proj.weight"].T).view(T, KV, D)
    q = partial_rope_neox(rms_norm1p(q, sd[p + "q_norm.weight"], eps), positions, theta, rot)
    k = partial_rope_neox(rms_norm1p(k, sd[p + "k_norm.weight"], eps), positions, theta, rot)
    k = k.repeat_interleave(H // KV, dim=1)
    v = v.repeat_interleave(H // KV, dim=1)
    o = causal_attention(q, k, v, 1.0 / math.sqrt(D)) * torch.sigmoid(gate)
    return o @ sd[p + "o_proj.weight"].T


def l2norm(x):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def gated_delta_net(sd, cfg, p, x):
    T = x.shape[0]
    hk, hv, d = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"]
    kd = hk * d
    mixed = x @ sd[p + "in_proj_qkv.weight"].T                     # [T, 2Kd + Vd]
    taps = sd[p + "conv1d.weight"][:, 0, :]                        # [C, K]
    K = taps.shape[1]
    padded = torch.cat([torch.zeros(K - 1, mixed.shape[1], dtype=mixed.dtype), mixed])
    conv = sum(taps[:, i] * padded[i:i + T] for i in range(K))     # y_t = sum_i w_i x_{t-K+1+i}
    conv = torch.nn.functional.silu(conv)
    q = l2norm(conv[:, :kd].reshape(T, hk, d)) * (d ** -0.5)
    k = l2norm(conv[:, kd:2 * kd].reshape(T, hk, d))
    v = conv[:, 2 * kd:].reshape(T, hv, d)
    q = q.repeat_interleave(hv // hk, dim=1)                       # value head j reads key head j // r
    k = k.repeat_interleave(hv // hk, dim=1)
    beta = torch.sigmoid(x @ sd[p + "in_proj_b.weight"].T)         # [T, Hv]
    g = -torch.exp(sd[p + "A_log"]) * torch.nn.functional.softplus(x @ sd[p + "in_proj_a.weight"].T + sd[p + "dt_bias"])
    z = (x @ sd[p + "in_proj_z.weight"].T).reshape(T, hv, d)
    S = torch.zeros(hv, d, d, dtype=x.dtype)                       # [heads, keys, values]
    outs = []
    for t in range(T):
        S = S * torch.exp(g[t])[:, None, None]
        kv_mem = (S * k[t][:, :, None]).sum(-2)
        delta = (v[t] - kv_mem) * beta[t][:, None]
        S = S + k[t][:, :, None] * delta[:, None, :]
        outs.append((S * q[t][:, :, None]).sum(-2))
    o = torch.stack(outs)                                          # [T, Hv, d]
    y = rms_norm(o, sd[p + "norm.weight"], cfg["rms_norm_eps"]) * torch.nn.functional.silu(z)
    return y.reshape(T, hv * d) @ sd[p + "out_proj.weight"].T


def route(cfg, router_logits, trace=None):
    probs = torch.softmax(router_logits, dim=-1)
    if trace is not None:
        trace.append(probs)
    weights, ids = topk_lowest_index(probs, cfg["num_experts_per_tok"])
    return weights / weights.sum(-1, keepdim=True), ids


def moe(sd, cfg, p, x, trace=None):
    weights, ids = route(cfg, x @ sd[p + "gate.weight"].T, trace)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), ids[t].tolist()):
            e_p = p + "experts.%d." % e
            out[t] += w * swiglu(x[t], sd[e_p + "gate_proj.weight"], sd[e_p + "up_proj.weight"], sd[e_p + "down_proj.weight"])
    s = p + "shared_expert."
    shared = swiglu(x, sd[s + "gate_proj.weight"], sd[s + "up_proj.weight"], sd[s + "down_proj.weight"])
    return out + shared * torch.sigmoid(x @ sd[p + "shared_expert_gate.weight"].T)


def forward(sd, cfg, ids, trace=None):
    """Logits [T, vocab] at positions 0..T-1; trace, if a list, receives each MoE layer's router probabilities."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(ids.shape[0])
    eps = cfg["rms_norm_eps"]
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        x = rms_norm1p(h, sd[p + "input_layernorm.weight"], eps)
        if is_full_attention(cfg, i):
            h = h + attention(sd, cfg, p + "self_attn.", x, positions)
        else:
            h = h + gated_delta_net(sd, cfg, p + "linear_attn.", x)
        h = h + moe(sd, cfg, p + "mlp.", rms_norm1p(h, sd[p + "post_attention_layernorm.weight"], eps), trace)
    return rms_norm1p(h, sd["model.norm.weight"], eps) @ sd["lm_head.weight"].T


def tiny_config(**overrides):
    """Qwen3.5-35B-A3B's structure at toy size: 2 key heads over 4 value heads
    (r = 2, so a head-order mistake shows), 4 attention heads over 1 KV head
    of 16 with RoPE on 4 dims, 8 experts top-3 and a shared one."""
    cfg = dict(vocab_size=96, hidden_size=48, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1,
               head_dim=16, moe_intermediate_size=24, shared_expert_intermediate_size=32, num_experts=8,
               num_experts_per_tok=3, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
               linear_value_head_dim=16, linear_conv_kernel_dim=4, full_attention_interval=4, attn_output_gate=True,
               rope_parameters=dict(rope_type="default", rope_theta=1e7, partial_rotary_factor=0.25,
                                    mrope_section=[1, 1, 0], mrope_interleaved=True),
               rms_norm_eps=1e-6, max_position_embeddings=4096)
    cfg.update(overrides)
    return cfg


def random_checkpoint(cfg, seed, router_std=1.0):
    """Seeded float32 weights under the flat HF names: N(0, 1/in) linear
    weights, unit-scale embeddings, zero-centred norms near 0 (1 + w near 1),
    the GDN norm near 1, conv taps of unit output variance, A_log near 0 and
    dt_bias near -2.5 (decays near 0.92), so every part is far from degenerate."""
    g = torch.Generator().manual_seed(seed)

    def lin(out, inp, std=None):
        return torch.randn(out, inp, generator=g) * (std if std is not None else 1.0 / math.sqrt(inp))

    def centred(n):
        return 0.1 * torch.randn(n, generator=g)

    E, H, KV, D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    hk, hv, d = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"]
    C, K = 2 * hk * d + hv * d, cfg["linear_conv_kernel_dim"]
    sd = {"model.embed_tokens.weight": torch.randn(cfg["vocab_size"], E, generator=g),
          "model.norm.weight": centred(E), "lm_head.weight": lin(cfg["vocab_size"], E)}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        sd.update({p + "input_layernorm.weight": centred(E), p + "post_attention_layernorm.weight": centred(E)})
        if is_full_attention(cfg, i):
            a = p + "self_attn."
            sd.update({a + "q_proj.weight": lin(2 * H * D, E), a + "k_proj.weight": lin(KV * D, E),
                       a + "v_proj.weight": lin(KV * D, E), a + "o_proj.weight": lin(E, H * D),
                       a + "q_norm.weight": centred(D), a + "k_norm.weight": centred(D)})
        else:
            a = p + "linear_attn."
            sd.update({a + "in_proj_qkv.weight": lin(C, E), a + "in_proj_z.weight": lin(hv * d, E),
                       a + "in_proj_b.weight": lin(hv, E), a + "in_proj_a.weight": lin(hv, E),
                       a + "conv1d.weight": 0.5 * torch.randn(C, 1, K, generator=g),
                       a + "dt_bias": -2.5 + 0.5 * torch.randn(hv, generator=g),
                       a + "A_log": 0.3 * torch.randn(hv, generator=g),
                       a + "norm.weight": 1.0 + 0.1 * torch.randn(d, generator=g),
                       a + "out_proj.weight": lin(E, hv * d)})
        m, ff, fs = p + "mlp.", cfg["moe_intermediate_size"], cfg["shared_expert_intermediate_size"]
        sd[m + "gate.weight"] = lin(cfg["num_experts"], E, router_std / math.sqrt(E))
        for e in range(cfg["num_experts"]):
            q = m + "experts.%d." % e
            sd.update({q + "gate_proj.weight": lin(ff, E), q + "up_proj.weight": lin(ff, E), q + "down_proj.weight": lin(E, ff)})
        sd.update({m + "shared_expert.gate_proj.weight": lin(fs, E), m + "shared_expert.up_proj.weight": lin(fs, E),
                   m + "shared_expert.down_proj.weight": lin(E, fs), m + "shared_expert_gate.weight": lin(1, E)})
    return sd


def release_tensors(sd, cfg, seed=0, stacked=True):
    """The release's tensors (Qwen3_5MoeForConditionalGeneration): the text
    model under model.language_model., lm_head at the top, each layer's
    experts stacked when `stacked` (gate_up_proj [E, 2I, H]: an expert's gate
    rows, then its up rows; down_proj [E, H, I]; which layout the released
    files use is a (verify) in the spec, the converter takes both), a vision
    tower tensor and the MTP block's (mtp.*), which the text model leaves out."""
    files = {}
    for name, t in sd.items():
        if stacked and ".mlp.experts." in name:
            continue
        files[name if name == "lm_head.weight" else "model.language_model." + name[len("model."):]] = t
    if stacked:
        for i in range(cfg["num_hidden_layers"]):
            p, n_e = "model.layers.%d.mlp.experts." % i, cfg["num_experts"]
            stack = lambda proj: torch.stack([sd["%s%d.%s.weight" % (p, e, proj)] for e in range(n_e)])
            q = "model.language_model.layers.%d.mlp.experts." % i
            files[q + "gate_up_proj"] = torch.cat([stack("gate_proj"), stack("up_proj")], 1)
            files[q + "down_proj"] = stack("down_proj")
    g = torch.Generator().manual_seed(seed)
    H = cfg["hidden_size"]
    files["model.visual.patch_embed.proj.weight"] = torch.randn(8, 3, 2, 2, 2, generator=g)
    files["mtp.fc.weight"] = torch.randn(H, 2 * H, generator=g) / math.sqrt(2 * H)
    files["mtp.norm.weight"] = 0.1 * torch.randn(H, generator=g)
    return files


def release_config(cfg, ids):
    """config.json: the text model's keys under text_config (model_type
    qwen3_5_moe_text), the wrapper's own around them (a test's own "_" keys
    left out)."""
    text = dict({k: v for k, v in cfg.items() if not k.startswith("_")}, model_type="qwen3_5_moe_text", hidden_act="silu", tie_word_embeddings=False, attention_bias=False,
                attention_dropout=0.0, mtp_num_hidden_layers=1, mamba_ssm_dtype="float32", **ids)
    return {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
            "image_token_id": 90, "video_token_id": 91, "tie_word_embeddings": False, "text_config": text,
            "vision_config": {"model_type": "qwen3_5_moe", "hidden_size": 8, "depth": 1}}


def next_tensors(sd, cfg, seed=0):
    """Qwen3-Next's release layout (Qwen3NextForCausalLM): flat model.* names,
    each GDN layer's q/k/v/z projections grouped per key head in
    in_proj_qkvz ([q (D) | k (D) | v (r·D) | z (r·D)] per key head kappa, its
    value heads kappa·r .. kappa·r + r - 1) and b/a in in_proj_ba ([b (r) |
    a (r)] per key head), per-expert names, and the MTP block (mtp.*)."""
    hk, hv, d = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"]
    r, kd = hv // hk, hk * d
    files = {}
    for name, t in sd.items():
        if not name.endswith(("in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight", "in_proj_a.weight")):
            files[name] = t
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d.linear_attn." % i
        if p + "in_proj_qkv.weight" not in sd:
            continue
        qkv, z = sd[p + "in_proj_qkv.weight"], sd[p + "in_proj_z.weight"]
        b, a = sd[p + "in_proj_b.weight"], sd[p + "in_proj_a.weight"]
        groups, ba = [], []
        for kappa in range(hk):
            v_rows = slice(2 * kd + kappa * r * d, 2 * kd + (kappa + 1) * r * d)
            groups += [qkv[kappa * d:(kappa + 1) * d], qkv[kd + kappa * d:kd + (kappa + 1) * d], qkv[v_rows],
                       z[kappa * r * d:(kappa + 1) * r * d]]
            ba += [b[kappa * r:(kappa + 1) * r], a[kappa * r:(kappa + 1) * r]]
        files[p + "in_proj_qkvz.weight"] = torch.cat(groups)
        files[p + "in_proj_ba.weight"] = torch.cat(ba)
    g = torch.Generator().manual_seed(seed)
    H = cfg["hidden_size"]
    files["mtp.fc.weight"] = torch.randn(H, 2 * H, generator=g) / math.sqrt(2 * H)
    return files


def next_config(cfg, ids):
    """Qwen3-Next's config.json: flat, rope_theta and partial_rotary_factor at the top, norm_topk_prob and
    decoder_sparse_step as its config class has them."""
    theta, rot = rope_settings(cfg)
    out = {k: v for k, v in cfg.items() if not k.startswith("_") and k != "rope_parameters"}
    out.update(model_type="qwen3_next", architectures=["Qwen3NextForCausalLM"], hidden_act="silu",
               tie_word_embeddings=False, rope_theta=theta, partial_rotary_factor=rot / cfg["head_dim"],
               rope_scaling=None, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], attention_bias=False,
               **ids)
    return out
