// mla_layer.cpp — one decode step of Multi-head Latent Attention, absorbed
// form (models.md §2): cache only [c | k_pe] per token; fold W_UK into the
// query and W_UV after the attention-weighted sum. No positional encoding in
// this family (mla_use_nope).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/trunk_matvec.h"
#include "model/forward.h"
#include "platform/error.h"

namespace waste::model {

void mla_step(ForwardContext& ctx, const MlaWeights& w, LayerState& s, uint32_t position, const float* x, float* out) {
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t heads = c.heads, nope = c.qk_nope, rope = c.qk_rope, vd = c.v_head, rank = c.kv_lora;
    const size_t qk = nope + rope, row = rank + rope;
    WASTE_CHECK(s.n_kv == position && (position + 1) * (c.kv_lora + c.qk_rope) <= s.latent.size());
    float* q = ws.q.data();  // [heads][nope + rope]
    if (w.q) kernels::matvec(ctx.pool, *w.q, x, q);
    else {
        kernels::matvec(ctx.pool, *w.q_a, x, ws.small.data());
        kernels::rmsnorm(ws.small.data(), w.q_a_norm.data(), static_cast<float>(c.rms_eps), c.q_lora, ws.small.data());
        kernels::matvec(ctx.pool, *w.q_b, ws.small.data(), q);
    }
    float* entry = s.latent.data() + static_cast<size_t>(position) * row;  // [c (rank) | k_pe (rope)]
    kernels::matvec(ctx.pool, *w.kv_a, x, entry);
    kernels::rmsnorm(entry, w.kv_a_norm.data(), static_cast<float>(c.rms_eps), rank, entry);
    s.n_kv = position + 1;
    const size_t n = s.n_kv;
    const float scale = 1.0f / std::sqrt(static_cast<float>(qk));
    float* head_out = ws.head_out.data();  // [heads][vd]
    ctx.pool.parallel_for(heads, [&](size_t begin, size_t end) {
        std::vector<float> latent_q(rank), context(rank), scores(n), row_scratch(rank);
        for (size_t h = begin; h < end; ++h) {
            const float* q_nope = q + h * qk;
            const float* q_pe = q_nope + nope;
            // q̃ = W_UK[h]ᵀ q_nope: rows h*(nope+vd) .. +nope of kv_b
            std::fill(latent_q.begin(), latent_q.end(), 0.0f);
            kernels::accumulate_rows(*w.kv_b, h * (nope + vd), nope, q_nope, latent_q.data(), row_scratch.data());
            float max_score = -INFINITY;
            for (size_t t = 0; t < n; ++t) {
                const float* cached = s.latent.data() + t * row;
                float dot = 0;
                for (size_t j = 0; j < rank; ++j) dot += latent_q[j] * cached[j];
                for (size_t j = 0; j < rope; ++j) dot += q_pe[j] * cached[rank + j];
                scores[t] = dot * scale;
                max_score = std::max(max_score, scores[t]);
            }
            double total = 0;
            for (size_t t = 0; t < n; ++t) {
                scores[t] = std::exp(scores[t] - max_score);
                total += scores[t];
            }
            const float inv = static_cast<float>(1.0 / total);
            std::fill(context.begin(), context.end(), 0.0f);
            for (size_t t = 0; t < n; ++t) {
                const float p = scores[t] * inv;
                const float* cached = s.latent.data() + t * row;
                for (size_t j = 0; j < rank; ++j) context[j] += p * cached[j];
            }
            // o_h = W_UV[h] · context: rows h*(nope+vd)+nope .. +vd
            for (size_t i = 0; i < vd; ++i) {
                w.kv_b->row(h * (nope + vd) + nope + i, row_scratch);
                float dot = 0;
                for (size_t j = 0; j < rank; ++j) dot += row_scratch[j] * context[j];
                head_out[h * vd + i] = dot;
            }
        }
    });
    if (w.g) {
        kernels::matvec(ctx.pool, *w.g, x, ws.gate.data());
        for (size_t i = 0; i < heads * vd; ++i) head_out[i] *= kernels::sigmoid(ws.gate[i]);
    }
    kernels::matvec(ctx.pool, *w.o, head_out, out);
}

}  // namespace waste::model
