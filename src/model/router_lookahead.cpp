// router_lookahead.cpp — predicting the next MoE layer's experts in decode
// (docs/anchors.md: upstream measured 92% precision at rank 1 and 81% in the
// top 6): the next layer's router, on the current post-attention hidden
// state normed with the next layer's own FFN norm, ranked by the score the
// router's kind itself selects by (model/routers.h: the biased sigmoid, or the
// softmax probability). Ungrouped: a prediction only
// needs a ranking, and the demand step still chooses exactly. Never touches
// what the MoE step computes; a wrong prediction costs a read, nothing else.
#include <algorithm>
#include <numeric>

#include "kernels/elementwise.h"
#include "model/forward.h"
#include "model/routers.h"
#include "platform/error.h"

namespace waste::model {

void lookahead_prefetch(ForwardContext& ctx, int next_layer, const float* x) {
    const size_t want = ctx.experts.lookahead();
    const format::ModelConfig& c = ctx.config;
    if (want == 0 || next_layer >= c.layers) return;
    const LayerWeights& lw = ctx.weights.layers[next_layer];
    if (!lw.moe) return;
    const size_t hidden = c.hidden, experts = c.experts;
    ProfileScope scope(ctx.profile, ProfileCategory::router);
    // row 1 of the chunk buffers: a decode chunk uses only row 0
    float* normed = ctx.ws.normed.data() + hidden;       // [H]
    float* scores = ctx.ws.router.data() + experts;      // [E]
    kernels::rmsnorm(kernels::active_isa(), x, lw.post_norm.data(), static_cast<float>(c.rms_eps), hidden, normed);
    project_exact(ctx, *lw.moe_weights.router, normed, hidden, 1, scores, experts);
    selection_scores(c, lw.moe_weights.router_bias.data(), scores);
    const size_t n = std::min(want, experts);
    std::vector<int> ranked(experts);
    std::iota(ranked.begin(), ranked.end(), 0);
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n), ranked.end(),
                      [&](int a, int b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
    ranked.resize(n);
    if (ctx.routes) (*ctx.routes)[0][next_layer].lookahead = ranked;
    ctx.experts.prefetch(next_layer, ranked);
}

}  // namespace waste::model
