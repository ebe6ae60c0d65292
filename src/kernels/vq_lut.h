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
#include <vector>

#include "format/manifest.h"
#include "kernels/isa.h"

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
//
// Every ISA variant gives the scalar reference's bits: each entry is
// ((0 + x0·c0) + x1·c1) + … with the products rounded (never fused), the
// variants only compute 8 or 16 entries side by side.
void build_vq_table(Isa isa, const VqTableShape& shape, const float* books, const float* x, float* table);
inline void build_vq_table(const VqTableShape& shape, const float* books, const float* x, float* table) {
    build_vq_table(active_isa(), shape, books, x, table);
}

// Rows [row_begin, row_end) of one VQ matrix: indices in the v0 layout
// ([row_block][position][row_in_block][stage], or VQ4P's 3-byte packing),
// f16 row scales. y is indexed by absolute row. The index array covers whole
// 64-row blocks (rows past M are padding), as the v0 layout has it.
//
// Every ISA variant gives the scalar reference's bits: a row's lookups are
// added in the same order (position, then stage) starting from 0, then
// multiplied by the row scale; the variants keep 8 or 16 rows in flight (AVX2:
// rows of plain loads; AVX-512: a (position, stage) table of 64 or 256
// entries held in registers, 16 rows per vpermt2ps lookup) and never split a
// row, so thread splits change nothing either.
void apply_vq_table(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                    const uint8_t* scales_f16, const float* table, float* y, size_t row_begin, size_t row_end);
inline void apply_vq_table(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                           const float* table, float* y, size_t row_begin, size_t row_end) {
    apply_vq_table(active_isa(), shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
}

// ---------------------------------------------------------------------------
// Approximate fast mode: OFF by default. The engine uses it only when the
// model is opened with it (waste_open_options.lut_mode = WASTE_LUT_INT8,
// `--lut int8`), for the decode step's expert matvecs; its cost in logits
// and perplexity is measured in docs/QUALITY.md and
// docs/bench-log/decode-and-prefill.md, "Decode after the lookup-kernel
// work" (models.md §4).
//
// The f32 table is quantised to int8 with one f32 scale per block of
// vq_int8_block consecutive positions (all their stages and entries):
// q = round(T · 127 / max|T|), block_scale = max|T| / 127. A row sums its int8
// lookups exactly in integers within a block, then
//     y[r] = scale[r] · Σ_b (block_scale[b] · Σ_{v in b, s} q[v][s][idx(r,v,s)])
// with the f32 steps in that order (products rounded, never fused). On a CPU
// with AVX-512 VBMI (Isa::avx512 and vq_int8_fast_path()) the lookup is a byte
// permute over the table held in registers, 64 rows per instruction; on AVX2
// it is the exact path's walk over a table a quarter the size (a 3 × 256
// position is 768 bytes: a mid-sized layer's gate and up tables fit in L2).
// Every path gives the same bits, so thread counts and ISAs never change the
// output. Error vs the exact f32 path: see tests/kernels_test.cpp
// (VqInt8Error) and docs/bench-log/kernels.md, "VQ expert matvec (lookup
// tables)".
enum class VqLutMode { exact, int8 };
constexpr int vq_int8_block = 32;
inline size_t vq_int8_blocks(const VqTableShape& shape) {
    return (static_cast<size_t>(shape.positions) + vq_int8_block - 1) / vq_int8_block;
}
// q: shape.floats() values; block_scales: vq_int8_blocks(shape) values. The
// whole table at once (the blocks start at position 0; a part of a table
// starting at a multiple of vq_int8_block positions is quantised alike).
// Every ISA variant gives the scalar reference's bits.
void quantize_vq_table_int8(Isa isa, const VqTableShape& shape, const float* table, int8_t* q, float* block_scales);
inline void quantize_vq_table_int8(const VqTableShape& shape, const float* table, int8_t* q, float* block_scales) {
    quantize_vq_table_int8(active_isa(), shape, table, q, block_scales);
}
// The int8 mode's tables built in integers (decode's path; the two calls
// above stay the reference for a table given in f32). The codebooks are
// quantised once per model, the input once per table, and every entry is an
// exact integer dot product, so a table costs two VNNI instructions per 16
// entries (8-dim vectors) instead of 16 f32 operations, and the f32 table is
// never written:
//
//   cq_s = round(C_s · 127 / max|C_s|)              per stage codebook, scale c_s = max|C_s| / 127
//   xq_v = round(x_v · 127 / max|x_v|)              per position (vec_dim values), scale x_v = max|x_v| / 127
//   T[v][s][e] = Σ_j xq_v[j] · cq_s[e][j]           exact in int32
//   g[v][s] = x_v · c_s;  A[v][s] = float(max_e |T[v][s][e]|) · g[v][s]
//   per block of vq_int8_block positions: M = max A, block_scale = M / 127,
//   q = clamp(round(float(T) · (g[v][s] · (127 / M))), ±127)
//
// (rounding: to nearest even; every product above one f32 rounding, in that
// order), so q · block_scale ≈ T·g ≈ the f32 table: the error adds the
// codebooks' and the input's int8 steps to the table's (docs/QUALITY.md).
// A position or codebook with a NaN or an infinity makes its block's scale
// NaN (q = 0 there), so the rows come out NaN as the exact path's would; an
// all-zero block has scale 0. Every ISA variant gives the scalar reference's
// bits. vec_dim ≤ 64.
struct VqInt8Book {
    float scale = 0;               // c_s (NaN when the codebook is not finite)
    std::vector<int8_t> values;    // [groups of 16 entries][vec_dim/4 rounded up][16][4]: cq, zero padded
    std::vector<int32_t> offsets;  // [groups · 16]: −128 · Σ_j cq[e][j] (the VNNI form's unsigned input)
};
VqInt8Book quantize_vq_codebook_int8(int entries, int vec_dim, const float* book);
// The input's positions ([positions][vec_dim] f32) as xq + 128, each
// position's vec_dim rounded up to a multiple of 4 (padding: 128, i.e. 0):
// xu [positions][that], scales [positions].
size_t vq_int8_input_stride(const VqTableShape& shape);
void quantize_vq_input_int8(const VqTableShape& shape, const float* x, uint8_t* xu, float* scales);
// books: the shape.stages codebooks of the matrix kind. q, block_scales as
// quantize_vq_table_int8 writes them; a part of a table starting at a
// multiple of vq_int8_block positions is built alike (xu, scales offset).
void build_vq_table_int8(Isa isa, const VqTableShape& shape, const VqInt8Book* books, const uint8_t* xu,
                         const float* scales, int8_t* q, float* block_scales);

// Like apply_vq_table, over the quantised table.
void apply_vq_table_int8(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                         const uint8_t* scales_f16, const int8_t* q, const float* block_scales, float* y,
                         size_t row_begin, size_t row_end);
// Does this CPU have the byte-permute path (AVX-512 VBMI)? Without it the
// int8 mode runs the AVX2 walk (or the scalar loop on other CPUs).
bool vq_int8_fast_path();

}  // namespace waste::kernels
