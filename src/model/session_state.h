// session_state.h — the per-conversation state of a Kimi-family model.
//
// Per KDA layer: S [heads][D][D] f32 (keys x values) and the short-conv rings
// [3 projections][kernel-1][C] (oldest first). Per MLA layer: the absorbed
// latent cache [ctx][kv_lora + rope]. With Attention Residuals: the block
// residuals [n][H]. The layout is the session file's (container-v0 §7).
#pragma once

#include <cstdint>
#include <vector>

#include "format/model_config.h"

namespace waste::model {

struct LayerState {
    std::vector<float> kda;    // [heads][D][D]
    std::vector<float> conv;   // [3][kernel-1][C]
    std::vector<float> latent; // [ctx][kv_lora+rope], first n_kv rows used
    uint32_t n_kv = 0;
};

struct SessionState {
    uint32_t position = 0;
    uint32_t context_length = 0;
    std::vector<LayerState> layers;
    std::vector<float> block_residuals;  // [n_blocks][H]
    uint32_t n_blocks = 0;
    std::vector<float> residual;         // [H] last residual stream

    SessionState(const format::ModelConfig& config, uint32_t context_length);
    void reset();
};

}  // namespace waste::model
