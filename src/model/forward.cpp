#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/trunk_matvec.h"
#include "platform/error.h"

namespace waste::model {

Workspace::Workspace(const format::ModelConfig& c, const format::Container& container) {
    const size_t h = c.hidden;
    const size_t kda_width = static_cast<size_t>(c.kda_heads) * c.kda_head_dim;
    const size_t mla_width = static_cast<size_t>(c.heads) * std::max(c.qk_nope + c.qk_rope, c.v_head);
    const size_t attn_width = std::max({kda_width, mla_width, static_cast<size_t>(c.heads) * c.v_head});
    for (auto* buffer : {&x, &normed, &attn_out, &ffn_out, &ps, &tmp_h}) buffer->assign(h, 0.0f);
    for (auto* buffer : {&q, &k, &v, &decay, &gate, &head_out}) buffer->assign(attn_width, 0.0f);
    beta.assign(std::max(c.kda_heads, 1), 0.0f);
    small.assign(std::max({static_cast<size_t>(c.kda_head_dim), static_cast<size_t>(c.q_lora), static_cast<size_t>(1)}), 0.0f);
    const size_t widest_ffn = std::max({static_cast<size_t>(c.intermediate),
                                        static_cast<size_t>(c.moe_intermediate) * std::max(c.shared_experts, 1)});
    ffn_gate.assign(widest_ffn, 0.0f);
    ffn_up.assign(widest_ffn, 0.0f);
    logits.assign(c.vocab, 0.0f);
    if (container.has_experts()) {
        const format::ExpertQuant& quant = container.manifest().quant;
        const size_t lat = c.expert_input(), inter = c.moe_intermediate;
        const size_t per_position = static_cast<size_t>(quant.stages) * quant.entries;
        router.assign(c.experts, 0.0f);
        expert_in.assign(lat, 0.0f);
        moe_acc.assign(std::max(lat, h), 0.0f);
        gate_table.assign(lat / quant.vec_dim * per_position, 0.0f);
        up_table.assign(lat / quant.vec_dim * per_position, 0.0f);
        for (int j = 0; j < c.top_k; ++j) {
            expert_gate.emplace_back(inter, 0.0f);
            expert_up.emplace_back(inter, 0.0f);
            down_table.emplace_back(inter / quant.vec_dim * per_position, 0.0f);
            expert_out.emplace_back(lat, 0.0f);
        }
    }
}

namespace {

// AttnRes(V) = Σ_i softmax(score)_i v_i, score_i = Σ_j rmsnorm(v_i)_j · norm_j · proj_j.
// The output is accumulated in a separate buffer, so it may alias any input.
void attn_res(const std::vector<const float*>& values, const std::vector<float>& norm, const std::vector<float>& proj,
              float eps, size_t hidden, float* out, std::vector<float>& scratch) {
    std::vector<float> scores(values.size());
    scratch.resize(2 * hidden);
    float* normed = scratch.data();
    float* result = scratch.data() + hidden;
    float max_score = -INFINITY;
    for (size_t i = 0; i < values.size(); ++i) {
        kernels::rmsnorm(values[i], nullptr, eps, hidden, normed);
        double s = 0;
        for (size_t j = 0; j < hidden; ++j) s += static_cast<double>(normed[j]) * norm[j] * proj[j];
        scores[i] = static_cast<float>(s);
        max_score = std::max(max_score, scores[i]);
    }
    double total = 0;
    for (float& s : scores) {
        s = std::exp(s - max_score);
        total += s;
    }
    std::fill(result, result + hidden, 0.0f);
    for (size_t i = 0; i < values.size(); ++i) {
        const float p = static_cast<float>(scores[i] / total);
        for (size_t j = 0; j < hidden; ++j) result[j] += p * values[i][j];
    }
    std::memcpy(out, result, sizeof(float) * hidden);
}

void attention(ForwardContext& ctx, int layer, SessionState& state, const float* normed, float* out) {
    const LayerWeights& lw = ctx.weights.layers[layer];
    if (lw.kind == format::LayerKind::kda) kda_step(ctx, lw.kda, state.layers[layer], normed, out);
    else mla_step(ctx, lw.mla, state.layers[layer], state.position, normed, out);
}

void ffn(ForwardContext& ctx, int layer, const float* normed, float* out) {
    const LayerWeights& lw = ctx.weights.layers[layer];
    if (lw.moe) moe_ffn(ctx, layer, lw.moe_weights, normed, out);
    else dense_ffn(ctx, lw.dense, normed, out);
}

}  // namespace

void forward_token(ForwardContext& ctx, SessionState& state, int32_t token) {
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t hidden = c.hidden;
    const float eps = static_cast<float>(c.rms_eps);
    if (token < 0 || token >= c.vocab)
        fail(WASTE_ERR_INVALID_ARGUMENT, "token id {} is outside the vocabulary of {}", token, c.vocab);
    if (state.position >= state.context_length)
        fail(WASTE_ERR_CONTEXT_FULL, "the session holds {} tokens, its context length; reset it or open with a larger --ctx",
             state.context_length);
    float* x = ws.x.data();
    ctx.weights.embed->row(static_cast<uint64_t>(token), ws.x);
    if (ctx.routes) ctx.routes->assign(c.layers, RouteChoice{});

    if (c.attn_res_block <= 0) {
        for (int layer = 0; layer < c.layers; ++layer) {
            const LayerWeights& lw = ctx.weights.layers[layer];
            kernels::rmsnorm(x, lw.input_norm.data(), eps, hidden, ws.normed.data());
            attention(ctx, layer, state, ws.normed.data(), ws.attn_out.data());
            for (size_t i = 0; i < hidden; ++i) x[i] += ws.attn_out[i];
            kernels::rmsnorm(x, lw.post_norm.data(), eps, hidden, ws.normed.data());
            ffn(ctx, layer, ws.normed.data(), ws.ffn_out.data());
            for (size_t i = 0; i < hidden; ++i) x[i] += ws.ffn_out[i];
        }
    } else {
        // Attention Residuals (models.md §6): blocks are per token.
        const int block = c.attn_res_block;
        float* ps = ws.ps.data();
        float* blocks = state.block_residuals.data();
        uint32_t n_blocks = 0;
        bool ps_live = true;
        std::vector<float> scratch;
        auto with_blocks = [&](const float* last) {
            std::vector<const float*> values;
            for (uint32_t b = 0; b < n_blocks; ++b) values.push_back(blocks + b * hidden);
            values.push_back(last);
            return values;
        };
        for (int layer = 0; layer < c.layers; ++layer) {
            const LayerWeights& lw = ctx.weights.layers[layer];
            std::memcpy(ps, x, sizeof(float) * hidden);
            if (n_blocks) attn_res(with_blocks(ps), lw.attn_res.attn_norm, lw.attn_res.attn_proj, eps, hidden, x, scratch);
            if (layer % block == 0) {
                WASTE_CHECK((n_blocks + 1) * hidden <= state.block_residuals.size());
                std::memcpy(blocks + n_blocks * hidden, ps, sizeof(float) * hidden);
                ++n_blocks;
                ps_live = false;
            }
            kernels::rmsnorm(x, lw.input_norm.data(), eps, hidden, ws.normed.data());
            attention(ctx, layer, state, ws.normed.data(), ws.attn_out.data());
            for (size_t i = 0; i < hidden; ++i) ps[i] = ps_live ? ps[i] + ws.attn_out[i] : ws.attn_out[i];
            ps_live = true;
            attn_res(with_blocks(ps), lw.attn_res.mlp_norm, lw.attn_res.mlp_proj, eps, hidden, x, scratch);
            kernels::rmsnorm(x, lw.post_norm.data(), eps, hidden, ws.normed.data());
            ffn(ctx, layer, ws.normed.data(), ws.ffn_out.data());
            for (size_t i = 0; i < hidden; ++i) ps[i] += ws.ffn_out[i];
            std::memcpy(x, ps, sizeof(float) * hidden);
        }
        if (n_blocks) attn_res(with_blocks(x), ctx.weights.output_res_norm, ctx.weights.output_res_proj, eps, hidden, x, scratch);
        state.n_blocks = n_blocks;
    }
    std::memcpy(state.residual.data(), x, sizeof(float) * hidden);
    kernels::rmsnorm(x, ctx.weights.final_norm.data(), eps, hidden, ws.normed.data());
    kernels::matvec(ctx.pool, *ctx.weights.lm_head, ws.normed.data(), ws.logits.data());
    state.position += 1;
}

}  // namespace waste::model
