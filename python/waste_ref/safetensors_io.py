"""A pure-python safetensors reader/writer and the weight codecs of published checkpoints.

Debian has no `safetensors` package, so this is the format written out from
its definition: an 8-byte little-endian header length N, N bytes of JSON
(`{"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
{...}}`, padded with spaces to a multiple of 8), then the data section.

Codecs (facts from docs/other-families.md; written independently of the C++
decoders in src/convert/weight_decode.cpp so one can check the other):
- bf16: the top 16 bits of an f32 (round to nearest even when encoding);
- FP8 e4m3fn (§1): bias 7, subnormals m·2^-9, no inf, 0x7f/0xff NaN, max 448;
  block-scaled with `scale_inv` per 128×128 block, W = fp8 · scale_inv;
- MXFP4 (§8, models.md §8): E2M1 nibbles, low nibble = even element, one E8M0
  scale per 32 values = 2^(e-127);
- compressed-tensors INT4 pack-quantized (§1): u = q + 8, column 8c+j at bits
  4j..4j+3 of int32 word c, W = (u - 8) · scale[o, i/32].
"""

import json
import struct

import numpy as np

DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "U8": 1, "I8": 1, "I32": 4, "I64": 8}
NUMPY_DTYPE = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "F8_E4M3": "u1", "U8": "u1", "I8": "i1", "I32": "<i4",
               "I64": "<i8"}


class SafetensorsError(ValueError):
    pass


# ---------------------------------------------------------------------------
# files


def write(path, tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes) in file order."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, dtype, shape, data in tensors:
        n = 1
        for d in shape:
            n *= int(d)
        if len(data) != n * DTYPE_SIZE[dtype]:
            raise SafetensorsError(f"{name}: {len(data)} bytes for {dtype} {list(shape)}")
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape], "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, data in tensors:
            f.write(data)


def read(path, mapped=False):
    """-> ({name: (dtype, shape, raw bytes)}, metadata). Bounds-checked. Reads
    the whole file, unless `mapped`: then each tensor's bytes are a zero-copy
    memoryview of the file mapped read-only (for checkpoints larger than one
    wants in memory; the views keep the mapping alive)."""
    if mapped:
        import mmap
        with open(path, "rb") as f:
            blob = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    else:
        with open(path, "rb") as f:
            blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError(f"{path}: too short")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if n > len(blob) - 8:
        raise SafetensorsError(f"{path}: header length {n} past the end")
    header = json.loads(bytes(blob[8:8 + n]))
    base = 8 + n
    out = {}
    meta = header.pop("__metadata__", {})
    for name, spec in header.items():
        dtype, shape, (b, e) = spec["dtype"], spec["shape"], spec["data_offsets"]
        if dtype not in DTYPE_SIZE:
            raise SafetensorsError(f"{path}: {name}: dtype {dtype}")
        count = 1
        for d in shape:
            count *= d
        if e - b != count * DTYPE_SIZE[dtype] or base + e > len(blob):
            raise SafetensorsError(f"{path}: {name}: bad data_offsets {[b, e]}")
        out[name] = (dtype, list(shape), blob[base + b:base + e])
    return out, meta


def to_numpy(dtype, shape, data):
    return np.frombuffer(data, dtype=NUMPY_DTYPE[dtype]).reshape(shape)


# ---------------------------------------------------------------------------
# bf16 / f16


def bf16_encode(x):
    """float array -> uint16 bf16 bits, round to nearest even (no NaN inputs)."""
    u = np.ascontiguousarray(np.asarray(x, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_decode(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


# ---------------------------------------------------------------------------
# FP8 e4m3fn


def fp8_decode(codes):
    c = np.asarray(codes, dtype=np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    m = c & 0x7
    mag = np.where(e == 0, m * 2.0 ** -9, (1.0 + m / 8.0) * np.exp2(e - 7.0))
    mag = np.where((e == 15) & (m == 7), np.nan, mag)
    return (sign * mag).astype(np.float32)


_FP8_POSITIVE = fp8_decode(np.arange(0, 0x7F))  # 0 .. 448, ascending (0x7f is NaN)


def fp8_encode(x):
    """float array (|x| <= 448) -> nearest e4m3fn code (ties to the even code)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    hi = np.clip(np.searchsorted(_FP8_POSITIVE, a), 1, len(_FP8_POSITIVE) - 1)
    lo = hi - 1
    d_lo = a - _FP8_POSITIVE[lo]
    d_hi = _FP8_POSITIVE[hi] - a
    code = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    code = np.where(a >= 448.0, 0x7E, code)
    return (code | np.where(x < 0, 0x80, 0)).astype(np.uint8)


def fp8_block_quantize(w, block=(128, 128)):
    """w [out, in] -> (codes u8 [out, in], scale_inv f32 [ceil(out/b0), ceil(in/b1)])."""
    out, inn = w.shape
    b0, b1 = block
    sr, sc = -(-out // b0), -(-inn // b1)
    codes = np.zeros((out, inn), dtype=np.uint8)
    scales = np.zeros((sr, sc), dtype=np.float32)
    for i in range(sr):
        for j in range(sc):
            blk = w[i * b0:(i + 1) * b0, j * b1:(j + 1) * b1]
            s = np.float32(max(float(np.abs(blk).max()) / 448.0, 1e-12))
            scales[i, j] = s
            codes[i * b0:(i + 1) * b0, j * b1:(j + 1) * b1] = fp8_encode(blk / np.float64(s))
    return codes, scales


def fp8_block_dequantize(codes, scale_inv, block=(128, 128)):
    b0, b1 = block
    s = np.repeat(np.repeat(np.asarray(scale_inv, dtype=np.float32), b0, axis=0), b1, axis=1)
    return fp8_decode(codes) * s[:codes.shape[0], :codes.shape[1]]


# ---------------------------------------------------------------------------
# MXFP4

FP4_VALUES = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def e8m0_decode(e):
    e = np.asarray(e, dtype=np.int64)
    return np.where(e == 255, np.nan, np.exp2(e.astype(np.float64) - 127)).astype(np.float32)


def mxfp4_quantize(w):
    """w [.., n] (n even) -> (packed u8 [.., n/2], scales u8 [.., ceil(n/32)])."""
    shape = w.shape
    n = shape[-1]
    rows = w.reshape(-1, n).astype(np.float64)
    ng = -(-n // 32)
    pad = np.zeros((rows.shape[0], ng * 32))
    pad[:, :n] = rows
    amax = np.abs(pad.reshape(-1, ng, 32)).max(axis=2)
    e = np.where(amax > 0, np.ceil(np.log2(np.maximum(amax, 1e-30) / 6.0)), -127) + 127
    e = np.clip(e, 0, 254).astype(np.int64)
    scaled = pad.reshape(-1, ng, 32) / np.exp2(e - 127.0)[:, :, None]
    pos = FP4_VALUES[:8].astype(np.float64)
    idx = np.abs(np.abs(scaled)[..., None] - pos).argmin(axis=-1)
    nib = (idx | np.where(scaled < 0, 8, 0)).reshape(rows.shape[0], ng * 32)[:, :n]
    packed = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
    return packed.reshape(shape[:-1] + (n // 2,)), e.astype(np.uint8).reshape(shape[:-1] + (ng,))


def mxfp4_dequantize(packed, scales):
    packed = np.asarray(packed, dtype=np.uint8)
    lo = packed & 0xF
    hi = packed >> 4
    nib = np.stack([lo, hi], axis=-1).reshape(packed.shape[:-1] + (packed.shape[-1] * 2,))
    n = nib.shape[-1]
    s = np.repeat(e8m0_decode(scales), 32, axis=-1)[..., :n]
    return FP4_VALUES[nib] * s


# ---------------------------------------------------------------------------
# compressed-tensors INT4 pack-quantized


def int4_quantize(w, group=32):
    """w [out, in] -> (packed int32 [out, ceil(in/8)], scale bf16 bits [out, ceil(in/group)], dequantised f32)."""
    out, n = w.shape
    ng = -(-n // group)
    pad = np.zeros((out, ng * group))
    pad[:, :n] = w
    amax = np.abs(pad.reshape(out, ng, group)).max(axis=2)
    scale_bits = bf16_encode(np.maximum(amax / 7.0, 1e-8))
    scale = bf16_decode(scale_bits).astype(np.float64)
    q = np.clip(np.rint(pad.reshape(out, ng, group) / scale[:, :, None]), -8, 7).astype(np.int64).reshape(out, -1)[:, :n]
    words = -(-n // 8)
    u = np.zeros((out, words * 8), dtype=np.uint64)
    u[:, :n] = (q + 8).astype(np.uint64)
    packed = np.zeros((out, words), dtype=np.uint64)
    for j in range(8):
        packed |= u[:, j::8] << np.uint64(4 * j)
    packed = packed.astype(np.uint32).view(np.int32)
    return packed, scale_bits, int4_dequantize(packed, scale_bits, n, group)


def int4_dequantize(packed, scale_bits, n, group=32):
    words = np.asarray(packed, dtype=np.int32).view(np.uint32).astype(np.int64)
    nib = np.stack([(words >> (4 * j)) & 15 for j in range(8)], axis=-1).reshape(words.shape[0], -1)[:, :n]
    s = np.repeat(bf16_decode(scale_bits), group, axis=-1)[:, :n]
    return ((nib - 8) * s).astype(np.float32)
