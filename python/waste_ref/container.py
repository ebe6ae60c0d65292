"""Reader for `.waste` containers, format v0 (docs/container-v0.md).

Written from the byte specification only. Everything is dequantised to dense
numpy float32 arrays (exact: every quantised value is a small integer times an
f16 scale, which float32 represents exactly), so the model code never sees a
quantisation format. This is a reference, not an engine: it reads whole files
into memory and is meant for small containers.

What this file owns: manifest checks, trunk dequantisation (F32/Q8G/Q4G/Q3G),
codebooks, expert records (VQ3R/VQ2R/VQ4P) and their checks.
What it does not: any model math (see model.py).
"""

import json
import math
import os
import struct
import zlib

import numpy as np

FMT_F32, FMT_Q8G, FMT_Q4G, FMT_Q3G = 0, 2, 3, 7
TRUNK_FMT_NAMES = {FMT_F32: "F32", FMT_Q8G: "Q8G", FMT_Q4G: "Q4G", FMT_Q3G: "Q3G"}

CODEBOOK_MAGIC = 0x4B424357  # 'WCBK'
EXPERT_MAGIC = 0x50584557  # 'WEXP'
EXPERT_HEADER_BYTES = 48
# record header fmt byte for each manifest expert_quant.fmt (container-v0 §5):
# 4 = VQ3R (also written for 2-stage VQ2R), 5 = VQ2R, 8 = VQ4P.
EXPERT_FMT_CODES = {"VQ3R": (4,), "VQ2R": (4, 5), "VQ4P": (8,)}

MAX_DIM = 1 << 26


def moe_layer_list(cfg):
    """The 0-based MoE layers of a config: Qwen3-MoE's decoder_sparse_step /
    mlp_only_layers rule, else layers from first_k_dense_replace on."""
    n_layers = int(cfg["num_hidden_layers"])
    if cfg.get("model_type") == "qwen3_moe":
        step, only = int(cfg.get("decoder_sparse_step", 1) or 1), set(cfg.get("mlp_only_layers") or [])
        experts = int(cfg.get("num_experts", cfg.get("num_local_experts", 0)) or 0)
        return [i for i in range(n_layers) if i not in only and experts > 0 and (i + 1) % step == 0]
    return list(range(int(cfg.get("first_k_dense_replace", 0)), n_layers))


class ContainerError(ValueError):
    """A container violates the v0 format; the message names the object."""


def f16_to_f32(raw_bytes, count, offset=0):
    """`count` little-endian IEEE binary16 values -> float32 (subnormals kept)."""
    return np.frombuffer(raw_bytes, dtype="<f2", count=count, offset=offset).astype(np.float32)


def _read_file(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------
# trunk


def _group_geometry(shape, group):
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    n = int(shape[-1])
    ng = (n + group - 1) // group
    return rows, n, ng


def dequant_trunk_tensor(entry, trunk):
    """Dequantise one trunk entry (manifest `trunk[i]`) from the trunk.bin bytes."""
    name = entry.get("name", "?")
    fmt = entry["fmt"]
    shape = [int(d) for d in entry["shape"]]
    if not 1 <= len(shape) <= 4 or any(d < 1 or d > MAX_DIM for d in shape):
        raise ContainerError(f"trunk tensor {name}: bad shape {shape}")
    off = int(entry["off"])
    nbytes = int(entry["bytes"])
    if off < 0 or nbytes < 0 or off + nbytes > len(trunk):
        raise ContainerError(f"trunk tensor {name}: bytes [{off}, {off + nbytes}) outside trunk.bin ({len(trunk)})")
    count = int(np.prod(shape))

    if fmt == FMT_F32:
        if count * 4 > nbytes:
            raise ContainerError(f"trunk tensor {name}: F32 needs {count * 4} bytes, entry covers {nbytes}")
        return np.frombuffer(trunk, dtype="<f4", count=count, offset=off).astype(np.float32).reshape(shape)

    if fmt not in (FMT_Q8G, FMT_Q4G, FMT_Q3G):
        raise ContainerError(f"trunk tensor {name}: unknown fmt {fmt}")
    group = int(entry.get("group", 128))
    if group < 1:
        raise ContainerError(f"trunk tensor {name}: group {group}")
    rows, n, ng = _group_geometry(shape, group)
    padded = ng * group  # each row padded to whole groups with quantized zeros
    if fmt == FMT_Q8G:
        stride = padded
    elif fmt == FMT_Q4G:
        if padded % 2:
            raise ContainerError(f"trunk tensor {name}: Q4G row of {padded} values is not whole bytes")
        stride = padded // 2
    else:  # Q3G: ceil(3*ng*g/8) payload bytes + one guard byte per row
        stride = (3 * padded + 7) // 8 + 1
    payload = rows * stride
    scale_off = int(entry.get("scale_off", off + payload))
    n_scales = rows * ng
    if off + payload > len(trunk) or scale_off < 0 or scale_off + 2 * n_scales > len(trunk):
        raise ContainerError(f"trunk tensor {name}: payload/scales outside trunk.bin")
    scales = f16_to_f32(trunk, n_scales, scale_off).reshape(rows, ng)
    raw = np.frombuffer(trunk, dtype=np.uint8, count=payload, offset=off).reshape(rows, stride)

    if fmt == FMT_Q8G:
        q = raw.view(np.int8).astype(np.float32)
    elif fmt == FMT_Q4G:
        q = np.empty((rows, padded), dtype=np.float32)
        q[:, 0::2] = (raw & 0x0F).astype(np.float32) - 8.0  # low nibble first
        q[:, 1::2] = (raw >> 4).astype(np.float32) - 8.0
    else:
        # element i occupies bits 3i..3i+2 of the row, LSB-first (may straddle).
        i = np.arange(padded)
        bit = 3 * i
        byte = bit // 8
        shift = bit % 8
        lo = raw[:, byte].astype(np.uint32)
        hi = raw[:, byte + 1].astype(np.uint32)  # guard byte keeps this in range
        field = ((lo | (hi << 8)) >> shift) & 7
        q = field.astype(np.float32) - 4.0
    w = q.reshape(rows, ng, group) * scales[:, :, None]
    return w.reshape(rows, padded)[:, :n].reshape(shape).astype(np.float32)


# ---------------------------------------------------------------------------
# codebooks


def read_codebooks(path, entries, vec_dim):
    """codebooks.bin -> float32 array [n_books][entries][vec_dim] (zero gap records allowed)."""
    data = _read_file(path)
    rec = 16 + entries * vec_dim * 2
    if len(data) % rec:
        raise ContainerError(f"codebooks.bin: size {len(data)} is not a multiple of the record size {rec}")
    n_books = len(data) // rec
    books = np.zeros((n_books, entries, vec_dim), dtype=np.float32)
    valid = np.zeros(n_books, dtype=bool)
    for b in range(n_books):
        base = b * rec
        magic, book_id, _fmt, vd, ne, _res = struct.unpack_from("<IHBBII", data, base)
        if magic == 0 and not any(data[base:base + rec]):
            continue  # a gap record left by a resumed conversion; never referenced
        if magic != CODEBOOK_MAGIC:
            raise ContainerError(f"codebook {b}: bad magic 0x{magic:08x}")
        if book_id != (b & 0xFFFF):
            raise ContainerError(f"codebook {b}: id {book_id} != record index")
        if vd != vec_dim or ne != entries:
            raise ContainerError(f"codebook {b}: {ne}x{vd}, manifest says {entries}x{vec_dim}")
        books[b] = f16_to_f32(data, entries * vec_dim, base + 16).reshape(entries, vec_dim)
        valid[b] = True
    return books, valid


# ---------------------------------------------------------------------------
# experts


def vq_matrix_bytes(m, n, vec_dim, stages, index_bits):
    nv = n // vec_dim
    nb = (m + 63) // 64
    per = 3 if index_bits == 6 else stages  # VQ4P: 3 bytes per (row, position)
    return nb * 64 * nv * per


def unpack_vq_indices(raw, m, n, vec_dim, stages, index_bits):
    """Index bytes of one matrix -> int array [m][nv][stages].

    Layout [row_block][position][row_in_block][stage]:
    byte of (r, v, s) = ((r//64 * nv + v) * 64 + r%64) * S + s.
    """
    nv = n // vec_dim
    nb = (m + 63) // 64
    if index_bits == 6:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(nb, nv, 64, 3).astype(np.int64)
        b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
        idx = np.stack([
            b0 & 63,
            (b0 >> 6) | ((b1 & 15) << 2),
            (b1 >> 4) | ((b2 & 3) << 4),
            b2 >> 2,
        ], axis=-1)
    else:
        idx = np.frombuffer(raw, dtype=np.uint8).reshape(nb, nv, 64, stages).astype(np.int64)
    idx = idx.transpose(0, 2, 1, 3).reshape(nb * 64, nv, stages)
    return idx[:m]


def decode_vq_matrix(idx, scales, books):
    """W[r][v*vd + j] = scale[r] * sum_s books[s][idx[r,v,s]][j]; books [S][entries][vd]."""
    m, nv, stages = idx.shape
    vd = books.shape[2]
    acc = np.zeros((m, nv, vd), dtype=np.float64)
    for s in range(stages):
        acc += books[s][idx[:, :, s]].astype(np.float64)
    w = acc * scales.astype(np.float64)[:, None, None]
    return w.reshape(m, nv * vd)


class Container:
    """A parsed `.waste` directory.

    Attributes: manifest, config, prefix, tensors (dict: name without prefix ->
    float32 array), skipped (names outside the prefix), expert_quant.
    Experts are dequantised on demand by expert(layer, e) -> (gate, up, down),
    each float32 [I, lat] / [I, lat] / [lat, I], and cached.
    """

    def __init__(self, path, verify_crc=False):
        self.path = path
        self.verify_crc = verify_crc
        man_path = os.path.join(path, "manifest.json")
        with open(man_path, "r", encoding="utf-8") as f:
            self.manifest = json.load(f)
        m = self.manifest
        if not isinstance(m, dict):
            raise ContainerError("manifest: not a JSON object")
        if m.get("format_version") != 0 or isinstance(m.get("format_version"), bool):
            raise ContainerError(f"manifest: format_version {m.get('format_version')!r} is not 0")
        self.config = m.get("config")
        if not isinstance(self.config, dict):
            raise ContainerError("manifest: config missing")
        self.prefix = m.get("tensor_prefix", "") or ""
        if not isinstance(self.prefix, str):
            raise ContainerError("manifest: tensor_prefix is not a string")

        trunk = _read_file(os.path.join(path, "trunk.bin"))
        self.tensors = {}
        self.trunk_formats = {}
        self.skipped = []
        for entry in m.get("trunk", []):
            name = entry["name"]
            if not name.startswith(self.prefix):
                self.skipped.append(name)
                continue
            short = name[len(self.prefix):]
            if short in self.tensors:
                raise ContainerError(f"trunk tensor {name}: duplicate")
            self.tensors[short] = dequant_trunk_tensor(entry, trunk)
            self.trunk_formats[short] = TRUNK_FMT_NAMES.get(entry["fmt"])
        del trunk

        self._experts = {}
        self.layers = {}
        self.books = None
        self._check_moe()

    # -- MoE banks ---------------------------------------------------------

    def _check_moe(self):
        cfg, m = self.config, self.manifest
        n_layers = int(cfg["num_hidden_layers"])
        moe_layers = moe_layer_list(cfg)
        layers = m.get("layers", {}) or {}
        if not moe_layers:
            return
        if sorted(int(k) for k in layers) != moe_layers or any(str(int(k)) != k for k in layers):
            raise ContainerError(f"manifest: layers {sorted(layers)} != MoE layers {moe_layers}")
        q = m.get("expert_quant")
        if not isinstance(q, dict):
            raise ContainerError("manifest: expert_quant missing")
        self.vq_fmt = q.get("fmt")
        if self.vq_fmt not in EXPERT_FMT_CODES:
            raise ContainerError(f"manifest: expert_quant.fmt {self.vq_fmt!r}")
        self.stages = int(q["stages"])
        self.vec_dim = int(q["vec_dim"])
        self.entries = int(q["entries"])
        self.index_bits = int(q.get("index_bits", 8))
        if not (1 <= self.stages <= 8 and 1 <= self.vec_dim <= 64 and 1 <= self.entries <= 256):
            raise ContainerError(f"manifest: expert_quant out of range {q}")
        if int(q.get("index_block", 64)) != 64:
            raise ContainerError(f"manifest: expert_quant.index_block {q.get('index_block')} != 64")
        if self.index_bits not in (6, 8) or (self.index_bits == 6 and not (self.stages == 4 and self.entries == 64)):
            raise ContainerError(f"manifest: expert_quant.index_bits {self.index_bits} with stages {self.stages}, entries {self.entries}")
        if (self.vq_fmt == "VQ4P") != (self.index_bits == 6):
            raise ContainerError(f"manifest: fmt {self.vq_fmt} disagrees with index_bits {self.index_bits}")

        self.books, valid = read_codebooks(os.path.join(self.path, "codebooks.bin"), self.entries, self.vec_dim)
        n_books = self.books.shape[0]
        E = int(cfg.get("num_experts", cfg.get("n_routed_experts", cfg.get("num_local_experts"))))  # Kimi's/Qwen3's key, DeepSeek's, newer HF's
        for L in moe_layers:
            lay = layers[str(L)]
            fname = lay["file"]
            if not isinstance(fname, str) or "/" in fname or "\\" in fname or ".." in fname or not fname:
                raise ContainerError(f"manifest: layers.{L}.file {fname!r} is not a plain name")
            if int(lay["experts"]) != E:
                raise ContainerError(f"manifest: layers.{L}.experts {lay['experts']} != num_experts {E}")
            nbytes = int(lay["bytes"])
            if nbytes <= 0 or nbytes % E:
                raise ContainerError(f"manifest: layers.{L}.bytes {nbytes} is not a multiple of experts {E}")
            rec = nbytes // E
            if rec % 4096:
                raise ContainerError(f"manifest: layers.{L} record size {rec} is not a multiple of 4096")
            fpath = os.path.join(self.path, fname)
            if os.path.getsize(fpath) != nbytes:
                raise ContainerError(f"{fname}: size {os.path.getsize(fpath)} != manifest bytes {nbytes}")
            base = int(lay["codebook_base"])
            if base < 0 or base + 3 * self.stages > n_books:
                raise ContainerError(f"manifest: layers.{L}.codebook_base {base} + 3*{self.stages} > {n_books} books")
            if not valid[base:base + 3 * self.stages].all():
                raise ContainerError(f"manifest: layers.{L} references a gap codebook record")
            self.layers[L] = {"file": fpath, "record": rec, "codebook_base": base}

    def expert_shapes(self):
        cfg = self.config
        lat = int(cfg.get("routed_expert_hidden_size") or cfg["hidden_size"])
        # gpt-oss's and MiniMax-M2's intermediate_size is their expert width (they have no dense FFN)
        every_layer_moe = cfg.get("model_type") in ("gpt_oss", "minimax_m2")
        inter = int(cfg["intermediate_size"] if every_layer_moe else cfg["moe_intermediate_size"])
        return lat, inter

    def expert(self, layer, e):
        key = (layer, e)
        if key not in self._experts:
            self._experts[key] = self._read_expert(layer, e)
        return self._experts[key]

    def _read_expert(self, layer, e):
        lay = self.layers[layer]
        R = lay["record"]
        with open(lay["file"], "rb") as f:
            f.seek(e * R)
            rec = f.read(R)
        where = f"expert {e} of layer {layer}"
        if len(rec) != R:
            raise ContainerError(f"{where}: short read {len(rec)} of {R}")
        (magic, rl, re_, fmt, _flags, cb_id, lowrank, _res, blocks,
         gate_off, up_off, down_off, scales_off, crc) = struct.unpack_from("<IHHBBHHHIIIIII", rec, 0)
        if magic != EXPERT_MAGIC:
            raise ContainerError(f"{where}: bad magic 0x{magic:08x}")
        if rl != layer or re_ != e:
            raise ContainerError(f"{where}: record says layer {rl} expert {re_}")
        if blocks * 4096 != R:
            raise ContainerError(f"{where}: {blocks} blocks != record size {R}")
        if fmt not in EXPERT_FMT_CODES[self.vq_fmt]:
            raise ContainerError(f"{where}: fmt {fmt} disagrees with manifest {self.vq_fmt}")
        if lowrank != 0:
            raise ContainerError(f"{where}: lowrank_id {lowrank} != 0")
        if cb_id + 3 * self.stages > self.books.shape[0]:
            raise ContainerError(f"{where}: codebook_id {cb_id} out of range")
        if cb_id != lay["codebook_base"]:
            raise ContainerError(f"{where}: codebook_id {cb_id} != layer codebook_base {lay['codebook_base']}")
        lat, inter = self.expert_shapes()
        shapes = [(inter, lat), (inter, lat), (lat, inter)]  # gate, up, down: [M, N]
        for (mm, nn) in shapes:
            if nn % self.vec_dim:
                raise ContainerError(f"{where}: {nn} columns not a multiple of vec_dim {self.vec_dim}")
        sizes = [vq_matrix_bytes(mm, nn, self.vec_dim, self.stages, self.index_bits) for mm, nn in shapes]
        want = [EXPERT_HEADER_BYTES, EXPERT_HEADER_BYTES + sizes[0],
                EXPERT_HEADER_BYTES + sizes[0] + sizes[1],
                EXPERT_HEADER_BYTES + sum(sizes)]
        if [gate_off, up_off, down_off, scales_off] != want:
            raise ContainerError(f"{where}: offsets {[gate_off, up_off, down_off, scales_off]} != {want}")
        n_scales = sum(mm for mm, _ in shapes)
        end = scales_off + 2 * n_scales
        if end > R:
            raise ContainerError(f"{where}: scales end {end} beyond record {R}")
        if self.verify_crc:
            got = zlib.crc32(rec[EXPERT_HEADER_BYTES:end]) & 0xFFFFFFFF
            if got != crc:
                raise ContainerError(f"{where}: checksum mismatch")
        scales = f16_to_f32(rec, n_scales, scales_off)
        mats = []
        row0 = 0
        for kind, ((mm, nn), off, size) in enumerate(zip(shapes, want[:3], sizes)):
            idx = unpack_vq_indices(rec[off:off + size], mm, nn, self.vec_dim, self.stages, self.index_bits)
            b0 = cb_id + kind * self.stages
            w = decode_vq_matrix(idx, scales[row0:row0 + mm], self.books[b0:b0 + self.stages])
            mats.append(w)
            row0 += mm
        return tuple(mats)  # float64 (exact sums of f16 products)


def open_container(path, verify_crc=False):
    return Container(path, verify_crc=verify_crc)
