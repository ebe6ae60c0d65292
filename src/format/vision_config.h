// vision_config.h — the optional vision tower of a container: vision.json
// (vision.md §1.1) and the tensors it implies (§1.2), validated.
//
// Every number is bounded before it can size anything; a bad value is
// refused (never clamped) with the key and value named. The tensor table is
// the one place that says which tensors the tower has and what shape each
// must have: the loader (model/vision_tower) and the synth both read it.
//
// Deliberately not here: the arithmetic (model/vision_tower.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/manifest.h"
#include "format/model_config.h"

namespace waste::format {

constexpr int vision_patch = 14;                           // P: pixels per patch side
constexpr int vision_patch_values = 3 * vision_patch * vision_patch;  // 588: one patch, RGB
// eps of the tower's norms (2^-23, FLT_EPSILON: upstream built them without
// one) and of the projector's post_norm (vision.md §3.6).
constexpr float vision_tower_eps = 0x1p-23f;
constexpr float vision_projector_eps = 1e-5f;

struct VisionConfig {
    int hidden = 1024;           // D: vt_hidden_size
    int heads = 12;              // nh: vt_num_attention_heads
    int qkv = 1536;              // Q: qkv_hidden_size (width of each of q, k, v; not D)
    int intermediate = 4096;     // I: vt_intermediate_size
    int blocks = 27;             // vt_num_hidden_layers
    int pos_h = 64, pos_w = 64;  // init_pos_emb_height / _width: the stored position grid
    int text_hidden = 0;         // TH: text_hidden_size (= the text hidden_size)
    int64_t placeholder = -1;    // media_placeholder_token_id
    int max_patches = 1024;      // patch budget per image
    std::array<float, 3> mean{0.5f, 0.5f, 0.5f}, std{0.5f, 0.5f, 0.5f};  // image_mean / image_std per RGB channel

    int head_dim() const { return qkv / heads; }
};

// Parses and validates vision.json's object; `where` names it in errors.
VisionConfig parse_vision_config(const nlohmann::json& object, const ModelConfig& text, const std::string& where);

// Reads DIR/vision.json; nullopt when the container has none (no images).
std::optional<VisionConfig> read_vision_config(const std::string& directory, const ModelConfig& text);

// One tower tensor as the engine uses it: a matrix rows × cols (cols = the
// matmul's input length), or a norm vector of `rows` values (cols 1).
struct VisionTensorSpec {
    std::string name;  // full name (outside tensor_prefix)
    int64_t rows = 0, cols = 0;
    bool norm = false;
};

// Every tower and projector tensor, in the order upstream's requantised K3
// container stores them (blocks in order, then final norm, then projector).
std::vector<VisionTensorSpec> vision_tensor_specs(const VisionConfig& config);

// §1.2 against the trunk index: each tensor present and outside the text
// prefix; norms F32 with `rows` values; matrices with rows·cols values and, when
// quantised, a stored last dimension equal to cols. Throws WASTE_ERR_FORMAT
// naming the tensor and both shapes.
void check_vision_tensors(const Manifest& manifest, const VisionConfig& config);

}  // namespace waste::format
