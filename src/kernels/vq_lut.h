// vq_lut.h — the expert matvec through lookup tables, never expanding an
// expert (models.md §4, container-v0 §5).
//
//   LUT[v][s][e] = Σ_j x[vec*v + j] · C_s[e][j]        [positions][stages][entries] f32
//   y[r]         = scale[r] · Σ_v Σ_s LUT[v][s][idx(r, v, s)]
//
// The gate and up tables depend only on the token's expert input and the
// layer's codebooks, so they are built once per token per layer and shared
// by all top-k experts; the down table is built per expert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "format/manifest.h"

namespace waste::kernels {

struct VqTableShape {
    int positions = 0;  // cols / vec_dim
    int stages = 0;
    int entries = 0;
    int vec_dim = 0;
    size_t floats() const { return static_cast<size_t>(positions) * stages * entries; }
};

// books: the S stage codebooks of one matrix kind, consecutive records
// ([S][entries][vec_dim] f32). table: shape.floats().
void build_vq_table(const VqTableShape& shape, const float* books, const float* x, float* table);

// Rows [row_begin, row_end) of one VQ matrix: indices in the v0 layout
// ([row_block][position][row_in_block][stage], or VQ4P's 3-byte packing),
// f16 row scales. y is indexed by absolute row.
void apply_vq_table(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                    const float* table, float* y, size_t row_begin, size_t row_end);

}  // namespace waste::kernels
