#include "synth/synth_tensors.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "format/trunk_tensors.h"
#include "synth/synth_vision.h"

namespace waste::synth {
namespace {

using format::TrunkFormat;

// Router rows ~ N(0, router_variance / H): with unit-RMS input the logits have
// standard deviation 2, so sigmoid scores spread over (0.1, 0.9) and the
// top-k set changes from token to token.
constexpr float router_gain = 2.0f;
constexpr float correction_bias_std = 0.01f;  // small against that spread: it nudges, never decides
constexpr float lm_head_gain = 2.0f;          // logits of standard deviation ~2
constexpr float norm_std = 0.1f;              // norm weights 1 ± 0.1
constexpr float conv_std = 0.5f;              // 4 taps: output variance ~1
// KDA decay: z = f_b·f_a·x + dt_bias ≈ -2.5 ± 0.5, a = exp(A_log) ≈ 1:
// Kimi-Linear's e^{-a·softplus(z)} ≈ 0.92, K3's e^{-5·σ(a·z)} ≈ 0.68.
constexpr float dt_bias_mean = -2.5f;
constexpr float dt_bias_std = 0.5f;
constexpr float a_log_std = 0.3f;
constexpr float a_log_pad = 3.0f;             // e^3 = 20: a reader using the padding decays visibly too fast
constexpr float decay_projection_gain = 0.5f;
constexpr float attn_res_norm_std = 0.1f;
constexpr float bias_std = 0.1f;               // projection biases: small beside unit-scale outputs
constexpr float sink_std = 1.0f;               // a sink logit per head, as large as the scores

using format::TrunkRole;
using format::TrunkValues;

// The format the upstream synthetic fixtures give a tensor (see the header).
TrunkFormat format_of(const format::TrunkTensorSpec& spec, const std::optional<TrunkFormat>& quantised) {
    const bool bias = spec.values == TrunkValues::bias || spec.values == TrunkValues::residual_bias;
    if (spec.shape.size() != 2 || bias) return TrunkFormat::f32;
    if (quantised) return *quantised;
    return spec.values == TrunkValues::embedding || spec.values == TrunkValues::lm_head ? TrunkFormat::q8g : TrunkFormat::q4g;
}

// Whether a synthetic container of this preset holds an optional tensor.
bool synth_holds(const format::TrunkTensorSpec& spec, const ResolvedPreset& preset) {
    switch (spec.role) {
        case TrunkRole::latent_norm: return preset.latent_norm;
        case TrunkRole::router_correction_bias: return true;
        default: return false;  // lm_head of tied embeddings, the MLA gate the config leaves off
    }
}

TensorPlan plan_tensor(const format::TrunkTensorSpec& spec, const ResolvedPreset& preset) {
    const format::ModelConfig& c = preset.model;
    const float out_gain = residual_gain(c);
    TensorPlan t;
    t.name = preset.tensor_prefix + spec.name;
    t.shape = spec.shape;
    t.fmt = format_of(spec, preset.trunk_quant);
    // A linear weight [out, in] ~ N(0, gain^2 / in).
    const float fan_in = spec.shape.size() == 2 ? std::sqrt(static_cast<float>(spec.shape[1])) : 1.0f;
    const float unit = 1.0f / std::sqrt(static_cast<float>(c.hidden));
    auto draw = [&](float mean, float std) { t.mean = mean, t.std = std; };
    switch (spec.values) {
        case TrunkValues::embedding: draw(0.0f, 1.0f); break;
        case TrunkValues::lm_head: draw(0.0f, lm_head_gain / fan_in); break;
        case TrunkValues::projection: draw(0.0f, 1.0f / fan_in); break;
        case TrunkValues::residual_out: draw(0.0f, out_gain / fan_in); break;
        case TrunkValues::router: draw(0.0f, router_gain / fan_in); break;
        case TrunkValues::decay_projection: draw(0.0f, decay_projection_gain / fan_in); break;
        case TrunkValues::norm: draw(1.0f, norm_std); break;
        case TrunkValues::centred_norm: draw(0.0f, norm_std); break;  // 1 + w: 1 ± 0.1 as above
        case TrunkValues::bias: draw(0.0f, bias_std); break;
        case TrunkValues::residual_bias: draw(0.0f, bias_std * out_gain); break;
        case TrunkValues::correction_bias: draw(0.0f, correction_bias_std); break;
        case TrunkValues::sink: draw(0.0f, sink_std); break;
        case TrunkValues::conv: draw(0.0f, conv_std); break;
        case TrunkValues::dt_bias: draw(dt_bias_mean, dt_bias_std); break;
        case TrunkValues::res_norm: draw(1.0f, attn_res_norm_std); break;
        case TrunkValues::res_proj: draw(0.0f, unit); break;  // AttnRes scores ~ N(0, 1): rmsnorm(v)·norm·proj
        case TrunkValues::a_log: {
            if (spec.role == TrunkRole::gdn_a_log) {  // one per value head, as the table says
                draw(0.0f, a_log_std);
                break;
            }
            // One value per head; K3-like presets pad it to head_dim.
            const int64_t nh = c.kda_heads, stored = preset.k3_like ? std::max(nh, int64_t{c.kda_head_dim}) : nh;
            t.shape = {1, 1, stored, 1};
            draw(0.0f, a_log_std);
            t.live = nh;
            t.pad_value = a_log_pad;
            break;
        }
    }
    t.subnormal_first_scale =
        spec.role == TrunkRole::mla_q_b || spec.role == TrunkRole::mla_q || spec.role == TrunkRole::mla_kv_b;
    return t;
}

}  // namespace

float residual_gain(const format::ModelConfig& model) {
    return 1.0f / std::sqrt(static_cast<float>(std::max(1, model.layers)));
}

std::vector<TensorPlan> plan_trunk(const ResolvedPreset& preset) {
    std::vector<TensorPlan> out;
    const auto present = [&](const std::string& name) { return preset.kda_full_rank_gate && name.ends_with("g_proj.weight"); };
    for (const format::TrunkTensorSpec& spec : format::trunk_tensor_table(preset.model, present))
        if (!spec.optional || synth_holds(spec, preset)) out.push_back(plan_tensor(spec, preset));
    if (preset.vision) {
        plan_vision(*preset.vision, preset.model, out);
    } else if (preset.k3_like && !preset.tensor_prefix.empty()) {
        // One vision-tower tensor outside the prefix: a text loader must skip it.
        TensorPlan t;
        t.name = "vision_tower.patch_embed.proj.weight";
        t.shape = {64, 3 * 14 * 14};
        t.fmt = preset.trunk_quant ? *preset.trunk_quant : TrunkFormat::q4g;
        t.std = 1.0f / std::sqrt(static_cast<float>(t.shape[1]));
        out.push_back(std::move(t));
    }
    return out;
}

}  // namespace waste::synth
