// vision_layout.cpp — see vision_layout.h.
#include "convert/vision_layout.h"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "format/vision_config.h"
#include "platform/error.h"
#include "platform/direct_file.h"
#include "platform/utf8_path.h"

namespace waste::convert {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;
using Shape = std::vector<int64_t>;

constexpr uint64_t max_preprocessor_bytes = uint64_t{1} << 20;

// An integer key of vision_config, its default when absent, within [lo, hi]
// (the engine's own bounds, vision.md §1.1: the shapes below are built from
// these, so they are bounded before anything is multiplied).
int64_t config_int(const ordered_json& config, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
    if (!config.contains(key)) return fallback;
    const ordered_json& v = config[key];
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        fail(WASTE_ERR_FORMAT, "config.json: vision_config.{} is {}, expected an integer in [{}, {}]", key, v.dump(), lo, hi);
    return v.get<int64_t>();
}

// The release's preprocessor_config.json keys that vision.json carries: from
// its `media_proc_cfg` (K3), or the file's top level.
void add_preprocessor(ordered_json& vision, const std::string& source_dir, std::vector<std::string>& warnings) {
    const fs::path path = platform::utf8_path(source_dir) / "preprocessor_config.json";
    std::error_code error;
    if (source_dir.empty() || !fs::is_regular_file(path, error)) {
        vision["image_mean"] = {0.5, 0.5, 0.5};
        vision["image_std"] = {0.5, 0.5, 0.5};
        warnings.push_back(fmt::format("{} is missing: vision.json gets image_mean [0.5, 0.5, 0.5] and image_std [0.5, 0.5, 0.5] "
                                       "(K3's own values)",
                                       platform::utf8_text(path)));
        return;
    }
    const ordered_json file = ordered_json::parse(platform::read_small_file(platform::utf8_text(path), max_preprocessor_bytes), nullptr, false);
    if (file.is_discarded() || !file.is_object()) fail(WASTE_ERR_FORMAT, "{}: not a JSON object", platform::utf8_text(path));
    const ordered_json& cfg = file.contains("media_proc_cfg") && file["media_proc_cfg"].is_object() ? file["media_proc_cfg"] : file;
    for (const char* key : {"patch_size", "in_patch_limit", "patch_limit_on_one_side"})
        if (cfg.contains(key)) vision[key] = cfg[key];
    for (const char* key : {"image_mean", "image_std"}) {
        if (!cfg.contains(key)) {
            vision[key] = {0.5, 0.5, 0.5};
            warnings.push_back(fmt::format("{} has no {}: vision.json gets [0.5, 0.5, 0.5]", platform::utf8_text(path), key));
            continue;
        }
        const ordered_json& v = cfg[key];
        bool ok = v.is_array() && v.size() == 3;
        for (size_t i = 0; ok && i < 3; ++i) ok = v[i].is_number();
        if (!ok) fail(WASTE_ERR_FORMAT, "{}: {} is {}, expected 3 numbers (R, G, B)", platform::utf8_text(path), key, v.dump());
        vision[key] = v;
    }
}

class TensorCheck {
public:
    TensorCheck(const WeightSource& source, ConvertUnit& unit) : source_(source), unit_(unit) {}
    // A required tensor whose release shape is one of `accepted`, stored as `stored`.
    void need(const std::string& name, const std::vector<Shape>& accepted, Shape stored) {
        if (!source_.has(name)) fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} is missing (the vision tower needs it)", name);
        const SourceTensor info = source_.info(name);
        bool ok = false;
        for (const Shape& shape : accepted) ok = ok || info.shape == shape;
        if (!ok)
            fail(WASTE_ERR_FORMAT, "checkpoint: tensor {} in {} has shape [{}], vision_config implies [{}]", name,
                 info.shards.empty() ? std::string("?") : info.shards.front(), fmt::join(info.shape, ", "),
                 fmt::join(accepted.front(), ", "));
        unit_.trunk.push_back({name, std::move(stored)});
    }

private:
    const WeightSource& source_;
    ConvertUnit& unit_;
};

}  // namespace

VisionPlan plan_vision_conversion(const ordered_json& release_config, int64_t text_hidden, const WeightSource& source,
                                  const std::string& source_dir) {
    VisionPlan plan;
    const bool has_config = release_config.contains("vision_config") && release_config["vision_config"].is_object();
    const bool has_tower = source.has("vision_tower.patch_embed.proj.weight");
    if (!has_config || !has_tower) {
        plan.note = !has_config ? "config.json has no vision_config" : "the checkpoint has no vision_tower.patch_embed.proj.weight";
        return plan;
    }
    const ordered_json& config = release_config["vision_config"];
    if (!release_config.contains("media_placeholder_token_id") || !release_config["media_placeholder_token_id"].is_number_integer())
        fail(WASTE_ERR_FORMAT, "config.json: a vision tower needs an integer media_placeholder_token_id (the image pad's id)");

    const int64_t D = config_int(config, "vt_hidden_size", 1024, 1, int64_t{1} << 20);
    const int64_t heads = config_int(config, "vt_num_attention_heads", 12, 1, int64_t{1} << 16);
    const int64_t Q = config_int(config, "qkv_hidden_size", 1536, 1, int64_t{1} << 20);
    const int64_t I = config_int(config, "vt_intermediate_size", 4096, 1, int64_t{1} << 22);
    const int64_t blocks = config_int(config, "vt_num_hidden_layers", 27, 1, 256);
    const int64_t pos_h = config_int(config, "init_pos_emb_height", 64, 1, 65536);
    const int64_t pos_w = config_int(config, "init_pos_emb_width", 64, 1, 65536);
    const int64_t TH = config_int(config, "text_hidden_size", text_hidden, 1, int64_t{1} << 20);
    const int64_t patch = config_int(config, "patch_size", 14, 14, 14);
    if (Q % heads != 0) fail(WASTE_ERR_FORMAT, "config.json: vision_config.qkv_hidden_size {} is not a multiple of {} heads", Q, heads);
    if (TH != text_hidden)
        fail(WASTE_ERR_FORMAT, "config.json: vision_config.text_hidden_size {} differs from the text model's hidden_size {}", TH,
             text_hidden);

    plan.present = true;
    plan.unit.id = "vision";
    TensorCheck t(source, plan.unit);
    // The tensors and their shapes as the engine uses them: format's one
    // table. The release keeps the conv kernel 4-D and the grid 3-D; both
    // are stored flattened by use.
    format::VisionConfig shapes;
    shapes.hidden = static_cast<int>(D);
    shapes.heads = static_cast<int>(heads);
    shapes.qkv = static_cast<int>(Q);
    shapes.intermediate = static_cast<int>(I);
    shapes.blocks = static_cast<int>(blocks);
    shapes.pos_h = static_cast<int>(pos_h);
    shapes.pos_w = static_cast<int>(pos_w);
    shapes.text_hidden = static_cast<int>(TH);
    for (const format::VisionTensorSpec& spec : format::vision_tensor_specs(shapes)) {
        const Shape stored = spec.norm ? Shape{spec.rows} : Shape{spec.rows, spec.cols};
        if (spec.name == "vision_tower.patch_embed.proj.weight") t.need(spec.name, {{D, 3, patch, patch}, stored}, stored);
        else if (spec.name == "vision_tower.patch_embed.pos_emb.weight") t.need(spec.name, {{pos_h, pos_w, D}, stored}, stored);
        else t.need(spec.name, {stored}, stored);
    }

    // vision.json: the release's vision_config without its `_` keys, plus
    // what the engine needs from elsewhere (vision.md §1.1).
    for (const auto& [key, value] : config.items())
        if (!key.starts_with("_")) plan.vision_json[key] = value;
    plan.vision_json["text_hidden_size"] = TH;
    plan.vision_json["media_placeholder_token_id"] = release_config["media_placeholder_token_id"];
    plan.vision_json["max_patches"] = vision_max_patches;
    add_preprocessor(plan.vision_json, source_dir, plan.warnings);
    return plan;
}

}  // namespace waste::convert
