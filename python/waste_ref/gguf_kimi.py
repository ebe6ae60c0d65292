"""Writes a Hugging Face Kimi-Linear checkpoint directory as a `kimi-linear` GGUF (F32 or F16).

The same weights `waste convert` reads, for llama.cpp: scripts/compare-llama.sh
quantises the F16 file with llama.cpp's own quantiser, and
python/tests/test_kimi_linear_llamacpp.py checks the F32 file's logits against
the PyTorch reference. Names, metadata keys and layout changes are those of
llama.cpp's converter (conversion/kimi_linear.py, conversion/base.py) and
loader (src/models/kimi-linear.cpp) at the release bundled with npm
node-llama-cpp 3.21.1: facts read there, written here independently.

    PYTHONPATH=python python3 -m waste_ref.gguf_kimi CKPT_DIR OUT.gguf [--f16]

Layout changes from the checkpoint:
- conv1d [C, 1, K] -> numpy (1, C, 1, K), i.e. ggml {K, 1, C, 1};
- A_log -> ssm_a = -exp(A_log) (the graph multiplies by it directly);
- dt_bias -> ssm_dt.bias; kv_b_proj split per head into attn_k_b
  ([H, kv_lora, nope], transposed) and attn_v_b ([H, v, kv_lora]);
- the experts of a layer stacked into one [E, out, in] tensor per projection.

Head counts: llama.cpp's kimi-linear has one `head_count` for the KDA and the
MLA layers (d_inner = n_head * kda.head_dim). When they differ (kimi-mini: 2
KDA heads, 4 MLA heads) the layers with fewer heads get zero heads: a KDA head
with zero q/k/v projections has a zero state and a zero output; an MLA head
with zero q and v rows attends uniformly to zero values. Its o_proj columns
are zero too, so the padded model computes the same function.

F16 files keep in F32 what llama.cpp's converter keeps there: 1-D tensors,
norms, the router, the KDA convolutions, and tensors not named `.weight`;
and the MLA attn_k_b/attn_v_b (see below in write_kimi_linear).
The vocabulary is llama.cpp's "none" tokenizer: callers pass token ids.
"""
import argparse
import sys

import numpy as np

from . import hf_synth
from .gguf_moe import GGML_F16, GGML_F32, GGUFWriter, _common


class _Checkpoint:
    """Tensors of a checkpoint directory by name, decoded one at a time from mapped shards."""

    def __init__(self, ckpt_dir):
        full, self.cfg = hf_synth.load_config(ckpt_dir)
        if (full.get("quantization_config") or {}).get("quant_method"):
            raise ValueError("quantised checkpoints are not supported here (bf16/f32 only)")
        self.phys = hf_synth.load_physical(ckpt_dir, mapped=True)

    def shape(self, name):
        return tuple(self.phys[name][1])

    def get(self, name):
        return hf_synth.decode_float(*self.phys[name]).astype(np.float32)


def _pad_rows(a, rows):
    """a [r, ...] -> [rows, ...] with zero rows appended."""
    if a.shape[0] == rows:
        return a
    out = np.zeros((rows,) + a.shape[1:], dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


def _pad_cols(a, cols):
    return _pad_rows(a.T, cols).T


def _config_checks(cfg):
    lac = cfg["linear_attn_config"]
    if cfg.get("q_lora_rank"):
        raise ValueError("Kimi-Linear's MLA has no q-LoRA (q_lora_rank must be null)")
    if cfg.get("mla_use_nope") is False:
        raise ValueError("llama.cpp's kimi-linear MLA is NoPE only")
    if not cfg.get("moe_renormalize", True):
        raise ValueError("llama.cpp's kimi-linear always renormalises the top-k weights")
    if str(cfg.get("moe_router_activation_func", "sigmoid")).lower() != "sigmoid":
        raise ValueError("only the sigmoid router")
    if cfg.get("tie_word_embeddings"):
        raise ValueError("tied embeddings: llama.cpp's kimi-linear requires output.weight")
    if lac.get("use_full_rank_gate") or lac.get("gate_lower_bound") is not None:
        raise ValueError("K3's KDA gates are not Kimi-Linear")
    n_mla = set(lac["full_attn_layers"])
    n_kda = set(lac["kda_layers"])
    L = cfg["num_hidden_layers"]
    if n_mla | n_kda != set(range(1, L + 1)) or n_mla & n_kda:
        raise ValueError("kda_layers and full_attn_layers must split layers 1..%d" % L)


def write_kimi_linear(ckpt_dir, path, f16=False):
    """Write CKPT_DIR's Kimi-Linear checkpoint to PATH; returns the number of tensors."""
    ck = _Checkpoint(ckpt_dir)
    cfg = ck.cfg
    _config_checks(cfg)
    lac = cfg["linear_attn_config"]
    L, E = cfg["num_hidden_layers"], cfg["num_experts"]
    kda_heads, D, K = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    mla_heads = cfg["num_attention_heads"]
    nope, rope, vdim, kvr = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"], cfg["kv_lora_rank"]
    n_head = max(kda_heads, mla_heads)  # see the module docstring
    C = n_head * D
    mla_layers = set(lac["full_attn_layers"])  # 1-based
    dense = cfg.get("first_k_dense_replace", 0)
    mat = GGML_F16 if f16 else GGML_F32

    w = GGUFWriter("kimi-linear")
    w.u32("general.file_type", 1 if f16 else 0)  # llama_ftype: ALL_F32 / MOSTLY_F16
    # context_length is required by the loader; Kimi-Linear configs carry
    # model_max_length in the tokenizer config only
    _common(w, dict(cfg, max_position_embeddings=cfg.get("max_position_embeddings", 1048576)),
            cfg["intermediate_size"], n_head)
    # MLA runs as MQA over the latent (one KV head); 0 KV heads marks a recurrent (KDA) layer
    w.u32_array("{arch}.attention.head_count_kv", [1 if (i + 1) in mla_layers else 0 for i in range(L)])
    w.u32("{arch}.attention.key_length", kvr + rope)
    w.u32("{arch}.attention.value_length", kvr)
    w.u32("{arch}.attention.key_length_mla", nope + rope)
    w.u32("{arch}.attention.value_length_mla", vdim)
    w.u32("{arch}.attention.kv_lora_rank", kvr)
    w.u32("{arch}.rope.dimension_count", rope)
    w.u32("{arch}.ssm.conv_kernel", K)
    w.u32("{arch}.kda.head_dim", D)
    w.u32("{arch}.expert_count", E)
    w.u32("{arch}.expert_used_count", cfg["num_experts_per_token"])
    w.u32("{arch}.expert_shared_count", cfg["num_shared_experts"])
    w.u32("{arch}.expert_feed_forward_length", cfg["moe_intermediate_size"])
    w.u32("{arch}.leading_dense_block_count", dense)
    w.f32("{arch}.expert_weights_scale", cfg.get("routed_scaling_factor", 1.0))
    w.u32("{arch}.expert_gating_func", 2)  # sigmoid

    def f32(dst, src, shape=None, fn=None):
        w.lazy(dst, shape or ck.shape(src), (lambda: fn(ck.get(src))) if fn else (lambda: ck.get(src)), GGML_F32)

    def m(dst, src, shape=None, fn=None):
        w.lazy(dst, shape or ck.shape(src), (lambda: fn(ck.get(src))) if fn else (lambda: ck.get(src)), mat)

    def ssm_a(a_log):  # padded heads: any finite decay (their state stays zero)
        out = np.full(n_head, -1.0, dtype=np.float32)
        out[:kda_heads] = -np.exp(a_log.reshape(-1)[:kda_heads])
        return out.reshape(1, 1, n_head, 1)

    H = cfg["hidden_size"]
    m("token_embd.weight", "model.embed_tokens.weight")
    f32("output_norm.weight", "model.norm.weight")
    m("output.weight", "lm_head.weight")
    for i in range(L):
        hf, blk = "model.layers.%d." % i, "blk.%d." % i
        a = hf + "self_attn."
        f32(blk + "attn_norm.weight", hf + "input_layernorm.weight")
        f32(blk + "ffn_norm.weight", hf + "post_attention_layernorm.weight")
        if (i + 1) not in mla_layers:  # KDA, padded to n_head heads
            for p, d in (("q", "q"), ("k", "k"), ("v", "v")):
                m(blk + "attn_%s.weight" % d, a + p + "_proj.weight", (C, H), lambda x: _pad_rows(x, C))
                f32(blk + "ssm_conv1d_%s.weight" % d, a + p + "_conv1d.weight", (1, C, 1, K),
                    lambda x: _pad_rows(x.reshape(-1, K), C).reshape(1, C, 1, K))
            m(blk + "ssm_f_a.weight", a + "f_a_proj.weight")
            m(blk + "ssm_f_b.weight", a + "f_b_proj.weight", (C, D), lambda x: _pad_rows(x, C))
            m(blk + "ssm_beta.weight", a + "b_proj.weight", (n_head, H), lambda x: _pad_rows(x, n_head))
            f32(blk + "ssm_a", a + "A_log", (1, 1, n_head, 1), ssm_a)
            f32(blk + "ssm_dt.bias", a + "dt_bias", (C,), lambda x: _pad_rows(x.reshape(-1), C))
            m(blk + "ssm_g_a.weight", a + "g_a_proj.weight")
            m(blk + "ssm_g_b.weight", a + "g_b_proj.weight", (C, D), lambda x: _pad_rows(x, C))
            f32(blk + "ssm_norm.weight", a + "o_norm.weight")
            m(blk + "attn_output.weight", a + "o_proj.weight", (H, C), lambda x: _pad_cols(x, C))
        else:  # MLA, padded to n_head heads
            def heads(x, per):  # [mla_heads * per, ...] -> [n_head * per, ...]
                return _pad_rows(x.reshape(mla_heads, per, -1), n_head).reshape(n_head * per, -1)

            def kv_b(x):
                return heads(x, nope + vdim).reshape(n_head, nope + vdim, kvr)

            m(blk + "attn_q.weight", a + "q_proj.weight", (n_head * (nope + rope), H), lambda x: heads(x, nope + rope))
            m(blk + "attn_kv_a_mqa.weight", a + "kv_a_proj_with_mqa.weight")
            f32(blk + "attn_kv_a_norm.weight", a + "kv_a_layernorm.weight")
            # F32 even in F16 files: this build's CPU backend has no kernel for
            # the absorbed-MLA products with F16 k_b/v_b and an F32 KV cache
            # (GGML_ASSERT(*cur_backend_id != -1) in ggml-backend.cpp); the
            # quantiser still picks its own type for them
            f32(blk + "attn_k_b.weight", a + "kv_b_proj.weight", (n_head, kvr, nope),
                lambda x: kv_b(x)[:, :nope, :].transpose(0, 2, 1))
            f32(blk + "attn_v_b.weight", a + "kv_b_proj.weight", (n_head, vdim, kvr), lambda x: kv_b(x)[:, nope:, :])
            m(blk + "attn_output.weight", a + "o_proj.weight", (H, n_head * vdim),
              lambda x: heads(x.T, vdim).T)
        if i < dense:
            for p, d in (("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"), ("down_proj", "ffn_down")):
                m(blk + d + ".weight", hf + "mlp." + p + ".weight")
            continue
        moe = hf + "block_sparse_moe."
        f32(blk + "ffn_gate_inp.weight", moe + "gate.weight")
        f32(blk + "exp_probs_b.bias", moe + "gate.e_score_correction_bias")
        for wid, d in (("w1", "ffn_gate_exps"), ("w3", "ffn_up_exps"), ("w2", "ffn_down_exps")):
            names = [moe + "experts.%d.%s.weight" % (e, wid) for e in range(E)]
            w.lazy(blk + d + ".weight", (E,) + ck.shape(names[0]),
                   lambda names=names: np.stack([ck.get(n) for n in names]), mat)
        for p, d in (("gate_proj", "ffn_gate_shexp"), ("up_proj", "ffn_up_shexp"), ("down_proj", "ffn_down_shexp")):
            m(blk + d + ".weight", moe + "shared_experts." + p + ".weight")
    w.write(path)
    return len(w.tensors)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="waste_ref.gguf_kimi", description=__doc__.split("\n")[0])
    ap.add_argument("ckpt")
    ap.add_argument("out")
    ap.add_argument("--f16", action="store_true", help="matrices in F16 (as the converter's --outtype f16)")
    args = ap.parse_args(argv)
    n = write_kimi_linear(args.ckpt, args.out, args.f16)
    print("%s: %d tensors" % (args.out, n), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
