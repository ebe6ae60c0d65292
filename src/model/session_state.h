// session_state.h — the per-conversation state of a Kimi-family model.
//
// Per KDA layer: S [heads][D][D] f32 (keys x values) and the short-conv rings
// [3 projections][kernel-1][C] (oldest first). Per MLA layer: the absorbed
// latent cache [ctx][kv_lora + rope]. Per GQA layer (Qwen3, GLM, gpt-oss):
// the key/value cache [ctx][2][kv_heads * head_dim], each token's keys
// (normed and rotated) then its values; a sliding layer's only a ring of
// gqa_ring_rows (below). With Attention Residuals: the block residuals [n][H]. The layout is the session file's (container-v0 §7).
//
// for_each_state_field walks the fields in that order; the state file
// (session_file.cpp) and the in-RAM snapshots (runtime/session_snapshot.h)
// both copy a state through it, so the two never disagree on what a state is.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "format/model_config.h"

namespace waste::model {

struct LayerState {
    std::vector<float> kda;    // a delta-rule layer's S: [v_heads][D][D]
    std::vector<float> conv;   // its conv rings: KDA [3][kernel-1][C]; GDN [kernel-1][2Kd+Vd]
    std::vector<float> latent; // [ctx][kv_lora+rope], first n_kv rows used
    std::vector<float> kv;     // GQA: [ctx][2][kv_heads*head_dim], first n_kv rows used
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

enum class StateField { kda, conv, latent, kv, block_residuals, residual };

// Floats per token of a GQA layer's cache: its keys then its values.
inline size_t gqa_cache_row(const format::ModelConfig& c) { return 2 * static_cast<size_t>(c.kv_heads) * c.head_dim; }

// A sliding GQA layer (gpt-oss) keeps only a ring of its last positions:
// sliding_window + sliding_chunk_tokens - 1 rows, position p at row p % ring,
// so that a prefill chunk's new rows never overwrite a key its own first
// token still reads. 0 for a full layer (position p at row p).
constexpr size_t sliding_chunk_tokens = 64;  // tokens a sliding layer takes at once (gqa_layer.cpp)
inline size_t gqa_ring_rows(const format::ModelConfig& c, int layer) {
    return c.is_sliding(layer) ? static_cast<size_t>(c.sliding_window) + sliding_chunk_tokens - 1 : 0;
}
// Rows a GQA layer's cache is allocated for a context of `context` tokens.
inline size_t gqa_cache_rows(const format::ModelConfig& c, int layer, size_t context) {
    const size_t ring = gqa_ring_rows(c, layer);
    return ring ? std::min(ring, context) : context;
}
// Rows holding a state of `position` tokens (the whole ring once it wrapped).
inline size_t gqa_state_rows(const format::ModelConfig& c, int layer, size_t position) {
    const size_t ring = gqa_ring_rows(c, layer);
    return ring ? std::min(ring, position) : position;
}

// One field of a state: `floats` values at `data` (float*, or const float*
// for a const state).
template <typename Float>
struct StateSpan {
    StateField field;
    int layer;  // -1 for the block residuals and the residual stream
    Float* data;
    size_t floats;
};

// Calls visit(StateSpan) for each field of a state holding `position` tokens
// and `n_blocks` block residuals, in the session file's order: per layer, a
// KDA layer's state then its conv rings, an MLA layer's latent rows
// [0, position), or a GQA layer's key/value rows [0, position); then the n_blocks block residuals; then the residual stream.
// position and n_blocks are parameters, not the state's own, so that a
// loader can size and fill a state from a header before trusting it; the
// caller bounds them (position <= context_length, n_blocks * hidden <=
// block_residuals.size()).
template <typename State, typename Visit>
void for_each_state_field(const format::ModelConfig& c, State& s, uint32_t position, uint32_t n_blocks, Visit&& visit) {
    static_assert(std::is_same_v<std::remove_const_t<State>, SessionState>);
    using Float = std::conditional_t<std::is_const_v<State>, const float, float>;
    for (int l = 0; l < c.layers; ++l) {
        auto& layer = s.layers[l];
        if (format::is_delta_rule(c.layer_kinds[l])) {
            visit(StateSpan<Float>{StateField::kda, l, layer.kda.data(), layer.kda.size()});
            visit(StateSpan<Float>{StateField::conv, l, layer.conv.data(), layer.conv.size()});
        } else if (c.layer_kinds[l] == format::LayerKind::gqa) {
            visit(StateSpan<Float>{StateField::kv, l, layer.kv.data(), gqa_state_rows(c, l, position) * gqa_cache_row(c)});
        } else {
            visit(StateSpan<Float>{StateField::latent, l, layer.latent.data(),
                                   static_cast<size_t>(position) * (c.kv_lora + c.qk_rope)});
        }
    }
    visit(StateSpan<Float>{StateField::block_residuals, -1, s.block_residuals.data(),
                           static_cast<size_t>(n_blocks) * c.hidden});
    visit(StateSpan<Float>{StateField::residual, -1, s.residual.data(), s.residual.size()});
}

// What a field is called in errors ("the latent cache").
const char* state_field_name(StateField field);

}  // namespace waste::model
