// rope.h — rotary position embedding for the attention kinds that use it
// (other-families.md §0): frequencies theta^(-2i/d), optionally YaRN-scaled,
// on interleaved pairs (2i, 2i+1) (DeepSeek-V3 / K2) or on the halves
// (i, i + d/2) (NEOX / rotate_half: Qwen).
//
// Angles are computed in double (position * inv_freq, then cos and sin) and
// rounded to f32 once, as the reference does; the rotation itself is f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/model_config.h"

namespace waste::model {

class Rope {
public:
    Rope() = default;
    // dim: the rotated dimensions per head (even, >= 2).
    Rope(int dim, double theta, bool interleaved, const format::YarnScaling* yarn);

    // Rotates `heads` vectors of dim() floats, `stride` floats apart, as at `position`.
    void apply(float* x, size_t heads, size_t stride, uint32_t position) const;

    int dim() const { return dim_; }
    // The YaRN attention factor multiplying cos and sin (1 without YaRN).
    double attention_factor() const { return attention_factor_; }
    const std::vector<double>& inv_freq() const { return inv_freq_; }

private:
    int dim_ = 0;
    bool interleaved_ = true;
    double attention_factor_ = 1.0;
    std::vector<double> inv_freq_;  // [dim/2]
};

// YaRN's get_mscale(s, m) = 1 + 0.1 m ln s for s > 1, else 1.
double yarn_mscale(double scale, double m = 1.0);

// The multiplier of an MLA model's softmax scale under YaRN:
// get_mscale(factor, mscale_all_dim)^2, 1 without YaRN or mscale_all_dim.
double mla_softmax_scale_factor(const format::ModelConfig& config);

}  // namespace waste::model
