// families.h — what each model family is to the config reader, in one table.
//
// A family is named by the config's model_type (several names may share a
// family: Kimi K2 is DeepSeek-V3's math). Its row says what the config
// leaves unsaid: the router kind and the scoring function it accepts, the
// defaults of norm_topk_prob and of the shared experts, how dense and MoE
// layers are laid out, whether MLA rotates q_pe/k_pe, where the MoE block's
// tensors live and which key holds an expert's width. The config reader
// (model_config.cpp) applies the row; a family's attention keys are its own
// function there. Which trunk tensors follow is format/trunk_tensors.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "format/model_config.h"

namespace waste::format {

// Where a family's MoE layers are: after first_k_dense_replace dense ones
// (Kimi, DeepSeek, GLM), by Qwen3's decoder_sparse_step / mlp_only_layers, or
// every layer (gpt-oss).
enum class MoeLayout : uint8_t { first_k_dense, sparse_step, every_layer };

struct ModelType {
    std::string_view name;     // config.json's model_type
    std::string_view summary;  // the architecture `waste info` names ("" : the family decides, Kimi's by its features)
};

struct FamilyTraits {
    Family family;
    std::vector<ModelType> model_types;
    RouterKind router;
    std::string_view scoring;        // the scoring_func / moe_router_activation_func it runs
    bool renormalize;                // norm_topk_prob / moe_renormalize when unsaid
    int shared_experts;              // n_shared_experts when unsaid
    MoeLayout moe_layout;
    bool first_layer_dense;          // first_k_dense_replace's default is 1 (HF Glm4MoeConfig), else 0
    bool mla_nope;                   // mla_use_nope's default: Kimi's MLA has no positional encoding
    std::string_view moe_block;      // the MoE block under "model.layers.N."
    std::string_view expert_width;   // the key of one routed expert's width
    std::string_view correction_bias = "gate.e_score_correction_bias";  // the sigmoid router's, under moe_block
    std::string_view shared_block = "shared_experts.";  // the shared expert's FFN, under moe_block
};

const std::vector<FamilyTraits>& families();
const FamilyTraits& traits_of(Family family);
// The family a model_type names, or null.
const FamilyTraits* family_of_model_type(std::string_view model_type);
// Every model_type the engine runs, for messages: "kimi_linear, kimi_k3, ...".
std::string known_model_types();
// The MoE block's tensor names under "model.layers.N.": Kimi's
// "block_sparse_moe.", the others' "mlp." (their dense layers' FFN is "mlp." too).
const char* moe_block_prefix(Family family);

}  // namespace waste::format
