#include "convert/kimi_layout.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "format/families.h"
#include "format/trunk_tensors.h"
#include "platform/error.h"

namespace waste::convert {
namespace {

using Shape = std::vector<int64_t>;

std::string shard_of(const WeightSource& source, const std::string& name) {
    const std::vector<std::string> shards = source.info(name).shards;
    return shards.empty() ? std::string("?") : shards.front();
}

class Planner {
public:
    Planner(const WeightSource& source, const std::string& prefix) : source_(source), prefix_(prefix) {}

    // A trunk tensor of the table: a required one must be there with exactly
    // its shape (or, `at_least`, any shape holding enough values); an optional
    // one is taken when present.
    void take(ConvertUnit& unit, const format::TrunkTensorSpec& spec) {
        const std::string full = prefix_ + spec.name;
        if (!source_.has(full)) {
            if (spec.optional) return;
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} is missing ({} needs it)", full, unit.id);
        }
        const Shape got = source_.info(full).shape;
        if (spec.at_least) {
            int64_t count = 1;
            for (int64_t d : got) count *= d;
            if (got.empty() || got.size() > 4 || count < spec.elements())
                fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} in {} has shape [{}], expected at least {} values", full,
                     shard_of(source_, full), fmt::join(got, ", "), spec.elements());
        } else {
            check_shape(full, spec.shape);
        }
        unit.trunk.push_back({full, got});
        used_.insert(full);
    }
    bool has(const std::string& name) const { return source_.has(prefix_ + name); }
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

// The routed experts of a MoE layer: Kimi's own names (w1 gate, w3 up, w2
// down) or the DeepSeek-style ones; gpt-oss's are the checkpoint source's
// per-expert view of its fused MXFP4 tensors (checkpoint_source.cpp).
void plan_experts(Planner& p, ConvertUnit& u, const std::string& m, const format::ModelConfig& c) {
    const int64_t I = c.moe_intermediate, lat = c.expert_input();
    const std::string base = p.prefix() + m + "experts.";
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
    if (format::family_of_model_type(type)) return type;
    std::string architectures = "none";
    if (config.contains("architectures")) architectures = config["architectures"].dump();
    fail(WASTE_ERR_UNSUPPORTED,
         "config.json: model_type \"{}\" (architectures {}) is not an architecture the converter knows ({})", type,
         architectures, format::known_model_types());
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

    // Units in the table's order: the embedding, each layer (its trunk
    // tensors, then its expert bank), the final tensors.
    const std::vector<format::TrunkTensorSpec> table =
        format::trunk_tensor_table(c, [&](const std::string& name) { return p.has(name); });
    auto unit_for = [&](const format::TrunkTensorSpec& spec) -> ConvertUnit& {
        const std::string id = spec.layer >= 0 ? fmt::format("layer {}", spec.layer)
                               : spec.role == format::TrunkRole::embed ? "embed"
                                                                        : "final";
        if (plan.units.empty() || plan.units.back().id != id) {
            ConvertUnit u;
            u.id = id;
            u.layer = spec.layer;
            plan.units.push_back(std::move(u));
        }
        return plan.units.back();
    };
    for (const format::TrunkTensorSpec& spec : table) p.take(unit_for(spec), spec);
    for (ConvertUnit& u : plan.units)
        if (u.layer >= 0 && c.is_moe_layer(u.layer)) {
            u.moe = true;
            plan_experts(p, u, fmt::format("model.layers.{}.", u.layer) + format::moe_block_prefix(c.family), c);
        }

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
