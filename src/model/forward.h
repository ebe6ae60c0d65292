// forward.h — one token through a Kimi-family model (models.md §0–§6).
//
// The decode step: embed, then per layer attention (KDA or MLA) and FFN
// (dense or MoE) with plain residuals or Attention Residuals, then the final
// norm and lm_head. Expert records come from an ExpertProvider so that
// caching and reading stay in runtime/ and never change the arithmetic.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "format/container.h"
#include "kernels/math.h"
#include "kernels/vq_lut.h"
#include "model/session_state.h"
#include "model/weights.h"
#include "platform/thread_pool.h"

namespace waste::model {

// Hands out checked expert records; release() ends their use for this layer.
class ExpertProvider {
public:
    virtual ~ExpertProvider() = default;
    virtual std::span<const uint8_t> acquire(int layer, int expert) = 0;
    virtual void release_layer(int layer) = 0;
};

// What the MoE chose for one token in one layer (for stats and route dumps).
struct RouteChoice {
    std::vector<int> experts;     // selection order
    std::vector<float> weights;   // after renormalisation and scaling
};

// Scratch buffers for one token, allocated once.
struct Workspace {
    Workspace(const format::ModelConfig& c, const format::Container& container);
    std::vector<float> x, normed, attn_out, ffn_out, ps, tmp_h;     // [H]
    std::vector<float> q, k, v, decay, gate, beta, conv_in, small;  // attention scratch
    std::vector<float> head_out;                                    // [heads * max(v, D)]
    std::vector<float> scores;                                      // [ctx]
    std::vector<float> latent_q, context_vec, row_scratch;          // MLA absorbed
    std::vector<float> ffn_gate, ffn_up;                            // [max I]
    std::vector<float> router, expert_in, moe_acc;                  // [E], [lat], [lat]
    std::vector<float> gate_table, up_table;                        // [positions(lat)][S][entries]
    std::vector<std::vector<float>> expert_gate, expert_up, down_table, expert_out;  // per top-k slot
    std::vector<float> logits;                                      // [vocab]
};

struct ForwardContext {
    const format::Container& container;
    const format::ModelConfig& config;
    const ModelWeights& weights;
    platform::ThreadPool& pool;
    ExpertProvider& experts;
    Workspace& ws;
    kernels::GluActivation act;
    std::vector<RouteChoice>* routes = nullptr;  // per layer, filled when not null
};

// Runs one token; logits land in ws.logits. Throws WASTE_ERR_CONTEXT_FULL
// when the session holds context_length tokens already.
void forward_token(ForwardContext& ctx, SessionState& state, int32_t token);

// Layers (kda_layer.cpp, mla_layer.cpp, ffn_layer.cpp): x is the normed
// input [H]; the output [H] is written to out.
void kda_step(ForwardContext& ctx, const KdaWeights& w, LayerState& s, const float* x, float* out);
void mla_step(ForwardContext& ctx, const MlaWeights& w, LayerState& s, uint32_t position, const float* x, float* out);
void dense_ffn(ForwardContext& ctx, const FfnWeights& w, const float* x, float* out);
void moe_ffn(ForwardContext& ctx, int layer, const MoeWeights& w, const float* x, float* out);

}  // namespace waste::model
