// memory_plan.h — the RAM plan: what must be resident, and what is left for
// the expert cache (docs/ARCHITECTURE.md, "Memory is a planned ceiling").
//
//   floor       = trunk + state(ctx) + scratch + minimum cache
//   working set = one token's experts: top_k records in every MoE layer
//   default     = floor + 3x working set, else 2x, else 1x, whichever first
//                 fits under 7/8 of usable RAM; else the floor
//   cache       = budget - (floor - minimum cache), never more than every
//                 expert of the container
// A budget below the floor is refused with the floor and a pointer to
// `waste plan`.
#pragma once

#include <cstdint>
#include <string>

#include "format/container.h"
#include "platform/memory_info.h"

namespace waste::runtime {

struct MemoryPlan {
    uint32_t context_length = 0;
    uint64_t trunk_bytes = 0;
    uint64_t state_bytes = 0;
    uint64_t scratch_bytes = 0;
    uint64_t min_cache_bytes = 0;
    uint64_t floor_bytes = 0;
    uint64_t working_set_bytes = 0;   // one token's expert records
    uint64_t all_experts_bytes = 0;
    uint64_t recommended_bytes = 0;   // the default budget
    uint64_t budget_bytes = 0;        // resolved: requested, or the default
    bool budget_requested = false;
    bool budget_ok = true;            // budget >= floor
    uint64_t cache_bytes = 0;         // what the expert cache may hold
    uint64_t cache_records = 0;
    platform::MemoryInfo memory;
};

// Session state bytes at a context length: KDA state + conv rings, the MLA
// latent cache, AttnRes block residuals and the residual stream.
uint64_t session_state_bytes(const format::ModelConfig& config, uint32_t context_length);

// The engine's scratch at a context length (activations, lookup tables,
// prefill chunk buffers, logits).
uint64_t scratch_bytes(const format::ModelConfig& config, const format::ExpertQuant& quant, uint32_t context_length);

MemoryPlan plan_memory(const format::Container& container, uint32_t context_length, uint64_t requested_budget,
                       const platform::MemoryInfo& memory);

// Throws WASTE_ERR_BUDGET when the plan's budget is below its floor.
void require_budget(const MemoryPlan& plan);

}  // namespace waste::runtime
