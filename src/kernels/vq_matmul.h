// vq_matmul.h — a VQ expert matrix against several tokens at once (chunked
// prefill, models.md §7): the codebook entries of a row position are summed
// into its 8 weights once, in registers, and those weights are dotted with
// every token routed to the expert.
//
//   y[t][r] = scale[r] · Σ_v Σ_j (Σ_s C_s[idx(r,v,s)][j]) · x[t][vec·v + j]
//
// The same value as the lookup-table path (vq_lut.h) in exact arithmetic —
// no approximation — but rounded in another order: per token it costs one
// multiply-add per weight instead of S lookups per 8 weights, and needs no
// table, so a chunk whose experts serve several tokens each runs several
// times faster. The decode step keeps the lookup tables. Neither path
// depends on the thread split: each (token, row) is one thread's, summed in
// one fixed order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"
#include "kernels/vq_lut.h"

namespace waste::kernels {

// Rows [row_begin, row_end) of one VQ matrix (v0 index layout, f16 row
// scales, as apply_vq_table) times tokens x[t] (x: [tokens][ldx], first
// positions·vec_dim used) into y[t][r] (y: [tokens][ldy], absolute rows).
// books: the S stage codebooks ([S][entries][vec_dim] f32).
//
// The scalar reference sums, per (token, row): for each position, the
// dequantised weights w_j = ((C_0 + C_1) + …)_j, then acc += w_j·x_j in j
// order. The SIMD variants keep the 8 weights of a position in one vector
// (vec_dim 8) and sum 8 lanes side by side (then the lanes): within 1e-5 of
// Σ|w·x| of the reference (tests/kernels_test.cpp).
void vq_matmul_rows(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                    const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                    size_t row_end);

// Rows [row_begin, row_begin + n) of a VQ matrix dequantised to f32 (out:
// [n][ld], ld >= positions·vec_dim; no row scale), each weight summed as the
// reference above sums it, on every ISA (the int8 mode's decoding,
// kernels/int8_matmul.h).
void vq_dequantize_rows(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const float* books,
                        size_t row_begin, size_t n, float* out, size_t ld);

}  // namespace waste::kernels
