// gqa_layer.cpp — grouped-query softmax attention over a chunk (Qwen3-MoE,
// GLM-4.5; other-families.md §4, §7): q, k, v projections plus their biases
// (GLM's attention_bias); each head's q and k RMSNormed over head_dim
// (q_norm / k_norm, Qwen3 and GLM's use_qk_norm; MiniMax-M2's over the
// whole q and k projections) BEFORE NEOX RoPE on the
// first rope_dim dims of each head (GLM: half, the rest passes); gpt-oss's
// o_proj bias, per-head sink logit (an extra softmax column, dropped);
// Qwen3.5's output gate (q_proj gives each head [q | gate], the head's output
// times sigmoid(gate)); gpt-oss's
// sliding layers (keys of the last `window` positions, the cache a ring of
// window + 63 rows, a longer chunk taken 64 tokens at a time); the cache holds every
// token's keys (normed and rotated) and values; query head h reads key/value
// head h / (heads / kv_heads); scores scaled by head_dim^-0.5. Token t of the
// chunk attends to the cache up to and including itself.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/elementwise.h"
#include "kernels/trunk_matvec.h"
#include "model/forward.h"
#include "model/gqa_attend.h"
#include "platform/error.h"

namespace waste::model {

void gqa_chunk(ForwardContext& ctx, const GqaWeights& w, LayerState& s, uint32_t position, const float* x, size_t tokens,
               float* out) {
    // A sliding layer's ring holds sliding_chunk_tokens rows beyond its
    // window: a longer chunk goes through in pieces of that many tokens
    // (each token's arithmetic is the same either way).
    if (w.window > 0 && tokens > sliding_chunk_tokens) {
        const size_t hidden = ctx.config.hidden;
        for (size_t done = 0; done < tokens; done += sliding_chunk_tokens)
            gqa_chunk(ctx, w, s, position + static_cast<uint32_t>(done), x + done * hidden,
                      std::min(sliding_chunk_tokens, tokens - done), out + done * hidden);
        return;
    }
    ProfileScope scope(ctx.profile, ProfileCategory::gqa);
    const format::ModelConfig& c = ctx.config;
    Workspace& ws = ctx.ws;
    const size_t heads = c.heads, kv_heads = c.kv_heads, d = c.head_dim, hidden = c.hidden, ld = ws.attn_width;
    const size_t kv_width = kv_heads * d, row = gqa_cache_row(c);
    const float eps = static_cast<float>(c.rms_eps);
    const kernels::Isa isa = kernels::active_isa();
    // a sliding layer's cache is a ring (session_state.h): position p at row p % ring
    const size_t window = static_cast<size_t>(w.window);
    const size_t ring = window ? window + sliding_chunk_tokens - 1 : 0;
    auto slot = [&](size_t p) { return ring ? p % ring : p; };
    WASTE_CHECK(s.n_kv == position && heads * d * (w.output_gate ? 2 : 1) <= ld &&
                tokens <= (window ? sliding_chunk_tokens : ws.chunk_tokens));
    WASTE_CHECK(ring ? (position + tokens <= s.kv.size() / row || s.kv.size() / row == ring)
                     : (position + tokens) * row <= s.kv.size());
    float* q = ws.q.data();  // [T][heads][d]
    project(ctx, *w.q, x, hidden, tokens, q, ld);
    float* gate = ws.gate.data();  // [T][heads][d]: a gated q_proj's second half of each head
    if (w.output_gate)
        for (size_t t = 0; t < tokens; ++t)
            for (size_t h = 0; h < heads; ++h) {
                float* row = q + t * ld;
                std::memcpy(gate + t * ld + h * d, row + (2 * h + 1) * d, sizeof(float) * d);
                std::memmove(row + h * d, row + 2 * h * d, sizeof(float) * d);  // (h ≤ 2h: moved down in order)
            }
    // keys then values of each token, [keys (kv_width) | values (kv_width)] per row
    if (!ring) {
        float* entries = s.kv.data() + static_cast<size_t>(position) * row;
        project(ctx, *w.k, x, hidden, tokens, entries, row);
        project(ctx, *w.v, x, hidden, tokens, entries + kv_width, row);
    } else {
        // a ring's chunk may wrap: projected over the whole chunk first (so a
        // token's bits never depend on where the ring wraps), then copied in
        float* keys = ws.k.data();    // [T][kv_width]
        float* values = ws.v.data();  // [T][kv_width]
        project(ctx, *w.k, x, hidden, tokens, keys, kv_width);
        project(ctx, *w.v, x, hidden, tokens, values, kv_width);
        for (size_t t = 0; t < tokens; ++t) {
            float* entry = s.kv.data() + slot(position + t) * row;
            std::memcpy(entry, keys + t * kv_width, sizeof(float) * kv_width);
            std::memcpy(entry + kv_width, values + t * kv_width, sizeof(float) * kv_width);
        }
    }
    for (size_t t = 0; t < tokens; ++t) {
        const uint32_t at = position + static_cast<uint32_t>(t);
        float* qt = q + t * ld;
        float* kt = s.kv.data() + slot(at) * row;
        if (!w.q_bias.empty()) {
            float* vt = kt + kv_width;
            for (size_t i = 0; i < heads * d; ++i) qt[i] += w.q_bias[i];
            for (size_t i = 0; i < kv_width; ++i) kt[i] += w.k_bias[i];
            for (size_t i = 0; i < kv_width; ++i) vt[i] += w.v_bias[i];
        }
        if (!w.q_norm.empty()) {  // over each head (the norms' size head_dim) or the whole projection
            const size_t qn = w.q_norm.size(), kn = w.k_norm.size();
            for (size_t i = 0; i < heads * d; i += qn) kernels::rmsnorm(isa, qt + i, w.q_norm.data(), eps, qn, qt + i);
            for (size_t i = 0; i < kv_width; i += kn) kernels::rmsnorm(isa, kt + i, w.k_norm.data(), eps, kn, kt + i);
        }
        w.rope.apply(qt, heads, d, at);
        w.rope.apply(kt, kv_heads, d, at);
    }
    s.n_kv = position + static_cast<uint32_t>(tokens);
    float* head_out = ws.head_out.data();  // [T][heads][d]
    const GqaAttendShape shape{.heads = heads, .kv_heads = kv_heads, .head_dim = d, .row = row, .ld = ld,
                               .window = window, .ring = ring, .scale = w.score_scale,
                               .sinks = w.sinks.empty() ? nullptr : w.sinks.data()};
    gqa_attend(isa, ctx.pool, shape, q, s.kv.data(), position, tokens, head_out);
    if (w.output_gate)
        for (size_t t = 0; t < tokens; ++t) kernels::mul_sigmoid(isa, head_out + t * ld, gate + t * ld, heads * d);
    project(ctx, *w.o, head_out, ld, tokens, out, hidden);
    if (!w.o_bias.empty())
        for (size_t t = 0; t < tokens; ++t)
            for (size_t i = 0; i < hidden; ++i) out[t * hidden + i] += w.o_bias[i];
}

}  // namespace waste::model
