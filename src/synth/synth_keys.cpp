// synth_keys.cpp — the table of accepted override keys (synth_keys.h).
#include "synth/synth_keys.h"

#include <algorithm>
#include <iterator>

#include "platform/error.h"

namespace waste::synth {
namespace {

// Not here on purpose, though the presets write them: keys nothing reads
// (moe_router_activation_func: the engine's router is sigmoid;
// mla_use_nope; architectures; the _outer wrapper's keys) and aliases the
// reader also accepts (n_routed_experts, num_experts_per_tok, ...), which
// would set a second copy of a key the preset already has.
const char* const accepted_keys[] = {
    // Container options (synth_config.h), not config keys.
    "tensor_prefix", "expert_quant", "trunk_quant", "tokenizer", "reserved_tokens", "vision",
    // The shape.
    "hidden_size", "num_hidden_layers", "first_k_dense_replace", "intermediate_size", "vocab_size",
    "tie_word_embeddings", "bos_token_id", "eos_token_id", "rms_norm_eps",
    // Mixture of experts.
    "moe_intermediate_size", "num_experts", "num_experts_per_token", "num_shared_experts", "moe_renormalize",
    "routed_scaling_factor", "n_group", "topk_group", "routed_expert_hidden_size", "latent_moe_use_norm",
    "hidden_act", "activation_situ_beta", "activation_situ_linear_beta", "attn_res_block_size",
    // GQA (Qwen3, GLM, gpt-oss).
    "num_key_value_heads", "head_dim", "sliding_window", "rotary_dim", "use_qk_norm",
    // MLA.
    "num_attention_heads", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank",
    "mla_use_output_gate",
    // KDA.
    "linear_attn_config.head_dim", "linear_attn_config.num_heads", "linear_attn_config.short_conv_kernel_size",
    "linear_attn_config.kda_layers", "linear_attn_config.full_attn_layers", "linear_attn_config.gate_lower_bound",
    "linear_attn_config.use_full_rank_gate",
};

bool is_key(const std::string& path) {
    const auto& keys = override_keys();
    return std::find(keys.begin(), keys.end(), path) != keys.end();
}

// A group of keys ("linear_attn_config"): an object walked key by key, or null.
bool is_group(const std::string& path) {
    for (const std::string& key : override_keys())
        if (key.size() > path.size() && key.compare(0, path.size(), path) == 0 && key[path.size()] == '.') return true;
    return false;
}

[[noreturn]] void refuse(const std::string& path) {
    std::string near;
    for (const std::string& key : override_keys())
        if (key.find(path) != std::string::npos || path.find(key) != std::string::npos) {
            near = " (did you mean \"" + key + "\"?)";
            break;
        }
    std::string list;
    for (const std::string& key : override_keys()) list += (list.empty() ? "" : ", ") + key;
    fail(WASTE_ERR_INVALID_ARGUMENT, "synth: \"{}\" is not a key the synth uses{}; it takes {}", path, near, list);
}

void check_object(const nlohmann::json& object, const std::string& prefix) {
    for (const auto& [key, value] : object.items()) {
        const std::string path = prefix + key;
        if (is_key(path)) continue;
        if (!is_group(path)) refuse(path);
        if (value.is_object()) check_object(value, path + ".");
        else if (!value.is_null())
            fail(WASTE_ERR_INVALID_ARGUMENT, "synth: \"{}\" is a group of keys: set them one by one (e.g. {}.head_dim), "
                 "or null to remove it", path, path);
    }
}

}  // namespace

const std::vector<std::string>& override_keys() {
    static const std::vector<std::string> keys(std::begin(accepted_keys), std::end(accepted_keys));
    return keys;
}

void check_override_keys(const nlohmann::json& overrides) {
    if (overrides.is_object()) check_object(overrides, "");
}

}  // namespace waste::synth
