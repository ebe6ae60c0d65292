#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/trunk_matmul.h"
#include "kernels/trunk_matvec.h"
#include "platform/error.h"

namespace waste::model {

size_t attention_width(const format::ModelConfig& c) {
    // KDA's channels (its q, k and v each in a buffer); GDN's q, k and v side by side (one projection, one conv)
    const size_t kda_width = c.gdn_layer_count() > 0 ? static_cast<size_t>(c.delta_conv_channels())
                                                     : static_cast<size_t>(c.kda_heads) * c.kda_head_dim;
    const size_t mla_width = static_cast<size_t>(c.heads) * std::max(c.qk_nope + c.qk_rope, c.v_head);
    // GQA: q and the heads' outputs; a gated q_proj's [q | gate] per head
    const size_t gqa_width = static_cast<size_t>(c.heads) * c.head_dim * (c.attn_output_gate ? 2 : 1);
    return std::max({kda_width, mla_width, gqa_width, size_t{1}});
}

size_t low_rank_width(const format::ModelConfig& c) {
    return std::max({static_cast<size_t>(c.kda_head_dim), static_cast<size_t>(c.q_lora), size_t{1}});
}

size_t dense_ffn_width(const format::ModelConfig& c) {
    return std::max({static_cast<size_t>(c.intermediate), static_cast<size_t>(c.moe_intermediate),
                     static_cast<size_t>(c.shared_width()), size_t{1}});
}

size_t widest_projection_input(const format::ModelConfig& c) {
    return std::max({static_cast<size_t>(c.hidden), attention_width(c), low_rank_width(c), dense_ffn_width(c),
                     static_cast<size_t>(c.kv_lora), static_cast<size_t>(c.expert_input())});
}

namespace {
// Rows a workspace's chunk buffers hold: the chunk, and at least two
// (decode's router lookahead works in row 1, router_lookahead.cpp).
size_t workspace_rows(size_t chunk) { return std::max<size_t>(chunk, 2); }
}  // namespace

Workspace::Workspace(const format::ModelConfig& c, const format::Container& container, unsigned threads, size_t chunk,
                     size_t rows_of_tables)
    : chunk_tokens(chunk), table_rows(rows_of_tables) {
    WASTE_CHECK(chunk >= 1 && chunk <= max_prefill_chunk && table_rows >= 1 && table_rows <= max_batch_rows);
    const size_t tokens = workspace_rows(chunk);
    hidden = c.hidden;
    attn_width = attention_width(c);
    small_width = low_rank_width(c);
    ffn_width = dense_ffn_width(c);
    for (auto* buffer : {&x, &normed, &attn_out, &ffn_out, &ps, &shared_out}) buffer->assign(tokens * hidden, 0.0f);
    for (auto* buffer : {&q, &k, &v, &decay, &gate, &head_out}) buffer->assign(tokens * attn_width, 0.0f);
    beta.assign(tokens * std::max(c.kda_v_heads, 1), 0.0f);
    small.assign(tokens * small_width, 0.0f);
    ffn_gate.assign(tokens * ffn_width, 0.0f);
    ffn_up.assign(tokens * ffn_width, 0.0f);
    logits.assign(c.vocab, 0.0f);
    if (c.attn_res_block > 0) blocks.assign(tokens * static_cast<size_t>(c.layers / c.attn_res_block + 2) * hidden, 0.0f);
    if (container.has_experts()) {
        const format::ExpertQuant& quant = container.manifest().quant;
        lat = c.expert_input();
        inter = c.moe_intermediate;
        const size_t per_position = static_cast<size_t>(quant.stages) * quant.entries;
        table_floats = lat / quant.vec_dim * per_position;
        down_table_floats = inter / quant.vec_dim * per_position;
        router.assign(tokens * c.experts, 0.0f);
        expert_in.assign(tokens * lat, 0.0f);
        moe_acc.assign(tokens * std::max(lat, hidden), 0.0f);
        // lookup tables serve the decode step; a prefill chunk runs its
        // experts as matrix products (model/moe_experts.h)
        gate_table.assign(table_rows * table_floats, 0.0f);
        up_table.assign(table_rows * table_floats, 0.0f);
        for (auto* buffer : {&expert_x, &expert_out}) buffer->assign(tokens * lat, 0.0f);
        for (auto* buffer : {&expert_gate, &expert_up}) buffer->assign(tokens * inter, 0.0f);
        slot_out.assign(tokens * c.top_k * lat, 0.0f);
        for (unsigned t = 0; t < std::max(threads, 1u); ++t) {
            thread_down_table.emplace_back(down_table_floats, 0.0f);
            thread_gate.emplace_back(inter, 0.0f);
            thread_up.emplace_back(inter, 0.0f);
        }
    }
}

uint64_t Workspace::planned_bytes(const format::ModelConfig& c, const format::ExpertQuant* quant, unsigned threads, size_t chunk,
                                  bool int8, size_t table_rows) {
    const uint64_t T = workspace_rows(chunk), H = static_cast<uint64_t>(c.hidden), A = attention_width(c), F = dense_ffn_width(c);
    const uint64_t n_threads = std::max(threads, 1u);
    // the chunk's rows: residual, normed, attention and FFN outputs, AttnRes's
    // partial sum, the shared experts' output (6 H); q, k, v, decay, gate and
    // the heads' output (6 A); KDA's beta, the low-rank inner width; the FFN's
    // gate and up (2 F)
    uint64_t floats = T * (6 * H + 6 * A + std::max(c.kda_v_heads, 1) + low_rank_width(c) + 2 * F);
    floats += static_cast<uint64_t>(c.vocab);  // logits
    if (c.attn_res_block > 0) floats += T * static_cast<uint64_t>(c.layers / c.attn_res_block + 2) * H;
    uint64_t bytes = 0;
    if (int8) bytes += sizeof(kernels::TrunkInt8Input) + kernels::trunk_int8_input_bytes(T, widest_projection_input(c));
    if (quant && c.has_moe()) {
        const uint64_t lat = c.expert_input(), I = c.moe_intermediate, E = c.experts, K = c.top_k;
        const kernels::VqTableShape in{static_cast<int>(lat / quant->vec_dim), quant->stages, quant->entries, quant->vec_dim};
        const kernels::VqTableShape down{static_cast<int>(I / quant->vec_dim), quant->stages, quant->entries, quant->vec_dim};
        // router scores, the expert input, the MoE accumulator; one expert's
        // inputs, outputs, gate and up over the chunk; every (token, slot)'s output
        floats += T * (E + lat + std::max(lat, H) + 2 * lat + 2 * I + K * lat);
        floats += 2 * in.floats() * table_rows;                      // decode's gate and up tables, a batched step's rows
        floats += n_threads * (down.floats() + 2 * I);              // each thread's down table, gate and up rows
        bytes += 2 * n_threads * 8 * sizeof(std::vector<float>);    // the per-thread vectors themselves (capacity doubles)
        // the MoE step's bookkeeping per chunk (ffn_layer.cpp): each token's
        // choice (a vector of K ids), its weights, and each (token, slot)
        // assignment with its token and slot again
        bytes += T * (sizeof(std::vector<int>) + K * 4 + K * 4 + K * 12 + K * 8);
        if (int8) {
            // the tables at a byte an entry, their block scales and quantised inputs
            const uint64_t in_stride = kernels::vq_int8_input_stride(in), down_stride = kernels::vq_int8_input_stride(down);
            bytes += table_rows * (2 * in.floats() + 2 * kernels::vq_int8_blocks(in) * 4 + in.positions * (in_stride + 4));
            bytes += n_threads * (down.floats() + kernels::vq_int8_blocks(down) * 4 + down.positions * (down_stride + 4));
            // prefill: one expert decoded to int8 rows; per thread one
            // expert's f32 inputs, gate, up and outputs over the chunk, its
            // int8 inputs and activations and their group scales
            const kernels::Int8Matrix x_rows{static_cast<size_t>(T), static_cast<size_t>(lat)};
            const kernels::Int8Matrix h_rows{static_cast<size_t>(T), static_cast<size_t>(I)};
            bytes += DecodedExpert::bytes(lat, I) + sizeof(DecodedExpert);
            bytes += n_threads * (sizeof(Int8ExpertScratch) + T * 2 * (lat + I) * sizeof(float) + T * (x_rows.ld() + h_rows.ld()) +
                                  T * (x_rows.groups() + h_rows.groups()) * sizeof(float));
        }
    }
    return bytes + floats * sizeof(float);
}

void Workspace::enable_int8_tables(const format::Container& container) {
    if (trunk_int8.capacity_tokens == 0) trunk_int8.reserve(workspace_rows(chunk_tokens), widest_projection_input(container.config()));
    if (!container.has_experts() || !gate_q.empty()) return;
    const format::ExpertQuant& quant = container.manifest().quant;
    const kernels::VqTableShape in{static_cast<int>(lat / quant.vec_dim), quant.stages, quant.entries, quant.vec_dim};
    const kernels::VqTableShape down{static_cast<int>(inter / quant.vec_dim), quant.stages, quant.entries, quant.vec_dim};
    gate_q.assign(table_rows * in.floats(), 0);
    up_q.assign(table_rows * in.floats(), 0);
    gate_q_scales.assign(table_rows * kernels::vq_int8_blocks(in), 0.0f);
    up_q_scales.assign(table_rows * kernels::vq_int8_blocks(in), 0.0f);
    in_xu.assign(table_rows * in.positions * kernels::vq_int8_input_stride(in), 0);
    in_xs.assign(table_rows * in.positions, 0.0f);
    for (size_t t = 0; t < thread_down_table.size(); ++t) {
        thread_down_q.emplace_back(down.floats(), 0);
        thread_down_q_scales.emplace_back(kernels::vq_int8_blocks(down), 0.0f);
        thread_down_xu.emplace_back(down.positions * kernels::vq_int8_input_stride(down), 0);
        thread_down_xs.emplace_back(down.positions, 0.0f);
    }
    int8_expert = std::make_unique<DecodedExpert>(lat, inter);
    const size_t tokens = workspace_rows(chunk_tokens);
    int8_threads.resize(thread_down_table.size());
    for (Int8ExpertScratch& s : int8_threads) {
        s.x.assign(tokens * lat, 0.0f);
        s.out.assign(tokens * lat, 0.0f);
        s.g.assign(tokens * inter, 0.0f);
        s.u.assign(tokens * inter, 0.0f);
        s.xq.assign(tokens * int8_expert->gate.ld(), 0);
        s.hq.assign(tokens * int8_expert->down.ld(), 0);
        s.xs.assign(tokens * int8_expert->gate.groups(), 0.0f);
        s.hs.assign(tokens * int8_expert->down.groups(), 0.0f);
    }
}

void project(ForwardContext& ctx, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
             size_t ldy) {
    ProfileScope scope(ctx.profile, ProfileCategory::trunk_matvec);
    project_with(ctx.pool, ctx.ws, ctx.lut == kernels::VqLutMode::int8, w, x, ldx, tokens, y, ldy);
}

void project_with(platform::ThreadPool& pool, Workspace& ws, bool int8, const format::LoadedTensor& w, const float* x,
                  size_t ldx, size_t tokens, float* y, size_t ldy) {
    if (int8 && kernels::trunk_int8_eligible(*w.info)) kernels::trunk_int8_matmul(pool, w, x, ldx, tokens, y, ldy, ws.trunk_int8);
    else kernels::matmul(pool, w, x, ldx, tokens, y, ldy);
}

void project_exact(ForwardContext& ctx, const format::LoadedTensor& w, const float* x, size_t ldx, size_t tokens, float* y,
                   size_t ldy) {
    ProfileScope scope(ctx.profile, ProfileCategory::trunk_matvec);
    kernels::matmul(ctx.pool, w, x, ldx, tokens, y, ldy);
}

namespace {

// AttnRes(V) = Σ_i softmax(score)_i v_i, score_i = Σ_j rmsnorm(v_i)_j · norm_j · proj_j.
// The result is built in scratch first, so out may alias any input.
void attn_res(const std::vector<const float*>& values, const std::vector<float>& norm, const std::vector<float>& proj,
              float eps, size_t hidden, float* out, std::vector<float>& scratch) {
    std::vector<float> scores(values.size());
    scratch.resize(2 * hidden);
    float* normed = scratch.data();
    float* result = scratch.data() + hidden;
    float max_score = -INFINITY;
    for (size_t i = 0; i < values.size(); ++i) {
        kernels::rmsnorm(kernels::active_isa(), values[i], nullptr, eps, hidden, normed);
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

void attention(ForwardContext& ctx, int layer, SessionState& state, const float* normed, size_t tokens, float* out) {
    const LayerWeights& lw = ctx.weights.layers[layer];
    if (lw.kind == format::LayerKind::kda) kda_chunk(ctx, lw.kda, state.layers[layer], normed, tokens, out);
    else if (lw.kind == format::LayerKind::gdn) gdn_chunk(ctx, lw.gdn, state.layers[layer], normed, tokens, out);
    else if (lw.kind == format::LayerKind::gqa) gqa_chunk(ctx, lw.gqa, state.layers[layer], state.position, normed, tokens, out);
    else mla_chunk(ctx, lw.mla, state.layers[layer], state.position, normed, tokens, out);
}

void ffn(ForwardContext& ctx, int layer, const float* normed, size_t tokens, float* out) {
    const LayerWeights& lw = ctx.weights.layers[layer];
    if (lw.moe) moe_chunk(ctx, layer, lw.moe_weights, normed, tokens, out);
    else dense_ffn_chunk(ctx, lw.dense, normed, tokens, out);
}

}  // namespace

void norm_rows(const float* x, const std::vector<float>& weight, float eps, size_t tokens, size_t hidden, float* out) {
    const kernels::Isa isa = kernels::active_isa();
    for (size_t t = 0; t < tokens; ++t) kernels::rmsnorm(isa, x + t * hidden, weight.data(), eps, hidden, out + t * hidden);
}

void softmax_weights(float* s, size_t n, float scale, const float* sink) {
    float max_score = -INFINITY;
    for (size_t p = 0; p < n; ++p) {
        s[p] *= scale;
        max_score = std::max(max_score, s[p]);
    }
    if (sink) max_score = std::max(max_score, *sink);
    double total = 0;
    for (size_t p = 0; p < n; ++p) {
        s[p] = std::exp(s[p] - max_score);
        total += s[p];
    }
    if (sink) total += std::exp(*sink - max_score);
    const float inv = static_cast<float>(1.0 / total);
    for (size_t p = 0; p < n; ++p) s[p] *= inv;
}

namespace {

// A chunk's rows [first, first + rows) are one session's tokens, in order:
// its state, and where its last row's logits go.
struct RowSpan {
    SessionState* state;
    size_t first;
    size_t rows;
    float* logits;
};

void attention(ForwardContext& ctx, int layer, const RowSpan& span, const float* normed, float* out) {
    const size_t h = ctx.config.hidden;
    attention(ctx, layer, *span.state, normed + span.first * h, span.rows, out + span.first * h);
}

// The layers, the final norm and the LM head over a chunk whose rows belong
// to one or more sessions (spans, in row order, covering [0, count)).
// Everything but attention runs over the whole chunk: the trunk's
// projections once for all rows, each distinct routed expert once for all
// the rows that chose it. Attention runs per span over that session's own
// state and position.
void forward_rows(ForwardContext& ctx, std::span<const RowSpan> spans, const int32_t* tokens, size_t count) {
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t hidden = c.hidden;
    const float eps = static_cast<float>(c.rms_eps);
    WASTE_CHECK(count >= 1 && count <= ws.chunk_tokens && !spans.empty());
    WASTE_CHECK(spans.size() == 1 || (!ctx.splice && ctx.scored_rows == 0));
    for (size_t t = 0; t < count; ++t)
        if (tokens[t] < 0 || tokens[t] >= c.vocab)
            fail(WASTE_ERR_INVALID_ARGUMENT, "token id {} is outside the vocabulary of {}", tokens[t], c.vocab);
    for (const RowSpan& span : spans)
        if (span.state->position + span.rows > span.state->context_length)
            fail(WASTE_ERR_CONTEXT_FULL, "the session holds {} of {} tokens; reset it or open with a larger --ctx",
                 span.state->position, span.state->context_length);
    float* x = ws.x.data();  // [T][H]
    EmbeddingSplice* splice = ctx.splice;
    for (size_t t = 0; t < count; ++t) {
        if (splice && tokens[t] == splice->pad && splice->next < splice->count) {
            std::memcpy(x + t * hidden, splice->rows + splice->next++ * hidden, sizeof(float) * hidden);
            continue;
        }
        ctx.weights.embed->row(static_cast<uint64_t>(tokens[t]), std::span<float>(x + t * hidden, hidden));
    }
    if (ctx.routes) ctx.routes->assign(count, std::vector<RouteChoice>(c.layers));
    auto dump = [&](int slot, const float* values) {
        if (ctx.hidden) std::memcpy(ctx.hidden + static_cast<size_t>(slot) * count * hidden, values, sizeof(float) * count * hidden);
    };
    dump(0, x);

    if (c.attn_res_block <= 0) {
        for (int layer = 0; layer < c.layers; ++layer) {
            const LayerWeights& lw = ctx.weights.layers[layer];
            norm_rows(x, lw.input_norm, eps, count, hidden, ws.normed.data());
            for (const RowSpan& span : spans) attention(ctx, layer, span, ws.normed.data(), ws.attn_out.data());
            for (size_t i = 0; i < count * hidden; ++i) x[i] += ws.attn_out[i];
            lookahead_prefetch(ctx, layer + 1, x, count);  // the next MoE layer's likely experts
            norm_rows(x, lw.post_norm, eps, count, hidden, ws.normed.data());
            ffn(ctx, layer, ws.normed.data(), count, ws.ffn_out.data());
            for (size_t i = 0; i < count * hidden; ++i) x[i] += ws.ffn_out[i];
            dump(layer + 1, x);
        }
    } else {
        // Attention Residuals (models.md §6): per token, the block residuals
        // of that token's own pass through the layers.
        const int block = c.attn_res_block;
        const size_t max_blocks = static_cast<size_t>(c.layers / block + 2);
        WASTE_CHECK(ws.blocks.size() >= count * max_blocks * hidden);
        float* blocks = ws.blocks.data();  // [T][blocks][H]
        size_t n_blocks = 0;
        bool ps_live = true;
        std::vector<float> scratch;
        float* ps = ws.ps.data();
        auto with_blocks = [&](size_t t, const float* last) {
            std::vector<const float*> values;
            for (size_t b = 0; b < n_blocks; ++b) values.push_back(blocks + (t * max_blocks + b) * hidden);
            values.push_back(last);
            return values;
        };
        for (int layer = 0; layer < c.layers; ++layer) {
            const LayerWeights& lw = ctx.weights.layers[layer];
            std::memcpy(ps, x, sizeof(float) * count * hidden);
            for (size_t t = 0; t < count && n_blocks; ++t)
                attn_res(with_blocks(t, ps + t * hidden), lw.attn_res.attn_norm, lw.attn_res.attn_proj, eps, hidden,
                         x + t * hidden, scratch);
            if (layer % block == 0) {
                WASTE_CHECK(n_blocks < max_blocks);
                for (size_t t = 0; t < count; ++t)
                    std::memcpy(blocks + (t * max_blocks + n_blocks) * hidden, ps + t * hidden, sizeof(float) * hidden);
                ++n_blocks;
                ps_live = false;
            }
            norm_rows(x, lw.input_norm, eps, count, hidden, ws.normed.data());
            for (const RowSpan& span : spans) attention(ctx, layer, span, ws.normed.data(), ws.attn_out.data());
            for (size_t i = 0; i < count * hidden; ++i) ps[i] = ps_live ? ps[i] + ws.attn_out[i] : ws.attn_out[i];
            ps_live = true;
            for (size_t t = 0; t < count; ++t)
                attn_res(with_blocks(t, ps + t * hidden), lw.attn_res.mlp_norm, lw.attn_res.mlp_proj, eps, hidden,
                         x + t * hidden, scratch);
            lookahead_prefetch(ctx, layer + 1, x, count);  // the next MoE layer's likely experts
            norm_rows(x, lw.post_norm, eps, count, hidden, ws.normed.data());
            ffn(ctx, layer, ws.normed.data(), count, ws.ffn_out.data());
            for (size_t i = 0; i < count * hidden; ++i) ps[i] += ws.ffn_out[i];
            std::memcpy(x, ps, sizeof(float) * count * hidden);
            dump(layer + 1, x);
        }
        for (size_t t = 0; t < count && n_blocks; ++t)
            attn_res(with_blocks(t, x + t * hidden), ctx.weights.output_res_norm, ctx.weights.output_res_proj, eps, hidden,
                     x + t * hidden, scratch);
        for (const RowSpan& span : spans) {
            const size_t last = span.first + span.rows - 1;
            span.state->n_blocks = static_cast<uint32_t>(n_blocks);
            std::memcpy(span.state->block_residuals.data(), blocks + last * max_blocks * hidden,
                        sizeof(float) * std::min(span.state->block_residuals.size(), max_blocks * hidden));
        }
    }
    ProfileScope head_scope(ctx.profile, ProfileCategory::lm_head);
    WASTE_CHECK(ctx.scored_rows <= count && (ctx.scored_rows == 0 || (ctx.next_tokens && ctx.next_logprobs)));
    auto head = [&](size_t row) {
        kernels::rmsnorm(kernels::active_isa(), x + row * hidden, ctx.weights.final_norm.data(), eps, hidden, ws.normed.data());
        project_with(ctx.pool, ws, ctx.lut == kernels::VqLutMode::int8, *ctx.weights.lm_head, ws.normed.data(), hidden, 1,
                     ws.logits.data(), ws.logits.size());
        if (row < ctx.scored_rows) ctx.next_logprobs[row] = token_logprob(ws.logits, ctx.next_tokens[row]);
    };
    for (size_t row = 0; row + 1 < count && row < ctx.scored_rows; ++row) head(row);
    // Each span's last row through the head, into ws.logits, copied out to
    // the span's logits; the span whose logits are ws.logits itself goes last.
    auto finish = [&](const RowSpan& span) {
        const size_t last = span.first + span.rows - 1;
        std::memcpy(span.state->residual.data(), x + last * hidden, sizeof(float) * hidden);
        head(last);
        if (span.logits != ws.logits.data()) std::memcpy(span.logits, ws.logits.data(), sizeof(float) * ws.logits.size());
        span.state->position += static_cast<uint32_t>(span.rows);
    };
    for (const RowSpan& span : spans)
        if (span.logits != ws.logits.data()) finish(span);
    for (const RowSpan& span : spans)
        if (span.logits == ws.logits.data()) finish(span);
}

}  // namespace

void forward_chunk(ForwardContext& ctx, SessionState& state, const int32_t* tokens, size_t count) {
    const RowSpan whole{&state, 0, count, ctx.ws.logits.data()};
    forward_rows(ctx, std::span<const RowSpan>(&whole, 1), tokens, count);
}

void forward_batch(ForwardContext& ctx, std::span<SessionState* const> states, std::span<float* const> logits,
                   const int32_t* tokens) {
    WASTE_CHECK(states.size() == logits.size() && states.size() <= ctx.ws.table_rows);
    ctx.batch_rows = true;
    std::vector<RowSpan> spans;
    spans.reserve(states.size());
    for (size_t i = 0; i < states.size(); ++i) spans.push_back(RowSpan{states[i], i, 1, logits[i]});
    forward_rows(ctx, spans, tokens, states.size());
}

double token_logprob(std::span<const float> logits, int32_t token) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size())
        fail(WASTE_ERR_INVALID_ARGUMENT, "scored token id {} is outside the vocabulary of {}", token, logits.size());
    const double max_logit = *std::max_element(logits.begin(), logits.end());
    double total = 0;
    for (const float z : logits) total += std::exp(static_cast<double>(z) - max_logit);
    return static_cast<double>(logits[static_cast<size_t>(token)]) - max_logit - std::log(total);
}

}  // namespace waste::model
