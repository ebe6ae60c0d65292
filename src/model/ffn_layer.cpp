// ffn_layer.cpp — the dense SwiGLU FFN and the MoE block (models.md §3, §4):
// sigmoid router with correction bias, grouped top-k, renormalise, scale;
// routed experts through VQ lookup tables; latent MoE; shared experts.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "format/expert_record.h"
#include "kernels/trunk_matvec.h"
#include "model/forward.h"
#include "platform/error.h"

namespace waste::model {

void dense_ffn(ForwardContext& ctx, const FfnWeights& w, const float* x, float* out) {
    float* g = ctx.ws.ffn_gate.data();
    float* u = ctx.ws.ffn_up.data();
    kernels::matvec(ctx.pool, *w.gate, x, g);
    kernels::matvec(ctx.pool, *w.up, x, u);
    for (int i = 0; i < w.intermediate; ++i) g[i] = ctx.act(g[i], u[i]);
    kernels::matvec(ctx.pool, *w.down, g, out);
}

namespace {

// Top-k over the biased scores, grouped when n_group > 1; ties to the lower id.
std::vector<int> select_experts(const format::ModelConfig& c, const std::vector<float>& biased) {
    const int experts = c.experts;
    std::vector<char> allowed(experts, 1);
    if (c.expert_groups > 1) {
        const int per_group = experts / c.expert_groups;
        std::vector<float> group_score(c.expert_groups);
        for (int g = 0; g < c.expert_groups; ++g) {
            // sum of the top-2 scores in the group (a one-expert group scores its one)
            float first = -INFINITY, second = -INFINITY;
            for (int e = g * per_group; e < (g + 1) * per_group; ++e) {
                if (biased[e] > first) {
                    second = first;
                    first = biased[e];
                } else if (biased[e] > second) second = biased[e];
            }
            group_score[g] = per_group >= 2 ? first + second : first;
        }
        std::vector<int> order(c.expert_groups);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return group_score[a] > group_score[b]; });
        std::fill(allowed.begin(), allowed.end(), 0);
        for (int i = 0; i < c.top_groups; ++i)
            for (int e = order[i] * per_group; e < (order[i] + 1) * per_group; ++e) allowed[e] = 1;
    }
    std::vector<int> candidates;
    for (int e = 0; e < experts; ++e)
        if (allowed[e]) candidates.push_back(e);
    std::partial_sort(candidates.begin(), candidates.begin() + c.top_k, candidates.end(), [&](int a, int b) {
        return biased[a] > biased[b] || (biased[a] == biased[b] && a < b);
    });
    candidates.resize(c.top_k);
    return candidates;
}

}  // namespace

void moe_ffn(ForwardContext& ctx, int layer, const MoeWeights& w, const float* x, float* out) {
    const format::ModelConfig& c = ctx.config;
    const format::Container& container = ctx.container;
    const format::ExpertQuant& quant = container.manifest().quant;
    const format::ExpertLayout& layout = container.expert_layout();
    Workspace& ws = ctx.ws;
    const int hidden = c.hidden, lat = c.expert_input(), inter = c.moe_intermediate;

    // 1. router
    float* scores = ws.router.data();
    kernels::matvec(ctx.pool, *w.router, x, scores);
    std::vector<float> biased(c.experts);
    for (int e = 0; e < c.experts; ++e) {
        scores[e] = kernels::sigmoid(scores[e]);
        biased[e] = scores[e] + w.router_bias[e];
    }
    const std::vector<int> chosen = select_experts(c, biased);
    std::vector<float> weights(chosen.size());
    double sum = 0;
    for (size_t j = 0; j < chosen.size(); ++j) {
        weights[j] = scores[chosen[j]];
        sum += weights[j];
    }
    for (float& weight : weights) {
        if (c.renormalize) weight = static_cast<float>(weight / (sum + 1e-20));
        weight *= static_cast<float>(c.routed_scaling);
    }
    if (ctx.routes) (*ctx.routes)[layer] = RouteChoice{chosen, weights};

    // 2. expert input (latent MoE projects down first)
    const float* xe = x;
    if (w.latent_down) {
        kernels::matvec(ctx.pool, *w.latent_down, x, ws.expert_in.data());
        xe = ws.expert_in.data();
    }

    // 3. gate and up tables, once per token per layer, shared by the top-k
    const uint32_t base = container.bank(layer).codebook_base;
    const size_t book_floats = static_cast<size_t>(quant.entries) * quant.vec_dim;
    const kernels::VqTableShape in_shape{lat / quant.vec_dim, quant.stages, quant.entries, quant.vec_dim};
    const kernels::VqTableShape down_shape{inter / quant.vec_dim, quant.stages, quant.entries, quant.vec_dim};
    const float* gate_books = container.codebooks().data() + (base + 0ull * quant.stages) * book_floats;
    const float* up_books = container.codebooks().data() + (base + 1ull * quant.stages) * book_floats;
    const float* down_books = container.codebooks().data() + (base + 2ull * quant.stages) * book_floats;
    const size_t position_floats = static_cast<size_t>(quant.stages) * quant.entries;
    ctx.pool.parallel_for(in_shape.positions, [&](size_t begin, size_t end) {
        kernels::VqTableShape part = in_shape;
        part.positions = static_cast<int>(end - begin);
        kernels::build_vq_table(part, gate_books, xe + begin * quant.vec_dim, ws.gate_table.data() + begin * position_floats);
        kernels::build_vq_table(part, up_books, xe + begin * quant.vec_dim, ws.up_table.data() + begin * position_floats);
    });

    // 4. the records (pinned for this layer), then each expert on one thread;
    // outputs are summed afterwards in selection order, so the split of
    // experts over threads never changes the bits.
    std::vector<const uint8_t*> records(chosen.size());
    for (size_t j = 0; j < chosen.size(); ++j) records[j] = ctx.experts.acquire(layer, chosen[j]).data();
    const bool packed6 = quant.index_bits == 6;
    ctx.pool.parallel_for(chosen.size(), [&](size_t begin, size_t end) {
        for (size_t j = begin; j < end; ++j) {
            const uint8_t* record = records[j];
            const uint8_t* scales = record + layout.scales_off;
            float* g = ws.expert_gate[j].data();
            float* u = ws.expert_up[j].data();
            kernels::apply_vq_table(in_shape, packed6, record + layout.gate_off, scales, ws.gate_table.data(), g, 0, inter);
            kernels::apply_vq_table(in_shape, packed6, record + layout.up_off, scales + 2ull * inter, ws.up_table.data(), u, 0,
                                    inter);
            for (int i = 0; i < inter; ++i) g[i] = ctx.act(g[i], u[i]);
            kernels::build_vq_table(down_shape, down_books, g, ws.down_table[j].data());
            kernels::apply_vq_table(down_shape, packed6, record + layout.down_off, scales + 4ull * inter,
                                    ws.down_table[j].data(), ws.expert_out[j].data(), 0, lat);
        }
    });
    float* acc = ws.moe_acc.data();
    std::fill(acc, acc + lat, 0.0f);
    for (size_t j = 0; j < chosen.size(); ++j)
        for (int i = 0; i < lat; ++i) acc[i] += weights[j] * ws.expert_out[j][i];
    ctx.experts.release_layer(layer);

    // 5. latent MoE projects back up (through its norm when present)
    if (w.latent_up) {
        if (!w.latent_norm.empty()) kernels::rmsnorm(acc, w.latent_norm.data(), static_cast<float>(c.rms_eps), lat, acc);
        kernels::matvec(ctx.pool, *w.latent_up, acc, out);
    } else {
        std::memcpy(out, acc, sizeof(float) * hidden);
    }
    // 6. shared experts on the original x
    if (w.has_shared) {
        dense_ffn(ctx, w.shared, x, ws.tmp_h.data());
        for (int i = 0; i < hidden; ++i) out[i] += ws.tmp_h[i];
    }
}

}  // namespace waste::model
