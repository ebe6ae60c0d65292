#include "synth/synth_vision.h"

#include <cmath>

#include "format/vision_config.h"
#include "platform/error.h"

namespace waste::synth {

nlohmann::ordered_json synth_vision_json(const nlohmann::json& request, const format::ModelConfig& model,
                                         int64_t placeholder) {
    nlohmann::ordered_json v = {
        {"vt_hidden_size", 40},        {"vt_num_attention_heads", 4}, {"qkv_hidden_size", 48},
        {"vt_intermediate_size", 56},  {"vt_num_hidden_layers", 2},   {"init_pos_emb_height", 6},
        {"init_pos_emb_width", 4},     {"text_hidden_size", model.hidden},
        {"patch_size", format::vision_patch},
        {"media_placeholder_token_id", placeholder >= 0 ? placeholder : model.vocab - 1},
        {"max_patches", 64},           {"image_mean", {0.5, 0.5, 0.5}}, {"image_std", {0.5, 0.5, 0.5}},
        {"vt_rms_eps", 1.1920928955078125e-07},
    };
    if (request.is_object()) v.merge_patch(nlohmann::ordered_json::parse(request.dump()));
    else if (!request.is_boolean())
        fail(WASTE_ERR_INVALID_ARGUMENT, "synth: vision must be true, false or an object of vision.json keys, got {}",
             request.dump());
    try {
        format::parse_vision_config(nlohmann::json::parse(v.dump()), model, "synth vision");
    } catch (const Error& error) {
        throw Error(WASTE_ERR_INVALID_ARGUMENT, error.what());
    }
    return v;
}

void plan_vision(const nlohmann::ordered_json& vision, const format::ModelConfig& model, std::vector<TensorPlan>& out) {
    const format::VisionConfig c = format::parse_vision_config(nlohmann::json::parse(vision.dump()), model, "synth vision");
    const float residual = 1.0f / std::sqrt(static_cast<float>(c.blocks));
    for (const format::VisionTensorSpec& spec : format::vision_tensor_specs(c)) {
        TensorPlan t;
        t.name = spec.name;
        if (spec.norm) {
            t.shape = {spec.rows};
            t.mean = 1.0f;
            t.std = 0.1f;
        } else if (spec.name == "vision_tower.patch_embed.pos_emb.weight") {
            t.shape = {c.pos_h, c.pos_w, c.hidden};  // F32 keeps the release's 3-D form
            t.std = 0.5f;
        } else {
            t.fmt = format::TrunkFormat::q8g;
            t.shape = {spec.rows, spec.cols};
            const bool writes_residual = spec.name.ends_with(".wo.weight") || spec.name.ends_with(".fc1.weight");
            t.std = (writes_residual ? residual : 1.0f) / std::sqrt(static_cast<float>(spec.cols));
            t.subnormal_first_row = true;
        }
        out.push_back(std::move(t));
    }
}

}  // namespace waste::synth
