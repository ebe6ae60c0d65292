// trunk_matmul.h — Y = X Wᵀ for a chunk of tokens: each weight row is
// decoded once and dotted with every token of the chunk, so a prefill chunk
// reads the trunk once instead of once per token (models.md §7).
//
// For one token it is trunk_matvec, so the decode step and the chunked
// prefill share one code path. For several tokens a row is dequantised to f32
// first, so the rounding differs slightly from the one-token kernel (chunked
// prefill agrees with token-by-token decode within 1e-3, models.md §7).
#pragma once

#include <cstddef>

#include "format/container.h"
#include "platform/thread_pool.h"

namespace waste::kernels {

// x: [tokens][ldx] (first cols used); y: [tokens][ldy] (first rows written).
void matmul(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
            size_t ldy);

}  // namespace waste::kernels
