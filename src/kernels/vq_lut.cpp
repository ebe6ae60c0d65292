#include "kernels/vq_lut.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/f16.h"
#include "kernels/isa_kernels.h"
#include "kernels/isa_neon.h"

namespace waste::kernels {

namespace {

// The scalar references (the ISA variants must give these bits).
void build_vq_table_scalar(const VqTableShape& shape, const float* books, const float* x, float* table) {
    const size_t book_floats = static_cast<size_t>(shape.entries) * shape.vec_dim;
    for (int v = 0; v < shape.positions; ++v) {
        const float* xv = x + static_cast<size_t>(v) * shape.vec_dim;
        for (int s = 0; s < shape.stages; ++s) {
            const float* book = books + s * book_floats;
            float* out = table + (static_cast<size_t>(v) * shape.stages + s) * shape.entries;
            for (int e = 0; e < shape.entries; ++e) {
                const float* centroid = book + static_cast<size_t>(e) * shape.vec_dim;
                float acc = 0;
                // products rounded, never fused (vq_lut.h): rounded() keeps
                // an FMA target's compiler from contracting them
                for (int j = 0; j < shape.vec_dim; ++j) acc += rounded(xv[j] * centroid[j]);
                out[e] = acc;
            }
        }
    }
}

void apply_vq_table_scalar(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
                    const float* table, float* y, size_t row_begin, size_t row_end) {
    const size_t positions = shape.positions, stages = shape.stages, entries = shape.entries;
    const size_t per_position = packed6 ? 3 : stages;
    for (size_t r = row_begin; r < row_end; ++r) {
        const size_t block = r / 64, in_block = r % 64;
        float acc = 0;
        for (size_t v = 0; v < positions; ++v) {
            const uint8_t* idx = indices + ((block * positions + v) * 64 + in_block) * per_position;
            const float* t = table + v * stages * entries;
            if (packed6) {
                const unsigned s0 = idx[0] & 63u, s1 = (idx[0] >> 6) | ((idx[1] & 15u) << 2);
                const unsigned s2 = (idx[1] >> 4) | ((idx[2] & 3u) << 4), s3 = idx[2] >> 2;
                acc += t[s0];
                acc += t[entries + s1];
                acc += t[2 * entries + s2];
                acc += t[3 * entries + s3];
            } else {
                for (size_t s = 0; s < stages; ++s) acc += t[s * entries + idx[s]];
            }
        }
        uint16_t bits;
        std::memcpy(&bits, scales_f16 + 2 * r, 2);
        y[r] = format::f16_to_f32(bits) * acc;
    }
}

void apply_vq_table_int8_scalar(const VqTableShape& shape, bool packed6, const uint8_t* indices,
                                const uint8_t* scales_f16, const int8_t* q, const float* block_scales, float* y,
                                size_t row_begin, size_t row_end) {
    const size_t positions = shape.positions, stages = shape.stages, entries = shape.entries;
    const size_t per_position = packed6 ? 3 : stages;
    for (size_t r = row_begin; r < row_end; ++r) {
        const size_t block = r / 64, in_block = r % 64;
        float acc = 0;
        for (size_t b0 = 0; b0 < positions; b0 += vq_int8_block) {
            const size_t b1 = std::min(positions, b0 + vq_int8_block);
            int32_t sum = 0;
            for (size_t v = b0; v < b1; ++v) {
                const uint8_t* idx = indices + ((block * positions + v) * 64 + in_block) * per_position;
                const int8_t* t = q + v * stages * entries;
                if (packed6) {
                    const unsigned word = idx[0] | static_cast<unsigned>(idx[1]) << 8 | static_cast<unsigned>(idx[2]) << 16;
                    for (size_t s = 0; s < 4; ++s) sum += t[s * entries + ((word >> (6 * s)) & 63u)];
                } else {
                    for (size_t s = 0; s < stages; ++s) sum += t[s * entries + idx[s]];
                }
            }
            acc += block_scales[b0 / vq_int8_block] * static_cast<float>(sum);
        }
        uint16_t bits;
        std::memcpy(&bits, scales_f16 + 2 * r, 2);
        y[r] = format::f16_to_f32(bits) * acc;
    }
}

void quantize_vq_table_int8_scalar(const VqTableShape& shape, const float* table, int8_t* q, float* block_scales) {
    const size_t positions = shape.positions, per_position = static_cast<size_t>(shape.stages) * shape.entries;
    for (size_t b0 = 0; b0 < positions; b0 += vq_int8_block) {
        const size_t begin = b0 * per_position, end = std::min(positions, b0 + vq_int8_block) * per_position;
        float max_abs = 0;
        for (size_t i = begin; i < end; ++i) max_abs = std::max(max_abs, std::fabs(table[i]));
        const bool usable = max_abs > 0 && std::isfinite(max_abs);
        const float inv = usable ? 127.0f / max_abs : 0.0f;
        for (size_t i = begin; i < end; ++i)
            q[i] = static_cast<int8_t>(std::clamp(std::lrint(table[i] * inv), -127l, 127l));
        block_scales[b0 / vq_int8_block] = usable ? max_abs / 127.0f : 0.0f;
    }
}

}  // namespace

void quantize_vq_table_int8(Isa isa, const VqTableShape& shape, const float* table, int8_t* q, float* block_scales) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar && quantize_vq_table_int8_x86(isa, shape, table, q, block_scales)) return;
#endif
    quantize_vq_table_int8_scalar(shape, table, q, block_scales);
}

void apply_vq_table_int8(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                         const uint8_t* scales_f16, const int8_t* q, const float* block_scales, float* y,
                         size_t row_begin, size_t row_end) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar &&
        apply_vq_table_int8_x86(isa, shape, packed6, indices, scales_f16, q, block_scales, y, row_begin, row_end))
        return;
#endif
    apply_vq_table_int8_scalar(shape, packed6, indices, scales_f16, q, block_scales, y, row_begin, row_end);
}

bool vq_int8_fast_path() {
#if WASTE_X86_SIMD
    static const bool has = [] {
        __builtin_cpu_init();
        return best_isa() == Isa::avx512 && __builtin_cpu_supports("avx512vbmi");
    }();
    return has;
#else
    return false;
#endif
}

void build_vq_table(Isa isa, const VqTableShape& shape, const float* books, const float* x, float* table) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar && build_vq_table_x86(isa, shape, books, x, table)) return;
#endif
#if WASTE_NEON_SIMD
    if (isa == Isa::neon && build_vq_table_neon(shape, books, x, table)) return;
#endif
    build_vq_table_scalar(shape, books, x, table);
}

void apply_vq_table(Isa isa, const VqTableShape& shape, bool packed6, const uint8_t* indices,
                    const uint8_t* scales_f16, const float* table, float* y, size_t row_begin, size_t row_end) {
#if WASTE_X86_SIMD
    if (isa != Isa::scalar &&
        apply_vq_table_x86(isa, shape, packed6, indices, scales_f16, table, y, row_begin, row_end))
        return;
#endif
#if WASTE_NEON_SIMD
    if (isa == Isa::neon && apply_vq_table_neon(shape, packed6, indices, scales_f16, table, y, row_begin, row_end)) return;
#endif
    apply_vq_table_scalar(shape, packed6, indices, scales_f16, table, y, row_begin, row_end);
}

}  // namespace waste::kernels
