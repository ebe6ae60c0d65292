#include "synth/synth_config.h"
#include "synth/synth_tokenizer.h"

#include <algorithm>

#include "format/container_writer.h"
#include "platform/error.h"
#include "synth/synth_keys.h"
#include "synth/synth_vision.h"

namespace waste::synth {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Which 1-based layers are MLA (the rest are KDA).
enum class MlaPattern {
    third_of_four,           // 3, 7, 11, ...: the upstream tiny fixtures (KDA 1, 2, 4; MLA 3)
    every_fourth_and_last,   // 4, 8, ..., and the last: Kimi-Linear-48B (…, 24, 27) and K3 (…, 92, 93)
    none,                    // no linear_attn_config: every layer is MLA (DeepSeek)
};

struct PresetDefinition {
    const char* name;
    const char* summary;
    const char* arch;
    const char* tensor_prefix;
    int special_slots;       // Kimi reserves 256 ids after the ranks; the tiny presets keep only the named ones
    MlaPattern pattern;
    bool k3_like;
    ordered_json (*config)();
};

// The numbers that differ between presets.
struct Dimensions {
    int hidden, layers, intermediate, moe_intermediate, experts, top_k, shared_experts;
    double routed_scaling;
    int heads, qk_nope, qk_rope, v_head, kv_lora, vocab, kda_heads, kda_head_dim;
    // K3 only
    int latent = 0, q_lora = 0, attn_res_block = 0;
    // GQA (Qwen3) only
    int kv_heads = 0, head_dim = 0;
    // Qwen3.5 only: GDN's value heads (kda_heads, kda_head_dim: its key heads and head dim), the shared expert's width
    int kda_v_heads = 0, shared_intermediate = 0;
};

// The config.json keys both Kimi families share.
ordered_json kimi_config(const char* model_type, const char* architecture, const Dimensions& d) {
    return ordered_json{
        {"model_type", model_type},
        {"architectures", {architecture}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"first_k_dense_replace", 1},
        {"intermediate_size", d.intermediate},
        {"moe_intermediate_size", d.moe_intermediate},
        {"num_experts", d.experts},
        {"num_experts_per_token", d.top_k},
        {"num_shared_experts", d.shared_experts},
        {"moe_renormalize", true},
        {"moe_router_activation_func", "sigmoid"},
        {"routed_scaling_factor", d.routed_scaling},
        {"num_attention_heads", d.heads},
        {"qk_nope_head_dim", d.qk_nope},
        {"qk_rope_head_dim", d.qk_rope},
        {"v_head_dim", d.v_head},
        {"kv_lora_rank", d.kv_lora},
        {"mla_use_nope", true},
        {"rms_norm_eps", 1e-5},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
        {"linear_attn_config",
         {{"head_dim", d.kda_head_dim},
          {"num_heads", d.kda_heads},
          {"short_conv_kernel_size", 4},
          {"kda_layers", json::array()},  // derived from num_hidden_layers
          {"full_attn_layers", json::array()}}},
    };
}

ordered_json kimi_linear_config(const Dimensions& d) {
    ordered_json c = kimi_config("kimi_linear", "KimiLinearForCausalLM", d);
    c["q_lora_rank"] = nullptr;
    return c;
}

// Every K3 text feature (models.md §3, §6, §8) on top of the shared keys.
ordered_json k3_config(const Dimensions& d) {
    ordered_json c = kimi_config("kimi_k3", "KimiK3ForCausalLM", d);
    c["n_group"] = 1;
    c["topk_group"] = 1;
    c["routed_expert_hidden_size"] = d.latent;
    c["latent_moe_use_norm"] = true;
    c["q_lora_rank"] = d.q_lora;
    c["mla_use_output_gate"] = true;
    c["hidden_act"] = "situ";
    c["activation_situ_beta"] = 4.0;
    c["activation_situ_linear_beta"] = 25.0;
    c["attn_res_block_size"] = d.attn_res_block;
    c["linear_attn_config"]["gate_lower_bound"] = -5.0;
    c["linear_attn_config"]["use_full_rank_gate"] = true;
    // K3 is a multimodal release: its text config is flattened here and the
    // outer wrapper kept under _outer (container-v0 §2).
    c["_outer"] = {{"architectures", {"KimiK3ForConditionalGeneration"}},
                   {"model_type", "kimi_k3"},
                   {"media_placeholder_token_id", 0}};  // derived: <|media_pad|>
    return c;
}

// DeepSeek-V3's config.json (other-families.md §1) at the given size: MLA
// with q-LoRA and YaRN RoPE on every layer, sigmoid router with groups,
// one leading dense layer. The MoE keys are DeepSeek's own names
// (n_routed_experts, num_experts_per_tok, ...), as in the release.
ordered_json deepseek_config(const Dimensions& d, int groups, int top_groups) {
    return ordered_json{
        {"model_type", "deepseek_v3"},
        {"architectures", {"DeepseekV3ForCausalLM"}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"first_k_dense_replace", 1},
        {"intermediate_size", d.intermediate},
        {"moe_intermediate_size", d.moe_intermediate},
        {"n_routed_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"n_shared_experts", d.shared_experts},
        {"norm_topk_prob", true},
        {"scoring_func", "sigmoid"},
        {"topk_method", "noaux_tc"},
        {"n_group", groups},
        {"topk_group", top_groups},
        {"routed_scaling_factor", d.routed_scaling},
        {"num_attention_heads", d.heads},
        {"q_lora_rank", d.q_lora},
        {"kv_lora_rank", d.kv_lora},
        {"qk_nope_head_dim", d.qk_nope},
        {"qk_rope_head_dim", d.qk_rope},
        {"v_head_dim", d.v_head},
        {"rope_theta", 10000.0},
        {"rope_interleave", true},
        {"rope_scaling",
         {{"type", "yarn"},
          {"factor", 40.0},
          {"original_max_position_embeddings", 4096},
          {"beta_fast", 32},
          {"beta_slow", 1},
          {"mscale", 1.0},
          {"mscale_all_dim", 1.0}}},
        {"max_position_embeddings", 163840},
        {"rms_norm_eps", 1e-6},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
    };
}

// Mistral 4's text_config (families-2026.md §6.2) at the given size:
// DeepSeek-V3's MLA (q-LoRA, interleaved YaRN RoPE of factor 128 with mscale
// = mscale_all_dim = 1) on every layer, every layer MoE with a softmax
// router (top-k, renormalised, no scaling) and one shared expert, HF v5's
// rope_parameters with the query temperature's beta 0.1 over
// `original_context` (the release's 8192).
ordered_json mistral4_config(const Dimensions& d, int original_context) {
    ordered_json c = deepseek_config(d, 1, 1);
    for (const char* key : {"scoring_func", "topk_method", "rope_theta", "rope_scaling"}) c.erase(key);
    c["model_type"] = "mistral4";
    c["architectures"] = {"Mistral4ForCausalLM"};
    c["first_k_dense_replace"] = 0;
    c["rope_parameters"] = {{"rope_type", "yarn"},
                            {"rope_theta", 10000.0},
                            {"factor", 128.0},
                            {"original_max_position_embeddings", original_context},
                            {"beta_fast", 32.0},
                            {"beta_slow", 1.0},
                            {"mscale", 1.0},
                            {"mscale_all_dim", 1.0},
                            {"llama_4_scaling_beta", 0.1}};
    c["max_position_embeddings"] = 128 * original_context;
    return c;
}

// Qwen3-MoE's config.json (other-families.md §4) at the given size: GQA with
// per-head q/k norms and NEOX RoPE on every layer, every layer MoE
// (decoder_sparse_step 1, no mlp_only_layers), softmax top-k router with
// renormalisation, no shared expert.
ordered_json qwen3_config(const Dimensions& d) {
    return ordered_json{
        {"model_type", "qwen3_moe"},
        {"architectures", {"Qwen3MoeForCausalLM"}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"intermediate_size", d.intermediate},
        {"moe_intermediate_size", d.moe_intermediate},
        {"num_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"norm_topk_prob", true},
        {"decoder_sparse_step", 1},
        {"mlp_only_layers", json::array()},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"attention_bias", false},
        {"rope_theta", 1000000.0},
        {"rope_scaling", nullptr},
        {"max_position_embeddings", 40960},
        {"rms_norm_eps", 1e-6},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
    };
}

// Qwen3.5-MoE's text config (families-2026.md §1.2; HF Qwen3_5MoeTextConfig):
// Gated DeltaNet on three layers of four and gated full attention on the
// fourth, NEOX RoPE on a quarter of each head (theta 1e7, in
// rope_parameters), every layer MoE with the softmax router and one gated
// shared expert, zero-centred norms.
ordered_json qwen35_config(const Dimensions& d) {
    return ordered_json{
        {"model_type", "qwen3_5_moe_text"},
        {"architectures", {"Qwen3_5MoeForCausalLM"}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"moe_intermediate_size", d.moe_intermediate},
        {"shared_expert_intermediate_size", d.shared_intermediate},
        {"num_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"attn_output_gate", true},
        {"attention_bias", false},
        {"linear_num_key_heads", d.kda_heads},
        {"linear_num_value_heads", d.kda_v_heads},
        {"linear_key_head_dim", d.kda_head_dim},
        {"linear_value_head_dim", d.kda_head_dim},
        {"linear_conv_kernel_dim", 4},
        {"full_attention_interval", 4},
        {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000000.0}, {"partial_rotary_factor", 0.25},
                             {"mrope_section", {11, 11, 10}}, {"mrope_interleaved", true}}},
        {"max_position_embeddings", 262144},
        {"rms_norm_eps", 1e-6},
        {"hidden_act", "silu"},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
    };
}

// GLM-4.5's config.json (other-families.md §7; Air's choices): GQA with q/k/v
// biases and NEOX RoPE on half of each head, no q/k norm, DeepSeek's sigmoid
// router (one group) with one shared expert, a leading dense layer.
ordered_json glm4_config(const Dimensions& d) {
    return ordered_json{
        {"model_type", "glm4_moe"},
        {"architectures", {"Glm4MoeForCausalLM"}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"first_k_dense_replace", 1},
        {"intermediate_size", d.intermediate},
        {"moe_intermediate_size", d.moe_intermediate},
        {"n_routed_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"n_shared_experts", d.shared_experts},
        {"norm_topk_prob", true},
        {"n_group", 1},
        {"topk_group", 1},
        {"routed_scaling_factor", d.routed_scaling},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"attention_bias", true},
        {"use_qk_norm", false},
        {"partial_rotary_factor", 0.5},
        {"rope_theta", 1000000.0},
        {"max_position_embeddings", 131072},
        {"rms_norm_eps", 1e-5},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
    };
}

// gpt-oss's config.json (other-families.md §8): GQA with biases and sinks,
// sliding (even) and full (odd) layers, YaRN RoPE over the whole head
// (truncate false), every layer MoE with the clamped SwiGLU and expert
// biases, the router's top-k then softmax. `window` is the sliding window.
ordered_json gpt_oss_config(const Dimensions& d, int window) {
    json types = json::array();
    for (int i = 0; i < d.layers; ++i) types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
    return ordered_json{
        {"model_type", "gpt_oss"},
        {"architectures", {"GptOssForCausalLM"}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"intermediate_size", d.moe_intermediate},  // gpt-oss: the expert width
        {"num_local_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"experts_per_token", d.top_k},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"attention_bias", true},
        {"sliding_window", window},
        {"layer_types", types},
        {"swiglu_limit", 7.0},
        {"rope_theta", 150000.0},
        {"rope_scaling",
         {{"rope_type", "yarn"},
          {"factor", 32.0},
          {"original_max_position_embeddings", 4096},
          {"beta_fast", 32.0},
          {"beta_slow", 1.0},
          {"truncate", false}}},
        {"max_position_embeddings", 131072},
        {"rms_norm_eps", 1e-5},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
    };
}

// MiniMax-M2's config.json (families-2026.md §3) at the given size: GQA with
// q/k norms over the whole projections and NEOX RoPE on the first `rotary`
// dims of each head, every layer MoE (block_sparse_moe, experts of width
// intermediate_size) with the sigmoid router and its correction bias,
// renormalised, no shared expert, no scaling.
ordered_json minimax_m2_config(const Dimensions& d, int rotary) {
    return ordered_json{
        {"model_type", "minimax_m2"},
        {"architectures", {"MiniMaxM2ForCausalLM"}},
        {"hidden_size", d.hidden},
        {"num_hidden_layers", d.layers},
        {"intermediate_size", d.moe_intermediate},  // MiniMax-M2: the expert width
        {"num_local_experts", d.experts},
        {"num_experts_per_tok", d.top_k},
        {"scoring_func", "sigmoid"},
        {"use_routing_bias", true},
        {"num_attention_heads", d.heads},
        {"num_key_value_heads", d.kv_heads},
        {"head_dim", d.head_dim},
        {"rotary_dim", rotary},
        {"use_qk_norm", true},
        {"qk_norm_type", "per_layer"},
        {"rope_theta", 5000000.0},
        {"max_position_embeddings", 196608},
        {"rms_norm_eps", 1e-6},
        {"hidden_act", "silu"},
        {"vocab_size", d.vocab},
        {"tie_word_embeddings", false},
        {"bos_token_id", 0},  // derived from the tokenizer
        {"eos_token_id", 0},
    };
}

// gpt-oss-20b and -120b share their layer (other-families.md §8): hidden
// 2880, 64 query over 8 key/value heads of 64, window 128, experts of width
// 2880 top-4, vocab 201088.
ordered_json gpt_oss_release(int layers, int experts) {
    return gpt_oss_config({.hidden = 2880, .layers = layers, .intermediate = 0, .moe_intermediate = 2880,
                           .experts = experts, .top_k = 4, .shared_experts = 0, .routed_scaling = 1.0, .heads = 64,
                           .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 201088, .kda_heads = 0,
                           .kda_head_dim = 0, .kv_heads = 8, .head_dim = 64},
                          128);
}

const PresetDefinition preset_definitions[] = {
    {"tiny", "Kimi-Linear-like, ~1 MB: hidden 128, 4 layers (KDA 1,2,4; MLA 3), 8 experts top-2, vocab 316 with a tokenizer",
     "kimi_linear", "", 10, MlaPattern::third_of_four, false,
     [] {
         return kimi_linear_config({.hidden = 128, .layers = 4, .intermediate = 256, .moe_intermediate = 64,
                                    .experts = 8, .top_k = 2, .shared_experts = 1, .routed_scaling = 2.0, .heads = 4,
                                    .qk_nope = 16, .qk_rope = 8, .v_head = 16, .kv_lora = 32, .vocab = 316,
                                    .kda_heads = 4, .kda_head_dim = 32});
     }},
    {"tiny-k3",
     "every K3 text feature, ~1 MB: language_model. prefix, latent MoE, AttnRes, SiTU, q_lora + gated MLA, "
     "full-rank KDA gate, bounded decay, 2 shared experts, 16 experts top-4",
     "kimi_k3", "language_model.", 10, MlaPattern::third_of_four, true,
     [] {
         // routed_scaling 1.5, not K3's 1.0: a reader that ignores the factor must show it here.
         return k3_config({.hidden = 128, .layers = 4, .intermediate = 256, .moe_intermediate = 64, .experts = 16,
                           .top_k = 4, .shared_experts = 2, .routed_scaling = 1.5, .heads = 4, .qk_nope = 16,
                           .qk_rope = 8, .v_head = 16, .kv_lora = 32, .vocab = 316, .kda_heads = 4,
                           .kda_head_dim = 32, .latent = 64, .q_lora = 48, .attn_res_block = 2});
     }},
    {"mid", "the benchmark shape, ~0.5 GB: hidden 1024, 12 layers (MLA 4,8,12), 64 experts top-8, vocab 32768",
     "kimi_linear", "", 256, MlaPattern::every_fourth_and_last, false,
     [] {
         return kimi_linear_config({.hidden = 1024, .layers = 12, .intermediate = 2048, .moe_intermediate = 512,
                                    .experts = 64, .top_k = 8, .shared_experts = 1, .routed_scaling = 2.0, .heads = 8,
                                    .qk_nope = 64, .qk_rope = 32, .v_head = 64, .kv_lora = 128, .vocab = 32768,
                                    .kda_heads = 8, .kda_head_dim = 128});
     }},
    {"tiny-deepseek",
     "DeepSeek-V3-like, ~1 MB: hidden 128, 4 layers of MLA with q-LoRA and YaRN RoPE, 16 experts in 4 groups "
     "(2 kept) top-4, 1 shared, vocab 316 with a tokenizer",
     "deepseek_v3", "", 10, MlaPattern::none, false,
     [] {
         return deepseek_config({.hidden = 128, .layers = 4, .intermediate = 256, .moe_intermediate = 64,
                                 .experts = 16, .top_k = 4, .shared_experts = 1, .routed_scaling = 2.5, .heads = 4,
                                 .qk_nope = 16, .qk_rope = 8, .v_head = 16, .kv_lora = 32, .vocab = 316,
                                 .kda_heads = 0, .kda_head_dim = 0, .q_lora = 48},
                                4, 2);
     }},
    {"mid-deepseek",
     "the DeepSeek-V3 benchmark shape, ~0.5 GB: hidden 1024, 12 layers of MLA (q-LoRA, YaRN RoPE), 64 experts "
     "in 8 groups (4 kept) top-8, vocab 32768",
     "deepseek_v3", "", 256, MlaPattern::none, false,
     [] {
         return deepseek_config({.hidden = 1024, .layers = 12, .intermediate = 2048, .moe_intermediate = 512,
                                 .experts = 64, .top_k = 8, .shared_experts = 1, .routed_scaling = 2.5, .heads = 8,
                                 .qk_nope = 64, .qk_rope = 32, .v_head = 64, .kv_lora = 128, .vocab = 32768,
                                 .kda_heads = 0, .kda_head_dim = 0, .q_lora = 256},
                                8, 4);
     }},
    {"tiny-qwen3",
     "Qwen3-MoE-like, ~1 MB: hidden 128, 4 layers of GQA (4 query heads over 2 key/value heads of 32, q/k norms, "
     "NEOX RoPE), 16 experts top-4 (softmax, renormalised), vocab 316 with a tokenizer",
     "qwen3_moe", "", 10, MlaPattern::none, false,
     [] {
         return qwen3_config({.hidden = 128, .layers = 4, .intermediate = 256, .moe_intermediate = 64, .experts = 16,
                              .top_k = 4, .shared_experts = 0, .routed_scaling = 1.0, .heads = 4, .qk_nope = 0,
                              .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 316, .kda_heads = 0,
                              .kda_head_dim = 0, .kv_heads = 2, .head_dim = 32});
     }},
    {"mid-qwen3",
     "the Qwen3-MoE benchmark shape, ~0.5 GB: hidden 1024, 12 layers of GQA (16 query heads over 4 key/value heads "
     "of 64), 64 experts top-8, vocab 32768",
     "qwen3_moe", "", 256, MlaPattern::none, false,
     [] {
         return qwen3_config({.hidden = 1024, .layers = 12, .intermediate = 2048, .moe_intermediate = 512,
                              .experts = 64, .top_k = 8, .shared_experts = 0, .routed_scaling = 1.0, .heads = 16,
                              .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 32768, .kda_heads = 0,
                              .kda_head_dim = 0, .kv_heads = 4, .head_dim = 64});
     }},
    {"tiny-qwen35",
     "Qwen3.5-MoE-like, ~1 MB: hidden 128, 4 layers (3 Gated DeltaNet of 2 key / 4 value heads of 32, then gated "
     "GQA of 4 query over 2 key/value heads of 32 with RoPE on 8 dims), 16 experts top-4 and a gated shared expert, "
     "vocab 316 with a tokenizer",
     "qwen3_5_moe", "", 10, MlaPattern::none, false,
     [] {
         return qwen35_config({.hidden = 128, .layers = 4, .intermediate = 0, .moe_intermediate = 64, .experts = 16,
                               .top_k = 4, .shared_experts = 1, .routed_scaling = 1.0, .heads = 4, .qk_nope = 0,
                               .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 316, .kda_heads = 2,
                               .kda_head_dim = 32, .kv_heads = 2, .head_dim = 32, .kda_v_heads = 4,
                               .shared_intermediate = 64});
     }},
    {"mid-qwen35",
     "the Qwen3.5-MoE benchmark shape, ~0.5 GB: hidden 1024, 12 layers (9 Gated DeltaNet of 8 key / 16 value heads "
     "of 64, 3 gated GQA of 8 query over 2 key/value heads of 128), 64 experts top-8 and a shared one, vocab 32768",
     "qwen3_5_moe", "", 256, MlaPattern::none, false,
     [] {
         return qwen35_config({.hidden = 1024, .layers = 12, .intermediate = 0, .moe_intermediate = 512,
                               .experts = 64, .top_k = 8, .shared_experts = 1, .routed_scaling = 1.0, .heads = 8,
                               .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 32768,
                               .kda_heads = 8, .kda_head_dim = 64, .kv_heads = 2, .head_dim = 128,
                               .kda_v_heads = 16, .shared_intermediate = 512});
     }},
    {"tiny-glm",
     "GLM-4.5-like, ~1 MB: hidden 128, 4 layers of GQA (4 query over 2 key/value heads of 32, q/k/v biases, RoPE on "
     "half of each head), 16 experts top-4 with 1 shared, a dense first layer, vocab 316 with a tokenizer",
     "glm4_moe", "", 10, MlaPattern::none, false,
     [] {
         return glm4_config({.hidden = 128, .layers = 4, .intermediate = 256, .moe_intermediate = 64, .experts = 16,
                             .top_k = 4, .shared_experts = 1, .routed_scaling = 1.0, .heads = 4, .qk_nope = 0,
                             .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 316, .kda_heads = 0, .kda_head_dim = 0,
                             .kv_heads = 2, .head_dim = 32});
     }},
    {"mid-glm",
     "the GLM-4.5 benchmark shape, ~0.5 GB: hidden 1024, 12 layers of GQA (16 query over 4 key/value heads of 64), "
     "64 experts top-8 with 1 shared, vocab 32768",
     "glm4_moe", "", 256, MlaPattern::none, false,
     [] {
         return glm4_config({.hidden = 1024, .layers = 12, .intermediate = 2048, .moe_intermediate = 512, .experts = 64,
                             .top_k = 8, .shared_experts = 1, .routed_scaling = 1.0, .heads = 16, .qk_nope = 0,
                             .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 32768, .kda_heads = 0,
                             .kda_head_dim = 0, .kv_heads = 4, .head_dim = 64});
     }},
    {"tiny-gpt-oss",
     "gpt-oss-like, ~1 MB: hidden 128, 4 layers of GQA with biases and sinks (sliding window 8 on even layers), "
     "16 experts top-4 with the clamped SwiGLU and expert biases, vocab 316 with a tokenizer",
     "gpt_oss", "", 10, MlaPattern::none, false,
     [] {
         return gpt_oss_config({.hidden = 128, .layers = 4, .intermediate = 0, .moe_intermediate = 64, .experts = 16,
                                .top_k = 4, .shared_experts = 0, .routed_scaling = 1.0, .heads = 4, .qk_nope = 0,
                                .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 316, .kda_heads = 0,
                                .kda_head_dim = 0, .kv_heads = 2, .head_dim = 32},
                               8);
     }},
    {"mid-gpt-oss",
     "the gpt-oss benchmark shape, ~0.5 GB: hidden 1024, 12 layers of GQA (16 query over 4 key/value heads of 64, "
     "sliding window 128 on even layers), 64 experts top-8, vocab 32768",
     "gpt_oss", "", 256, MlaPattern::none, false,
     [] {
         return gpt_oss_config({.hidden = 1024, .layers = 12, .intermediate = 0, .moe_intermediate = 512,
                                .experts = 64, .top_k = 8, .shared_experts = 0, .routed_scaling = 1.0, .heads = 16,
                                .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 32768,
                                .kda_heads = 0, .kda_head_dim = 0, .kv_heads = 4, .head_dim = 64},
                               128);
     }},
    {"tiny-minimax",
     "MiniMax-M2-like, ~1 MB: hidden 128, 4 layers of GQA (4 query over 2 key/value heads of 32, q/k norms over "
     "the whole projections, NEOX RoPE on 16 of 32 dims), 16 experts top-4 (sigmoid with correction bias, "
     "renormalised), vocab 316 with a tokenizer",
     "minimax_m2", "", 10, MlaPattern::none, false,
     [] {
         return minimax_m2_config({.hidden = 128, .layers = 4, .intermediate = 0, .moe_intermediate = 64,
                                   .experts = 16, .top_k = 4, .shared_experts = 0, .routed_scaling = 1.0, .heads = 4,
                                   .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 316,
                                   .kda_heads = 0, .kda_head_dim = 0, .kv_heads = 2, .head_dim = 32},
                                  16);
     }},
    {"mid-minimax",
     "the MiniMax-M2 benchmark shape, ~0.5 GB: hidden 1024, 12 layers of GQA (16 query over 4 key/value heads of "
     "64, RoPE on 32), 64 experts top-8, vocab 32768",
     "minimax_m2", "", 256, MlaPattern::none, false,
     [] {
         return minimax_m2_config({.hidden = 1024, .layers = 12, .intermediate = 0, .moe_intermediate = 512,
                                   .experts = 64, .top_k = 8, .shared_experts = 0, .routed_scaling = 1.0,
                                   .heads = 16, .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0,
                                   .vocab = 32768, .kda_heads = 0, .kda_head_dim = 0, .kv_heads = 4, .head_dim = 64},
                                  32);
     }},
    {"tiny-mistral4",
     "Mistral-4-like, ~1 MB: hidden 128, 4 layers of MLA with q-LoRA, YaRN RoPE and the query temperature (from "
     "position 8192, as released), 16 experts top-4 (softmax, renormalised) with 1 shared, vocab 316 with a tokenizer",
     "mistral4", "", 10, MlaPattern::none, false,
     [] {
         return mistral4_config({.hidden = 128, .layers = 4, .intermediate = 0, .moe_intermediate = 64,
                                 .experts = 16, .top_k = 4, .shared_experts = 1, .routed_scaling = 1.0, .heads = 4,
                                 .qk_nope = 16, .qk_rope = 8, .v_head = 16, .kv_lora = 32, .vocab = 316,
                                 .kda_heads = 0, .kda_head_dim = 0, .q_lora = 48},
                                8192);
     }},
    {"mid-mistral4",
     "the Mistral 4 benchmark shape, ~0.5 GB: hidden 1024, 12 layers of MLA (q-LoRA, YaRN RoPE), 64 experts "
     "top-8 (softmax) with 1 shared, vocab 32768",
     "mistral4", "", 256, MlaPattern::none, false,
     [] {
         return mistral4_config({.hidden = 1024, .layers = 12, .intermediate = 0, .moe_intermediate = 512,
                                 .experts = 64, .top_k = 8, .shared_experts = 1, .routed_scaling = 1.0, .heads = 8,
                                 .qk_nope = 64, .qk_rope = 32, .v_head = 64, .kv_lora = 128, .vocab = 32768,
                                 .kda_heads = 0, .kda_head_dim = 0, .q_lora = 256},
                                8192);
     }},
    // The releases' own shapes (other-families.md §§1, 3, 4, 7, 8), random    // The releases' own shapes (other-families.md §§1, 3, 4, 7, 8), random
    // weights: streaming at the sizes users run. Shrink a slice with
    // num_hidden_layers; `waste synth --list` prints each container's size.
    {"qwen3-30b-a3b",
     "Qwen3-30B-A3B's dimensions: hidden 2048, 48 layers of GQA (32 query over 4 key/value heads of 128), "
     "128 experts top-8 of width 768, vocab 151936",
     "qwen3_moe", "", 256, MlaPattern::none, false,
     [] {
         return qwen3_config({.hidden = 2048, .layers = 48, .intermediate = 6144, .moe_intermediate = 768,
                              .experts = 128, .top_k = 8, .shared_experts = 0, .routed_scaling = 1.0, .heads = 32,
                              .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 151936, .kda_heads = 0,
                              .kda_head_dim = 0, .kv_heads = 4, .head_dim = 128});
     }},
    {"gpt-oss-20b",
     "gpt-oss-20b's dimensions: hidden 2880, 24 layers of GQA (64 query over 8 key/value heads of 64, sliding "
     "window 128 on even layers), 32 experts top-4 of width 2880, vocab 201088",
     "gpt_oss", "", 256, MlaPattern::none, false,
     [] { return gpt_oss_release(24, 32); }},
    {"gpt-oss-120b",
     "gpt-oss-120b's dimensions: gpt-oss-20b's layer on 36 layers with 128 experts top-4",
     "gpt_oss", "", 256, MlaPattern::none, false,
     [] { return gpt_oss_release(36, 128); }},
    {"glm-4.5-air",
     "GLM-4.5-Air's dimensions: hidden 4096, 46 layers of GQA (96 query over 8 key/value heads of 128, RoPE on "
     "half), a dense first layer (10944), 128 experts top-8 of width 1408 with 1 shared, vocab 151552",
     "glm4_moe", "", 256, MlaPattern::none, false,
     [] {
         return glm4_config({.hidden = 4096, .layers = 46, .intermediate = 10944, .moe_intermediate = 1408,
                             .experts = 128, .top_k = 8, .shared_experts = 1, .routed_scaling = 1.0, .heads = 96,
                             .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 151552, .kda_heads = 0,
                             .kda_head_dim = 0, .kv_heads = 8, .head_dim = 128});
     }},
    {"deepseek-v3",
     "DeepSeek-V3's dimensions: hidden 7168, 61 layers of MLA (128 heads, q-LoRA 1536, KV-LoRA 512), 3 dense "
     "first layers (18432), 256 experts in 8 groups (4 kept) top-8 of width 2048 with 1 shared, vocab 129280; "
     "a slice with num_hidden_layers",
     "deepseek_v3", "", 256, MlaPattern::none, false,
     [] {
         ordered_json c = deepseek_config({.hidden = 7168, .layers = 61, .intermediate = 18432, .moe_intermediate = 2048,
                                           .experts = 256, .top_k = 8, .shared_experts = 1, .routed_scaling = 2.5,
                                           .heads = 128, .qk_nope = 128, .qk_rope = 64, .v_head = 128, .kv_lora = 512,
                                           .vocab = 129280, .kda_heads = 0, .kda_head_dim = 0, .q_lora = 1536},
                                          8, 4);
         c["first_k_dense_replace"] = 3;
         return c;
     }},
    {"minimax-m2",
     "MiniMax-M2's dimensions: hidden 3072, 62 layers of GQA (48 query over 8 key/value heads of 128, RoPE on 64), "
     "256 experts top-8 of width 1536, vocab 200064; a slice with num_hidden_layers",
     "minimax_m2", "", 256, MlaPattern::none, false,
     [] {
         return minimax_m2_config({.hidden = 3072, .layers = 62, .intermediate = 0, .moe_intermediate = 1536,
                                   .experts = 256, .top_k = 8, .shared_experts = 0, .routed_scaling = 1.0,
                                   .heads = 48, .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0,
                                   .vocab = 200064, .kda_heads = 0, .kda_head_dim = 0, .kv_heads = 8,
                                   .head_dim = 128},
                                  64);
     }},
    {"mistral-small-4",
     "Mistral Small 4's dimensions: hidden 4096, 36 layers of MLA (32 heads, q-LoRA 1024, KV-LoRA 256), 128 "
     "experts top-4 of width 2048 with 1 shared, vocab 131072; a slice with num_hidden_layers",
     "mistral4", "", 256, MlaPattern::none, false,
     [] {
         return mistral4_config({.hidden = 4096, .layers = 36, .intermediate = 0, .moe_intermediate = 2048,
                                 .experts = 128, .top_k = 4, .shared_experts = 1, .routed_scaling = 1.0, .heads = 32,
                                 .qk_nope = 64, .qk_rope = 64, .v_head = 128, .kv_lora = 256, .vocab = 131072,
                                 .kda_heads = 0, .kda_head_dim = 0, .q_lora = 1024},
                                8192);
     }},
    {"qwen3.5-35b-a3b",
     "Qwen3.5/3.6-35B-A3B's dimensions: hidden 2048, 40 layers (30 Gated DeltaNet of 16 key / 32 value heads of "
     "128, 10 gated GQA of 16 query over 2 key/value heads of 256), 256 experts top-8 of width 512 and a shared "
     "one of 512, vocab 248320",
     "qwen3_5_moe", "", 256, MlaPattern::none, false,
     [] {
         return qwen35_config({.hidden = 2048, .layers = 40, .intermediate = 0, .moe_intermediate = 512,
                               .experts = 256, .top_k = 8, .shared_experts = 1, .routed_scaling = 1.0, .heads = 16,
                               .qk_nope = 0, .qk_rope = 0, .v_head = 0, .kv_lora = 0, .vocab = 248320,
                               .kda_heads = 16, .kda_head_dim = 128, .kv_heads = 2, .head_dim = 256,
                               .kda_v_heads = 32, .shared_intermediate = 512});
     }},
    {"kimi-linear-48b",
     "Kimi-Linear-48B-A3B's dimensions: hidden 2304, 27 layers (MLA 4,8,...,24,27, KDA the rest; 32 heads of "
     "128), a dense first layer (9216), 256 experts top-8 of width 1024 with 1 shared, vocab 163840",
     "kimi_linear", "", 256, MlaPattern::every_fourth_and_last, false,
     [] {
         return kimi_linear_config({.hidden = 2304, .layers = 27, .intermediate = 9216, .moe_intermediate = 1024,
                                    .experts = 256, .top_k = 8, .shared_experts = 1, .routed_scaling = 2.446,
                                    .heads = 32, .qk_nope = 128, .qk_rope = 64, .v_head = 128, .kv_lora = 512,
                                    .vocab = 163840, .kda_heads = 32, .kda_head_dim = 128});
     }},
    {"k3",
     "Kimi K3's real dimensions (~1 TB): hidden 7168, 93 layers, 896 experts top-16, latent 3584; shrink with "
     "overrides, e.g. num_hidden_layers",
     "kimi_k3", "language_model.", 256, MlaPattern::every_fourth_and_last, true,
     [] {
         // models.md §8; the dense layer's intermediate_size is not stated there:
         // 18432 (DeepSeek-V3/K2's) puts the resident trunk at 27.1 GiB, near upstream's 27.28 GB.
         return k3_config({.hidden = 7168, .layers = 93, .intermediate = 18432, .moe_intermediate = 3072,
                           .experts = 896, .top_k = 16, .shared_experts = 2, .routed_scaling = 1.0, .heads = 96,
                           .qk_nope = 128, .qk_rope = 64, .v_head = 128, .kv_lora = 512, .vocab = 163840,
                           .kda_heads = 96, .kda_head_dim = 128, .latent = 3584, .q_lora = 1536,
                           .attn_res_block = 12});
     }},
};

const PresetDefinition& find_preset(const std::string& name) {
    for (const PresetDefinition& preset : preset_definitions)
        if (name == preset.name) return preset;
    std::string known;
    for (const PresetDefinition& preset : preset_definitions) known += std::string(known.empty() ? "" : ", ") + preset.name;
    fail(WASTE_ERR_INVALID_ARGUMENT, "synth: unknown preset \"{}\" (presets: {})", name, known);
}

bool has_key(const json& object, const char* key) { return object.is_object() && object.contains(key); }

bool has_nested_key(const json& object, const char* outer, const char* key) {
    return has_key(object, outer) && has_key(object[outer], key);
}

// An integer config value, if it is one (otherwise the reader's parse names it).
std::optional<int64_t> integer_at(const ordered_json& config, const char* key) {
    auto it = config.find(key);
    if (it == config.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
}

void derive_layer_lists(ordered_json& config, MlaPattern pattern, int64_t layers) {
    json kda = json::array(), mla = json::array();
    for (int64_t layer = 1; layer <= layers; ++layer) {
        const bool is_mla = pattern == MlaPattern::third_of_four ? layer % 4 == 3 : layer % 4 == 0 || layer == layers;
        (is_mla ? mla : kda).push_back(layer);
    }
    config["linear_attn_config"]["kda_layers"] = kda;
    config["linear_attn_config"]["full_attn_layers"] = mla;
}


// The special ids in the shapes the releases write them (issue 37), on the
// synthetic specials ([BOS] = ranks, [EOS] + 1, <|end_of_msg|> + 2, <|close|>
// + 4): GLM-4.5's config.json lists three EOS ids (its <|endoftext|>,
// <|user|>, <|observation|>); Qwen3's generation_config.json lists two
// (<|im_end|>, then <|endoftext|>, which is also its BOS) beside the
// config's one, with a pad id and sampling defaults. An override of
// eos_token_id keeps the config's and writes no generation config.
void release_special_ids(ordered_json& config, const json& patch, int64_t ranks, ResolvedPreset* r) {
    if (has_key(patch, "eos_token_id")) return;
    const std::string model_type = config.value("model_type", "");
    if (model_type == "glm4_moe") {
        config["eos_token_id"] = {ranks + 1, ranks + 2, ranks + 4};
        config["pad_token_id"] = ranks + 1;
    } else if (model_type == "qwen3_moe") {
        r->generation_config = ordered_json{{"bos_token_id", ranks},          {"do_sample", true},
                                            {"eos_token_id", {ranks + 2, ranks}}, {"pad_token_id", ranks},
                                            {"temperature", 0.6},            {"top_k", 20},
                                            {"top_p", 0.95}};
    }
}

}  // namespace

const std::vector<Preset>& presets() {
    static const std::vector<Preset> list = [] {
        std::vector<Preset> result;
        for (const PresetDefinition& preset : preset_definitions) result.push_back({preset.name, preset.summary});
        return result;
    }();
    return list;
}

ResolvedPreset resolve_preset(const SynthOptions& options) {
    const PresetDefinition& definition = find_preset(options.preset);
    ResolvedPreset r;
    r.preset = definition.name;
    r.arch = definition.arch;
    r.tensor_prefix = definition.tensor_prefix;
    r.special_slots = definition.special_slots;
    r.k3_like = definition.k3_like;
    std::string quant_name = "VQ3R";

    const json& overrides = options.overrides;
    if (!overrides.is_null() && !overrides.is_object())
        fail(WASTE_ERR_INVALID_ARGUMENT, "synth: overrides must be a JSON object of config keys, got {}", overrides.dump());
    json patch = overrides.is_object() ? overrides : json::object();
    check_override_keys(patch);
    if (patch.contains("tensor_prefix")) {
        if (!patch["tensor_prefix"].is_string())
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: tensor_prefix must be a string, got {}", patch["tensor_prefix"].dump());
        r.tensor_prefix = patch["tensor_prefix"].get<std::string>();
        patch.erase("tensor_prefix");
    }
    if (patch.contains("expert_quant")) {
        if (!patch["expert_quant"].is_string())
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: expert_quant must be \"VQ3R\", \"VQ2R\" or \"VQ4P\", got {}",
                 patch["expert_quant"].dump());
        quant_name = patch["expert_quant"].get<std::string>();
        patch.erase("expert_quant");
    }
    if (patch.contains("trunk_quant")) {
        const json& value = patch["trunk_quant"];
        if (value == "Q8G") r.trunk_quant = format::TrunkFormat::q8g;
        else if (value == "Q4G") r.trunk_quant = format::TrunkFormat::q4g;
        else if (value == "Q3G") r.trunk_quant = format::TrunkFormat::q3g;
        else fail(WASTE_ERR_INVALID_ARGUMENT, "synth: trunk_quant must be \"Q8G\", \"Q4G\" or \"Q3G\", got {}", value.dump());
        patch.erase("trunk_quant");
    }
    if (patch.contains("tokenizer")) {
        if (!patch["tokenizer"].is_boolean())
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: tokenizer must be true or false, got {}", patch["tokenizer"].dump());
        r.tokenizer = patch["tokenizer"].get<bool>();
        patch.erase("tokenizer");
    }
    if (patch.contains("reserved_tokens")) {
        const json& value = patch["reserved_tokens"];
        if (!value.is_number_integer() || value.get<int64_t>() < 0)
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: reserved_tokens must be a non-negative integer, got {}", value.dump());
        if (!r.tokenizer)
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: reserved_tokens {} needs the synthetic tokenizer (tokenizer is false)",
                 value.dump());
        r.reserved_tokens = value.get<int64_t>();
        patch.erase("reserved_tokens");
    }
    std::optional<json> vision_request;
    if (patch.contains("vision")) {
        if (!(patch["vision"].is_boolean() && !patch["vision"].get<bool>())) vision_request = patch["vision"];
        patch.erase("vision");
    }
    r.quant = format::standard_expert_quant(quant_name);

    ordered_json config = definition.config();
    config.merge_patch(ordered_json::parse(patch.dump()));

    // Keep the preset coherent with what was overridden (explicit values win).
    const std::optional<int64_t> layers = integer_at(config, "num_hidden_layers");
    if (layers && *layers >= 1 && *layers <= 4096 && config.contains("linear_attn_config") &&
        !has_nested_key(patch, "linear_attn_config", "kda_layers") &&
        !has_nested_key(patch, "linear_attn_config", "full_attn_layers"))
        derive_layer_lists(config, definition.pattern, *layers);
    // gpt-oss: sliding (even) and full (odd) layers, one type per layer
    if (layers && *layers >= 1 && *layers <= 4096 && config.contains("layer_types") && !has_key(patch, "layer_types")) {
        json types = json::array();
        for (int64_t i = 0; i < *layers; ++i) types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
        config["layer_types"] = types;
    }
    const std::optional<int64_t> block = integer_at(config, "attn_res_block_size");
    if (layers && block && !has_key(patch, "attn_res_block_size"))
        config["attn_res_block_size"] = std::min(*block, *layers);
    // Kimi's key names, or DeepSeek's
    const char* experts_key = config.contains("n_routed_experts") ? "n_routed_experts" : "num_experts";
    const char* top_k_key = config.contains("num_experts_per_tok") ? "num_experts_per_tok" : "num_experts_per_token";
    if (has_key(patch, "num_experts") && config.contains("n_routed_experts")) {
        config["n_routed_experts"] = config["num_experts"];  // one copy of the key, under the preset's name
        config.erase("num_experts");
    }
    if (has_key(patch, "num_experts_per_token") && config.contains("num_experts_per_tok")) {
        config["num_experts_per_tok"] = config["num_experts_per_token"];
        config.erase("num_experts_per_token");
    }
    const std::optional<int64_t> experts = integer_at(config, experts_key);
    const std::optional<int64_t> top_k = integer_at(config, top_k_key);
    if (experts && top_k && *experts >= 1 && !has_key(patch, "num_experts_per_token"))
        config[top_k_key] = std::min(*top_k, *experts);

    const std::optional<int64_t> vocab = integer_at(config, "vocab_size");
    if (r.tokenizer && vocab) {
        const int64_t ranks = *vocab - r.special_slots - r.reserved_tokens;
        if (ranks < 256)
            fail(WASTE_ERR_INVALID_ARGUMENT,
                 "synth: vocab_size {} leaves {} ranks for the synthetic tokenizer, which needs 256 byte tokens, {} "
                 "specials and {} reserved_tokens (set \"tokenizer\": false for no tokenizer)",
                 *vocab, ranks, r.special_slots, r.reserved_tokens);
        // Specials follow the ranks: [BOS], [EOS], <|end_of_msg|>, ... (synth_tokenizer.h)
        if (!has_key(patch, "bos_token_id")) config["bos_token_id"] = ranks;
        if (!has_key(patch, "eos_token_id")) config["eos_token_id"] = ranks + 2;
        release_special_ids(config, patch, ranks, &r);
        if (config.contains("_outer") && config["_outer"].is_object() &&
            !has_nested_key(patch, "_outer", "media_placeholder_token_id"))
            config["_outer"]["media_placeholder_token_id"] = ranks + 8;
    } else {
        // As the upstream fixtures without a tokenizer.
        if (!has_key(patch, "bos_token_id")) config["bos_token_id"] = 1;
        if (!has_key(patch, "eos_token_id")) config["eos_token_id"] = 2;
        if (config.contains("_outer") && config["_outer"].is_object() &&
            !has_nested_key(patch, "_outer", "media_placeholder_token_id"))
            config["_outer"].erase("media_placeholder_token_id");
    }

    try {
        r.model = format::parse_model_config(json::parse(config.dump()), "synth " + r.preset + " config");
    } catch (const Error& error) {
        throw Error(WASTE_ERR_INVALID_ARGUMENT, error.what());
    }
    const format::ModelConfig& m = r.model;
    if (m.has_moe()) {
        if (m.expert_input() % r.quant.vec_dim != 0 || m.moe_intermediate % r.quant.vec_dim != 0)
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: the expert shapes {} and {} must be multiples of vec_dim {}",
                 m.expert_input(), m.moe_intermediate, r.quant.vec_dim);
    }
    if (m.kda_layer_count() > 0 && m.kda_heads < 1)
        fail(WASTE_ERR_INVALID_ARGUMENT, "synth: KDA layers need linear_attn_config.num_heads and head_dim");
    if (m.mla_layer_count() > 0 && (m.qk_nope + m.qk_rope < 1 || m.v_head < 1 || m.kv_lora < 1))
        fail(WASTE_ERR_INVALID_ARGUMENT, "synth: MLA layers need qk_nope/rope_head_dim, v_head_dim and kv_lora_rank");
    const auto& linear = config.find("linear_attn_config");
    r.kda_full_rank_gate = linear != config.end() && linear->is_object() && linear->contains("use_full_rank_gate") &&
                           (*linear)["use_full_rank_gate"].is_boolean() && (*linear)["use_full_rank_gate"].get<bool>();
    r.latent_norm = m.latent > 0 && config.contains("latent_moe_use_norm") && config["latent_moe_use_norm"].is_boolean() &&
                    config["latent_moe_use_norm"].get<bool>();
    if (vision_request) {
        const auto outer = r.config.find("_outer");
        // The synth tokenizer's <|media_pad|>, unless the config names another.
        int64_t placeholder = m.vocab - r.reserved_tokens - r.special_slots + media_pad_special_slot;
        if (outer != r.config.end() && outer->is_object() && outer->contains("media_placeholder_token_id") &&
            (*outer)["media_placeholder_token_id"].is_number_integer())
            placeholder = (*outer)["media_placeholder_token_id"].get<int64_t>();
        if (r.tensor_prefix.empty())
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: vision needs a non-empty tensor_prefix (the tower lives outside it)");
        r.vision = synth_vision_json(*vision_request, m, placeholder);
    }
    r.config = std::move(config);
    return r;
}

nlohmann::json preset_config(const SynthOptions& options) {
    return nlohmann::json::parse(resolve_preset(options).config.dump());
}

}  // namespace waste::synth
