"""WHID: per-layer hidden-state dumps, so two engines can bisect a divergence.

Layout (all little-endian):

    u32 magic   0x44494857   (the bytes "WHID")
    u32 n_slots = num_hidden_layers + 1
    u32 n_tokens
    u32 hidden
    f32 data[n_slots][n_tokens][hidden]

slot 0 = token embeddings; slot L+1 = residual stream after layer L (with
Attention Residuals: the `x = ps` value at the end of layer L). The final norm,
the output AttnRes and the LM head are not included (compare logits for those).
"""

import struct

import numpy as np

MAGIC = 0x44494857
HEADER = struct.Struct("<IIII")


def write(path, hidden):
    """hidden: array-like [n_slots][n_tokens][hidden]."""
    arr = np.asarray(hidden.detach().cpu().numpy() if hasattr(hidden, "detach") else hidden,
                     dtype=np.float64).astype("<f4")
    if arr.ndim != 3:
        raise ValueError(f"hidden must be 3-D, got {arr.shape}")
    with open(path, "wb") as f:
        f.write(HEADER.pack(MAGIC, *arr.shape))
        f.write(arr.tobytes())


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER.size:
        raise ValueError(f"{path}: too short for a WHID header")
    magic, n_slots, n_tokens, hidden = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise ValueError(f"{path}: bad magic 0x{magic:08x}")
    want = HEADER.size + 4 * n_slots * n_tokens * hidden
    if len(data) != want:
        raise ValueError(f"{path}: {len(data)} bytes, header implies {want}")
    return np.frombuffer(data, dtype="<f4", offset=HEADER.size).reshape(n_slots, n_tokens, hidden)


def compare_main(a_path, b_path, tol):
    a, b = read(a_path), read(b_path)
    if a.shape != b.shape:
        print(f"shape mismatch: {a.shape} vs {b.shape}")
        return 2
    first_bad = None
    for slot in range(a.shape[0]):
        d = np.abs(a[slot].astype(np.float64) - b[slot].astype(np.float64))
        scale = max(np.abs(a[slot]).max(), 1e-30)
        tok = int(d.max(axis=1).argmax())
        label = "embed" if slot == 0 else f"layer {slot - 1}"
        print(f"{label:>10}: max|diff| {d.max():.3e} (rel {d.max() / scale:.3e}) worst token {tok}")
        if first_bad is None and d.max() > tol:
            first_bad = slot
    if first_bad is not None:
        label = "the embedding" if first_bad == 0 else f"layer {first_bad - 1}"
        print(f"first divergence above {tol:g}: {label}")
        return 1
    return 0
