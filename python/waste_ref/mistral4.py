"""PyTorch reference forward pass of Mistral 4 (`mistral4`, Mistral Small 4 /
Large 3), from families-2026.md §6: DeepSeek-V3's MLA and layout
(deepseek_v3.py) with two differences.

- Router: softmax over all experts, top-k, renormalised, times
  routed_scaling_factor (1.0 in the release), plus the shared expert; one
  expert group, no correction bias.
- Query temperature (Llama-4 scaling): the query at position p is multiplied
  by 1 + beta * ln(1 + floor(p / L0)), beta = rope_parameters'
  llama_4_scaling_beta and L0 its original_max_position_embeddings; exactly
  1 below L0.

The softmax scale follows deepseek_v3 (and llama.cpp): times
get_mscale(factor, mscale_all_dim)^2 under YaRN. HF's Mistral4Attention
leaves that factor out (families-2026.md §6.5, an open CHECK): the engine and
this reference read the config as DeepSeek's.

The release (Mistral3ForConditionalGeneration) nests the text config under
text_config and its tensors under model.language_model., each layer's
experts stacked (release_tensors); the reference's state dict uses the flat
per-expert names of deepseek_v3.
"""
import torch

from . import deepseek_v3
from .moe_ops import rms_norm, swiglu, topk_lowest_index


def reference_config(cfg):
    """cfg with HF v5's rope_parameters (a release's or a container's config) read as rope_theta and
    rope_scaling, the form deepseek_v3's RoPE takes."""
    params = cfg.get("rope_parameters")
    if not params or cfg.get("rope_scaling"):
        return cfg
    out = dict(cfg, rope_theta=params.get("rope_theta", cfg.get("rope_theta", 10000.0)), rope_scaling=None)
    if params.get("rope_type", params.get("type")) == "yarn":
        out["rope_scaling"] = dict({k: v for k, v in params.items() if k not in ("rope_type", "rope_theta")}, type="yarn")
    return out


def temperature(cfg):
    """(beta, L0) of the query temperature, or None."""
    rs = cfg.get("rope_scaling") or {}
    beta = rs.get("llama_4_scaling_beta")
    return (beta, rs["original_max_position_embeddings"]) if beta else None


def query_scale(cfg, positions):
    t = temperature(cfg)
    if t is None:
        return None
    beta, L0 = t
    return 1.0 + beta * torch.log1p(torch.floor(positions.to(torch.float64) / L0))


def route(cfg, router_logits, trace=None):
    """(weights [T,k], ids [T,k]): softmax, top-k (ties to the lower id), renormalised, scaled."""
    probs = torch.softmax(router_logits, dim=-1)
    if trace is not None:
        trace.append(probs)
    w, ids = topk_lowest_index(probs, cfg["num_experts_per_tok"])
    if cfg["norm_topk_prob"]:
        w = w / w.sum(-1, keepdim=True)
    return w * cfg["routed_scaling_factor"], ids


def moe(sd, cfg, p, x, trace=None):
    weights, ids = route(cfg, x @ sd[p + "gate.weight"].T, trace)
    return deepseek_v3.experts(sd, p, x, weights, ids)


def forward(sd, cfg, ids, trace=None):
    """Logits [T, vocab] at positions 0..T-1; trace, if a list, receives each MoE layer's router probabilities."""
    cfg = reference_config(cfg)
    ids = torch.as_tensor(ids, dtype=torch.long)
    positions = torch.arange(ids.shape[0])
    scale = query_scale(cfg, positions)
    eps = cfg["rms_norm_eps"]
    h = sd["model.embed_tokens.weight"][ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        x = rms_norm(h, sd[p + "input_layernorm.weight"], eps)
        h = h + deepseek_v3.attention(sd, cfg, p + "self_attn.", x, positions, scale)
        x = rms_norm(h, sd[p + "post_attention_layernorm.weight"], eps)
        if deepseek_v3.is_moe_layer(cfg, i):
            h = h + moe(sd, cfg, p + "mlp.", x, trace)
        else:
            h = h + swiglu(x, sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"], sd[p + "mlp.down_proj.weight"])
    return rms_norm(h, sd["model.norm.weight"], eps) @ sd["lm_head.weight"].T


def tiny_config(**overrides):
    """Small 4's structure at toy size: q-LoRA, every layer MoE, 8 experts
    (top 3) and a shared one, YaRN factor 128 with mscale = mscale_all_dim =
    1, the temperature's beta 0.1. original_max_position_embeddings is 4 (the
    release's 8192), so the temperature moves within a 20-token prompt."""
    cfg = deepseek_v3.tiny_config(
        n_group=1, topk_group=1, routed_scaling_factor=1.0, norm_topk_prob=True, first_k_dense_replace=0,
        scoring_func="softmax", max_position_embeddings=512, moe_intermediate_size=24,
        rope_scaling=dict(type="yarn", factor=128.0, original_max_position_embeddings=4, beta_fast=32, beta_slow=1,
                          mscale=1.0, mscale_all_dim=1.0, llama_4_scaling_beta=0.1))
    cfg.update(overrides)
    return cfg


def random_checkpoint(cfg, seed):
    """deepseek_v3's seeded weights without the correction biases (the softmax router has none)."""
    sd = deepseek_v3.random_checkpoint(cfg, seed)
    return {k: v for k, v in sd.items() if not k.endswith("e_score_correction_bias")}


def release_tensors(sd, cfg, seed=0):
    """The release's tensors: the text model under model.language_model.,
    each layer's experts stacked (gate_up_proj [E, 2I, H]: an expert's gate
    rows, then its up rows; down_proj [E, H, I]), lm_head at the top, and a
    vision tower's and projector's tensors the text model leaves out."""
    files = {}
    for name, t in sd.items():
        if ".mlp.experts." in name:
            continue
        files[name if name == "lm_head.weight" else "model.language_model." + name[len("model."):]] = t
    for i in range(cfg["num_hidden_layers"]):
        if not deepseek_v3.is_moe_layer(cfg, i):
            continue
        p, n_e = "model.layers.%d.mlp.experts." % i, cfg["n_routed_experts"]
        stack = lambda proj: torch.stack([sd["%s%d.%s.weight" % (p, e, proj)] for e in range(n_e)])
        q = "model.language_model.layers.%d.mlp.experts." % i
        files[q + "gate_up_proj"] = torch.cat([stack("gate_proj"), stack("up_proj")], 1)
        files[q + "down_proj"] = stack("down_proj")
    g = torch.Generator().manual_seed(seed)
    files["model.vision_tower.patch_conv.weight"] = torch.randn(8, 3, 2, 2, generator=g)
    files["model.multi_modal_projector.linear_1.weight"] = torch.randn(cfg["hidden_size"], 8, generator=g)
    return files


def release_config(cfg):
    """config.json's text_config: HF v5's rope_parameters (rope_type, rope_theta and YaRN's keys) in place
    of rope_theta / rope_scaling."""
    text = {k: v for k, v in cfg.items() if k not in ("rope_scaling", "rope_theta", "scoring_func")}
    params = {"rope_type": "default", "rope_theta": cfg["rope_theta"]}
    if cfg.get("rope_scaling"):
        params.update({k: v for k, v in cfg["rope_scaling"].items() if k != "type"}, rope_type="yarn")
    text.update(model_type="mistral4", rope_parameters=params, tie_word_embeddings=False, hidden_act="silu",
                attention_bias=False, attention_dropout=0.0)
    return text
