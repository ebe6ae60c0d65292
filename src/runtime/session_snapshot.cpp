#include "runtime/session_snapshot.h"

#include <algorithm>

#include "model/session_state.h"

namespace waste::runtime {

uint64_t snapshot_floats(const format::ModelConfig& c, uint32_t position) {
    const uint64_t channels = static_cast<uint64_t>(c.kda_heads) * c.kda_head_dim;
    uint64_t floats = 0;
    for (int l = 0; l < c.layers; ++l) {
        const format::LayerKind kind = c.layer_kinds[l];
        if (kind == format::LayerKind::kda)
            floats += channels * c.kda_head_dim + 3 * channels * static_cast<uint64_t>(std::max(c.conv_kernel - 1, 0));
        else if (kind == format::LayerKind::gqa)
            floats += static_cast<uint64_t>(model::gqa_state_rows(c, l, position)) * model::gqa_cache_row(c);
        else
            floats += static_cast<uint64_t>(position) * (c.kv_lora + c.qk_rope);
    }
    if (c.attn_res_block > 0) floats += static_cast<uint64_t>(c.layers / c.attn_res_block + 2) * c.hidden;
    floats += static_cast<uint64_t>(c.hidden);  // the residual stream
    floats += static_cast<uint64_t>(c.vocab);   // the logits
    return floats;
}

}  // namespace waste::runtime
