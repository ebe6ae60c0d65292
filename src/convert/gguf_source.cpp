// gguf_source.cpp — a GGUF file as the converter's source (gguf_source.h).
#include "convert/gguf_source.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "format/ggml_blocks.h"
#include "format/gguf.h"
#include "format/model_config.h"
#include "format/families.h"
#include "format/trunk_tensors.h"
#include "platform/error.h"
#include "platform/direct_file.h"
#include "platform/utf8_path.h"
#include "text/hf_tokenizer_json.h"
#include "text/utf8.h"

namespace waste::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// llama.cpp's token types (llama.h, LLAMA_TOKEN_TYPE_*).
enum TokenType : int64_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

// One tensor the release names, as a run of rows of a GGUF tensor.
struct TensorView {
    size_t part = 0;           // which file of a split set
    size_t tensor = 0;         // index into that file's GgufFile::tensors
    uint64_t first_row = 0;    // of the GGUF tensor's rows (an expert's slice starts at e * rows)
    std::vector<int64_t> shape;  // PyTorch order
    // Two GGUF tensors made one (tensor the first, second_* the second):
    // - mla_kv_b: MLA's kv_b_proj [heads · (nope + v), kv_lora]: head h's
    //   nope rows are attn_k_b [heads, kv_lora, nope]'s head h transposed,
    //   its v rows attn_v_b [heads, v, kv_lora]'s head h;
    // - interleaved: row r's values alternate the first's row r and the
    //   second's (gpt-oss's gate_up_proj_bias from ffn_{gate,up}_exps.bias).
    enum class Compose : uint8_t { none, mla_kv_b, interleaved } compose = Compose::none;
    size_t second_part = 0, second_tensor = 0;
    uint64_t nope = 0, v_dim = 0, kv_lora = 0;
    // A tensor llama.cpp's converter rearranged (qwen35moe's value heads,
    // families-2026.md §1.11): row r of the release's tensor is the GGUF's row
    // row_order[r], column c its column col_order[c] (empty: in place); and
    // the values it rewrote: 1 + w of a zero-centred norm (minus_one gives w
    // back), -exp(A_log) (log_of_negated gives A_log back).
    std::vector<uint32_t> row_order, col_order;
    enum class Values : uint8_t { as_stored, minus_one, log_of_negated } values = Values::as_stored;
};

// ---- the architectures ---------------------------------------------------

// What every architecture's keys share, `arch` their prefix.
struct ArchKeys {
    const format::GgufFile& keys;
    std::string arch;
    std::string operator()(std::string_view k) const { return fmt::format("{}.{}", arch, k); }
    // A {arch}.vocab_size that disagrees with token_embd.weight's rows is refused.
    void check_vocab(int64_t vocab) const {
        if (const auto declared = keys.optional_uint((*this)("vocab_size")); declared && *declared != static_cast<uint64_t>(vocab))
            fail(WASTE_ERR_FORMAT, "{}: {} {} differs from token_embd.weight's {} rows", keys.what, (*this)("vocab_size"),
                 *declared, vocab);
    }
    // The grouped-query heads (qwen3moe, gpt-oss, minimax-m2), with
    // llama.cpp's defaults where a key is absent: as many key/value heads as
    // heads, key_length hidden / heads, value_length key_length. Both sizes
    // must be positive and keys and values one head size.
    struct GqaHeads {
        uint64_t hidden, heads, kv_heads, head_dim;
    };
    GqaHeads gqa_heads() const {
        const auto& k = *this;
        const uint64_t hidden = keys.require_uint(k("embedding_length"));
        const uint64_t heads = keys.require_uint(k("attention.head_count"));
        if (heads == 0 || hidden == 0)
            fail(WASTE_ERR_FORMAT, "{}: {} and {} must be positive", keys.what, k("embedding_length"), k("attention.head_count"));
        const uint64_t head_dim = keys.optional_uint(k("attention.key_length")).value_or(hidden / heads);
        if (const uint64_t v = keys.optional_uint(k("attention.value_length")).value_or(head_dim); v != head_dim)
            fail(WASTE_ERR_UNSUPPORTED, "{}: {} {} differs from {} {} (keys and values of one head size)", keys.what,
                 k("attention.value_length"), v, k("attention.key_length"), head_dim);
        return {hidden, heads, keys.optional_uint(k("attention.head_count_kv")).value_or(heads), head_dim};
    }
    // block_count less the nextn_predict_layers multi-token-prediction layers
    // it counts (deepseek2, mistral4, qwen35moe), at least one left.
    uint64_t layers_less_mtp() const {
        const auto& k = *this;
        const uint64_t blocks = keys.require_uint(k("block_count"));
        const uint64_t mtp = keys.optional_uint(k("nextn_predict_layers")).value_or(0);
        if (mtp >= blocks)
            fail(WASTE_ERR_FORMAT, "{}: {} {} leaves no layer of {} {}", keys.what, k("nextn_predict_layers"), mtp,
                 k("block_count"), blocks);
        return blocks - mtp;
    }
    // rope.scaling.*: none, or YaRN as rope_scaling (its factor, original
    // context and betas); another kind is refused naming it.
    std::optional<ordered_json> yarn() const {
        if (!keys.find((*this)("rope.scaling.type"))) return std::nullopt;
        const std::string& kind = keys.require_string((*this)("rope.scaling.type"));
        if (kind == "none") return std::nullopt;
        if (kind != "yarn")
            fail(WASTE_ERR_UNSUPPORTED, "{}: {} \"{}\" is not supported (yarn, none)", keys.what, (*this)("rope.scaling.type"), kind);
        return ordered_json{{"type", "yarn"},
                            {"factor", keys.require_real((*this)("rope.scaling.factor"))},
                            {"original_max_position_embeddings", keys.require_uint((*this)("rope.scaling.original_context_length"))},
                            {"beta_fast", keys.optional_real((*this)("rope.scaling.yarn_beta_fast")).value_or(32.0)},
                            {"beta_slow", keys.optional_real((*this)("rope.scaling.yarn_beta_slow")).value_or(1.0)}};
    }
};

// qwen3moe (llama.cpp's LLM_ARCH_QWEN3MOE; convert_hf_to_gguf's
// Qwen3MoeModel): GQA with per-head q/k norms and NEOX RoPE, every layer
// MoE, softmax router. llama.cpp always renormalises the top-k weights
// (norm_w is fixed true in src/models/qwen3moe.cpp; the converter writes no
// key for it), so norm_topk_prob is true, as in every Qwen3-MoE release.
ordered_json qwen3moe_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab) {
    const ArchKeys key{keys, "qwen3moe"};
    const auto [hidden, heads, kv_heads, head_dim] = key.gqa_heads();
    const uint64_t moe_ff = keys.require_uint(key("expert_feed_forward_length"));
    if (key.yarn())
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} yarn is not supported for qwen3_moe yet (none)", keys.what,
             key("rope.scaling.type"));
    if (const auto shared = keys.optional_uint(key("expert_shared_count")); shared && *shared != 0)
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} {}: Qwen3-MoE has no shared experts", keys.what, key("expert_shared_count"), *shared);
    key.check_vocab(vocab);
    ordered_json config;
    config["architectures"] = {"Qwen3MoeForCausalLM"};
    config["model_type"] = "qwen3_moe";
    config["vocab_size"] = vocab;
    config["hidden_size"] = hidden;
    config["num_hidden_layers"] = keys.require_uint(key("block_count"));
    config["num_attention_heads"] = heads;
    config["num_key_value_heads"] = kv_heads;
    config["head_dim"] = head_dim;
    config["intermediate_size"] = keys.optional_uint(key("feed_forward_length")).value_or(moe_ff);
    config["moe_intermediate_size"] = moe_ff;
    config["num_experts"] = keys.require_uint(key("expert_count"));
    config["num_experts_per_tok"] = keys.require_uint(key("expert_used_count"));
    config["norm_topk_prob"] = true;
    config["decoder_sparse_step"] = 1;
    config["mlp_only_layers"] = ordered_json::array();
    config["rope_theta"] = keys.optional_real(key("rope.freq_base")).value_or(10000.0);
    config["rms_norm_eps"] = keys.require_real(key("attention.layer_norm_rms_epsilon"));
    if (const auto context = keys.optional_uint(key("context_length"))) config["max_position_embeddings"] = *context;
    config["tie_word_embeddings"] = tensors.count("output.weight") == 0;
    return config;
}

// minimax-m2 (llama.cpp's LLM_ARCH_MINIMAX_M2, src/models/minimax-m2.cpp;
// families-2026.md §3): GQA with q/k norms over the whole projections, NEOX
// RoPE on rope.dimension_count dims of each head, every layer MoE with the
// sigmoid router and exp_probs_b, renormalised (norm_w fixed true), no
// scaling (the loader never reads expert_weights_scale). expert_gating_func
// must say sigmoid (2): llama.cpp aborts without it. The experts' width is
// expert_feed_forward_length (feed_forward_length, which llama.cpp sizes
// them by, must agree).
ordered_json minimax_m2_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab) {
    const ArchKeys key{keys, "minimax-m2"};
    const auto [hidden, heads, kv_heads, head_dim] = key.gqa_heads();
    const uint64_t moe_ff = keys.require_uint(key("expert_feed_forward_length"));
    if (const auto ff = keys.optional_uint(key("feed_forward_length")); ff && *ff != moe_ff)
        fail(WASTE_ERR_FORMAT, "{}: {} {} differs from {} {} (llama.cpp sizes the experts by the first)", keys.what,
             key("feed_forward_length"), *ff, key("expert_feed_forward_length"), moe_ff);
    if (const uint64_t gating = keys.optional_uint(key("expert_gating_func")).value_or(0); gating != 2)
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} {}: MiniMax-M2's router is the sigmoid (2)", keys.what,
             key("expert_gating_func"), keys.find(key("expert_gating_func")) ? std::to_string(gating) : "absent");
    if (key.yarn()) fail(WASTE_ERR_UNSUPPORTED, "{}: {}: YaRN is not part of minimax-m2", keys.what, key("rope.scaling.type"));
    key.check_vocab(vocab);
    ordered_json config;
    config["architectures"] = {"MiniMaxM2ForCausalLM"};
    config["model_type"] = "minimax_m2";
    config["vocab_size"] = vocab;
    config["hidden_size"] = hidden;
    config["num_hidden_layers"] = keys.require_uint(key("block_count"));
    config["num_attention_heads"] = heads;
    config["num_key_value_heads"] = kv_heads;
    config["head_dim"] = head_dim;
    config["rotary_dim"] = keys.optional_uint(key("rope.dimension_count")).value_or(head_dim);
    config["intermediate_size"] = moe_ff;
    config["num_local_experts"] = keys.require_uint(key("expert_count"));
    config["num_experts_per_tok"] = keys.require_uint(key("expert_used_count"));
    config["scoring_func"] = "sigmoid";
    config["use_routing_bias"] = tensors.count("blk.0.exp_probs_b.bias") > 0;  // llama.cpp requires it; the engine runs without
    config["use_qk_norm"] = true;
    config["rope_theta"] = keys.optional_real(key("rope.freq_base")).value_or(10000.0);
    config["rms_norm_eps"] = keys.require_real(key("attention.layer_norm_rms_epsilon"));
    if (const auto context = keys.optional_uint(key("context_length"))) config["max_position_embeddings"] = *context;
    config["tie_word_embeddings"] = tensors.count("output.weight") == 0;
    return config;
}

// qwen35moe (llama.cpp's LLM_ARCH_QWEN35MOE, src/models/qwen35moe.cpp;
// families-2026.md §1.10): Gated DeltaNet (ssm.group_count key heads,
// ssm.time_step_rank value heads of ssm.state_size, ssm.inner_size their
// width, ssm.conv_kernel) with full attention every full_attention_interval
// layers, gated and with rope.dimension_count dims of each head rotated (its
// IMROPE sections are one position for text); every layer MoE with the
// softmax router (renormalised: norm_w fixed true) and the gated shared
// expert of expert_shared_feed_forward_length; nextn_predict_layers MTP
// blocks counted in block_count, left out.
ordered_json qwen35moe_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab) {
    const ArchKeys key{keys, "qwen35moe"};
    const auto [hidden, heads, kv_heads, head_dim] = key.gqa_heads();
    const uint64_t layers = key.layers_less_mtp();
    if (keys.find(key("attention.recurrent_layers")))
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} is not read yet (the engine reads full_attention_interval)", keys.what,
             key("attention.recurrent_layers"));
    if (key.yarn()) fail(WASTE_ERR_UNSUPPORTED, "{}: {}: YaRN is not part of qwen35moe", keys.what, key("rope.scaling.type"));
    const uint64_t state = keys.require_uint(key("ssm.state_size")), k_heads = keys.require_uint(key("ssm.group_count"));
    const uint64_t v_heads = keys.require_uint(key("ssm.time_step_rank")), inner = keys.require_uint(key("ssm.inner_size"));
    if (state == 0 || k_heads == 0 || v_heads == 0 || inner != v_heads * state)
        fail(WASTE_ERR_FORMAT, "{}: {} {} is not {} {} times {} {} (value heads of the state size)", keys.what,
             key("ssm.inner_size"), inner, key("ssm.time_step_rank"), v_heads, key("ssm.state_size"), state);
    const uint64_t rotated = keys.optional_uint(key("rope.dimension_count")).value_or(head_dim);
    key.check_vocab(vocab);
    ordered_json config;
    config["architectures"] = {"Qwen3_5MoeForCausalLM"};
    config["model_type"] = "qwen3_5_moe_text";
    config["vocab_size"] = vocab;
    config["hidden_size"] = hidden;
    config["num_hidden_layers"] = layers;
    config["num_attention_heads"] = heads;
    config["num_key_value_heads"] = kv_heads;
    config["head_dim"] = head_dim;
    config["attn_output_gate"] = true;
    config["linear_num_key_heads"] = k_heads;
    config["linear_num_value_heads"] = v_heads;
    config["linear_key_head_dim"] = state;
    config["linear_value_head_dim"] = state;
    config["linear_conv_kernel_dim"] = keys.require_uint(key("ssm.conv_kernel"));
    config["full_attention_interval"] = keys.optional_uint(key("full_attention_interval")).value_or(4);
    config["moe_intermediate_size"] = keys.require_uint(key("expert_feed_forward_length"));
    config["shared_expert_intermediate_size"] = keys.optional_uint(key("expert_shared_feed_forward_length")).value_or(0);
    config["num_experts"] = keys.require_uint(key("expert_count"));
    config["num_experts_per_tok"] = keys.require_uint(key("expert_used_count"));
    config["rope_parameters"] = {{"rope_type", "default"},
                                 {"rope_theta", keys.optional_real(key("rope.freq_base")).value_or(10000.0)},
                                 {"partial_rotary_factor", static_cast<double>(rotated) / static_cast<double>(head_dim)}};
    config["rms_norm_eps"] = keys.require_real(key("attention.layer_norm_rms_epsilon"));
    if (const auto context = keys.optional_uint(key("context_length"))) config["max_position_embeddings"] = *context;
    config["tie_word_embeddings"] = tensors.count("output.weight") == 0;
    return config;
}

// Where a release tensor's values are in the GGUF: a tensor, one expert's
// slice of a 3-D tensor, or MLA's kv_b_proj put back together from the
// per-head halves llama.cpp's converter splits it into.
struct NameMap {
    std::string gguf;
    int64_t expert = -1;      // >= 0: the expert's slice of gguf's [E, rows, cols]
    int half = 0;             // 1, 2: the first or second half of the expert's rows (ffn_gate_up_exps: gate, up)
    TensorView::Compose compose = TensorView::Compose::none;
    std::string second;       // the second tensor of a composed one
    std::vector<uint32_t> row_order, col_order;  // as TensorView's
    TensorView::Values values = TensorView::Values::as_stored;
    std::vector<int64_t> reshape;  // non-empty: the release's shape of the same values (qwen35moe's conv, shared gate)
    NameMap() = default;
    NameMap(std::string gguf_name, int64_t expert_slice = -1) : gguf(std::move(gguf_name)), expert(expert_slice) {}
    NameMap(std::string first, TensorView::Compose how, std::string second_name)
        : gguf(std::move(first)), compose(how), second(std::move(second_name)) {}
};

// The release's names of a file's tensors, and the GGUF names left out on
// purpose (multi-token-prediction layers, which the engine does not run).
struct Names {
    std::map<std::string, NameMap> map;
    int64_t first_ignored_layer = -1;  // >= 0: the tensors of blk.N. from this N on are left out
};

// A layer's routed experts: each one's slice of the 3-D ffn_*_exps stacks;
// gate and up from the halves of one ffn_gate_up_exps where the file stacks
// them so (mistral4: an expert's gate rows, then its up rows).
void add_experts(std::map<std::string, NameMap>& names, const std::set<std::string>& tensors, const std::string& hf,
                 const std::string& blk, int64_t experts) {
    const std::string gate_up = blk + "ffn_gate_up_exps.weight";
    const bool stacked = tensors.count(gate_up) != 0;
    for (int64_t e = 0; e < experts; ++e)
        for (const auto& [h, g] : {std::pair{"gate_proj", "ffn_gate_exps"}, std::pair{"up_proj", "ffn_up_exps"},
                                   std::pair{"down_proj", "ffn_down_exps"}}) {
            NameMap map{blk + g + ".weight", e};
            if (stacked && std::string_view(h) != "down_proj") {
                map.gguf = gate_up;
                map.half = std::string_view(h) == "gate_proj" ? 1 : 2;
            }
            names[fmt::format("{}experts.{}.{}.weight", hf, e, h)] = std::move(map);
        }
}

// qwen35moe's Gated DeltaNet tensors as the release holds them: llama.cpp's
// converter tiles the value heads (GGUF head p = j * Hk + kappa holds the
// release's head kappa * r + j, families-2026.md §1.11) in the v rows of
// attn_qkv and the conv, the rows of attn_gate, ssm_beta, ssm_alpha, the
// entries of ssm_a and ssm_dt and the columns of ssm_out; q and k stay. It
// stores A as -exp(A_log) and the conv as [channels, kernel].
void untile_qwen35(NameMap& map, const format::TrunkTensorSpec& spec, const format::ModelConfig& c) {
    using R = format::TrunkRole;
    const uint32_t hk = static_cast<uint32_t>(c.kda_heads), hv = static_cast<uint32_t>(c.kda_v_heads);
    const uint32_t d = static_cast<uint32_t>(c.kda_head_dim), r = hv / hk, kd = hk * d;
    const auto gguf_head = [&](uint32_t h) { return (h % r) * hk + h / r; };
    const auto heads = [&](uint32_t width, uint32_t skip) {  // `skip` leading entries, then hv heads of `width`
        std::vector<uint32_t> order(skip + hv * width);
        for (uint32_t i = 0; i < skip; ++i) order[i] = i;
        for (uint32_t h = 0; h < hv; ++h)
            for (uint32_t i = 0; i < width; ++i) order[skip + h * width + i] = skip + gguf_head(h) * width + i;
        return order;
    };
    switch (spec.role) {
        case R::gdn_qkv: map.row_order = heads(d, 2 * kd); break;
        case R::gdn_conv: map.row_order = heads(d, 2 * kd), map.reshape = spec.shape; break;
        case R::gdn_z: map.row_order = heads(d, 0); break;
        case R::gdn_b: case R::gdn_a: map.row_order = heads(1, 0); break;
        case R::gdn_dt_bias: map.col_order = heads(1, 0); break;
        case R::gdn_a_log: map.col_order = heads(1, 0), map.values = TensorView::Values::log_of_negated; break;
        case R::gdn_out: map.col_order = heads(d, 0); break;
        case R::shared_expert_gate: map.reshape = spec.shape; break;
        default: break;
    }
}

// The release's names of every trunk tensor and expert the config implies,
// from the one trunk table (format/trunk_tensors.h) and its GGUF names. An
// optional tensor is mapped when the file holds it. Composed ones: MLA's
// kv_b from attn_k_b and attn_v_b where the file has no attn_kv_b (newer
// files), gpt-oss's interleaved expert biases from ffn_{gate,up}_exps.bias.
Names table_names(const ordered_json& config, const std::set<std::string>& tensors, const std::string& what) {
    const format::ModelConfig c = format::parse_model_config(config, what + ": config");
    Names out;
    const auto no_alternatives = [](const std::string&) { return false; };
    for (const format::TrunkTensorSpec& spec : format::trunk_tensor_table(c, no_alternatives)) {
        const std::string blk = spec.layer >= 0 ? fmt::format("blk.{}.", spec.layer) : std::string();
        const std::string_view base = format::gguf_tensor_name(spec.role, c.family);
        const std::string gguf = blk + std::string(base);
        if (spec.optional && (base.empty() || !tensors.count(gguf))) continue;
        if (base.empty())
            fail(WASTE_ERR_UNSUPPORTED, "{}: the tensor {} has no GGUF name the engine reads", what, spec.name);
        if (spec.role == format::TrunkRole::mla_kv_b && !tensors.count(gguf))
            out.map[spec.name] = {blk + "attn_k_b.weight", TensorView::Compose::mla_kv_b, blk + "attn_v_b.weight"};
        else if (spec.role == format::TrunkRole::experts_gate_up_bias)  // HF's [E, 2I]: gate = [:, ::2]
            out.map[spec.name] = {gguf, TensorView::Compose::interleaved, blk + "ffn_up_exps.bias"};
        else
            out.map[spec.name] = {gguf};
        NameMap& map = out.map[spec.name];
        if (spec.values == format::TrunkValues::centred_norm) map.values = TensorView::Values::minus_one;
        if (c.family == format::Family::qwen35) untile_qwen35(map, spec, c);
    }
    for (int layer = 0; layer < c.layers; ++layer)
        if (c.is_moe_layer(layer))
            add_experts(out.map, tensors, fmt::format("model.layers.{}.", layer) + format::moe_block_prefix(c.family),
                        fmt::format("blk.{}.", layer), c.experts);
    return out;
}

// deepseek2 (llama.cpp's LLM_ARCH_DEEPSEEK2, src/models/deepseek2.cpp; it
// runs DeepSeek-V3 / R1 / V3.1 and Kimi K2): MLA over a latent of
// kv_lora_rank, q-LoRA (q_lora_rank 0: plain q), RoPE on qk_rope dims
// (rope.dimension_count, interleaved pairs), sigmoid router with a
// correction bias (exp_probs_b) and expert groups, shared experts, leading
// dense layers; nextn_predict_layers MTP layers counted in block_count.
// DeepSeek-V2's softmax gating (expert_gating_func 1, or absent as in V2
// files) is refused: the engine runs V3's.
// mistral4 (llama.cpp's LLM_ARCH_MISTRAL4, a deepseek2 subclass; families-2026.md
// §6.4) is the same with its expert_gating_func absent (softmax: Mistral 4's
// router, one group, no exp_probs_b) and gate and up stacked as
// ffn_gate_up_exps. Both read attention.temperature_scale / _length (the
// query temperature; deepseek2 files converted from Mistral's own format
// carry them).
ordered_json mla_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab,
                        std::string_view arch) {
    const bool mistral4 = arch == "mistral4";
    const ArchKeys key{keys, std::string(arch)};
    const uint64_t hidden = keys.require_uint(key("embedding_length"));
    const uint64_t heads = keys.require_uint(key("attention.head_count"));
    const uint64_t layers = key.layers_less_mtp();
    const uint64_t rope = keys.require_uint(key("rope.dimension_count"));
    // llama.cpp: key_length_mla / value_length_mla, else key_length / value_length
    const auto either = [&](std::string_view mla, std::string_view plain) {
        return keys.find(key(mla)) ? keys.require_uint(key(mla)) : keys.require_uint(key(plain));
    };
    const uint64_t k_mla = either("attention.key_length_mla", "attention.key_length");
    const uint64_t v_mla = either("attention.value_length_mla", "attention.value_length");
    if (k_mla <= rope)
        fail(WASTE_ERR_FORMAT, "{}: the key length {} leaves no dims beside the {} RoPE dims", keys.what, k_mla, rope);
    const uint64_t gating = keys.optional_uint(key("expert_gating_func")).value_or(1);
    if (gating != (mistral4 ? 1 : 2))
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} {} ({}): the engine runs {} gating ({})", keys.what,
             key("expert_gating_func"), gating, keys.find(key("expert_gating_func")) ? "its code" : "absent: softmax",
             mistral4 ? "Mistral 4's softmax" : "DeepSeek-V3's sigmoid", mistral4 ? 1 : 2);
    if (mistral4 && keys.optional_uint(key("expert_group_count")).value_or(1) > 1)
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} {}: Mistral 4's softmax router has one group", keys.what,
             key("expert_group_count"), keys.require_uint(key("expert_group_count")));
    uint64_t moe_ff = 0;
    if (keys.find(key("expert_feed_forward_length"))) {
        const format::GgufValue* v = keys.find(key("expert_feed_forward_length"));
        if (v->type == format::GgufType::array) {  // one per layer: the MoE layers' must agree
            const std::vector<int64_t>& per_layer = keys.require_integers(key("expert_feed_forward_length"));
            for (int64_t n : per_layer)
                if (n != 0 && moe_ff != 0 && static_cast<uint64_t>(n) != moe_ff)
                    fail(WASTE_ERR_UNSUPPORTED, "{}: {} differs between layers ({} and {})", keys.what,
                         key("expert_feed_forward_length"), moe_ff, n);
                else if (n > 0) moe_ff = static_cast<uint64_t>(n);
        } else {
            moe_ff = keys.require_uint(key("expert_feed_forward_length"));
        }
    }
    if (moe_ff == 0) fail(WASTE_ERR_FORMAT, "{}: the key {} is missing or 0", keys.what, key("expert_feed_forward_length"));
    key.check_vocab(vocab);
    const uint64_t q_lora = keys.optional_uint(key("attention.q_lora_rank")).value_or(0);
    if (q_lora == 0 && tensors.count("blk.0.attn_q_a.weight"))
        fail(WASTE_ERR_FORMAT, "{}: blk.0.attn_q_a.weight is there but {} is missing or 0", keys.what,
             key("attention.q_lora_rank"));
    ordered_json config;
    config["architectures"] = {mistral4 ? "Mistral4ForCausalLM" : "DeepseekV3ForCausalLM"};
    config["model_type"] = mistral4 ? "mistral4" : "deepseek_v3";
    config["vocab_size"] = vocab;
    config["hidden_size"] = hidden;
    config["num_hidden_layers"] = layers;
    config["num_attention_heads"] = heads;
    config["num_key_value_heads"] = heads;
    config["q_lora_rank"] = q_lora > 0 ? ordered_json(q_lora) : ordered_json(nullptr);
    config["kv_lora_rank"] = keys.require_uint(key("attention.kv_lora_rank"));
    config["qk_nope_head_dim"] = k_mla - rope;
    config["qk_rope_head_dim"] = rope;
    config["v_head_dim"] = v_mla;
    const uint64_t dense = keys.optional_uint(key("leading_dense_block_count")).value_or(0);
    config["intermediate_size"] = dense > 0 ? keys.require_uint(key("feed_forward_length")) : keys.optional_uint(key("feed_forward_length")).value_or(moe_ff);
    config["moe_intermediate_size"] = moe_ff;
    config["n_routed_experts"] = keys.require_uint(key("expert_count"));
    config["n_shared_experts"] = keys.require_uint(key("expert_shared_count"));
    config["num_experts_per_tok"] = keys.require_uint(key("expert_used_count"));
    config["n_group"] = keys.optional_uint(key("expert_group_count")).value_or(1);
    config["topk_group"] = keys.optional_uint(key("expert_group_used_count")).value_or(1);
    config["routed_scaling_factor"] = keys.optional_real(key("expert_weights_scale")).value_or(1.0);
    config["norm_topk_prob"] = keys.optional_flag(key("expert_weights_norm")).value_or(false);
    if (!mistral4) {
        config["scoring_func"] = "sigmoid";
        config["topk_method"] = "noaux_tc";
    }
    config["first_k_dense_replace"] = dense;
    if (const auto beta = keys.optional_real(key("attention.temperature_scale")); beta && *beta != 0.0) {
        config["attn_temperature_scale"] = *beta;
        config["attn_temperature_length"] = keys.require_uint(key("attention.temperature_length"));
    }
    config["rope_theta"] = keys.optional_real(key("rope.freq_base")).value_or(10000.0);
    config["rope_interleave"] = true;  // llama.cpp runs deepseek2 with NORM (interleaved) RoPE
    config["rms_norm_eps"] = keys.require_real(key("attention.layer_norm_rms_epsilon"));
    if (const auto context = keys.optional_uint(key("context_length"))) config["max_position_embeddings"] = *context;
    if (std::optional<ordered_json> yarn = key.yarn()) {
        // llama.cpp's converter stores 0.1 · mscale_all_dim and its loader
        // divides by 0.1 again (in f32); it reads mscale as mscale_all_dim.
        if (keys.find(key("rope.scaling.yarn_log_multiplier"))) {
            const float log_mul = static_cast<float>(keys.require_real(key("rope.scaling.yarn_log_multiplier"))) / 0.1f;
            (*yarn)["mscale"] = log_mul;
            (*yarn)["mscale_all_dim"] = log_mul;
        }
        config["rope_scaling"] = std::move(*yarn);
    }
    config["tie_word_embeddings"] = tensors.count("output.weight") == 0;
    return config;
}

ordered_json deepseek2_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab) {
    return mla_config(keys, tensors, vocab, "deepseek2");
}
ordered_json mistral4_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab) {
    return mla_config(keys, tensors, vocab, "mistral4");
}

// gpt-oss (llama.cpp's LLM_ARCH_OPENAI_MOE, src/models/openai-moe.cpp):
// GQA with q/k/v/o biases and a sink logit per head (attn_sinks), NEOX RoPE
// over the whole head (YaRN as DeepSeek's keys), a sliding window on the
// layers a sliding_window_pattern of p marks (layer i slides when
// i % p < p - 1; llama.cpp's default p = 2: the even layers, as HF's
// layer_types), every layer MoE with the router's bias, the clamped SwiGLU
// (limit 7, fixed in llama.cpp) with per-expert biases. YaRN's truncate is
// false, as every gpt-oss release's config.json says (llama.cpp always
// truncates: python/README.md lists the difference).
ordered_json gpt_oss_config(const format::GgufFile& keys, const std::set<std::string>& tensors, int64_t vocab) {
    const ArchKeys key{keys, "gpt-oss"};
    const auto [hidden, heads, kv_heads, head_dim] = key.gqa_heads();
    if (const uint64_t rot = keys.optional_uint(key("rope.dimension_count")).value_or(head_dim); rot != head_dim)
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} {}: gpt-oss rotates the whole head ({})", keys.what, key("rope.dimension_count"), rot, head_dim);
    const uint64_t layers = keys.require_uint(key("block_count"));
    uint64_t period = 2;
    if (const format::GgufValue* v = keys.find(key("attention.sliding_window_pattern"))) {
        if (v->type == format::GgufType::array)
            fail(WASTE_ERR_UNSUPPORTED, "{}: {} as a per-layer array is not read", keys.what, key("attention.sliding_window_pattern"));
        period = keys.require_uint(key("attention.sliding_window_pattern"));
    }
    const double theta = keys.optional_real(key("rope.freq_base")).value_or(10000.0);
    if (const auto swa_theta = keys.optional_real(key("rope.freq_base_swa")); swa_theta && *swa_theta != theta)
        fail(WASTE_ERR_UNSUPPORTED, "{}: {} {} differs from rope.freq_base {} (one RoPE base for every layer)", keys.what,
             key("rope.freq_base_swa"), *swa_theta, theta);
    key.check_vocab(vocab);
    ordered_json config;
    config["architectures"] = {"GptOssForCausalLM"};
    config["model_type"] = "gpt_oss";
    config["vocab_size"] = vocab;
    config["hidden_size"] = hidden;
    config["num_hidden_layers"] = layers;
    config["num_attention_heads"] = heads;
    config["num_key_value_heads"] = kv_heads;
    config["head_dim"] = head_dim;
    config["intermediate_size"] = keys.require_uint(key("expert_feed_forward_length"));
    config["num_local_experts"] = keys.require_uint(key("expert_count"));
    config["num_experts_per_tok"] = keys.require_uint(key("expert_used_count"));
    config["sliding_window"] = keys.require_uint(key("attention.sliding_window"));
    ordered_json types = ordered_json::array();
    for (uint64_t i = 0; i < layers; ++i)
        types.push_back(period == 0 || i % period < period - 1 ? "sliding_attention" : "full_attention");
    config["layer_types"] = std::move(types);
    config["swiglu_limit"] = 7.0;
    config["attention_bias"] = true;
    config["rope_theta"] = theta;
    config["rms_norm_eps"] = keys.require_real(key("attention.layer_norm_rms_epsilon"));
    if (const auto context = keys.optional_uint(key("context_length"))) config["max_position_embeddings"] = *context;
    if (std::optional<ordered_json> yarn = key.yarn()) {
        (*yarn)["truncate"] = false;
        config["rope_scaling"] = std::move(*yarn);
    }
    config["tie_word_embeddings"] = tensors.count("output.weight") == 0;
    return config;
}

struct Architecture {
    std::string_view name;  // general.architecture
    ordered_json (*config)(const format::GgufFile&, const std::set<std::string>& tensors, int64_t vocab);
    bool mtp_layers_after;  // blk.N from num_hidden_layers on are multi-token-prediction layers, left out
};
constexpr Architecture architectures[] = {{"qwen3moe", qwen3moe_config, false},
                                          {"deepseek2", deepseek2_config, true},
                                          {"gpt-oss", gpt_oss_config, false},
                                          {"minimax-m2", minimax_m2_config, false},
                                          {"mistral4", mistral4_config, true},
                                          {"qwen35moe", qwen35moe_config, true}};

// ---- the vocabulary ------------------------------------------------------

// A string key's text, refused naming it where it is not UTF-8 (GGUF's
// strings are; JSON, where the vocabulary and its chat tokens go, must be).
void require_utf8(const format::GgufFile& keys, std::string_view text, const std::string& what) {
    const size_t bad = text::find_invalid_utf8(text);
    if (bad != text::utf8_valid)
        fail(WASTE_ERR_FORMAT, "{}: {} is not valid UTF-8 (byte {} of {})", keys.what, what, bad, text.size());
}

std::string token_at(const std::vector<std::string>& tokens, std::optional<uint64_t> id) {
    return id && *id < tokens.size() ? tokens[*id] : std::string();
}

// tokenizer.ggml.* of a "gpt2" vocabulary as the release's tokenizer.json:
// the normal tokens (byte-level strings) are the BPE vocab, the merges its
// merges, control tokens special added tokens and user-defined ones
// non-special added tokens (convert_hf_to_gguf.py writes a release's added
// tokens so: CONTROL when special, USER_DEFINED otherwise, their content
// raw); unused tokens (the padding up to vocab_size) are left out.
std::string gpt2_tokenizer_json(const format::GgufFile& keys, int64_t vocab) {
    const std::string& pre_name = keys.require_string("tokenizer.ggml.pre");
    const auto& table = gguf_pre_tokenizers();
    const auto pre = std::find_if(table.begin(), table.end(), [&](const GgufPreTokenizer& p) { return p.name == pre_name; });
    if (pre == table.end()) {
        std::string known;
        for (const GgufPreTokenizer& p : table) known += (known.empty() ? "" : ", ") + std::string(p.name);
        fail(WASTE_ERR_UNSUPPORTED, "{}: tokenizer.ggml.pre \"{}\" is not a pre-tokenizer the engine reproduces ({})",
             keys.what, pre_name, known);
    }
    const std::vector<std::string>& tokens = keys.require_strings("tokenizer.ggml.tokens");
    if (tokens.size() > static_cast<uint64_t>(vocab))
        fail(WASTE_ERR_FORMAT, "{}: tokenizer.ggml.tokens has {} tokens, more than the {} rows of token_embd.weight",
             keys.what, tokens.size(), vocab);
    for (size_t id = 0; id < tokens.size(); ++id) require_utf8(keys, tokens[id], fmt::format("token {}", id));
    const std::vector<std::string>& merges = keys.require_strings("tokenizer.ggml.merges");
    for (size_t i = 0; i < merges.size(); ++i) require_utf8(keys, merges[i], fmt::format("merge {}", i));
    std::vector<int64_t> types(tokens.size(), TokenType::normal);
    if (keys.find("tokenizer.ggml.token_type")) {
        types = keys.require_integers("tokenizer.ggml.token_type");
        if (types.size() != tokens.size())
            fail(WASTE_ERR_FORMAT, "{}: tokenizer.ggml.token_type has {} entries for {} tokens", keys.what, types.size(),
                 tokens.size());
    }
    ordered_json bpe_vocab = ordered_json::object(), added = ordered_json::array();
    std::map<std::string_view, size_t> seen;
    for (size_t id = 0; id < tokens.size(); ++id) {
        const int64_t type = types[id];
        if (type == TokenType::unused) continue;
        if (type == TokenType::control || type == TokenType::user_defined) {
            added.push_back({{"id", id}, {"content", tokens[id]}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", false}, {"special", type == TokenType::control}});
            continue;
        }
        if (type != TokenType::normal && type != TokenType::byte)
            fail(WASTE_ERR_UNSUPPORTED, "{}: token {} has tokenizer.ggml.token_type {} (a gpt2 vocabulary has normal, "
                 "control, user-defined and unused tokens)", keys.what, id, type);
        const auto [it, fresh] = seen.emplace(tokens[id], id);
        if (!fresh)
            fail(WASTE_ERR_FORMAT, "{}: tokens {} and {} are both \"{}\"", keys.what, it->second, id, tokens[id]);
        bpe_vocab[tokens[id]] = id;
    }
    ordered_json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                          {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                          {"byte_fallback", false}, {"ignore_merges", pre->ignore_merges}};
    model["vocab"] = std::move(bpe_vocab);
    model["merges"] = merges;
    ordered_json tokenizer = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}};
    tokenizer["added_tokens"] = std::move(added);
    tokenizer["normalizer"] = pre->nfc ? ordered_json{{"type", "NFC"}} : ordered_json(nullptr);
    ordered_json splits = ordered_json::array();
    for (std::string_view regex : pre->regexes)
        splits.push_back({{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}});
    splits.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
    tokenizer["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", std::move(splits)}};
    tokenizer["post_processor"] = nullptr;
    tokenizer["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
    tokenizer["model"] = std::move(model);
    return tokenizer.dump();
}

TokenizerFiles gguf_tokenizer(const format::GgufFile& keys, int64_t vocab) {
    TokenizerFiles files;
    files.chat_source = "none";
    const std::string model = keys.find("tokenizer.ggml.model") ? keys.require_string("tokenizer.ggml.model") : "none";
    if (model == "none") return files;
    if (model != "gpt2")
        fail(WASTE_ERR_UNSUPPORTED, "{}: tokenizer.ggml.model \"{}\" is not read yet (gpt2, none)", keys.what, model);
    files.tokenizer_json = gpt2_tokenizer_json(keys, vocab);
    // The engine's own reader, as for a release's tokenizer.json.
    const auto tokenizer = text::parse_tokenizer_json(*files.tokenizer_json, keys.what + " (its vocabulary as tokenizer.json)");
    if (tokenizer->vocab_size() > vocab)
        fail(WASTE_ERR_FORMAT, "{}: token id {} is not below the {} rows of token_embd.weight", keys.what,
             tokenizer->vocab_size() - 1, vocab);
    if (keys.find("tokenizer.chat_template")) {
        files.chat_template = keys.require_string("tokenizer.chat_template");
        require_utf8(keys, *files.chat_template, "tokenizer.chat_template");
        const std::vector<std::string>& tokens = keys.require_strings("tokenizer.ggml.tokens");
        const ordered_json chat_tokens = {
            {"bos_token", token_at(tokens, keys.optional_uint("tokenizer.ggml.bos_token_id"))},
            {"eos_token", token_at(tokens, keys.optional_uint("tokenizer.ggml.eos_token_id"))}};
        files.chat_tokens_json = chat_tokens.dump(1) + "\n";
    }
    return files;
}

// generation_config.json from the file: every end-of-generation id it names
// (eos, eot, eom) and the sampling general.sampling.* recommends.
std::optional<std::string> gguf_generation_config(const format::GgufFile& keys, int64_t vocab) {
    ordered_json config = ordered_json::object();
    std::vector<uint64_t> eos;
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"})
        if (const auto id = keys.optional_uint(key)) {
            if (*id >= static_cast<uint64_t>(vocab))
                fail(WASTE_ERR_FORMAT, "{}: {} {} is not below the vocabulary's {} ids", keys.what, key, *id, vocab);
            if (std::find(eos.begin(), eos.end(), *id) == eos.end()) eos.push_back(*id);
        }
    if (const auto bos = keys.optional_uint("tokenizer.ggml.bos_token_id")) {
        if (*bos >= static_cast<uint64_t>(vocab))
            fail(WASTE_ERR_FORMAT, "{}: tokenizer.ggml.bos_token_id {} is not below the vocabulary's {} ids", keys.what, *bos, vocab);
        config["bos_token_id"] = *bos;
    }
    if (!eos.empty()) config["eos_token_id"] = eos;
    static constexpr std::pair<const char*, const char*> sampling[] = {
        {"general.sampling.temp", "temperature"}, {"general.sampling.top_k", "top_k"},
        {"general.sampling.top_p", "top_p"}, {"general.sampling.min_p", "min_p"}};
    for (const auto& [key, name] : sampling)
        if (keys.find(key)) {
            if (std::string_view(name) == "top_k") config[name] = keys.require_uint(key);
            else config[name] = keys.require_real(key);
        }
    if (config.empty()) return std::nullopt;
    return config.dump(1) + "\n";
}

// ---- split sets ----------------------------------------------------------


constexpr uint64_t max_split_parts = 1024;  // the largest releases ship in tens

std::string split_suffix(uint64_t part, uint64_t count) {  // llama.cpp's llama_split_path
    return fmt::format("-{:05}-of-{:05}.gguf", part + 1, count);
}

// The file, and when its split.count says it is the first of a set
// (NAME-00001-of-0000N.gguf, as llama.cpp's gguf-split and quantiser name
// them), every other part: each present, each saying it is that part of
// that many, the tensors together as many as split.tensors.count.
std::vector<format::GgufFile> open_parts(const std::string& path) {
    std::vector<format::GgufFile> parts;
    parts.push_back(format::read_gguf(path));
    const format::GgufFile& keys = parts[0];
    const uint64_t count = keys.optional_uint("split.count").value_or(1);
    if (count <= 1) return parts;
    if (count > max_split_parts)
        fail(WASTE_ERR_UNSUPPORTED, "{}: split.count {} is more parts than the {} read", path, count, max_split_parts);
    const uint64_t number = keys.require_uint("split.no");
    if (number != 0)
        fail(WASTE_ERR_FORMAT, "{}: split.no {}: this is part {} of {}; give the first ({})", path, number, number + 1,
             count, split_suffix(0, count).substr(1));
    const std::string first = split_suffix(0, count);
    if (path.size() <= first.size() || !path.ends_with(first))
        fail(WASTE_ERR_FORMAT, "{}: the first of {} parts must be named NAME{} (to find the others)", path, count, first);
    const std::string prefix = path.substr(0, path.size() - first.size());
    const uint64_t declared = keys.require_uint("split.tensors.count");  // (keys is parts[0], which the loop moves)
    uint64_t tensors = parts[0].tensors.size();
    for (uint64_t i = 1; i < count; ++i) {
        const std::string part_path = prefix + split_suffix(i, count);
        std::error_code error;
        if (!fs::is_regular_file(platform::utf8_path(part_path), error))
            fail(WASTE_ERR_IO, "{}: part {} of {}, {}, is missing", path, i + 1, count, part_path);
        format::GgufFile part = format::read_gguf(part_path);
        const uint64_t says_no = part.require_uint("split.no"), says_count = part.require_uint("split.count");
        if (says_no != i || says_count != count)
            fail(WASTE_ERR_FORMAT, "{}: split.no {} and split.count {} make it part {} of {}, not part {} of {} (a part of another set?)",
                 part_path, says_no, says_count, says_no + 1, says_count, i + 1, count);
        tensors += part.tensors.size();
        parts.push_back(std::move(part));
    }
    if (declared != tensors)
        fail(WASTE_ERR_FORMAT, "{}: split.tensors.count {} but the {} parts hold {} tensors", path, declared, count, tensors);
    return parts;
}

// ---- the weights ---------------------------------------------------------

class GgufWeights final : public WeightSource {
public:
    GgufWeights(std::vector<format::GgufFile> parts, std::map<std::string, TensorView> views)
        : parts_(std::move(parts)), views_(std::move(views)) {
        for (const format::GgufFile& part : parts_) {
            names_.push_back(platform::utf8_text(platform::utf8_path(part.what).filename()));
            files_.emplace_back(part.what, false);
        }
    }

    std::vector<std::string> names() const override {
        std::vector<std::string> out;
        for (const auto& [name, view] : views_) out.push_back(name);
        return out;
    }
    bool has(const std::string& name) const override { return views_.count(name) != 0; }
    SourceTensor info(const std::string& name) const override {
        const TensorView& v = view(name);
        return {v.shape, fmt::format("GGUF {}", parts_[v.part].tensors[v.tensor].type.name), {names_[v.part]}};
    }
    void read_rows(const std::string& name, uint64_t first, uint64_t count, std::span<float> out) const override {
        const TensorView& v = view(name);
        const format::GgufTensor& t = parts_[v.part].tensors[v.tensor];
        const uint64_t cols = static_cast<uint64_t>(v.shape.back());
        uint64_t rows = 1;
        for (size_t d = 0; d + 1 < v.shape.size(); ++d) rows *= static_cast<uint64_t>(v.shape[d]);
        if (first > rows || count > rows - first || out.size() != count * cols)
            fail(WASTE_ERR_INTERNAL, "{}: rows {}+{} of {} ({} values) asked of {} rows", parts_[v.part].what, first,
                 count, name, out.size(), rows);
        if (v.compose == TensorView::Compose::none && v.row_order.empty() && v.col_order.empty() &&
            v.values == TensorView::Values::as_stored)
            return decode(v.part, t, v.first_row + first, count, out.data());
        if (v.compose == TensorView::Compose::none) {  // a rearranged tensor, row by row
            std::vector<float> row(cols);
            for (uint64_t r = 0; r < count; ++r) {
                const uint64_t at = v.row_order.empty() ? first + r : v.row_order[first + r];
                decode(v.part, t, v.first_row + at, 1, row.data());
                float* dst = out.data() + r * cols;
                for (uint64_t c = 0; c < cols; ++c) dst[c] = row[v.col_order.empty() ? c : v.col_order[c]];
                for (uint64_t c = 0; c < cols; ++c)
                    if (v.values == TensorView::Values::minus_one) dst[c] -= 1.0f;
                    else if (v.values == TensorView::Values::log_of_negated) {
                        if (!(dst[c] < 0.0f && std::isfinite(dst[c])))
                            fail(WASTE_ERR_FORMAT, "{}: {} holds {} at {}; -exp(A_log) is negative", parts_[v.part].what,
                                 t.name, dst[c], c);
                        dst[c] = std::log(-dst[c]);
                    }
            }
            return;
        }
        const format::GgufTensor& second = parts_[v.second_part].tensors[v.second_tensor];
        if (v.compose == TensorView::Compose::interleaved) {
            const uint64_t half = cols / 2;
            std::vector<float> a(half), b(half);
            for (uint64_t r = 0; r < count; ++r) {
                decode(v.part, t, first + r, 1, a.data());
                decode(v.second_part, second, first + r, 1, b.data());
                for (uint64_t c = 0; c < half; ++c) {
                    out[r * cols + 2 * c] = a[c];
                    out[r * cols + 2 * c + 1] = b[c];
                }
            }
            return;
        }
        const uint64_t per_head = v.nope + v.v_dim;
        std::vector<float> k_head(v.kv_lora * v.nope), v_head(v.v_dim * v.kv_lora);
        uint64_t loaded = UINT64_MAX;
        for (uint64_t r = 0; r < count; ++r) {
            const uint64_t row = first + r, head = row / per_head, j = row % per_head;
            if (head != loaded) {
                decode(v.part, t, head * v.kv_lora, v.kv_lora, k_head.data());
                decode(v.second_part, second, head * v.v_dim, v.v_dim, v_head.data());
                loaded = head;
            }
            float* dst = out.data() + r * v.kv_lora;
            if (j < v.nope)
                for (uint64_t c = 0; c < v.kv_lora; ++c) dst[c] = k_head[c * v.nope + j];
            else
                std::copy_n(v_head.data() + (j - v.nope) * v.kv_lora, v.kv_lora, dst);
        }
    }
    std::vector<std::string> shards() const override { return names_; }

private:
    // Rows [first, first + count) of GGUF tensor t (in `part`), decoded into out.
    void decode(size_t part, const format::GgufTensor& t, uint64_t first, uint64_t count, float* out) const {
        const uint64_t cols = t.shape[0];
        const uint64_t row_bytes = cols / t.type.block_elements * t.type.block_bytes;
        constexpr uint64_t max_read = uint64_t{8} << 20;  // bytes read at once
        const uint64_t rows_per_read = std::max<uint64_t>(1, max_read / row_bytes);
        std::vector<uint8_t> bytes;
        for (uint64_t done = 0; done < count;) {
            const uint64_t n = std::min(rows_per_read, count - done);
            bytes.resize(n * row_bytes);
            files_[part].read_at(t.offset + (first + done) * row_bytes, bytes);
            for (uint64_t r = 0; r < n; ++r)
                format::dequantize_ggml_row(t.type, bytes.data() + r * row_bytes, out + (done + r) * cols, cols);
            done += n;
        }
    }
    const TensorView& view(const std::string& name) const {
        const auto it = views_.find(name);
        if (it == views_.end()) fail(WASTE_ERR_FORMAT, "{}: no tensor {}", parts_[0].what, name);
        return it->second;
    }
    std::vector<format::GgufFile> parts_;  // the files of the set, each named by its what
    std::vector<std::string> names_;  // the parts' file names (the source's shards)
    std::map<std::string, TensorView> views_;
    std::vector<platform::DirectFile> files_;  // the parts, open for reading
};

// Each name the architecture gives, bound to its GGUF tensor with the shape
// it must have; a tensor the file holds beyond them is refused.
std::map<std::string, TensorView> bind_tensors(const std::vector<format::GgufFile>& parts, const std::string& what,
                                               const Names& names, const ordered_json& config) {
    std::map<std::string, std::pair<size_t, size_t>> index;  // name -> (part, tensor)
    for (size_t p = 0; p < parts.size(); ++p)
        for (size_t i = 0; i < parts[p].tensors.size(); ++i) {
            const std::string& name = parts[p].tensors[i].name;
            if (!index.emplace(name, std::pair{p, i}).second)
                fail(WASTE_ERR_FORMAT, "{}: tensor {} is in {} and in {}", what, name, parts[index[name].first].what,
                     parts[p].what);
        }
    std::set<std::string> used;
    std::map<std::string, TensorView> views;
    int64_t experts = 0;
    for (const char* key : {"num_experts", "n_routed_experts", "num_local_experts"})
        if (config.contains(key)) experts = config[key].get<int64_t>();
    // A tensor by GGUF name: its place, checked decodable, and its PyTorch shape.
    const auto find = [&](const std::string& gguf_name, std::vector<int64_t>& shape) {
        const auto it = index.find(gguf_name);
        if (it == index.end()) fail(WASTE_ERR_FORMAT, "{}: the tensor {} is missing", what, gguf_name);
        const format::GgufTensor& t = parts[it->second.first].tensors[it->second.second];
        if (!t.type.decodable)
            fail(WASTE_ERR_UNSUPPORTED, "{}: tensor {} is {}, a type the engine does not decode yet (docs/GGUF.md)",
                 what, t.name, t.type.name);
        shape.assign(t.shape.rbegin(), t.shape.rend());  // ggml's ne lists the row first
        used.insert(gguf_name);
        return it->second;
    };
    for (const auto& [name, map] : names.map) {
        TensorView view;
        std::vector<int64_t> shape;
        std::tie(view.part, view.tensor) = find(map.gguf, shape);
        if (map.expert >= 0) {
            if (shape.size() != 3 || shape[0] != experts)
                fail(WASTE_ERR_FORMAT, "{}: tensor {} has shape [{}], expected [{}, rows, cols] (one matrix per expert)",
                     what, map.gguf, fmt::join(shape, ", "), experts);
            view.first_row = static_cast<uint64_t>(map.expert) * static_cast<uint64_t>(shape[1]);
            shape.erase(shape.begin());
            if (map.half > 0) {
                if (shape[0] % 2 != 0)
                    fail(WASTE_ERR_FORMAT, "{}: tensor {} has {} rows an expert, expected gate and up (even)", what,
                         map.gguf, shape[0]);
                shape[0] /= 2;
                if (map.half == 2) view.first_row += static_cast<uint64_t>(shape[0]);
            }
        }
        view.compose = map.compose;
        view.row_order = map.row_order;
        view.col_order = map.col_order;
        view.values = map.values;
        if (!map.reshape.empty()) {
            int64_t have = 1, want = 1;
            for (int64_t n : shape) have *= n;
            for (int64_t n : map.reshape) want *= n;
            if (have != want)
                fail(WASTE_ERR_FORMAT, "{}: tensor {} has shape [{}], expected {} values ([{}])", what, map.gguf,
                     fmt::join(shape, ", "), want, fmt::join(map.reshape, ", "));
            shape = map.reshape;
        }
        uint64_t rows_here = 1;
        for (size_t d = 0; d + 1 < shape.size(); ++d) rows_here *= static_cast<uint64_t>(shape[d]);
        if ((!map.row_order.empty() && map.row_order.size() != rows_here) ||
            (!map.col_order.empty() && map.col_order.size() != static_cast<uint64_t>(shape.back())))
            fail(WASTE_ERR_FORMAT, "{}: tensor {} has shape [{}], not the heads its config gives", what, map.gguf,
                 fmt::join(shape, ", "));
        if (map.compose == TensorView::Compose::mla_kv_b) {
            std::vector<int64_t> v_shape;
            std::tie(view.second_part, view.second_tensor) = find(map.second, v_shape);
            // attn_k_b [heads, kv_lora, nope], attn_v_b [heads, v, kv_lora]
            if (shape.size() != 3 || v_shape.size() != 3 || shape[0] != v_shape[0] || shape[1] != v_shape[2])
                fail(WASTE_ERR_FORMAT, "{}: {} [{}] and {} [{}] are not [heads, kv_lora, nope] and [heads, v, kv_lora]",
                     what, map.gguf, fmt::join(shape, ", "), map.second, fmt::join(v_shape, ", "));
            view.kv_lora = static_cast<uint64_t>(shape[1]);
            view.nope = static_cast<uint64_t>(shape[2]);
            view.v_dim = static_cast<uint64_t>(v_shape[1]);
            shape = {shape[0] * (shape[2] + v_shape[1]), shape[1]};
        } else if (map.compose == TensorView::Compose::interleaved) {
            std::vector<int64_t> second_shape;
            std::tie(view.second_part, view.second_tensor) = find(map.second, second_shape);
            if (shape.size() != 2 || second_shape != shape)
                fail(WASTE_ERR_FORMAT, "{}: {} [{}] and {} [{}] must be matrices of one shape", what, map.gguf,
                     fmt::join(shape, ", "), map.second, fmt::join(second_shape, ", "));
            shape[1] *= 2;
        }
        view.shape = std::move(shape);
        views.emplace(name, std::move(view));
    }
    for (const auto& [name, at] : index) {
        if (used.count(name)) continue;
        int64_t layer = -1;
        if (names.first_ignored_layer >= 0 && name.starts_with("blk.")) layer = std::atoll(name.c_str() + 4);
        if (layer < 0 || layer < names.first_ignored_layer)
            fail(WASTE_ERR_UNSUPPORTED, "{}: tensor {} is not part of the architecture as the engine reads it", what, name);
    }
    return views;
}

}  // namespace

const std::vector<GgufPreTokenizer>& gguf_pre_tokenizers() {
    // The regexes of the releases' tokenizer.json (llama.cpp's
    // src/llama-vocab.cpp quotes each beside its own rewrite of it).
    static const std::vector<GgufPreTokenizer> table = {
        {"qwen2",
         {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         true, false},
        // Qwen3.5 / 3.6: qwen2's with a letter's combining marks kept with it
        {"qwen35",
         {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         true, false},
        {"gpt-4o",
         {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         false, true},
        // Mistral's tekken (Mistral Nemo, Small 4): gpt-4o's without the contractions, one digit a piece
        {"tekken",
         {R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         false, true},
        {"deepseek-v3",
         {R"(\p{N}{1,3})", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
          R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
         false, false},
    };
    return table;
}

namespace {

// open_gguf_release; without the vocabulary (tokenizer and generation
// config left empty) when only the weights are wanted.
GgufRelease open_release(const std::string& path, bool with_vocabulary) {
    std::vector<format::GgufFile> parts = open_parts(path);
    const format::GgufFile& keys = parts[0];
    const std::string& arch = keys.require_string("general.architecture");
    const Architecture* architecture = nullptr;
    for (const Architecture& a : architectures)
        if (a.name == arch) architecture = &a;
    if (!architecture)
        fail(WASTE_ERR_UNSUPPORTED, "{}: general.architecture \"{}\" is not one the engine reads from GGUF yet (qwen3moe, deepseek2, gpt-oss, minimax-m2, mistral4, qwen35moe)",
             path, arch);
    const format::GgufTensor* embed = nullptr;
    for (const format::GgufFile& part : parts)
        if (!embed) embed = part.tensor("token_embd.weight");
    if (!embed || embed->shape.size() != 2)
        fail(WASTE_ERR_FORMAT, "{}: token_embd.weight is missing or not a matrix", path);
    const int64_t vocab = static_cast<int64_t>(embed->shape[1]);

    std::set<std::string> tensors;
    for (const format::GgufFile& part : parts)
        for (const format::GgufTensor& t : part.tensors) tensors.insert(t.name);
    GgufRelease release;
    release.config = architecture->config(keys, tensors, vocab);
    if (const auto bos = keys.optional_uint("tokenizer.ggml.bos_token_id")) release.config["bos_token_id"] = *bos;
    if (const auto eos = keys.optional_uint("tokenizer.ggml.eos_token_id")) release.config["eos_token_id"] = *eos;
    if (with_vocabulary) {
        release.tokenizer = gguf_tokenizer(keys, vocab);
        release.generation_config = gguf_generation_config(keys, vocab);
    }
    Names names = table_names(release.config, tensors, path);
    if (architecture->mtp_layers_after) names.first_ignored_layer = release.config["num_hidden_layers"].get<int64_t>();
    std::map<std::string, TensorView> views = bind_tensors(parts, path, names, release.config);
    release.weights = std::make_unique<GgufWeights>(std::move(parts), std::move(views));
    return release;
}

}  // namespace

GgufRelease open_gguf_release(const std::string& path) { return open_release(path, true); }

std::unique_ptr<WeightSource> open_gguf_weights(const std::string& path) { return open_release(path, false).weights; }

}  // namespace waste::convert
