// trunk_matmul.h — Y = X Wᵀ for a chunk of tokens: each weight row is
// decoded once and dotted with every token of the chunk, so a prefill chunk
// reads the trunk once instead of once per token (models.md §7).
//
// For one token it is trunk_matvec, so the decode step and the chunked
// prefill share one code path. For several tokens a few rows at a time are
// dequantised to f32 (w = scale·q, exact) and dotted with every token, so the
// rounding differs slightly from the one-token kernel (chunked prefill agrees
// with token-by-token decode within 1e-3, models.md §7). The SIMD variant
// sums in another order than the scalar reference (within 1e-5 of Σ|w·x|,
// tests/kernels_test.cpp); each (token, row) is computed by one thread in one
// order, so thread counts never change a bit.
#pragma once

#include <cstddef>

#include "format/container.h"
#include "kernels/isa.h"
#include "platform/thread_pool.h"

namespace waste::kernels {

// Rows [row_begin, row_end) of Y = X Wᵀ; x: [tokens][ldx] (first cols used),
// y: [tokens][ldy] (indexed by absolute row).
void matmul_rows(Isa isa, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                 size_t row_begin, size_t row_end);

// x: [tokens][ldx] (first cols used); y: [tokens][ldy] (first rows written).
void matmul(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
            size_t ldy);

}  // namespace waste::kernels
