"""Writes deterministic synthetic Hugging Face checkpoints of tiny Kimi models.

The input side of `waste convert`: a directory as a release publishes it —
config.json (K3: the text config nested under `text_config`, the outer
multimodal wrapper around it), model.safetensors.index.json, several
safetensors shards, tiktoken.model and tokenizer_config.json.

    PYTHONPATH=python /usr/bin/python3 -m waste_ref.hf_synth OUT_DIR [--model k3|kimi-linear]
        [--seed 1] [--shards 3] [--experts-format bf16|fp8|mxfp4|int4] [--trunk-format auto|bf16|fp8]
        [--scales-apart]

Models (the same dimensions as `waste synth`'s tiny / tiny-k3 presets):
- kimi-linear: hidden 128, 4 layers (KDA 1,2,4; MLA 3, 1-based), 8 experts
  top-2, 1 shared expert, vocab 316, Kimi-Linear tensor names (no prefix).
  `--shape mid`: the dimensions of `waste synth --preset mid` (hidden 1024,
  12 layers with MLA at 4, 8, 12, 64 experts top-8, vocab 32768; 1.2 B
  parameters), the model of scripts/compare-llama.sh.
- k3: every K3 text feature (models.md §8): `language_model.` prefix, latent
  MoE with norm, Attention Residuals, SiTU, q_lora MLA with output gate,
  full-rank KDA gate, bounded decay gate, 2 shared experts, grouped router,
  `A_log` padded to head_dim, and one vision tensor outside the prefix.

Weights are bf16 (A_log, dt_bias, e_score_correction_bias f32, as releases
keep them). Routed experts `...block_sparse_moe.experts.{e}.w1/w3/w2.weight`
(gate/up/down) are stored per --experts-format:
- fp8:   F8_E4M3 `W` + F32 `W_scale_inv` (128×128 blocks); FP8 releases also
         quantise the trunk linears (--trunk-format auto does so), never
         embed_tokens, lm_head, norms or the router (other-families §1);
- mxfp4: U8 `W_packed` [out, in/2] + U8 E8M0 `W_scale` [out, in/32];
- int4:  I32 `W_packed` [out, in/8] + BF16 `W_scale` [out, in/32] + I64
         `W_shape` (compressed-tensors pack-quantized, group 32).

`load_weights(dir)` decodes a checkpoint back to float64 arrays by logical
name (what the C++ Checkpoint::read_f32 must give, and the *unquantised*
weights a conversion is judged against).
"""

import argparse
import json
import os
import random

import numpy as np

from . import safetensors_io as st

SPECIAL_NAMES = ["[BOS]", "[EOS]", "<|end_of_msg|>", "<|open|>", "<|close|>", "<|sep|>", "<|media_begin|>",
                 "<|media_content|>", "<|media_pad|>", "<|media_end|>"]
SPECIAL_SLOTS = len(SPECIAL_NAMES)

# Common English pieces, each the join of two earlier tokens.
CURATED_MERGES = [
    " t", " a", "he", "in", "er", "an", "on", "re", " s", "en", "at", "or", "es", "is", "it", "ou", "nd", "ed", "ar",
    "al", "le", "st", "ic", "ro", "ll", "ve", "ch", "ly", "om", " w", " o", " c", " b", " f", " p", " m", " d", " h",
    " th", "the", " the", "ing", "ion", "ent", " in", " to", " and", " of", " is", "ation", " be", " re", "ter", " for",
    " on", " it", "as", "se", "ut", " I", " l", " n", " e", " g", "ers", " that", "th", " y", " you", "ment", " wh",
]

# Scales of the random weights (as src/synth): unit-RMS activations stay O(1).
ROUTER_GAIN = 2.0          # sigmoid router logits of std ~2: routing spreads over the experts
CORRECTION_BIAS_STD = 0.01
LM_HEAD_GAIN = 2.0
NORM_STD = 0.1
CONV_STD = 0.5
DT_BIAS_MEAN, DT_BIAS_STD = -2.5, 0.5
A_LOG_STD, A_LOG_PAD = 0.3, 3.0
DECAY_GAIN = 0.5


# ---------------------------------------------------------------------------
# configs


def _layer_lists(layers, mla_at):
    """MLA at 1-based layers mla_at, mla_at + 4, ...: 3 for the upstream tiny
    fixtures' pattern, 4 for `waste synth --preset mid`'s."""
    kda = [i for i in range(1, layers + 1) if i % 4 != mla_at % 4]
    mla = [i for i in range(1, layers + 1) if i % 4 == mla_at % 4]
    return kda, mla


# Dimensions per shape. "mid" is `waste synth --preset mid`'s Kimi-Linear
# (1.2 B parameters, 1.1 B of them routed experts): the model of the
# llama.cpp speed comparison (issue 19, scripts/compare-llama.sh).
SHAPES = {
    "tiny": dict(hidden=128, layers=4, inter=256, moe_inter=64, experts=8, top_k=2, heads=4, nope=16, rope=8, v=16,
                 kv_lora=32, kda_dim=32, kda_heads=4, mla_at=3, ranks=306),
    "mid": dict(hidden=1024, layers=12, inter=2048, moe_inter=512, experts=64, top_k=8, heads=8, nope=64, rope=32,
                v=64, kv_lora=128, kda_dim=128, kda_heads=8, mla_at=4, ranks=32768 - SPECIAL_SLOTS),
}


def _text_config(model, ranks, shape="tiny"):
    d = SHAPES[shape]
    layers = d["layers"]
    kda, mla = _layer_lists(layers, d["mla_at"])
    c = {
        "hidden_size": d["hidden"], "num_hidden_layers": layers, "first_k_dense_replace": 1,
        "intermediate_size": d["inter"], "moe_intermediate_size": d["moe_inter"], "num_experts": d["experts"],
        "num_experts_per_token": d["top_k"], "num_shared_experts": 1,
        "moe_renormalize": True, "moe_router_activation_func": "sigmoid", "routed_scaling_factor": 2.0,
        "num_attention_heads": d["heads"], "qk_nope_head_dim": d["nope"], "qk_rope_head_dim": d["rope"],
        "v_head_dim": d["v"], "kv_lora_rank": d["kv_lora"], "q_lora_rank": None, "mla_use_nope": True,
        "rms_norm_eps": 1e-5, "vocab_size": ranks + SPECIAL_SLOTS, "tie_word_embeddings": False,
        "bos_token_id": ranks, "eos_token_id": ranks + 2,
        "linear_attn_config": {"head_dim": d["kda_dim"], "num_heads": d["kda_heads"], "short_conv_kernel_size": 4,
                               "kda_layers": kda, "full_attn_layers": mla},
    }
    if model == "kimi-linear":
        c.update({"model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"]})
        return c
    if shape != "tiny":
        raise ValueError("k3 has only the tiny shape")
    c.update({
        "model_type": "kimi_k3", "architectures": ["KimiK3ForCausalLM"],
        "num_experts": 16, "num_experts_per_token": 4, "num_shared_experts": 2, "routed_scaling_factor": 1.5,
        "n_group": 4, "topk_group": 2, "routed_expert_hidden_size": 64, "latent_moe_use_norm": True,
        "q_lora_rank": 48, "mla_use_output_gate": True, "hidden_act": "situ", "activation_situ_beta": 4.0,
        "activation_situ_linear_beta": 25.0, "attn_res_block_size": 2,
    })
    c["linear_attn_config"].update({"gate_lower_bound": -5.0, "use_full_rank_gate": True})
    return c


def quantization_config(experts_format, trunk_format):
    if experts_format == "fp8" or trunk_format == "fp8":
        return {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
    if experts_format == "mxfp4":
        return {"quant_method": "mxfp4", "modules_to_not_convert": ["self_attn", "shared_experts", "gate", "lm_head"]}
    if experts_format == "int4":
        return {"quant_method": "compressed-tensors", "format": "pack-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                    "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 32}}},
                "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                           "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"]}
    return None


def vision_config(text_hidden):
    """A tiny K3-style vision_config (vision.md §1.1): Q != D, hd % 4 == 0, a
    non-square stored position grid, and a patch embedding of 112 x 588 =
    65,856 values, just past the size the converter quantises (Q8G) — the
    rest stays F32. `_` keys are the release's own and must not reach
    vision.json."""
    return {"vt_hidden_size": 112, "vt_num_attention_heads": 2, "qkv_hidden_size": 48,
            "vt_intermediate_size": 64, "vt_num_hidden_layers": 2, "init_pos_emb_height": 3,
            "init_pos_emb_width": 5, "patch_size": 14, "text_hidden_size": text_hidden,
            "vt_rms_eps": 1.1920928955078125e-07, "_attn_implementation": "sdpa"}


# The release's preprocessor_config.json (vision.md §1.1). Not K3's 0.5s, so
# that a converter copying them can be told from one writing its defaults.
PREPROCESSOR_CONFIG = {"media_proc_cfg": {"patch_size": 14, "in_patch_limit": 65536, "patch_limit_on_one_side": 512,
                                          "image_mean": [0.48, 0.5, 0.52], "image_std": [0.25, 0.5, 0.75]}}


def vision_tensors(vc, rng):
    """The tower and projector in the release's shapes (conv kernel 4-D,
    position grid 3-D), kind "other" (bf16)."""
    D, Q, I, TH = vc["vt_hidden_size"], vc["qkv_hidden_size"], vc["vt_intermediate_size"], vc["text_hidden_size"]
    h, w = vc["init_pos_emb_height"], vc["init_pos_emb_width"]

    def mat(*shape):
        return rng.standard_normal(shape) / np.sqrt(shape[-1] if len(shape) == 2 else np.prod(shape[1:]))

    def norm(n):
        return 1.0 + 0.1 * rng.standard_normal(n)

    out = [("vision_tower.patch_embed.proj.weight", mat(D, 3, 14, 14), "other"),
           ("vision_tower.patch_embed.pos_emb.weight", 0.1 * rng.standard_normal((h, w, D)), "other")]
    for b in range(vc["vt_num_hidden_layers"]):
        p = f"vision_tower.encoder.blocks.{b}."
        out += [(p + "norm0.weight", norm(D), "other"), (p + "wqkv.weight", mat(3 * Q, D), "other"),
                (p + "wo.weight", mat(D, Q), "other"), (p + "norm1.weight", norm(D), "other"),
                (p + "mlp.fc0.weight", mat(I, D), "other"), (p + "mlp.fc1.weight", mat(D, I), "other")]
    out += [("vision_tower.encoder.final_layernorm.weight", norm(D), "other"),
            ("mm_projector.proj.0.weight", mat(4 * D, 4 * D), "other"),
            ("mm_projector.proj.2.weight", mat(TH, 4 * D), "other"),
            ("mm_projector.post_norm.weight", norm(TH), "other")]
    return out


def config_json(model, ranks, experts_format="bf16", trunk_format="bf16", shape="tiny", kda_heads=None):
    """The release's config.json: flat for Kimi-Linear, text_config nested for K3.
    kda_heads: KDA heads other than the MLA heads (as kimi-mini: 2 vs 4)."""
    text = _text_config(model, ranks, shape)
    if kda_heads:
        text["linear_attn_config"]["num_heads"] = kda_heads
    q = quantization_config(experts_format, trunk_format)
    if model == "kimi-linear":
        out = dict(text, torch_dtype="bfloat16")
    else:
        out = {"architectures": ["KimiK3ForConditionalGeneration"], "model_type": "kimi_k3",
               "text_config": text, "media_placeholder_token_id": ranks + 8, "torch_dtype": "bfloat16",
               "vision_config": vision_config(text["hidden_size"])}
    if q:
        out["quantization_config"] = q
    return out


# ---------------------------------------------------------------------------
# tokenizer files


def rank_tokens(ranks, seed=0x746F6B656E73):
    """Byte tokens, the curated merges, then word-like joins of two earlier tokens."""
    tokens = [bytes([b]) for b in range(256)]
    seen = set(tokens)
    for m in CURATED_MERGES:
        if len(tokens) == ranks:
            break
        t = m.encode()
        assert t not in seen and any(t[:k] in seen and t[k:] in seen for k in range(1, len(t)))
        tokens.append(t)
        seen.add(t)

    def lower(t, space):
        if space and t.startswith(b" "):
            t = t[1:]
        return len(t) > 0 and all(97 <= c <= 122 for c in t)

    starts = [t for t in tokens if len(t) <= 13 and lower(t, True)]
    tails = [t for t in tokens if len(t) <= 3 and lower(t, False)]
    rng = random.Random(seed)
    while len(tokens) < ranks:
        t = rng.choice(starts) + rng.choice(tails)
        if t in seen:
            continue
        tokens.append(t)
        seen.add(t)
        if len(t) <= 13:
            starts.append(t)
    return tokens


def tokenizer_files(ranks):
    """-> (tiktoken.model text, tokenizer_config.json dict)."""
    import base64
    lines = [f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(rank_tokens(ranks))]
    decoder = {}
    for i in range(SPECIAL_SLOTS):
        decoder[str(ranks + i)] = {"content": SPECIAL_NAMES[i], "lstrip": False, "normalized": False,
                                   "rstrip": False, "single_word": False, "special": True}
    cfg = {
        "added_tokens_decoder": decoder,
        "additional_special_tokens": SPECIAL_NAMES[2:],
        "bos_token": "[BOS]", "eos_token": "<|end_of_msg|>", "pad_token": None, "unk_token": None,
        "model_max_length": 1048576, "tokenizer_class": "TikTokenTokenizer",
        "auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]},
        "chat_template": ("{%- for m in messages -%}<|open|>{{ m['role'] }}<|sep|>{{ m['content'] }}<|end_of_msg|>"
                          "{%- endfor -%}{%- if add_generation_prompt -%}<|open|>assistant<|sep|>{%- endif -%}"),
    }
    return "".join(lines), cfg


# ---------------------------------------------------------------------------
# tensors


def text_tensors(cfg, rng, prefix):
    """Yields (name, float64 array, kind); kind in linear/router/embed/lm_head/expert/f32/other.
    A generator, so that a large shape never holds more than one float64 tensor."""
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    lac = cfg["linear_attn_config"]
    nh, D, K = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    C = nh * D
    mh, nope, rope, vd = cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    r, ql = cfg["kv_lora_rank"], cfg.get("q_lora_rank")
    E, inter, lat = cfg["num_experts"], cfg["moe_intermediate_size"], cfg.get("routed_expert_hidden_size")
    layers = cfg["num_hidden_layers"]
    out_gain = 1.0 / np.sqrt(layers)
    k3 = cfg.get("attn_res_block_size", 0) > 0
    out = []

    def add(name, arr, kind):
        out.append((prefix + name, np.asarray(arr, dtype=np.float64), kind))

    def lin(name, o, i, gain=1.0, kind="linear"):
        add(name, rng.standard_normal((o, i)) * gain / np.sqrt(i), kind)

    def norm(name, n):
        add(name, 1.0 + NORM_STD * rng.standard_normal(n), "other")

    def flush():
        yield from out
        out.clear()

    add("model.embed_tokens.weight", rng.standard_normal((V, H)), "embed")
    kda = set(lac["kda_layers"])
    for L in range(layers):
        yield from flush()
        p = f"model.layers.{L}."
        norm(p + "input_layernorm.weight", H)
        norm(p + "post_attention_layernorm.weight", H)
        a = p + "self_attn."
        if (L + 1) in kda:
            lin(a + "q_proj.weight", C, H)
            lin(a + "k_proj.weight", C, H)
            lin(a + "v_proj.weight", C, H)
            for conv in ("q_conv1d", "k_conv1d", "v_conv1d"):
                add(a + conv + ".weight", CONV_STD * rng.standard_normal((C, 1, K)), "other")
            lin(a + "f_a_proj.weight", D, H)
            lin(a + "f_b_proj.weight", C, D, DECAY_GAIN)
            lin(a + "b_proj.weight", nh, H)
            stored = max(nh, D) if k3 else nh
            alog = np.full((1, 1, stored, 1), A_LOG_PAD)
            alog[0, 0, :nh, 0] = A_LOG_STD * rng.standard_normal(nh)
            add(a + "A_log", alog, "f32")
            add(a + "dt_bias", DT_BIAS_MEAN + DT_BIAS_STD * rng.standard_normal(C), "f32")
            if lac.get("use_full_rank_gate"):
                lin(a + "g_proj.weight", C, H)
            else:
                lin(a + "g_a_proj.weight", D, H)
                lin(a + "g_b_proj.weight", C, D)
            norm(a + "o_norm.weight", D)
            lin(a + "o_proj.weight", H, C, out_gain)
        else:
            if ql:
                lin(a + "q_a_proj.weight", ql, H)
                norm(a + "q_a_layernorm.weight", ql)
                lin(a + "q_b_proj.weight", mh * (nope + rope), ql)
            else:
                lin(a + "q_proj.weight", mh * (nope + rope), H)
            lin(a + "kv_a_proj_with_mqa.weight", r + rope, H)
            norm(a + "kv_a_layernorm.weight", r)
            lin(a + "kv_b_proj.weight", mh * (nope + vd), r)
            if cfg.get("mla_use_output_gate"):
                lin(a + "g_proj.weight", mh * vd, H)
            lin(a + "o_proj.weight", H, mh * vd, out_gain)
        if L < cfg["first_k_dense_replace"]:
            I = cfg["intermediate_size"]
            lin(p + "mlp.gate_proj.weight", I, H)
            lin(p + "mlp.up_proj.weight", I, H)
            lin(p + "mlp.down_proj.weight", H, I, out_gain)
        else:
            m = p + "block_sparse_moe."
            lin(m + "gate.weight", E, H, ROUTER_GAIN, kind="router")
            add(m + "gate.e_score_correction_bias", CORRECTION_BIAS_STD * rng.standard_normal(E), "f32")
            Is = inter * cfg.get("num_shared_experts", 1)
            lin(m + "shared_experts.gate_proj.weight", Is, H)
            lin(m + "shared_experts.up_proj.weight", Is, H)
            lin(m + "shared_experts.down_proj.weight", H, Is, out_gain)
            if lat:
                lin(m + "routed_expert_down_proj.weight", lat, H)
                lin(m + "routed_expert_up_proj.weight", H, lat, out_gain)
                if cfg.get("latent_moe_use_norm"):
                    norm(m + "routed_expert_norm.weight", lat)
            ein = lat or H
            for e in range(E):
                x = m + f"experts.{e}."
                lin(x + "w1.weight", inter, ein, kind="expert")
                lin(x + "w3.weight", inter, ein, kind="expert")
                lin(x + "w2.weight", ein, inter, out_gain, kind="expert")
                yield from flush()
        if k3:
            for kind in ("self_attention_res", "mlp_res"):
                add(p + kind + "_norm.weight", 1.0 + NORM_STD * rng.standard_normal(H), "other")
                add(p + kind + "_proj.weight", rng.standard_normal(H) / np.sqrt(H), "other")
    if k3:
        add("model.output_attn_res_norm.weight", 1.0 + NORM_STD * rng.standard_normal(H), "other")
        add("model.output_attn_res_proj.weight", rng.standard_normal(H) / np.sqrt(H), "other")
    norm("model.norm.weight", H)
    if not cfg.get("tie_word_embeddings"):
        lin("lm_head.weight", V, H, LM_HEAD_GAIN, kind="lm_head")
    yield from flush()


def encode_tensor(name, arr, kind, experts_format, trunk_format):
    """-> list of (name, dtype, shape, bytes) physical tensors for one logical weight."""
    fmt = "bf16"
    if kind == "f32":
        fmt = "f32"
    elif kind == "expert":
        fmt = experts_format
    elif kind == "linear" and trunk_format == "fp8":
        fmt = "fp8"
    shape = list(arr.shape)
    if fmt == "f32":
        return [(name, "F32", shape, arr.astype("<f4").tobytes())]
    if fmt == "bf16":
        return [(name, "BF16", shape, st.bf16_encode(arr).astype("<u2").tobytes())]
    if fmt == "fp8":
        codes, scale_inv = st.fp8_block_quantize(arr)
        return [(name, "F8_E4M3", shape, codes.tobytes()),
                (name + "_scale_inv", "F32", list(scale_inv.shape), scale_inv.astype("<f4").tobytes())]
    if fmt == "mxfp4":
        packed, scales = st.mxfp4_quantize(arr)
        return [(name + "_packed", "U8", list(packed.shape), packed.tobytes()),
                (name + "_scale", "U8", list(scales.shape), scales.tobytes())]
    if fmt == "int4":
        packed, scale_bits, _ = st.int4_quantize(arr)
        return [(name + "_packed", "I32", list(packed.shape), packed.astype("<i4").tobytes()),
                (name + "_scale", "BF16", list(scale_bits.shape), scale_bits.astype("<u2").tobytes()),
                (name + "_shape", "I64", [2], np.array(shape, dtype="<i8").tobytes())]
    raise ValueError(f"unknown format {fmt}")


def write_checkpoint(out_dir, model="k3", seed=1, shards=3, experts_format="bf16", trunk_format="auto",
                     scales_apart=False, ranks=None, shape="tiny", kda_heads=None):
    """Write the checkpoint; return the config.json dict. Peak memory is about
    the checkpoint's size (encoded tensors are kept until the shards are split)."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {sorted(SHAPES)}, got {shape!r}")
    ranks = ranks or SHAPES[shape]["ranks"]
    if model not in ("k3", "kimi-linear"):
        raise ValueError(f"model must be k3 or kimi-linear, got {model!r}")
    if experts_format not in ("bf16", "fp8", "mxfp4", "int4"):
        raise ValueError(f"experts format must be bf16, fp8, mxfp4 or int4, got {experts_format!r}")
    if trunk_format == "auto":
        trunk_format = "fp8" if experts_format == "fp8" else "bf16"
    if trunk_format not in ("bf16", "fp8"):
        raise ValueError(f"trunk format must be auto, bf16 or fp8, got {trunk_format!r}")
    if shards < 1:
        raise ValueError("shards must be >= 1")
    os.makedirs(out_dir, exist_ok=True)
    cfg = config_json(model, ranks, experts_format, trunk_format, shape, kda_heads)
    text = cfg.get("text_config", cfg)
    rng = np.random.default_rng(seed)
    prefix = "language_model." if model == "k3" else ""

    def logical():  # in this order: the vision tower draws from rng after the text
        yield from text_tensors(text, rng, prefix)
        if model == "k3":  # outside the text prefix: the vision tower
            yield from vision_tensors(cfg["vision_config"], rng)

    main, apart = [], []
    for name, arr, kind in logical():
        parts = encode_tensor(name, arr, kind, experts_format, trunk_format)
        main.append(parts[0])
        (apart if scales_apart else main).extend(parts[1:])
    # Split in order into shards of about equal bytes; companions kept apart go last.
    total = sum(len(t[3]) for t in main)
    groups = [[] for _ in range(shards)]
    acc = 0
    for t in main:
        groups[min(shards - 1, acc * shards // max(total, 1))].append(t)
        acc += len(t[3])
    groups[-1].extend(apart)
    weight_map = {}
    total_size = 0
    for i, g in enumerate(groups):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        st.write(os.path.join(out_dir, fname), g, metadata={"format": "pt"})
        for name, _, _, data in g:
            weight_map[name] = fname
            total_size += len(data)
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total_size}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=1)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    rank_text, tok_cfg = tokenizer_files(ranks)
    with open(os.path.join(out_dir, "tiktoken.model"), "w") as f:
        f.write(rank_text)
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=1)
    if model == "k3":
        with open(os.path.join(out_dir, "preprocessor_config.json"), "w") as f:
            json.dump(PREPROCESSOR_CONFIG, f, indent=1)
    return cfg


# ---------------------------------------------------------------------------
# loading (the unquantised weights a conversion is judged against)


def load_config(ckpt_dir):
    """-> (full config.json, text config)."""
    with open(os.path.join(ckpt_dir, "config.json")) as f:
        cfg = json.load(f)
    return cfg, cfg.get("text_config", cfg)


def load_physical(ckpt_dir, mapped=False):
    """-> {name: (dtype, shape, bytes)} over every shard the index (or model.safetensors) names
    (memoryviews of the mapped shards when `mapped`, see safetensors_io.read)."""
    index = os.path.join(ckpt_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        files = sorted(set(wm.values()))
    else:
        wm, files = None, ["model.safetensors"]
    out = {}
    for fname in files:
        tensors, _ = st.read(os.path.join(ckpt_dir, fname), mapped)
        for name, t in tensors.items():
            if wm is None or wm.get(name) == fname:
                out[name] = t
    return out


def decode_float(dtype, shape, data):
    a = st.to_numpy(dtype, shape, data)
    if dtype == "BF16":
        return st.bf16_decode(a).astype(np.float64)
    if dtype in ("F32", "F16"):
        return a.astype(np.float64)
    raise ValueError(f"{dtype} is not a float dtype")


def load_weights(ckpt_dir):
    """-> {logical name: float64 array}, every format decoded (companion tensors folded in)."""
    cfg, _ = load_config(ckpt_dir)
    q = cfg.get("quantization_config") or {}
    block = tuple(q.get("weight_block_size", (128, 128)))
    phys = load_physical(ckpt_dir)
    out, used = {}, set()
    for name, (dtype, shape, data) in phys.items():
        if dtype == "F8_E4M3":
            s = phys[name + "_scale_inv"]
            out[name] = st.fp8_block_dequantize(st.to_numpy(dtype, shape, data), decode_float(*s).astype(np.float32),
                                                block).astype(np.float64)
            used |= {name, name + "_scale_inv"}
        elif name.endswith("_packed") and dtype == "I32":
            base = name[:-len("_packed")]
            sd, ss, sb = phys[base + "_scale"]
            n = int(st.to_numpy(*phys[base + "_shape"])[1]) if base + "_shape" in phys else shape[1] * 8
            scale_bits = st.bf16_encode(decode_float(sd, ss, sb))  # exact: bf16 values round-trip
            out[base] = st.int4_dequantize(st.to_numpy(dtype, shape, data), scale_bits, n).astype(np.float64)
            used |= {name, base + "_scale", base + "_shape"}
        elif name.endswith("_packed") and dtype == "U8":
            base = name[:-len("_packed")]
            sname = base + "_scale" if base + "_scale" in phys else base + "_scales"
            out[base] = st.mxfp4_dequantize(st.to_numpy(dtype, shape, data), st.to_numpy(*phys[sname])).astype(np.float64)
            used |= {name, sname}
    for name, t in phys.items():
        if name not in used:
            out[name] = decode_float(*t)
    return out


def write_expected_f32(ckpt_dir, path):
    """Every logical weight decoded by load_weights, as F32 (exact: each decoded value is an f32)."""
    weights = load_weights(ckpt_dir)
    tensors = []
    for name in sorted(weights):
        a = weights[name]
        a32 = a.astype("<f4")
        if not np.array_equal(a32.astype(np.float64), a):
            raise ValueError(f"{name}: decoded values are not all f32")
        tensors.append((name, "F32", list(a.shape), a32.tobytes()))
    st.write(path, tensors)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="waste_ref.hf_synth", description="synthetic HF checkpoint of a tiny Kimi model")
    ap.add_argument("out")
    ap.add_argument("--model", default="k3", choices=["k3", "kimi-linear"])
    ap.add_argument("--shape", default="tiny", choices=sorted(SHAPES),
                    help="mid: waste synth --preset mid's dimensions (kimi-linear only; 2.4 GB of bf16)")
    ap.add_argument("--kda-heads", type=int, help="KDA heads when they should differ from the MLA heads")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--experts-format", default="bf16", choices=["bf16", "fp8", "mxfp4", "int4"])
    ap.add_argument("--trunk-format", default="auto", choices=["auto", "bf16", "fp8"],
                    help="auto: fp8 when the experts are fp8 (as FP8 releases), else bf16")
    ap.add_argument("--scales-apart", action="store_true",
                    help="put every scale/shape companion in the last shard (weights split across shards)")
    ap.add_argument("--expected-f32", metavar="FILE",
                    help="also write every logical weight, decoded here, as one F32 safetensors file")
    args = ap.parse_args(argv)
    write_checkpoint(args.out, model=args.model, seed=args.seed, shards=args.shards,
                     experts_format=args.experts_format, trunk_format=args.trunk_format,
                     scales_apart=args.scales_apart, shape=args.shape, kda_heads=args.kda_heads)
    if args.expected_f32:
        write_expected_f32(args.out, args.expected_f32)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
