#include "runtime/session_snapshot.h"

#include <algorithm>

#include "model/session_state.h"

namespace waste::runtime {

uint64_t snapshot_floats(const format::ModelConfig& c, uint32_t position) {
    uint64_t floats = 0;
    for (int l = 0; l < c.layers; ++l) {
        const format::LayerKind kind = c.layer_kinds[l];
        if (format::is_delta_rule(kind))
            floats += c.delta_state_floats() + c.delta_conv_floats();
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
