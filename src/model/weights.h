// weights.h — a model's trunk tensors, bound by role through the one trunk
// table (format/trunk_tensors.h: names, shapes, which are optional) and
// checked against the shapes the config implies.
//
// Matrices stay in their stored format (LoadedTensor, matvec'ed in place);
// vectors (norms, biases, conv taps, AttnRes) are dequantised to f32 once at
// bind time. A missing tensor or a wrong shape is an error naming the tensor.
// What the tensors themselves decide — the KDA gate kind, an MLA output gate
// the config leaves off, the latent-MoE norm, a stored lm_head beside tied
// embeddings — is bound when present (null or empty otherwise).
#pragma once

#include <vector>

#include "format/container.h"
#include "model/rope.h"

namespace waste::model {

using Matrix = const format::LoadedTensor*;

struct KdaWeights {
    Matrix q = nullptr, k = nullptr, v = nullptr;  // [C, H]
    std::vector<float> conv_q, conv_k, conv_v;     // [C][kernel]
    Matrix f_a = nullptr, f_b = nullptr;           // [D, H], [C, D]
    Matrix b = nullptr;                            // [heads, H]
    std::vector<float> a;                          // [heads] = exp(A_log)
    std::vector<float> dt_bias;                    // [C]
    Matrix g = nullptr;                            // full-rank gate [C, H], or
    Matrix g_a = nullptr, g_b = nullptr;           // low-rank [D, H], [C, D]
    std::vector<float> o_norm;                     // [D]
    Matrix o = nullptr;                            // [H, C]
};

// Qwen3.5's Gated DeltaNet (families-2026.md §1.5).
struct GdnWeights {
    Matrix qkv = nullptr;                          // [2·Kd + Vd, H]: q, k, v (Kd = heads·D, Vd = v_heads·D)
    std::vector<float> conv;                       // [2·Kd + Vd][kernel]: one depthwise conv over q, k, v
    Matrix z = nullptr;                            // [Vd, H]: the output gate's input
    Matrix b = nullptr, a = nullptr;               // [v_heads, H]: β's and the decay's inputs
    std::vector<float> a_rate;                     // [v_heads] = exp(A_log)
    std::vector<float> dt_bias;                    // [v_heads]
    std::vector<float> norm;                       // [D]: the output norm's (plain) weight
    Matrix out = nullptr;                          // [H, Vd]
};

struct MlaWeights {
    Matrix q = nullptr;                            // [heads*(nope+rope), H], or
    Matrix q_a = nullptr, q_b = nullptr;           // [q_lora, H], [heads*(nope+rope), q_lora]
    std::vector<float> q_a_norm;                   // [q_lora]
    Matrix kv_a = nullptr;                         // [kv_lora+rope, H]
    std::vector<float> kv_a_norm;                  // [kv_lora]
    Matrix kv_b = nullptr;                         // [heads*(nope+v), kv_lora]
    Matrix g = nullptr;                            // output gate [heads*v, H] (optional)
    Matrix o = nullptr;                            // [H, heads*v]
    // Positions (DeepSeek-V3 / K2; Kimi's MLA is NoPE): RoPE on q_pe and k_pe
    // when rope.dim() > 0, and the softmax scale (nope+rope)^-0.5 times YaRN's
    // mscale^2 (other-families.md §0).
    Rope rope;
    float score_scale = 0.0f;
};

// Grouped-query attention (Qwen3-MoE, GLM-4.5; other-families.md §4, §7).
struct GqaWeights {
    Matrix q = nullptr;                            // [heads*head_dim, H]; gated: [heads*2*head_dim, H], each
                                                   // head's rows [q | gate]
    bool output_gate = false;                      // each head's output times sigmoid(gate) (Qwen3.5)
    Matrix k = nullptr, v = nullptr;               // [kv_heads*head_dim, H]
    Matrix o = nullptr;                            // [H, heads*head_dim]
    std::vector<float> q_bias, k_bias, v_bias;     // [heads*head_dim], [kv_heads*head_dim] (empty: none)
    std::vector<float> q_norm, k_norm;             // [head_dim]: per-head RMSNorm before RoPE, or [heads*head_dim],
                                                   // [kv_heads*head_dim] over the whole projection (empty: none)
    std::vector<float> o_bias;                     // [H] (gpt-oss; empty: none)
    std::vector<float> sinks;                      // [heads]: one extra softmax logit per head (gpt-oss; empty: none)
    int window = 0;                                // > 0: a sliding layer, keys the last `window` positions
    Rope rope;                                     // NEOX pairs over the first rope_dim dims of each head
    float score_scale = 0.0f;                      // head_dim^-0.5
};

struct FfnWeights {
    Matrix gate = nullptr, up = nullptr, down = nullptr;  // [I, H], [I, H], [H, I]
    int intermediate = 0;
};

struct MoeWeights {
    Matrix router = nullptr;                       // [E, H]
    std::vector<float> router_bias;                // [E] (zeros when absent)
    bool has_shared = false;
    FfnWeights shared;                             // intermediate = ModelConfig::shared_width()
    std::vector<float> shared_gate;                // [H]: the shared output times sigmoid(shared_gate · x)
                                                   // (Qwen3.5; empty: ungated)
    Matrix latent_down = nullptr, latent_up = nullptr;  // [lat, H], [H, lat]
    std::vector<float> latent_norm;                // [lat] (empty: no norm)
    // gpt-oss's per-expert biases (empty: none): from the trunk's
    // experts.gate_up_proj_bias [E, 2I] (gate and up interleaved) and
    // experts.down_proj_bias [E, H]
    std::vector<float> gate_bias, up_bias;         // [E][I]
    std::vector<float> down_bias;                  // [E][H]
};

struct AttnResWeights {
    std::vector<float> attn_norm, attn_proj, mlp_norm, mlp_proj;  // each [H]
};

struct LayerWeights {
    format::LayerKind kind = format::LayerKind::kda;
    bool moe = false;
    std::vector<float> input_norm, post_norm;      // [H]
    KdaWeights kda;
    GdnWeights gdn;
    MlaWeights mla;
    GqaWeights gqa;
    FfnWeights dense;
    MoeWeights moe_weights;
    AttnResWeights attn_res;
};

struct ModelWeights {
    Matrix embed = nullptr;                        // [vocab, H]
    Matrix lm_head = nullptr;                      // [vocab, H] (embed when tied)
    std::vector<float> final_norm;                 // [H]
    std::vector<float> output_res_norm, output_res_proj;  // [H] (AttnRes only)
    std::vector<LayerWeights> layers;
};

ModelWeights bind_weights(const format::Container& container);

}  // namespace waste::model
