// isa_neon.h — entry points of the AArch64 NEON kernel variants
// (kernels/isa_neon.cpp, built only where WASTE_NEON_SIMD is 1; the bodies
// are in kernels/isa_neon.inc). Each returns false when it has no kernel for
// the case (the caller then runs the scalar reference). Precision contracts
// as the x86 variants': see isa_neon.inc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/container.h"
#include "kernels/isa.h"
#include "kernels/vq_lut.h"

#if WASTE_NEON_SIMD

namespace waste::kernels {

bool matvec_rows_neon(const format::LoadedTensor& w, const float* x, float* y, size_t row_begin, size_t row_end);
// `tile` holds matmul_tile_floats_neon(w) floats (the caller's, one per thread).
size_t matmul_tile_floats_neon(const format::LoadedTensor& w);
bool matmul_rows_neon(const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                      size_t row_begin, size_t row_end, float* tile);
bool build_vq_table_neon(const VqTableShape& shape, const float* books, const float* x, float* table);
bool apply_vq_table_neon(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                         const float* table, float* y, size_t row_begin, size_t row_end);
bool vq_matmul_rows_neon(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                         const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                         size_t row_end);

}  // namespace waste::kernels

#endif  // WASTE_NEON_SIMD
