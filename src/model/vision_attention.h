// vision_attention.h — the vision tower's full attention within one image
// (vision.md §3.3), through the trunk matmul kernel.
#pragma once

#include <cstddef>
#include <vector>

#include "platform/thread_pool.h"

namespace waste::model::vision {

// Queries per block of scores: min(L, 2^22 / L), so the score scratch stays
// linear in L. At K3's 1,024 patches one block holds every query.
size_t query_block(size_t L);

// Every head over all L patches: S = q_h K_hᵀ, softmax per row of S/sqrt(hd)
// (vision_stages.h), o_h = S V_h, queries `block` at a time. qkv: [L][3Q]
// (q, k, v, RoPE applied), out: [L][Q]. Heads one after the other, each
// product's rows split over the pool (each output element whole by one
// thread): any thread count gives the same bits for a given block.
void attend(platform::ThreadPool& pool, const std::vector<float>& qkv, size_t L, size_t Q, int heads, int hd, size_t block,
            std::vector<float>& out);

}  // namespace waste::model::vision
