#include "convert/kimi_layout.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "platform/error.h"

namespace waste::convert {
namespace {

using format::LayerKind;
using Shape = std::vector<int64_t>;

std::string shard_of(const WeightSource& source, const std::string& name) {
    const std::vector<std::string> shards = source.info(name).shards;
    return shards.empty() ? std::string("?") : shards.front();
}

class Planner {
public:
    Planner(const WeightSource& source, const std::string& prefix) : source_(source), prefix_(prefix) {}

    // A required tensor of exactly this shape.
    void need(ConvertUnit& unit, const std::string& name, Shape shape) {
        const std::string full = prefix_ + name;
        if (!source_.has(full))
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} is missing ({} needs it)", full, unit.id);
        check_shape(full, shape);
        unit.trunk.push_back({full, std::move(shape)});
        used_.insert(full);
    }
    // An optional tensor: taken when present.
    bool maybe(ConvertUnit& unit, const std::string& name, Shape shape) {
        if (!source_.has(prefix_ + name)) return false;
        need(unit, name, std::move(shape));
        return true;
    }
    bool has(const std::string& name) const { return source_.has(prefix_ + name); }
    // A tensor whose shape is free as long as it holds at least `min_elements` (A_log).
    void need_elements(ConvertUnit& unit, const std::string& name, int64_t min_elements) {
        const std::string full = prefix_ + name;
        if (!source_.has(full))
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} is missing ({} needs it)", full, unit.id);
        const Shape shape = source_.info(full).shape;
        int64_t count = 1;
        for (int64_t d : shape) count *= d;
        if (shape.empty() || shape.size() > 4 || count < min_elements)
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} in {} has shape [{}], expected at least {} values", full,
                 shard_of(source_, full), fmt::join(shape, ", "), min_elements);
        unit.trunk.push_back({full, shape});
        used_.insert(full);
    }
    void need_expert(const std::string& name, const Shape& shape, const std::string& what) {
        if (!source_.has(name)) fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} is missing ({})", name, what);
        check_shape(name, shape);
        used_.insert(name);
    }
    const std::set<std::string>& used() const { return used_; }
    const std::string& prefix() const { return prefix_; }

private:
    void check_shape(const std::string& full, const Shape& want) {
        const Shape got = source_.info(full).shape;
        if (got != want)
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} in {} has shape [{}], the config implies [{}]", full,
                 shard_of(source_, full), fmt::join(got, ", "), fmt::join(want, ", "));
    }

    const WeightSource& source_;
    std::string prefix_;
    std::set<std::string> used_;
};

void plan_kda(Planner& p, ConvertUnit& u, const std::string& a, const format::ModelConfig& c) {
    const int64_t H = c.hidden, nh = c.kda_heads, D = c.kda_head_dim, C = nh * D;
    p.need(u, a + "q_proj.weight", {C, H});
    p.need(u, a + "k_proj.weight", {C, H});
    p.need(u, a + "v_proj.weight", {C, H});
    p.need(u, a + "b_proj.weight", {nh, H});
    p.need(u, a + "f_a_proj.weight", {D, H});
    p.need(u, a + "f_b_proj.weight", {C, D});
    if (p.has(a + "g_proj.weight")) {
        p.need(u, a + "g_proj.weight", {C, H});
    } else {
        p.need(u, a + "g_a_proj.weight", {D, H});
        p.need(u, a + "g_b_proj.weight", {C, D});
    }
    p.need(u, a + "o_proj.weight", {H, C});
    for (const char* conv : {"q_conv1d.weight", "k_conv1d.weight", "v_conv1d.weight"})
        p.need(u, a + conv, {C, 1, c.conv_kernel});
    p.need_elements(u, a + "A_log", nh);  // one per head, possibly padded to head_dim (container-v0 §3)
    p.need(u, a + "dt_bias", {C});
    p.need(u, a + "o_norm.weight", {D});
}

void plan_mla(Planner& p, ConvertUnit& u, const std::string& a, const format::ModelConfig& c) {
    const int64_t H = c.hidden, nh = c.heads, q_head = c.qk_nope + c.qk_rope;
    if (c.q_lora > 0) {
        p.need(u, a + "q_a_proj.weight", {c.q_lora, H});
        p.need(u, a + "q_a_layernorm.weight", {c.q_lora});
        p.need(u, a + "q_b_proj.weight", {nh * q_head, c.q_lora});
    } else {
        p.need(u, a + "q_proj.weight", {nh * q_head, H});
    }
    p.need(u, a + "kv_a_proj_with_mqa.weight", {c.kv_lora + c.qk_rope, H});
    p.need(u, a + "kv_a_layernorm.weight", {c.kv_lora});
    p.need(u, a + "kv_b_proj.weight", {nh * (c.qk_nope + c.v_head), c.kv_lora});
    if (c.mla_output_gate) p.need(u, a + "g_proj.weight", {nh * c.v_head, H});
    p.need(u, a + "o_proj.weight", {H, nh * c.v_head});
}

// GQA (other-families.md §4, §7): Qwen3's per-head q/k norms; GLM-4.5's
// q/k/v biases (attention_bias) and q/k norms only with use_qk_norm.
void plan_gqa(Planner& p, ConvertUnit& u, const std::string& a, const format::ModelConfig& c) {
    const int64_t H = c.hidden, d = c.head_dim, q_width = static_cast<int64_t>(c.heads) * d,
                  kv_width = static_cast<int64_t>(c.kv_heads) * d;
    p.need(u, a + "q_proj.weight", {q_width, H});
    p.need(u, a + "k_proj.weight", {kv_width, H});
    p.need(u, a + "v_proj.weight", {kv_width, H});
    p.need(u, a + "o_proj.weight", {H, q_width});
    if (c.qkv_bias) {
        p.need(u, a + "q_proj.bias", {q_width});
        p.need(u, a + "k_proj.bias", {kv_width});
        p.need(u, a + "v_proj.bias", {kv_width});
    }
    if (c.qk_norm) {
        p.need(u, a + "q_norm.weight", {d});
        p.need(u, a + "k_norm.weight", {d});
    }
    if (c.o_bias) p.need(u, a + "o_proj.bias", {H});
    if (c.sinks) p.need(u, a + "sinks", {c.heads});
}

void plan_experts(Planner& p, ConvertUnit& u, const std::string& m, const format::ModelConfig& c) {
    const int64_t I = c.moe_intermediate, lat = c.expert_input();
    const std::string base = p.prefix() + m + "experts.";
    // Kimi's own names (w1 gate, w3 up, w2 down), or the DeepSeek-style ones.
    const bool w_names = p.has(m + "experts.0.w1.weight");
    const char* kinds[3] = {w_names ? "w1" : "gate_proj", w_names ? "w3" : "up_proj", w_names ? "w2" : "down_proj"};
    const Shape shapes[3] = {{I, lat}, {I, lat}, {lat, I}};
    for (int e = 0; e < c.experts; ++e) {
        std::array<std::string, 3> names;
        for (int k = 0; k < 3; ++k) {
            names[static_cast<size_t>(k)] = fmt::format("{}{}.{}.weight", base, e, kinds[k]);
            p.need_expert(names[static_cast<size_t>(k)], shapes[k], fmt::format("expert {} of layer {}", e, u.layer));
        }
        u.experts.push_back(std::move(names));
    }
}

}  // namespace

std::string kimi_arch(const nlohmann::json& config) {
    const std::string type = config.contains("model_type") && config["model_type"].is_string()
                                 ? config["model_type"].get<std::string>()
                                 : std::string();
    if (type == "kimi_linear" || type == "kimi_k3" || type == "deepseek_v3" || type == "kimi_k2" || type == "qwen3_moe" ||
        type == "glm4_moe" || type == "gpt_oss")
        return type;
    std::string architectures = "none";
    if (config.contains("architectures")) architectures = config["architectures"].dump();
    fail(WASTE_ERR_UNSUPPORTED,
         "config.json: model_type \"{}\" (architectures {}) is not an architecture the converter knows "
         "(kimi_linear, kimi_k3, deepseek_v3, kimi_k2, qwen3_moe, glm4_moe, gpt_oss)",
         type, architectures);
}

ConvertPlan plan_kimi_conversion(const nlohmann::json& text_config, const WeightSource& source) {
    ConvertPlan plan;
    plan.arch = kimi_arch(text_config);
    plan.model = format::parse_model_config(text_config, "config.json");
    const format::ModelConfig& c = plan.model;
    const std::vector<std::string> names = source.names();
    const bool prefixed = std::any_of(names.begin(), names.end(),
                                      [](const std::string& n) { return n.starts_with("language_model.model."); });
    plan.tensor_prefix = prefixed ? "language_model." : "";
    Planner p(source, plan.tensor_prefix);
    const int64_t H = c.hidden;

    ConvertUnit embed;
    embed.id = "embed";
    p.need(embed, "model.embed_tokens.weight", {c.vocab, H});
    plan.units.push_back(std::move(embed));

    for (int layer = 0; layer < c.layers; ++layer) {
        ConvertUnit u;
        u.id = fmt::format("layer {}", layer);
        u.layer = layer;
        const std::string lx = fmt::format("model.layers.{}.", layer);
        p.need(u, lx + "input_layernorm.weight", {H});
        p.need(u, lx + "post_attention_layernorm.weight", {H});
        const LayerKind kind = c.layer_kinds[static_cast<size_t>(layer)];
        if (kind == LayerKind::kda) plan_kda(p, u, lx + "self_attn.", c);
        else if (kind == LayerKind::gqa) plan_gqa(p, u, lx + "self_attn.", c);
        else plan_mla(p, u, lx + "self_attn.", c);
        if (!c.is_moe_layer(layer)) {
            const std::string m = lx + "mlp.";
            p.need(u, m + "gate_proj.weight", {c.intermediate, H});
            p.need(u, m + "up_proj.weight", {c.intermediate, H});
            p.need(u, m + "down_proj.weight", {H, c.intermediate});
        } else if (c.family == format::Family::gpt_oss) {
            // router.{weight, bias}; the experts' biases as trunk tensors (the
            // engine de-interleaves gate/up at bind); the experts' matrices are
            // the checkpoint source's per-expert view of the fused MXFP4 tensors
            // (checkpoint_source.cpp)
            const std::string m = lx + "mlp.";
            p.need(u, m + "router.weight", {c.experts, H});
            p.need(u, m + "router.bias", {c.experts});
            p.need(u, m + "experts.gate_up_proj_bias", {c.experts, 2ll * c.moe_intermediate});
            p.need(u, m + "experts.down_proj_bias", {c.experts, H});
            u.moe = true;
            plan_experts(p, u, m, c);
        } else {
            const std::string m = lx + format::moe_block_prefix(c.family);
            p.need(u, m + "gate.weight", {c.experts, H});
            if (c.router == format::RouterKind::sigmoid_grouped) p.maybe(u, m + "gate.e_score_correction_bias", {c.experts});
            if (c.shared_experts > 0) {
                const int64_t shared = static_cast<int64_t>(c.moe_intermediate) * c.shared_experts;
                p.need(u, m + "shared_experts.gate_proj.weight", {shared, H});
                p.need(u, m + "shared_experts.up_proj.weight", {shared, H});
                p.need(u, m + "shared_experts.down_proj.weight", {H, shared});
            }
            if (c.latent > 0) {
                p.need(u, m + "routed_expert_down_proj.weight", {c.latent, H});
                p.need(u, m + "routed_expert_up_proj.weight", {H, c.latent});
                p.maybe(u, m + "routed_expert_norm.weight", {c.latent});
            }
            u.moe = true;
            plan_experts(p, u, m, c);
        }
        if (c.attn_res_block > 0)
            for (const char* kind : {"self_attention_res", "mlp_res"}) {
                p.need(u, lx + kind + "_norm.weight", {H});
                p.need(u, lx + kind + "_proj.weight", {H});
            }
        plan.units.push_back(std::move(u));
    }

    ConvertUnit final_unit;
    final_unit.id = "final";
    if (c.attn_res_block > 0) {
        p.need(final_unit, "model.output_attn_res_norm.weight", {H});
        p.need(final_unit, "model.output_attn_res_proj.weight", {H});
    }
    p.need(final_unit, "model.norm.weight", {H});
    if (!c.tie_embeddings) p.need(final_unit, "lm_head.weight", {c.vocab, H});
    plan.units.push_back(std::move(final_unit));

    // DeepSeek-V3's (and GLM-4.5's) multi-token-prediction layers
    // (model.layers.61.* after 61 layers; num_nextn_predict_layers) are not part of the next-token model:
    // skipped and reported, never an error.
    const int mtp_layers = text_config.contains("num_nextn_predict_layers") &&
                                   text_config["num_nextn_predict_layers"].is_number_integer()
                               ? std::clamp(text_config["num_nextn_predict_layers"].get<int>(), 0, 64)
                               : 0;
    auto is_mtp = [&](const std::string& name) {
        for (int k = 0; k < mtp_layers; ++k)
            if (name.starts_with(fmt::format("{}model.layers.{}.", plan.tensor_prefix, c.layers + k))) return true;
        return false;
    };
    for (const std::string& name : names) {
        if (p.used().count(name)) continue;
        if (is_mtp(name)) {
            plan.skipped.push_back(name);
            ++plan.skipped_mtp;
            continue;
        }
        const bool text = name.starts_with(plan.tensor_prefix + "model.") || name == plan.tensor_prefix + "lm_head.weight";
        if (text && (plan.tensor_prefix.empty() || name.starts_with(plan.tensor_prefix)))
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} in {} is not part of a {} model with this config",
                 name, shard_of(source, name), plan.arch);
        plan.skipped.push_back(name);
    }
    return plan;
}

}  // namespace waste::convert
