"""Operations shared by the MoE family references (qwen3_moe.py, deepseek_v3.py).

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


def causal_attention(q, k, v, scale):
    """q [T, H, Dk], k [T, H, Dk], v [T, H, Dv] -> [T, H*Dv]; softmax(q k^T * scale) v with a causal mask."""
    T = q.shape[0]
    scores = torch.einsum("thd,shd->hts", q, k) * scale
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return torch.einsum("hts,shd->thd", p, v).reshape(T, -1)
