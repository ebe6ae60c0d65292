// gqa_attend.h — the softmax part of grouped-query attention: a chunk's
// queries (normed and rotated) against a key/value cache that already holds
// the chunk's own rows. The projections, norms and RoPE stay in
// gqa_layer.cpp.
//
// Contract: token t of the chunk (position `position + t`) and query head h
// read key/value head h / (heads / kv_heads) at the positions p with
// max(0, position + t + 1 − window) <= p <= position + t (window 0: from 0);
// scores are dot(q, k) (kernels::dots), their softmax is softmax_weights
// (model/forward.h: scaled, max-shifted, summed in f64; a sink, if any, one
// more column, dropped after), and the output is Σ weight·value accumulated in
// ascending p (kernels::axpys). The work is blocked — a key/value head's
// keys (then values) of a run of positions are copied together and every
// query head of its group and a block of tokens read them while they are in
// L1 — but every (token, head)'s operations and
// their order are those of the unblocked loop, so neither the blocking, the
// chunk size nor the thread count changes a bit (tests/gqa_attend_test.cpp).
#pragma once

#include <cstddef>

#include "kernels/isa.h"
#include "platform/thread_pool.h"

namespace waste::model {

struct GqaAttendShape {
    size_t heads = 0, kv_heads = 0, head_dim = 0;
    size_t row = 0;       // floats per cache row: [keys kv_heads·head_dim | values kv_heads·head_dim]
    size_t ld = 0;        // floats between tokens in q and out (>= heads·head_dim)
    size_t window = 0;    // 0: every earlier position; else only the last `window`
    size_t ring = 0;      // 0: position p at cache row p; else at row p % ring (a sliding layer's ring)
    float scale = 1.0f;   // score scale (head_dim^-0.5 unless the family says otherwise)
    const float* sinks = nullptr;  // per query head, an extra softmax logit (gpt-oss), or null
};

// out[t·ld + h·head_dim ..] for t < tokens, h < heads; q has the same layout.
// The cache holds positions [0, position + tokens) (a ring: the last `ring`).
void gqa_attend(kernels::Isa isa, platform::ThreadPool& pool, const GqaAttendShape& shape, const float* q,
                const float* cache, size_t position, size_t tokens, float* out);

}  // namespace waste::model
