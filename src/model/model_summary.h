// model_summary.h — the facts `waste info` reports about a container:
// architecture, parameter counts, quantisation summary.
//
// params_total = every text trunk element + every routed expert weight;
// params_active = what one token touches: the trunk without embed_tokens
// (one row is read per token) + top_k experts in each MoE layer. Both agree
// with the upstream engine's `info` on its fixtures.
#pragma once

#include <cstdint>
#include <string>

#include "format/container.h"

namespace waste::model {

struct ModelSummary {
    std::string arch;            // "kimi-linear", "kimi-k3", "deepseek-v3", "kimi-k2", "qwen3-moe", "glm4-moe" or "gpt-oss"
    uint64_t params_total = 0;
    uint64_t params_active = 0;
    uint64_t params_trunk = 0;
    uint64_t params_per_expert = 0;
    std::string quantization;    // "experts VQ3R, trunk Q4G/Q8G/F32"
};

ModelSummary summarize(const format::Container& container);

// What one decode token touches with every expert cached: the trunk matrices
// (embed_tokens one row), top-k records per MoE layer (payload, not padding),
// the lookup tables written and read, and the table lookups.
struct TokenTraffic {
    uint64_t trunk_bytes = 0;
    uint64_t expert_bytes = 0;
    uint64_t lut_bytes = 0;
    uint64_t lookups = 0;
    // multiply-adds: the trunk's matrix-vector products (every text trunk
    // weight but the embedding) and the lookup tables' builds (each entry a
    // vec_dim-long dot product); the lookups are additions, counted above
    uint64_t trunk_multiply_adds = 0;
    uint64_t table_multiply_adds = 0;
    uint64_t total_bytes() const { return trunk_bytes + expert_bytes + lut_bytes; }
};

TokenTraffic token_traffic(const format::Container& container);

}  // namespace waste::model
