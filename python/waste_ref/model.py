"""Kimi-family forward pass (Kimi-Linear, Kimi K3 text), docs/models.md §0–§6.

A deliberately plain reference: the whole token sequence is processed at once,
float64 by default, projections batched over tokens, KDA as the explicit
token-by-token recurrence, MLA in the expanded (non-absorbed) form, MoE routed
token by token with dense (dequantised) experts.

What this file owns: the math. What it does not: reading bytes (container.py),
sessions / incremental decode / caching (not needed for a reference: greedy
generation simply re-runs the whole sequence).

Config keys read (see python/README.md for the list the C++ side should share):
top-level config unless noted; KDA keys under `linear_attn_config`, falling
back to top level.
"""

import math

import torch

from .container import Container, ContainerError


# ---------------------------------------------------------------------------
# §0 conventions


def rmsnorm(x, w, eps):
    """w ⊙ x / sqrt(mean(x²) + eps), over the last axis; w may be None."""
    y = x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps)
    return y if w is None else y * w


def sigmoid(z):
    return 1.0 / (1.0 + torch.exp(-z))


def silu(z):
    return z * sigmoid(z)


def softplus(z):
    # log(1+e^z), taken as z when z > 20
    return torch.where(z > 20, z, torch.log1p(torch.exp(torch.clamp(z, max=20.0))))


class Activation:
    """act(a, b) of a gated FFN: SwiGLU `silu(a)·b` or K3's SiTU."""

    def __init__(self, cfg):
        name = str(cfg.get("hidden_act", "silu") or "silu").lower()
        if name in ("silu", "swish"):
            self.kind = "silu"
        elif name == "situ":
            self.kind = "situ"
            self.beta = float(cfg.get("activation_situ_beta", 4.0))
            self.lam = float(cfg.get("activation_situ_linear_beta", 25.0))
            if not self.beta > 0:
                raise ValueError(f"activation_situ_beta {self.beta} must be > 0")
        else:
            raise ValueError(f"hidden_act {name!r} not supported by this reference")

    def __call__(self, a, b):
        if self.kind == "silu":
            return silu(a) * b
        # SiTU: β·tanh(a/β)·σ(a) · (λ>0 ? λ·tanh(b/λ) : b)
        left = self.beta * torch.tanh(a / self.beta) * sigmoid(a)
        right = self.lam * torch.tanh(b / self.lam) if self.lam > 0 else b
        return left * right


def _get(cfg, *names, default=None):
    for n in names:
        if n in cfg and cfg[n] is not None:
            return cfg[n]
    return default


# ---------------------------------------------------------------------------
# the model


class KimiModel:
    """Dense-weights Kimi-family model over a Container.

    forward(ids) -> (logits [T, V], hidden [n_layers+1, T, H]) where hidden[0]
    is the embedding and hidden[L+1] the residual stream after layer L (with
    Attention Residuals: the `x = ps` value at the end of layer L).
    """

    def __init__(self, container, dtype=torch.float64):
        if not isinstance(container, Container):
            container = Container(container)
        self.c = container
        self.cfg = cfg = container.config
        self.dtype = dtype
        self.H = int(cfg["hidden_size"])
        self.n_layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.first_dense = int(cfg.get("first_k_dense_replace", 0))
        self.act = Activation(cfg)

        lac = cfg.get("linear_attn_config") or {}
        self.lac = lac
        kda_layers = set(int(i) for i in (lac.get("kda_layers") or []))  # 1-based
        self.is_kda = [(i + 1) in kda_layers for i in range(self.n_layers)]

        # KDA
        self.kda_heads = int(_get(lac, "num_heads", default=0) or 0)
        self.kda_dim = int(_get(lac, "head_dim", default=0) or 0)
        self.conv_k = int(_get(lac, "short_conv_kernel_size", default=4))
        self.gate_lower_bound = _get(lac, "gate_lower_bound", default=_get(cfg, "gate_lower_bound"))
        if self.gate_lower_bound is not None:
            self.gate_lower_bound = float(self.gate_lower_bound)
            if not self.gate_lower_bound < 0:
                raise ValueError(f"gate_lower_bound {self.gate_lower_bound} must be < 0")
        self.full_rank_gate = _get(lac, "use_full_rank_gate", default=_get(cfg, "use_full_rank_gate"))

        # MLA
        if cfg.get("mla_use_nope") is False:
            raise ValueError("mla_use_nope false (rotary MLA) is not part of the Kimi family reference")
        self.n_heads = int(cfg.get("num_attention_heads", 0) or 0)
        self.nope = int(cfg.get("qk_nope_head_dim", 0) or 0)
        self.rope = int(cfg.get("qk_rope_head_dim", 0) or 0)
        self.vd = int(cfg.get("v_head_dim", 0) or 0)
        self.kv_lora = int(cfg.get("kv_lora_rank", 0) or 0)
        self.q_lora = int(cfg.get("q_lora_rank") or 0)
        self.mla_gate = cfg.get("mla_use_output_gate")

        # MoE
        self.n_experts = int(cfg.get("num_experts", 0) or 0)
        self.top_k = int(_get(cfg, "num_experts_per_token", "num_experts_per_tok", default=0))
        self.n_group = int(_get(cfg, "n_group", "num_expert_group", default=1))
        self.topk_group = int(_get(cfg, "topk_group", default=self.n_group))
        self.renormalize = bool(_get(cfg, "moe_renormalize", "norm_topk_prob", default=True))
        self.scaling = float(_get(cfg, "routed_scaling_factor", default=1.0))
        router_act = str(_get(cfg, "moe_router_activation_func", default="sigmoid")).lower()
        if router_act != "sigmoid":
            raise ValueError(f"moe_router_activation_func {router_act!r}: only sigmoid is the Kimi router")
        self.latent = _get(cfg, "routed_expert_hidden_size")
        self.latent_norm_cfg = cfg.get("latent_moe_use_norm")

        # Attention Residuals
        self.attn_res_block = int(_get(cfg, "attn_res_block_size", default=0))

        self.tie = bool(cfg.get("tie_word_embeddings", False))
        self._w = {}

    # -- weights -----------------------------------------------------------

    def w(self, name, required=True):
        if name in self._w:
            return self._w[name]
        t = self.c.tensors.get(name)
        if t is None:
            if required:
                raise ContainerError(f"tensor {self.c.prefix}{name} missing")
            return None
        tt = torch.from_numpy(t).to(self.dtype)
        self._w[name] = tt
        return tt

    def lw(self, L, name, required=True):
        return self.w(f"model.layers.{L}.{name}", required)

    def expert(self, L, e):
        key = ("expert", L, e)
        if key not in self._w:
            self._w[key] = tuple(torch.from_numpy(m).to(self.dtype) for m in self.c.expert(L, e))
        return self._w[key]

    # -- §1 KDA --------------------------------------------------------------

    def kda(self, L, X):
        """X [T, H] (normed) -> [T, H]."""
        T = X.shape[0]
        nh, D, K = self.kda_heads, self.kda_dim, self.conv_k
        C = nh * D
        p = "self_attn."

        def conv_silu(inp, wconv):
            # causal depthwise conv: y_t[c] = Σ_i w[c][0][i] · in_{t-(K-1)+i}[c]
            w = wconv.reshape(C, K)
            padded = torch.cat([torch.zeros(K - 1, C, dtype=inp.dtype), inp], dim=0)
            y = torch.zeros_like(inp)
            for i in range(K):
                y = y + w[:, i] * padded[i:i + T]
            return silu(y)

        q = conv_silu(X @ self.lw(L, p + "q_proj.weight").T, self.lw(L, p + "q_conv1d.weight"))
        k = conv_silu(X @ self.lw(L, p + "k_proj.weight").T, self.lw(L, p + "k_conv1d.weight"))
        v = conv_silu(X @ self.lw(L, p + "v_proj.weight").T, self.lw(L, p + "v_conv1d.weight"))
        q = q.reshape(T, nh, D)
        k = k.reshape(T, nh, D)
        v = v.reshape(T, nh, D)
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        q = q * (D ** -0.5)

        # decay, log space, per channel
        z = (X @ self.lw(L, p + "f_a_proj.weight").T) @ self.lw(L, p + "f_b_proj.weight").T
        z = (z + self.lw(L, p + "dt_bias").reshape(C)).reshape(T, nh, D)
        a = torch.exp(self.lw(L, p + "A_log").reshape(-1)[:nh]).reshape(1, nh, 1)  # one per head
        if self.gate_lower_bound is None:
            g = -a * softplus(z)  # Kimi-Linear
        else:
            g = self.gate_lower_bound * sigmoid(a * z)  # K3: lb·σ(a·z)
        beta = sigmoid(X @ self.lw(L, p + "b_proj.weight").T)  # [T, nh]

        S = torch.zeros(nh, D, D, dtype=X.dtype)  # [head][key][value]
        o = torch.zeros(T, nh, D, dtype=X.dtype)
        for t in range(T):
            S = torch.exp(g[t]).unsqueeze(-1) * S  # decay along the key axis first
            pred = torch.einsum("hkv,hk->hv", S, k[t])  # Sᵀk with the decayed state
            u = beta[t].unsqueeze(-1) * (v[t] - pred)
            S = S + k[t].unsqueeze(-1) * u.unsqueeze(1)  # S += k uᵀ
            o[t] = torch.einsum("hkv,hk->hv", S, q[t])  # Sᵀq

        o = rmsnorm(o, self.lw(L, p + "o_norm.weight"), self.eps)
        g_full = self.lw(L, p + "g_proj.weight", required=False)
        if self.full_rank_gate is True and g_full is None:
            raise ContainerError(f"layer {L}: use_full_rank_gate but no g_proj")
        if g_full is not None and self.full_rank_gate is not False:
            gate = X @ g_full.T
        else:
            gate = (X @ self.lw(L, p + "g_a_proj.weight").T) @ self.lw(L, p + "g_b_proj.weight").T
        o = o * sigmoid(gate.reshape(T, nh, D))
        return o.reshape(T, C) @ self.lw(L, p + "o_proj.weight").T

    # -- §2 MLA (expanded form) ----------------------------------------------

    def mla(self, L, X):
        T = X.shape[0]
        nh, nope, rope, vd, r = self.n_heads, self.nope, self.rope, self.vd, self.kv_lora
        p = "self_attn."
        if not self.q_lora:
            q = X @ self.lw(L, p + "q_proj.weight").T
        else:  # q_lora_rank set: low-rank query with its own norm
            qa = X @ self.lw(L, p + "q_a_proj.weight").T
            q = rmsnorm(qa, self.lw(L, p + "q_a_layernorm.weight"), self.eps) @ self.lw(L, p + "q_b_proj.weight").T
        q = q.reshape(T, nh, nope + rope)

        kv_a = X @ self.lw(L, p + "kv_a_proj_with_mqa.weight").T  # [T, r + rope]
        c = rmsnorm(kv_a[:, :r], self.lw(L, p + "kv_a_layernorm.weight"), self.eps)
        k_pe = kv_a[:, r:]  # shared by all heads; NoPE: no rotation
        kv = (c @ self.lw(L, p + "kv_b_proj.weight").T).reshape(T, nh, nope + vd)
        k_nope, v = kv[..., :nope], kv[..., nope:]
        k = torch.cat([k_nope, k_pe.unsqueeze(1).expand(T, nh, rope)], dim=-1)  # [T, nh, nope+rope]

        scale = 1.0 / math.sqrt(nope + rope)
        o = torch.zeros(T, nh, vd, dtype=X.dtype)
        for t in range(T):
            score = torch.einsum("hd,shd->hs", q[t], k[:t + 1]) * scale  # causal: positions 0..t
            pr = torch.softmax(score, dim=-1)
            o[t] = torch.einsum("hs,shd->hd", pr, v[:t + 1])

        g_proj = self.lw(L, p + "g_proj.weight", required=False)
        if self.mla_gate is True and g_proj is None:
            raise ContainerError(f"layer {L}: mla_use_output_gate but no g_proj")
        if g_proj is not None and self.mla_gate is not False:
            o = o * sigmoid(X @ g_proj.T).reshape(T, nh, vd)
        return o.reshape(T, nh * vd) @ self.lw(L, p + "o_proj.weight").T

    # -- §3 FFNs -------------------------------------------------------------

    def swiglu(self, X, gate, up, down):
        return self.act(X @ gate.T, X @ up.T) @ down.T

    def dense_ffn(self, L, X):
        p = "mlp."
        return self.swiglu(X, self.lw(L, p + "gate_proj.weight"), self.lw(L, p + "up_proj.weight"),
                           self.lw(L, p + "down_proj.weight"))

    def route(self, s, c):
        """One token: scores s (unbiased), selection scores c -> [(expert, weight)]."""
        E, k = self.n_experts, self.top_k
        c = [float(x) for x in c]
        allowed = [True] * E
        if self.n_group > 1:
            if E % self.n_group:
                raise ValueError(f"num_experts {E} not divisible by n_group {self.n_group}")
            gs = E // self.n_group
            gscore = []
            for gi in range(self.n_group):
                members = sorted(c[gi * gs:(gi + 1) * gs], reverse=True)
                gscore.append(sum(members[:2]))
            keep = sorted(range(self.n_group), key=lambda gi: (-gscore[gi], gi))[:self.topk_group]
            for gi in range(self.n_group):
                if gi not in keep:
                    for e in range(gi * gs, (gi + 1) * gs):
                        allowed[e] = False
        cand = [e for e in range(E) if allowed[e]]
        idx = sorted(cand, key=lambda e: (-c[e], e))[:k]  # ties -> lower id
        w = [float(s[e]) for e in idx]  # weights use the unbiased scores
        if self.renormalize:
            tot = sum(w) + 1e-20
            w = [x / tot for x in w]
        w = [x * self.scaling for x in w]
        return list(zip(idx, w))

    def moe(self, L, X):
        T = X.shape[0]
        p = "block_sparse_moe."
        s = sigmoid(X @ self.lw(L, p + "gate.weight").T)  # [T, E]
        bias = self.lw(L, p + "gate.e_score_correction_bias", required=False)
        c = s + bias.reshape(1, -1) if bias is not None else s

        down_lat = self.lw(L, p + "routed_expert_down_proj.weight", required=False)
        up_lat = self.lw(L, p + "routed_expert_up_proj.weight", required=False)
        norm_lat = self.lw(L, p + "routed_expert_norm.weight", required=False)
        if self.latent is not None and (down_lat is None or up_lat is None):
            raise ContainerError(f"layer {L}: routed_expert_hidden_size set but latent projections missing")
        if self.latent_norm_cfg is True and norm_lat is None:
            raise ContainerError(f"layer {L}: latent_moe_use_norm but no routed_expert_norm")
        if self.latent_norm_cfg is False:
            norm_lat = None
        Xe = X @ down_lat.T if down_lat is not None else X

        Y = torch.zeros(T, Xe.shape[1], dtype=X.dtype)
        self.last_routing = getattr(self, "last_routing", {})
        routes = []
        for t in range(T):
            sel = self.route(s[t].tolist(), c[t].tolist())
            routes.append(sel)
            for e, wgt in sel:
                gate, up, down = self.expert(L, e)
                Y[t] += wgt * (down @ self.act(gate @ Xe[t], up @ Xe[t]))
        self.last_routing[L] = routes
        if down_lat is not None:
            if norm_lat is not None:
                Y = rmsnorm(Y, norm_lat, self.eps)
            Y = Y @ up_lat.T

        sg = self.lw(L, p + "shared_experts.gate_proj.weight", required=False)
        if sg is not None:
            Y = Y + self.swiglu(X, sg, self.lw(L, p + "shared_experts.up_proj.weight"),
                                self.lw(L, p + "shared_experts.down_proj.weight"))
        return Y

    # -- layer pieces --------------------------------------------------------

    def attn(self, L, X):
        return self.kda(L, X) if self.is_kda[L] else self.mla(L, X)

    def ffn(self, L, X):
        return self.dense_ffn(L, X) if L < self.first_dense else self.moe(L, X)

    def attn_res(self, V, norm_w, proj_w):
        """§6: Σ_i softmax_i(Σ_j rmsnorm(v_i)_j·norm_w_j·proj_w_j) · v_i, per token.

        V: list of [T, H]."""
        stack = torch.stack(V, dim=0)  # [n, T, H]
        score = (rmsnorm(stack, None, self.eps) * (norm_w * proj_w)).sum(-1)  # [n, T]
        pr = torch.softmax(score, dim=0)
        return (pr.unsqueeze(-1) * stack).sum(0)

    # -- forward -------------------------------------------------------------

    def embed(self, ids):
        E = self.w("model.embed_tokens.weight")
        V = E.shape[0]
        for i in ids:
            if not 0 <= i < V:
                raise ValueError(f"token id {i} outside vocabulary of {V}")
        return E[torch.tensor(ids, dtype=torch.long)].clone()

    def lm_head(self):
        head = self.w("lm_head.weight", required=not self.tie)
        if head is None:
            head = self.w("model.embed_tokens.weight")
        return head

    def forward(self, ids, image_rows=None, pad=None):
        """image_rows: [N][H] rows spliced at the first N positions whose id is
        `pad`, in place of the table's row (vision.md §4)."""
        x = self.embed(list(ids))
        if image_rows is not None:
            at = [i for i, t in enumerate(ids) if t == pad][:image_rows.shape[0]]
            x[at] = image_rows[:len(at)].to(x.dtype)
        hidden = [x.clone()]
        B = self.attn_res_block
        ln_in = lambda L: self.lw(L, "input_layernorm.weight")
        ln_post = lambda L: self.lw(L, "post_attention_layernorm.weight")
        if B <= 0:
            for L in range(self.n_layers):
                x = x + self.attn(L, rmsnorm(x, ln_in(L), self.eps))
                x = x + self.ffn(L, rmsnorm(x, ln_post(L), self.eps))
                hidden.append(x.clone())
        else:
            blocks = []
            ps_live = True
            for L in range(self.n_layers):
                ps = x
                if blocks:
                    x = self.attn_res(blocks + [ps], self.lw(L, "self_attention_res_norm.weight"),
                                      self.lw(L, "self_attention_res_proj.weight"))
                if L % B == 0:
                    blocks.append(ps)
                    ps_live = False  # ps restarts
                h = self.attn(L, rmsnorm(x, ln_in(L), self.eps))
                ps = (ps + h) if ps_live else h
                ps_live = True
                x = self.attn_res(blocks + [ps], self.lw(L, "mlp_res_norm.weight"),
                                  self.lw(L, "mlp_res_proj.weight"))
                f = self.ffn(L, rmsnorm(x, ln_post(L), self.eps))
                ps = ps + f
                x = ps
                hidden.append(x.clone())
            if blocks:
                x = self.attn_res(blocks + [x], self.w("model.output_attn_res_norm.weight"),
                                  self.w("model.output_attn_res_proj.weight"))
        logits = rmsnorm(x, self.w("model.norm.weight"), self.eps) @ self.lm_head().T
        return logits, torch.stack(hidden, dim=0)

    def last_logits(self, ids):
        logits, _ = self.forward(ids)
        return logits[-1]

    def greedy(self, ids, n, stop_at_eos=False):
        """Greedy continuation of n tokens (argmax, ties -> lower id); re-runs the
        whole sequence each step (a reference has no cache to get wrong)."""
        seq = list(ids)
        out = []
        eos = self.cfg.get("eos_token_id")
        for _ in range(n):
            logits = self.last_logits(seq)
            nxt = argmax_first(logits)
            out.append(nxt)
            seq.append(nxt)
            if stop_at_eos and nxt == eos:
                break
        return out


def argmax_first(v):
    vals = v.tolist()
    best = 0
    for i in range(1, len(vals)):
        if vals[i] > vals[best]:
            best = i
    return best


def load(path, dtype=torch.float64, verify_crc=False):
    return KimiModel(Container(path, verify_crc=verify_crc), dtype=dtype)
