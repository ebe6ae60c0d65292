// kimi_layout.h — which tensors a Kimi-family checkpoint must hold, with which
// shapes, and in which order the converter writes them (container-v0 §3).
//
// The container's trunk names are the release's names (the `language_model.`
// prefix of a multimodal release is kept and becomes `tensor_prefix`), so
// the mapping is the identity for trunk tensors, which are those of the one
// trunk table (format/trunk_tensors.h) in its order; routed experts
// (`...block_sparse_moe.experts.E.{w1,w3,w2}.weight`, or
// `{gate,up,down}_proj.weight`) become the expert banks. The order is the
// upstream tool's (its fixtures in ../shared/fixtures/upstream): the
// embedding, then per layer the two norms, attention, FFN or MoE, AttnRes
// vectors, then the AttnRes output vectors, the final norm and the LM head.
//
// Every expected tensor is checked for presence and shape here, before the
// converter writes a byte; a tensor the plan does not know under the prefix
// is refused (it would be silently dropped), one outside the prefix
// (vision_tower.*, mm_projector.*) is skipped and reported.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "convert/weight_source.h"
#include "format/model_config.h"

namespace waste::convert {

struct TrunkItem {
    std::string name;              // container name = release name
    std::vector<int64_t> shape;
};

// A unit of work, resumable on its own: a group of trunk tensors and, for a
// MoE layer, its expert bank.
struct ConvertUnit {
    std::string id;                // "embed", "layer 5", "final"
    int layer = -1;
    std::vector<TrunkItem> trunk;
    bool moe = false;
    // [expert][kind] release names of gate (w1), up (w3), down (w2)
    std::vector<std::array<std::string, 3>> experts;
};

struct ConvertPlan {
    std::string arch;              // the config's model_type: kimi_linear, kimi_k3, deepseek_v3, kimi_k2, qwen3_moe, glm4_moe, gpt_oss
    std::string tensor_prefix;
    format::ModelConfig model;
    std::vector<ConvertUnit> units;
    std::vector<std::string> skipped;  // tensors outside the text model
    int skipped_mtp = 0;               // of those, multi-token-prediction layers' tensors
};

// The architecture name of a text config ("kimi_linear", "kimi_k3"); throws
// WASTE_ERR_UNSUPPORTED naming model_type and architectures otherwise.
std::string kimi_arch(const nlohmann::json& text_config);

// Builds and checks the plan. `text_config` is the (flattened) text config.
// Throws WASTE_ERR_FORMAT naming the tensor, its shard and the shape.
ConvertPlan plan_kimi_conversion(const nlohmann::json& text_config, const WeightSource& source);

}  // namespace waste::convert
