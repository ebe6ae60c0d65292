// checkpoint_source.cpp — the converter's WeightSource over a safetensors
// checkpoint directory (checkpoint.h), and convert_checkpoint().
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
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
};

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
        for (const std::string& name : ck_.names()) {
            const TensorInfo& t = ck_.info(name);
            if (nested) {
                add_nested_view(name, t);
                continue;
            }
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
        if (name == "lm_head.weight") return void(views_[name] = {name, 0, 1, t.shape});
        if (!name.starts_with(nested_text)) return;  // the vision tower, its projector, an MTP block
        const std::string text = "model." + name.substr(nested_text.size());
        if (!add_expert_views(name, text, t, /*interleaved=*/false)) views_[text] = {name, 0, 1, t.shape};
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
                views_[fmt::format("{}{}.gate_proj.weight", base, e)] = {fused, at, step, {rows / 2, cols}};
                views_[fmt::format("{}{}.up_proj.weight", base, e)] = {fused, at + up, step, {rows / 2, cols}};
            } else {
                views_[fmt::format("{}{}.down_proj.weight", base, e)] = {fused, at, 1, {rows, cols}};
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
