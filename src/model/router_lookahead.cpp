// router_lookahead.cpp — predicting the next MoE layer's experts
// (docs/anchors.md: upstream measured 92% precision at rank 1 and 81% in the
// top 6): the next layer's router, on the current post-attention hidden
// state normed with the next layer's own FFN norm, ranked by the score the
// router's kind itself selects by (model/routers.h: the biased sigmoid, or the
// softmax probability). Ungrouped: a prediction only
// needs a ranking, and the demand step still chooses exactly. Never touches
// what the MoE step computes; a wrong prediction costs a read, nothing else.
// A decode token prefetches its own top `lookahead`, for the next
// `lookahead_layers` MoE layers from the same state (the farther ones
// predicted less well, but read while more compute runs; each is predicted
// again from its nearer state, which re-reads nothing already in flight);
// a prefill chunk the union of its tokens' for the next layer (with hundreds
// of tokens, nearly every expert), so the next layer's reads overlap this
// layer's experts' products.
#include <algorithm>
#include <numeric>

#include "kernels/elementwise.h"
#include "model/forward.h"
#include "model/routers.h"
#include "platform/error.h"

namespace waste::model {

namespace {

// The `n` best experts of one token's selection scores, best first (ties: lower id).
std::vector<int> best_experts(const float* scores, size_t experts, size_t n) {
    std::vector<int> ranked(experts);
    std::iota(ranked.begin(), ranked.end(), 0);
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end(),
                      [&](int a, int b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
    ranked.resize(n);
    return ranked;
}

}  // namespace

namespace {

// One layer's prediction from x: false where `layer` is past the last or
// not an MoE layer (nothing predicted).
bool predict_layer(ForwardContext& ctx, int layer, const float* x, size_t tokens, size_t want, bool record) {
    const format::ModelConfig& c = ctx.config;
    if (layer >= c.layers) return false;
    const LayerWeights& lw = ctx.weights.layers[layer];
    if (!lw.moe) return false;
    const size_t hidden = c.hidden, experts = c.experts;
    // A chunk's prediction pins up to every expert of the next layer while
    // this layer's own are pinned: only where the cache holds both at once
    // (and a decode step's top-k besides), so no demand group ever shrinks for it.
    if (tokens > 1 && ctx.experts.max_pinned() < 2 * experts + static_cast<size_t>(c.top_k)) return false;
    ProfileScope scope(ctx.profile, ProfileCategory::router);
    // decode: row 1 of the chunk buffers (a decode chunk uses only row 0);
    // a chunk: its own rows, which the MoE step rewrites before it reads them
    const size_t row = tokens == 1 ? 1 : 0;
    float* normed = ctx.ws.normed.data() + row * hidden;     // [T][H]
    float* scores = ctx.ws.router.data() + row * experts;    // [T][E]
    norm_rows(x, lw.post_norm, static_cast<float>(c.rms_eps), tokens, hidden, normed);
    project_exact(ctx, *lw.moe_weights.router, normed, hidden, tokens, scores, experts);
    const size_t n = std::min(want, experts);
    std::vector<char> predicted(experts, 0);
    for (size_t t = 0; t < tokens; ++t) {
        selection_scores(c, lw.moe_weights.router_bias.data(), scores + t * experts);
        std::vector<int> ranked = best_experts(scores + t * experts, experts, n);
        if (tokens == 1) {  // decode: best first, and recorded in the route dump
            if (record && ctx.routes) (*ctx.routes)[0][layer].lookahead = ranked;
            ctx.experts.prefetch(layer, ranked);
            return true;
        }
        for (int e : ranked) predicted[static_cast<size_t>(e)] = 1;
    }
    // a chunk: the union, in ascending id (the order the MoE step requests them)
    std::vector<int> union_ids;
    for (size_t e = 0; e < experts; ++e)
        if (predicted[e]) union_ids.push_back(static_cast<int>(e));
    ctx.experts.prefetch(layer, union_ids);
    return true;
}

}  // namespace

void lookahead_prefetch(ForwardContext& ctx, int next_layer, const float* x, size_t tokens) {
    const size_t want = ctx.experts.lookahead();
    if (want == 0 || tokens == 0) return;
    // a decode step: the next lookahead_layers() MoE layers, nearest first;
    // a chunk: the next one
    const int depth = tokens == 1 ? std::max(ctx.experts.lookahead_layers(), 1) : 1;
    for (int d = 0; d < depth; ++d)
        if (!predict_layer(ctx, next_layer + d, x, tokens, want, d == 0)) break;
}

}  // namespace waste::model
