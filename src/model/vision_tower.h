// vision_tower.h — Kimi K3's vision tower and projector (vision.md §3): the
// patches of one image in, its N = L/4 embedding rows (text width) out.
//
// Loaded only when asked: a text-only open never reads or counts these
// tensors (they live outside tensor_prefix). Matrices stay in their stored
// format and go through the trunk matmul kernel; norms are f32 vectors.
// Every product — projections and attention's q·k and A·v — is the trunk
// matmul kernel, each output element computed whole by one thread in one
// order: any thread count gives the same bits.
//
// Deliberately not here: decoding and resizing pictures (src/image/), the
// splice into the token stream (the engine), attention (vision_attention.h)
// and the other stages' arithmetic (vision_stages.h).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "format/container.h"
#include "format/vision_config.h"
#include "platform/thread_pool.h"

namespace waste::model {

struct VisionBlockWeights {
    std::vector<float> norm0, norm1;           // [D]
    const format::LoadedTensor* wqkv = nullptr;  // [3Q, D]: q, k, v stacked
    const format::LoadedTensor* wo = nullptr;    // [D, Q]
    const format::LoadedTensor* fc0 = nullptr;   // [I, D]
    const format::LoadedTensor* fc1 = nullptr;   // [D, I]
};

class VisionTower {
public:
    // Checks the tensors against the config (vision.md §1.2) and reads them.
    static std::unique_ptr<VisionTower> load(const format::Container& container, const format::VisionConfig& config);

    // What load() and one embed() at max_patches hold at most: the tensors
    // as stored, their f32 copies (norms, position grid), the patch tensor
    // and every activation (vision_attention's score scratch included).
    static uint64_t planned_bytes(const format::Container& container, const format::VisionConfig& config);
    // Of those, the tensors as stored (what load() reads).
    static uint64_t weight_bytes(const format::Container& container, const format::VisionConfig& config);

    const format::VisionConfig& config() const { return config_; }
    // Bytes the tower's tensors occupy in RAM.
    uint64_t weight_bytes() const { return tensors_.storage.size(); }

    // pixels: [gh·gw][588] (vision.md §2.4 layout); gh and gw even, ≥ 2, and
    // gh·gw ≤ max_patches. Returns E: [gh·gw/4][TH] in merged-cell order.
    // Throws WASTE_ERR_INVALID_ARGUMENT naming a bad grid or pixel count.
    std::vector<float> embed(platform::ThreadPool& pool, std::span<const float> pixels, int gh, int gw) const;

private:
    VisionTower() = default;
    const format::LoadedTensor* matrix(const format::VisionTensorSpec& spec);

    format::VisionConfig config_;
    format::TensorSet tensors_;
    // Matrices as the kernels see them, [rows, cols] (an F32 conv kernel
    // stored [D, 3, 14, 14] has the bytes of [D, 588]).
    std::deque<format::TrunkTensor> shapes_;
    std::deque<format::LoadedTensor> matrices_;
    const format::LoadedTensor* patch_embed_ = nullptr;  // [D, 588]
    std::vector<float> pos_grid_;                        // [pos_h][pos_w][D]
    std::vector<VisionBlockWeights> blocks_;
    std::vector<float> final_norm_;                      // [D]
    const format::LoadedTensor* proj0_ = nullptr;        // [4D, 4D]
    const format::LoadedTensor* proj2_ = nullptr;        // [TH, 4D]
    std::vector<float> post_norm_;                       // [TH]
};

}  // namespace waste::model
