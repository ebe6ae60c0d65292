// kda_layer.cpp — one decode step of Kimi Delta Attention (models.md §1).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/trunk_matvec.h"
#include "model/forward.h"

namespace waste::model {

using kernels::sigmoid;

namespace {

// Causal depthwise conv over [ring (kernel-1 oldest first) | current], then
// silu; the ring shifts by one. values: [C] in, replaced by the output.
void short_conv_silu(float* values, float* ring, const std::vector<float>& taps, size_t channels, int kernel) {
    const int history = kernel - 1;
    for (size_t c = 0; c < channels; ++c) {
        const float* w = taps.data() + c * kernel;
        float y = w[history] * values[c];
        for (int i = 0; i < history; ++i) y += w[i] * ring[static_cast<size_t>(i) * channels + c];
        for (int i = 0; i + 1 < history; ++i) ring[static_cast<size_t>(i) * channels + c] = ring[static_cast<size_t>(i + 1) * channels + c];
        if (history > 0) ring[static_cast<size_t>(history - 1) * channels + c] = values[c];
        values[c] = kernels::silu(y);
    }
}

void l2_normalize(float* v, size_t n, float extra_scale) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]) * v[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum + 1e-6)) * extra_scale;
    for (size_t i = 0; i < n; ++i) v[i] *= inv;
}

}  // namespace

void kda_step(ForwardContext& ctx, const KdaWeights& w, LayerState& s, const float* x, float* out) {
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t heads = c.kda_heads, d = c.kda_head_dim, channels = heads * d;
    const int kernel = c.conv_kernel;
    float* q = ws.q.data();
    float* k = ws.k.data();
    float* v = ws.v.data();
    kernels::matvec(ctx.pool, *w.q, x, q);
    kernels::matvec(ctx.pool, *w.k, x, k);
    kernels::matvec(ctx.pool, *w.v, x, v);
    const size_t ring = static_cast<size_t>(std::max(kernel - 1, 0)) * channels;
    short_conv_silu(q, s.conv.data(), w.conv_q, channels, kernel);
    short_conv_silu(k, s.conv.data() + ring, w.conv_k, channels, kernel);
    short_conv_silu(v, s.conv.data() + 2 * ring, w.conv_v, channels, kernel);
    const float q_scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (size_t h = 0; h < heads; ++h) {
        l2_normalize(q + h * d, d, q_scale);
        l2_normalize(k + h * d, d, 1.0f);
    }
    // decay (log space, per channel)
    float* decay = ws.decay.data();
    kernels::matvec(ctx.pool, *w.f_a, x, ws.small.data());
    kernels::matvec(ctx.pool, *w.f_b, ws.small.data(), decay);
    for (size_t ch = 0; ch < channels; ++ch) {
        const float z = decay[ch] + w.dt_bias[ch];
        const float a = w.a[ch / d];
        decay[ch] = c.gate_lower_bound < 0 ? static_cast<float>(c.gate_lower_bound) * sigmoid(a * z)
                                           : -a * kernels::softplus(z);
    }
    float* beta = ws.beta.data();
    kernels::matvec(ctx.pool, *w.b, x, beta);
    for (size_t h = 0; h < heads; ++h) beta[h] = sigmoid(beta[h]);
    // output gate
    float* gate = ws.gate.data();
    if (w.g) kernels::matvec(ctx.pool, *w.g, x, gate);
    else {
        kernels::matvec(ctx.pool, *w.g_a, x, ws.small.data());
        kernels::matvec(ctx.pool, *w.g_b, ws.small.data(), gate);
    }
    // recurrence per head: S ← diag(e^g) S; u = β (v − Sᵀk); S += k uᵀ; o = Sᵀ q
    float* head_out = ws.head_out.data();
    ctx.pool.parallel_for(heads, [&](size_t begin, size_t end) {
        std::vector<float> u(d);
        for (size_t h = begin; h < end; ++h) {
            float* state = s.kda.data() + h * d * d;  // [D keys][D values]
            const float* kh = k + h * d;
            const float* qh = q + h * d;
            const float* vh = v + h * d;
            const float* gh = decay + h * d;
            for (size_t i = 0; i < d; ++i) {
                const float factor = std::exp(gh[i]);
                for (size_t j = 0; j < d; ++j) state[i * d + j] *= factor;
            }
            for (size_t j = 0; j < d; ++j) u[j] = 0;
            for (size_t i = 0; i < d; ++i)
                for (size_t j = 0; j < d; ++j) u[j] += state[i * d + j] * kh[i];
            for (size_t j = 0; j < d; ++j) u[j] = beta[h] * (vh[j] - u[j]);
            float* oh = head_out + h * d;
            for (size_t j = 0; j < d; ++j) oh[j] = 0;
            for (size_t i = 0; i < d; ++i) {
                for (size_t j = 0; j < d; ++j) {
                    state[i * d + j] += kh[i] * u[j];
                    oh[j] += state[i * d + j] * qh[i];
                }
            }
            kernels::rmsnorm(oh, w.o_norm.data(), static_cast<float>(c.rms_eps), d, oh);
            for (size_t j = 0; j < d; ++j) oh[j] *= sigmoid(gate[h * d + j]);
        }
    });
    kernels::matvec(ctx.pool, *w.o, head_out, out);
}

}  // namespace waste::model
