// isa_kernels.h — entry points of the x86 SIMD kernel variants
// (kernels/isa_x86.cpp, compiled with per-function target attributes so the
// library still runs on a CPU without them). Each returns false when it has
// no kernel for the case (the caller then runs the scalar reference).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/container.h"
#include "kernels/isa.h"
#include "kernels/vq_lut.h"

namespace waste::kernels {

// A trunk tensor as the SIMD kernels see it (raw pointers, derived layout).
struct TrunkView {
    format::TrunkFormat fmt = format::TrunkFormat::f32;
    const uint8_t* payload = nullptr;  // rows * row_stride bytes
    const uint8_t* scales = nullptr;   // f16 [rows][groups_per_row]
    size_t cols = 0, group = 0, groups_per_row = 0, row_stride = 0;
};
inline TrunkView trunk_view(const format::LoadedTensor& w) {
    const format::TrunkTensor& t = *w.info;
    return TrunkView{t.fmt, w.payload.data(), w.scales.data(), t.cols, t.group, t.groups_per_row, t.row_stride};
}

bool matvec_rows_x86(Isa isa, const format::LoadedTensor& w, const float* x, float* y, size_t row_begin,
                     size_t row_end);
// VQ expert matrix times a chunk of tokens (kernels/vq_matmul.h).
bool vq_matmul_rows_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                        const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                        size_t row_end);
// Rows [row_begin, row_begin + n) of a VQ matrix dequantised to f32 (out:
// [n][ld], ld >= cols; no row scale), each weight summed as vq_matmul's
// reference sums it: the int8 mode's decoding (kernels/int8_matmul.h).
bool vq_dequantize_rows_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const float* books,
                            size_t row_begin, size_t n, float* out, size_t ld);
// Trunk matmul over a chunk of tokens (kernels/trunk_matmul.h); `tile` holds
// matmul_tile_floats_x86(w) floats (the caller's, one per thread).
size_t matmul_tile_floats_x86(const format::LoadedTensor& w);
// Rows [row_begin, row_begin + n) dequantised to f32 (out: [n][ld], ld ≥ the
// row's cols rounded up to 8, which the last vector of a row may write).
bool dequantize_rows_x86(Isa isa, const format::LoadedTensor& w, size_t row_begin, size_t n, float* out, size_t ld);
bool matmul_rows_x86(Isa isa, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                     size_t row_begin, size_t row_end, float* tile);
bool build_vq_table_x86(Isa isa, const VqTableShape& shape, const float* books, const float* x, float* table);
bool apply_vq_table_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                        const uint8_t* scales_f16, const float* table, float* y, size_t row_begin, size_t row_end);
// The int8 approximate mode's table (AVX2 body, also for AVX-512 CPUs);
// false for Isa::scalar.
bool quantize_vq_table_int8_x86(Isa isa, const VqTableShape& shape, const float* table, int8_t* q, float* block_scales);
// The int8 mode's table in integers: AVX-512 VNNI when isa is avx512 and the
// CPU has it, else the AVX2 body; false for Isa::scalar.
bool build_vq_table_int8_x86(Isa isa, const VqTableShape& shape, const VqInt8Book* books, const uint8_t* xu,
                             const float* scales, int8_t* q, float* block_scales);
// The int8 approximate mode: the AVX-512 VBMI byte-permute path when isa is
// avx512 and vq_int8_fast_path(), else the AVX2 body (scalar loads over the
// int8 table); false for Isa::scalar or a case it has no kernel for.
bool apply_vq_table_int8_x86(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                             const uint8_t* scales_f16, const int8_t* q, const float* block_scales, float* y, size_t row_begin,
                             size_t row_end);

}  // namespace waste::kernels
