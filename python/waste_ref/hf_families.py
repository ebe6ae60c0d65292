"""Hugging Face checkpoints of the other families (issue 16): DeepSeek-V3 /
Kimi K2, Qwen3-MoE, GLM-4.5 (glm4_moe) and gpt-oss (its experts MXFP4
blocks/scales, fused and gate/up interleaved, as the release), written from their references' seeded weights, and the
same weights read back from a container.

write_checkpoint(out_dir, family, cfg, seed, fmt) writes config.json (and
generation_config.json, the special ids in the release's shapes: special_ids) and
safetensors shards under the published names (per-expert keys), every linear
weight in bf16 or DeepSeek's FP8 e4m3 with 128x128 block scales (the
embedding, norms, router and LM head stay bf16 / f32, as in the releases).
With mtp_layers, DeepSeek's multi-token-prediction layers are written after
the last layer, as V3's model.layers.61.*, for the converter to skip.

container_state_dict(container) gives the weights the engine actually runs:
the container's trunk tensors (dequantised) under their names and each
routed expert's dequantised VQ matrices under the checkpoint's expert names,
in float64 for the reference forward passes.
"""
import json
import os
import re
from collections.abc import Mapping

import numpy as np
import torch

from . import deepseek_v3, glm4_moe, gpt_oss, hf_synth, minimax_m2, mistral4, qwen3_moe, qwen35_moe
from . import safetensors_io as st
from .container import Container

FAMILIES = {
    # model_type -> (architecture, reference module)
    "deepseek_v3": ("DeepseekV3ForCausalLM", deepseek_v3),
    "kimi_k2": ("DeepseekV3ForCausalLM", deepseek_v3),
    "qwen3_moe": ("Qwen3MoeForCausalLM", qwen3_moe),
    "glm4_moe": ("Glm4MoeForCausalLM", glm4_moe),
    "gpt_oss": ("GptOssForCausalLM", gpt_oss),
    "minimax_m2": ("MiniMaxM2ForCausalLM", minimax_m2),
    "mistral4": ("Mistral3ForConditionalGeneration", mistral4),
    "qwen3_5_moe": ("Qwen3_5MoeForConditionalGeneration", qwen35_moe),
    "qwen3_next": ("Qwen3NextForCausalLM", qwen35_moe),
}


def _kind(name):
    """How a release stores the tensor: 'f32' (the correction bias), 'linear'
    (FP8 in an FP8 release) or 'other' (bf16 always)."""
    if name.endswith("e_score_correction_bias"):
        return "f32"
    if name.endswith("_proj.weight") or name.endswith("_proj_with_mqa.weight"):
        return "expert" if ".experts." in name else "linear"
    if ".experts." in name and re.search(r"\.w[123]\.weight$", name):  # MiniMax-M2's (Mixtral's) expert names
        return "expert"
    return "other"


def special_ids(family, vocab):
    """-> (config.json's special-id keys, generation_config.json) in the shapes
    the family's release writes them (issue 37), the ids placed at the top of
    the tiny vocabulary (each comment names the release's own ids):
    - GLM-4.5 / -Air: eos a list of three in both files ([151329 <|endoftext|>,
      151336 <|user|>, 151338 <|observation|>]), pad the first, no bos.
    - Qwen3-30B-A3B: config bos 151643 <|endoftext|>, eos 151645 <|im_end|>;
      generation_config eos [151645, 151643], pad 151643, sampling defaults.
    - gpt-oss-20b: config eos 200002 <|return|>, pad 199999 <|endoftext|>;
      generation_config bos 199998, eos [200002, 199999, 200012 <|call|>].
    - Kimi K2: config bos 163584, eos 163585, pad 163839; generation_config
      eos 163586 <|im_end|>.
    - DeepSeek-V3: bos 0, eos 1 in both, with V3's sampling defaults.
    The engine stops at every eos id of both files (their union, the
    config's first)."""
    top = vocab - 1
    if family == "glm4_moe":
        eos = [top - 9, top - 2, top]
        return ({"eos_token_id": eos, "pad_token_id": eos[0]},
                {"_from_model_config": True, "eos_token_id": eos, "pad_token_id": eos[0]})
    if family in ("qwen3_moe", "qwen3_5_moe", "qwen3_next"):  # (Qwen3.5's in Qwen3's shape: its own ids not in the spec)
        endoftext, im_end = top - 2, top
        return ({"bos_token_id": endoftext, "eos_token_id": im_end},
                {"bos_token_id": endoftext, "do_sample": True, "eos_token_id": [im_end, endoftext],
                 "pad_token_id": endoftext, "temperature": 0.6, "top_k": 20, "top_p": 0.95})
    if family == "gpt_oss":
        start, endoftext, ret, call = top - 6, top - 5, top - 4, top - 2
        return ({"eos_token_id": ret, "pad_token_id": endoftext},
                {"bos_token_id": start, "do_sample": True, "eos_token_id": [ret, endoftext, call],
                 "pad_token_id": endoftext})
    if family == "minimax_m2":
        # MiniMax-M2: config bos 200034, eos 200020 (families-2026.md §3.2);
        # generation_config repeats them with the model card's sampling
        # defaults (temperature 1.0, top_p 0.95, top_k 40) (verify)
        bos, eos = top - 4, top - 1
        return ({"bos_token_id": bos, "eos_token_id": eos},
                {"bos_token_id": bos, "do_sample": True, "eos_token_id": eos, "temperature": 1.0, "top_p": 0.95,
                 "top_k": 40})
    if family == "mistral4":
        # Mistral Small 4: bos 1, eos 2, pad 11 (families-2026.md §6.2)
        return ({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 11},
                {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 11})
    if family == "kimi_k2":
        return ({"bos_token_id": top - 4, "eos_token_id": top - 3, "pad_token_id": top}, {"eos_token_id": top - 2})
    return ({"bos_token_id": 0, "eos_token_id": 1},
            {"_from_model_config": True, "bos_token_id": 0, "eos_token_id": 1, "do_sample": True, "temperature": 0.6,
             "top_p": 0.95})


def eos_ids(family, vocab):
    """What the engine stops at: config.json's eos ids, then generation_config.json's new ones."""
    ids = []
    for part in special_ids(family, vocab):
        value = part.get("eos_token_id")
        for i in value if isinstance(value, list) else [] if value is None else [value]:
            if i not in ids:
                ids.append(i)
    return ids


def config_json(family, cfg, fmt="bf16", mtp_layers=0):
    arch, _ = FAMILIES[family]
    ids, _ = special_ids(family, cfg["vocab_size"])
    if family == "qwen3_moe":  # the keys Qwen3-30B-A3B's config.json carries besides the reference's
        if mtp_layers:
            raise ValueError("qwen3_moe has no multi-token-prediction layers")
        c = dict(cfg, model_type=family, architectures=[arch], tie_word_embeddings=False, attention_bias=False,
                 attention_dropout=0.0, hidden_act="silu", use_sliding_window=False, sliding_window=None,
                 rope_scaling=None, output_router_logits=False, router_aux_loss_coef=0.001)
    elif family == "gpt_oss":  # the keys gpt-oss-20b's config.json carries besides the reference's
        if mtp_layers or fmt != "bf16":
            raise ValueError("gpt_oss: MXFP4 experts and bf16 trunk only, no MTP layers")
        c = dict(cfg, model_type=family, architectures=[arch], tie_word_embeddings=False, hidden_act="silu",
                 experts_per_token=cfg["num_experts_per_tok"], initial_context_length=4096, attention_dropout=0.0,
                 router_aux_loss_coef=0.9, output_router_logits=False, use_cache=True,
                 quantization_config={"quant_method": "mxfp4", "modules_to_not_convert": [
                     "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}, **ids)
        return c
    elif family == "minimax_m2":  # the keys MiniMax-M2's config.json carries besides the reference's
        if mtp_layers:
            raise ValueError("minimax_m2: its MTP modules are not written")
        c = dict(cfg, model_type=family, architectures=[arch], tie_word_embeddings=False, hidden_act="silu",
                 attention_dropout=0.0, router_jitter_noise=0.0, output_router_logits=False, rope_scaling=None)
    elif family == "mistral4":  # Mistral3ForConditionalGeneration: the text model's config nested
        if mtp_layers or fmt != "bf16":
            raise ValueError("mistral4: bf16, no MTP layers")
        return {"architectures": [arch], "model_type": "mistral3", "image_token_index": 10,
                "text_config": dict(mistral4.release_config(cfg), **ids),
                "vision_config": {"model_type": "pixtral", "hidden_size": 8, "patch_size": 2}}
    elif family == "qwen3_5_moe":  # Qwen3_5MoeForConditionalGeneration: the text model's config nested
        if mtp_layers or fmt != "bf16":
            raise ValueError("qwen3_5_moe: bf16; its MTP block is always written (and skipped)")
        return qwen35_moe.release_config(cfg, ids)
    elif family == "qwen3_next":  # flat, its projections grouped per key head
        if mtp_layers or fmt != "bf16":
            raise ValueError("qwen3_next: bf16; its MTP block is always written (and skipped)")
        return qwen35_moe.next_config(cfg, ids)
    elif family == "glm4_moe":  # the keys GLM-4.5-Air's config.json carries besides the reference's
        c = dict(cfg, model_type=family, architectures=[arch], tie_word_embeddings=False, attention_dropout=0.0,
                 hidden_act="silu", rope_scaling=None, num_nextn_predict_layers=mtp_layers)
    else:
        c = dict(cfg, model_type=family, architectures=[arch], scoring_func="sigmoid", topk_method="noaux_tc",
                 tie_word_embeddings=False, num_nextn_predict_layers=mtp_layers)
    c.update(ids)
    if fmt == "fp8":
        c["quantization_config"] = hf_synth.quantization_config("fp8", "fp8")
    return c


def mtp_tensors(cfg, seed):
    """V3's MTP layer names (model.layers.L.* with L = num_hidden_layers): an
    embedding/head projection and a decoder layer's norms; values unused."""
    g = torch.Generator().manual_seed(seed)
    H, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    p = "model.layers.%d." % L
    return {p + "enorm.weight": torch.ones(H), p + "hnorm.weight": torch.ones(H),
            p + "eh_proj.weight": torch.randn(H, 2 * H, generator=g) / np.sqrt(2 * H),
            p + "shared_head.norm.weight": torch.ones(H), p + "input_layernorm.weight": torch.ones(H)}


def write_checkpoint(out_dir, family, cfg, seed=1, fmt="bf16", mtp_layers=0, shards=2, tweak=None):
    """Writes the checkpoint; returns (config.json dict, the float32 state dict
    before encoding). tweak(sd, cfg), if given, edits the weights first (a
    test's awkward case); for gpt_oss it edits the release's tensors (MXFP4
    blocks and scales included) and the returned sd is decoded from them."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {family!r}")
    if fmt not in ("bf16", "fp8"):
        raise ValueError(f"fmt must be bf16 or fp8, got {fmt!r}")
    _, ref = FAMILIES[family]
    os.makedirs(out_dir, exist_ok=True)
    parts = []
    if family == "gpt_oss":
        # tweak edits the release's tensors (blocks / scales included); sd follows them
        config_json(family, cfg, fmt, mtp_layers)  # refuses what gpt_oss has not
        _, files = gpt_oss.random_checkpoint_files(cfg, seed)
        if tweak:
            tweak(files, cfg)
        for name, t in files.items():
            if t.dtype == torch.uint8:
                parts.append((name, "U8", list(t.shape), t.numpy().tobytes()))
            else:
                parts.extend(hf_synth.encode_tensor(name, t.numpy().astype(np.float32), "other", fmt, fmt))
        sd = gpt_oss.state_dict_from_files(files)
        extra = {}
    elif family == "qwen3_5_moe":
        config_json(family, cfg, fmt, mtp_layers)  # refuses what qwen3_5_moe has not
        sd = ref.random_checkpoint(cfg, seed)
        if tweak:
            tweak(sd, cfg)
        for name, t in qwen35_moe.release_tensors(sd, cfg, seed, stacked=cfg.get("_stacked", True)).items():
            parts.extend(hf_synth.encode_tensor(name, t.numpy().astype(np.float32), "other", fmt, fmt))
    elif family == "qwen3_next":
        config_json(family, cfg, fmt, mtp_layers)
        sd = ref.random_checkpoint(cfg, seed)
        if tweak:
            tweak(sd, cfg)
        for name, t in qwen35_moe.next_tensors(sd, cfg, seed).items():
            parts.extend(hf_synth.encode_tensor(name, t.numpy().astype(np.float32), "other", fmt, fmt))
    elif family == "mistral4":
        cfg = mistral4.reference_config(cfg)  # a container's rope_parameters (--config-from)
        config_json(family, cfg, fmt, mtp_layers)  # refuses what mistral4 has not
        sd = ref.random_checkpoint(cfg, seed)
        if tweak:
            tweak(sd, cfg)
        for name, t in mistral4.release_tensors(sd, cfg, seed).items():
            parts.extend(hf_synth.encode_tensor(name, t.numpy().astype(np.float32), "other", fmt, fmt))
    else:
        sd = ref.random_checkpoint(cfg, seed)
        if tweak:
            tweak(sd, cfg)
        extra = mtp_tensors(cfg, seed + 1) if mtp_layers else {}
        for name, t in list(sd.items()) + list(extra.items()):
            parts.extend(hf_synth.encode_tensor(name, t.numpy().astype(np.float32), _kind(name), fmt, fmt))
    total = sum(len(p[3]) for p in parts)
    groups, acc = [[] for _ in range(shards)], 0
    for p in parts:
        groups[min(shards - 1, acc * shards // max(total, 1))].append(p)
        acc += len(p[3])
    weight_map = {}
    for i, g in enumerate(groups):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        st.write(os.path.join(out_dir, fname), g, metadata={"format": "pt"})
        weight_map.update({name: fname for name, _, _, _ in g})
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=1)
    full = config_json(family, cfg, fmt, mtp_layers)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(full, f, indent=1)
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(dict(special_ids(family, cfg["vocab_size"])[1], transformers_version="4.57.1"), f, indent=1)
    return full, sd


class ContainerWeights(Mapping):
    """The container's weights under the checkpoint's names (see the module
    doc), each decoded when it is looked up and not kept: a mid-sized
    container goes out as a GGUF (gguf_moe's main) in a few GB, where holding
    every expert would take several times the model."""

    _EXPERT = re.compile(r"model\.layers\.(\d+)\.(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(gate|up|down)_proj\.weight$")
    _FUSED = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(gate_up_proj|down_proj)$")

    def __init__(self, container, dtype=torch.float64):
        self.c = container if isinstance(container, Container) else Container(container)
        self.dtype = dtype
        cfg = self.c.config
        self.experts = int(cfg.get("num_experts", cfg.get("n_routed_experts", cfg.get("num_local_experts", 0))) or 0)
        self.fused = cfg.get("model_type") == "gpt_oss"
        block = "block_sparse_moe" if cfg.get("model_type") == "minimax_m2" else "mlp"
        names = list(self.c.tensors)
        for layer in sorted(self.c.layers):
            p = "model.layers.%d.%s.experts." % (layer, block)
            if self.fused:
                names += [p + "gate_up_proj", p + "down_proj"]
            else:
                names += [p + "%d.%s_proj.weight" % (e, k) for e in range(self.experts) for k in ("gate", "up", "down")]
        self._names = names

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def _matrix(self, m):
        return torch.from_numpy(np.asarray(m)).to(self.dtype)

    def __getitem__(self, key):
        if key in self.c.tensors:
            return self._matrix(self.c.tensors[key])
        m = self._EXPERT.match(key)
        if m and not self.fused and int(m.group(1)) in self.c.layers:
            return self._matrix(self.c._read_expert(int(m.group(1)), int(m.group(2)))[("gate", "up", "down").index(m.group(3))])
        m = self._FUSED.match(key)
        if m and self.fused and int(m.group(1)) in self.c.layers:
            layer = int(m.group(1))
            # HF's fused parameters: gate_up_proj [E, H, 2I] (gate = [..., ::2], up = [..., 1::2]), down_proj [E, I, H]
            if m.group(2) == "down_proj":
                return torch.stack([self._matrix(self.c._read_expert(layer, e)[2]).T for e in range(self.experts)])
            parts = [self.c._read_expert(layer, e) for e in range(self.experts)]
            gate = torch.stack([self._matrix(g) for g, _, _ in parts])
            up = torch.stack([self._matrix(u) for _, u, _ in parts])
            gu = torch.empty(self.experts, gate.shape[2], 2 * gate.shape[1], dtype=self.dtype)
            gu[:, :, 0::2], gu[:, :, 1::2] = gate.transpose(1, 2), up.transpose(1, 2)
            return gu
        raise KeyError(key)


def container_state_dict(container, dtype=torch.float64):
    """The container's weights under the checkpoint's names (see the module doc), all decoded."""
    return dict(ContainerWeights(container, dtype).items())


def main(argv=None):
    """python -m waste_ref.hf_families OUT_DIR --family F --config-from CONTAINER --gguf OUT.gguf [--f16]:
    a seeded checkpoint of family F at a container's shape (its config's keys),
    and the same unquantised weights (bf16 as the checkpoint stores them) as a
    GGUF for llama.cpp: the source both engines quantise for themselves
    (scripts/compare-llama.sh --family deepseek|qwen3|glm|gpt-oss|minimax|mistral4|qwen35)."""
    import argparse
    from . import gguf_moe
    ap = argparse.ArgumentParser(prog="waste_ref.hf_families", description=main.__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--family", required=True, choices=sorted(FAMILIES) + ["qwen3_5_moe_text"])
    ap.add_argument("--config-from", required=True, help="a container whose manifest gives the shape")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--f16", action="store_true")
    args = ap.parse_args(argv)
    with open(os.path.join(args.config_from, "manifest.json")) as f:
        cfg = json.load(f)["config"]
    if cfg.get("model_type") != args.family:
        raise SystemExit("%s holds %r, not %r" % (args.config_from, cfg.get("model_type"), args.family))
    family = "qwen3_5_moe" if args.family == "qwen3_5_moe_text" else args.family  # (a text config's model_type)
    _, sd = write_checkpoint(args.out, family, cfg, seed=args.seed, shards=4)
    # What the checkpoint stores: bf16 (round to nearest even) but the f32 correction bias;
    # MXFP4 experts decode to values bf16 holds exactly.
    for name, t in sd.items():
        if _kind(name) != "f32":
            sd[name] = t.to(torch.bfloat16).to(torch.float32)
    gguf_moe.WRITERS[args.family](sd, cfg, args.gguf, f16=args.f16)
    print(args.gguf)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
