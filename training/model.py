"""kimi-mini: a small Kimi-Linear-style MoE language model for training.

The math is exactly shared/docs/models.md §0-§3 for the Kimi-Linear family
(KDA with g = -exp(A_log)·softplus(z), NoPE MLA without q_lora, sigmoid
router with e_score_correction_bias, shared expert, dense first layer, SiLU),
so python/waste_ref/model.py computes the same logits from the exported
weights (python/tests/test_trained_model.py checks it).

What this file owns: the configuration (and its config.json), the trainable
module, the HF tensor names (hf_state_dict / load_hf_state_dict) and the
safetensors shards. What it does not: data, the optimiser loop (train.py).

Works under torch 1.13 (Debian, CPU) and 2.x (CUDA). Speed choices, each
exact (same function, different evaluation order):
- KDA in the chunked (WY) form: within a chunk the delta rule is a unit
  lower-triangular solve, only the D×D state is carried chunk to chunk
  (kda_chunked; kda_recurrent is the token-by-token form of models.md §1,
  kept for the tests);
- MoE "dense": every expert on every token, multiplied by a routing weight
  that is 0 for the experts not selected, as two large matmuls — on a GPU
  cheaper than gathering; "gather" runs only the selected experts (CPU).
Precision: parameters f32; on CUDA matmuls may run under bf16 autocast, but
the router, norms and the KDA recurrence are always f32.
"""

import json
import math
import os
import struct
from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------
# configuration


@dataclass
class Config:
    vocab_size: int = 4096
    hidden_size: int = 128
    num_hidden_layers: int = 4
    intermediate_size: int = 384  # dense layer 0
    first_k_dense_replace: int = 1
    # KDA
    kda_layers: list = field(default_factory=lambda: [1, 2, 3])  # 1-based
    full_attn_layers: list = field(default_factory=lambda: [4])  # 1-based, MLA
    kda_num_heads: int = 2
    kda_head_dim: int = 64
    short_conv_kernel_size: int = 4
    # MLA (NoPE, no q_lora)
    num_attention_heads: int = 4
    qk_nope_head_dim: int = 32
    qk_rope_head_dim: int = 16
    v_head_dim: int = 32
    kv_lora_rank: int = 64
    # MoE
    num_experts: int = 32
    num_experts_per_token: int = 4
    num_shared_experts: int = 1
    moe_intermediate_size: int = 32
    routed_scaling_factor: float = 2.446
    moe_renormalize: bool = True
    rms_norm_eps: float = 1e-5
    # tokens
    bos_token_id: int = 4032
    eos_token_id: int = 4033
    pad_token_id: int = 4095
    # training only (not part of the math)
    dropout: float = 0.0
    init_std: float = 0.02

    def is_kda(self, layer):
        return (layer + 1) in self.kda_layers

    def hf_config(self):
        """config.json with the key names of a Kimi-Linear release."""
        return {
            "architectures": ["KimiLinearForCausalLM"],
            "model_type": "kimi_linear",
            "torch_dtype": "bfloat16",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "intermediate_size": self.intermediate_size,
            "first_k_dense_replace": self.first_k_dense_replace,
            "moe_layer_freq": 1,
            "hidden_act": "silu",
            "rms_norm_eps": self.rms_norm_eps,
            "initializer_range": self.init_std,
            "tie_word_embeddings": False,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
            "linear_attn_config": {
                "num_heads": self.kda_num_heads,
                "head_dim": self.kda_head_dim,
                "short_conv_kernel_size": self.short_conv_kernel_size,
                "kda_layers": list(self.kda_layers),
                "full_attn_layers": list(self.full_attn_layers),
            },
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_attention_heads,
            "head_dim": self.qk_nope_head_dim + self.qk_rope_head_dim,
            "q_lora_rank": None,
            "kv_lora_rank": self.kv_lora_rank,
            "qk_nope_head_dim": self.qk_nope_head_dim,
            "qk_rope_head_dim": self.qk_rope_head_dim,
            "v_head_dim": self.v_head_dim,
            "mla_use_nope": True,
            "rope_scaling": None,
            "rope_theta": 10000.0,
            "num_experts": self.num_experts,
            "num_experts_per_token": self.num_experts_per_token,
            "num_shared_experts": self.num_shared_experts,
            "moe_intermediate_size": self.moe_intermediate_size,
            "moe_router_activation_func": "sigmoid",
            "moe_renormalize": self.moe_renormalize,
            "routed_scaling_factor": self.routed_scaling_factor,
            "num_expert_group": 1,
            "topk_group": 1,
            "use_grouped_topk": True,
            "num_nextn_predict_layers": 0,
            "model_max_length": 1048576,
            "use_cache": True,
        }

    @classmethod
    def from_hf(cls, hf):
        lac = hf["linear_attn_config"]
        return cls(
            vocab_size=hf["vocab_size"], hidden_size=hf["hidden_size"],
            num_hidden_layers=hf["num_hidden_layers"], intermediate_size=hf["intermediate_size"],
            first_k_dense_replace=hf["first_k_dense_replace"],
            kda_layers=list(lac["kda_layers"]), full_attn_layers=list(lac["full_attn_layers"]),
            kda_num_heads=lac["num_heads"], kda_head_dim=lac["head_dim"],
            short_conv_kernel_size=lac["short_conv_kernel_size"],
            num_attention_heads=hf["num_attention_heads"], qk_nope_head_dim=hf["qk_nope_head_dim"],
            qk_rope_head_dim=hf["qk_rope_head_dim"], v_head_dim=hf["v_head_dim"],
            kv_lora_rank=hf["kv_lora_rank"], num_experts=hf["num_experts"],
            num_experts_per_token=hf["num_experts_per_token"], num_shared_experts=hf["num_shared_experts"],
            moe_intermediate_size=hf["moe_intermediate_size"],
            routed_scaling_factor=hf["routed_scaling_factor"], moe_renormalize=hf["moe_renormalize"],
            rms_norm_eps=hf["rms_norm_eps"], bos_token_id=hf["bos_token_id"],
            eos_token_id=hf["eos_token_id"], pad_token_id=hf["pad_token_id"],
            init_std=hf.get("initializer_range", 0.02))

    def to_json(self):
        return asdict(self)


# ---------------------------------------------------------------------------
# pieces


def rmsnorm(x, w, eps):
    """w ⊙ x / sqrt(mean(x²) + eps), in f32."""
    xf = x.float()
    return w.float() * (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps))


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)


def linear(n_in, n_out):
    return nn.Linear(n_in, n_out, bias=False)


def _no_autocast(device_type):
    # torch 1.13 and 2.x both have torch.autocast(device_type, enabled=...)
    return torch.autocast(device_type=device_type, enabled=False)


class SwiGLU(nn.Module):
    def __init__(self, h, inter):
        super().__init__()
        self.gate_proj = linear(h, inter)
        self.up_proj = linear(h, inter)
        self.down_proj = linear(inter, h)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


# ---------------------------------------------------------------------------
# §1 KDA


def kda_recurrent(q, k, v, g, beta):
    """models.md §1 step 5, token by token. q,k,v,g [B,h,T,D], beta [B,h,T].
    Returns o [B,h,T,D]. State S [B,h,D(key),D(value)]."""
    B, h, T, D = q.shape
    S = q.new_zeros(B, h, D, v.shape[-1])
    out = []
    for t in range(T):
        S = torch.exp(g[:, :, t]).unsqueeze(-1) * S  # decay along the key axis first
        pred = torch.einsum("bhkv,bhk->bhv", S, k[:, :, t])
        u = beta[:, :, t].unsqueeze(-1) * (v[:, :, t] - pred)
        S = S + k[:, :, t].unsqueeze(-1) * u.unsqueeze(-2)
        out.append(torch.einsum("bhkv,bhk->bhv", S, q[:, :, t]))
    return torch.stack(out, dim=2)


def kda_chunked(q, k, v, g, beta, chunk=16):
    """The same recurrence in chunks (WY form); exact up to rounding.

    Within a chunk, with G = inclusive cumsum of g and S0 the state at its
    start: S_t = Γ_t S0 + Σ_{j≤t} Γ_tΓ_j⁻¹ k_j u_jᵀ (Γ_t = diag e^{G_t}), so
      u_t + β_t Σ_{j<t} (k_t·Γ_tΓ_j⁻¹k_j) u_j = β_t (v_t − (Γ_t k_t)ᵀ S0)
    i.e. (I + A) U = diag(β)(V − K⁺S0) with A strictly lower triangular;
      o_t = (Γ_t q_t)ᵀ S0 + Σ_{j≤t} (q_t·Γ_tΓ_j⁻¹k_j) u_j
      S_end = Γ_end S0 + Σ_j (Γ_endΓ_j⁻¹ k_j) u_jᵀ.
    The decays Γ_tΓ_j⁻¹ = e^{G_t−G_j} (j ≤ t, ≤ 1) are formed pairwise, never
    as e^{G} and e^{−G} separately (that would overflow for strong decay).
    """
    B, h, T, D = q.shape
    Dv = v.shape[-1]
    pad = (-T) % chunk
    if pad:  # padded positions come last: they cannot change earlier outputs
        q, k, v, g = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g))
        beta = F.pad(beta, (0, pad))
    n = (T + pad) // chunk
    q, k, g = (x.reshape(B, h, n, chunk, D) for x in (q, k, g))
    v = v.reshape(B, h, n, chunk, Dv)
    beta = beta.reshape(B, h, n, chunk)

    G = torch.cumsum(g, dim=-2)  # [B,h,n,C,D]
    diff = G.unsqueeze(-2) - G.unsqueeze(-3)  # [...,t,j,D] = G_t - G_j
    idx = torch.arange(chunk, device=q.device)
    incl = (idx.unsqueeze(1) >= idx.unsqueeze(0))  # j <= t
    strict = (idx.unsqueeze(1) > idx.unsqueeze(0))  # j < t
    decay = torch.exp(diff.masked_fill(~incl.unsqueeze(-1), float("-inf")))
    kk = torch.einsum("bhntd,bhnjd,bhntjd->bhntj", k, k, decay)
    qk = torch.einsum("bhntd,bhnjd,bhntjd->bhntj", q, k, decay)
    A = (beta.unsqueeze(-1) * kk).masked_fill(~strict, 0.0)
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    M = torch.linalg.solve_triangular(A + eye, eye.expand_as(A), upper=False, unitriangular=True)
    eG = torch.exp(G)
    W = M @ (beta.unsqueeze(-1) * (k * eG))  # [B,h,n,C,D]
    Ut = M @ (beta.unsqueeze(-1) * v)  # [B,h,n,C,Dv]
    Qp = q * eG
    G_end = G[:, :, :, -1:, :]
    K_end = k * torch.exp(G_end - G)  # decay from j to the chunk's end
    g_end = torch.exp(G_end).squeeze(-2)  # [B,h,n,D]

    S = q.new_zeros(B, h, D, Dv)
    outs = []
    for c in range(n):
        U = Ut[:, :, c] - W[:, :, c] @ S
        outs.append(Qp[:, :, c] @ S + qk[:, :, c] @ U)
        S = g_end[:, :, c].unsqueeze(-1) * S + K_end[:, :, c].transpose(-1, -2) @ U
    o = torch.stack(outs, dim=2).reshape(B, h, n * chunk, Dv)
    return o[:, :, :T]


class KDA(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, nh, D, K = cfg.hidden_size, cfg.kda_num_heads, cfg.kda_head_dim, cfg.short_conv_kernel_size
        C = nh * D
        self.nh, self.D, self.K, self.eps = nh, D, K, cfg.rms_norm_eps
        self.q_proj, self.k_proj, self.v_proj = linear(H, C), linear(H, C), linear(H, C)
        bound = 1.0 / math.sqrt(K)  # nn.Conv1d's default init for a depthwise conv
        self.q_conv1d = nn.Parameter(torch.empty(C, 1, K).uniform_(-bound, bound))
        self.k_conv1d = nn.Parameter(torch.empty(C, 1, K).uniform_(-bound, bound))
        self.v_conv1d = nn.Parameter(torch.empty(C, 1, K).uniform_(-bound, bound))
        # decay: A in [1, 16] per head (fla's init), dt in [1e-3, 1e-1] per channel (Mamba's)
        self.A_log = nn.Parameter(torch.log(torch.empty(1, 1, nh, 1).uniform_(1, 16)))
        dt = torch.exp(torch.empty(C).uniform_(math.log(1e-3), math.log(1e-1)))
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus⁻¹(dt)
        self.f_a_proj, self.f_b_proj = linear(H, D), linear(D, C)
        self.b_proj = linear(H, nh)
        self.g_a_proj, self.g_b_proj = linear(H, D), linear(D, C)
        self.o_norm = RMSNorm(D, cfg.rms_norm_eps)
        self.o_proj = linear(C, H)
        self.recurrent = False  # tests switch to the token-by-token form

    def conv_silu(self, x, w):
        # causal depthwise: y_t[c] = Σ_i w[c][0][i] · x_{t-(K-1)+i}[c]
        y = F.conv1d(F.pad(x.transpose(1, 2), (self.K - 1, 0)), w.to(x.dtype), groups=w.shape[0])
        return F.silu(y.transpose(1, 2))

    def forward(self, x):
        B, T, _ = x.shape
        nh, D = self.nh, self.D
        q = self.conv_silu(self.q_proj(x), self.q_conv1d)
        k = self.conv_silu(self.k_proj(x), self.k_conv1d)
        v = self.conv_silu(self.v_proj(x), self.v_conv1d)
        z = self.f_b_proj(self.f_a_proj(x))
        b = self.b_proj(x)
        gate = self.g_b_proj(self.g_a_proj(x))
        with _no_autocast(x.device.type):
            heads = lambda t: t.float().reshape(B, T, nh, D).transpose(1, 2)  # [B,h,T,D]
            q, k, v = heads(q), heads(k), heads(v)
            q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6) * (D ** -0.5)
            k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
            a = torch.exp(self.A_log.float().reshape(-1)[:nh]).reshape(1, nh, 1, 1)
            g = -a * F.softplus(heads(z.float() + self.dt_bias.float()))  # softplus: z above 20
            beta = torch.sigmoid(b.float()).transpose(1, 2)  # [B,h,T]
            core = kda_recurrent if self.recurrent else kda_chunked
            o = core(q, k, v, g, beta).transpose(1, 2)  # [B,T,h,D]
            o = rmsnorm(o, self.o_norm.weight, self.eps) * torch.sigmoid(gate.float().reshape(B, T, nh, D))
        return self.o_proj(o.reshape(B, T, nh * D))


# ---------------------------------------------------------------------------
# §2 MLA (NoPE, expanded form)


class MLA(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, nh = cfg.hidden_size, cfg.num_attention_heads
        self.nh, self.nope, self.rope, self.vd, self.r = (nh, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
                                                          cfg.v_head_dim, cfg.kv_lora_rank)
        self.eps = cfg.rms_norm_eps
        self.q_proj = linear(H, nh * (self.nope + self.rope))
        self.kv_a_proj_with_mqa = linear(H, self.r + self.rope)
        self.kv_a_layernorm = RMSNorm(self.r, cfg.rms_norm_eps)
        self.kv_b_proj = linear(self.r, nh * (self.nope + self.vd))
        self.o_proj = linear(nh * self.vd, H)

    def forward(self, x):
        B, T, _ = x.shape
        nh, nope, rope, vd, r = self.nh, self.nope, self.rope, self.vd, self.r
        q = self.q_proj(x).reshape(B, T, nh, nope + rope)
        kv_a = self.kv_a_proj_with_mqa(x)
        c = self.kv_a_layernorm(kv_a[..., :r]).to(kv_a.dtype)
        k_pe = kv_a[..., r:]  # NoPE: no rotation, shared by the heads
        kv = self.kv_b_proj(c).reshape(B, T, nh, nope + vd)
        k = torch.cat([kv[..., :nope], k_pe.unsqueeze(2).expand(B, T, nh, rope)], dim=-1)
        v = kv[..., nope:]
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B,nh,T,*]
        score = (q @ k.transpose(-1, -2)).float() / math.sqrt(nope + rope)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        p = torch.softmax(score.masked_fill(~causal, float("-inf")), dim=-1)
        o = (p.to(v.dtype) @ v).transpose(1, 2).reshape(B, T, nh * vd)
        return self.o_proj(o)


# ---------------------------------------------------------------------------
# §3 MoE


class MoE(nn.Module):
    """Sigmoid router with e_score_correction_bias (a buffer, updated outside
    the optimiser: aux-loss-free balancing), top-k, renormalise, scale;
    routed SwiGLU experts stacked [E, I, H] (exported as experts.{e}.w1/w2/w3);
    shared SwiGLU experts on the same input."""

    def __init__(self, cfg):
        super().__init__()
        H, E, I = cfg.hidden_size, cfg.num_experts, cfg.moe_intermediate_size
        self.E, self.k, self.I = E, cfg.num_experts_per_token, I
        self.scaling, self.renorm = cfg.routed_scaling_factor, cfg.moe_renormalize
        self.gate = linear(H, E)
        self.register_buffer("e_score_correction_bias", torch.zeros(E))
        std = cfg.init_std
        self.w1 = nn.Parameter(torch.randn(E, I, H) * std)  # gate
        self.w3 = nn.Parameter(torch.randn(E, I, H) * std)  # up
        self.w2 = nn.Parameter(torch.randn(E, H, I) * std)  # down
        self.shared_experts = SwiGLU(H, I * cfg.num_shared_experts)
        self.impl = "dense"
        self.last_load = None  # tokens per expert in the last training forward

    def route(self, x):
        """x [N,H] -> (idx [N,k], weights [N,k]) in f32."""
        with _no_autocast(x.device.type):
            s = torch.sigmoid(x.float() @ self.gate.weight.float().t())
            c = s + self.e_score_correction_bias.float()
            idx = torch.topk(c, self.k, dim=-1).indices
            w = s.gather(-1, idx)
            if self.renorm:
                w = w / (w.sum(-1, keepdim=True) + 1e-20)
            w = w * self.scaling
        return idx, w

    def forward(self, x):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        N, H = x2.shape
        idx, w = self.route(x2)
        if self.training:
            self.last_load = torch.bincount(idx.reshape(-1), minlength=self.E).detach()
        if self.impl == "dense":
            comb = torch.zeros(N, self.E, device=x.device, dtype=torch.float32).scatter(1, idx, w)
            w13 = torch.cat([self.w1, self.w3], dim=1).reshape(self.E * 2 * self.I, H)
            hcat = (x2 @ w13.t()).reshape(N, self.E, 2, self.I)
            a = F.silu(hcat[:, :, 0]) * hcat[:, :, 1] * comb.to(hcat.dtype).unsqueeze(-1)
            w2 = self.w2.transpose(1, 2).reshape(self.E * self.I, H)
            y = a.reshape(N, self.E * self.I) @ w2
        else:
            y = torch.zeros(N, H, device=x.device, dtype=torch.float32)
            flat_e = idx.reshape(-1)
            flat_t = torch.arange(N, device=x.device).repeat_interleave(self.k)
            flat_w = w.reshape(-1)
            for e in range(self.E):
                sel = (flat_e == e).nonzero().squeeze(-1)
                if sel.numel() == 0:
                    continue
                t = flat_t[sel]
                xe = x2[t]
                he = F.silu(xe @ self.w1[e].t()) * (xe @ self.w3[e].t())
                y.index_add_(0, t, (he @ self.w2[e].t()).float() * flat_w[sel].unsqueeze(-1))
        return (y.float() + self.shared_experts(x2).float()).reshape(shape)


# ---------------------------------------------------------------------------
# the model


class Layer(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = KDA(cfg) if cfg.is_kda(i) else MLA(cfg)
        if i < cfg.first_k_dense_replace:
            self.mlp = SwiGLU(cfg.hidden_size, cfg.intermediate_size)
        else:
            self.block_sparse_moe = MoE(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        x = x + self.drop(self.self_attn(self.input_layernorm(x).to(x.dtype)).float())
        ffn = self.mlp if hasattr(self, "mlp") else self.block_sparse_moe
        return x + self.drop(ffn(self.post_attention_layernorm(x).to(x.dtype)).float())


class KimiMini(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([Layer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = linear(cfg.hidden_size, cfg.vocab_size)
        self.drop = nn.Dropout(cfg.dropout)
        self._init()

    def _init(self):
        std = self.cfg.init_std
        out_std = std / math.sqrt(2 * self.cfg.num_hidden_layers)
        for name, m in self.named_modules():
            if isinstance(m, nn.Linear):
                last = name.rsplit(".", 1)[-1]
                nn.init.normal_(m.weight, std=out_std if last in ("o_proj", "down_proj") else std)
        nn.init.normal_(self.embed_tokens.weight, std=std)
        for layer in self.layers:
            if hasattr(layer, "block_sparse_moe"):
                nn.init.normal_(layer.block_sparse_moe.w2, std=out_std)

    def moe_layers(self):
        return [l.block_sparse_moe for l in self.layers if hasattr(l, "block_sparse_moe")]

    def set_moe_impl(self, impl):
        for m in self.moe_layers():
            m.impl = impl

    def set_kda_recurrent(self, on):
        for l in self.layers:
            if isinstance(l.self_attn, KDA):
                l.self_attn.recurrent = on

    def forward(self, ids):
        """ids [B,T] -> logits [B,T,V] (f32)."""
        x = self.drop(self.embed_tokens(ids).float())
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x).to(x.dtype)).float()

    # -- HF names ------------------------------------------------------------

    def hf_state_dict(self):
        """{HF tensor name: tensor (f32, detached, CPU)} in model order."""
        out = {}
        sd = {k: v.detach().float().cpu() for k, v in self.state_dict().items()}
        out["model.embed_tokens.weight"] = sd["embed_tokens.weight"]
        for i, layer in enumerate(self.layers):
            p, P = f"layers.{i}.", f"model.layers.{i}."
            for k, v in sd.items():
                if not k.startswith(p):
                    continue
                rest = k[len(p):]
                if rest.startswith("block_sparse_moe.w"):
                    continue
                if rest == "block_sparse_moe.e_score_correction_bias":
                    rest = "block_sparse_moe.gate.e_score_correction_bias"
                if rest.startswith("self_attn.") and rest.endswith("_conv1d"):
                    rest += ".weight"  # HF: q_conv1d.weight (a Conv1d module there)
                out[P + rest] = v
            if hasattr(layer, "block_sparse_moe"):
                for e in range(self.cfg.num_experts):
                    for wn in ("w1", "w2", "w3"):
                        out[f"{P}block_sparse_moe.experts.{e}.{wn}.weight"] = sd[f"{p}block_sparse_moe.{wn}"][e]
        out["model.norm.weight"] = sd["norm.weight"]
        out["lm_head.weight"] = sd["lm_head.weight"]
        return out

    def load_hf_state_dict(self, tensors):
        sd = {}
        n_exp = self.cfg.num_experts
        for i, layer in enumerate(self.layers):
            P = f"model.layers.{i}."
            if hasattr(layer, "block_sparse_moe"):
                for wn in ("w1", "w2", "w3"):
                    sd[f"layers.{i}.block_sparse_moe.{wn}"] = torch.stack(
                        [tensors[f"{P}block_sparse_moe.experts.{e}.{wn}.weight"] for e in range(n_exp)])
        for name, t in tensors.items():
            if ".experts." in name:
                continue
            k = name[len("model."):] if name.startswith("model.") else name
            if k.endswith("_conv1d.weight"):
                k = k[:-len(".weight")]
            k = k.replace("block_sparse_moe.gate.e_score_correction_bias", "block_sparse_moe.e_score_correction_bias")
            sd[k] = t
        self.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)


def count_params(model):
    total = sum(p.numel() for p in model.parameters())
    experts = sum(m.w1.numel() + m.w2.numel() + m.w3.numel() for m in model.moe_layers())
    cfg = model.cfg
    per_expert = 3 * cfg.hidden_size * cfg.moe_intermediate_size
    n_moe = len(model.moe_layers())
    active = total - experts + n_moe * cfg.num_experts_per_token * per_expert
    return {"total": total, "routed_experts": experts, "active_per_token": active,
            "embedding_and_head": 2 * cfg.vocab_size * cfg.hidden_size}


# ---------------------------------------------------------------------------
# safetensors (written and read here: Debian has no `safetensors` package)

F32_NAMES = ("A_log", "dt_bias", "e_score_correction_bias")  # kept f32, as Kimi-Linear ships them


def export_dtype(name):
    return torch.float32 if name.rsplit(".", 1)[-1] in F32_NAMES else torch.bfloat16


def _tensor_bytes(t):
    t = t.contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        b = _tensor_bytes(t)
        header[name] = {"dtype": {torch.bfloat16: "BF16", torch.float32: "F32"}[t.dtype],
                        "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """{name: tensor} from one .safetensors file (BF16/F16/F32)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > len(data) - 8:
        raise ValueError(f"{path}: header length {n} beyond the file ({len(data)} bytes)")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    base = 8 + n
    dtypes = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        if not 0 <= a <= b <= len(data) - base:
            raise ValueError(f"{path}: tensor {name} offsets {a}..{b} outside the data")
        dt = dtypes[h["dtype"]]
        buf = bytearray(data[base + a:base + b])
        if dt == torch.bfloat16:
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(buf, dtype=dt)
        shape = list(h["shape"])
        if t.numel() != math.prod(shape):
            raise ValueError(f"{path}: tensor {name} has {t.numel()} values for shape {shape}")
        out[name] = t.reshape(shape)
    return out


def save_hf(model, directory, max_shard_bytes=10 * 1024 * 1024, extra_files=None):
    """Writes config.json, model-0000N-of-0000M.safetensors and the index."""
    os.makedirs(directory, exist_ok=True)
    tensors = {k: v.to(export_dtype(k)) for k, v in model.hf_state_dict().items()}
    shards, cur, cur_bytes = [], {}, 0
    for name, t in tensors.items():
        nb = t.numel() * t.element_size()
        if cur and cur_bytes + nb > max_shard_bytes:
            shards.append(cur)
            cur, cur_bytes = {}, 0
        cur[name] = t
        cur_bytes += nb
    shards.append(cur)
    weight_map, total = {}, 0
    for si, shard in enumerate(shards):
        fname = f"model-{si + 1:05d}-of-{len(shards):05d}.safetensors"
        write_safetensors(os.path.join(directory, fname), shard)
        for name, t in shard.items():
            weight_map[name] = fname
            total += t.numel() * t.element_size()
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(model.cfg.hf_config(), f, indent=2)
        f.write("\n")
    for name, text in (extra_files or {}).items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    return [f"model-{si + 1:05d}-of-{len(shards):05d}.safetensors" for si in range(len(shards))]


def load_hf_tensors(directory):
    with open(os.path.join(directory, "model.safetensors.index.json")) as f:
        index = json.load(f)
    tensors = {}
    for fname in sorted(set(index["weight_map"].values())):
        tensors.update(read_safetensors(os.path.join(directory, fname)))
    missing = set(index["weight_map"]) - set(tensors)
    if missing:
        raise ValueError(f"{directory}: tensors in the index but in no shard: {sorted(missing)[:5]}")
    return tensors


def load_hf(directory, dropout=0.0):
    with open(os.path.join(directory, "config.json")) as f:
        cfg = Config.from_hf(json.load(f))
    cfg.dropout = dropout
    model = KimiMini(cfg)
    model.load_hf_state_dict(load_hf_tensors(directory))
    return model
