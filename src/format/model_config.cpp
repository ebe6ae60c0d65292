#include "format/model_config.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "format/families.h"
#include "platform/error.h"

namespace waste::format {
namespace {

using nlohmann::json;

// Upper bounds on config numbers. They are far above any released model
// (K3: hidden 7168, 93 layers, 896 experts, vocab 163840) and low enough that
// products of two or three of them cannot overflow 64 bits.
constexpr int64_t max_dimension = 1 << 20;
constexpr int64_t max_layers = 4096;
constexpr int64_t max_experts = 1 << 16;
constexpr int64_t max_vocab = 1 << 24;
constexpr int64_t max_heads = 4096;

struct Reader {
    const json& object;
    std::string where;

    const json* find(std::initializer_list<const char*> keys, std::string* found_key) const {
        for (const char* key : keys) {
            auto it = object.find(key);
            if (it != object.end() && !it->is_null()) {
                *found_key = key;
                return &*it;
            }
        }
        return nullptr;
    }

    int64_t integer(std::initializer_list<const char*> keys, int64_t low, int64_t high,
                    std::optional<int64_t> fallback = std::nullopt) const {
        std::string key;
        const json* value = find(keys, &key);
        if (!value) {
            if (fallback) return *fallback;
            fail_format("{}: required key {} is missing", where, *keys.begin());
        }
        if (!value->is_number_integer())
            fail_format("{}.{}: expected an integer, got {}", where, key, value->dump());
        int64_t number = value->is_number_unsigned()
                             ? static_cast<int64_t>(std::min<uint64_t>(value->get<uint64_t>(), INT64_MAX))
                             : value->get<int64_t>();
        if (number < low || number > high)
            fail_format("{}.{}: {} is out of range [{}, {}]", where, key, number, low, high);
        return number;
    }

    double real(std::initializer_list<const char*> keys, double low, double high, double fallback) const {
        std::string key;
        const json* value = find(keys, &key);
        if (!value) return fallback;
        if (!value->is_number()) fail_format("{}.{}: expected a number, got {}", where, key, value->dump());
        double number = value->get<double>();
        if (!(number >= low && number <= high))
            fail_format("{}.{}: {} is out of range [{}, {}]", where, key, number, low, high);
        return number;
    }

    bool boolean(std::initializer_list<const char*> keys, bool fallback) const {
        std::string key;
        const json* value = find(keys, &key);
        if (!value) return fallback;
        if (!value->is_boolean()) fail_format("{}.{}: expected true or false, got {}", where, key, value->dump());
        return value->get<bool>();
    }

    std::string string(const char* key, const std::string& fallback) const {
        auto it = object.find(key);
        if (it == object.end() || it->is_null()) return fallback;
        if (!it->is_string()) fail_format("{}.{}: expected a string, got {}", where, key, it->dump());
        return it->get<std::string>();
    }
};

std::vector<int> one_based_layer_list(const json& list, const std::string& where, int layers) {
    if (!list.is_array()) fail_format("{}: expected an array of 1-based layer numbers", where);
    std::vector<int> result;
    for (const json& item : list) {
        if (!item.is_number_integer())
            fail_format("{}: expected 1-based layer numbers, got {}", where, item.dump());
        int64_t layer = item.get<int64_t>();
        if (layer < 1 || layer > layers)
            fail_format("{}: layer {} is out of range [1, {}]", where, layer, layers);
        result.push_back(static_cast<int>(layer));
    }
    return result;
}

// rope_scaling (or `key`): null, or YaRN (the only kind these families
// publish); any other kind is refused by name rather than run without its
// scaling.
void parse_rope_scaling(const json& config, const std::string& where, ModelConfig* c,
                        const char* key = "rope_scaling") {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return;
    const std::string at = where + "." + key;
    if (!it->is_object()) fail_format("{}: expected an object or null", at);
    Reader read{*it, at};
    std::string kind = read.string("type", "");
    if (kind.empty()) kind = read.string("rope_type", "");
    if (kind == "default") return;
    if (kind != "yarn")
        fail(WASTE_ERR_UNSUPPORTED, "{}.type: \"{}\" is not supported (yarn, default)", at, kind);
    c->yarn_enabled = true;
    YarnScaling& y = c->yarn;
    y.factor = read.real({"factor"}, 1.0, 1e6, 1.0);
    y.original_max_position = static_cast<double>(read.integer({"original_max_position_embeddings"}, 1, 1LL << 40));
    y.beta_fast = read.real({"beta_fast"}, 1e-6, 1e6, 32.0);
    y.beta_slow = read.real({"beta_slow"}, 1e-6, 1e6, 1.0);
    y.mscale = read.real({"mscale"}, 0.0, 1e6, 0.0);
    y.mscale_all_dim = read.real({"mscale_all_dim"}, 0.0, 1e6, 0.0);
    y.truncate = read.boolean({"truncate"}, true);
}

// Qwen3-MoE's dense layers (HF Qwen3MoeDecoderLayer): layer i (0-based) is
// MoE unless it is in mlp_only_layers, num_experts is 0, or (i + 1) is not a
// multiple of decoder_sparse_step.
void parse_qwen3_moe_layers(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    if (config.contains("first_k_dense_replace"))
        fail(WASTE_ERR_UNSUPPORTED, "{}.first_k_dense_replace: not a qwen3_moe key (its dense layers are "
             "decoder_sparse_step / mlp_only_layers)", where);
    const int step = static_cast<int>(read.integer({"decoder_sparse_step"}, 1, max_layers, 1));
    const int64_t experts = read.integer({"num_experts", "num_local_experts"}, 0, max_experts, 0);
    std::vector<uint8_t> mlp_only(c->layers, 0);
    auto list = config.find("mlp_only_layers");
    if (list != config.end() && !list->is_null()) {
        if (!list->is_array()) fail_format("{}.mlp_only_layers: expected an array of 0-based layer numbers", where);
        for (const json& item : *list) {
            if (!item.is_number_integer())
                fail_format("{}.mlp_only_layers: expected 0-based layer numbers, got {}", where, item.dump());
            const int64_t layer = item.get<int64_t>();
            if (layer < 0 || layer >= c->layers)
                fail_format("{}.mlp_only_layers: layer {} is out of range [0, {}]", where, layer, c->layers - 1);
            mlp_only[layer] = 1;
        }
    }
    c->moe_layer.assign(c->layers, 0);
    for (int i = 0; i < c->layers; ++i) c->moe_layer[i] = !mlp_only[i] && experts > 0 && (i + 1) % step == 0;
}

// The GQA head shape (Qwen3, GLM-4.5): num_key_value_heads dividing the
// query heads, head_dim (hidden / heads when absent).
void parse_gqa_heads(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    c->kv_heads = static_cast<int>(read.integer({"num_key_value_heads"}, 1, max_heads, c->heads));
    if (c->heads % c->kv_heads != 0)
        fail_format("{}.num_key_value_heads: {} does not divide num_attention_heads {}", where, c->kv_heads, c->heads);
    const int64_t fallback_dim = c->hidden / c->heads;
    c->head_dim = static_cast<int>(read.integer({"head_dim"}, 2, max_heads, fallback_dim));
    if (c->head_dim < 2) fail_format("{}.head_dim: missing, and hidden_size / num_attention_heads is {}", where, fallback_dim);
    // RoPE rotates pairs; 1024 dims is far above any release (128) and bounds the angle table
    if (c->head_dim % 2 != 0 || c->head_dim > 1024)
        fail_format("{}.head_dim: {} must be even and at most 1024 for RoPE", where, c->head_dim);
    c->rope_dim = c->head_dim;
    c->rope_interleave = false;  // NEOX pairs (i, i + d/2) of the rotated dims
    if (config.contains("linear_attn_config") && !config["linear_attn_config"].is_null())
        fail(WASTE_ERR_UNSUPPORTED, "{}.linear_attn_config: not a {} key", where, c->model_type);
    if (c->latent > 0) fail(WASTE_ERR_UNSUPPORTED, "{}.routed_expert_hidden_size: not a {} key", where, c->model_type);
    if (c->activation != Activation::silu)
        fail(WASTE_ERR_UNSUPPORTED, "{}.hidden_act: {} experts are SwiGLU (silu)", where, c->model_type);
    if (c->attn_res_block > 0) fail(WASTE_ERR_UNSUPPORTED, "{}.attn_res_block_size: not a {} key", where, c->model_type);
    c->layer_kinds.assign(c->layers, LayerKind::gqa);
}

// NEOX RoPE on the first int(head_dim * partial_rotary_factor) dims of each
// head (HF's rotary dim; GLM-4.5, Qwen3.5): the factor from rope_parameters
// (newer configs) or the top level, which wins, else `fallback` (the family's
// config-class default); it must give an even number >= 2.
void parse_partial_rotary(const json& config, const std::string& where, ModelConfig* c, double fallback) {
    double factor = fallback;
    std::string at = where + ".partial_rotary_factor";
    if (auto params = config.find("rope_parameters"); params != config.end() && params->is_object())
        if (params->contains("partial_rotary_factor")) {
            factor = Reader{*params, where + ".rope_parameters"}.real({"partial_rotary_factor"}, 0.0, 1.0, factor);
            at = where + ".rope_parameters.partial_rotary_factor";
        }
    factor = Reader{config, where}.real({"partial_rotary_factor"}, 0.0, 1.0, factor);
    c->rope_dim = static_cast<int>(c->head_dim * factor);
    if (c->rope_dim < 2 || c->rope_dim % 2 != 0)
        fail_format("{}: {} gives {} rotated dims of head_dim {}, expected an even number >= 2", at, factor, c->rope_dim,
                    c->head_dim);
}

// Qwen3-MoE's attention (other-families.md §4): GQA on every layer, per-head
// q_norm / k_norm, NEOX RoPE over the whole head. What this engine does not
// run is refused by name, never run without it.
void parse_qwen3_attention(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    parse_gqa_heads(config, where, c);
    c->qk_norm = true;
    if (read.boolean({"attention_bias"}, false))
        fail(WASTE_ERR_UNSUPPORTED, "{}.attention_bias: true is not supported (q/k/v/o without biases)", where);
    if (read.boolean({"use_sliding_window"}, false))
        fail(WASTE_ERR_UNSUPPORTED, "{}.use_sliding_window: true is not supported (full causal attention)", where);
    if (c->yarn_enabled)
        fail(WASTE_ERR_UNSUPPORTED, "{}.rope_scaling: YaRN is not supported for qwen3_moe yet (null, or rope_parameters "
             "of rope_type default)", where);
    if (c->shared_experts > 0 || config.contains("shared_expert_intermediate_size"))
        fail(WASTE_ERR_UNSUPPORTED, "{}: shared experts are not part of qwen3_moe", where);
    if (c->expert_groups > 1)
        fail(WASTE_ERR_UNSUPPORTED, "{}.n_group: expert groups are not part of qwen3_moe's router", where);
    if (c->routed_scaling != 1.0)
        fail(WASTE_ERR_UNSUPPORTED, "{}.routed_scaling_factor: {} (qwen3_moe's router has no scaling)", where,
             c->routed_scaling);
}

// GLM-4.5's attention (other-families.md §7; HF glm4_moe Glm4MoeAttention):
// GQA on every layer; biases on q, k and v when attention_bias (o_proj has
// none); per-head q_norm / k_norm before RoPE only when use_qk_norm; NEOX RoPE
// on the first head_dim * partial_rotary_factor dims of each head (HF
// Glm4MoeConfig's default 0.5; newer configs carry it in rope_parameters), the
// rest passed through.
void parse_glm4_attention(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    parse_gqa_heads(config, where, c);
    c->qkv_bias = read.boolean({"attention_bias"}, false);
    c->qk_norm = read.boolean({"use_qk_norm"}, false);
    parse_partial_rotary(config, where, c, 0.5);
    if (read.boolean({"use_sliding_window"}, false))
        fail(WASTE_ERR_UNSUPPORTED, "{}.use_sliding_window: true is not supported (full causal attention)", where);
}

// gpt-oss's attention and experts (other-families.md §8; HF gpt_oss
// GptOssAttention, GptOssConfig): GQA on every layer with biases on q, k, v
// and o (attention_bias, default true), a sink logit per head, no q/k norm,
// NEOX RoPE over the whole head (YaRN as configured); layer_types
// "sliding_attention" / "full_attention" (HF's default: even layers sliding)
// with sliding_window keys; every layer MoE, intermediate_size being the
// expert width; the clamped SwiGLU with per-expert biases.
void parse_gpt_oss(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    parse_gqa_heads(config, where, c);  // (after hidden_act: the clamped SwiGLU replaces silu below)
    c->qkv_bias = c->o_bias = read.boolean({"attention_bias"}, true);
    c->sinks = true;
    c->sliding_window = static_cast<int>(read.integer({"sliding_window"}, 1, 1 << 24, 128));
    c->sliding_layer.assign(c->layers, 0);
    auto types = config.find("layer_types");
    if (types == config.end() || types->is_null()) {
        for (int i = 0; i < c->layers; ++i) c->sliding_layer[i] = (i + 1) % 2 != 0;
    } else {
        if (!types->is_array() || types->size() != static_cast<size_t>(c->layers))
            fail_format("{}.layer_types: expected an array of {} strings", where, c->layers);
        for (int i = 0; i < c->layers; ++i) {
            const json& t = (*types)[i];
            if (t == "sliding_attention") c->sliding_layer[i] = 1;
            else if (t != "full_attention")
                fail(WASTE_ERR_UNSUPPORTED, "{}.layer_types[{}]: {} is not supported (sliding_attention, full_attention)",
                     where, i, t.dump());
        }
    }
    c->activation = Activation::clamped_swiglu;
    c->swiglu_limit = read.real({"swiglu_limit"}, 1e-6, 1e6, 7.0);
    c->expert_bias = true;
    if (c->shared_experts > 0) fail(WASTE_ERR_UNSUPPORTED, "{}: shared experts are not part of gpt_oss", where);
    if (c->expert_groups > 1) fail(WASTE_ERR_UNSUPPORTED, "{}.n_group: expert groups are not part of gpt_oss's router", where);
    if (c->routed_scaling != 1.0)
        fail(WASTE_ERR_UNSUPPORTED, "{}.routed_scaling_factor: {} (gpt_oss's router has no scaling)", where, c->routed_scaling);
}

// MiniMax-M2's attention and router (families-2026.md §3; HF minimax_m2
// MiniMaxM2Attention, MiniMaxM2SparseMoeBlock): GQA on every layer, no
// biases; q_norm / k_norm RMSNorms over the whole q and k projections (not
// per head) when use_qk_norm (the release's choice, and the default), before
// NEOX RoPE on the first rotary_dim dims of each head; every layer MoE with
// the sigmoid router, its correction bias for selection only (when
// use_routing_bias), weights renormalised, no shared expert, no groups.
void parse_minimax_m2(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    parse_gqa_heads(config, where, c);
    c->qk_norm = c->qk_norm_whole = read.boolean({"use_qk_norm"}, true);
    c->rope_dim = static_cast<int>(read.integer({"rotary_dim"}, 2, c->head_dim, c->head_dim));
    if (c->rope_dim % 2 != 0) fail_format("{}.rotary_dim: {} must be even", where, c->rope_dim);
    if (read.boolean({"attention_bias"}, false))
        fail(WASTE_ERR_UNSUPPORTED, "{}.attention_bias: true is not part of minimax_m2", where);
    if (read.boolean({"use_grouped_topk"}, false))
        fail(WASTE_ERR_UNSUPPORTED, "{}.use_grouped_topk: true is not supported (the releases route without groups)",
             where);
    c->expert_groups = c->top_groups = 1;  // num_expert_group / topk_group count only with use_grouped_topk
    if (const json* window = config.contains("attn_window_size") ? &config["attn_window_size"] : nullptr;
        window && !window->is_null() && !(window->is_number_integer() && window->get<int64_t>() <= 0))
        fail(WASTE_ERR_UNSUPPORTED, "{}.attn_window_size: {}: sliding attention is not part of the releases", where,
             window->dump());
    if (c->shared_experts > 0) fail(WASTE_ERR_UNSUPPORTED, "{}: shared experts are not part of minimax_m2", where);
    if (c->yarn_enabled) fail(WASTE_ERR_UNSUPPORTED, "{}.rope_scaling: YaRN is not part of minimax_m2", where);
}

// One special-id key: absent or null (none), an id in [-1, vocab) (-1 is
// none), or a list of ids in [0, vocab); `bounded` false checks the shape only.
std::vector<int32_t> special_id_list(const json& object, const char* key, const std::string& where, int64_t vocab,
                                     bool bounded) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {};
    auto id = [&](const json& value, const std::string& at, int64_t low) -> std::optional<int32_t> {
        if (!value.is_number_integer())
            fail_format("{}: expected a token id (an integer), got {}", at, value.dump().substr(0, 80));
        const int64_t number = value.is_number_unsigned()
                                   ? static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), INT64_MAX))
                                   : value.get<int64_t>();
        const int64_t high = bounded ? vocab - 1 : INT32_MAX;
        if (number < (bounded ? low : INT32_MIN) || number > high)
            fail_format("{}: {} is out of range [{}, {}]", at, number, low, high);
        if (number < 0) return std::nullopt;
        return static_cast<int32_t>(number);
    };
    const std::string at = where + "." + key;
    std::vector<int32_t> ids;
    if (!it->is_array()) {
        if (!it->is_number_integer())
            fail_format("{}: expected a token id or a list of ids, got {}", at, it->dump().substr(0, 80));
        if (auto one = id(*it, at, -1)) ids.push_back(*one);
        return ids;
    }
    if (it->size() > max_special_ids) fail_format("{}: {} ids (at most {})", at, it->size(), max_special_ids);
    for (size_t i = 0; i < it->size(); ++i)
        if (auto one = id((*it)[i], fmt::format("{}[{}]", at, i), 0)) ids.push_back(*one);
    return ids;
}

// Qwen3.5 / 3.6 MoE (families-2026.md §1; HF qwen3_5_moe Qwen3_5MoeTextConfig,
// Qwen3_5MoeGatedDeltaNet, Qwen3_5MoeAttention): full attention every
// full_attention_interval-th layer (or as layer_types says), Gated DeltaNet
// elsewhere; the attention gated (attn_output_gate), per-head q/k norms,
// NEOX RoPE on the first head_dim * partial_rotary_factor dims (M-RoPE's
// sections are one position for text); every layer MoE with the softmax
// router, always renormalised (the release's config class has no
// norm_topk_prob; Qwen3-Next's has, true in its releases), one shared
// expert of shared_expert_intermediate_size behind a sigmoid gate;
// zero-centred norms.
void parse_qwen35(const json& config, const std::string& where, ModelConfig* c) {
    Reader read{config, where};
    parse_gqa_heads(config, where, c);
    c->qk_norm = true;
    c->zero_centred_norms = true;
    c->attn_output_gate = read.boolean({"attn_output_gate"}, true);
    c->renormalize = c->model_type == "qwen3_next" ? read.boolean({"norm_topk_prob"}, true) : true;
    if (read.integer({"decoder_sparse_step"}, 1, max_layers, 1) != 1)
        fail(WASTE_ERR_UNSUPPORTED, "{}.decoder_sparse_step: {} has a MoE block on every layer", where, c->model_type);
    parse_partial_rotary(config, where, c, 0.25);
    if (auto params = config.find("rope_parameters"); params != config.end() && params->is_object())
        if (!Reader{*params, where + ".rope_parameters"}.boolean({"mrope_interleaved"}, true))
            fail(WASTE_ERR_UNSUPPORTED, "{}.rope_parameters.mrope_interleaved: false is not part of qwen3_5_moe", where);
    if (c->yarn_enabled)
        fail(WASTE_ERR_UNSUPPORTED, "{}.rope_parameters: YaRN is not supported for qwen3_5_moe (rope_type default)", where);
    if (read.boolean({"attention_bias"}, false))
        fail(WASTE_ERR_UNSUPPORTED, "{}.attention_bias: true is not part of qwen3_5_moe", where);
    if (c->expert_groups > 1)
        fail(WASTE_ERR_UNSUPPORTED, "{}.n_group: expert groups are not part of qwen3_5_moe's router", where);
    if (c->routed_scaling != 1.0)
        fail(WASTE_ERR_UNSUPPORTED, "{}.routed_scaling_factor: {} (qwen3_5_moe's router has no scaling)", where,
             c->routed_scaling);
    if (auto dense = config.find("mlp_only_layers"); dense != config.end() && dense->is_array() && !dense->empty())
        fail(WASTE_ERR_UNSUPPORTED, "{}.mlp_only_layers: {} has a MoE block on every layer", where, c->model_type);
    c->shared_intermediate = static_cast<int>(read.integer({"shared_expert_intermediate_size"}, 0, max_dimension, 0));
    c->shared_experts = c->shared_intermediate > 0 ? 1 : 0;
    c->shared_expert_gate = c->shared_experts > 0;
    // the Gated DeltaNet layers
    c->kda_heads = static_cast<int>(read.integer({"linear_num_key_heads"}, 1, max_heads));
    c->kda_v_heads = static_cast<int>(read.integer({"linear_num_value_heads"}, 1, max_heads));
    c->kda_head_dim = static_cast<int>(read.integer({"linear_key_head_dim"}, 1, 4096));
    const int64_t value_dim = read.integer({"linear_value_head_dim"}, 1, 4096, c->kda_head_dim);
    if (value_dim != c->kda_head_dim)
        fail(WASTE_ERR_UNSUPPORTED, "{}.linear_value_head_dim: {} differs from linear_key_head_dim {} (the releases' "
             "are equal)", where, value_dim, c->kda_head_dim);
    if (c->kda_v_heads % c->kda_heads != 0)
        fail_format("{}.linear_num_value_heads: {} is not a multiple of linear_num_key_heads {}", where, c->kda_v_heads,
                    c->kda_heads);
    c->conv_kernel = static_cast<int>(read.integer({"linear_conv_kernel_dim"}, 1, 64, 4));
    const int interval = static_cast<int>(read.integer({"full_attention_interval"}, 1, max_layers, 4));
    for (int i = 0; i < c->layers; ++i) c->layer_kinds[i] = (i + 1) % interval == 0 ? LayerKind::gqa : LayerKind::gdn;
    if (auto types = config.find("layer_types"); types != config.end() && !types->is_null()) {
        if (!types->is_array() || types->size() != static_cast<size_t>(c->layers))
            fail_format("{}.layer_types: expected an array of {} strings", where, c->layers);
        for (int i = 0; i < c->layers; ++i) {
            const json& t = (*types)[i];
            if (t == "full_attention") c->layer_kinds[i] = LayerKind::gqa;
            else if (t == "linear_attention") c->layer_kinds[i] = LayerKind::gdn;
            else
                fail(WASTE_ERR_UNSUPPORTED, "{}.layer_types[{}]: {} is not supported (linear_attention, full_attention)",
                     where, i, t.dump());
        }
    }
}

}  // namespace

// Mistral 4 (families-2026.md §6): DeepSeek-V3's MLA with a softmax router
// over one group, and the query temperature: HF keeps its β as
// rope_parameters.llama_4_scaling_beta over the original context
// (original_max_position_embeddings); the engine's own keys
// attn_temperature_scale / attn_temperature_length (what a GGUF's
// attention.temperature_scale / temperature_length become) come first.
void parse_mistral4(const json& config, const std::string& where, ModelConfig* c) {
    if (c->expert_groups > 1)
        fail(WASTE_ERR_UNSUPPORTED, "{}.n_group: {} (mistral4's softmax router has one group)", where, c->expert_groups);
    if (config.contains("attn_temperature_scale")) return;  // read for every family below
    for (const char* key : {"rope_parameters", "rope_scaling"}) {
        auto params = config.find(key);
        if (params == config.end() || !params->is_object() || !params->contains("llama_4_scaling_beta")) continue;
        Reader read{*params, where + "." + key};
        c->attn_temperature_scale = read.real({"llama_4_scaling_beta"}, 0.0, 1e6, 0.0);
        c->attn_temperature_length = read.integer({"original_max_position_embeddings"}, 1, 1LL << 40);
        return;
    }
}

SpecialIds parse_special_ids(const json& object, const std::string& where, int64_t vocab) {
    if (!object.is_object()) fail_format("{}: expected a JSON object", where);
    SpecialIds ids;
    ids.bos = special_id_list(object, "bos_token_id", where, vocab, true);
    ids.eos = special_id_list(object, "eos_token_id", where, vocab, true);
    ids.pad = special_id_list(object, "pad_token_id", where, vocab, false);
    return ids;
}

SamplingDefaults parse_sampling_defaults(const json& object, const std::string& where) {
    if (!object.is_object()) fail_format("{}: expected a JSON object", where);
    SamplingDefaults d;
    auto real = [&](const char* key, double lo, double hi, bool lo_open) -> std::optional<double> {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null()) return std::nullopt;
        const double v = it->is_number() ? it->get<double>() : std::nan("");
        if (!it->is_number() || !std::isfinite(v) || v > hi || (lo_open ? v <= lo : v < lo))
            fail_format("{}.{}: {} is not a number in {}{}, {}]", where, key, it->dump(), lo_open ? "(" : "[", lo, hi);
        return v;
    };
    d.temperature = real("temperature", 0, 100, false);
    d.top_p = real("top_p", 0, 1, true);
    d.min_p = real("min_p", 0, 1, false);
    if (const auto it = object.find("top_k"); it != object.end() && !it->is_null()) {
        if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > (int64_t{1} << 30))
            fail_format("{}.top_k: {} is not an integer from 0 to {}", where, it->dump(), int64_t{1} << 30);
        d.top_k = static_cast<uint32_t>(it->get<int64_t>());
    }
    if (const auto it = object.find("do_sample"); it != object.end() && !it->is_null()) {
        if (!it->is_boolean()) fail_format("{}.do_sample: {} is not true or false", where, it->dump());
        if (!it->get<bool>()) d = SamplingDefaults{0.0, std::nullopt, std::nullopt, std::nullopt};  // greedy
    }
    return d;
}

void add_eos_ids(ModelConfig* config, const std::vector<int32_t>& ids) {
    for (int32_t id : ids)
        if (!config->is_eos(id)) config->eos_ids.push_back(id);
    if (config->eos < 0 && !config->eos_ids.empty()) config->eos = config->eos_ids[0];
}

int ModelConfig::moe_layer_count() const {
    return static_cast<int>(std::count(moe_layer.begin(), moe_layer.end(), uint8_t{1}));
}
int ModelConfig::moe_ordinal(int layer) const {
    if (!is_moe_layer(layer)) return -1;
    return static_cast<int>(std::count(moe_layer.begin(), moe_layer.begin() + layer, uint8_t{1}));
}
int ModelConfig::gqa_layer_count() const {
    return static_cast<int>(std::count(layer_kinds.begin(), layer_kinds.end(), LayerKind::gqa));
}
int ModelConfig::kda_layer_count() const {
    return static_cast<int>(std::count(layer_kinds.begin(), layer_kinds.end(), LayerKind::kda));
}
int ModelConfig::gdn_layer_count() const {
    return static_cast<int>(std::count(layer_kinds.begin(), layer_kinds.end(), LayerKind::gdn));
}
int ModelConfig::mla_layer_count() const {
    return static_cast<int>(std::count(layer_kinds.begin(), layer_kinds.end(), LayerKind::mla));
}

ModelConfig parse_model_config(const json& config, const std::string& where) {
    if (!config.is_object()) fail_format("{}: expected a JSON object", where);
    Reader read{config, where};
    ModelConfig c;
    c.model_type = read.string("model_type", "");
    // "" is an older container that wrote no model_type: Kimi-Linear's math.
    const FamilyTraits* traits = family_of_model_type(c.model_type.empty() ? "kimi_linear" : c.model_type);
    if (!traits)
        fail(WASTE_ERR_UNSUPPORTED, "{}.model_type: \"{}\" is not a family this engine runs ({})", where, c.model_type,
             known_model_types());
    const FamilyTraits& family = *traits;
    c.family = family.family;
    c.hidden = static_cast<int>(read.integer({"hidden_size"}, 1, max_dimension));
    c.layers = static_cast<int>(read.integer({"num_hidden_layers"}, 1, max_layers));
    switch (family.moe_layout) {
        case MoeLayout::sparse_step: parse_qwen3_moe_layers(config, where, &c); break;
        case MoeLayout::every_layer: c.moe_layer.assign(c.layers, 1); break;
        case MoeLayout::first_k_dense:
            c.first_dense = static_cast<int>(read.integer({"first_k_dense_replace"}, 0, c.layers,
                                                          family.first_layer_dense ? std::min(1, c.layers) : 0));
            c.moe_layer.assign(c.layers, 0);
            std::fill(c.moe_layer.begin() + c.first_dense, c.moe_layer.end(), uint8_t{1});
            break;
    }
    const bool has_moe = c.has_moe();
    // required when a layer is dense
    const bool dense = c.dense_layer_count() > 0;
    c.intermediate = static_cast<int>(read.integer({"intermediate_size"}, dense ? 1 : 0, max_dimension,
                                                   dense ? std::nullopt : std::optional<int64_t>(0)));
    // (gpt-oss's intermediate_size is the expert width)
    c.moe_intermediate = static_cast<int>(read.integer({family.expert_width.data()}, has_moe ? 1 : 0, max_dimension, 0));
    c.experts = static_cast<int>(read.integer({"num_experts", "n_routed_experts", "num_local_experts"}, has_moe ? 1 : 0,
                                              max_experts, 0));
    c.top_k = static_cast<int>(read.integer({"num_experts_per_token", "num_experts_per_tok", "experts_per_token"}, has_moe ? 1 : 0,
                                            std::max(c.experts, 1), 0));
    c.shared_experts = static_cast<int>(read.integer({"num_shared_experts", "n_shared_experts"}, 0, 64, family.shared_experts));
    c.renormalize = read.boolean({"moe_renormalize", "norm_topk_prob"}, family.renormalize);
    c.routed_scaling = read.real({"routed_scaling_factor"}, 0.0, 1e6, 1.0);
    c.router = family.router;
    c.expert_groups = static_cast<int>(read.integer({"n_group", "num_expert_group"}, 1, std::max(c.experts, 1), 1));
    c.top_groups = static_cast<int>(read.integer({"topk_group"}, 1, c.expert_groups, c.expert_groups));
    if (c.experts > 0 && c.experts % c.expert_groups != 0)
        fail_format("{}.n_group: {} does not divide num_experts {}", where, c.expert_groups, c.experts);
    if (c.expert_groups > 1 && c.top_k > c.top_groups * (c.experts / c.expert_groups))
        fail_format("{}.num_experts_per_token: {} exceeds the experts of the {} kept groups", where, c.top_k,
                    c.top_groups);
    const std::string scoring_kind(family.scoring);
    for (const char* key : {"scoring_func", "moe_router_activation_func"}) {
        const std::string scoring = read.string(key, scoring_kind);
        if (scoring != scoring_kind)
            fail(WASTE_ERR_UNSUPPORTED, "{}.{}: \"{}\" is not supported for {} ({})", where, key, scoring,
                 c.model_type.empty() ? "kimi_linear" : c.model_type, scoring_kind);
    }
    c.latent = static_cast<int>(read.integer({"routed_expert_hidden_size"}, 0, max_dimension, 0));
    c.vocab = static_cast<int>(read.integer({"vocab_size"}, 1, max_vocab));
    c.tie_embeddings = read.boolean({"tie_word_embeddings"}, false);
    // -1 means "none"; any other id must name a row of the embedding, or a
    // generation would stop on (or start from) a token the model cannot emit.
    const SpecialIds special = parse_special_ids(config, where, c.vocab);
    if (!special.bos.empty()) c.bos = special.bos[0];
    add_eos_ids(&c, special.eos);
    c.rms_eps = read.real({"rms_norm_eps"}, 0.0, 1.0, 1e-6);
    const std::string act = read.string("hidden_act", "silu");
    if (act == "silu" || act == "swish") c.activation = Activation::silu;
    else if (act == "situ") c.activation = Activation::situ;
    else fail_format("{}.hidden_act: \"{}\" is not supported (silu, situ)", where, act);
    c.situ_beta = read.real({"activation_situ_beta"}, 1e-6, 1e6, 4.0);
    c.situ_linear_beta = read.real({"activation_situ_linear_beta"}, -1e6, 1e6, 25.0);
    c.attn_res_block = static_cast<int>(read.integer({"attn_res_block_size"}, 0, c.layers, 0));

    c.heads = static_cast<int>(read.integer({"num_attention_heads"}, 1, max_heads));
    c.qk_nope = static_cast<int>(read.integer({"qk_nope_head_dim"}, 0, max_heads, 0));
    c.qk_rope = static_cast<int>(read.integer({"qk_rope_head_dim"}, 0, max_heads, 0));
    c.v_head = static_cast<int>(read.integer({"v_head_dim"}, 0, max_heads, 0));
    c.kv_lora = static_cast<int>(read.integer({"kv_lora_rank"}, 0, max_dimension, 0));
    c.q_lora = static_cast<int>(read.integer({"q_lora_rank"}, 0, max_dimension, 0));
    c.mla_output_gate = read.boolean({"mla_use_output_gate"}, false);
    c.mla_rope = !read.boolean({"mla_use_nope"}, family.mla_nope);
    c.rope_theta = read.real({"rope_theta"}, 1e-3, 1e12, 10000.0);
    c.rope_interleave = read.boolean({"rope_interleave"}, true);
    parse_rope_scaling(config, where, &c);
    // Configs saved by newer transformers carry rope_parameters ({rope_type,
    // rope_theta, the scaling keys}) in place of rope_theta and rope_scaling:
    // read, never left to the defaults.
    if (auto params = config.find("rope_parameters"); params != config.end() && !params->is_null()) {
        if (!params->is_object()) fail_format("{}.rope_parameters: expected an object or null", where);
        auto theta = config.find("rope_theta");
        if (theta == config.end() || theta->is_null())
            c.rope_theta = Reader{*params, where + ".rope_parameters"}.real({"rope_theta"}, 1e-3, 1e12, c.rope_theta);
        auto scaling = config.find("rope_scaling");
        if (scaling == config.end() || scaling->is_null()) parse_rope_scaling(config, where, &c, "rope_parameters");
    }

    // the query temperature (ModelConfig::query_temperature), MLA layers only
    c.attn_temperature_scale = read.real({"attn_temperature_scale"}, 0.0, 1e6, 0.0);
    if (c.attn_temperature_scale != 0.0) {
        if (c.family != Family::deepseek && c.family != Family::mistral4)
            fail(WASTE_ERR_UNSUPPORTED, "{}.attn_temperature_scale: {} (the query temperature is run in DeepSeek's "
                 "and Mistral 4's MLA only)", where, c.attn_temperature_scale);
        c.attn_temperature_length = read.integer({"attn_temperature_length"}, 1, 1LL << 40);
    }
    switch (c.family) {  // each family's attention keys
        case Family::qwen3: parse_qwen3_attention(config, where, &c); return c;
        case Family::glm4: parse_glm4_attention(config, where, &c); return c;
        case Family::gpt_oss: parse_gpt_oss(config, where, &c); return c;
        case Family::minimax_m2: parse_minimax_m2(config, where, &c); return c;
        case Family::qwen35: parse_qwen35(config, where, &c); return c;
        case Family::kimi: case Family::deepseek: break;  // KDA and MLA layers, below
        case Family::mistral4: parse_mistral4(config, where, &c); break;  // and its MLA layers, below
    }
    c.layer_kinds.assign(c.layers, LayerKind::mla);
    auto linear = config.find("linear_attn_config");
    if (linear != config.end() && !linear->is_null()) {
        if (!linear->is_object()) fail_format("{}.linear_attn_config: expected an object", where);
        Reader kda{*linear, where + ".linear_attn_config"};
        c.kda_heads = static_cast<int>(kda.integer({"num_heads"}, 1, max_heads));
        c.kda_head_dim = static_cast<int>(kda.integer({"head_dim"}, 1, max_heads));
        c.kda_v_heads = c.kda_heads;
        c.conv_kernel = static_cast<int>(kda.integer({"short_conv_kernel_size"}, 1, 64, 4));
        c.gate_lower_bound = kda.real({"gate_lower_bound"}, -1e6, 0.0, 0.0);
        auto kda_list = linear->find("kda_layers");
        if (kda_list != linear->end())
            for (int layer : one_based_layer_list(*kda_list, where + ".linear_attn_config.kda_layers", c.layers))
                c.layer_kinds[layer - 1] = LayerKind::kda;
        auto full_list = linear->find("full_attn_layers");
        if (full_list != linear->end())
            for (int layer : one_based_layer_list(*full_list, where + ".linear_attn_config.full_attn_layers", c.layers))
                if (c.layer_kinds[layer - 1] == LayerKind::kda)
                    fail_format("{}.linear_attn_config: layer {} is in both kda_layers and full_attn_layers", where,
                                layer);
    }
    if (c.mla_layer_count() > 0) {
        if (c.kv_lora < 1) fail_format("{}.kv_lora_rank: MLA layers need a rank >= 1", where);
        if (c.qk_nope + c.qk_rope < 1) fail_format("{}: MLA layers need qk_nope_head_dim + qk_rope_head_dim >= 1", where);
        if (c.v_head < 1) fail_format("{}.v_head_dim: MLA layers need v_head_dim >= 1", where);
        // RoPE rotates pairs; 1024 dims is far above any release (64) and bounds the angle table
        if (c.mla_rope && (c.qk_rope % 2 != 0 || c.qk_rope > 1024))
            fail_format("{}.qk_rope_head_dim: {} must be even and at most 1024 for RoPE", where, c.qk_rope);
    }
    return c;
}

}  // namespace waste::format
