// math.h — the small elementwise pieces of the Kimi-family math (models.md §0):
// rmsnorm, sigmoid, silu, softplus, SiTU. Scalar, inline, f32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace waste::kernels {

inline float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }
inline float silu(float z) { return z * sigmoid(z); }
inline float softplus(float z) { return z > 20.0f ? z : std::log1p(std::exp(z)); }

// act(a, b) of a SwiGLU FFN: silu(a)*b, or K3's SiTU
// β·tanh(a/β)·σ(a) · (λ>0 ? λ·tanh(b/λ) : b).
struct GluActivation {
    bool situ = false;
    float beta = 4.0f, linear_beta = 25.0f;
    // gpt-oss's clamped SwiGLU when > 0 (other-families.md §8): a = min(a, limit),
    // b = clamp(b, -limit, limit), (b + 1) · a · sigmoid(alpha a)
    float clamp_limit = 0.0f, alpha = 1.702f;
    float operator()(float a, float b) const {
        if (clamp_limit > 0) {
            const float gate = std::min(a, clamp_limit), up = std::clamp(b, -clamp_limit, clamp_limit);
            return (up + 1.0f) * (gate * sigmoid(gate * alpha));
        }
        if (!situ) return silu(a) * b;
        const float left = beta * std::tanh(a / beta) * sigmoid(a);
        const float right = linear_beta > 0 ? linear_beta * std::tanh(b / linear_beta) : b;
        return left * right;
    }
};

// out = w ⊙ x / sqrt(mean(x²) + eps); w may be null (no weight). out may alias x.
inline void rmsnorm(const float* x, const float* w, float eps, size_t n, float* out) {
    double sum = 0;  // f64 sum: n up to 7168, keeps the norm independent of order effects
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(n) + eps));
    for (size_t i = 0; i < n; ++i) out[i] = (w ? w[i] : 1.0f) * (x[i] * inv);
}

}  // namespace waste::kernels
