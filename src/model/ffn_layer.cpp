// ffn_layer.cpp — the dense SwiGLU FFN and the MoE block over a chunk
// (models.md §3, §4, §7): the router of the config's kind (model/routers.h);
// routed experts through VQ lookup tables, each
// distinct expert of the chunk read once (ascending id); latent MoE; shared
// experts.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "format/expert_record.h"
#include "kernels/elementwise.h"
#include "model/forward.h"
#include "model/moe_experts.h"
#include "model/routers.h"
#include "platform/error.h"

namespace waste::model {

void dense_ffn_chunk(ForwardContext& ctx, const FfnWeights& w, const float* x, size_t tokens, float* out) {
    const size_t hidden = ctx.config.hidden, ld = ctx.ws.ffn_width;
    float* g = ctx.ws.ffn_gate.data();
    float* u = ctx.ws.ffn_up.data();
    project(ctx, *w.gate, x, hidden, tokens, g, ld);
    project(ctx, *w.up, x, hidden, tokens, u, ld);
    const kernels::Isa isa = kernels::active_isa();
    for (size_t t = 0; t < tokens; ++t) kernels::glu(isa, ctx.act, g + t * ld, u + t * ld, static_cast<size_t>(w.intermediate));
    project(ctx, *w.down, g, ld, tokens, out, hidden);
}

namespace {

// One (token, slot) that routed to an expert.
struct Assignment {
    int expert;
    uint32_t token;
    uint32_t slot;
};

}  // namespace

void moe_chunk(ForwardContext& ctx, int layer, const MoeWeights& w, const float* x, size_t tokens, float* out) {
    const format::ModelConfig& c = ctx.config;
    const format::Container& container = ctx.container;
    const format::ExpertQuant& quant = container.manifest().quant;
    const format::ExpertLayout& layout = container.expert_layout();
    Workspace& ws = ctx.ws;
    const size_t hidden = c.hidden, lat = c.expert_input(), inter = c.moe_intermediate, top_k = c.top_k;
    const size_t experts = c.experts;

    // 1. router, per token
    std::vector<std::vector<int>> chosen(tokens);
    std::vector<float> weights(tokens * top_k);  // [T][top_k]
    {
        ProfileScope router_scope(ctx.profile, ProfileCategory::router);
        float* scores = ws.router.data();  // [T][E]
        project_exact(ctx, *w.router, x, hidden, tokens, scores, experts);
        std::vector<float> scratch(experts);
        for (size_t t = 0; t < tokens; ++t) {
            route_token(c, w.router_bias.data(), scores + t * experts, scratch.data(), &chosen[t], weights.data() + t * top_k);
            if (ctx.routes) {  // the lookahead prediction, if any, is already there
                RouteChoice& route = (*ctx.routes)[t][layer];
                route.experts = chosen[t];
                route.weights.assign(weights.begin() + t * top_k, weights.begin() + (t + 1) * top_k);
            }
        }
    }

    // 2. expert input (latent MoE projects down first)
    const float* xe = x;
    size_t ldx = hidden;
    if (w.latent_down) {
        project(ctx, *w.latent_down, x, hidden, tokens, ws.expert_in.data(), lat);
        xe = ws.expert_in.data();
        ldx = lat;
    }

    // 3. gate and up tables, once per token per layer, shared by its top-k
    ExpertBooks expert_books = layer_expert_books(container, layer);
    const kernels::VqTableShape in_shape = expert_books.in_shape, down_shape = expert_books.down_shape;
    const float *gate_books = expert_books.gate, *up_books = expert_books.up, *down_books = expert_books.down;
    const size_t position_floats = static_cast<size_t>(quant.stages) * quant.entries;
    const size_t positions = in_shape.positions;
    // (decode only, one table set per row: a one-token step, or a batched
    // step of several sessions' tokens; a prefill chunk runs its experts as
    // matrix products, model/moe_experts.h, with no tables)
    const bool use_tables = tokens == 1 || ctx.batch_rows;
    WASTE_CHECK(!use_tables || tokens <= ws.table_rows);
    // the approximate int8 mode (kernels/vq_lut.h): each thread quantises the
    // positions it built, split at int8 block boundaries
    const bool int8 = use_tables && ctx.lut == kernels::VqLutMode::int8;
    WASTE_CHECK(!int8 || (ws.gate_q.size() == ws.gate_table.size() && ctx.int8_books));
    // a row's tables, and its int8 tables' scales and quantised input
    const size_t row_floats = ws.table_floats, row_blocks = kernels::vq_int8_blocks(in_shape);
    const size_t in_stride_row = positions * kernels::vq_int8_input_stride(in_shape);
    // the int8 mode's codebooks in integers: gate, up, down from the bank's first record
    const kernels::VqInt8Book* books8 = int8 ? ctx.int8_books + container.bank(layer).codebook_base : nullptr;
    const size_t stages = static_cast<size_t>(quant.stages);
    const size_t in_stride = kernels::vq_int8_input_stride(in_shape);
    std::optional<ProfileScope> build_scope(std::in_place, ctx.profile, ProfileCategory::lut_build);
    if (use_tables)
        for (size_t t = 0; t < tokens; ++t)
            ctx.pool.parallel_for(positions, [&](size_t begin, size_t end) {
                kernels::VqTableShape part = in_shape;
                part.positions = static_cast<int>(end - begin);
                const float* input = xe + t * ldx + begin * quant.vec_dim;
                const size_t offset = t * row_floats + begin * position_floats;
                if (int8) {  // the tables straight from the quantised input, in integers
                    const size_t block = t * row_blocks + begin / kernels::vq_int8_block;
                    uint8_t* xu = ws.in_xu.data() + t * in_stride_row + begin * in_stride;
                    float* xs = ws.in_xs.data() + t * positions + begin;
                    kernels::quantize_vq_input_int8(part, input, xu, xs);
                    kernels::build_vq_table_int8(kernels::active_isa(), part, books8, xu, xs, ws.gate_q.data() + offset,
                                                 ws.gate_q_scales.data() + block);
                    kernels::build_vq_table_int8(kernels::active_isa(), part, books8 + stages, xu, xs, ws.up_q.data() + offset,
                                                 ws.up_q_scales.data() + block);
                    return;
                }
                kernels::build_vq_table(part, gate_books, input, ws.gate_table.data() + offset);
                kernels::build_vq_table(part, up_books, input, ws.up_table.data() + offset);
            }, int8 ? kernels::vq_int8_block : 1);

    build_scope.reset();

    // 4. each distinct expert of the chunk once. A group of up to
    // max_pinned() distinct experts (ascending id) is requested at once, so
    // all its reads are in flight together, and computed in arrival order:
    // each batch of records that has landed is split over the threads by
    // (token, slot) assignment. Every assignment writes its own slot_out row
    // and the rows are summed afterwards in slot order, so neither arrival
    // order nor the split changes a bit.
    std::vector<Assignment> assignments;
    for (size_t t = 0; t < tokens; ++t)
        for (size_t j = 0; j < top_k; ++j)
            assignments.push_back({chosen[t][j], static_cast<uint32_t>(t), static_cast<uint32_t>(j)});
    std::sort(assignments.begin(), assignments.end(), [](const Assignment& a, const Assignment& b) {
        return a.expert != b.expert ? a.expert < b.expert : a.token < b.token;
    });
    const bool packed6 = expert_books.packed6;
    const kernels::Isa isa = kernels::active_isa();
    const size_t slices = ctx.pool.size();
    std::vector<int> group;                   // distinct experts of the group, ascending
    std::vector<size_t> group_begin;          // [group.size() + 1]: each expert's run in assignments
    std::vector<ExpertProvider::Ready> ready;
    std::vector<std::pair<size_t, const uint8_t*>> batch;  // (assignment, record)
    if (!w.gate_bias.empty()) {  // gpt-oss
        expert_books.gate_bias = w.gate_bias.data();
        expert_books.up_bias = w.up_bias.data();
        expert_books.down_bias = w.down_bias.data();
    }
    // prefill: every assignment's token and slot, in its order (an expert's
    // run is a range of them), and the landed experts' runs
    std::vector<uint32_t> assigned_tokens, assigned_slots;
    std::vector<ExpertRun> runs;
    if (!use_tables)
        for (const Assignment& a : assignments) {
            assigned_tokens.push_back(a.token);
            assigned_slots.push_back(a.slot);
        }
    size_t next = 0;
    while (next < assignments.size()) {
        const size_t group_limit = std::max<size_t>(1, ctx.experts.max_pinned());
        group.clear();
        group_begin.clear();
        size_t end = next;
        while (end < assignments.size()) {
            if (end == next || assignments[end].expert != assignments[end - 1].expert) {
                if (group.size() == group_limit) break;
                group.push_back(assignments[end].expert);
                group_begin.push_back(end);
            }
            ++end;
        }
        group_begin.push_back(end);
        {
            ProfileScope wait(ctx.profile, ProfileCategory::expert_wait);
            ctx.experts.request(layer, group);
        }
        while (true) {
            ready.clear();
            {
                ProfileScope wait(ctx.profile, ProfileCategory::expert_wait);
                if (!ctx.experts.next_ready(&ready)) break;
            }
            batch.clear();
            for (const ExpertProvider::Ready& r : ready)
                for (size_t i = group_begin[r.index]; i < group_begin[r.index + 1]; ++i) batch.emplace_back(i, r.record);
            const size_t count = batch.size();
            ProfileScope apply_scope(ctx.profile, ProfileCategory::lut_apply);  // includes each expert's down table
            if (!use_tables) {
                // prefill: each landed expert over all its tokens at once
                runs.clear();
                for (const ExpertProvider::Ready& r : ready) {
                    const size_t begin = group_begin[r.index], n = group_begin[r.index + 1] - begin;
                    runs.push_back({group[r.index], r.record, assigned_tokens.data() + begin, assigned_slots.data() + begin, n});
                }
                if (ctx.lut == kernels::VqLutMode::int8) experts_over_tokens_int8(ctx, expert_books, layer, runs, xe, ldx);
                else
                    for (const ExpertRun& run : runs) expert_over_tokens(ctx, expert_books, run, xe, ldx);
                continue;
            }
            ctx.pool.parallel_for(slices, [&](size_t slice_begin, size_t slice_end) {
                for (size_t slice = slice_begin; slice < slice_end; ++slice) {
                    float* g = ws.thread_gate[slice].data();
                    float* u = ws.thread_up[slice].data();
                    float* down_table = ws.thread_down_table[slice].data();
                    for (size_t i = count * slice / slices; i < count * (slice + 1) / slices; ++i) {
                        const Assignment& a = assignments[batch[i].first];
                        const uint8_t* record = batch[i].second;
                        const uint8_t* scales = record + layout.scales_off;
                        float* result = ws.slot_out.data() + (a.token * top_k + a.slot) * lat;
                        if (int8) {
                            int8_t* down_q = ws.thread_down_q[slice].data();
                            float* down_q_scales = ws.thread_down_q_scales[slice].data();
                            kernels::apply_vq_table_int8(isa, in_shape, packed6, record + layout.gate_off, scales,
                                                         ws.gate_q.data() + a.token * row_floats,
                                                         ws.gate_q_scales.data() + a.token * row_blocks, g, 0, inter);
                            kernels::apply_vq_table_int8(isa, in_shape, packed6, record + layout.up_off, scales + 2 * inter,
                                                         ws.up_q.data() + a.token * row_floats,
                                                         ws.up_q_scales.data() + a.token * row_blocks, u, 0, inter);
                            add_expert_input_biases(expert_books, a.expert, inter, 1, g, u);
                            kernels::glu(isa, ctx.act, g, u, inter);
                            uint8_t* xu = ws.thread_down_xu[slice].data();
                            float* xs = ws.thread_down_xs[slice].data();
                            kernels::quantize_vq_input_int8(down_shape, g, xu, xs);
                            kernels::build_vq_table_int8(isa, down_shape, books8 + 2 * stages, xu, xs, down_q, down_q_scales);
                            kernels::apply_vq_table_int8(isa, down_shape, packed6, record + layout.down_off, scales + 4 * inter,
                                                         down_q, down_q_scales, result, 0, lat);
                            add_expert_output_bias(expert_books, a.expert, lat, 1, result);
                            continue;
                        }
                        kernels::apply_vq_table(in_shape, packed6, record + layout.gate_off, scales,
                                                ws.gate_table.data() + a.token * row_floats, g, 0, inter);
                        kernels::apply_vq_table(in_shape, packed6, record + layout.up_off, scales + 2 * inter,
                                                ws.up_table.data() + a.token * row_floats, u, 0, inter);
                        add_expert_input_biases(expert_books, a.expert, inter, 1, g, u);
                        kernels::glu(isa, ctx.act, g, u, inter);
                        kernels::build_vq_table(down_shape, down_books, g, down_table);
                        kernels::apply_vq_table(down_shape, packed6, record + layout.down_off, scales + 4 * inter, down_table,
                                                result, 0, lat);
                        add_expert_output_bias(expert_books, a.expert, lat, 1, result);
                    }
                }
            }, 1);
        }
        ctx.experts.release_layer(layer);
        next = end;
    }

    // 5. weighted sum in slot order; latent MoE projects back up; shared experts
    float* acc = ws.moe_acc.data();  // [T][lat]
    for (size_t t = 0; t < tokens; ++t) {
        float* a = acc + t * lat;
        std::fill(a, a + lat, 0.0f);
        for (size_t j = 0; j < top_k; ++j) {
            const float weight = weights[t * top_k + j];
            const float* y = ws.slot_out.data() + (t * top_k + j) * lat;
            for (size_t i = 0; i < lat; ++i) a[i] += weight * y[i];
        }
        if (w.latent_up && !w.latent_norm.empty())
            kernels::rmsnorm(kernels::active_isa(), a, w.latent_norm.data(), static_cast<float>(c.rms_eps), lat, a);
    }
    if (w.latent_up) project(ctx, *w.latent_up, acc, lat, tokens, out, hidden);
    else
        for (size_t t = 0; t < tokens; ++t) std::memcpy(out + t * hidden, acc + t * lat, sizeof(float) * hidden);
    if (w.has_shared) {
        dense_ffn_chunk(ctx, w.shared, x, tokens, ws.shared_out.data());
        if (!w.shared_gate.empty())  // Qwen3.5: times sigmoid(shared_gate · x), one scalar per token
            for (size_t t = 0; t < tokens; ++t) {
                double logit = 0;
                for (size_t i = 0; i < hidden; ++i) logit += static_cast<double>(w.shared_gate[i]) * x[t * hidden + i];
                const float g = kernels::sigmoid(static_cast<float>(logit));
                for (size_t i = 0; i < hidden; ++i) ws.shared_out[t * hidden + i] *= g;
            }
        for (size_t i = 0; i < tokens * hidden; ++i) out[i] += ws.shared_out[i];
    }
}

}  // namespace waste::model
