#include "kernels/vq_lut.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "format/f16.h"
#include "kernels/isa_kernels.h"
#include "kernels/isa_neon.h"
#include "kernels/vq_int8_build.h"
#include "platform/error.h"

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

// T[v][s][e] of build_vq_table_int8 for one position and stage, all
// entries (padded to 16): exact in integers. A plain loop over the book's
// layout, which compilers vectorise (ARM runs this reference).
void int8_entries(const VqInt8Book& book, size_t dwords, const uint8_t* xu, int32_t* t, size_t groups) {
    for (size_t g = 0; g < groups; ++g) {
        int32_t sum[16] = {};
        for (size_t d = 0; d < dwords; ++d) {
            const int8_t* c = book.values.data() + (g * dwords + d) * 64;
            for (size_t k = 0; k < 4; ++k) {
                const int32_t x = static_cast<int32_t>(xu[4 * d + k]) - 128;
                for (size_t lane = 0; lane < 16; ++lane) sum[lane] += x * c[lane * 4 + k];
            }
        }
        std::memcpy(t + 16 * g, sum, sizeof sum);
    }
}

void build_vq_table_int8_scalar(const VqTableShape& shape, const VqInt8Book* books, const uint8_t* xu,
                                const float* scales, int8_t* q, float* block_scales) {
    const size_t stages = shape.stages, entries = shape.entries;
    const size_t stride = vq_int8_input_stride(shape), dwords = stride / 4, groups = (entries + 15) / 16;
    std::vector<int32_t> t(groups * 16);
    build_int8_table_blocks(
        shape, books, scales, q, block_scales,
        [&](size_t v0, size_t v1, int32_t* amax) {
            for (size_t v = v0; v < v1; ++v)
                for (size_t s = 0; s < stages; ++s) {
                    int8_entries(books[s], dwords, xu + v * stride, t.data(), groups);
                    int32_t m = 0;
                    for (size_t e = 0; e < entries; ++e) m = std::max(m, std::abs(t[e]));
                    amax[(v - v0) * stages + s] = m;
                }
        },
        [&](size_t v0, size_t v1, const float* f) {
            for (size_t v = v0; v < v1; ++v)
                for (size_t s = 0; s < stages; ++s) {
                    int8_t* row = q + (v * stages + s) * entries;
                    int8_entries(books[s], dwords, xu + v * stride, t.data(), groups);
                    for (size_t e = 0; e < entries; ++e)
                        row[e] = static_cast<int8_t>(
                            std::clamp(std::lrint(static_cast<float>(t[e]) * f[(v - v0) * stages + s]), -127l, 127l));
                }
        });
}

// round(v · 127 / max|v|) clamped, as the int8 table's own quantisation
// rounds; the scale is max|v| / 127 (0 for all zeros, NaN when not finite).
// Decode quantises every table's input with it (8 values a position), so it
// avoids libm calls: |v · 127 / max| ≤ 127 (plus rounding), and adding then
// subtracting 1.5·2^23 rounds such a value to the nearest integer, ties to
// even, exactly as lrint does in the default mode.
template <typename Out>
float quantize_span_int8(const float* v, size_t n, Out out) {
    float max_abs = 0;
    bool finite = true;
    for (size_t i = 0; i < n; ++i) {
        const float a = std::fabs(v[i]);
        finite = finite && a <= std::numeric_limits<float>::max();  // false for NaN and ±inf
        max_abs = a > max_abs ? a : max_abs;
    }
    if (!finite || max_abs == 0) {
        for (size_t i = 0; i < n; ++i) out(i, 0);
        return finite ? 0.0f : NAN;
    }
    const float inv = 127.0f / max_abs, magic = 12582912.0f;
    for (size_t i = 0; i < n; ++i) {
        const float r = rounded(rounded(v[i] * inv) + magic) - magic;
        out(i, std::clamp(static_cast<int>(r), -127, 127));
    }
    return max_abs / 127.0f;
}

}  // namespace

VqInt8Book quantize_vq_codebook_int8(int entries, int vec_dim, const float* book) {
    WASTE_CHECK(entries > 0 && vec_dim > 0 && vec_dim <= 64);
    const size_t dwords = (static_cast<size_t>(vec_dim) + 3) / 4, groups = (static_cast<size_t>(entries) + 15) / 16;
    VqInt8Book out;
    out.values.assign(groups * dwords * 64, 0);
    out.offsets.assign(groups * 16, 0);
    out.scale = quantize_span_int8(book, static_cast<size_t>(entries) * vec_dim, [&](size_t i, int c) {
        const size_t e = i / vec_dim, j = i % vec_dim;
        out.values[((e / 16 * dwords + j / 4) * 16 + e % 16) * 4 + j % 4] = static_cast<int8_t>(c);
        out.offsets[e] -= 128 * c;
    });
    return out;
}

size_t vq_int8_input_stride(const VqTableShape& shape) { return (static_cast<size_t>(shape.vec_dim) + 3) / 4 * 4; }

void quantize_vq_input_int8(const VqTableShape& shape, const float* x, uint8_t* xu, float* scales) {
    const size_t dim = shape.vec_dim, stride = vq_int8_input_stride(shape);
    for (size_t v = 0; v < static_cast<size_t>(shape.positions); ++v) {
        uint8_t* row = xu + v * stride;
        std::fill(row, row + stride, uint8_t{128});
        scales[v] = quantize_span_int8(x + v * dim, dim, [&](size_t j, int c) { row[j] = static_cast<uint8_t>(c + 128); });
    }
}

void build_vq_table_int8(Isa isa, const VqTableShape& shape, const VqInt8Book* books, const uint8_t* xu,
                         const float* scales, int8_t* q, float* block_scales) {
    WASTE_CHECK(shape.vec_dim > 0 && shape.vec_dim <= 64 && shape.stages >= 1 &&
                static_cast<size_t>(shape.stages) <= vq_int8_max_stages);
#if WASTE_X86_SIMD
    if (isa != Isa::scalar && build_vq_table_int8_x86(isa, shape, books, xu, scales, q, block_scales)) return;
#endif
    build_vq_table_int8_scalar(shape, books, xu, scales, q, block_scales);
}

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
