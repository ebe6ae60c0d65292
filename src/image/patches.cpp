// patches.cpp — see patches.h. Compiled with -ffp-contract=off (CMakeLists):
// §2.3's f32 arithmetic is reproduced operation by operation, and a fused
// multiply-add would round differently from upstream.
#include "image/patches.h"

#include <algorithm>
#include <cmath>

#include "platform/error.h"

namespace waste::image {

PatchGrid patch_grid(uint32_t source_width, uint32_t source_height, uint32_t max_patches) {
    if (max_patches < 1 || max_patches > max_patch_budget)
        fail(WASTE_ERR_INVALID_ARGUMENT, "max_patches {} is outside [1, {}]", max_patches, max_patch_budget);
    if (source_width < 1 || source_height < 1)
        fail(WASTE_ERR_INVALID_ARGUMENT, "image size {}x{} has no pixels", source_width, source_height);
    const double sw = source_width, sh = source_height, budget = max_patches;
    const double scale = std::min(1.0, std::sqrt(budget / (sw * sh / 196.0)));
    int64_t gw = static_cast<int64_t>(std::floor(sw * scale / 14.0 + 0.5));
    int64_t gh = static_cast<int64_t>(std::floor(sh * scale / 14.0 + 0.5));
    gw = std::max<int64_t>(gw, 2);
    gh = std::max<int64_t>(gh, 2);
    gw -= gw % 2;   // even, for the 2×2 merge
    gh -= gh % 2;
    while (gw * gh > max_patches && (gw > 2 || gh > 2)) {
        if (gw >= gh && gw > 2) gw -= 2;
        else if (gh > 2) gh -= 2;
        else break;
    }
    return {static_cast<uint32_t>(gw), static_cast<uint32_t>(gh)};
}

PatchTensor image_to_patches(const RgbImage& image, uint32_t max_patches, const Normalisation& normalisation) {
    WASTE_CHECK(image.rgb.size() == size_t{image.width} * image.height * 3);
    for (int c = 0; c < 3; ++c)
        if (!std::isfinite(normalisation.mean[c]) || !std::isfinite(normalisation.std[c]) || normalisation.std[c] == 0.0f)
            fail(WASTE_ERR_INVALID_ARGUMENT, "image normalisation channel {}: mean {} / std {} (std must be finite and non-zero)",
                 c, normalisation.mean[c], normalisation.std[c]);
    PatchTensor out;
    out.grid = patch_grid(image.width, image.height, max_patches);
    out.source_width = image.width;
    out.source_height = image.height;
    const uint32_t gw = out.grid.width, gh = out.grid.height;
    const uint32_t W = patch_side * gw, H = patch_side * gh;
    out.pixels.assign(size_t{gw} * gh * patch_values, 0.0f);

    const int64_t sw = image.width, sh = image.height;
    const float rx = static_cast<float>(sw) / static_cast<float>(W);
    const float ry = static_cast<float>(sh) / static_cast<float>(H);
    // Per output column: the two source columns and the weight (the same for every row).
    std::vector<int64_t> x0s(W), x1s(W);
    std::vector<float> wxs(W);
    for (uint32_t X = 0; X < W; ++X) {
        const float fx = (static_cast<float>(X) + 0.5f) * rx - 0.5f;
        const float floor_x = std::floor(fx);
        wxs[X] = fx - floor_x;   // from the unclamped floor
        const int64_t x0 = static_cast<int64_t>(floor_x);
        x0s[X] = std::clamp<int64_t>(x0, 0, sw - 1);
        x1s[X] = std::clamp<int64_t>(x0 + 1, 0, sw - 1);
    }
    const uint8_t* src = image.rgb.data();
    for (uint32_t Y = 0; Y < H; ++Y) {
        const float fy = (static_cast<float>(Y) + 0.5f) * ry - 0.5f;
        const float floor_y = std::floor(fy);
        const float wy = fy - floor_y;
        const int64_t y0 = std::clamp<int64_t>(static_cast<int64_t>(floor_y), 0, sh - 1);
        const int64_t y1 = std::clamp<int64_t>(static_cast<int64_t>(floor_y) + 1, 0, sh - 1);
        const uint8_t* row0 = src + y0 * sw * 3;
        const uint8_t* row1 = src + y1 * sw * 3;
        const uint32_t py = Y / patch_side, j = Y % patch_side;
        for (uint32_t X = 0; X < W; ++X) {
            const float wx = wxs[X];
            const int64_t x0 = x0s[X] * 3, x1 = x1s[X] * 3;
            const uint32_t px = X / patch_side, i = X % patch_side;
            float* patch = out.pixels.data() + (size_t{py} * gw + px) * patch_values;
            for (int c = 0; c < 3; ++c) {
                const float v = (1.0f - wy) * ((1.0f - wx) * static_cast<float>(row0[x0 + c]) + wx * static_cast<float>(row0[x1 + c])) +
                                wy * ((1.0f - wx) * static_cast<float>(row1[x0 + c]) + wx * static_cast<float>(row1[x1 + c]));
                patch[c * patch_side * patch_side + j * patch_side + i] =
                    (v / 255.0f - normalisation.mean[c]) / normalisation.std[c];
            }
        }
    }
    return out;
}

}  // namespace waste::image
