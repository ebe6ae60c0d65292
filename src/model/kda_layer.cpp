// kda_layer.cpp — the delta-rule layers over a chunk: Kimi Delta Attention
// (models.md §1) and Qwen3.5's Gated DeltaNet (families-2026.md §1.5), one
// recurrence (kernels/kda_step.h). The projections run over the whole chunk,
// the short convolution and the recurrence token by token, heads in parallel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/kda_step.h"
#include "model/forward.h"

namespace waste::model {

using kernels::sigmoid;

namespace {

// Causal depthwise conv over [ring (kernel-1 inputs, oldest first) | current]
// then silu, for each token of the chunk in order; the ring moves along.
// values: [T][ld], first `channels` used, replaced by the outputs.
void short_conv_silu(kernels::Isa isa, float* values, size_t ld, size_t tokens, float* ring, const std::vector<float>& taps,
                     size_t channels, int kernel) {
    const int history = kernel - 1;
    for (size_t t = 0; t < tokens; ++t) {
        float* in = values + t * ld;
        for (size_t c = 0; c < channels; ++c) {
            const float* w = taps.data() + c * kernel;
            float y = w[history] * in[c];
            for (int i = 0; i < history; ++i) y += w[i] * ring[static_cast<size_t>(i) * channels + c];
            for (int i = 0; i + 1 < history; ++i)
                ring[static_cast<size_t>(i) * channels + c] = ring[static_cast<size_t>(i + 1) * channels + c];
            if (history > 0) ring[static_cast<size_t>(history - 1) * channels + c] = in[c];
            in[c] = y;
        }
        kernels::mul_sigmoid(isa, in, in, channels);  // silu(y) = y·σ(y)
    }
}

void l2_normalize(float* v, size_t n, float extra_scale) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum + 1e-6)) * extra_scale;
    for (size_t i = 0; i < n; ++i) v[i] *= inv;
}

}  // namespace

void kda_chunk(ForwardContext& ctx, const KdaWeights& w, LayerState& s, const float* x, size_t tokens, float* out) {
    ProfileScope scope(ctx.profile, ProfileCategory::kda);
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t heads = c.kda_heads, d = c.kda_head_dim, channels = heads * d, hidden = c.hidden;
    const size_t ld = ws.attn_width, lds = ws.small_width;
    const int kernel = c.conv_kernel;
    float* q = ws.q.data();
    float* k = ws.k.data();
    float* v = ws.v.data();
    project(ctx, *w.q, x, hidden, tokens, q, ld);
    project(ctx, *w.k, x, hidden, tokens, k, ld);
    project(ctx, *w.v, x, hidden, tokens, v, ld);
    const size_t ring = static_cast<size_t>(std::max(kernel - 1, 0)) * channels;
    const kernels::Isa isa = kernels::active_isa();
    short_conv_silu(isa, q, ld, tokens, s.conv.data(), w.conv_q, channels, kernel);
    short_conv_silu(isa, k, ld, tokens, s.conv.data() + ring, w.conv_k, channels, kernel);
    short_conv_silu(isa, v, ld, tokens, s.conv.data() + 2 * ring, w.conv_v, channels, kernel);
    const float q_scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (size_t t = 0; t < tokens; ++t)
        for (size_t h = 0; h < heads; ++h) {
            l2_normalize(q + t * ld + h * d, d, q_scale);
            l2_normalize(k + t * ld + h * d, d, 1.0f);
        }
    // decay in log space, per channel
    float* decay = ws.decay.data();
    project(ctx, *w.f_a, x, hidden, tokens, ws.small.data(), lds);
    project(ctx, *w.f_b, ws.small.data(), lds, tokens, decay, ld);
    for (size_t t = 0; t < tokens; ++t)
        for (size_t ch = 0; ch < channels; ++ch) {
            float& g = decay[t * ld + ch];
            const float z = g + w.dt_bias[ch];
            const float a = w.a[ch / d];
            g = c.gate_lower_bound < 0 ? static_cast<float>(c.gate_lower_bound) * sigmoid(a * z) : -a * kernels::softplus(z);
            g = std::exp(g);  // the recurrence uses the decay factor e^g
        }
    float* beta = ws.beta.data();
    project(ctx, *w.b, x, hidden, tokens, beta, heads);
    for (size_t i = 0; i < tokens * heads; ++i) beta[i] = sigmoid(beta[i]);
    float* gate = ws.gate.data();
    if (w.g) project(ctx, *w.g, x, hidden, tokens, gate, ld);
    else {
        project(ctx, *w.g_a, x, hidden, tokens, ws.small.data(), lds);
        project(ctx, *w.g_b, ws.small.data(), lds, tokens, gate, ld);
    }
    // per head over the chunk's tokens (kernels/kda_step.h):
    // S ← diag(e^g) S; u = β (v − Sᵀk); S += k uᵀ; o = Sᵀ q; then o's norm and gate
    float* head_out = ws.head_out.data();
    const float eps = static_cast<float>(c.rms_eps);
    ctx.pool.parallel_for(heads, [&](size_t begin, size_t end) {
        std::vector<float> scratch(kernels::kda_scratch_floats(d));
        for (size_t h = begin; h < end; ++h) {
            kernels::KdaHeadRun run;
            run.q = q + h * d;
            run.k = k + h * d;
            run.v = v + h * d;
            run.decay = decay + h * d;
            run.beta = beta + h;
            run.out = head_out + h * d;
            run.ld = ld;
            run.beta_stride = heads;
            run.tokens = tokens;
            kernels::kda_head_run(isa, s.kda.data() + h * d * d, d, run, scratch.data());  // state [D keys][D values]
            for (size_t t = 0; t < tokens; ++t) {
                float* oh = head_out + t * ld + h * d;
                kernels::rmsnorm(isa, oh, w.o_norm.data(), eps, d, oh);
                kernels::mul_sigmoid(isa, oh, gate + t * ld + h * d, d);
            }
        }
    });
    project(ctx, *w.o, head_out, ld, tokens, out, hidden);
}

// Gated DeltaNet: KDA's recurrence with the decay a scalar per value head
// (broadcast over its D keys, so the same kernel runs it), heads(K) query /
// key heads shared by v_heads / heads value heads each (value head j reads
// key head j / r, HF's order), one conv over [q | k | v], and the output
// RMSNorm(o) · silu(z).
void gdn_chunk(ForwardContext& ctx, const GdnWeights& w, LayerState& s, const float* x, size_t tokens, float* out) {
    ProfileScope scope(ctx.profile, ProfileCategory::kda);
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t d = c.kda_head_dim, k_heads = c.kda_heads, v_heads = c.kda_v_heads, hidden = c.hidden;
    const size_t kd = k_heads * d, vd = v_heads * d, group = v_heads / k_heads, ld = ws.attn_width;
    const kernels::Isa isa = kernels::active_isa();
    float* qkv = ws.q.data();  // [T][q (kd) | k (kd) | v (vd)]
    project(ctx, *w.qkv, x, hidden, tokens, qkv, ld);
    short_conv_silu(isa, qkv, ld, tokens, s.conv.data(), w.conv, 2 * kd + vd, c.conv_kernel);
    const float q_scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (size_t t = 0; t < tokens; ++t)
        for (size_t h = 0; h < k_heads; ++h) {
            l2_normalize(qkv + t * ld + h * d, d, q_scale);
            l2_normalize(qkv + t * ld + kd + h * d, d, 1.0f);
        }
    // the decay factor e^g, g = -exp(A_log) · softplus(a + dt_bias), one per
    // value head, written out over the head's D keys for the kernel
    float* alpha = ws.k.data();  // [T][v_heads]
    project(ctx, *w.a, x, hidden, tokens, alpha, ld);
    float* decay = ws.decay.data();
    for (size_t t = 0; t < tokens; ++t)
        for (size_t j = 0; j < v_heads; ++j) {
            const float g = -w.a_rate[j] * kernels::softplus(alpha[t * ld + j] + w.dt_bias[j]);
            std::fill_n(decay + t * ld + j * d, d, std::exp(g));
        }
    float* beta = ws.beta.data();
    project(ctx, *w.b, x, hidden, tokens, beta, v_heads);
    for (size_t i = 0; i < tokens * v_heads; ++i) beta[i] = sigmoid(beta[i]);
    float* z = ws.gate.data();
    project(ctx, *w.z, x, hidden, tokens, z, ld);
    float* head_out = ws.head_out.data();
    const float eps = static_cast<float>(c.rms_eps);
    ctx.pool.parallel_for(v_heads, [&](size_t begin, size_t end) {
        std::vector<float> scratch(kernels::kda_scratch_floats(d));
        for (size_t j = begin; j < end; ++j) {
            const size_t key_head = j / group;
            kernels::KdaHeadRun run;
            run.q = qkv + key_head * d;
            run.k = qkv + kd + key_head * d;
            run.v = qkv + 2 * kd + j * d;
            run.decay = decay + j * d;
            run.beta = beta + j;
            run.out = head_out + j * d;
            run.ld = ld;
            run.beta_stride = v_heads;
            run.tokens = tokens;
            kernels::kda_head_run(isa, s.kda.data() + j * d * d, d, run, scratch.data());  // state [D keys][D values]
            for (size_t t = 0; t < tokens; ++t) {
                float* oh = head_out + t * ld + j * d;
                float* zh = z + t * ld + j * d;
                kernels::rmsnorm(isa, oh, w.norm.data(), eps, d, oh);
                kernels::mul_sigmoid(isa, zh, zh, d);  // silu(z) = z·σ(z)
                for (size_t i = 0; i < d; ++i) oh[i] *= zh[i];
            }
        }
    });
    project(ctx, *w.out, head_out, ld, tokens, out, hidden);
}

}  // namespace waste::model
