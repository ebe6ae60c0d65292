#include "model/vision_stages.h"

#include <algorithm>
#include <cmath>


namespace waste::model::vision {

std::vector<float> resize_position_grid(const std::vector<float>& grid, int pos_h, int pos_w, int D, int gh, int gw) {
    if (gh == pos_h && gw == pos_w) return grid;
    std::vector<float> out(static_cast<size_t>(gh) * gw * D);
    // Source coordinate of an output cell's centre (PyTorch's align_corners=False).
    // The weight comes from the unclamped floor, the index is clamped after:
    // PyTorch's values (it clamps a negative coordinate to 0 first).
    const float scale_y = static_cast<float>(pos_h) / static_cast<float>(gh);
    const float scale_x = static_cast<float>(pos_w) / static_cast<float>(gw);
    for (int y = 0; y < gh; ++y) {
        const float fy = (static_cast<float>(y) + 0.5f) * scale_y - 0.5f;
        const int y0 = static_cast<int>(std::floor(fy));
        const float wy = fy - static_cast<float>(y0);
        const int ya = std::clamp(y0, 0, pos_h - 1), yb = std::clamp(y0 + 1, 0, pos_h - 1);
        for (int x = 0; x < gw; ++x) {
            const float fx = (static_cast<float>(x) + 0.5f) * scale_x - 0.5f;
            const int x0 = static_cast<int>(std::floor(fx));
            const float wx = fx - static_cast<float>(x0);
            const int xa = std::clamp(x0, 0, pos_w - 1), xb = std::clamp(x0 + 1, 0, pos_w - 1);
            const float* g00 = &grid[(static_cast<size_t>(ya) * pos_w + xa) * D];
            const float* g01 = &grid[(static_cast<size_t>(ya) * pos_w + xb) * D];
            const float* g10 = &grid[(static_cast<size_t>(yb) * pos_w + xa) * D];
            const float* g11 = &grid[(static_cast<size_t>(yb) * pos_w + xb) * D];
            float* o = &out[(static_cast<size_t>(y) * gw + x) * D];
            for (int d = 0; d < D; ++d)
                o[d] = (1 - wy) * (1 - wx) * g00[d] + (1 - wy) * wx * g01[d] + wy * (1 - wx) * g10[d] + wy * wx * g11[d];
        }
    }
    return out;
}

RopeTable rope_table(int gh, int gw, int head_dim) {
    RopeTable t;
    t.pairs = head_dim / 2;
    const size_t L = static_cast<size_t>(gh) * gw;
    t.cos.resize(L * t.pairs);
    t.sin.resize(L * t.pairs);
    for (size_t p = 0; p < L; ++p) {
        const double column = static_cast<double>(p % gw), row = static_cast<double>(p / gw);
        for (int j = 0; j < t.pairs; ++j) {
            // Even pairs turn with the column (width), odd with the row: the
            // upstream code's order, which its docstring states backwards.
            const double theta = std::pow(10000.0, -4.0 * (j / 2) / head_dim);
            const double angle = (j % 2 == 0 ? column : row) * theta;
            t.cos[p * t.pairs + j] = static_cast<float>(std::cos(angle));
            t.sin[p * t.pairs + j] = static_cast<float>(std::sin(angle));
        }
    }
    return t;
}

void apply_rope(const RopeTable& table, size_t patch, float* v) {
    const float* c = &table.cos[patch * table.pairs];
    const float* s = &table.sin[patch * table.pairs];
    for (int j = 0; j < table.pairs; ++j) {
        const float a = v[2 * j], b = v[2 * j + 1];
        v[2 * j] = a * c[j] - b * s[j];
        v[2 * j + 1] = a * s[j] + b * c[j];
    }
}

void softmax_rows(float* scores, size_t L, int hd, size_t row_begin, size_t row_end) {
    const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
    for (size_t p = row_begin; p < row_end; ++p) {
        float* row = scores + p * L;
        float max_score = -INFINITY;
        for (size_t r = 0; r < L; ++r) {
            row[r] *= inv_sqrt;
            max_score = std::max(max_score, row[r]);
        }
        float total = 0;
        for (size_t r = 0; r < L; ++r) {
            row[r] = std::exp(row[r] - max_score);
            total += row[r];
        }
        for (size_t r = 0; r < L; ++r) row[r] /= total;
    }
}

std::vector<float> merge_2x2(const std::vector<float>& z, int gh, int gw, int D) {
    const int mh = gh / 2, mw = gw / 2;
    std::vector<float> m(static_cast<size_t>(mh) * mw * 4 * D);
    for (int a = 0; a < mh; ++a)
        for (int c = 0; c < mw; ++c) {
            const size_t patches[4] = {static_cast<size_t>(2 * a) * gw + 2 * c, static_cast<size_t>(2 * a) * gw + 2 * c + 1,
                                       static_cast<size_t>(2 * a + 1) * gw + 2 * c,
                                       static_cast<size_t>(2 * a + 1) * gw + 2 * c + 1};
            float* cell = &m[(static_cast<size_t>(a) * mw + c) * 4 * D];
            for (int i = 0; i < 4; ++i) std::copy_n(&z[patches[i] * D], D, cell + static_cast<size_t>(i) * D);
        }
    return m;
}

float gelu_tanh(float z) {
    const float k = 0.7978845608028654f;  // sqrt(2/π)
    return 0.5f * z * (1.0f + std::tanh(k * (z + 0.044715f * z * z * z)));
}

float gelu_erf(float z) { return 0.5f * z * (1.0f + std::erf(z * 0.7071067811865476f)); }

}  // namespace waste::model::vision
