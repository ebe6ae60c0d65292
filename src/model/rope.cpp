#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "platform/error.h"

namespace waste::model {

double yarn_mscale(double scale, double m) { return scale > 1.0 ? 1.0 + 0.1 * m * std::log(scale) : 1.0; }

double mla_softmax_scale_factor(const format::ModelConfig& c) {
    if (!c.yarn_enabled || c.yarn.mscale_all_dim == 0.0) return 1.0;
    const double m = yarn_mscale(c.yarn.factor, c.yarn.mscale_all_dim);
    return m * m;
}

Rope::Rope(int dim, double theta, bool interleaved, const format::YarnScaling* yarn)
    : dim_(dim), interleaved_(interleaved) {
    WASTE_CHECK(dim >= 2 && dim % 2 == 0 && theta > 0);
    const size_t pairs = static_cast<size_t>(dim) / 2;
    std::vector<double> pos_freq(pairs);  // theta^(2i/d)
    for (size_t i = 0; i < pairs; ++i) pos_freq[i] = std::pow(theta, 2.0 * static_cast<double>(i) / dim);
    inv_freq_.resize(pairs);
    for (size_t i = 0; i < pairs; ++i) inv_freq_[i] = 1.0 / pos_freq[i];
    if (!yarn) return;
    // HF _compute_yarn_parameters: the pairs whose wavelength fits more than
    // beta_fast rotations into the original context keep their frequency, those
    // under beta_slow are interpolated by 1/factor, a linear ramp between.
    const double f = yarn->factor, base = theta, d = dim;
    auto correction_dim = [&](double rotations) {
        return d * std::log(yarn->original_max_position / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
    };
    double low = correction_dim(yarn->beta_fast), high = correction_dim(yarn->beta_slow);
    if (yarn->truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, d - 1);
    if (low == high) high += 0.001;
    for (size_t i = 0; i < pairs; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        inv_freq_[i] = (1.0 / (f * pos_freq[i])) * ramp + (1.0 / pos_freq[i]) * (1.0 - ramp);
    }
    attention_factor_ = yarn->mscale != 0.0 && yarn->mscale_all_dim != 0.0
                            ? yarn_mscale(f, yarn->mscale) / yarn_mscale(f, yarn->mscale_all_dim)
                            : yarn_mscale(f);
}

void Rope::apply(float* x, size_t heads, size_t stride, uint32_t position) const {
    const size_t pairs = inv_freq_.size();
    // cos/sin of this position, once for all heads (the config bounds the
    // rotated dims to 1024)
    float cs[512], sn[512];
    WASTE_CHECK(pairs <= 512);
    for (size_t i = 0; i < pairs; ++i) {
        const double angle = static_cast<double>(position) * inv_freq_[i];
        cs[i] = static_cast<float>(std::cos(angle) * attention_factor_);
        sn[i] = static_cast<float>(std::sin(angle) * attention_factor_);
    }
    // the pair's two members: (2i, 2i+1) interleaved, (i, i + d/2) otherwise
    const size_t step = interleaved_ ? 2 : 1, partner = interleaved_ ? 1 : pairs;
    for (size_t h = 0; h < heads; ++h) {
        float* v = x + h * stride;
        for (size_t i = 0; i < pairs; ++i) {
            float& a = v[i * step];
            float& b = v[i * step + partner];
            const float ra = a * cs[i] - b * sn[i], rb = b * cs[i] + a * sn[i];
            a = ra;
            b = rb;
        }
    }
}

}  // namespace waste::model
