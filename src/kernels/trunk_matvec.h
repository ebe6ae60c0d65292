// trunk_matvec.h — y = W x for trunk tensors in F32, Q8G, Q4G or Q3G,
// accumulated in f32 against f32 activations (models.md §5).
//
// Per row and group: acc = Σ q_i x_i in f32, then y += scale_g * acc.
// The scalar kernel is the reference; ISA variants (kernels/isa_x86.cpp) must
// match it within rounding (they sum in another order and use FMA: the test
// bound is 2e-6 of Σ|w·x| per row) and are chosen once at run time.
// Rows are independent, so any split of rows over threads gives the same
// bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "format/container.h"
#include "kernels/isa.h"
#include "platform/thread_pool.h"

namespace waste::kernels {

// Rows [row_begin, row_end) of y = W x.  x has cols values, y rows values
// (indexed by absolute row).
void matvec_rows(Isa isa, const format::LoadedTensor& w, const float* x, float* y, size_t row_begin, size_t row_end);

// Whole matvec, rows split over the pool.
void matvec(platform::ThreadPool& pool, const format::LoadedTensor& w, const float* x, float* y);

// Rows [row_begin, row_begin + n) of W as f32, the values W.row() gives
// (scale · q is exact in f32, so every ISA gives the same bits): out is
// [n][ld], ld ≥ cols. The SIMD body (rows whose cols are a multiple of 8)
// decodes 8 values per step; other rows take W.row().
void dequantize_rows(Isa isa, const format::LoadedTensor& w, size_t row_begin, size_t n, float* out, size_t ld);

// y[0..cols) += Σ_{i<n} coeff[i] * W[row_begin + i]  (a transposed product
// over a block of rows: MLA's absorbed W_UKᵀ q).  Single-threaded; rows are
// dequantised one at a time into `row_scratch` (cols floats).
void accumulate_rows(const format::LoadedTensor& w, size_t row_begin, size_t n, const float* coeff, float* y,
                     float* row_scratch);

}  // namespace waste::kernels
