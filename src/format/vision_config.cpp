#include "format/vision_config.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "platform/error.h"
#include "platform/utf8_path.h"
#include "platform/direct_file.h"

namespace waste::format {
namespace {

using nlohmann::json;

// An integer key in [low, high], `fallback` when absent (nullopt: required).
int64_t integer_key(const json& object, const char* key, int64_t low, int64_t high, std::optional<int64_t> fallback,
                    const std::string& where) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
        if (!fallback) fail_format("{}: required key {} is missing", where, key);
        return *fallback;
    }
    if (!it->is_number_integer()) fail_format("{}.{}: expected an integer, got {}", where, key, it->dump());
    const int64_t value = it->is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(it->get<uint64_t>(), INT64_MAX))
                                                   : it->get<int64_t>();
    if (value < low || value > high) fail_format("{}.{}: {} is out of range [{}, {}]", where, key, value, low, high);
    return value;
}

// image_mean / image_std: three finite numbers (std also > 0).
std::array<float, 3> channel_triple(const json& object, const char* key, bool positive, const std::string& where) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return {0.5f, 0.5f, 0.5f};
    if (!it->is_array() || it->size() != 3)
        fail_format("{}.{}: expected 3 numbers (R, G, B), got {}", where, key, it->dump());
    std::array<float, 3> out{};
    for (size_t c = 0; c < 3; ++c) {
        const json& v = (*it)[c];
        const double value = v.is_number() ? v.get<double>() : NAN;
        if (!std::isfinite(value) || std::fabs(value) > 1e6 || (positive && !(value > 0)))
            fail_format("{}.{}[{}]: {} is not a finite number{}", where, key, c, v.dump(), positive ? " above 0" : "");
        out[c] = static_cast<float>(value);
    }
    return out;
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

}  // namespace

VisionConfig parse_vision_config(const json& object, const ModelConfig& text, const std::string& where) {
    if (!object.is_object()) fail_format("{}: expected a JSON object", where);
    VisionConfig c;
    c.hidden = static_cast<int>(integer_key(object, "vt_hidden_size", 1, 1 << 20, 1024, where));
    c.heads = static_cast<int>(integer_key(object, "vt_num_attention_heads", 1, 1 << 16, 12, where));
    c.qkv = static_cast<int>(integer_key(object, "qkv_hidden_size", 1, 1 << 20, 1536, where));
    if (c.qkv % c.heads != 0)
        fail_format("{}.qkv_hidden_size: {} is not a multiple of vt_num_attention_heads {}", where, c.qkv, c.heads);
    if (c.head_dim() % 4 != 0)
        fail_format("{}.qkv_hidden_size: head dim {} / {} = {} is not a multiple of 4 (the 2-D RoPE needs it)", where,
                    c.qkv, c.heads, c.head_dim());
    c.intermediate = static_cast<int>(integer_key(object, "vt_intermediate_size", 1, 1 << 22, 4096, where));
    c.blocks = static_cast<int>(integer_key(object, "vt_num_hidden_layers", 1, 256, 27, where));
    c.pos_h = static_cast<int>(integer_key(object, "init_pos_emb_height", 1, 65536, 64, where));
    c.pos_w = static_cast<int>(integer_key(object, "init_pos_emb_width", 1, 65536, 64, where));
    c.text_hidden = static_cast<int>(integer_key(object, "text_hidden_size", 1, 1 << 20, text.hidden, where));
    if (c.text_hidden != text.hidden)
        fail_format("{}.text_hidden_size: {} is not the text model's hidden_size {}", where, c.text_hidden, text.hidden);
    const int64_t patch = integer_key(object, "patch_size", 1, 1 << 20, vision_patch, where);
    if (patch != vision_patch) fail_format("{}.patch_size: {} is not 14 (the only patch size)", where, patch);
    if (text.vocab < 1) fail_format("{}: the text model has no vocabulary for media_placeholder_token_id", where);
    c.placeholder = integer_key(object, "media_placeholder_token_id", 0, text.vocab - 1, std::nullopt, where);
    c.max_patches = static_cast<int>(integer_key(object, "max_patches", 4, 1 << 20, 1024, where));
    c.mean = channel_triple(object, "image_mean", false, where);
    c.std = channel_triple(object, "image_std", true, where);
    return c;
}

std::optional<VisionConfig> read_vision_config(const std::string& directory, const ModelConfig& text) {
    const std::string path = directory + "/vision.json";
    std::error_code error;
    if (!std::filesystem::exists(platform::utf8_path(path), error)) return std::nullopt;
    // A config is a few hundred bytes; 1 MiB bounds what a hostile file costs.
    const json object = json::parse(platform::read_small_file(path, 1u << 20), nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded()) fail_format("vision.json: not valid JSON");
    return parse_vision_config(object, text, "vision.json");
}

std::vector<VisionTensorSpec> vision_tensor_specs(const VisionConfig& c) {
    const int64_t D = c.hidden, Q = c.qkv, I = c.intermediate, TH = c.text_hidden;
    std::vector<VisionTensorSpec> specs;
    auto matrix = [&](std::string name, int64_t rows, int64_t cols) { specs.push_back({std::move(name), rows, cols, false}); };
    auto norm = [&](std::string name, int64_t size) { specs.push_back({std::move(name), size, 1, true}); };
    matrix("vision_tower.patch_embed.proj.weight", D, vision_patch_values);
    matrix("vision_tower.patch_embed.pos_emb.weight", static_cast<int64_t>(c.pos_h) * c.pos_w, D);
    for (int b = 0; b < c.blocks; ++b) {
        const std::string p = fmt::format("vision_tower.encoder.blocks.{}.", b);
        norm(p + "norm0.weight", D);
        matrix(p + "wqkv.weight", 3 * Q, D);
        matrix(p + "wo.weight", D, Q);
        norm(p + "norm1.weight", D);
        matrix(p + "mlp.fc0.weight", I, D);
        matrix(p + "mlp.fc1.weight", D, I);
    }
    norm("vision_tower.encoder.final_layernorm.weight", D);
    matrix("mm_projector.proj.0.weight", 4 * D, 4 * D);
    matrix("mm_projector.proj.2.weight", TH, 4 * D);
    norm("mm_projector.post_norm.weight", TH);
    return specs;
}

void check_vision_tensors(const Manifest& manifest, const VisionConfig& config) {
    for (const VisionTensorSpec& spec : vision_tensor_specs(config)) {
        const TrunkTensor* t = nullptr;
        for (const TrunkTensor& candidate : manifest.trunk)
            if (candidate.name == spec.name) t = &candidate;
        if (!t) fail_format("vision tensor {} is missing from the trunk", spec.name);
        if (manifest.tensor_prefix.empty() || t->name.starts_with(manifest.tensor_prefix))
            fail_format("vision tensor {} is inside the text tensor_prefix \"{}\" (a vision container needs a non-empty prefix "
                        "that its tower tensors do not start with)", spec.name, manifest.tensor_prefix);
        const uint64_t want = static_cast<uint64_t>(spec.rows) * static_cast<uint64_t>(spec.cols);
        if (spec.norm) {
            if (t->fmt != TrunkFormat::f32)
                fail_format("vision tensor {}: a norm must be F32, got {}", spec.name, trunk_format_name(t->fmt));
            if (t->elements() != want)
                fail_format("vision tensor {}: shape {} is not the expected [{}]", spec.name, shape_text(t->shape), spec.rows);
            continue;
        }
        if (t->elements() != want)
            fail_format("vision tensor {}: shape {} is not the expected [{}, {}]", spec.name, shape_text(t->shape), spec.rows,
                        spec.cols);
        if (t->fmt != TrunkFormat::f32 && t->cols != static_cast<uint64_t>(spec.cols))
            fail_format("vision tensor {}: {} stored as {} has rows of {} values, but its matmul reads rows of {} "
                        "(expected [{}, {}]; flatten before quantising, vision.md §1.2)",
                        spec.name, trunk_format_name(t->fmt), shape_text(t->shape), t->cols, spec.cols, spec.rows, spec.cols);
    }
}

}  // namespace waste::format
