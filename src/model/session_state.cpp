#include "model/session_state.h"

#include <algorithm>

namespace waste::model {

SessionState::SessionState(const format::ModelConfig& c, uint32_t context) : context_length(context) {
    layers.resize(c.layers);
    for (int l = 0; l < c.layers; ++l) {
        LayerState& s = layers[l];
        if (format::is_delta_rule(c.layer_kinds[l])) {
            s.kda.assign(c.delta_state_floats(), 0.0f);
            s.conv.assign(c.delta_conv_floats(), 0.0f);
        } else if (c.layer_kinds[l] == format::LayerKind::gqa) {
            s.kv.assign(gqa_cache_rows(c, l, context) * gqa_cache_row(c), 0.0f);
        } else {
            s.latent.assign(static_cast<size_t>(context) * (c.kv_lora + c.qk_rope), 0.0f);
        }
    }
    if (c.attn_res_block > 0) block_residuals.assign(static_cast<size_t>(c.layers / c.attn_res_block + 2) * c.hidden, 0.0f);
    residual.assign(c.hidden, 0.0f);
}

void SessionState::reset() {
    position = 0;
    n_blocks = 0;
    for (LayerState& s : layers) {
        std::fill(s.kda.begin(), s.kda.end(), 0.0f);
        std::fill(s.conv.begin(), s.conv.end(), 0.0f);
        s.n_kv = 0;
    }
    std::fill(block_residuals.begin(), block_residuals.end(), 0.0f);
    std::fill(residual.begin(), residual.end(), 0.0f);
}

const char* state_field_name(StateField field) {
    switch (field) {
        case StateField::kda: return "the KDA state";
        case StateField::conv: return "the conv state";
        case StateField::latent: return "the latent cache";
        case StateField::kv: return "the key/value cache";
        case StateField::block_residuals: return "the block residuals";
        case StateField::residual: return "the residual stream";
    }
    return "a state field";
}

}  // namespace waste::model
