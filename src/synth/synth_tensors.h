// synth_tensors.h — the trunk tensors of a synthetic container: names (as
// container-v0 §3), shapes, formats and the distribution of their values.
//
// Formats follow the upstream synthetic fixtures rather than the converter's
// size threshold, so that even the tiny presets exercise quantised matvecs:
// every 2-D tensor is Q4G (Q8G for embed_tokens and lm_head), or every one in
// the format of the "trunk_quant" override (Q3G is written only that way);
// everything else (norms, biases, conv kernels, A_log) F32.
//
// Scales keep activations O(1) through any depth: projections ~ N(0, 1/fan_in);
// the projections that write into the residual stream (o_proj, down_proj,
// routed_expert_up_proj) are further scaled by 1/sqrt(layers), so the
// residual stream's RMS stays between 1 and 2 at any depth (measured with the
// PyTorch reference: 0.9 -> 1.5 through tiny, 1.0 -> 1.4 through mid); norms ~ 1;
// KDA decays in (0, 1) away from both ends; router rows ~ N(0, 4/H) so that
// the sigmoid scores spread and top-k changes from token to token, with
// correction biases (~0.01) far below that spread.
//
// Deliberately not here: drawing the values (synth.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "synth/synth_config.h"

namespace waste::synth {

struct TensorPlan {
    std::string name;              // prefix included
    std::vector<int64_t> shape;    // PyTorch order
    format::TrunkFormat fmt = format::TrunkFormat::f32;
    float mean = 0.0f;             // of the values
    float std = 1.0f;
    // A_log padded to head_dim: only the first `live` values are drawn, the
    // rest are pad_value (a reader that uses them answers visibly wrong).
    int64_t live = -1;             // -1: all
    float pad_value = 0.0f;
    // Row 0's first group scale is an f16 subnormal (upstream once flushed
    // 1.08% of K3's scales to zero; a reader must not).
    bool subnormal_first_scale = false;
    // Every group of row 0 has the largest f16 subnormal scale (1023·2^-24):
    // a whole row of weights that a reader flushing subnormals zeroes, large
    // enough to show in the output (the vision tower's matrices).
    bool subnormal_first_row = false;
};

std::vector<TensorPlan> plan_trunk(const ResolvedPreset& preset);

// Residual-writing projections are scaled by this (see the file comment).
float residual_gain(const format::ModelConfig& model);

}  // namespace waste::synth
