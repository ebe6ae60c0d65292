#include "kernels/vq_matmul.h"

#include <cstring>
#include <vector>

#include "format/f16.h"
#include "kernels/isa_kernels.h"
#include "kernels/isa_neon.h"

namespace waste::kernels {
namespace {

inline unsigned index_at(const uint8_t* p, bool packed6, size_t s) {
    if (!packed6) return p[s];
    const unsigned word = p[0] | static_cast<unsigned>(p[1]) << 8 | static_cast<unsigned>(p[2]) << 16;
    return (word >> (6 * s)) & 63u;
}

// Row r's weights: ((0 + C_0) + C_1) + … per column.
void dequantize_row_scalar(const VqTableShape& shape, bool packed6, const uint8_t* indices, const float* books, size_t r,
                           float* out) {
    const size_t positions = shape.positions, stages = shape.stages, dim = shape.vec_dim;
    const size_t bytes = packed6 ? 3 : stages, book_floats = static_cast<size_t>(shape.entries) * dim;
    for (size_t v = 0; v < positions; ++v) {
        const uint8_t* p = indices + ((r / 64 * positions + v) * 64 + r % 64) * bytes;
        for (size_t j = 0; j < dim; ++j) {
            float w = 0;
            for (size_t s = 0; s < stages; ++s) w += books[s * book_floats + index_at(p, packed6, s) * dim + j];
            out[v * dim + j] = w;
        }
    }
}

void vq_matmul_rows_scalar(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                           const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy,
                           size_t row_begin, size_t row_end) {
    const size_t cols = static_cast<size_t>(shape.positions) * shape.vec_dim;
    std::vector<float> w(cols);
    for (size_t r = row_begin; r < row_end; ++r) {
        uint16_t bits;
        std::memcpy(&bits, scales_f16 + 2 * r, 2);
        const float scale = format::f16_to_f32(bits);
        dequantize_row_scalar(shape, packed6, indices, books, r, w.data());
        for (size_t t = 0; t < tokens; ++t) {
            const float* xt = x + t * ldx;
            float acc = 0;
            for (size_t c = 0; c < cols; ++c) acc += w[c] * xt[c];
            y[t * ldy + r] = scale * acc;
        }
    }
}

}  // namespace

void vq_dequantize_rows(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const float* books,
                        size_t row_begin, size_t n, float* out, size_t ld) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar && isa_runs(isa) && vq_dequantize_rows_x86(isa, shape, packed6, indices, books, row_begin, n, out, ld))
        return;
#else
    (void)isa;
#endif
    for (size_t k = 0; k < n; ++k) dequantize_row_scalar(shape, packed6, indices, books, row_begin + k, out + k * ld);
}

void vq_matmul_rows(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                    const float* books, const float* x, size_t ldx, size_t tokens, float* y, size_t ldy, size_t row_begin,
                    size_t row_end) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar && vq_matmul_rows_x86(isa, shape, packed6, indices, scales_f16, books, x, ldx, tokens, y, ldy,
                                                 row_begin, row_end))
        return;
#endif
#if WASTE_NEON_SIMD
    if (isa == Isa::neon && vq_matmul_rows_neon(shape, packed6, indices, scales_f16, books, x, ldx, tokens, y, ldy, row_begin,
                                                row_end))
        return;
#endif
    vq_matmul_rows_scalar(shape, packed6, indices, scales_f16, books, x, ldx, tokens, y, ldy, row_begin, row_end);
}

}  // namespace waste::kernels
