"""Writes small synthetic v0 containers with every Kimi K3 text feature.

The upstream fixtures are Kimi-Linear shaped only. This writer produces a tiny
K3-shaped container (bounded KDA decay, full-rank KDA gate, q_lora MLA with
output gate, grouped sigmoid router, latent MoE with norm, SiTU, Attention
Residuals, `language_model.` prefix, VQ4P experts, Q3G/Q4G/Q8G/F32 trunk with
f16-subnormal scales and non-128 groups) so the reader and the model's K3
paths are exercised, and so an engine can be diffed against the reference on
them. Caveat: this writer and the reader come from the same reading of the
spec; agreement between them is no proof against upstream.

    PYTHONPATH=python /usr/bin/python3 -m waste_ref.synth OUT.waste [--seed 1] [--vq VQ4P|VQ3R]

Packing here is written element by element (explicit loops) on purpose, so it
is an independent implementation of the layouts that container.py decodes with
array reshapes.
"""

import argparse
import json
import os
import struct
import zlib

import numpy as np

from .container import CODEBOOK_MAGIC, EXPERT_MAGIC, FMT_F32, FMT_Q3G, FMT_Q4G, FMT_Q8G

QRANGE = {FMT_Q8G: (-127, 127, 127.0), FMT_Q4G: (-8, 7, 7.0), FMT_Q3G: (-4, 3, 3.0)}


def k3_config(**over):
    cfg = {
        "model_type": "kimi_k3",
        "architectures": ["KimiK3ForCausalLM"],
        "hidden_size": 128,
        "num_hidden_layers": 4,
        "first_k_dense_replace": 1,
        "intermediate_size": 96,
        "moe_intermediate_size": 32,
        "num_experts": 16,
        "num_experts_per_token": 4,
        "num_shared_experts": 1,
        "n_group": 4,
        "topk_group": 2,
        "moe_renormalize": True,
        "moe_router_activation_func": "sigmoid",
        "routed_scaling_factor": 1.5,
        "routed_expert_hidden_size": 64,
        "latent_moe_use_norm": True,
        "num_attention_heads": 4,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "v_head_dim": 16,
        "kv_lora_rank": 32,
        "q_lora_rank": 48,
        "mla_use_nope": True,
        "mla_use_output_gate": True,
        "hidden_act": "situ",
        "activation_situ_beta": 4.0,
        "activation_situ_linear_beta": 25.0,
        "attn_res_block_size": 2,
        "rms_norm_eps": 1e-5,
        "vocab_size": 200,
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "linear_attn_config": {
            "head_dim": 32,
            "num_heads": 2,
            "short_conv_kernel_size": 4,
            "kda_layers": [1, 2, 4],
            "full_attn_layers": [3],
            "gate_lower_bound": -5.0,
            "use_full_rank_gate": True,
        },
    }
    cfg.update(over)
    return cfg


# ---------------------------------------------------------------------------
# trunk quantisation + packing


def quantize(w, fmt, group):
    """-> (payload bytes, scale bytes, dequantised float32 array of w's shape)."""
    shape = w.shape
    n = shape[-1]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    ng = (n + group - 1) // group
    padded = ng * group
    wp = np.zeros((rows, padded), dtype=np.float64)
    wp[:, :n] = w.reshape(rows, n)
    lo, hi, qmax = QRANGE[fmt]
    absmax = np.abs(wp.reshape(rows, ng, group)).max(axis=2)
    scale16 = np.maximum(absmax / qmax, 1e-8).astype(np.float16)
    scale = scale16.astype(np.float64)
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(np.rint(wp.reshape(rows, ng, group) / safe[:, :, None]), lo, hi).astype(np.int64)
    q = np.where(scale[:, :, None] > 0, q, 0).reshape(rows, padded)
    deq = (q.reshape(rows, ng, group) * scale[:, :, None]).reshape(rows, padded)[:, :n]
    out = bytearray()
    for r in range(rows):
        if fmt == FMT_Q8G:
            out += bytes((int(v) & 0xFF) for v in q[r])
        elif fmt == FMT_Q4G:
            for i in range(0, padded, 2):
                out.append(((int(q[r, i]) + 8) & 15) | (((int(q[r, i + 1]) + 8) & 15) << 4))
        else:
            row = bytearray((3 * padded + 7) // 8 + 1)  # + guard byte
            for i in range(padded):
                field = int(q[r, i]) + 4
                for b in range(3):
                    if (field >> b) & 1:
                        bit = 3 * i + b
                        row[bit // 8] |= 1 << (bit % 8)
            out += row
    return bytes(out), scale16.astype("<f2").tobytes(), deq.reshape(shape).astype(np.float32)


# ---------------------------------------------------------------------------
# tensors of a K3-like model


def k3_tensors(cfg, rng, prefix):
    """-> list of (full name, float array, fmt, group)."""
    H = cfg["hidden_size"]
    lac = cfg["linear_attn_config"]
    nh, D, K = lac["num_heads"], lac["head_dim"], lac["short_conv_kernel_size"]
    C = nh * D
    mh, nope, rope, vd = cfg["num_attention_heads"], cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    r, ql = cfg["kv_lora_rank"], cfg.get("q_lora_rank")
    E, inter, lat = cfg["num_experts"], cfg["moe_intermediate_size"], cfg.get("routed_expert_hidden_size")
    V = cfg["vocab_size"]
    out = []

    def lin(name, o, i, fmt=FMT_Q4G, group=128, gain=1.0):
        out.append((prefix + name, rng.standard_normal((o, i)) * gain / np.sqrt(i), fmt, group))

    def vec(name, shape, mean=0.0, std=1.0):
        out.append((prefix + name, mean + std * rng.standard_normal(shape), FMT_F32, 128))

    out.append((prefix + "model.embed_tokens.weight", rng.standard_normal((V, H)), FMT_Q8G, 128))
    kda = set(lac["kda_layers"])
    for L in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{L}."
        vec(p + "input_layernorm.weight", (H,), 1.0, 0.1)
        vec(p + "post_attention_layernorm.weight", (H,), 1.0, 0.1)
        a = p + "self_attn."
        if (L + 1) in kda:
            lin(a + "q_proj.weight", C, H)
            lin(a + "k_proj.weight", C, H)
            lin(a + "v_proj.weight", C, H)
            vec(a + "q_conv1d.weight", (C, 1, K), 0.0, 0.5)
            vec(a + "k_conv1d.weight", (C, 1, K), 0.0, 0.5)
            vec(a + "v_conv1d.weight", (C, 1, K), 0.0, 0.5)
            lin(a + "f_a_proj.weight", D, H)
            lin(a + "f_b_proj.weight", C, D, group=64)
            lin(a + "b_proj.weight", nh, H)
            alog = np.full((1, 1, D, 1), 3.0)  # padded to D: only the first nh are real
            alog[0, 0, :nh, 0] = 0.5 * rng.standard_normal(nh)
            out.append((prefix + a + "A_log", alog, FMT_F32, 128))
            vec(a + "dt_bias", (C,), 0.0, 0.5)
            if lac.get("use_full_rank_gate"):
                lin(a + "g_proj.weight", C, H)
            else:
                lin(a + "g_a_proj.weight", D, H)
                lin(a + "g_b_proj.weight", C, D)
            vec(a + "o_norm.weight", (D,), 1.0, 0.1)
            lin(a + "o_proj.weight", H, C, fmt=FMT_Q3G, group=64)
        else:
            if ql:
                lin(a + "q_a_proj.weight", ql, H)
                vec(a + "q_a_layernorm.weight", (ql,), 1.0, 0.1)
                lin(a + "q_b_proj.weight", mh * (nope + rope), ql)
            else:
                lin(a + "q_proj.weight", mh * (nope + rope), H)
            lin(a + "kv_a_proj_with_mqa.weight", r + rope, H)
            vec(a + "kv_a_layernorm.weight", (r,), 1.0, 0.1)
            lin(a + "kv_b_proj.weight", mh * (nope + vd), r, gain=2.0)
            if cfg.get("mla_use_output_gate"):
                lin(a + "g_proj.weight", mh * vd, H)
            lin(a + "o_proj.weight", H, mh * vd, fmt=FMT_Q3G)
        if L < cfg["first_k_dense_replace"]:
            I = cfg["intermediate_size"]
            lin(p + "mlp.gate_proj.weight", I, H, gain=2.0)
            lin(p + "mlp.up_proj.weight", I, H, gain=2.0)
            lin(p + "mlp.down_proj.weight", H, I)
        else:
            m = p + "block_sparse_moe."
            lin(m + "gate.weight", E, H, gain=2.0)
            vec(m + "gate.e_score_correction_bias", (E,), 0.0, 0.1)
            Is = inter * cfg.get("num_shared_experts", 1)
            lin(m + "shared_experts.gate_proj.weight", Is, H, gain=2.0)
            lin(m + "shared_experts.up_proj.weight", Is, H, gain=2.0)
            lin(m + "shared_experts.down_proj.weight", H, Is)
            if lat:
                lin(m + "routed_expert_down_proj.weight", lat, H)
                lin(m + "routed_expert_up_proj.weight", H, lat)
                if cfg.get("latent_moe_use_norm"):
                    vec(m + "routed_expert_norm.weight", (lat,), 1.0, 0.1)
        if cfg.get("attn_res_block_size", 0) > 0:
            for nm in ("self_attention_res_norm", "self_attention_res_proj", "mlp_res_norm", "mlp_res_proj"):
                vec(p + nm + ".weight", (H,), 0.0, 0.5)
    if cfg.get("attn_res_block_size", 0) > 0:
        vec("model.output_attn_res_norm.weight", (H,), 0.0, 0.5)
        vec("model.output_attn_res_proj.weight", (H,), 0.0, 0.5)
    vec("model.norm.weight", (H,), 1.0, 0.1)
    if not cfg.get("tie_word_embeddings"):
        lin("lm_head.weight", V, H, fmt=FMT_Q8G, gain=4.0)
    # a few rows with tiny values: their f16 scales are subnormal
    for i, (name, arr, fmt, group) in enumerate(out):
        if name.endswith("q_proj.weight") or name.endswith("kv_b_proj.weight"):
            arr[:2] *= 1e-4
    return out


# ---------------------------------------------------------------------------
# experts


def pack_indices(idx, index_bits):
    """idx int [M][nv][S] -> bytes, layout [row_block][position][row_in_block][stage]."""
    M, nv, S = idx.shape
    nb = (M + 63) // 64
    per = 3 if index_bits == 6 else S
    buf = bytearray(nb * 64 * nv * per)
    for r in range(M):
        for v in range(nv):
            base = ((r // 64 * nv + v) * 64 + r % 64) * per
            if index_bits == 6:
                s0, s1, s2, s3 = (int(x) for x in idx[r, v])
                buf[base] = s0 | ((s1 & 3) << 6)
                buf[base + 1] = (s1 >> 2) | ((s2 & 15) << 4)
                buf[base + 2] = (s2 >> 4) | (s3 << 2)
            else:
                for s in range(S):
                    buf[base + s] = int(idx[r, v, s])
    return bytes(buf)


def write_container(path, cfg, seed=1, vq="VQ4P", prefix="language_model.", extra_outside=True):
    """Write a container; return (dequantised tensors by short name, experts {(L,e): (gate, up, down)})."""
    rng = np.random.default_rng(seed)
    os.makedirs(path, exist_ok=True)
    stages, entries, index_bits = {"VQ4P": (4, 64, 6), "VQ3R": (3, 256, 8), "VQ2R": (2, 256, 8)}[vq]
    vec_dim = 8
    fmt_code = {"VQ4P": 8, "VQ3R": 4, "VQ2R": 5}[vq]

    tensors = k3_tensors(cfg, rng, prefix)
    if extra_outside:
        tensors.append(("vision_tower.encoder.layers.0.fc0.weight", rng.standard_normal((32, 32)), FMT_Q4G, 128))
    trunk = bytearray()
    index = []
    deq = {}
    for name, arr, fmt, group in tensors:
        arr = np.asarray(arr, dtype=np.float64)
        off = len(trunk)
        if fmt == FMT_F32:
            a32 = arr.astype("<f4")
            trunk += a32.tobytes()
            index.append({"name": name, "fmt": 0, "off": off, "shape": list(arr.shape), "bytes": a32.nbytes})
            d = a32.astype(np.float32)
        else:
            payload, scales, d = quantize(arr, fmt, group)
            trunk += payload
            scale_off = len(trunk)
            trunk += scales
            index.append({"name": name, "fmt": fmt, "off": off, "shape": list(arr.shape), "group": group,
                          "scale_off": scale_off, "bytes": len(payload) + len(scales)})
        if name.startswith(prefix):
            deq[name[len(prefix):]] = d

    # codebooks and expert banks
    n_layers, first = cfg["num_hidden_layers"], cfg["first_k_dense_replace"]
    moe_layers = list(range(first, n_layers))
    lat = cfg.get("routed_expert_hidden_size") or cfg["hidden_size"]
    inter = cfg["moe_intermediate_size"]
    E = cfg["num_experts"]
    shapes = [(inter, lat), (inter, lat), (lat, inter)]
    books = []
    layers = {}
    experts = {}
    for li, L in enumerate(moe_layers):
        base = len(books)
        for _ in range(3 * stages):
            books.append((0.5 * rng.standard_normal((entries, vec_dim))).astype(np.float16))
        sizes = [((m + 63) // 64) * 64 * (n // vec_dim) * (3 if index_bits == 6 else stages) for m, n in shapes]
        scales_off = 48 + sum(sizes)
        end = scales_off + 2 * sum(m for m, _ in shapes)
        R = (end + 4095) // 4096 * 4096
        bank = bytearray()
        for e in range(E):
            payload = bytearray()
            all_scales = []
            mats = []
            for kind, (m, n) in enumerate(shapes):
                nv = n // vec_dim
                idx = rng.integers(0, entries, size=(m, nv, stages))
                sc = (rng.uniform(0.5, 1.5, size=m) / np.sqrt(n)).astype(np.float16)
                if kind == 0 and e == 0:
                    sc[0] = np.float16(3e-6)  # a subnormal f16 row scale
                payload += pack_indices(idx, index_bits)
                all_scales.append(sc)
                w = np.zeros((m, n), dtype=np.float64)
                for s in range(stages):
                    cb = books[base + kind * stages + s].astype(np.float64)
                    w += cb[idx[:, :, s]].reshape(m, n)
                mats.append(w * sc.astype(np.float64)[:, None])
            body = bytes(payload) + np.concatenate(all_scales).astype("<f2").tobytes()
            crc = zlib.crc32(body) & 0xFFFFFFFF
            hdr = struct.pack("<IHHBBHHHIIIIIIII", EXPERT_MAGIC, L, e, fmt_code, 0, base, 0, 0, R // 4096,
                              48, 48 + sizes[0], 48 + sizes[0] + sizes[1], scales_off, crc, 0, 0)
            rec = hdr + body
            bank += rec + bytes(R - len(rec))
            experts[(L, e)] = tuple(mats)
        fname = f"experts-L{L}.bin"
        with open(os.path.join(path, fname), "wb") as f:
            f.write(bank)
        layers[str(L)] = {"file": fname, "experts": E, "bytes": len(bank), "codebook_base": base}

    cb = bytearray()
    for b, book in enumerate(books):
        cb += struct.pack("<IHBBII", CODEBOOK_MAGIC, b & 0xFFFF, 4, vec_dim, entries, 0)
        cb += book.astype("<f2").tobytes()
    with open(os.path.join(path, "codebooks.bin"), "wb") as f:
        f.write(cb)
    with open(os.path.join(path, "trunk.bin"), "wb") as f:
        f.write(trunk)
    eq = {"fmt": vq, "stages": stages, "vec_dim": vec_dim, "entries": entries, "index_block": 64,
          "bits_per_weight": {"VQ4P": 3, "VQ3R": 3, "VQ2R": 2}[vq]}
    if index_bits == 6:
        eq["index_bits"] = 6
    manifest = {"format_version": 0, "arch": "kimi_k3", "tensor_prefix": prefix, "config": cfg,
                "expert_quant": eq, "layers": layers, "trunk": index}
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return deq, experts


def main(argv=None):
    ap = argparse.ArgumentParser(prog="waste_ref.synth")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vq", default="VQ4P", choices=["VQ4P", "VQ3R", "VQ2R"])
    args = ap.parse_args(argv)
    write_container(args.out, k3_config(), seed=args.seed, vq=args.vq)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
