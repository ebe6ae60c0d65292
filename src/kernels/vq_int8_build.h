// vq_int8_build.h — the block logic of build_vq_table_int8 (vq_lut.h),
// shared by its scalar reference and its AVX2 and AVX-512 VNNI bodies, so
// the steps that decide the bits (the f32 products, the NaN and all-zero
// blocks, the block scale) are written once; a body supplies only its
// integer dots:
//   max_abs(v0, v1, amax): amax[(v − v0)·stages + s] = max_e |T[v][s][e]|
//                          for the positions [v0, v1) of one block;
//   round(v0, v1, f):      q's rows of those positions, each entry
//                          clamp(round(float(T) · f[(v − v0)·stages + s]), ±127).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/vq_lut.h"

namespace waste::kernels {

constexpr size_t vq_int8_max_stages = 8;  // the container's bound (container-v0 §5)

template <typename MaxAbs, typename Round>
void build_int8_table_blocks(const VqTableShape& shape, const VqInt8Book* books, const float* scales, int8_t* q,
                             float* block_scales, MaxAbs max_abs, Round round) {
    const size_t positions = shape.positions, stages = shape.stages, entries = shape.entries;
    int32_t amax[vq_int8_block * vq_int8_max_stages];
    float g[vq_int8_block * vq_int8_max_stages];
    for (size_t b0 = 0; b0 < positions; b0 += vq_int8_block) {
        const size_t b1 = std::min(positions, b0 + static_cast<size_t>(vq_int8_block)), n = (b1 - b0) * stages;
        max_abs(b0, b1, amax);
        bool finite = true;
        float max_a = 0;
        for (size_t i = 0; i < n; ++i) {
            g[i] = scales[b0 + i / stages] * books[i % stages].scale;
            finite = finite && std::isfinite(g[i]);
            max_a = std::max(max_a, static_cast<float>(amax[i]) * g[i]);
        }
        finite = finite && std::isfinite(max_a);
        if (!finite || max_a == 0) {
            std::memset(q + b0 * stages * entries, 0, n * entries);
            block_scales[b0 / vq_int8_block] = finite ? 0.0f : NAN;
            continue;
        }
        const float inv = 127.0f / max_a;
        for (size_t i = 0; i < n; ++i) g[i] *= inv;  // now each row's factor f
        round(b0, b1, g);
        block_scales[b0 / vq_int8_block] = max_a / 127.0f;
    }
}

}  // namespace waste::kernels
