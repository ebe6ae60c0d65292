// checkpoint_source.cpp — the converter's WeightSource over a safetensors
// checkpoint directory (checkpoint.h), and convert_checkpoint().
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convert/checkpoint.h"
#include "convert/checkpoint_source.h"
#include "convert/converter.h"
#include "convert/gguf_source.h"
#include "format/gguf.h"
#include "platform/error.h"
#include "platform/utf8_path.h"

namespace waste::convert {
namespace {

// gpt-oss keeps each layer's experts fused (other-families.md §8):
// mlp.experts.gate_up_proj_blocks / _scales, MXFP4 [E, 2I, groups, 16] ->
// logical [E, 2I, H] with rows the output features, gate and up INTERLEAVED
// (gate = rows 2j, up = rows 2j+1; HF's gate_up_proj [E, H, 2I] is this
// transposed, its gate = [..., ::2]); mlp.experts.down_proj [E, H, I]. The
// source shows them as the per-expert matrices every other family has
// (mlp.experts.E.{gate,up,down}_proj.weight, [out, in]) and hides the fused
// names, so the planner, the converter and verify read experts one way.
struct ExpertView {
    std::string fused;
    uint64_t first_row = 0;  // of the fused [E * rows, cols]
    uint64_t step = 1;       // 2: every other row (gate or up)
    std::vector<int64_t> shape;
    std::vector<uint64_t> rows;  // non-empty: the view's rows are these rows of `fused` (Qwen3-Next's ungrouping)
};

// Qwen3-Next (families-2026.md §1.5): each GDN layer's in_proj_qkvz [2Kd + 2Vd,
// H] holds per key head kappa [q (D) | k (D) | v (r·D) | z (r·D)] and
// in_proj_ba [2Hv, H] per key head [b (r) | a (r)], value head kappa·r + m
// being the m-th of its group; shown as Qwen3.5's in_proj_qkv ([all q | all
// k | all v]), in_proj_z, in_proj_b and in_proj_a, the rows they are.
struct GroupedHeads {
    uint64_t k_heads = 0, v_heads = 0, dim = 0;
    std::vector<uint64_t> qkv() const {
        const uint64_t r = v_heads / k_heads, group = 2 * dim + 2 * r * dim;
        std::vector<uint64_t> out;
        for (uint64_t part : {0, 1})  // q, then k
            for (uint64_t h = 0; h < k_heads; ++h)
                for (uint64_t i = 0; i < dim; ++i) out.push_back(h * group + part * dim + i);
        for (uint64_t j = 0; j < v_heads; ++j)
            for (uint64_t i = 0; i < dim; ++i) out.push_back(j / r * group + 2 * dim + j % r * dim + i);
        return out;
    }
    std::vector<uint64_t> z() const {
        const uint64_t r = v_heads / k_heads, group = 2 * dim + 2 * r * dim;
        std::vector<uint64_t> out;
        for (uint64_t j = 0; j < v_heads; ++j)
            for (uint64_t i = 0; i < dim; ++i) out.push_back(j / r * group + 2 * dim + r * dim + j % r * dim + i);
        return out;
    }
    std::vector<uint64_t> ba(bool a) const {
        const uint64_t r = v_heads / k_heads;
        std::vector<uint64_t> out;
        for (uint64_t j = 0; j < v_heads; ++j) out.push_back(j / r * 2 * r + (a ? r : 0) + j % r);
        return out;
    }
};

// The grouping of a Qwen3-Next config (its linear_* keys), or nothing for another model.
std::optional<GroupedHeads> qwen3_next_heads(const Checkpoint& ck) {
    const nlohmann::json& c = ck.config();
    if (!c.contains("model_type") || c["model_type"] != "qwen3_next") return std::nullopt;
    const auto number = [&](const char* key) {
        const auto it = c.find(key);
        if (it == c.end() || !it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > 4096)
            fail_format("config.json: {} must be an integer from 1 to 4096 for qwen3_next", key);
        return it->get<uint64_t>();
    };
    GroupedHeads g{number("linear_num_key_heads"), number("linear_num_value_heads"), number("linear_key_head_dim")};
    if (g.v_heads % g.k_heads != 0 || number("linear_value_head_dim") != g.dim)
        fail_format("config.json: qwen3_next needs linear_num_value_heads a multiple of linear_num_key_heads and "
                    "equal key and value head dims");
    return g;
}

// The multimodal releases whose text model sits under "model.language_model."
// (shown as "model."; lm_head stays; the vision tower, its projector and
// Qwen3.5's MTP block "mtp.*" are left out): Mistral 4 (families-2026.md §6,
// a Mistral3ForConditionalGeneration) and Qwen3.5 / 3.6 (§1,
// Qwen3_5MoeForConditionalGeneration). Each layer's experts may be stacked
// as transformers v5 keeps them: mlp.experts.gate_up_proj [E, 2I, H] (gate
// the first I rows of an expert, up the next I) and mlp.experts.down_proj
// [E, H, I]; shown as per-expert matrices like gpt-oss's.
constexpr std::string_view nested_text = "model.language_model.";
bool nested_text_model(const Checkpoint& ck) {
    const nlohmann::json& config = ck.config();
    if (!config.contains("model_type") || !config["model_type"].is_string()) return false;
    const std::string type = config["model_type"];
    return type == "mistral4" || type == "qwen3_5_moe" || type == "qwen3_5_moe_text";
}

class CheckpointSource final : public WeightSource {
public:
    explicit CheckpointSource(const Checkpoint& checkpoint) : ck_(checkpoint) {
        const bool nested = nested_text_model(ck_);
        const std::optional<GroupedHeads> grouped = qwen3_next_heads(ck_);
        for (const std::string& name : ck_.names()) {
            const TensorInfo& t = ck_.info(name);
            if (nested) {
                add_nested_view(name, t);
                continue;
            }
            if (grouped && add_ungrouped_views(name, t, *grouped)) continue;
            if (t.encoding != WeightEncoding::mxfp4 || t.shape.size() != 3) continue;
            add_expert_views(name, name, t, /*interleaved=*/true);
        }
    }
    std::vector<std::string> names() const override {
        if (views_.empty()) return ck_.names();  // every family but gpt-oss: the checkpoint's own order
        std::vector<std::string> out;
        for (const std::string& n : ck_.names())
            if (!fused_.count(n)) out.push_back(n);
        for (const auto& [n, view] : views_) out.push_back(n);
        return out;
    }
    bool has(const std::string& name) const override {
        return views_.count(name) || (ck_.has(name) && !fused_.count(name));
    }
    SourceTensor info(const std::string& name) const override {
        const auto view = views_.find(name);
        SourceTensor out = tensor_info(view == views_.end() ? name : view->second.fused);
        if (view != views_.end()) out.shape = view->second.shape;
        return out;
    }
    void read_rows(const std::string& name, uint64_t first, uint64_t count, std::span<float> out) const override {
        const auto it = views_.find(name);
        if (it == views_.end()) return ck_.read_f32_rows(name, first, count, out);
        const ExpertView& v = it->second;
        const uint64_t cols = static_cast<uint64_t>(v.shape[1]);
        if (!v.rows.empty()) {  // listed rows, read a consecutive run at a time
            for (uint64_t r = 0; r < count;) {
                uint64_t run = 1;
                while (r + run < count && v.rows[first + r + run] == v.rows[first + r] + run) ++run;
                ck_.read_f32_rows(v.fused, v.rows[first + r], run, out.subspan(r * cols, run * cols));
                r += run;
            }
            return;
        }
        if (v.step == 1) return ck_.read_f32_rows(v.fused, v.first_row + first, count, out);
        // every other row: read the span once, keep ours
        std::vector<float> rows(static_cast<size_t>(count * v.step * cols));
        ck_.read_f32_rows(v.fused, v.first_row + first * v.step, count * v.step - (v.step - 1), std::span<float>(rows.data(), (count * v.step - (v.step - 1)) * cols));
        for (uint64_t r = 0; r < count; ++r)
            std::copy_n(rows.data() + r * v.step * cols, cols, out.data() + r * cols);
    }
    std::vector<std::string> shards() const override {
        std::vector<std::string> out;
        for (const ShardInfo& s : ck_.shards()) out.push_back(s.file);
        return out;
    }
    void release_shard(const std::string& shard) const override { ck_.release_shard(shard); }
    bool shard_reclaimed(const std::string& shard) const override { return ck_.shard_file(shard).is_reclaimed(); }

private:
    // A nested release's tensor: the text model's renamed, its stacked experts split, the rest hidden.
    void add_nested_view(const std::string& name, const TensorInfo& t) {
        fused_.insert(name);
        if (name == "lm_head.weight") return void(views_[name] = {name, 0, 1, t.shape, {}});
        if (!name.starts_with(nested_text)) return;  // the vision tower, its projector, an MTP block
        const std::string text = "model." + name.substr(nested_text.size());
        if (!add_expert_views(name, text, t, /*interleaved=*/false)) views_[text] = {name, 0, 1, t.shape, {}};
    }

    // Qwen3-Next's grouped in_proj_qkvz / in_proj_ba, shown as Qwen3.5's four
    // projections (GroupedHeads). False for any other tensor.
    bool add_ungrouped_views(const std::string& name, const TensorInfo& t, const GroupedHeads& g) {
        const bool qkvz = name.ends_with("linear_attn.in_proj_qkvz.weight"), ba = name.ends_with("linear_attn.in_proj_ba.weight");
        if (!qkvz && !ba) return false;
        const uint64_t rows = qkvz ? 2 * g.k_heads * g.dim + 2 * g.v_heads * g.dim : 2 * g.v_heads;
        if (t.shape.size() != 2 || static_cast<uint64_t>(t.shape[0]) != rows)
            fail_format("checkpoint: {} has shape [{}], expected [{}, hidden_size] (the config's heads)", name,
                        fmt::join(t.shape, ", "), rows);
        const std::string base = name.substr(0, name.size() - (qkvz ? 19 : 17));  // "...linear_attn."
        const int64_t cols = t.shape[1];
        const auto view = [&](const char* shown, std::vector<uint64_t> list) {
            const int64_t n = static_cast<int64_t>(list.size());
            views_[base + shown] = {name, 0, 1, {n, cols}, std::move(list)};
        };
        if (qkvz) {
            view("in_proj_qkv.weight", g.qkv());
            view("in_proj_z.weight", g.z());
        } else {
            view("in_proj_b.weight", g.ba(false));
            view("in_proj_a.weight", g.ba(true));
        }
        fused_.insert(name);
        return true;
    }

    // A fused expert tensor `fused`, shown as `shown` (...mlp.experts.gate_up_proj
    // [E, 2I, H] or ...mlp.experts.down_proj [E, H, I]), as each expert's
    // matrices: gate and up interleaved row by row (gpt-oss) or an expert's
    // gate rows then its up rows (Mistral 4, Qwen3.5). False for any other tensor.
    bool add_expert_views(const std::string& fused, const std::string& shown, const TensorInfo& t, bool interleaved) {
        const bool gate_up = shown.ends_with("mlp.experts.gate_up_proj"), down = shown.ends_with("mlp.experts.down_proj");
        if (!gate_up && !down) return false;
        if (t.shape.size() != 3 || (gate_up && t.shape[1] % 2 != 0))
            fail_format("checkpoint: {} has shape [{}], expected [experts, {}, {}]{}", fused, fmt::join(t.shape, ", "),
                        gate_up ? "2 * moe_intermediate_size" : "hidden_size", gate_up ? "hidden_size" : "moe_intermediate_size",
                        gate_up ? (interleaved ? " with gate and up interleaved" : " with gate and up stacked") : "");
        const std::string base = shown.substr(0, shown.size() - (gate_up ? 12 : 9));  // "...mlp.experts."
        const int64_t experts = t.shape[0], rows = t.shape[1], cols = t.shape[2];
        for (int64_t e = 0; e < experts; ++e) {
            const uint64_t at = static_cast<uint64_t>(e * rows);
            if (gate_up) {
                const uint64_t up = interleaved ? 1 : static_cast<uint64_t>(rows / 2), step = interleaved ? 2 : 1;
                views_[fmt::format("{}{}.gate_proj.weight", base, e)] = {fused, at, step, {rows / 2, cols}, {}};
                views_[fmt::format("{}{}.up_proj.weight", base, e)] = {fused, at + up, step, {rows / 2, cols}, {}};
            } else {
                views_[fmt::format("{}{}.down_proj.weight", base, e)] = {fused, at, 1, {rows, cols}, {}};
            }
        }
        fused_.insert(fused);
        return true;
    }

    SourceTensor tensor_info(const std::string& name) const {
        const TensorInfo& t = ck_.info(name);
        SourceTensor out;
        out.shape = t.shape;
        out.storage = std::string(encoding_name(t.encoding)) + " " + dtype_name(t.dtype);
        out.shards.push_back(t.shard);
        for (const std::string& shard : t.part_shards)
            if (std::find(out.shards.begin(), out.shards.end(), shard) == out.shards.end()) out.shards.push_back(shard);
        return out;
    }

    const Checkpoint& ck_;
    std::map<std::string, ExpertView> views_;
    std::set<std::string> fused_;
};

}  // namespace

std::unique_ptr<WeightSource> checkpoint_source(const Checkpoint& checkpoint) {
    return std::make_unique<CheckpointSource>(checkpoint);
}

nlohmann::ordered_json read_release_config(const std::string& source_dir) {
    const std::filesystem::path config_path = platform::utf8_path(source_dir) / "config.json";
    // Key order kept: the manifest holds config.json verbatim.
    std::ifstream in(config_path);
    if (!in) fail(WASTE_ERR_IO, "cannot open {}", platform::utf8_text(config_path));
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(in, nullptr, false);
    if (config.is_discarded() || !config.is_object())
        fail(WASTE_ERR_FORMAT, "{}: not a JSON object", platform::utf8_text(config_path));
    return config;
}

nlohmann::json convert_checkpoint(const std::string& source_dir, const std::string& out_dir,
                                  const ConvertOptions& options) {
    if (format::has_gguf_magic(source_dir)) {
        GgufRelease release = open_gguf_release(source_dir);
        return convert_release(*release.weights, release.config,
                               ReleaseFiles{std::move(release.tokenizer), std::move(release.generation_config)}, out_dir,
                               options);
    }
    const nlohmann::ordered_json config = read_release_config(source_dir);
    // Shards a previous run of this conversion reclaimed are opened from the
    // headers it recorded; any other missing shard is still refused.
    const Checkpoint checkpoint = Checkpoint::open(platform::utf8_path(source_dir), recorded_reclaimed_shards(out_dir));
    const CheckpointSource source(checkpoint);
    return convert_source(source, config, source_dir, out_dir, options);
}

}  // namespace waste::convert
