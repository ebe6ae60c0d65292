// isa_neon.cpp — the AArch64 Advanced SIMD (NEON) variants of the trunk
// matvec/matmul, the VQ lookup-table build and apply, and the VQ matmul
// (models.md §4–§5, §7). The bodies live in isa_neon.inc, which the kernel
// test also compiles over SIMDe's NEON emulation to check them on x86.
//
// Advanced SIMD is mandatory on AArch64, so nothing is probed at run time:
// best_isa() is Isa::neon there, and WASTE_ISA=scalar lowers it. On every
// other target this file compiles to nothing.
#include "kernels/isa_neon.h"

#if WASTE_NEON_SIMD

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "format/f16.h"
#include "kernels/isa_kernels.h"

namespace waste::kernels {

namespace neon {
// "w": the value stays in a SIMD&FP register, rounded, so it cannot be fused
// into the next add.
#define WASTE_KEEP(v) __asm__("" : "+w"(v))
#include "kernels/isa_neon.inc"
#undef WASTE_KEEP
}  // namespace neon

bool matvec_rows_neon(const format::LoadedTensor& w, const float* x, float* y, size_t row_begin, size_t row_end) {
    return neon::matvec_rows(trunk_view(w), x, y, row_begin, row_end);
}

size_t matmul_tile_floats_neon(const format::LoadedTensor& w) { return neon::matmul_tile_floats(trunk_view(w)); }

bool matmul_rows_neon(const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                      size_t row_begin, size_t row_end, float* tile) {
    return neon::matmul_rows(trunk_view(w), x, ldx, tokens, y, ldy, row_begin, row_end, tile);
}

bool build_vq_table_neon(const VqTableShape& shape, const float* books, const float* x, float* table) {
    return neon::build_table(shape, books, x, table);
}

bool apply_vq_table_neon(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                         const float* table, float* y, size_t row_begin, size_t row_end) {
    return neon::apply_table(shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
}

bool vq_matmul_rows_neon(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                         const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                         size_t row_end) {
    return neon::vq_matmul_rows(shape, packed6, indices, scales_f16, books, x, ldx, tokens, y, ldy, row_begin, row_end);
}

}  // namespace waste::kernels

#endif  // WASTE_NEON_SIMD
