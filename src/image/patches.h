// patches.h — an RGB image to the tower's patch tensor (vision.md §2.2–2.4):
// upstream's patch-grid rule, the bilinear resize to 14·gw × 14·gh, the
// per-channel normalisation, and the conv kernel's patch layout.
//
// Reproduces upstream's rule, not the release processor's (vision.md §6.8):
// compatibility is measured against upstream. Does not decode (image.h) or
// run the tower.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "image/image.h"

namespace waste::image {

inline constexpr uint32_t patch_side = 14;                                   // pixels per patch side
inline constexpr uint32_t patch_values = 3 * patch_side * patch_side;        // 588 per patch
// The largest max_patches accepted: the release processor's own ceiling
// (vision.md §6.8), which bounds the tensor at 65,536 × 588 floats (147 MiB).
inline constexpr uint32_t max_patch_budget = 65536;

struct PatchGrid {
    uint32_t width = 0, height = 0;   // gw, gh: patches per row, rows of patches; both even, ≥ 2
};

// vision.md §2.2, in float64 as written. max_patches in [1, max_patch_budget]
// (WASTE_ERR_INVALID_ARGUMENT otherwise); the grid is never below 2×2, even
// when that exceeds a budget under 4.
PatchGrid patch_grid(uint32_t source_width, uint32_t source_height, uint32_t max_patches);

// vision.json's image_mean / image_std, per channel R G B (K3: 0.5 / 0.5).
struct Normalisation {
    std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
    std::array<float, 3> std{0.5f, 0.5f, 0.5f};
};

struct PatchTensor {
    PatchGrid grid;
    uint32_t source_width = 0, source_height = 0;
    std::vector<float> pixels;   // [gh·gw][588] f32: patch p = py·gw + px, value k = c·196 + j·14 + i
};

// Resizes (bilinear, half-pixel centres, no antialias, edge-clamped, f32 as
// written in §2.3), normalises ((v/255 − mean)/std; std must be finite and
// non-zero) and lays out the patches (§2.4).
PatchTensor image_to_patches(const RgbImage& image, uint32_t max_patches, const Normalisation& normalisation);

}  // namespace waste::image
