"""Operations shared by the MoE family references (qwen3_moe.py, deepseek_v3.py, glm4_moe.py, minimax_m2.py).

Each follows the math of the public reference code (HF transformers, see
/work/shared/docs/other-families.md §0), in float32 throughout: the references
exist to be compared, so they keep one precision and no fused shortcuts.
"""
import torch


def rms_norm(x, weight, eps):
    """y = w * x / sqrt(mean(x^2) + eps), over the last dimension."""
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def swiglu(x, gate, up, down):
    """down(silu(gate x) * up x); weights in PyTorch [out, in] order."""
    return (torch.nn.functional.silu(x @ gate.T) * (x @ up.T)) @ down.T


def topk_lowest_index(scores, k):
    """Top-k along the last dim; among equal scores the lower index wins.

    torch.topk leaves the order of ties unspecified, and a router tie decides
    which experts run, so the references fix one rule. (llama.cpp's
    argsort_top_k makes its own choice; the tests keep routing margins away
    from ties, see test_moe_llamacpp.py.)"""
    values, idx = torch.sort(scores, dim=-1, descending=True, stable=True)
    return values[..., :k], idx[..., :k]


def partial_rope_neox(x, positions, theta, rot):
    """x [T, heads, head_dim]: rotate_half RoPE on x[..., :rot] (pair i with
    i + rot/2, inv_freq[i] = theta^(-2i/rot)), x[..., rot:] unchanged (HF's
    apply_rotary_pos_emb with a partial rotary dim: GLM-4.5, MiniMax-M2)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    ang = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)[:, None, :]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = torch.cat([-x_rot[..., half:], x_rot[..., :half]], -1)
    return torch.cat([x_rot * cos + rotated * sin, x_pass], -1)


def causal_attention(q, k, v, scale):
    """q [T, H, Dk], k [T, H, Dk], v [T, H, Dv] -> [T, H*Dv]; softmax(q k^T * scale) v with a causal mask."""
    T = q.shape[0]
    scores = torch.einsum("thd,shd->hts", q, k) * scale
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.einsum("hts,shd->thd", p, v).reshape(T, -1)
