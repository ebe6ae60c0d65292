// model_config.h — the text-model configuration of a container, validated.
//
// Parses the manifest's `config` object (the release's config.json) into the
// numbers the engine needs, with every value bounded before it can size
// anything. Which trunk tensors the config implies is format/trunk_tensors.h's
// table; this file only reads the config.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace waste::format {

// The attention kind of a layer: Kimi's KDA and MLA (also DeepSeek's),
// grouped-query softmax attention (Qwen3, GLM-4.5: model/gqa_layer.cpp), or
// Qwen3.5's Gated DeltaNet (the KDA recurrence with a scalar decay per value
// head; model/kda_layer.cpp). KDA and GDN are the delta-rule kinds: a
// recurrent state and conv ring per layer, no cache per token.
enum class LayerKind : uint8_t { kda, mla, gqa, gdn };
inline bool is_delta_rule(LayerKind kind) { return kind == LayerKind::kda || kind == LayerKind::gdn; }
// The expert / FFN activation: SwiGLU, Kimi K3's SiTU, or gpt-oss's clamped
// SwiGLU (gate = min(gate, limit), up = clamp(up, ±limit),
// (up + 1) · gate · sigmoid(1.702 gate)).
enum class Activation : uint8_t { silu, situ, clamped_swiglu };

// Which published family the config describes (its model_type). The family
// decides defaults the config leaves unsaid (Kimi's MLA has no positional
// encoding; DeepSeek's rotates q_pe and k_pe) and the MoE block's tensor
// names; docs/FORMAT.md "Other families".
enum class Family : uint8_t { kimi, deepseek, qwen3, glm4, gpt_oss, minimax_m2, mistral4, qwen35 };

// How the MoE router turns logits into experts and weights (model/routers.h):
// Kimi / DeepSeek's (and GLM-4.5's) sigmoid with a selection-only bias, expert groups,
// renormalisation and routed scaling; Qwen3's softmax over all experts, top-k,
// optional renormalisation (norm_topk_prob); gpt-oss's top-k of the raw
// logits (plus the router's bias) with a softmax over the k chosen.
enum class RouterKind : uint8_t { sigmoid_grouped, softmax_topk, topk_softmax };

// YaRN context extension (other-families.md §0; HF modeling_rope_utils
// _compute_yarn_parameters). mscale / mscale_all_dim are 0 when unset.
struct YarnScaling {
    double factor = 1.0;
    double original_max_position = 0;  // original_max_position_embeddings
    double beta_fast = 32.0, beta_slow = 1.0;
    double mscale = 0.0, mscale_all_dim = 0.0;
    bool truncate = true;               // floor/ceil the correction range
};

struct ModelConfig {
    std::string model_type;
    Family family = Family::kimi;
    int hidden = 0;                  // hidden_size
    int layers = 0;                  // num_hidden_layers
    int first_dense = 0;             // first_k_dense_replace (Kimi / DeepSeek): layers [0, first_dense) are dense
    std::vector<uint8_t> moe_layer;  // per 0-based layer: 1 = MoE, 0 = dense FFN (first_k_dense_replace, or
                                     // Qwen3's decoder_sparse_step / mlp_only_layers)
    int intermediate = 0;            // intermediate_size (dense FFN)
    int moe_intermediate = 0;        // moe_intermediate_size (one routed expert)
    int experts = 0;                 // num_experts / n_routed_experts
    int top_k = 0;                   // num_experts_per_token / num_experts_per_tok
    int shared_experts = 0;          // num_shared_experts / n_shared_experts
    int shared_intermediate = 0;     // shared_expert_intermediate_size (Qwen3.5); 0: moe_intermediate * shared_experts
    bool shared_expert_gate = false; // the shared expert's output times sigmoid(shared_expert_gate · x) (Qwen3.5)
    RouterKind router = RouterKind::sigmoid_grouped;
    bool renormalize = true;         // moe_renormalize / norm_topk_prob (Qwen3's default: false)
    double routed_scaling = 1.0;     // routed_scaling_factor
    int expert_groups = 1;           // n_group / num_expert_group
    int top_groups = 1;              // topk_group
    int latent = 0;                  // routed_expert_hidden_size, 0 = no latent MoE
    int vocab = 0;                   // vocab_size
    bool tie_embeddings = false;     // tie_word_embeddings
    int64_t bos = -1, eos = -1;      // bos_token_id, eos_token_id (a list's first; -1 = none)
    std::vector<int32_t> eos_ids;    // every EOS id, each once: eos_token_id's (an id or a list), then those of the
                                     // container's generation_config.json (Container::open adds them); eos_ids[0] == eos
    double rms_eps = 1e-6;           // rms_norm_eps
    Activation activation = Activation::silu;
    double situ_beta = 4.0;          // activation_situ_beta
    double situ_linear_beta = 25.0;  // activation_situ_linear_beta (<= 0: identity on b)
    double swiglu_limit = 7.0;       // gpt-oss's swiglu_limit (clamped_swiglu)
    bool expert_bias = false;        // gpt-oss: per-expert biases on gate/up and down (trunk tensors)
    int attn_res_block = 0;          // attn_res_block_size, 0 = plain residuals

    // MLA
    int heads = 0;                   // num_attention_heads
    int qk_nope = 0, qk_rope = 0, v_head = 0;
    int kv_lora = 0;                 // kv_lora_rank
    int q_lora = 0;                  // q_lora_rank (0 = plain q_proj)
    bool mla_output_gate = false;    // mla_use_output_gate
    bool mla_rope = false;           // !mla_use_nope: RoPE on q_pe and k_pe (DeepSeek); Kimi's MLA is NoPE
    double rope_theta = 10000.0;     // rope_theta
    bool rope_interleave = true;     // rope_interleave: pairs (2i, 2i+1), else (i, i + d/2)
    bool yarn_enabled = false;       // rope_scaling {type: yarn}
    YarnScaling yarn;
    // Query temperature (Llama-4 scaling; Mistral 4): the query at position p
    // is multiplied by 1 + attn_temperature_scale * ln(1 + floor(p /
    // attn_temperature_length)); scale 0 = none. Exactly 1 below the length.
    // In f32 with the scale rounded to f32, as llama.cpp computes it: a
    // config's 0.1 and a GGUF's f32 0.1 give the same bits.
    double attn_temperature_scale = 0.0;
    int64_t attn_temperature_length = 0;
    float query_temperature(uint32_t position) const {
        if (attn_temperature_scale == 0.0) return 1.0f;
        const auto steps = static_cast<float>(static_cast<int64_t>(position) / attn_temperature_length);
        return 1.0f + static_cast<float>(attn_temperature_scale) * std::log1p(steps);
    }

    // GQA (Qwen3, GLM-4.5): heads query heads over kv_heads shared key/value heads of head_dim
    int kv_heads = 0;                // num_key_value_heads
    int head_dim = 0;                // head_dim (q_proj's output is heads * head_dim, not hidden)
    int rope_dim = 0;                // rotated dims at the front of each head: head_dim * partial_rotary_factor
                                     // (GLM: half); the rest passes through
    bool qkv_bias = false;           // attention_bias: biases on q, k and v (GLM; o_proj has none)
    bool qk_norm = false;            // per-head q_norm / k_norm before RoPE (Qwen3 always; GLM's use_qk_norm)
    bool qk_norm_whole = false;      // ... over the whole q and k projections instead of each head (MiniMax-M2)
    bool attn_output_gate = false;   // q_proj gives each head [q | gate]; the head's output times sigmoid(gate)
                                     // (Qwen3.5's gated attention)
    bool o_bias = false;             // a bias on o_proj too (gpt-oss)
    bool sinks = false;              // a learned sink logit per head (gpt-oss's self_attn.sinks)
    int sliding_window = 0;          // keys of a sliding layer: the last sliding_window positions (gpt-oss)
    std::vector<uint8_t> sliding_layer;  // per 0-based layer: 1 = sliding_attention (layer_types)

    // The delta-rule layers: KDA (linear_attn_config) and GDN (Qwen3.5's
    // linear_num_key_heads, linear_num_value_heads, linear_key_head_dim,
    // linear_conv_kernel_dim). kda_heads query/key heads of kda_head_dim;
    // kda_v_heads value heads of the same dim (KDA: = kda_heads; GDN: a
    // multiple, value head j reading key head j / (kda_v_heads / kda_heads)).
    int kda_heads = 0, kda_head_dim = 0, conv_kernel = 0;
    int kda_v_heads = 0;
    double gate_lower_bound = 0.0;   // < 0: K3's bounded sigmoid decay gate
    std::vector<LayerKind> layer_kinds;  // per 0-based layer
    // Zero-centred RMSNorm weights (Qwen3.5: y = x/rms(x) · (1 + w)): the
    // container keeps the release's w; the loader adds 1 (format/trunk_tensors.h).
    bool zero_centred_norms = false;

    int expert_input() const { return latent > 0 ? latent : hidden; }
    int shared_width() const { return shared_intermediate > 0 ? shared_intermediate : moe_intermediate * shared_experts; }
    // A delta-rule layer's state: S [kda_v_heads][D keys][D values] f32, and
    // its conv ring [kernel - 1][q | k | v channels] (KDA: three rings of its
    // q, k and v, the same count).
    uint64_t delta_state_floats() const {
        return static_cast<uint64_t>(kda_v_heads) * kda_head_dim * kda_head_dim;
    }
    uint64_t delta_conv_channels() const {
        return static_cast<uint64_t>(2 * kda_heads + kda_v_heads) * kda_head_dim;
    }
    uint64_t delta_conv_floats() const {
        return static_cast<uint64_t>(std::max(conv_kernel - 1, 0)) * delta_conv_channels();
    }
    bool is_moe_layer(int layer) const {
        return layer >= 0 && layer < layers && static_cast<size_t>(layer) < moe_layer.size() && moe_layer[layer] != 0;
    }
    bool has_moe() const { return moe_layer_count() > 0; }
    int moe_layer_count() const;
    int dense_layer_count() const { return layers - moe_layer_count(); }
    // The layer's place among the MoE layers (0 for the first), -1 for a dense layer.
    int moe_ordinal(int layer) const;
    int kda_layer_count() const;
    int gdn_layer_count() const;
    int mla_layer_count() const;
    int gqa_layer_count() const;
    bool is_eos(int64_t token) const { return std::find(eos_ids.begin(), eos_ids.end(), token) != eos_ids.end(); }
    bool is_sliding(int layer) const {
        return sliding_window > 0 && layer >= 0 && static_cast<size_t>(layer) < sliding_layer.size() &&
               sliding_layer[layer] != 0;
    }
};


// Throws waste::Error(WASTE_ERR_FORMAT) naming the key and value of the first
// rule broken. `where` prefixes messages ("manifest: config").
ModelConfig parse_model_config(const nlohmann::json& config, const std::string& where = "config");

// The special ids a config.json or generation_config.json names:
// bos_token_id, eos_token_id and pad_token_id, each absent, null, one id or a
// list of ids (Hugging Face allows both; GLM-4.5's config.json lists three
// EOS ids, Qwen3's generation_config.json two). BOS and EOS ids must be below
// vocab (a single id may be -1, "none"); pad is checked for its shape only
// (the engine never pads). At most max_special_ids in a list.
inline constexpr size_t max_special_ids = 256;
inline constexpr uint64_t max_generation_config_bytes = uint64_t{1} << 20;  // the releases' are < 1 KB
struct SpecialIds {
    std::vector<int32_t> bos, eos, pad;
};
SpecialIds parse_special_ids(const nlohmann::json& object, const std::string& where, int64_t vocab);

// The sampling a release recommends, from its generation_config.json: the
// fields it names of temperature, top_k, top_p and min_p (absent or null:
// not named). do_sample false means greedy (temperature 0) whatever else it
// says, as in transformers. Other fields (repetition_penalty, typical_p, …)
// have no counterpart in the engine's sampler and are not read. A named
// field out of the sampler's range (temperature 0–100, top_k an integer
// 0–2^30, top_p in (0, 1], min_p in [0, 1]) or of the wrong type throws
// naming it and its value.
struct SamplingDefaults {
    std::optional<double> temperature, top_p, min_p;
    std::optional<uint32_t> top_k;
};
SamplingDefaults parse_sampling_defaults(const nlohmann::json& generation_config, const std::string& where);

// Adds EOS ids to config.eos_ids (those not there yet, in order); the first
// becomes config.eos when it had none.
void add_eos_ids(ModelConfig* config, const std::vector<int32_t>& ids);

}  // namespace waste::format
