"""Writes Hugging Face-named float32 MoE checkpoints as F32 GGUFs for llama.cpp
(and the GGUF writer gguf_kimi.py shares, which also writes F16).

The names, metadata keys and layout conversions are those of llama.cpp's
converter (convert_hf_to_gguf.py, conversion/qwen.py and conversion/deepseek.py)
and loader (src/models/qwen3moe.cpp, src/models/deepseek2.cpp,
src/models/glm4-moe.cpp, src/models/openai-moe.cpp) at the release
bundled with npm node-llama-cpp 3.21.1 (tools/llama-cpp/README.md): facts read
from there, written here independently so that a test can run the same tiny
weights in llama.cpp and in the PyTorch references (qwen3_moe.py,
deepseek_v3.py).

The vocabulary is llama.cpp's "none" tokenizer with `vocab_size` dummy tokens:
the comparison feeds token ids and reads logits, so no text is involved.

GGUF layout (ggml docs/gguf.md): version 3, little-endian, alignment 32; a
tensor's dims are listed innermost first, i.e. the PyTorch shape reversed,
so a PyTorch `[out, in]` weight is written unchanged as ggml `{in, out}`.
"""
import struct
import sys

import numpy as np
import torch

_U32, _I32, _F32, _BOOL, _STRING, _ARRAY = 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16, GGML_I32 = 0, 1, 26  # (I32: for tests of a type a reader refuses)
_BYTES = {GGML_F32: 4, GGML_F16: 2, GGML_I32: 4}
_NUMPY = {GGML_F32: "<f4", GGML_F16: "<f2", GGML_I32: "<i4"}
_ALIGN = 32


class GGUFWriter:
    """Collects typed key-values and F32/F16 tensors, then writes one file.
    A tensor may be given as a function that makes it, called only while its
    bytes are written, so a large model is streamed one tensor at a time."""

    def __init__(self, arch):
        self.arch = arch
        self.kv = []  # (key, type, value)
        self.tensors = []  # (name, PyTorch-order shape, ggml type, () -> array)
        self.add("general.architecture", _STRING, arch)
        self.add("general.alignment", _U32, _ALIGN)

    def add(self, key, type_, value):
        self.kv.append((key.replace("{arch}", self.arch), type_, value))

    def u32(self, key, value):
        self.add(key, _U32, int(value))

    def f32(self, key, value):
        self.add(key, _F32, float(value))

    def flag(self, key, value):
        self.add(key, _BOOL, bool(value))

    def string(self, key, value):
        self.add(key, _STRING, value)

    def u32_array(self, key, values):
        self.add(key, _ARRAY, (_U32, [int(v) for v in values]))

    def i32_array(self, key, values):
        self.add(key, _ARRAY, (_I32, [int(v) for v in values]))

    def string_array(self, key, values):
        self.add(key, _ARRAY, (_STRING, list(values)))

    def tensor(self, name, t, ggml_type=GGML_F32):
        """t: a torch tensor or numpy array."""
        self.lazy(name, tuple(t.shape), lambda: t, ggml_type)

    def lazy(self, name, shape, make, ggml_type=GGML_F32):
        """make() -> the tensor (torch or numpy, PyTorch order, shape `shape`), called once by write()."""
        assert len(name) < 64, name  # GGUF's name limit
        assert ggml_type in _BYTES, ggml_type
        self.tensors.append((name, tuple(int(d) for d in shape), ggml_type, make))

    @staticmethod
    def _str(s):
        b = s if isinstance(s, bytes) else s.encode("utf-8")  # bytes as given (a test's invalid UTF-8)
        return struct.pack("<Q", len(b)) + b

    def write(self, path):
        assert sys.byteorder == "little"
        head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv)))
        for key, type_, value in self.kv:
            head += self._str(key) + struct.pack("<I", type_)
            if type_ == _STRING:
                head += self._str(value)
            elif type_ == _U32:
                head += struct.pack("<I", value)
            elif type_ == _F32:
                head += struct.pack("<f", value)
            elif type_ == _BOOL:
                head += struct.pack("<B", 1 if value else 0)
            elif type_ == _ARRAY:
                element, items = value
                head += struct.pack("<IQ", element, len(items))
                if element == _STRING:
                    head += b"".join(self._str(v) for v in items)
                else:
                    head += struct.pack("<%d%s" % (len(items), "I" if element == _U32 else "i"), *items)
            else:
                raise ValueError(type_)
        offset = 0
        for name, shape, ggml_type, _ in self.tensors:
            dims = list(reversed(shape))
            head += self._str(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims)
            head += struct.pack("<IQ", ggml_type, offset)
            offset += -(-_numel(shape) * _BYTES[ggml_type] // _ALIGN) * _ALIGN
        with open(path, "wb") as f:
            f.write(head)
            f.write(b"\0" * (-f.tell() % _ALIGN))
            for name, shape, ggml_type, make in self.tensors:
                t = make()
                if isinstance(t, torch.Tensor):
                    t = t.detach().to(torch.float32).numpy()
                if tuple(t.shape) != shape:
                    raise ValueError("%s: made %s, declared %s" % (name, tuple(t.shape), shape))
                f.write(np.ascontiguousarray(t, dtype=_NUMPY[ggml_type]).tobytes())
                f.write(b"\0" * (-f.tell() % _ALIGN))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class Gpt2Vocab:
    """A byte-level BPE vocabulary as GGUF keeps it (tokenizer.ggml.*, as
    convert_hf_to_gguf.py's get_vocab_base writes a Hugging Face
    tokenizer.json): tokens by id (the BPE vocab's byte-level strings, added
    tokens' raw content), llama.cpp token types (1 normal, 3 control: special
    or looking like <|...|> or <｜...｜>, 4 user-defined: the other added tokens, 5 unused:
    the padding [PADn] up to vocab_size), merges as "a b" strings."""

    def __init__(self, tokenizer_json, vocab_size, pre, chat_template=None, bos=None, eos=None):
        model = tokenizer_json["model"]
        tokens, types = ["[PAD%d]" % i for i in range(vocab_size)], [5] * vocab_size
        for text, i in model["vocab"].items():
            tokens[i], types[i] = text, 1
        for added in tokenizer_json["added_tokens"]:
            text = added["content"]
            looks_special = ((text.startswith("<|") and text.endswith("|>")) or
                             (text.startswith("<\uff5c") and text.endswith("\uff5c>")))  # DeepSeek's fullwidth bars
            tokens[added["id"]], types[added["id"]] = text, 3 if added["special"] or looks_special else 4
        self.tokens, self.types, self.pre = tokens, types, pre
        self.merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
        self.chat_template, self.bos, self.eos = chat_template, bos, eos

    def write(self, w):
        w.string("tokenizer.ggml.model", "gpt2")
        w.string("tokenizer.ggml.pre", self.pre)
        w.string_array("tokenizer.ggml.tokens", self.tokens)
        w.i32_array("tokenizer.ggml.token_type", self.types)
        w.string_array("tokenizer.ggml.merges", self.merges)
        if self.bos is not None:
            w.u32("tokenizer.ggml.bos_token_id", self.bos)
        if self.eos is not None:
            w.u32("tokenizer.ggml.eos_token_id", self.eos)
        if self.chat_template is not None:
            w.string("tokenizer.chat_template", self.chat_template)


def _common(w, cfg, n_ff, n_head=None, vocab=None):
    """The keys every llama.cpp text model reads (conversion/base.py); the
    vocabulary llama.cpp's "none" (dummy tokens) unless one is given."""
    if vocab is None:
        w.string("tokenizer.ggml.model", "none")
    else:
        vocab.write(w)
    w.u32("{arch}.vocab_size", cfg["vocab_size"])
    w.u32("{arch}.context_length", cfg.get("max_position_embeddings", 4096))
    w.u32("{arch}.embedding_length", cfg["hidden_size"])
    w.u32("{arch}.block_count", cfg["num_hidden_layers"])
    w.u32("{arch}.feed_forward_length", n_ff)
    w.u32("{arch}.attention.head_count", n_head or cfg["num_attention_heads"])
    if "rope_theta" in cfg:  # Kimi-Linear has no RoPE (its MLA is NoPE)
        w.f32("{arch}.rope.freq_base", cfg["rope_theta"])
    w.f32("{arch}.attention.layer_norm_rms_epsilon", cfg["rms_norm_eps"])


def _gqa_heads(w, cfg):
    """The grouped-query heads' keys (qwen3moe, glm4moe, gpt-oss, minimax-m2):
    key/value heads, and one head size for keys and values."""
    w.u32("{arch}.attention.head_count_kv", cfg["num_key_value_heads"])
    w.u32("{arch}.attention.key_length", cfg["head_dim"])
    w.u32("{arch}.attention.value_length", cfg["head_dim"])


def _matrices_as_f16(w):
    """Every matrix the writer takes from here on is written F16 (the input of
    llama.cpp's quantiser), vectors F32; attn_k_b / attn_v_b stay F32: this
    llama.cpp build asserts on F16 ones with an F32 KV cache
    (docs/bench-log/llama-cpp-kimi.md, "llama.cpp on the same weights"; this
    writer's families: docs/bench-log/llama-cpp-other-families.md)."""
    w.u32("general.file_type", 1)  # llama_ftype MOSTLY_F16
    plain = w.tensor

    def tensor(name, t, ggml_type=GGML_F32):
        # (gpt-oss's per-expert biases are 2-D, and ggml's add_id takes them F32 only)
        # (ssm_conv1d: llama.cpp's converter keeps it F32, and ggml's ssm_conv takes no other)
        keep_f32 = (len(t.shape) < 2 or "attn_k_b" in name or "attn_v_b" in name or name.endswith(".bias")
                    or "ssm_conv1d" in name)
        plain(name, t, ggml_type if keep_f32 else GGML_F16)
    w.tensor = tensor


def _stack_experts(sd, prefix, n_experts, proj):
    """HF keeps one matrix per expert; GGUF stacks them: [E, out, in] in PyTorch order."""
    return torch.stack([sd["%smlp.experts.%d.%s.weight" % (prefix, e, proj)] for e in range(n_experts)])


def _moe_experts(w, sd, hf, blk, n_experts):
    for proj, name in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"), ("down_proj", "ffn_down_exps")):
        w.tensor(blk + name + ".weight", _stack_experts(sd, hf, n_experts, proj))


def write_qwen3_moe(sd, cfg, path, f16=False, vocab=None):
    """Arch `qwen3moe`. llama.cpp has no dense layers in this architecture
    (decoder_sparse_step/mlp_only_layers) and always renormalises the top-k
    weights (qwen3moe.cpp passes norm_w = true; the converter writes no
    expert_weights_norm key): the first is refused here, the second is a
    documented difference (python/README.md). vocab: a Gpt2Vocab, or None
    for llama.cpp's "none" vocabulary."""
    qwen3_moe_writer(sd, cfg, f16, vocab).write(path)


def qwen3_moe_writer(sd, cfg, f16=False, vocab=None):
    """write_qwen3_moe's GGUFWriter, not yet written (a test may swap its tensors)."""
    from .qwen3_moe import is_moe_layer
    L = cfg["num_hidden_layers"]
    if not all(is_moe_layer(cfg, i) for i in range(L)):
        raise ValueError("llama.cpp's qwen3moe has no dense (mlp_only) layers")
    w = GGUFWriter("qwen3moe")
    if f16:
        _matrices_as_f16(w)
    _common(w, cfg, cfg.get("intermediate_size", cfg["moe_intermediate_size"]), vocab=vocab)
    _gqa_heads(w, cfg)
    w.u32("{arch}.expert_count", cfg["num_experts"])
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_tok"])
    w.u32("{arch}.expert_feed_forward_length", cfg["moe_intermediate_size"])
    w.tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.tensor("output_norm.weight", sd["model.norm.weight"])
    w.tensor("output.weight", sd["lm_head.weight"])
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        for src, dst in (("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                         ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                         ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
                         ("post_attention_layernorm", "ffn_norm"), ("mlp.gate", "ffn_gate_inp")):
            w.tensor(blk + dst + ".weight", sd[hf + src + ".weight"])
        _moe_experts(w, sd, hf, blk, cfg["num_experts"])
    return w


def write_deepseek_v3(sd, cfg, path, f16=False, vocab=None):
    """deepseek_v3_writer(...).write(path)."""
    deepseek_v3_writer(sd, cfg, f16, vocab).write(path)


def write_mistral4(sd, cfg, path, f16=False, vocab=None):
    """Arch `mistral4` (llama.cpp's deepseek2 subclass): deepseek_v3_writer's
    MLA with no gating key (absent: softmax), no exp_probs_b, the experts'
    gate and up stacked as one ffn_gate_up_exps (the HF-path converter's
    layout), and the query temperature's keys when the config has one."""
    from .mistral4 import reference_config, temperature
    cfg = reference_config(cfg)  # a container's rope_parameters, read as rope_theta / rope_scaling
    t = temperature(cfg)
    if t:
        cfg = dict(cfg, attn_temperature_scale=t[0], attn_temperature_length=t[1])
    deepseek_v3_writer(sd, cfg, f16, vocab, arch="mistral4").write(path)


def deepseek_v3_writer(sd, cfg, f16=False, vocab=None, arch="deepseek2"):
    """Arch `deepseek2` (llama.cpp runs V2, V3 and K2 under it), in the current
    MLA layout: kv_b_proj is split per head into attn_k_b (k_nope part,
    transposed to [H, kv_lora, nope]) and attn_v_b ([H, v, kv_lora]), which
    llama.cpp uses for absorbed attention (conversion/deepseek.py).

    f16: see _matrices_as_f16; vocab: as write_qwen3_moe's."""
    from .deepseek_v3 import is_moe_layer
    if not cfg.get("rope_interleave", True):
        # deepseek2 is a NORM (interleaved) RoPE model in llama.cpp; the converter does not permute q/k
        raise ValueError("llama.cpp's deepseek2 has no rotate_half RoPE")
    H, L = cfg["num_attention_heads"], cfg["num_hidden_layers"]
    nope, rope, vdim = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    kvr, qr = cfg["kv_lora_rank"], cfg.get("q_lora_rank")
    softmax = arch == "mistral4"  # its softmax router: no gating key, no correction bias
    w = GGUFWriter(arch)
    if f16:
        _matrices_as_f16(w)
    _common(w, cfg, cfg["intermediate_size"], vocab=vocab)
    # MLA runs in llama.cpp as MQA over the latent: one KV head of kv_lora + rope
    w.u32("{arch}.attention.head_count_kv", 1)
    w.u32("{arch}.attention.key_length", kvr + rope)
    w.u32("{arch}.attention.value_length", kvr)
    w.u32("{arch}.attention.key_length_mla", nope + rope)
    w.u32("{arch}.attention.value_length_mla", vdim)
    w.u32("{arch}.attention.kv_lora_rank", kvr)
    # the loader requires the key unless the layer count looks like V2-Lite's;
    # 0 selects its plain attn_q path, as q_lora_rank None does in HF
    w.u32("{arch}.attention.q_lora_rank", qr or 0)
    w.u32("{arch}.rope.dimension_count", rope)
    w.u32("{arch}.leading_dense_block_count", cfg["first_k_dense_replace"])
    w.u32("{arch}.expert_count", cfg["n_routed_experts"])
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_tok"])
    w.u32("{arch}.expert_shared_count", cfg["n_shared_experts"])
    w.u32("{arch}.expert_feed_forward_length", cfg["moe_intermediate_size"])
    w.f32("{arch}.expert_weights_scale", cfg["routed_scaling_factor"])
    if cfg["norm_topk_prob"]:
        w.flag("{arch}.expert_weights_norm", True)
    if not softmax:
        w.u32("{arch}.expert_gating_func", 2)  # sigmoid; absent is softmax
    if cfg.get("attn_temperature_scale"):
        w.f32("{arch}.attention.temperature_scale", cfg["attn_temperature_scale"])
        w.u32("{arch}.attention.temperature_length", cfg["attn_temperature_length"])
    if cfg.get("n_group", 1) > 1:
        w.u32("{arch}.expert_group_count", cfg["n_group"])
        w.u32("{arch}.expert_group_used_count", cfg["topk_group"])
    rs = cfg.get("rope_scaling")
    if rs:
        assert rs["type"] == "yarn"
        w.string("{arch}.rope.scaling.type", "yarn")
        w.f32("{arch}.rope.scaling.factor", rs["factor"])
        w.u32("{arch}.rope.scaling.original_context_length", rs["original_max_position_embeddings"])
        w.f32("{arch}.rope.scaling.yarn_beta_fast", rs.get("beta_fast", 32))
        w.f32("{arch}.rope.scaling.yarn_beta_slow", rs.get("beta_slow", 1))
        if rs.get("mscale_all_dim"):
            # the converter stores 0.1 * mscale_all_dim and the loader divides by 0.1 again
            w.f32("{arch}.rope.scaling.yarn_log_multiplier", 0.1 * rs["mscale_all_dim"])
    w.tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.tensor("output_norm.weight", sd["model.norm.weight"])
    w.tensor("output.weight", sd["lm_head.weight"])
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        a = hf + "self_attn."
        w.tensor(blk + "attn_norm.weight", sd[hf + "input_layernorm.weight"])
        if qr:
            w.tensor(blk + "attn_q_a.weight", sd[a + "q_a_proj.weight"])
            w.tensor(blk + "attn_q_a_norm.weight", sd[a + "q_a_layernorm.weight"])
            w.tensor(blk + "attn_q_b.weight", sd[a + "q_b_proj.weight"])
        else:
            w.tensor(blk + "attn_q.weight", sd[a + "q_proj.weight"])
        w.tensor(blk + "attn_kv_a_mqa.weight", sd[a + "kv_a_proj_with_mqa.weight"])
        w.tensor(blk + "attn_kv_a_norm.weight", sd[a + "kv_a_layernorm.weight"])
        kv_b = sd[a + "kv_b_proj.weight"].view(H, nope + vdim, kvr)
        w.tensor(blk + "attn_k_b.weight", kv_b[:, :nope, :].transpose(1, 2))  # [H, kv_lora, nope]
        w.tensor(blk + "attn_v_b.weight", kv_b[:, nope:, :])  # [H, v, kv_lora]
        w.tensor(blk + "attn_output.weight", sd[a + "o_proj.weight"])
        w.tensor(blk + "ffn_norm.weight", sd[hf + "post_attention_layernorm.weight"])
        if not is_moe_layer(cfg, i):
            for p, d in (("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"), ("down_proj", "ffn_down")):
                w.tensor(blk + d + ".weight", sd[hf + "mlp." + p + ".weight"])
            continue
        w.tensor(blk + "ffn_gate_inp.weight", sd[hf + "mlp.gate.weight"])
        if softmax:
            n_e = cfg["n_routed_experts"]
            gate_up = torch.cat([_stack_experts(sd, hf, n_e, "gate_proj"), _stack_experts(sd, hf, n_e, "up_proj")], 1)
            w.tensor(blk + "ffn_gate_up_exps.weight", gate_up)  # [E, 2I, H]: gate rows, then up rows
            w.tensor(blk + "ffn_down_exps.weight", _stack_experts(sd, hf, n_e, "down_proj"))
        else:
            w.tensor(blk + "exp_probs_b.bias", sd[hf + "mlp.gate.e_score_correction_bias"])
            _moe_experts(w, sd, hf, blk, cfg["n_routed_experts"])
        for p, d in (("gate_proj", "ffn_gate_shexp"), ("up_proj", "ffn_up_shexp"), ("down_proj", "ffn_down_shexp")):
            w.tensor(blk + d + ".weight", sd[hf + "mlp.shared_experts." + p + ".weight"])
    return w


def write_glm4_moe(sd, cfg, path, f16=False):
    """Arch `glm4moe` (src/models/glm4-moe.cpp): GQA with q/k/v biases
    (attn_{q,k,v}.bias), optional attn_{q,k}_norm, NEOX RoPE on the first
    rope.dimension_count dims of each head (ggml_rope_ext with n_rot below the
    head size passes the rest), the pre-FFN norm named post_attention_norm,
    DeepSeek's sigmoid router with exp_probs_b, shared experts, leading dense
    layers; no MTP layer written (nextn_predict_layers absent = 0)."""
    from .glm4_moe import is_moe_layer, rotary_dim
    L = cfg["num_hidden_layers"]
    w = GGUFWriter("glm4moe")
    if f16:
        _matrices_as_f16(w)
    _common(w, cfg, cfg["intermediate_size"])
    _gqa_heads(w, cfg)
    w.u32("{arch}.rope.dimension_count", rotary_dim(cfg))
    w.u32("{arch}.leading_dense_block_count", cfg["first_k_dense_replace"])
    w.u32("{arch}.expert_count", cfg["n_routed_experts"])
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_tok"])
    w.u32("{arch}.expert_shared_count", cfg["n_shared_experts"])
    w.u32("{arch}.expert_feed_forward_length", cfg["moe_intermediate_size"])
    w.f32("{arch}.expert_weights_scale", cfg["routed_scaling_factor"])
    if cfg["norm_topk_prob"]:
        w.flag("{arch}.expert_weights_norm", True)
    w.u32("{arch}.expert_gating_func", 2)  # sigmoid
    if cfg.get("n_group", 1) > 1:
        w.u32("{arch}.expert_group_count", cfg["n_group"])
        w.u32("{arch}.expert_group_used_count", cfg["topk_group"])
    w.tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.tensor("output_norm.weight", sd["model.norm.weight"])
    w.tensor("output.weight", sd["lm_head.weight"])
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        a = hf + "self_attn."
        w.tensor(blk + "attn_norm.weight", sd[hf + "input_layernorm.weight"])
        for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v")):
            w.tensor(blk + dst + ".weight", sd[a + src + ".weight"])
            if cfg.get("attention_bias", False):
                w.tensor(blk + dst + ".bias", sd[a + src + ".bias"])
        w.tensor(blk + "attn_output.weight", sd[a + "o_proj.weight"])
        if cfg.get("use_qk_norm", False):
            w.tensor(blk + "attn_q_norm.weight", sd[a + "q_norm.weight"])
            w.tensor(blk + "attn_k_norm.weight", sd[a + "k_norm.weight"])
        w.tensor(blk + "post_attention_norm.weight", sd[hf + "post_attention_layernorm.weight"])
        if not is_moe_layer(cfg, i):
            for p, d in (("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"), ("down_proj", "ffn_down")):
                w.tensor(blk + d + ".weight", sd[hf + "mlp." + p + ".weight"])
            continue
        w.tensor(blk + "ffn_gate_inp.weight", sd[hf + "mlp.gate.weight"])
        w.tensor(blk + "exp_probs_b.bias", sd[hf + "mlp.gate.e_score_correction_bias"])
        _moe_experts(w, sd, hf, blk, cfg["n_routed_experts"])
        for p, d in (("gate_proj", "ffn_gate_shexp"), ("up_proj", "ffn_up_shexp"), ("down_proj", "ffn_down_shexp")):
            w.tensor(blk + d + ".weight", sd[hf + "mlp.shared_experts." + p + ".weight"])
    w.write(path)


def write_gpt_oss(sd, cfg, path, f16=False, vocab=None):
    """gpt_oss_writer(...).write(path)."""
    gpt_oss_writer(sd, cfg, f16, vocab).write(path)


def gpt_oss_writer(sd, cfg, f16=False, vocab=None):
    """Arch `gpt-oss` (src/models/openai-moe.cpp): GQA with q/k/v/o biases,
    attn_sinks, sliding window on layers il % 2 == 0 (swa pattern 2, as HF's
    default layer_types), NEOX RoPE (YaRN keys as DeepSeek's), the router's
    bias ffn_gate_inp.bias, SWIGLU_OAI experts (alpha 1.702, limit 7 fixed in
    llama.cpp) with ffn_{gate,up,down}_exps.bias, softmax over the chosen
    logits. sd holds HF's fused expert parameters (gate_up_proj [E, H, 2I],
    gate = [..., ::2]; down_proj [E, I, H]); they are split and transposed to
    llama.cpp's per-kind stacks here."""
    L, D = cfg["num_hidden_layers"], cfg["head_dim"]
    default_types = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)]
    if cfg.get("layer_types", default_types) != default_types:
        raise ValueError("llama.cpp's gpt-oss slides on even layers only (swa pattern 2)")
    if cfg.get("swiglu_limit", 7.0) != 7.0:
        raise ValueError("llama.cpp's gpt-oss fixes swiglu_limit at 7")
    w = GGUFWriter("gpt-oss")
    if f16:
        _matrices_as_f16(w)
    _common(w, cfg, cfg["intermediate_size"], vocab=vocab)
    _gqa_heads(w, cfg)
    w.u32("{arch}.rope.dimension_count", D)
    w.u32("{arch}.attention.sliding_window", cfg["sliding_window"])
    w.u32("{arch}.expert_count", cfg["num_local_experts"])
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_tok"])
    w.u32("{arch}.expert_feed_forward_length", cfg["intermediate_size"])
    rs = cfg.get("rope_scaling")
    if rs:
        assert rs.get("rope_type", rs.get("type")) == "yarn"
        w.string("{arch}.rope.scaling.type", "yarn")
        w.f32("{arch}.rope.scaling.factor", rs["factor"])
        w.u32("{arch}.rope.scaling.original_context_length", rs["original_max_position_embeddings"])
        w.f32("{arch}.rope.scaling.yarn_beta_fast", rs.get("beta_fast", 32))
        w.f32("{arch}.rope.scaling.yarn_beta_slow", rs.get("beta_slow", 1))
    w.tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.tensor("output_norm.weight", sd["model.norm.weight"])
    w.tensor("output.weight", sd["lm_head.weight"])
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        a, x = hf + "self_attn.", hf + "mlp.experts."
        w.tensor(blk + "attn_norm.weight", sd[hf + "input_layernorm.weight"])
        w.tensor(blk + "post_attention_norm.weight", sd[hf + "post_attention_layernorm.weight"])
        for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")):
            w.tensor(blk + dst + ".weight", sd[a + src + ".weight"])
            w.tensor(blk + dst + ".bias", sd[a + src + ".bias"])
        w.tensor(blk + "attn_sinks.weight", sd[a + "sinks"])
        w.tensor(blk + "ffn_gate_inp.weight", sd[hf + "mlp.router.weight"])
        w.tensor(blk + "ffn_gate_inp.bias", sd[hf + "mlp.router.bias"])
        gu, gub = sd[x + "gate_up_proj"], sd[x + "gate_up_proj_bias"]
        w.tensor(blk + "ffn_gate_exps.weight", gu[:, :, 0::2].transpose(1, 2).contiguous())  # [E, I, H]
        w.tensor(blk + "ffn_up_exps.weight", gu[:, :, 1::2].transpose(1, 2).contiguous())
        w.tensor(blk + "ffn_down_exps.weight", sd[x + "down_proj"].transpose(1, 2).contiguous())  # [E, H, I]
        w.tensor(blk + "ffn_gate_exps.bias", gub[:, 0::2].contiguous())
        w.tensor(blk + "ffn_up_exps.bias", gub[:, 1::2].contiguous())
        w.tensor(blk + "ffn_down_exps.bias", sd[x + "down_proj_bias"])
    return w


def write_minimax_m2(sd, cfg, path, f16=False, vocab=None):
    """Arch `minimax-m2` (src/models/minimax-m2.cpp; families-2026.md §3.4):
    GQA without biases, attn_q_norm / attn_k_norm over the whole projection
    ({heads*head_dim}, {kv_heads*head_dim}), NEOX RoPE on the first
    rope.dimension_count dims, every layer MoE with the sigmoid router
    (expert_gating_func 2: without it llama.cpp's gating type stays 0 and
    build_moe_ffn aborts) and exp_probs_b; the expert width under both
    feed_forward_length (which the loader sizes the experts by) and
    expert_feed_forward_length. Experts under w1/w3/w2 (the release's) or
    gate/up/down_proj (a container's)."""
    from .minimax_m2 import expert
    L, E = cfg["num_hidden_layers"], cfg["num_local_experts"]
    w = GGUFWriter("minimax-m2")
    if f16:
        _matrices_as_f16(w)
    _common(w, cfg, cfg["intermediate_size"], vocab=vocab)
    _gqa_heads(w, cfg)
    w.u32("{arch}.rope.dimension_count", cfg["rotary_dim"])
    w.u32("{arch}.expert_count", E)
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_tok"])
    w.u32("{arch}.expert_feed_forward_length", cfg["intermediate_size"])
    w.u32("{arch}.expert_gating_func", 2)  # sigmoid
    w.tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.tensor("output_norm.weight", sd["model.norm.weight"])
    w.tensor("output.weight", sd["lm_head.weight"])
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        a, m = hf + "self_attn.", hf + "block_sparse_moe."
        w.tensor(blk + "attn_norm.weight", sd[hf + "input_layernorm.weight"])
        for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output"),
                         ("q_norm", "attn_q_norm"), ("k_norm", "attn_k_norm")):
            w.tensor(blk + dst + ".weight", sd[a + src + ".weight"])
        w.tensor(blk + "ffn_norm.weight", sd[hf + "post_attention_layernorm.weight"])
        w.tensor(blk + "ffn_gate_inp.weight", sd[m + "gate.weight"])
        w.tensor(blk + "exp_probs_b.bias", sd[m + "e_score_correction_bias"])
        stacks = [expert(sd, m + "experts.%d." % e) for e in range(E)]
        for k, name in enumerate(("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")):
            w.tensor(blk + name + ".weight", torch.stack([s[k] for s in stacks]))
    w.write(path)


def qwen35_tiled_v_heads(hk, hv):
    """llama.cpp v0.4.0's Qwen3.5 v-head order (families-2026.md §1.11): GGUF
    value head p = j * Hk + kappa holds HF value head kappa * r + j; the list
    gives, for each GGUF head, the HF head it holds."""
    r = hv // hk
    return [(p % hk) * r + p // hk for p in range(hv)]


def write_qwen35moe(sd, cfg, path, f16=False, vocab=None, tiled=True):
    """qwen35moe_writer(...).write(path)."""
    qwen35moe_writer(sd, cfg, f16, vocab, tiled).write(path)


def qwen35moe_writer(sd, cfg, f16=False, vocab=None, tiled=True):
    """Arch `qwen35moe` (src/models/qwen35moe.cpp; families-2026.md §1.10):
    the zero-centred norms stored as 1 + w (the GDN output norm plain), the
    GDN layers' value heads in the tiled order of qwen35_tiled_v_heads (rows
    of attn_qkv's v part, attn_gate, ssm_beta, ssm_alpha; ssm_a = -exp(A_log)
    and ssm_dt; the conv's v channels; ssm_out's input columns), q/k untouched;
    the IMROPE sections of mrope_section (all equal for text: plain partial
    NEOX RoPE) over rope.dimension_count dims; the shared expert's gate as
    the 1-D ffn_gate_inp_shexp. Full attention every full_attention_interval
    layers (layer_types other than that are refused here). tiled=False keeps
    HF's grouped order (what llama.cpp's qwen3next reads; a test's wrong file)."""
    from .qwen35_moe import is_full_attention, rope_settings
    L, E = cfg["num_hidden_layers"], cfg["num_experts"]
    interval = cfg.get("full_attention_interval", 4)
    if any(is_full_attention(cfg, i) != ((i + 1) % interval == 0) for i in range(L)):
        raise ValueError("write_qwen35moe: layer_types other than every full_attention_interval-th layer")
    hk, hv, d = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"], cfg["linear_key_head_dim"]
    kd = hk * d
    theta, rot = rope_settings(cfg)
    sections = list((cfg.get("rope_parameters") or {}).get("mrope_section", [rot // 2, 0, 0]))
    w = GGUFWriter("qwen35moe")
    if f16:
        _matrices_as_f16(w)
    _common(w, cfg, cfg["moe_intermediate_size"], vocab=vocab)
    _gqa_heads(w, cfg)
    w.f32("{arch}.rope.freq_base", theta)
    w.u32("{arch}.rope.dimension_count", rot)
    w.i32_array("{arch}.rope.dimension_sections", sections + [0] * (4 - len(sections)))
    w.u32("{arch}.full_attention_interval", interval)
    w.u32("{arch}.ssm.conv_kernel", cfg["linear_conv_kernel_dim"])
    w.u32("{arch}.ssm.state_size", d)
    w.u32("{arch}.ssm.group_count", hk)
    w.u32("{arch}.ssm.time_step_rank", hv)
    w.u32("{arch}.ssm.inner_size", hv * d)
    w.u32("{arch}.expert_count", E)
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_tok"])
    w.u32("{arch}.expert_feed_forward_length", cfg["moe_intermediate_size"])
    w.u32("{arch}.expert_shared_feed_forward_length", cfg["shared_expert_intermediate_size"])
    one = lambda t: t + 1.0  # a zero-centred norm as llama.cpp's converter stores it
    heads = qwen35_tiled_v_heads(hk, hv) if tiled else list(range(hv))
    rows = lambda t: torch.cat([t[h * d:(h + 1) * d] for h in heads])  # value-head blocks of d rows, tiled
    w.tensor("token_embd.weight", sd["model.embed_tokens.weight"])
    w.tensor("output_norm.weight", one(sd["model.norm.weight"]))
    w.tensor("output.weight", sd["lm_head.weight"])
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        w.tensor(blk + "attn_norm.weight", one(sd[hf + "input_layernorm.weight"]))
        w.tensor(blk + "post_attention_norm.weight", one(sd[hf + "post_attention_layernorm.weight"]))
        if is_full_attention(cfg, i):
            a = hf + "self_attn."
            for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")):
                w.tensor(blk + dst + ".weight", sd[a + src + ".weight"])
            w.tensor(blk + "attn_q_norm.weight", one(sd[a + "q_norm.weight"]))
            w.tensor(blk + "attn_k_norm.weight", one(sd[a + "k_norm.weight"]))
        else:
            a = hf + "linear_attn."
            qkv, conv = sd[a + "in_proj_qkv.weight"], sd[a + "conv1d.weight"][:, 0, :]
            w.tensor(blk + "attn_qkv.weight", torch.cat([qkv[:2 * kd], rows(qkv[2 * kd:])]))
            w.tensor(blk + "attn_gate.weight", rows(sd[a + "in_proj_z.weight"]))
            w.tensor(blk + "ssm_conv1d.weight", torch.cat([conv[:2 * kd], rows(conv[2 * kd:])]))
            w.tensor(blk + "ssm_dt.bias", sd[a + "dt_bias"][heads])
            w.tensor(blk + "ssm_a", -torch.exp(sd[a + "A_log"][heads]))
            w.tensor(blk + "ssm_beta.weight", sd[a + "in_proj_b.weight"][heads])
            w.tensor(blk + "ssm_alpha.weight", sd[a + "in_proj_a.weight"][heads])
            w.tensor(blk + "ssm_norm.weight", sd[a + "norm.weight"])
            out = sd[a + "out_proj.weight"]
            w.tensor(blk + "ssm_out.weight", torch.cat([out[:, h * d:(h + 1) * d] for h in heads], 1))
        m = hf + "mlp."
        w.tensor(blk + "ffn_gate_inp.weight", sd[m + "gate.weight"])
        _moe_experts(w, sd, hf, blk, E)
        w.tensor(blk + "ffn_gate_inp_shexp.weight", sd[m + "shared_expert_gate.weight"].reshape(-1))
        for proj, name in (("gate_proj", "ffn_gate_shexp"), ("up_proj", "ffn_up_shexp"), ("down_proj", "ffn_down_shexp")):
            w.tensor(blk + name + ".weight", sd[m + "shared_expert." + proj + ".weight"])
    return w


# model_type -> the writer of that family's GGUF
WRITERS = {"deepseek_v3": write_deepseek_v3, "kimi_k2": write_deepseek_v3, "qwen3_moe": write_qwen3_moe,
           "glm4_moe": write_glm4_moe, "gpt_oss": write_gpt_oss, "minimax_m2": write_minimax_m2,
           "mistral4": write_mistral4, "qwen3_5_moe_text": write_qwen35moe, "qwen3_5_moe": write_qwen35moe}


def main(argv=None):
    """python -m waste_ref.gguf_moe CONTAINER OUT.gguf [--f16]: the model a
    WASTE container holds (its trunk and dequantised VQ experts) as a GGUF
    for llama.cpp: the same weights for both engines (scripts/compare-llama.sh
    --family deepseek|qwen3|glm|gpt-oss|minimax|mistral4|qwen35)."""
    import argparse
    from .hf_families import ContainerWeights
    from .container import Container
    ap = argparse.ArgumentParser(prog="waste_ref.gguf_moe", description=main.__doc__.split("\n")[0])
    ap.add_argument("container")
    ap.add_argument("out")
    ap.add_argument("--f16", action="store_true")
    args = ap.parse_args(argv)
    c = Container(args.container)
    if c.config.get("model_type") not in WRITERS:
        raise SystemExit("containers of %s are written here, not %r" % (sorted(WRITERS), c.config.get("model_type")))
    # decoded as the writer asks (an F16 GGUF of a mid container peaks near its F32 experts, ~5 GB)
    WRITERS[c.config["model_type"]](ContainerWeights(c, torch.float32), c.config, args.out, f16=args.f16)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
