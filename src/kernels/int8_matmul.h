// int8_matmul.h — prefill's expert products in the int8 mode (`--lut int8`):
// a VQ matrix decoded into int8 rows, times int8 activations, with integer
// dot products (AVX-512 VNNI: 64 multiply-adds an instruction; AVX2: the
// pairwise byte multiply). Exact VQ weights cost S codebook loads per 8
// weights for every chunk; decoded rows cost one byte per weight, and the
// x86 CPUs measured run integer multiply-adds at several times their f32
// rate (docs/bench-log/llama-cpp-kimi.md, "int8 rows in prefill").
//
// The approximation, both sides symmetric round-to-nearest int8:
//   weights:     row r's dequantised VQ weights w (before the f16 row scale),
//                q[r][c] = round(w · 127 / max_c |w|), scale[r] = f16scale · (max|w| / 127)
//   activations: token t's columns in groups of int8_group,
//                xq[t][c] = round(x · (127 / max_g |x|)), xs[t][g] = max_g|x| / 127
//   y[t][r] = scale[r] · Σ_g (xs[t][g] · dot_g),  dot_g = Σ_{c in g} xq[t][c] · q[r][c]
// with dot_g exact in int32 and the f32 steps in that order (products
// rounded, never fused): every ISA variant gives the scalar reference's
// bits, and a (token, row) is one thread's, so thread splits change nothing.
// Its cost in perplexity: docs/QUALITY.md and docs/bench-log/llama-cpp-kimi.md,
// "int8 rows in prefill".
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/isa.h"
#include "kernels/vq_lut.h"

namespace waste::kernels {

constexpr size_t int8_group = 256;  // activation columns sharing one scale (as llama.cpp's Q8_K)
constexpr size_t int8_row_pad = 4;  // rows past the end the kernels may read (zeros)

// The int8 rows of one matrix, in one 64-byte-aligned buffer of
// int8_matrix_bytes(rows, cols): q [rows + int8_row_pad][ld] (zero padded),
// scale f32 [rows + pad], group_sum i32 [rows + pad][groups] (Σ of each
// group's q: the VNNI path's unsigned-activation correction).
struct Int8Matrix {
    size_t rows = 0, cols = 0;
    int8_t* q = nullptr;
    float* scale = nullptr;
    int32_t* group_sum = nullptr;
    size_t ld() const { return (cols + 63) / 64 * 64; }
    size_t groups() const { return (cols + int8_group - 1) / int8_group; }
};
size_t int8_matrix_bytes(size_t rows, size_t cols);
// Lays the matrix out over buffer (64-byte aligned, int8_matrix_bytes long).
Int8Matrix int8_matrix_view(uint8_t* buffer, size_t rows, size_t cols);

// Decodes rows [row_begin, row_end) of a VQ matrix (vq_lut.h's index layout,
// f16 row scales, books [S][entries][vec_dim]) into m; the padding rows are
// zeroed by int8_matrix_view. Each row's weights are summed as vq_matmul's
// reference sums them (((0 + C_0) + C_1) + …).
void decode_vq_int8_rows(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                         const float* books, const Int8Matrix& m, size_t row_begin, size_t row_end);

// Quantises x[t] (t < tokens, first cols of each ldx row) into xq[t] (ldq
// bytes a token, zero padded to the 64-byte multiple) and xs[t][group].
void quantize_int8_activations(Isa isa, const float* x, size_t ldx, size_t tokens, size_t cols, int8_t* xq, size_t ldq,
                               float* xs);

// y[t][r] (y: [tokens][ldy], absolute rows) for rows [row_begin, row_end).
// xq: [tokens][ldq] with ldq >= m.ld(); xs: [tokens][m.groups()].
void int8_matmul_rows(Isa isa, const Int8Matrix& m, const int8_t* xq, size_t ldq, const float* xs, size_t tokens, float* y,
                      size_t ldy, size_t row_begin, size_t row_end);

// One span of values to int8 with one shared scale: q = round(v · (127 /
// max|v|)) to nearest even; returns max|v| / 127 (0 for all zeros). Every
// ISA gives the same bytes.
float quantize_int8_values(Isa isa, const float* v, size_t count, int8_t* q);
// Σ q over count bytes.
int32_t int8_byte_sum(Isa isa, const int8_t* q, size_t count);

// Does this CPU run the VNNI body (AVX-512 VNNI)? Other x86 CPUs with AVX2
// run the pairwise-multiply body; everything else the scalar reference.
bool int8_vnni_path();

}  // namespace waste::kernels
