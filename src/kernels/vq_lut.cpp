#include "kernels/vq_lut.h"

#include <cstring>

#include "format/f16.h"

namespace waste::kernels {

void build_vq_table(const VqTableShape& shape, const float* books, const float* x, float* table) {
    const size_t book_floats = static_cast<size_t>(shape.entries) * shape.vec_dim;
    for (int v = 0; v < shape.positions; ++v) {
        const float* xv = x + static_cast<size_t>(v) * shape.vec_dim;
        for (int s = 0; s < shape.stages; ++s) {
            const float* book = books + s * book_floats;
            float* out = table + (static_cast<size_t>(v) * shape.stages + s) * shape.entries;
            for (int e = 0; e < shape.entries; ++e) {
                const float* centroid = book + static_cast<size_t>(e) * shape.vec_dim;
                float acc = 0;
                for (int j = 0; j < shape.vec_dim; ++j) acc += xv[j] * centroid[j];
                out[e] = acc;
            }
        }
    }
}

void apply_vq_table(const VqTableShape& shape, bool packed6, const uint8_t* indices, const uint8_t* scales_f16,
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

}  // namespace waste::kernels
