#include "model/vision_attention.h"

#include <algorithm>

#include "kernels/trunk_matmul.h"
#include "model/vision_stages.h"
#include "platform/error.h"

namespace waste::model::vision {
namespace {

// An f32 array [rows][cols] as a trunk tensor, so that the matmul kernel can
// take it as its weight (attention's keys and values).
format::LoadedTensor f32_tensor(const std::vector<float>& values, int64_t rows, int64_t cols, format::TrunkTensor& info) {
    info = format::TrunkTensor{};
    info.name = "vision attention operand";
    info.fmt = format::TrunkFormat::f32;
    info.shape = {rows, cols};
    info.bytes = values.size() * sizeof(float);
    format::derive_trunk_layout(info, info.name);
    return {&info, {reinterpret_cast<const uint8_t*>(values.data()), info.bytes}, {}};
}

// Scores held at once (16 MiB): linear in L where a whole L × L matrix
// would be 4 TiB at max_patches' bound of 2^20.
constexpr size_t score_floats = size_t{1} << 22;

}  // namespace

size_t query_block(size_t L) { return std::max<size_t>(1, std::min(L, score_floats / L)); }

void attend(platform::ThreadPool& pool, const std::vector<float>& qkv, size_t L, size_t Q, int heads, int hd, size_t block,
            std::vector<float>& out) {
    WASTE_CHECK(block >= 1);
    std::vector<float> keys(L * hd), values_t(hd * L), scores(block * L);
    format::TrunkTensor key_info, value_info;
    out.resize(L * Q);
    for (int h = 0; h < heads; ++h) {
        const size_t q_at = static_cast<size_t>(h) * hd, k_at = Q + q_at, v_at = 2 * Q + q_at;
        for (size_t r = 0; r < L; ++r)
            for (int d = 0; d < hd; ++d) {
                keys[r * hd + d] = qkv[r * 3 * Q + k_at + d];
                values_t[d * L + r] = qkv[r * 3 * Q + v_at + d];
            }
        const format::LoadedTensor k = f32_tensor(keys, static_cast<int64_t>(L), hd, key_info);
        const format::LoadedTensor v = f32_tensor(values_t, hd, static_cast<int64_t>(L), value_info);
        for (size_t first = 0; first < L; first += block) {
            const size_t n = std::min(block, L - first);
            kernels::matmul(pool, k, &qkv[first * 3 * Q + q_at], 3 * Q, n, scores.data(), L);
            pool.parallel_for(n, [&](size_t begin, size_t end) { vision::softmax_rows(scores.data(), L, hd, begin, end); });
            kernels::matmul(pool, v, scores.data(), L, n, &out[first * Q + q_at], Q);
        }
    }
}

}  // namespace waste::model::vision
