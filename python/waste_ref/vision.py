"""Kimi K3's vision tower and projector, float64, written from
shared/docs/vision.md §1 and §3 (not from the engine).

load(path) reads vision.json and the tower's tensors (outside the text
tensor_prefix) dequantised by container.dequant_trunk_tensor; embed(tower,
pixels, gh, gw) maps patches [gh*gw, 588] to the image's embedding rows
[gh*gw/4, TH].

Command line (tests/vision_test.cpp runs it), one job per image:
    python3 -m waste_ref.vision CONTAINER PIXELS:GH:GW:OUT ...
PIXELS: little-endian f32 [GH*GW][588]; OUT: little-endian f64 [N][TH].
"""

import json
import math
import os
import sys

import numpy as np
import torch

from waste_ref.container import dequant_trunk_tensor

EPS_TOWER = 2.0 ** -23  # §3.6: FLT_EPSILON, the reference's norms have no eps
EPS_PROJECTOR = 1e-5


def load(path):
    with open(os.path.join(path, "vision.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(path, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    with open(os.path.join(path, "trunk.bin"), "rb") as f:
        trunk = f.read()
    entries = {e["name"]: e for e in manifest["trunk"]}

    def tensor(name):
        return torch.from_numpy(dequant_trunk_tensor(entries[name], trunk).astype(np.float64))

    D = cfg.get("vt_hidden_size", 1024)
    tower = {
        "D": D,
        "nh": cfg.get("vt_num_attention_heads", 12),
        "Q": cfg.get("qkv_hidden_size", 1536),
        "pos_h": cfg.get("init_pos_emb_height", 64),
        "pos_w": cfg.get("init_pos_emb_width", 64),
        # Flattening by use (§1.2): the conv kernel is [D, 588] row-major,
        # the grid [pos_h, pos_w, D].
        "patch_embed": tensor("vision_tower.patch_embed.proj.weight").reshape(D, 588),
        "blocks": [],
        "final_norm": tensor("vision_tower.encoder.final_layernorm.weight").reshape(-1),
        "proj0": tensor("mm_projector.proj.0.weight"),
        "proj2": tensor("mm_projector.proj.2.weight"),
        "post_norm": tensor("mm_projector.post_norm.weight").reshape(-1),
    }
    tower["grid"] = tensor("vision_tower.patch_embed.pos_emb.weight").reshape(tower["pos_h"], tower["pos_w"], D)
    for b in range(cfg.get("vt_num_hidden_layers", 27)):
        p = f"vision_tower.encoder.blocks.{b}."
        tower["blocks"].append({
            "norm0": tensor(p + "norm0.weight").reshape(-1),
            "wqkv": tensor(p + "wqkv.weight"),
            "wo": tensor(p + "wo.weight"),
            "norm1": tensor(p + "norm1.weight").reshape(-1),
            "fc0": tensor(p + "mlp.fc0.weight"),
            "fc1": tensor(p + "mlp.fc1.weight"),
        })
    return tower


def rms(x, w, eps):
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def position_grid(grid, gh, gw):
    """§3.1: PyTorch's align_corners=False bilinear, no antialias."""
    pos_h, pos_w, _ = grid.shape
    if (gh, gw) == (pos_h, pos_w):
        return grid
    g = grid.permute(2, 0, 1).unsqueeze(0)  # [1, D, pos_h, pos_w]
    out = torch.nn.functional.interpolate(g, size=(gh, gw), mode="bilinear", align_corners=False)
    return out[0].permute(1, 2, 0)


def rope(v, gh, gw):
    """§3.2 on [L, nh, hd]: pair j turns by (j even ? column : row) * 10000^(-4*(j//2)/hd)."""
    L, _, hd = v.shape
    p = torch.arange(L, dtype=torch.float64)
    column, row = p % gw, torch.div(p, gw, rounding_mode="floor")
    j = torch.arange(hd // 2)
    theta = 10000.0 ** (-4.0 * torch.div(j, 2, rounding_mode="floor").double() / hd)
    angle = torch.where(j % 2 == 0, column[:, None], row[:, None]) * theta[None, :]  # [L, hd/2]
    c, s = torch.cos(angle)[:, None, :], torch.sin(angle)[:, None, :]
    a, b = v[..., 0::2], v[..., 1::2]
    out = torch.empty_like(v)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def merge_2x2(z):
    """§3.4 on Z [gh, gw, D]: cell (a, c) = [Z[2a][2c], Z[2a][2c+1], Z[2a+1][2c], Z[2a+1][2c+1]], row-major."""
    gh, gw, D = z.shape
    return torch.cat([z[0::2, 0::2], z[0::2, 1::2], z[1::2, 0::2], z[1::2, 1::2]], dim=-1).reshape(gh * gw // 4, 4 * D)


def gelu_tanh(z):
    return 0.5 * z * (1 + torch.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))


def gelu_erf(z):
    return 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))


def embed(tower, pixels, gh, gw):
    D, nh, Q = tower["D"], tower["nh"], tower["Q"]
    hd = Q // nh
    L = gh * gw
    x = pixels.double() @ tower["patch_embed"].T
    x = x + position_grid(tower["grid"], gh, gw).reshape(L, D)
    for blk in tower["blocks"]:
        t = rms(x, blk["norm0"], EPS_TOWER) @ blk["wqkv"].T
        q, k, v = (t[:, i * Q:(i + 1) * Q].reshape(L, nh, hd) for i in range(3))
        q, k = rope(q, gh, gw), rope(k, gh, gw)
        s = torch.einsum("phd,rhd->hpr", q, k) / math.sqrt(hd)
        a = torch.softmax(s, dim=-1)
        o = torch.einsum("hpr,rhd->phd", a, v).reshape(L, Q)
        x = x + o @ blk["wo"].T
        x = x + gelu_tanh(rms(x, blk["norm1"], EPS_TOWER) @ blk["fc0"].T) @ blk["fc1"].T
    m = merge_2x2(rms(x, tower["final_norm"], EPS_TOWER).reshape(gh, gw, D))
    e = gelu_erf(m @ tower["proj0"].T) @ tower["proj2"].T
    return rms(e, tower["post_norm"], EPS_PROJECTOR)


def main(argv):
    tower = load(argv[1])
    for job in argv[2:]:
        pixels_path, gh, gw, out_path = job.split(":")
        gh, gw = int(gh), int(gw)
        pixels = torch.from_numpy(np.fromfile(pixels_path, dtype="<f4").reshape(gh * gw, 588).astype(np.float64))
        embed(tower, pixels, gh, gw).numpy().astype("<f8").tofile(out_path)


if __name__ == "__main__":
    main(sys.argv)
