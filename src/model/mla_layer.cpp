// mla_layer.cpp — Multi-head Latent Attention over a chunk, absorbed form
// (models.md §2): only [c | k_pe] is cached per token; W_UK folds into the
// query and W_UV applies after the attention-weighted sum. Kimi's MLA has no
// positional encoding (mla_use_nope); DeepSeek-V3 / K2 rotate q_pe and k_pe
// (other-families.md §1), and the cache holds k_pe already rotated, as the
// reference's absorbed decode does. Token t of the chunk attends to the cache
// up to and including itself. Mistral 4's query temperature multiplies the
// scores of the query at position p (ModelConfig::query_temperature).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/trunk_matvec.h"
#include "model/forward.h"
#include "platform/error.h"

namespace waste::model {

void mla_chunk(ForwardContext& ctx, const MlaWeights& w, LayerState& s, uint32_t position, const float* x, size_t tokens,
               float* out) {
    ProfileScope scope(ctx.profile, ProfileCategory::mla);
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t heads = c.heads, nope = c.qk_nope, rope = c.qk_rope, vd = c.v_head, rank = c.kv_lora;
    const size_t qk = nope + rope, row = rank + rope, hidden = c.hidden, ld = ws.attn_width;
    const float eps = static_cast<float>(c.rms_eps);
    const kernels::Isa isa = kernels::active_isa();
    WASTE_CHECK(s.n_kv == position && (position + tokens) * row <= s.latent.size());
    float* q = ws.q.data();  // [T][heads][nope + rope]
    if (w.q) project(ctx, *w.q, x, hidden, tokens, q, ld);
    else {
        project(ctx, *w.q_a, x, hidden, tokens, ws.small.data(), ws.small_width);
        for (size_t t = 0; t < tokens; ++t)
            kernels::rmsnorm(isa, ws.small.data() + t * ws.small_width, w.q_a_norm.data(), eps, c.q_lora,
                             ws.small.data() + t * ws.small_width);
        project(ctx, *w.q_b, ws.small.data(), ws.small_width, tokens, q, ld);
    }
    float* entries = s.latent.data() + static_cast<size_t>(position) * row;  // [T][c (rank) | k_pe (rope)]
    project(ctx, *w.kv_a, x, hidden, tokens, entries, row);
    for (size_t t = 0; t < tokens; ++t)
        kernels::rmsnorm(isa, entries + t * row, w.kv_a_norm.data(), eps, rank, entries + t * row);
    if (w.rope.dim() > 0)
        for (size_t t = 0; t < tokens; ++t) {
            const uint32_t at = position + static_cast<uint32_t>(t);
            w.rope.apply(q + t * ld + nope, heads, qk, at);  // every head's q_pe
            w.rope.apply(entries + t * row + rank, 1, rope, at);  // the shared k_pe
        }
    s.n_kv = position + static_cast<uint32_t>(tokens);
    const float scale = w.score_scale;
    float* head_out = ws.head_out.data();  // [T][heads][vd]
    ctx.pool.parallel_for(heads, [&](size_t begin, size_t end) {
        std::vector<float> uk(nope * rank), uv(vd * rank);  // W_UK[h] [nope][rank], W_UV[h] [vd][rank]
        // [q̃ | q_pe], laid out as a cache row [c | k_pe]: one dot a position
        std::vector<float> query(row), context(rank), scores(position + tokens);
        for (size_t h = begin; h < end; ++h) {
            // the head's rows of kv_b, dequantised with the SIMD row decoder
            // (the same values as kv_b->row(): a scalar loop here was most of
            // a decode token's MLA time)
            kernels::dequantize_rows(isa, *w.kv_b, h * (nope + vd), nope, uk.data(), rank);
            kernels::dequantize_rows(isa, *w.kv_b, h * (nope + vd) + nope, vd, uv.data(), rank);
            for (size_t t = 0; t < tokens; ++t) {
                const float* q_nope = q + t * ld + h * qk;
                const float* q_pe = q_nope + nope;
                std::fill(query.begin(), query.begin() + rank, 0.0f);  // q̃ = W_UKᵀ q_nope
                for (size_t i = 0; i < nope; ++i) kernels::axpy(isa, q_nope[i], uk.data() + i * rank, query.data(), rank);
                std::copy(q_pe, q_pe + rope, query.begin() + rank);
                const size_t n = position + t + 1;
                kernels::dots(isa, query.data(), s.latent.data(), row, n, row, scores.data());
                // the query temperature (Mistral 4; 1 elsewhere) scales the query, so its scores
                const float temperature = c.query_temperature(position + static_cast<uint32_t>(t));
                softmax_weights(scores.data(), n, scale * temperature);  // each cached latent's weight
                std::fill(context.begin(), context.end(), 0.0f);
                kernels::axpys(isa, scores.data(), s.latent.data(), row, n, context.data(), rank);
                float* oh = head_out + t * ld + h * vd;  // o_h = W_UV · context
                kernels::dots(isa, context.data(), uv.data(), rank, vd, rank, oh);
            }
        }
    });
    if (w.g) {
        project(ctx, *w.g, x, hidden, tokens, ws.gate.data(), ld);
        for (size_t t = 0; t < tokens; ++t)
            kernels::mul_sigmoid(isa, head_out + t * ld, ws.gate.data() + t * ld, heads * vd);
    }
    project(ctx, *w.o, head_out, ld, tokens, out, hidden);
}

}  // namespace waste::model
