// trunk_tensors.h — the one table of a text model's trunk tensors.
//
// Every trunk tensor a config implies, with its name (container-v0 §3, the
// release's Hugging Face names), its shape in PyTorch order, its role and the
// kind of values it holds, in the order containers store them. The loader
// binds weights by role from it (model/weights.cpp), the converter plans the
// checkpoint from it (convert/kimi_layout.cpp) and the synth draws
// containers from it (synth/synth_tensors.cpp): a family's or an attention
// kind's tensors are written here once. The routed experts are not trunk
// tensors (expert records); the vision tower has its own table
// (vision_config.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "format/model_config.h"

namespace waste::format {

// What a tensor is to the forward: the loader binds by it.
enum class TrunkRole : uint8_t {
    embed, final_norm, lm_head, output_res_norm, output_res_proj,  // outside the layers
    input_norm, post_norm,                                         // every layer
    // KDA (Kimi's linear attention)
    kda_q, kda_k, kda_v, kda_b, kda_f_a, kda_f_b, kda_g, kda_g_a, kda_g_b, kda_o,
    kda_conv_q, kda_conv_k, kda_conv_v, kda_a_log, kda_dt_bias, kda_o_norm,
    // GDN (Qwen3.5's Gated DeltaNet)
    gdn_qkv, gdn_z, gdn_b, gdn_a, gdn_conv, gdn_a_log, gdn_dt_bias, gdn_norm, gdn_out,
    // MLA (Kimi's NoPE form and DeepSeek's)
    mla_q_a, mla_q_a_norm, mla_q_b, mla_q, mla_kv_a, mla_kv_a_norm, mla_kv_b, mla_g, mla_o,
    // GQA (Qwen3-MoE, GLM-4.5, gpt-oss)
    gqa_q, gqa_k, gqa_v, gqa_o, gqa_q_bias, gqa_k_bias, gqa_v_bias, gqa_q_norm, gqa_k_norm, gqa_o_bias, gqa_sinks,
    // a dense layer's FFN
    ffn_gate, ffn_up, ffn_down,
    // a MoE layer's trunk part: router, shared experts, latent projections, expert biases
    router, router_bias, router_correction_bias, shared_gate, shared_up, shared_down, shared_expert_gate,
    latent_down, latent_up, latent_norm, experts_gate_up_bias, experts_down_bias,
    // Attention Residuals
    attn_res_norm, attn_res_proj, mlp_res_norm, mlp_res_proj,
    count_
};
inline constexpr size_t trunk_role_count = static_cast<size_t>(TrunkRole::count_);

// What kind of values a tensor holds (what the synth draws for it).
enum class TrunkValues : uint8_t {
    embedding,          // [vocab, H]
    lm_head,            // [vocab, H]
    projection,         // [out, in], into a branch
    residual_out,       // [out, in], written into the residual stream (o_proj, down_proj, ...)
    router,             // [experts, H]
    decay_projection,   // KDA's f_b: its output is a decay's argument
    norm,               // multiplied: around 1
    centred_norm,       // a zero-centred norm's w (Qwen3.5): around 0, multiplied as 1 + w (the loader adds the 1)
    bias,               // added to a branch
    residual_bias,      // added to what the residual stream receives
    correction_bias,    // a router's selection-only bias
    sink,               // a softmax logit per head
    conv,               // short convolution taps
    a_log,              // KDA's (GDN's) log decay rate per head (value head)
    dt_bias,            // KDA's decay bias per channel (GDN's per value head)
    res_norm,           // an Attention Residuals norm
    res_proj,           // an Attention Residuals query vector
};

struct TrunkTensorSpec {
    TrunkRole role;
    int layer = -1;                  // -1: outside the layers
    std::string name;                // without the container's tensor prefix
    std::vector<int64_t> shape;      // PyTorch order
    TrunkValues values;
    bool optional = false;           // taken and bound when present, else absent
    bool at_least = false;           // any shape of at least elements() values (A_log: one per head, may be
                                     // padded to head_dim, container-v0 §3)

    int64_t elements() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

// Alternatives the config leaves to the tensors themselves (KDA's output gate
// is full-rank g_proj or low-rank g_a/g_b): asked of the source with a name
// from this table.
using TrunkTensorPresent = std::function<bool(const std::string& name)>;

// Every trunk tensor of `c`, in storage order: embed_tokens; per layer the
// two norms, the attention kind's tensors, the dense FFN or the MoE block's
// trunk part, the Attention Residuals; then the output AttnRes, the final
// norm, lm_head.
std::vector<TrunkTensorSpec> trunk_tensor_table(const ModelConfig& c, const TrunkTensorPresent& present);

// The tensor's GGUF name as llama.cpp v0.4.0 writes it (llama-arch.cpp's
// LLM_TENSOR names), after "blk.N." for a layer's: "attn_q.weight". Empty
// where GGUF has no one tensor for the role: KDA's (kimi-linear is not read
// from GGUF yet); MLA's kv_b, which newer files split into attn_k_b and
// attn_v_b, and gpt-oss's interleaved expert biases are composed by the
// GGUF source (convert/gguf_source.cpp) from the names it gives here.
std::string_view gguf_tensor_name(TrunkRole role, Family family);

}  // namespace waste::format
